#!/usr/bin/env python3
"""Draws the plots of docs/BENCHMARKS.md from the result files in docs/results/.

Usage: scripts/plot_benchmarks.py [RESULTS_DIR [PLOTS_DIR]]
       (defaults: docs/results, docs/plots; run from the repository root)

Needs matplotlib (Debian: python3-matplotlib). Writes:
- prefill.png: forward TFLOP/s against sequence length, ours / cuDNN /
  FlashAttention-2, one panel per head_dim and mask
  (sm90-prefill-2026-11-29.log, the lines bench/sm90_bench.py prints);
- decode.png: decode time per shape, ours / cuDNN / the streaming-read floor,
  with the L2 flushed by writing and by reading
  (sm90-decode-{write,read}-flush-2026-11-30.json, bench/sm90_bench.py --decode);
- decode-keys.png: decode time against keys at batch 16, ours and cuDNN, with
  the least-squares lines over 2k-8k keys
  (sm90-decode-batch16-keys-2026-11-30.json);
- decode-cta-ends.png: when each of the 128 CTAs of a batch-16 / 8k decode
  launch ends, ours against the streaming-read floor (the median over 7
  launches of each rank; sm90-decode-timeline-batch16-2026-11-30.json);
- host.png: the CPU path against unfused OpenBLAS attention, GFLOP/s against
  sequence length (host-bench-*.txt, the output of `make bench`; the newest).
"""

import glob
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"ours": "#1f77b4", "cudnn": "#d62728", "fa2": "#7f7f7f",
          "floor": "#2ca02c", "openblas": "#d62728"}


def prefill(results, plots):
    rows = {}
    pat = re.compile(r"bench hd(\d+)\s+(\S+)\s+s=(\d+)\s+ours\s+([\d.]+)\s+cudnn\s+([\d.]+)"
                     r"\s+fa2\s+([\d.]+)")
    with open(os.path.join(results, "sm90-prefill-2026-11-29.log")) as f:
        for line in f:
            m = pat.search(line)
            if m:
                hd, mask, s = int(m.group(1)), m.group(2), int(m.group(3))
                rows.setdefault((hd, mask), []).append(
                    (s, float(m.group(4)), float(m.group(5)), float(m.group(6))))
    hds = sorted({k[0] for k in rows})
    masks = ["none", "bottom_right"]
    fig, axes = plt.subplots(len(masks), len(hds), figsize=(12, 6.5), sharey=True)
    for r, mask in enumerate(masks):
        for c, hd in enumerate(hds):
            ax = axes[r][c]
            data = sorted(rows[(hd, mask)])
            xs = [d[0] for d in data]
            for i, (name, label) in enumerate((("ours", "ours"), ("cudnn", "cuDNN"),
                                                ("fa2", "FlashAttention-2"))):
                ax.plot(xs, [d[1 + i] for d in data], "o-", color=COLORS[name], label=label)
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs)
            ax.set_xticklabels(["512", "1k", "2k", "4k", "8k", "16k"][:len(xs)])
            ax.set_title("head_dim %d, %s" % (hd, "causal" if mask != "none" else "no mask"))
            ax.grid(alpha=0.3)
            if c == 0:
                ax.set_ylabel("TFLOP/s (forward)")
            if r == len(masks) - 1:
                ax.set_xlabel("sequence length (16k tokens a batch)")
    axes[0][0].legend(loc="lower right")
    fig.suptitle("Prefill on one H200, bf16, 2048 / head_dim heads (bench/sm90_bench.py, 2026-11-29)")
    fig.tight_layout()
    fig.savefig(os.path.join(plots, "prefill.png"), dpi=90)
    plt.close(fig)


def decode_rows(path):
    with open(path) as f:
        return [r for r in json.load(f) if "batch" in r]


