#!/usr/bin/env python3
"""The split-KV combine fused into the partial kernel (run on the H200).

The unit that finishes a tile's last split merges the tile, counted on a
per-stream u32 array that every launch leaves at zero (runtime/src/cuda_stream.c,
fa_cuda_merge_counters). What this checks, with out and lse poisoned (NaN) before
every call:
  - repeated calls and calls of other shapes on one stream (each launch's
    tile and split counts differ, so a counter left nonzero would skip or
    repeat a merge) against the float64 reference, docs/SEMANTICS.md's
    tolerance rule: decode 32 query / 8 kv heads, head_dim 128, bf16,
    pack_gqa, automatic num_splits, batch 1 / 32k keys, batch 2 / 9000
    keys with 4 query tokens (speculative decode), batch 1 / 1000 keys;
  - two streams at once (each its own counters), against the same
    reference;
  - the combine kernel's path (calls on the per-thread default stream,
    and an out whose address is not 8-byte aligned) against the reference;
  - a launch with more tiles than the first counter array holds (4096):
    head_dim 64, f16, 4 splits, batch 8 of 32k queries (over 4096 tiles); fused (a new stream) against the
    combine kernel's result (the per-thread default stream), since a float64
    reference of that size does not fit the GPU.

Usage: test_fused_combine.py --lib LIBRT --artifacts DIR [--out DIR]
Exit status 0 when every case passes; a hung kernel ends the process
(watchdog).
"""

import ctypes as C
import os
import sys
import threading

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_runtime_launch import attention_args, report  # noqa: E402
from test_sm90_attention import FA_OK, check, naive, open_runtime, reference, script_args  # noqa: E402

D, HQ, HKV = 128, 32, 8
PER_THREAD_STREAM = 2  # CU_STREAM_PER_THREAD


def device_sync(deadline_s=60.0):
    """torch.cuda.synchronize (every stream) with a watchdog."""
    timer = threading.Timer(deadline_s, lambda: (print("WATCHDOG: kernels did not finish",
                                                       flush=True), os._exit(3)))
    timer.start()
    torch.cuda.synchronize()
    timer.cancel()


def call(lib, rt, kern, q, k, v, out, lse, stream_handle, **meta):
    """One fa_attention_run on `stream_handle` (not synchronized); meta:
    further fa_attention_args tensors (seqused_k, block_table, ...)."""
    args = attention_args(q, k, v, out, lse, stream_handle, **meta)
    # A stream of PyTorch's (non-blocking) waits for the caller's stream,
    # where the inputs and the poisoned outputs were made; the legacy and
    # per-thread default streams (handles 0-2) are ordered with it already.
    if stream_handle not in (None, 0, 1, 2):
        torch.cuda.ExternalStream(stream_handle).wait_stream(torch.cuda.current_stream())
    st = lib.fa_attention_run(rt, kern, C.byref(args))
    if st != FA_OK:
        raise RuntimeError(lib.fa_runtime_last_error(rt).decode())


def poisoned(q, hq):
    out = torch.full_like(q, float("nan"))
    lse = torch.full((q.shape[0], hq, q.shape[1]), float("nan"), device="cuda")
    return out, lse


