#!/usr/bin/env python3
"""One decode call of bench/sm90_bench.py's decode benchmark, made a few
times and nothing else: the process a profiler (bench/sm90_profile.py
--decode) runs, so that the N-th launch of the kernel is that call's.

The call: one query token, 32 query / 8 kv heads, head_dim 128, bf16,
BATCH sequences of KEYS keys; the pack_gqa + automatic-num_splits
artifact over dense K / V, or with --page P over a shuffled pool of P-key
pages (seqused_k; the block_table in pinned host memory, or in device
memory with --device-table), as sm90_bench.py's ours / paged<P> /
paged<P>_dev rows.

Usage: decode_call.py --lib LIBRT --artifacts DIR --shape BATCHxKEYS
                      [--page P] [--device-table] [--calls 3]
"""

import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "gpu"))
from test_sm90_attention import open_runtime, pinned_i32  # noqa: E402
from sm90_bench import shuffled_pool  # noqa: E402  (this directory)


def parse_shape(text):
    """'BATCHxKEYS' -> (batch, keys), both positive."""
    try:
        b, sk = (int(x) for x in text.split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError("%r: expected BATCHxKEYS, e.g. 1x32768" % text)
    if b < 1 or sk < 1:
        raise argparse.ArgumentTypeError("%r: batch and keys must be positive" % text)
    return b, sk


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--shape", type=parse_shape, required=True, help="BATCHxKEYS")
    ap.add_argument("--page", type=int, default=0, help="keys a page (0: dense K / V)")
    ap.add_argument("--device-table", action="store_true",
                    help="with --page: the block_table in device memory")
    ap.add_argument("--calls", type=int, default=3)
    a = ap.parse_args()
    (b, sk), ps = a.shape, a.page
    if ps < 0 or (a.device_table and not ps):
        ap.error("--page takes a positive page size (with --device-table), or 0 for dense K / V")
    if ps and sk % ps:
        ap.error("--page %d does not divide %d keys" % (ps, sk))
    lib, rt, stream, kernel, run = open_runtime(a.lib, a.artifacts)
    hq, hkv, d = 32, 8, 128
    q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    out = torch.empty_like(q)
    lse = torch.empty(b, hq, 1, device="cuda", dtype=torch.float32)
    meta = {}
    if ps:
        k, v, bt = shuffled_pool(k, v, ps)
        meta = {"seqused_k": pinned_i32([sk] * b),
                "block_table": bt.cuda() if a.device_table else bt}
    kern = kernel(d, "bf16", "bottom_right", hq, hkv, None, 0, 0, None, True,
                  False, bool(ps), ps)
    for _ in range(a.calls):
        run(kern, q, k, v, out, lse, deadline=0, **meta)
    torch.cuda.synchronize()
    lib.fa_runtime_destroy(rt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