def decode(results, plots):
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharey=True)
    for ax, flush in zip(axes, ("write", "read")):
        rows = decode_rows(os.path.join(results, "sm90-decode-%s-flush-2026-11-30.json" % flush))
        labels = ["%d / %dk" % (r["batch"], r["keys"] // 1024) for r in rows]
        width = 0.27
        for i, (name, label) in enumerate((("ours", "ours"), ("cudnn", "cuDNN"),
                                            ("floor", "read floor (no compute)"))):
            xs = [j + (i - 1) * width for j in range(len(rows))]
            ax.bar(xs, [r["us"][name] for r in rows], width, color=COLORS[name], label=label)
        for j, r in enumerate(rows):
            ax.annotate("%.2f" % r["ratio_vs_cudnn"], (j - width, r["us"]["ours"]),
                        ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels(labels)
        ax.set_xlabel("batch / keys (ours / cuDNN speed above the bars)")
        ax.set_title("L2 flushed by %s 256 MB before each launch" %
                     ("writing" if flush == "write" else "reading"))
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("time (us)")
    axes[0].legend(loc="upper left")
    fig.suptitle("Decode on one H200: 1 query token, 32 / 8 heads, head_dim 128, bf16 "
                 "(bench/sm90_bench.py --decode, 2026-11-30)")
    fig.tight_layout()
    fig.savefig(os.path.join(plots, "decode.png"), dpi=90)
    plt.close(fig)


def fit(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def decode_keys(results, plots):
    rows = [r for r in decode_rows(os.path.join(results, "sm90-decode-batch16-keys-2026-11-30.json"))
            if r["batch"] == 16]
    rows.sort(key=lambda r: r["keys"])
    keys = [r["keys"] for r in rows]
    # K and V bytes read: batch x keys x 8 kv heads x 128 x 2 bytes x 2 tensors.
    mb = [16 * k * 8 * 128 * 2 * 2 / 1e6 for k in keys]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name, label, style in (("ours", "ours", "o-"), ("cudnn", "cuDNN", "s--")):
        us = [r["us"][name] for r in rows]
        ax.plot(mb, us, style, color=COLORS[name], label=label, markerfacecolor="none")
        big = [(m, u) for m, u, k in zip(mb, us, keys) if k >= 2048]
        a, b = fit([m for m, _ in big], [u for _, u in big])
        ax.plot([0, max(mb)], [a, a + b * max(mb)], ":", color=COLORS[name],
                label="%s, 2k-8k keys: %.1f us + bytes at %.2f TB/s" % (label, a, 1 / b))  # MB/us = TB/s
    ax.set_xlabel("K + V bytes read (MB); keys 128 to 8k at batch 16")
    ax.set_ylabel("time (us)")
    ax.set_title("Decode time against keys, batch 16, H200 (2026-11-30)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(plots, "decode-keys.png"), dpi=90)
    plt.close(fig)


def cta_ends(results, plots):
    with open(os.path.join(results, "sm90-decode-timeline-batch16-2026-11-30.json")) as f:
        d = json.load(f)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
    for ax, flush in zip(axes, ("write", "read")):
        for name, label in (("ours", "ours"), ("floor", "read floor (no compute)")):
            launches = [sorted(l["pts"]["end"]) for l in d[name][flush]]
            n = len(launches[0])
            med = [sorted(l[i] for l in launches)[len(launches) // 2] for i in range(n)]
            ax.plot(range(1, n + 1), med, "-", color=COLORS[name], label=label)
        ax.set_xlabel("CTAs ended (of 128)")
        ax.set_title("L2 flushed by %s" % ("writing" if flush == "write" else "reading"))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("time from the first CTA's entry (us)")
    axes[0].legend(loc="upper left")
    fig.suptitle("Decode batch 16 / 8k on one H200: CTA end times, median of 7 launches (2026-11-30)")
    fig.tight_layout()
    fig.savefig(os.path.join(plots, "decode-cta-ends.png"), dpi=90)
    plt.close(fig)


def host(results, plots):
    files = sorted(glob.glob(os.path.join(results, "host-bench-*.txt")))
    if not files:
        print("plot_benchmarks: no host-bench-*.txt, host.png not drawn")
        return
    rows = []
    with open(files[-1]) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and parts[0].isdigit():
                # seqlen heads ours_ms ours_gflops openblas_ms openblas_gflops ...
                rows.append((int(parts[0]), float(parts[3]), float(parts[5])))
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = [r[0] for r in rows]
    ax.plot(xs, [r[1] for r in rows], "o-", color=COLORS["ours"], label="ours (host pipeline)")
    ax.plot(xs, [r[2] for r in rows], "o-", color=COLORS["openblas"],
            label="OpenBLAS, unfused (2 sgemm + softmax)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs)
    ax.set_xticklabels([str(x) for x in xs])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("sequence length (batch 1, 4 heads, head_dim 128, f32)")
    ax.set_ylabel("GFLOP/s, one core")
    ax.set_title("CPU path (make bench, %s)" % os.path.basename(files[-1])[11:-4])
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(plots, "host.png"), dpi=90)
    plt.close(fig)


def main():
    results = sys.argv[1] if len(sys.argv) > 1 else "docs/results"
    plots = sys.argv[2] if len(sys.argv) > 2 else "docs/plots"
    os.makedirs(plots, exist_ok=True)
    prefill(results, plots)
    decode(results, plots)
    decode_keys(results, plots)
    cta_ends(results, plots)
    host(results, plots)
    print("plot_benchmarks: wrote the plots to %s" % plots)


if __name__ == "__main__":
    main()
