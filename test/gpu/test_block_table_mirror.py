#!/usr/bin/env python3
"""A host block_table read through the runtime's per-stream device mirror
(run on the H200).

The runtime copies a host block_table into a device buffer of the call's
stream, and only when the table's contents changed since the stream's last
call (runtime/src/cuda_mirror.c). What this checks, on decode
over 16-key pages (32 query / 8 kv heads, head_dim 128, bf16, pack_gqa,
seqused_k, automatic num_splits) at batch 16 / 8k and batch 1 / 32k (split):
  - a sequence of calls on one stream, each over a pool with its pages in
    another order: the host table is overwritten in place right after a call
    returns (before its kernel ran: nothing is synchronized), the next call
    passes the same pointer; a call repeating the previous table (the
    mirror is reused) follows. Every call's out and lse must equal, bit for
    bit, the same call made with a device block_table (the kernels' own
    path), whose values are the ones the call was made with;
  - two streams, each with its own table and pool, called alternately
    without synchronization: each stream's calls equal their references;
  - fa_cuda_release_stream on the second stream, then a call there: it
    equals its reference;
  - patched mirrors: one stream, one host table changed in place between
    calls in a few entries (an entry made to repeat its neighbour's page,
    so the keys differ: one run; then two runs, in the first and last
    rows, which at batch 1 are the same row), then in a third of its
    entries (a refill), then back to the
    first table (a patch of many runs or a refill): each call equals the
    same call made with a device copy of its table.
Out and lse are poisoned (NaN) before every call.

Usage: test_block_table_mirror.py --lib LIBRT --artifacts DIR [--out DIR]
Exit status 0 when every case passes; a hung kernel ends the process.
"""

import ctypes as C
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
from test_fused_combine import call, device_sync, poisoned  # noqa: E402
from test_runtime_launch import report  # noqa: E402
from test_sm90_attention import FA_OK, open_runtime, pinned_i32, script_args  # noqa: E402
from sm90_bench import shuffled_pool  # noqa: E402

D, HQ, HKV, PS = 128, 32, 8, 16


def paged_call(lib, rt, kern, q, kp, vp, out, lse, used, bt, stream_handle):
    """One paged fa_attention_run on `stream_handle` (not synchronized)."""
    call(lib, rt, kern, q, kp, vp, out, lse, stream_handle, seqused_k=used, block_table=bt)


def compare(orders, got, refs, what):
    """{passed, detail}: call i (page order orders[i]) against refs[order],
    out and lse bit for bit."""
    bad = [i for i, (r, (o, l)) in enumerate(zip(orders, got))
           if not (torch.equal(o, refs[r][0]) and torch.equal(l, refs[r][1]))]
    return {"passed": not bad,
            "detail": "calls %s differ from their references" % bad if bad
            else "%s: equal to the references" % what}


