#!/usr/bin/env python3
"""Host time per decode call (run on the H200): what fa_attention_run costs
the CPU, next to SDPA's cuDNN backend called the same way from Python.

For each shape (32 query / 8 kv heads, head_dim 128, bf16, one query
token): dense batch 1 / 32k keys (split-KV: scratch allocation, partial
kernel, combine), dense batch 16 / 8k (one kernel), paged16 batch 16 / 8k
with the block_table in device memory (tile table by value) and in pinned
host memory (tile table and page lists built and copied), and paged16 batch
128 / 2k with a device block_table (tile table copied). The GPU first spins
(torch.cuda._sleep) long enough that the calls only queue behind it; the
host then issues N = 12 calls back to back, and the host time per call is
the wall time of that loop / N (ctypes and the Python call included for
ours, the PyTorch dispatch for cuDNN). Medians of 9 rounds. N stays below
the runtime's ring of 32 pinned staging blocks (FA_PINNED_BLOCKS): past
them a call waits for the oldest copy, which a longer loop behind the spin
would count as host time. Writes
DIR/host_overhead.json.

Usage: host_overhead.py --lib LIBRT --artifacts DIR [--out DIR]
"""

import json
import os
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "gpu"))
sys.path.insert(0, HERE)
from test_runtime_launch import synchronize  # noqa: E402
from test_sm90_attention import open_runtime, pinned_i32, script_args  # noqa: E402
from sm90_bench import shuffled_pool  # noqa: E402

D, HQ, HKV = 128, 32, 8
# Fewer calls than the runtime's 32 pinned staging blocks, so that a
# bounded run-ahead is not mistaken for a synchronizing copy.
N = 12
ROUNDS = 9


def host_us(f, stream):
    """Median host microseconds per call of f over ROUNDS rounds of N."""
    times = []
    for _ in range(ROUNDS):
        with torch.cuda.stream(stream):
            torch.cuda._sleep(20_000_000)  # ~10 ms of GPU spin: calls only queue
            t0 = time.perf_counter()
            for _ in range(N):
                f()
            t1 = time.perf_counter()
            synchronize(120.0)
        times.append((t1 - t0) / N * 1e6)
    return sorted(times)[len(times) // 2]


def main():
    a = script_args()
    _, _, stream, kernel, run = open_runtime(a.lib, a.artifacts)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    dense = kernel(D, "bf16", "bottom_right", HQ, HKV, None, 0, 0, None, True)
    paged = kernel(D, "bf16", "bottom_right", HQ, HKV, None, 0, 0, None, True, False, True, 16)
    rows = []
    for b, sk in ((1, 32768), (16, 8192), (128, 2048)):
        q = torch.randn(b, 1, HQ, D, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, sk, HKV, D, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        out = torch.empty_like(q)
        lse = torch.empty(b, HQ, 1, device="cuda")
        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
        kp, vp, bt = shuffled_pool(k, v, 16)
        used = pinned_i32([sk] * b)
        btd = bt.cuda()
        calls = {"dense": lambda: run(dense, q, k, v, out, lse, deadline=0),
                 "paged16_device_block_table": lambda: run(
                     paged, q, kp, vp, out, lse, deadline=0, seqused_k=used, block_table=btd),
                 "paged16_host_block_table": lambda: run(
                     paged, q, kp, vp, out, lse, deadline=0, seqused_k=used, block_table=bt)}

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)
        calls["cudnn"] = cudnn
        for f in calls.values():  # warm-up (module loads, plans)
            with torch.cuda.stream(stream):
                f()
                synchronize(60.0)
        row = {"batch": b, "keys": sk, "host_us": {n: host_us(f, stream) for n, f in calls.items()}}
        rows.append(row)
        print("host us per call, b=%-4d keys=%-6d %s" % (b, sk, "  ".join(
            "%s %.1f" % (n, t) for n, t in row["host_us"].items())), flush=True)
    with open(os.path.join(a.out, "host_overhead.json"), "w") as f:
        json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
