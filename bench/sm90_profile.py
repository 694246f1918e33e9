#!/usr/bin/env python3
"""Nsight Compute profile of one sm90 attention kernel launch per variant
(run on the H200): where each variant's kernel spends its time, side by
side.

For each --variant NAME=DIR, ncu profiles the second launch of the
artifact's attention kernel (`fa_sm90_0`, or the `_dense`, `_packed` or
`_kv1` entry the runtime picks; the first launch is a warm-up) in one
bench/sm90_bench.py run of the given shape (--set full, clocks not
locked), exports the details page and the per-instruction source page
(SASS), and sums the warp-state samples: the stall reasons over the
whole kernel and the instructions with the most samples. It writes
DIR/<name>.ncu-rep, DIR/<name>.details.txt, DIR/<name>.source.csv,
DIR/summary.txt and all of them in DIR/profile.tar.gz (one file to carry
back).

With --decode BATCHxKEYS the workload is instead bench/decode_call.py's
decode call (pack_gqa, automatic num_splits; --page P over a shuffled
pool of P-key pages, --device-table with the block_table in device
memory), and a variant NAME=DIR@LIB runs through its own runtime LIB.

Usage: sm90_profile.py --lib LIBRT --variant NAME=DIR[@LIB] [--variant ...]
                       [--head-dim 64] [--mask bottom_right]
                       [--seqlen 2048] [--decode BATCHxKEYS [--page P]
                       [--device-table]] [--top 25] [--out DIR]
"""

import argparse
import collections
import csv
import os
import shutil
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))


def find_ncu():
    found = shutil.which("ncu")
    if found:
        return found
    for path in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu"):
        if os.path.exists(path):
            return path
    sys.exit("sm90_profile: no ncu on PATH or in /usr/local/cuda/bin")


def workload(args, name, artifacts, lib):
    """The command ncu runs: one bench/sm90_bench.py prefill run of the
    shape, or with --decode bench/decode_call.py's call."""
    if args.decode:
        cmd = [sys.executable, os.path.join(HERE, "decode_call.py"), "--lib", lib,
               "--artifacts", artifacts, "--shape", args.decode, "--page", str(args.page)]
        return cmd + (["--device-table"] if args.device_table else [])
    return [sys.executable, os.path.join(HERE, "sm90_bench.py"), "--lib", lib,
            "--artifacts", artifacts, "--head-dims", str(args.head_dim),
            "--masks", args.mask, "--seqlens", str(args.seqlen), "--repeats", "1",
            "--out", os.path.join(args.out, "bench_" + name)]


def profile(ncu, args, name, artifacts, lib):
    """Runs ncu over one workload run; returns the report's path."""
    report = os.path.join(args.out, name)
    bench = workload(args, name, artifacts, lib)
    cmd = [ncu, "--target-processes", "all", "--clock-control", "none",
           "-k", "regex:^fa_sm90_0(_dense)?(_packed|_kv1)?$", "--launch-skip", "1", "--launch-count", "1",
           "--set", "full", "--import-source", "no", "-f", "-o", report] + bench
    with open(report + ".log", "w") as log:
        subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=True)
    for page, suffix, extra in (("details", ".details.txt", []),
                                ("source", ".source.csv", ["--csv", "--print-source", "sass"])):
        with open(report + suffix, "w") as out:
            subprocess.run([ncu, "-i", report + ".ncu-rep", "--page", page] + extra,
                           stdout=out, stderr=subprocess.STDOUT, check=True)
    return report


def stalls(source_csv, top):
    """The stall samples of a source page: totals by reason and the `top`
    instructions by samples, as lines of text."""
    with open(source_csv, newline="") as f:
        rows = [r for r in csv.reader(f)]
    header = next(i for i, r in enumerate(rows) if "# Samples" in r)
    names = rows[header]
    col = {n: i for i, n in enumerate(names)}
    data = [r for r in rows[header + 1:] if len(r) == len(names)]
    reasons = [n for n in names if n.startswith("stall_") and "Not Issued" not in n]
    count = lambda r, n: int(float(r[col[n]] or 0))
    totals = collections.Counter({n[6:]: sum(count(r, n) for r in data) for n in reasons})
    samples = sum(count(r, "# Samples") for r in data)
    executed = sum(count(r, "Instructions Executed") for r in data)
    lines = [f"samples {samples}, instructions executed {executed}, static {len(data)}",
             "stalls: " + ", ".join(f"{k}={v}" for k, v in totals.most_common(12))]
    for i in sorted(range(len(data)), key=lambda i: -count(data[i], "# Samples"))[:top]:
        r = data[i]
        lines.append(f"  {i:5d} samples={count(r, '# Samples'):6d} "
                     f"executed={count(r, 'Instructions Executed'):9d} {r[col['Source']].strip()[:80]}")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--variant", action="append", required=True,
                    help="NAME=DIR[@LIB] (LIB: the runtime library, default --lib)")
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--mask", default="bottom_right")
    ap.add_argument("--seqlen", type=int, default=2048)
    ap.add_argument("--decode", metavar="BATCHxKEYS",
                    help="profile bench/decode_call.py's decode call of this shape instead")
    ap.add_argument("--page", type=int, default=0,
                    help="with --decode: keys a page (0: dense K / V)")
    ap.add_argument("--device-table", action="store_true",
                    help="with --decode and --page: the block_table in device memory")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    if not args.decode and (args.page or args.device_table):
        ap.error("--page and --device-table go with --decode")
    if args.page < 0 or (args.device_table and not args.page):
        ap.error("--page takes a positive page size (with --device-table), or 0 for dense K / V")
    os.makedirs(args.out, exist_ok=True)
    ncu = find_ncu()
    summary = [f"decode {args.decode}, "
               + (f"pages of {args.page}" if args.page else "dense K / V")
               + (", device block_table" if args.device_table else "") if args.decode
               else f"d{args.head_dim} {args.mask} {args.seqlen} keys"]
    written = ["summary.txt"]
    for spec in args.variant:
        name, _, artifacts = spec.partition("=")
        artifacts, _, lib = artifacts.partition("@")
        report = profile(ncu, args, name, artifacts, lib or args.lib)
        summary += [f"== {name} ({artifacts})"] + stalls(report + ".source.csv", args.top)
        written += [os.path.basename(report) + s
                    for s in (".ncu-rep", ".details.txt", ".source.csv", ".log")]
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write("\n".join(summary) + "\n")
    with tarfile.open(os.path.join(args.out, "profile.tar.gz"), "w:gz") as tar:
        for name in written:
            tar.add(os.path.join(args.out, name), arcname=name)
    print("\n".join(summary))


if __name__ == "__main__":
    main()