def decode_inputs(b, sq, sk, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(b, sq, HQ, D, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(b, sk, HKV, D, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(b, sk, HKV, D, device="cuda", dtype=torch.bfloat16, generator=g)
    return q, k, v


def main():
    a = script_args()
    lib, rt, stream, kernel, _ = open_runtime(a.lib, a.artifacts)
    decode = kernel(D, "bf16", "bottom_right", HQ, HKV, None, 0, 0, None, True)
    results = {}

    def record(name, ok, detail):
        results[name] = {"passed": bool(ok), "detail": detail}
        print("%s %s: %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)

    def against_reference(name, q, k, v, out, lse, ref):
        ok, r = check(name, torch.bfloat16, out, lse, ref[0], ref[1], ref[2])
        results[name] = dict(r, passed=bool(ok))

    shapes = [(1, 1, 32768), (2, 4, 9000), (1, 1, 1000)]
    inputs = {s: decode_inputs(*s, seed=i) for i, s in enumerate(shapes)}
    refs = {s: reference(*inputs[s], "bottom_right") + (naive(*inputs[s], "bottom_right"),)
            for s in shapes}
    # One stream: each shape three times, the shapes interleaved.
    for rnd in range(3):
        for s in shapes:
            q, k, v = inputs[s]
            out, lse = poisoned(q, HQ)
            call(lib, rt, decode, q, k, v, out, lse, stream.cuda_stream)
            device_sync()
            against_reference("stream_b%d_sq%d_sk%d_round%d" % (s + (rnd,)), q, k, v, out,
                              lse, refs[s])
    # Two streams at once.
    other = torch.cuda.Stream()
    pending = []
    for s, st in ((shapes[0], stream), (shapes[1], other), (shapes[2], stream),
                  (shapes[0], other)):
        q, k, v = inputs[s]
        out, lse = poisoned(q, HQ)
        call(lib, rt, decode, q, k, v, out, lse, st.cuda_stream)
        pending.append((s, out, lse))
    device_sync()
    for i, (s, out, lse) in enumerate(pending):
        against_reference("two_streams_%d_b%d_sq%d_sk%d" % ((i,) + s), *inputs[s], out, lse,
                          refs[s])
    # The combine kernel's path: the per-thread default stream, and an
    # out that is not 8-byte aligned.
    for s in shapes[:2]:
        q, k, v = inputs[s]
        out, lse = poisoned(q, HQ)
        call(lib, rt, decode, q, k, v, out, lse, PER_THREAD_STREAM)
        device_sync()
        against_reference("per_thread_stream_b%d_sq%d_sk%d" % s, q, k, v, out, lse, refs[s])
    q, k, v = inputs[shapes[0]]
    backing = torch.full((q.numel() + 2,), float("nan"), device="cuda", dtype=q.dtype)
    out = backing[2:].view(q.shape)  # 4 bytes past a 256-byte boundary
    _, lse = poisoned(q, HQ)
    call(lib, rt, decode, q, k, v, out, lse, stream.cuda_stream)
    device_sync()
    against_reference("unaligned_out_b1_sq1_sk32768", q, k, v, out, lse, refs[shapes[0]])
    # More tiles than the first counter array: fused on a new stream against
    # the combine kernel on the per-thread default stream.
    big = kernel(64, "f16", "none", 4, 4, None, 0, 4)
    g = torch.Generator(device="cuda").manual_seed(7)
    q = torch.randn(8, 32768, 4, 64, device="cuda", dtype=torch.float16, generator=g)
    k = torch.randn(8, 32768, 4, 64, device="cuda", dtype=torch.float16, generator=g)
    v = torch.randn(8, 32768, 4, 64, device="cuda", dtype=torch.float16, generator=g)
    fresh = torch.cuda.Stream()
    outs = []
    for handle in (fresh.cuda_stream, PER_THREAD_STREAM, fresh.cuda_stream):
        out, lse = poisoned(q, 4)
        call(lib, rt, big, q, k, v, out, lse, handle)
        device_sync()
        outs.append((out, lse))
    for i in (0, 2):
        o, l = outs[i]
        ro, rl = outs[1]
        nan = bool(o.isnan().any() or l.isnan().any())
        err = (o.float() - ro.float()).abs().max().item()
        lerr = (l - rl).abs().max().item()
        record("more_tiles_than_counters_call%d" % i, not nan and err <= 1e-3 and lerr <= 1e-5,
               "fused vs combine kernel: max |out| diff %.2e, lse diff %.2e%s" % (
                   err, lerr, ", NaN" if nan else ""))
    return report(results, a.out, "fused combine test")


if __name__ == "__main__":
    sys.exit(main())
