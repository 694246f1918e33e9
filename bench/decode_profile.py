#!/usr/bin/env python3
"""Kernel timeline of decode calls (run on the H200): where a call's time
goes, kernel by kernel, as CUPTI sees it through torch.profiler.

For batch / keys in ((1, 32768), (16, 8192), (128, 2048)), 32 query / 8 kv
heads, head_dim 128, bf16: ours (pack_gqa + automatic num_splits artifact),
ours paged (pages of 16, shuffled pool, seqused_k; the block_table in
pinned host memory, then in device memory) and cuDNN (SDPA, GQA).
Each call runs after an L2 flush and a GPU spin (as bench/sm90_bench.py);
for the last calls the script prints every GPU operation of the call
(name, start relative to the call's first operation, duration, in us) and
the span from the first start to the last end, and the gap between the
spin's end and the call's first operation (the GPU-side cost of starting
the call). It writes DIR/profile.json.

Usage: decode_profile.py --lib LIBRT --artifacts DIR [--out DIR]
"""

import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "gpu"))
from test_sm90_attention import open_runtime, pinned_i32, script_args  # noqa: E402
from sm90_bench import shuffled_pool  # noqa: E402  (this directory)

SHAPES = ((1, 32768), (16, 8192), (128, 2048))
# Kernels of the harness itself (the flush, the spin), left out of a call.
HARNESS = ("fill", "zero", "elementwise")


def calls(prof):
    """The GPU operations after each spin kernel, one list per call, each
    list starting with the spin kernel's end time."""
    rows = sorted(((e.name, e.time_range.start, e.time_range.end)
                   for e in prof.events() if e.device_type.name == "CUDA"),
                  key=lambda r: r[1])
    out, cur = [], None
    for name, start, end in rows:
        low = name.lower()
        if any(h in low for h in HARNESS):
            continue
        if "sleep" in low or "spin" in low:
            cur = [end]
            out.append(cur)
        elif cur is not None:
            cur.append((name, start, end))
    return [c for c in out if len(c) > 1]


def main():
    a = script_args()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    lib, rt, stream, kernel, run = open_runtime(a.lib, a.artifacts)
    hq, hkv, d, ps = 32, 8, 128, 16
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    result = {}
    for b, sk in SHAPES:
        q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        out = torch.empty_like(q)
        lse = torch.empty(b, hq, 1, device="cuda", dtype=torch.float32)
        kern = kernel(d, "bf16", "bottom_right", hq, hkv, None, 0, 0, None, True)
        kp, vp, bt = shuffled_pool(k, v, ps)
        bt_dev = bt.cuda()
        used = pinned_i32([sk] * b)
        kern_p = kernel(d, "bf16", "bottom_right", hq, hkv, None, 0, 0, None, True, False,
                        True, ps)
        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
        fns = {
            "ours": lambda: run(kern, q, k, v, out, lse, deadline=0),
            "paged%d" % ps: lambda: run(kern_p, q, kp, vp, out, lse, deadline=0,
                                        seqused_k=used, block_table=bt),
            "paged%d_dev" % ps: lambda: run(kern_p, q, kp, vp, out, lse, deadline=0,
                                            seqused_k=used, block_table=bt_dev),
            "cudnn": lambda: F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True),
        }
        for name, f in fns.items():
            with torch.cuda.stream(stream), sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                for _ in range(3):
                    f()
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(5):
                        flush.zero_()
                        torch.cuda._sleep(2_000_000)
                        f()
                    torch.cuda.synchronize()
            timeline = []
            for spin_end, *c in calls(prof)[1:]:
                t0 = c[0][1]
                timeline.append({"ops": [(nm, round(s - t0, 2), round(e - s, 2))
                                         for nm, s, e in c],
                                 "span_us": round(max(e for _, _, e in c) - t0, 2),
                                 "after_spin_us": round(t0 - spin_end, 2)})
            result["%s b%d/%d" % (name, b, sk)] = timeline
            print("%-8s b=%-4d keys=%-6d %s" % (
                name, b, sk, json.dumps(timeline[-1]) if timeline else "no calls seen"),
                flush=True)
    lib.fa_runtime_destroy(rt)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "profile.json"), "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
