#!/usr/bin/env python3
"""CUDA graph capture of sm90 runtime calls (run on the H200).

A call captured into a graph (torch.cuda.graph) replays the captured
call: its kernels, the stream-ordered scratch (allocation and free nodes)
and, where the call copies its tile table to the device, that copy, from a
host table the runtime keeps for this (a replay reads it again). Each case
runs eagerly, is captured, the host heap is churned (so that a freed table
would be overwritten), out and lse are poisoned with NaN, the graph is
replayed, and out and lse must equal the eager call's bit for bit. Decode
shapes (32 query / 8 kv heads, head_dim 128, bf16, pack_gqa, automatic
num_splits):
  dense batch 16 / 8k (no scratch), batch 1 / 32k (split-KV: partial
  results and the merge fused into the partial kernel, on the captured
  call's own counters), batch 128 / 2k (the zeroed tile counter);
  paged (16-key pages, seqused_k) at batch 16 with the block_table on the
  host (the table and page lists copied) and on the device (the table
  passed by value), and at batch 128 on the device (the table copied).

And the fused merge's counters across replays: the batch 1 / 32k call is
captured once and replayed three times, on the capture stream and on
another one, each replay followed by eager calls of other inputs on both
streams (which count on the streams' own arrays); every replay must equal
the captured inputs' eager result and every eager call its own, bit for
bit (a counter left nonzero, or shared, would skip or misplace a merge).

And the graphs' ownership of what captured calls read (lifetimes_case):
re-captured calls reuse the counter slices of destroyed graphs, whose
replays stay bit-equal, and 400 captured-and-destroyed graphs leave the
device's free memory where it was.

Usage: test_graph_capture.py --lib LIBRT --artifacts DIR [--out DIR]
Exit status 0 when every case passes; a hung replay ends the process
(watchdog).
"""

import ctypes as C
import gc
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
from test_fused_combine import call, poisoned  # noqa: E402
from test_runtime_launch import report, synchronize  # noqa: E402
from test_sm90_attention import open_runtime, pinned_i32, script_args  # noqa: E402
from sm90_bench import shuffled_pool  # noqa: E402

D, HQ, HKV = 128, 32, 8


def capture_case(run, stream, kern, q, k, v, meta):
    """(passed, detail) of one call: eager, captured, replayed."""
    out = torch.empty(q.shape, device="cuda", dtype=q.dtype)
    lse = torch.empty(q.shape[0], HQ, q.shape[1], device="cuda", dtype=torch.float32)
    run(kern, q, k, v, out, lse, deadline=30.0, **meta)
    want_out, want_lse = out.clone(), lse.clone()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph, stream=stream):
            run(kern, q, k, v, out, lse, deadline=0, **meta)
    except Exception as e:  # noqa: BLE001 - reported as the case's failure
        torch.cuda.synchronize()
        return False, "capture failed: %s" % str(e)[:300]
    # Reuse freed host memory, so that a replay reading a freed table would
    # read other bytes.
    churn = [bytearray(os.urandom(4096)) for _ in range(4000)]
    del churn
    out.fill_(float("nan"))
    lse.fill_(float("nan"))
    stream.wait_stream(torch.cuda.current_stream())  # the poison first
    with torch.cuda.stream(stream):
        graph.replay()
        synchronize(30.0)
    same = torch.equal(out, want_out) and torch.equal(lse, want_lse)
    return same, "replay equals the eager call" if same else (
        "replay differs: max |out - eager| %s, NaN %s" % (
            (out.float() - want_out.float()).abs().nan_to_num(float("inf")).max().item(),
            bool(out.isnan().any())))


def replays_case(lib, rt, run, stream, kern):
    """(passed, detail): one captured split-KV call replayed three times,
    interleaved with eager calls of other inputs on two streams."""
    b, sk = 1, 32768
    q1, q2 = (torch.randn(b, 1, HQ, D, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    k = torch.randn(b, sk, HKV, D, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)

    def buffers():
        return poisoned(q1, HQ)
    ref1, ref2, cap, same, other_out = (buffers() for _ in range(5))
    run(kern, q1, k, v, *ref1)
    run(kern, q2, k, v, *ref2)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        run(kern, q1, k, v, *cap, deadline=0)
    other = torch.cuda.Stream()
    for i in range(3):
        for t in cap + same + other_out:
            t.fill_(float("nan"))
        torch.cuda.synchronize()
        replay_stream = stream if i != 1 else other
        with torch.cuda.stream(replay_stream):
            graph.replay()
        # Eager calls queued behind the replay on its stream and beside it
        # on the other.
        run(kern, q2, k, v, *same, deadline=0)
        call(lib, rt, kern, q2, k, v, *other_out, other.cuda_stream)
        synchronize(30.0)
        for name, got, want in (("replay", cap, ref1), ("eager, capture stream", same, ref2),
                                ("eager, other stream", other_out, ref2)):
            if not (torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])):
                return False, "round %d: %s differs from its eager reference" % (i, name)
    return True, "3 replays and 6 eager calls equal their references"


