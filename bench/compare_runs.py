#!/usr/bin/env python3
"""Tables of an A/B over repeated runs of bench/sm90_bench.py.

Usage: compare_runs.py [--new NAME] [--old NAME] [--bar 0.98] [--floor 0.96]
                       RUN.json [RUN.json ...]

Each RUN.json is one run's bench.json (prefill) or decode.json (--decode),
written by `sm90_bench.py --out DIR`; give every run of the A/B, for
example the three runs of one device call. NAME is `ours` (the --artifacts
kernels) or a --variant name. For each point the ratio is NEW speed / OLD
speed of one run (prefill: TFLOP/s new / old; decode: time old / new), and
the tables give the median over the runs and, in parentheses, the lowest
run; a point that fewer runs measured than the others has their count in
brackets, e.g. `0.990 (0.970) [2]`. A point is below the bar when its
median is under --bar or one run under --floor (the parity gate of the
sm90 lowering: 0.98 and 0.96). Runs on different GPUs (the `device` row's
UUID) are compared with a warning on stderr.

Printed, as Markdown: the prefill ratios (rows head_dim and mask, columns
the key length), the prefill TFLOP/s of NEW, cuDNN and FA2 (medians), the
decode ratios (rows batch x keys with NEW's and cuDNN's median time in us,
columns dense and each paged layout), then one line `points N, below the
bar M` and the points below it, in the tables' order. Exits 2 with a
message on a file that is not such a run (varlen.json and gqa.json are
not supported), a file given twice, or a NAME that a file does not hold.
"""

import argparse
import json
import statistics
import sys
from collections import defaultdict


class InputError(Exception):
    """A file that is not a run of sm90_bench.py, or lacks a name."""


def kind_of(row):
    """prefill, decode, or None for the device and ceilings rows; raises on
    rows of another benchmark (--varlen, --gqa)."""
    if not isinstance(row, dict) or not ("tflops" in row or "us" in row):
        return None
    if {"head_dim", "causal", "seqlen", "tflops"} <= row.keys():
        return "prefill"
    if {"batch", "keys", "us"} <= row.keys():
        return "decode"
    raise InputError("rows of another benchmark (varlen.json or gqa.json?): %s"
                     % sorted(row.keys()))


def load(path):
    """The rows of one run (prefill or decode), its kind and its GPU's UUID."""
    try:
        with open(path) as f:
            rows = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError("%s: not readable as JSON (%s)" % (path, e))
    if not isinstance(rows, list):
        raise InputError("%s: expected the list sm90_bench.py writes" % path)
    try:
        tagged = [(kind_of(r), r) for r in rows]
    except InputError as e:
        raise InputError("%s: %s" % (path, e))
    points = [r for k, r in tagged if k]
    found = {k for k, _ in tagged if k}
    if len(found) != 1:
        what = "both prefill and decode rows" if found else "no prefill or decode rows"
        raise InputError("%s: %s (one run's bench.json or decode.json)" % (path, what))
    uuid = next((r["device"].get("uuid") for r in rows
                 if isinstance(r, dict) and isinstance(r.get("device"), dict)), None)
    return found.pop(), points, uuid


def field(row, table, key, path):
    try:
        return row[table][key]
    except KeyError:
        raise InputError("%s: no '%s' in %s of %s" % (path, key, table, point_name(row)))


def point_name(row):
    if "head_dim" in row:
        return "head_dim %s %s s=%s" % (row["head_dim"], row["causal"], row["seqlen"])
    return "decode %s x %s" % (row["batch"], row["keys"])


def decode_key(name, column):
    """Key of a decode column in `us`: ours' dense is `ours`, its paged8 is
    `paged8`; a variant's are `NAME` and `NAME_paged8`."""
    if name == "ours":
        return "ours" if column == "dense" else column
    return name if column == "dense" else name + "_" + column


def decode_columns(row):
    """dense, then ours' paged layouts (paged8, paged8_dev, ...) but the
    in-order and changed-table ones, which variants do not run."""
    return ["dense"] + [k for k in row["us"]
                        if k.startswith("paged") and not k.endswith(("_seq", "_changed"))]


def column_order(col):
    """dense first, then by page size, the host block_table before _dev."""
    return (col != "dense", int("".join(ch for ch in col if ch.isdigit()) or 0), col)


def collect(paths, new, old):
    """Per point: the runs' ratios, and the medians' raw values."""
    if len(set(paths)) != len(paths):
        raise InputError("a run given twice: %s" % sorted({p for p in paths if paths.count(p) > 1}))
    ratio = defaultdict(list)
    raw = defaultdict(list)
    uuids = set()
    for path in paths:
        kind, rows, uuid = load(path)
        uuids.add(uuid)
        for row in rows:
            (add_prefill if kind == "prefill" else add_decode)(row, new, old, path, ratio, raw)
    if len(uuids) > 1:
        print("compare_runs: warning: runs from %d GPUs (%s); compare within one machine"
              % (len(uuids), ", ".join(sorted(map(str, uuids)))), file=sys.stderr)
    return ratio, raw