def patched_calls(lib, rt, stream, kern, b, sk):
    """The patched-mirror case (module docstring): {name: result}."""
    q = torch.randn(b, 1, HQ, D, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, sk, HKV, D, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    used = pinned_i32([sk - 5] * b)
    kp, vp, bt = shuffled_pool(k, v, PS)
    versions = [bt.clone()]
    t = bt.clone()
    t[0, 0] = t[0, 1]  # one run
    versions.append(t.clone())
    t[0, 5] = t[0, 6]  # two runs: row 0 and the last row
    t[-1, -3] = t[-1, -4]
    versions.append(t.clone())
    flat = t.view(-1)
    third = flat.numel() // 3
    flat[0:third:2] = flat[1:third + 1:2].clone()  # a third of the entries
    versions.append(t.clone())
    versions.append(bt.clone())
    dev = [x.cuda() for x in versions]
    refs = [poisoned(q, HQ) for _ in versions]
    got = [poisoned(q, HQ) for _ in versions]
    table = versions[0].clone().pin_memory()
    torch.cuda.synchronize()
    for x, (out, lse) in zip(dev, refs):
        paged_call(lib, rt, kern, q, kp, vp, out, lse, used, x, stream.cuda_stream)
    device_sync()
    for x, (out, lse) in zip(versions, got):
        table.copy_(x)
        paged_call(lib, rt, kern, q, kp, vp, out, lse, used, table, stream.cuda_stream)
    device_sync()
    result = compare(list(range(len(versions))), got, refs,
                     "5 calls over one host table patched in place")
    # The versions must differ in their results, or a stale mirror would go
    # unnoticed.
    same = [i for i in range(1, len(versions)) if i < 4 and torch.equal(refs[i][0], refs[i - 1][0])]
    if same:
        result = {"passed": False,
                  "detail": "versions %s give the previous version's out" % same}
    return {"patched_b%d_k%d" % (b, sk): result}


def main():
    a = script_args()
    lib, rt, stream, kernel, _ = open_runtime(a.lib, a.artifacts)
    kern = kernel(D, "bf16", "bottom_right", HQ, HKV, None, 0, 0, None, True, False, True, PS)
    torch.manual_seed(0)
    results = {}
    for b, sk in ((16, 8192), (1, 32768)):
        q = torch.randn(b, 1, HQ, D, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, sk, HKV, D, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        used = pinned_i32([sk - 5] * b)
        # Pools with their pages in 4 orders; rounds use orders 0, 1, 1, 2, 3.
        pools = [shuffled_pool(k, v, PS) for _ in range(4)]
        rounds = (0, 1, 1, 2, 3)
        # Every buffer and device table made (on torch's stream) and
        # finished before the calls, which run on other streams unsynchronized.
        dev_tables = [bt.cuda() for _, _, bt in pools]
        ref_bufs = [poisoned(q, HQ) for _ in pools]
        one_bufs = [poisoned(q, HQ) for _ in rounds]
        two_bufs = [poisoned(q, HQ) for _ in range(6)]
        table = pools[rounds[0]][2].clone().pin_memory()
        tables = [pools[2][2].clone().pin_memory(), pools[3][2].clone().pin_memory()]
        other = torch.cuda.Stream()
        torch.cuda.synchronize()
        # References: each pool through a device block_table.
        for (kp, vp, _), bt, (out, lse) in zip(pools, dev_tables, ref_bufs):
            paged_call(lib, rt, kern, q, kp, vp, out, lse, used, bt, stream.cuda_stream)
        device_sync()
        # One stream, one host table overwritten in place right after each
        # call returned (its kernel may not have run yet).
        for r, (out, lse) in zip(rounds, one_bufs):
            table.copy_(pools[r][2])
            paged_call(lib, rt, kern, q, pools[r][0], pools[r][1], out, lse, used, table,
                       stream.cuda_stream)
        device_sync()
        results["one_stream_b%d_k%d" % (b, sk)] = compare(
            rounds, one_bufs, ref_bufs, "5 calls over 4 page orders")
        # Two streams, alternating, each with its own table.
        handles = [stream.cuda_stream, other.cuda_stream]
        orders = []
        for i, (out, lse) in enumerate(two_bufs):
            s = i % 2
            order = (2, 3)[s] if i < 4 else (0, 1)[s]
            tables[s].copy_(pools[order][2])
            paged_call(lib, rt, kern, q, pools[order][0], pools[order][1], out, lse, used,
                       tables[s], handles[s])
            orders.append(order)
        device_sync()
        results["two_streams_b%d_k%d" % (b, sk)] = compare(
            orders, two_bufs, ref_bufs, "6 alternating calls")
        # The other stream's state given back (fa_cuda_release_stream),
        # then a call there again: it starts afresh.
        lib.fa_cuda_release_stream.argtypes = [C.c_void_p, C.c_void_p]
        st = lib.fa_cuda_release_stream(rt, other.cuda_stream)
        out, lse = poisoned(q, HQ)
        torch.cuda.synchronize()
        paged_call(lib, rt, kern, q, pools[1][0], pools[1][1], out, lse, used, tables[1],
                   other.cuda_stream)
        device_sync()
        results["released_stream_b%d_k%d" % (b, sk)] = (
            {"passed": False, "detail": "fa_cuda_release_stream returned %d" % st}
            if st != FA_OK else compare([1], [(out, lse)], ref_bufs,
                                        "one call after the stream's release"))
    for b, sk in ((16, 8192), (1, 32768)):
        results.update(patched_calls(lib, rt, stream, kern, b, sk))
    for name, r in results.items():
        print("%s %s: %s" % ("PASS" if r["passed"] else "FAIL", name, r["detail"]), flush=True)
    return report(results, a.out, "block_table mirror test")


if __name__ == "__main__":
    sys.exit(main())