def lifetimes_case(run, stream, dense, big):
    """(passed, detail): what a captured call reads belongs to its graph.
    - 40 rounds: the batch 1 / 32k split call (q alternating between two
      inputs) captured into a new graph, replayed, compared with its eager
      result bit for bit, and the graph destroyed. A later capture reuses
      the counter slice a destroyed graph gave back, which must be zero
      (a slice left nonzero, or given back while a replay still ran, would
      skip or repeat a merge).
    - 400 graphs of a call with 8192 tiles (head_dim 64, 4 splits: 32 KB of
      counters each) captured and destroyed: the device's free memory
      (graph memory trimmed) may fall by at most 4 MB; slices kept for the
      runtime's lifetime would take 400 x 32 KB = 12.8 MB."""
    b, sk = 1, 32768
    qs = [torch.randn(b, 1, HQ, D, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    k = torch.randn(b, sk, HKV, D, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)

    def buffers():
        return poisoned(qs[0], HQ)
    refs = [buffers() for _ in qs]
    for q, ref in zip(qs, refs):
        run(dense, q, k, v, *ref)
    got = buffers()
    bad = []
    for i in range(40):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            run(dense, qs[i % 2], k, v, *got, deadline=0)
        for t in got:
            t.fill_(float("nan"))
        torch.cuda.synchronize()
        with torch.cuda.stream(stream):
            graph.replay()
            synchronize(30.0)
        if not (torch.equal(got[0], refs[i % 2][0]) and torch.equal(got[1], refs[i % 2][1])):
            bad.append(i)
        del graph
    g = torch.Generator(device="cuda").manual_seed(7)
    bq = torch.randn(8, 32768, 4, 64, device="cuda", dtype=torch.float16, generator=g)
    bo = torch.empty_like(bq)
    bl = torch.empty(8, 4, 32768, device="cuda", dtype=torch.float32)
    run(big, bq, bq, bq, bo, bl)  # loads the module, outside any capture
    cuda = C.CDLL("libcuda.so.1")
    device = C.c_int(torch.cuda.current_device())

    def free_bytes():
        gc.collect()
        torch.cuda.synchronize()
        time.sleep(0.2)  # the driver's thread runs the user objects' destructors
        cuda.cuDeviceGraphMemTrim(device)
        torch.cuda.empty_cache()
        return torch.cuda.mem_get_info()[0]

    def captures(n):
        for _ in range(n):
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=stream):
                run(big, bq, bq, bq, bo, bl, deadline=0)
            del graph
    captures(4)
    before = free_bytes()
    captures(400)
    drop = before - free_bytes()
    detail = "%s; 400 graphs of 8192 tiles: free memory fell by %.1f MB" % (
        "rounds %s: the replay differs from its eager result" % bad if bad
        else "40 replays equal", drop / 2**20)
    return not bad and drop <= 4 * 2**20, detail


def main():
    a = script_args()
    lib, rt, stream, kernel, run = open_runtime(a.lib, a.artifacts)
    torch.manual_seed(0)
    dense = kernel(D, "bf16", "bottom_right", HQ, HKV, None, 0, 0, None, True)
    paged = kernel(D, "bf16", "bottom_right", HQ, HKV, None, 0, 0, None, True, False, True, 16)
    results = {}
    for b, sk in ((16, 8192), (1, 32768), (128, 2048)):
        q = torch.randn(b, 1, HQ, D, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, sk, HKV, D, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        cases = [("dense_b%d_k%d" % (b, sk), dense, k, v, {})]
        if b != 1:
            kp, vp, bt = shuffled_pool(k, v, 16)
            used = pinned_i32([sk - 3] * b)
            if b == 16:
                cases.append(("paged16_host_block_table_b%d" % b, paged, kp, vp,
                              dict(seqused_k=used, block_table=bt)))
            cases.append(("paged16_device_block_table_b%d" % b, paged, kp, vp,
                          dict(seqused_k=used, block_table=bt.cuda())))
        for name, kern, kk, vv, meta in cases:
            ok, detail = capture_case(run, stream, kern, q, kk, vv, meta)
            results[name] = {"passed": ok, "detail": detail}
            print("%s %s: %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)
    ok, detail = replays_case(lib, rt, run, stream, dense)
    results["fused_merge_replays"] = {"passed": ok, "detail": detail}
    print("%s fused_merge_replays: %s" % ("PASS" if ok else "FAIL", detail), flush=True)
    big = kernel(64, "f16", "none", 4, 4, None, 0, 4)
    ok, detail = lifetimes_case(run, stream, dense, big)
    results["graph_lifetimes"] = {"passed": ok, "detail": detail}
    print("%s graph_lifetimes: %s" % ("PASS" if ok else "FAIL", detail), flush=True)
    return report(results, a.out, "graph capture test")


if __name__ == "__main__":
    sys.exit(main())