def add_prefill(row, new, old, path, ratio, raw):
    key = ("prefill", row["head_dim"], row["causal"], row["seqlen"])
    t_new = field(row, "tflops", new, path)
    ratio[key].append(t_new / field(row, "tflops", old, path))
    raw[key].append((t_new, field(row, "tflops", "cudnn", path), field(row, "tflops", "fa2", path)))


def add_decode(row, new, old, path, ratio, raw):
    shape = (row["batch"], row["keys"])
    raw[("decode",) + shape].append((field(row, "us", decode_key(new, "dense"), path),
                                    field(row, "us", "cudnn", path)))
    for col in decode_columns(row):
        t_new = field(row, "us", decode_key(new, col), path)
        t_old = field(row, "us", decode_key(old, col), path)
        ratio[("decode",) + shape + (col,)].append(t_old / t_new)


MASK_ORDER = {"none": 0, "bottom_right": 1, "top_left": 2}


def mask_label(mask):
    return {"none": "none", "bottom_right": "causal"}.get(mask, mask)


def group_order(head_dim, mask):
    return (head_dim, MASK_ORDER.get(mask, 3), str(mask))


def point_order(key):
    """The tables' order: prefill by head_dim, mask, keys; decode by shape,
    then column."""
    if key[0] == "prefill":
        return (0,) + group_order(key[1], key[2]) + (key[3],)
    return (1, key[1], key[2], column_order(key[3]))


def cell(runs, most):
    """Median (lowest run), with the count of runs when fewer than `most`."""
    text = "%.3f (%.3f)" % (statistics.median(runs), min(runs))
    return text if len(runs) == most else text + " [%d]" % len(runs)


def table(head, rows):
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def prefill_tables(ratio, raw, new, most):
    keys = [k for k in ratio if k[0] == "prefill"]
    if not keys:
        return []
    seqs = sorted({k[3] for k in keys})
    groups = sorted({k[1:3] for k in keys}, key=lambda g: group_order(*g))
    head = ["head_dim, mask"] + [str(s) for s in seqs]
    label = lambda d, m: "%d, %s" % (d, mask_label(m))
    get = lambda d, m, s, f: f(("prefill", d, m, s)) if ("prefill", d, m, s) in ratio else "-"
    ratios = [[label(d, m)] + [get(d, m, s, lambda k: cell(ratio[k], most)) for s in seqs]
              for d, m in groups]
    med = lambda k: " / ".join("%.0f" % statistics.median(x[i] for x in raw[k]) for i in range(3))
    speeds = [[label(d, m)] + [get(d, m, s, med) for s in seqs] for d, m in groups]
    return ["Prefill, speed ratio, median (lowest run):\n\n" + table(head, ratios),
            "Prefill TFLOP/s, %s / cuDNN / FA2, median:\n\n" % new + table(head, speeds)]


def decode_table(ratio, raw, new, most):
    keys = [k for k in ratio if k[0] == "decode"]
    if not keys:
        return []
    shapes = sorted({k[1:3] for k in keys})
    cols = sorted({k[3] for k in keys}, key=column_order)
    rows = []
    for b, n in shapes:
        t = raw[("decode", b, n)]
        us = "%.1f / %.1f" % (statistics.median(x[0] for x in t), statistics.median(x[1] for x in t))
        rows.append(["%d x %d" % (b, n), us] +
                    [cell(ratio[("decode", b, n, c)], most) if ("decode", b, n, c) in ratio else "-"
                     for c in cols])
    head = ["batch x keys", "%s / cuDNN us" % new] + cols
    return ["Decode, speed ratio (old time / new), median (lowest run):\n\n" + table(head, rows)]


def below_bar(ratio, bar, floor):
    return [k for k in sorted(ratio, key=point_order)
            if statistics.median(ratio[k]) < bar or min(ratio[k]) < floor]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", help="bench.json / decode.json of each run")
    ap.add_argument("--new", default="ours", help="the measured kernels (ours or a variant)")
    ap.add_argument("--old", default="old", help="the reference (ours or a variant)")
    ap.add_argument("--bar", type=float, default=0.98, help="lowest median ratio")
    ap.add_argument("--floor", type=float, default=0.96, help="lowest single-run ratio")
    a = ap.parse_args(argv)
    try:
        ratio, raw = collect(a.runs, a.new, a.old)
    except InputError as e:
        print("compare_runs: %s" % e, file=sys.stderr)
        return 2
    most = max(len(v) for v in ratio.values()) if ratio else 0
    print("\n\n".join(prefill_tables(ratio, raw, a.new, most) +
                      decode_table(ratio, raw, a.new, most)))
    low = below_bar(ratio, a.bar, a.floor)
    print("\nruns %d; points %d, below the bar %d" % (most, len(ratio), len(low)))
    for k in low:
        print("  %s: %s" % (" ".join(map(str, k)), cell(ratio[k], most)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
