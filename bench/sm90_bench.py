#!/usr/bin/env python3
"""Benchmark: the generated sm_90a attention kernels against PyTorch SDPA's
cuDNN and FlashAttention-2 backends, in the same process (run on the H200).

Convention of the FlashAttention benchmarks: bf16, 16k
tokens in total (batch = 16384 / seqlen), 2048 / head_dim heads, head_dim
64/128/256, causal (bottom_right, = top_left here since Sq == Sk) and not,
seqlen 512 to 16k. Forward FLOPs = 4 * batch * heads * seqlen^2 * head_dim,
halved when causal. Timings are CUDA events around one launch, interleaved
(ours, cuDNN, FA2, ours, ...) 9 times after a watched warm-up; the medians are
quoted, and ratios ours / peer. Before each timed launch the stream spins
about 1 ms (torch.cuda._sleep) while the host enqueues the start event and
the launch, so the host's launch overhead (ctypes here, PyTorch's dispatch
for the peers) stays out of the GPU time; before the spin a 256 MB buffer
is written, so that every launch starts with a cold L2 (as Triton's
do_bench), not with what the launch before it read. A ratio within 2% of a bar is noise (docs/BENCHMARKS.md, method).

Our kernels are the artifacts test/gpu/build_sm90_artifacts.sh compiled,
launched through libflashattn_rt (ctypes), exactly as a runtime user would.

Usage (on the device, after test/gpu/prepare.sh and build_sm90_artifacts.sh
here): sm90_bench.py --lib LIBRT --artifacts DIR [--out DIR]
    [--variant NAME=DIR[@LIB] ...] [--head-dims 64,128] [--masks none,bottom_right]
    [--seqlens 512,1024] [--decode [--graphs] [--pages 16,64] [--floor-lib L] | --varlen] [--repeats 9]
(--graphs: each decode call captured into a CUDA graph, replays timed.)
It writes DIR/bench.json (decode.json, varlen.json, gqa.json), whose first
row names the GPU (name and UUID: the lent H200s differ by a few percent in
the ratios, so compare results per machine); test/gpu/test_sm90_attention.py runs the same
benchmark after its correctness cases. A --variant is a second artifact
directory (the same configs compiled another way, e.g. fa-compile --block-n)
timed in the same interleaved loop: an A/B measurement of one compiler
change, reported as NAME / ours; with @LIB the variant also runs through
another build of the runtime library (a runtime change's A/B).
"""

import argparse
import json
import math
import os
import random
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "gpu"))
from test_runtime_launch import synchronize  # noqa: E402

TOKENS = 16384
SEQLENS = (512, 1024, 2048, 4096, 8192, 16384)
REPEATS = 9
# About 1 ms of GPU spin before each timed launch (torch.cuda._sleep).
SLEEP_CYCLES = 2_000_000
# Written before each timed launch, so that no launch finds the previous
# one's inputs in L2 (the H200's L2 holds tens of MB: a decode call's K and
# V of 134 MB were partly L2 hits for the launch timed right after another
# reading the same tensors). Triton's do_bench flushes the same way.
L2_FLUSH_BYTES = 256 << 20


def median_times(fns, stream):
    """Median milliseconds of each function of `fns` (name -> callable
    launching on `stream`): a watched warm-up, then REPEATS interleaved
    rounds (each name once per round; the order turned by one each round,
    or per FA_BENCH_ORDER: random, fixed),
    each launch alone between two events
    with the GPU spinning while the host enqueues them, so the time between
    the events is the kernel's, not the host's launch overhead (ctypes,
    dispatch). L2 is flushed before each launch (L2_FLUSH_BYTES written,
    or read with FA_BENCH_FLUSH=read)."""
    times = {n: [] for n in fns}
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    # FA_BENCH_FLUSH=read flushes by reading the buffer instead of writing
    # it: L2 then holds clean lines, and the timed launch pays no write-back
    # of the flush's dirty ones (about 50 MB after a write).
    flush_read = os.environ.get("FA_BENCH_FLUSH", "write") == "read"
    flush_max = torch.empty((), dtype=torch.uint8, device="cuda")
    for f in fns.values():
        with torch.cuda.stream(stream):
            f()
            synchronize(60.0)
    names = list(fns)
    # The order within a round: FA_BENCH_ORDER=turn (the default) turns it
    # by one each round, so that every function is timed equally often in
    # each position; random draws a permutation per round (seeded by the
    # round), so that no function always follows the same one; fixed keeps
    # the listed order (FA_BENCH_FIXED_ORDER=1 as well).
    order = os.environ.get("FA_BENCH_ORDER", "turn")
    if os.environ.get("FA_BENCH_FIXED_ORDER") == "1":
        order = "fixed"
    for r in range(REPEATS):
        if order == "random":
            ordered = list(names)
            random.Random(r).shuffle(ordered)
        else:
            shift = 0 if order == "fixed" else r % len(names)
            ordered = names[shift:] + names[:shift]
        for n in ordered:
            f = fns[n]
            st, en = torch.cuda.Event(True), torch.cuda.Event(True)
            with torch.cuda.stream(stream):
                if flush_read:
                    torch.amax(flush, 0, out=flush_max)
                else:
                    flush.zero_()
                torch.cuda._sleep(SLEEP_CYCLES)
                st.record()
                f()
                en.record()
                synchronize(60.0)
            times[n].append(st.elapsed_time(en))
    return {n: sorted(t)[len(t) // 2] for n, t in times.items()}


def benchmark(kernel, run, stream, head_dims=(64, 128, 256), seqlens=SEQLENS,
              masks=("none", "bottom_right"), variants=()):
    """Rows of {head_dim, causal, seqlen, batch, heads, tflops{ours,cudnn,fa2,
    <variant>...}, ratio_vs_cudnn, ratio_vs_fa2}; kernel/run as
    test_sm90_attention's open_runtime returns them; variants: (name, kernel,
    run) of other artifact directories, timed in the same loop."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    rows = []
    for d in head_dims:
        h = 2048 // d
        for causal in masks:
            for s in seqlens:
                b = TOKENS // s
                q = torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
                k = torch.randn_like(q)
                v = torch.randn_like(q)
                out = torch.empty_like(q)
                lse = torch.empty(b, h, s, device="cuda", dtype=torch.float32)
                kern = kernel(d, "bf16", causal, h, h)
                qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
                is_causal = causal != "none"

                def ours():
                    run(kern, q, k, v, out, lse, deadline=0)

                def peer(backend):
                    def f():
                        with sdpa_kernel(backend):
                            F.scaled_dot_product_attention(qt, kt, vt, is_causal=is_causal)
                    return f

                fns = {"ours": ours, "cudnn": peer(SDPBackend.CUDNN_ATTENTION),
                       "fa2": peer(SDPBackend.FLASH_ATTENTION)}
                for vname, vkernel, vrun in variants:
                    def variant(vk=vkernel(d, "bf16", causal, h, h), vr=vrun):
                        vr(vk, q, k, v, out, lse, deadline=0)
                    fns[vname] = variant
                med = median_times(fns, stream)
                flops = 4 * b * h * s * s * d / (2 if is_causal else 1)
                tf = {n: flops / (m * 1e-3) / 1e12 for n, m in med.items()}
                row = {"head_dim": d, "causal": causal, "seqlen": s, "batch": b,
                       "heads": h, "tflops": tf,
                       "ratio_vs_cudnn": tf["ours"] / tf["cudnn"],
                       "ratio_vs_fa2": tf["ours"] / tf["fa2"]}
                rows.append(row)
                extra = "".join("  %s %6.1f (%s/ours %.3f)" % (
                    n, tf[n], n, tf[n] / tf["ours"]) for n, _, _ in variants)
                print("bench hd%-3d %-12s s=%-5d ours %6.1f  cudnn %6.1f  fa2 %6.1f  "
                      "TFLOP/s  ours/cudnn %.2f  ours/fa2 %.2f%s" % (
                          d, causal, s, tf["ours"], tf["cudnn"], tf["fa2"],
                          row["ratio_vs_cudnn"], row["ratio_vs_fa2"], extra), flush=True)
    return rows


DECODE_SHAPES = ((1, 32768), (1, 131072), (16, 8192), (64, 4096), (128, 2048))


def num_splits_heuristic(tiles, sms, key_blocks, max_splits=128):
    """FlashAttention's occupancy heuristic (flash_api.cpp) as the runtime
    applies it (fa_num_splits_heuristic): the smallest split count whose wave
    efficiency is at least 0.95 of the best (FlashAttention: 0.85)."""
    if tiles >= 0.8 * sms:
        return 1
    max_splits = min(max_splits, sms, key_blocks)
    eff = [(tiles * s / sms) / math.ceil(tiles * s / sms) for s in range(1, max_splits + 1)]
    best = max(eff)
    return next(s for s, e in enumerate(eff, 1) if e >= 0.95 * best)


def bandwidth_ceilings(stream):
    """Memory ceilings measured in the same process:
    a 2 GiB device-to-device copy (bytes read + written / time) and a 4 GiB
    read-only reduction (bytes read / time), medians of REPEATS, TB/s."""
    src = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    big = torch.ones(1 << 31, dtype=torch.bfloat16, device="cuda")  # 4 GiB
    med = median_times({"copy": lambda: dst.copy_(src), "read": lambda: big.sum()}, stream)
    out = {"copy_tbps": 2 * src.numel() / (med["copy"] * 1e-3) / 1e12,
           "read_tbps": 2 * big.numel() / (med["read"] * 1e-3) / 1e12}
    del src, dst, big
    torch.cuda.empty_cache()
    print("ceilings: device-to-device copy %.2f TB/s (read + write), read-only reduction "
          "%.2f TB/s" % (out["copy_tbps"], out["read_tbps"]), flush=True)
    return out


def stream_floor(path):
    """bench/stream_read.cu's library (test/gpu/prepare.sh builds it into
    build/gpu-carry with nvcc), or None when `path` does not exist: a
    function (k, v, splits, dynamic) -> launcher of the streaming-read floor
    over dense k / v [B, Sk, Hkv, D] on the current stream."""
    if not path or not os.path.exists(path):
        return None
    import ctypes
    lib = ctypes.CDLL(path)
    lib.fa_bench_stream_read.restype = ctypes.c_int
    lib.fa_bench_stream_read.argtypes = [
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
        ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_void_p]
    counter = torch.zeros(1, dtype=torch.int64, device="cuda")
    base = ctypes.c_ulonglong(0)
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def make(k, v, splits, dynamic):
        b, sk, hkv, d = k.shape

        def f():
            r = lib.fa_bench_stream_read(k.data_ptr(), v.data_ptr(), b, sk, hkv, d, splits,
                                         int(dynamic), sms, counter.data_ptr(),
                                         ctypes.byref(base),
                                         torch.cuda.current_stream().cuda_stream)
            if r != 0:
                raise RuntimeError("fa_bench_stream_read failed: %d" % r)
        return f
    return make


def shuffled_pool(k, v, ps):
    """The keys of dense k / v [B, Sk, Hkv, D] (Sk a multiple of ps) as a
    pool of ps-key pages in shuffled order, and the block_table [B, Sk / ps]
    (i32, pinned host memory) that maps each sequence's pages back: (k
    pool, v pool, block_table)."""
    b, sk, hkv, d = k.shape
    n = b * sk // ps
    perm = torch.randperm(n)
    kp = k.reshape(n, ps, hkv, d)[perm.cuda()].contiguous()
    vp = v.reshape(n, ps, hkv, d)[perm.cuda()].contiguous()
    # Page i of the pool holds the keys of original page perm[i].
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(n)
    return kp, vp, inv.reshape(b, sk // ps).to(torch.int32).pin_memory()


def as_graph(f, stream):
    """f captured into a CUDA graph on `stream` (after one eager call, which
    loads the kernels): a function replaying it."""
    with torch.cuda.stream(stream):
        f()
        synchronize(60.0)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        f()
    return graph.replay


def decode_benchmark(kernel, run, stream, sms=132, pages=(16, 64), variants=(),
                     shapes=DECODE_SHAPES, graphs=False, floor=None, changed=None):
    """Decode (one query token, 32 query / 8 kv heads, head_dim 128, bf16;
    the rows of DECODE_SHAPES): ours = pack_gqa + split-KV partial kernel with
    the merge fused (timed) from the automatic-num_splits artifact (the
    runtime applies FlashAttention's heuristic at launch); cuDNN = SDPA's
    cuDNN backend with enable_gqa; paged<P> = ours over the same keys in a
    pool of P-key pages addressed through a shuffled block_table (seqused_k,
    automatic num_splits) in pinned host memory (the kernels read the
    stream's device mirror of it, filled at the first call),
    paged<P>_dev the same with the block_table in device memory,
    paged<P>_seq with the pages in order (the block_table an arange),
    paged<P>_changed with a host block_table that differs at every call
    (one unused column wider than paged<P>'s: the runtime patches or copies
    its own mirror each time), through `changed` ((kernel, run) of a second
    runtime over the same artifacts, else ours): a runtime keeps 4 mirrors
    a stream, and the changing tables in ours would evict the unchanged
    ones, so that paged<P> paid a copy a call where a variant's did not.
    With `floor` (stream_floor's result) two streaming reads of the same
    K and V, computing nothing, run in the same loop: floor = the decode
    kernels' schedule ((batch, kv head, split) units, one per CTA),
    floor_dyn = single key blocks balanced over the SMs (the ideal); a
    kernel's time over floor's is its overhead beyond moving the bytes.
    With `graphs` every call (ours, cuDNN's, the variants') is captured
    into a CUDA graph once and the replays are timed, as serving runtimes
    run decode. Bandwidth = K+V bytes / time. Rows of {batch, keys, splits,
    us{ours,cudnn,auto_pack,paged<P>,paged<P>_dev,paged<P>_seq,
    paged<P>_changed,<variant>...}, tbps{...}, ratio_vs_cudnn,
    paged_vs_dense{P}, paged_dev_vs_dense{P}, paged_seq_vs_dense{P},
    paged_changed_vs_dense{P}, floor_vs_ours, floor_dyn_vs_ours}."""
    from test_sm90_attention import pinned_i32
    from torch.nn.attention import SDPBackend, sdpa_kernel
    rows = [{"ceilings": bandwidth_ceilings(stream)}]
    hq, hkv, d = 32, 8, 128
    for b, sk in shapes:
        q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        out = torch.empty_like(q)
        lse = torch.empty(b, hq, 1, device="cuda", dtype=torch.float32)
        # The automatic-num_splits artifact: the runtime picks the count per
        # launch (the same heuristic as num_splits_heuristic, reported).
        splits = num_splits_heuristic(b * hkv, sms, (sk + 127) // 128)
        kern = kernel(d, "bf16", "bottom_right", hq, hkv, None, 0, 0, None, True)
        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))

        def ours():
            run(kern, q, k, v, out, lse, deadline=0)

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)

        # The config's defaults (automatic pack_gqa and num_splits): the
        # runtime picks the packed entries for one query token.
        kern_auto = kernel(d, "bf16", "bottom_right", hq, hkv, None, 0, 0, None, False)

        def auto():
            run(kern_auto, q, k, v, out, lse, deadline=0)

        fns = {"ours": ours, "cudnn": cudnn, "auto_pack": auto}
        used = pinned_i32([sk] * b)
        for ps in pages:
            n = b * sk // ps
            kp, vp, bt = shuffled_pool(k, v, ps)
            kern_p = kernel(d, "bf16", "bottom_right", hq, hkv, None, 0, 0, None, True,
                            False, True, ps)

            def paged(kern_p=kern_p, kp=kp, vp=vp, bt=bt):
                run(kern_p, q, kp, vp, out, lse, deadline=0, seqused_k=used, block_table=bt)
            fns["paged%d" % ps] = paged

            # The block_table in device memory (as FlashAttention's callers
            # pass it): the kernels read it there; only the tile entries are
            # copied, and not even those when they fit the kernels' inline
            # parameter (small batches).
            def paged_dev(kern_p=kern_p, kp=kp, vp=vp, bt=bt.cuda()):
                run(kern_p, q, kp, vp, out, lse, deadline=0, seqused_k=used, block_table=bt)
            fns["paged%d_dev" % ps] = paged_dev

            # The same pages in order (block_table = arange, in device
            # memory): paging without the scattered placement, which tells
            # the cost of the page mechanics from that of the scatter.
            def paged_seq(kern_p=kern_p, kp=k.reshape(n, ps, hkv, d),
                          vp=v.reshape(n, ps, hkv, d),
                          bt=torch.arange(n, dtype=torch.int32, device="cuda").reshape(b, -1)):
                run(kern_p, q, kp, vp, out, lse, deadline=0, seqused_k=used, block_table=bt)
            fns["paged%d_seq" % ps] = paged_seq

            # A host block_table that changes at every call (two of its
            # entries swapped, another pair each time): the runtime's
            # per-stream mirrors never hold it, so each call copies (or
            # patches) it. The output is not meaningful (pages out of
            # order); the work is the same. It has one unused column more
            # than the unchanged table (a block_table may be wider than the
            # pages it lists): of the same size, it would be patched into
            # the unchanged table's mirror and back at every call, which no
            # single stream of a server does, and the unchanged column
            # would pay a copy per call (an A/A run showed that bias).
            ckernel, crun = changed or (kernel, run)

            def paged_changed(kern_p=ckernel(d, "bf16", "bottom_right", hq, hkv, None, 0, 0,
                                             None, True, False, True, ps),
                              crun=crun, kp=kp, vp=vp,
                              bt=torch.cat([bt, bt[:, :1]], 1).contiguous().pin_memory(),
                              step=[0]):
                step[0] = step[0] % (bt.shape[1] - 2) + 1
                first, other = bt[0, 0].item(), bt[0, step[0]].item()
                bt[0, 0], bt[0, step[0]] = other, first
                crun(kern_p, q, kp, vp, out, lse, deadline=0, seqused_k=used, block_table=bt)
            fns["paged%d_changed" % ps] = paged_changed
            for vname, vkernel, vrun in variants:
                def vpaged(vk=vkernel(d, "bf16", "bottom_right", hq, hkv, None, 0, 0, None,
                                      True, False, True, ps), vr=vrun, kp=kp, vp=vp, bt=bt):
                    vr(vk, q, kp, vp, out, lse, deadline=0, seqused_k=used, block_table=bt)
                fns["%s_paged%d" % (vname, ps)] = vpaged

                def vpaged_dev(vk=vkernel(d, "bf16", "bottom_right", hq, hkv, None, 0, 0, None,
                                          True, False, True, ps), vr=vrun, kp=kp, vp=vp,
                               bt=bt.cuda()):
                    vr(vk, q, kp, vp, out, lse, deadline=0, seqused_k=used, block_table=bt)
                fns["%s_paged%d_dev" % (vname, ps)] = vpaged_dev
        for vname, vkernel, vrun in variants:
            def vdense(vk=vkernel(d, "bf16", "bottom_right", hq, hkv, None, 0, 0, None, True),
                       vr=vrun):
                vr(vk, q, k, v, out, lse, deadline=0)
            fns[vname] = vdense
        # (Not under graph capture: floor_dyn's counter base moves per call.)
        if floor is not None and not graphs:
            fns["floor"] = floor(k, v, splits, False)
            fns["floor_dyn"] = floor(k, v, splits, True)
        if graphs:
            fns = {n: as_graph(f, stream) for n, f in fns.items()}
        med = median_times(fns, stream)
        kv_bytes = 2 * b * sk * hkv * d * 2
        tbps = {n: kv_bytes / (m * 1e-3) / 1e12 for n, m in med.items()}
        row = {"batch": b, "keys": sk, "splits": splits,
               "us": {n: m * 1e3 for n, m in med.items()}, "tbps": tbps,
               "ratio_vs_cudnn": med["cudnn"] / med["ours"],
               "paged_vs_dense": {ps: med["ours"] / med["paged%d" % ps] for ps in pages},
               "paged_dev_vs_dense": {ps: med["ours"] / med["paged%d_dev" % ps]
                                      for ps in pages},
               "paged_seq_vs_dense": {ps: med["ours"] / med["paged%d_seq" % ps]
                                      for ps in pages},
               "paged_changed_vs_dense": {ps: med["ours"] / med["paged%d_changed" % ps]
                                          for ps in pages},
               "auto_pack_vs_packed": med["ours"] / med["auto_pack"]}
        if "floor" in med:
            row["floor_vs_ours"] = med["floor"] / med["ours"]
            row["floor_dyn_vs_ours"] = med["floor_dyn"] / med["ours"]
        rows.append(row)
        print("decode b=%-4d keys=%-6d splits %-2d ours %7.1f us %5.2f TB/s  cudnn %7.1f us "
              "%5.2f TB/s  ours/cudnn %.2f%s" % (
                  b, sk, splits, row["us"]["ours"], tbps["ours"], row["us"]["cudnn"],
                  tbps["cudnn"], row["ratio_vs_cudnn"],
                  "".join("  paged%d %7.1f us (paged/dense %.2f, device block_table %.2f, "
                          "in order %.2f, changed each call %.2f)" % (
                              ps, row["us"]["paged%d" % ps], row["paged_vs_dense"][ps],
                              row["paged_dev_vs_dense"][ps], row["paged_seq_vs_dense"][ps],
                              row["paged_changed_vs_dense"][ps])
                          for ps in pages)
                  + "  auto_pack %7.1f us (/packed %.2f)" % (row["us"]["auto_pack"],
                                                              row["auto_pack_vs_packed"])),
              flush=True)
        if "floor" in med:
            print("   streaming-read floor: %7.1f us %5.2f TB/s (floor/ours %.3f, floor/cudnn "
                  "%.3f), balanced %7.1f us %5.2f TB/s (/ours %.3f)" % (
                      row["us"]["floor"], tbps["floor"], row["floor_vs_ours"],
                      med["floor"] / med["cudnn"], row["us"]["floor_dyn"], tbps["floor_dyn"],
                      row["floor_dyn_vs_ours"]), flush=True)
        for vname, _, _ in variants:
            print("   variant %s: %s" % (vname, "  ".join(
                "%s %.1f us (%s/ours %.3f)" % (n, row["us"][n], n, med[n.replace(vname + "_", "")
                                                                         if n != vname else "ours"] / med[n])
                for n in row["us"] if n.startswith(vname))), flush=True)
    return rows


def gqa_benchmark(kernel, run, stream, seqlens=(1024, 2048, 8192)):
    """GQA prefill (32 query / 8 kv heads, head_dim 128, bf16, 16k tokens):
    our kernel without and with pack_gqa, and cuDNN (enable_gqa), in one
    loop: does packing the query heads of a kv head into a tile pay for
    prefill too? Rows of {causal, seqlen, tflops{unpacked, packed, cudnn}}."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    rows = []
    hq, hkv, d = 32, 8, 128
    for causal in ("none", "bottom_right"):
        for s in seqlens:
            b = TOKENS // s
            q = torch.randn(b, s, hq, d, device="cuda", dtype=torch.bfloat16)
            k = torch.randn(b, s, hkv, d, device="cuda", dtype=torch.bfloat16)
            v = torch.randn_like(k)
            out = torch.empty_like(q)
            lse = torch.empty(b, hq, s, device="cuda", dtype=torch.float32)
            ku, kp = kernel(d, "bf16", causal, hq, hkv), kernel(d, "bf16", causal, hq, hkv,
                                                                pack=True)
            qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
            is_causal = causal != "none"

            def cudnn():
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    F.scaled_dot_product_attention(qt, kt, vt, is_causal=is_causal,
                                                   enable_gqa=True)
            med = median_times({"unpacked": lambda: run(ku, q, k, v, out, lse, deadline=0),
                                "packed": lambda: run(kp, q, k, v, out, lse, deadline=0),
                                "cudnn": cudnn}, stream)
            flops = 4 * b * hq * s * s * d / (2 if is_causal else 1)
            tf = {n: flops / (m * 1e-3) / 1e12 for n, m in med.items()}
            rows.append({"causal": causal, "seqlen": s, "tflops": tf})
            print("gqa hd128 32/8 %-12s s=%-5d unpacked %6.1f  packed %6.1f  cudnn %6.1f  "
                  "packed/unpacked %.3f" % (causal, s, tf["unpacked"], tf["packed"],
                                             tf["cudnn"], tf["packed"] / tf["unpacked"]),
                  flush=True)
    return rows


def varlen_lengths(tokens=TOKENS, lo=128, hi=4096, seed=0):
    """Uneven sequence lengths in [lo, hi] summing to `tokens` (seeded)."""
    g = torch.Generator().manual_seed(seed)
    lens = []
    while sum(lens) < tokens:
        lens.append(int(torch.randint(lo, hi + 1, (1,), generator=g)))
    lens[-1] -= sum(lens) - tokens
    if lens[-1] < lo:  # fold a short tail into its neighbour
        lens[-2] += lens.pop()
    return lens


def varlen_benchmark(kernel, run, stream, masks=("bottom_right", "none"), variants=()):
    """Varlen prefill (issue 7's bar): head_dim 128, bf16, 16 heads, 16k
    tokens in sequences of uneven lengths between 128 and 4k (packed, with
    cu_seqlens). TFLOP/s counted on the real work (sum over sequences of 4
    h len^2 d, halved when causal) against our dense kernel on batch x mean
    length (the same tokens), timed in the same loop; cuDNN on that dense
    shape for context; variants (name, kernel, run) time their varlen
    kernel in the same loop. Rows of {causal, lengths, mean, tflops{varlen,
    dense, cudnn_dense, <variant>}, ratio_vs_dense}."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from test_sm90_attention import pinned_i32
    rows = []
    h, d = 16, 128
    lens = varlen_lengths()
    n = len(lens)
    mean = TOKENS // n
    cu = [0]
    for x in lens:
        cu.append(cu[-1] + x)
    for causal in masks:
        is_causal = causal != "none"
        q = torch.randn(TOKENS, h, d, device="cuda", dtype=torch.bfloat16)
        k, v = torch.randn_like(q), torch.randn_like(q)
        out = torch.empty_like(q)
        lse = torch.empty(h, TOKENS, device="cuda", dtype=torch.float32)
        cu_t = pinned_i32(cu)
        kv = kernel(d, "bf16", causal, h, h, varlen=True)
        qd = torch.randn(n, mean, h, d, device="cuda", dtype=torch.bfloat16)
        kd, vd = torch.randn_like(qd), torch.randn_like(qd)
        od = torch.empty_like(qd)
        ld = torch.empty(n, h, mean, device="cuda", dtype=torch.float32)
        kdense = kernel(d, "bf16", causal, h, h)
        qt, kt, vt = (x.transpose(1, 2) for x in (qd, kd, vd))

        def varlen():
            run(kv, q, k, v, out, lse, deadline=0, cu_seqlens_q=cu_t, cu_seqlens_k=cu_t)

        def dense():
            run(kdense, qd, kd, vd, od, ld, deadline=0)

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                F.scaled_dot_product_attention(qt, kt, vt, is_causal=is_causal)

        fns = {"varlen": varlen, "dense": dense, "cudnn_dense": cudnn}
        for vname, vkernel, vrun in variants:
            def vvarlen(vk=vkernel(d, "bf16", causal, h, h, varlen=True), vr=vrun):
                vr(vk, q, k, v, out, lse, deadline=0, cu_seqlens_q=cu_t, cu_seqlens_k=cu_t)
            fns[vname] = vvarlen
        med = median_times(fns, stream)
        div = 2 if is_causal else 1
        work = {"varlen": sum(4 * h * x * x * d for x in lens) / div}
        for vname, _, _ in variants:
            work[vname] = work["varlen"]
        work["dense"] = work["cudnn_dense"] = 4 * n * h * mean * mean * d / div
        tf = {nm: work[nm] / (m * 1e-3) / 1e12 for nm, m in med.items()}
        row = {"causal": causal, "lengths": lens, "mean": mean, "tflops": tf,
               "ratio_vs_dense": tf["varlen"] / tf["dense"]}
        rows.append(row)
        print("varlen hd128 %-12s %d seqs (mean %d)  varlen %6.1f  dense %6.1f  cudnn(dense) "
              "%6.1f TFLOP/s  varlen/dense %.2f%s" % (
                  causal, n, mean, tf["varlen"], tf["dense"], tf["cudnn_dense"],
                  row["ratio_vs_dense"],
                  "".join("  %s %6.1f (%s/varlen %.3f)" % (vn, tf[vn], vn, tf[vn] / tf["varlen"])
                          for vn, _, _ in variants)),
              flush=True)
    return rows


def main():
    global REPEATS
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--out", default=".")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=DIR[@LIB]: artifacts compiled another way (and the "
                         "runtime library LIB, default --lib), timed alongside")
    ap.add_argument("--head-dims", default="64,128,256")
    ap.add_argument("--masks", default="none,bottom_right")
    ap.add_argument("--seqlens", default=",".join(map(str, SEQLENS)))
    ap.add_argument("--decode", action="store_true",
                    help="the decode benchmark (pack_gqa + split-KV) instead")
    ap.add_argument("--decode-shapes", default=None,
                    help="with --decode: BATCHxKEYS,... instead of the default rows "
                         "(e.g. 16x8192 to profile one shape)")
    ap.add_argument("--pages", default="16,64",
                    help="with --decode: the page sizes of the paged rows (keys a page; "
                         "default 16,64)")
    ap.add_argument("--graphs", action="store_true",
                    help="with --decode: time replays of each call captured into a CUDA graph")
    ap.add_argument("--repeats", type=int, default=REPEATS,
                    help="timed rounds per function (the median is reported; default %d)"
                         % REPEATS)
    ap.add_argument("--floor-lib", default=None,
                    help="with --decode: bench/stream_read.cu's library (default: "
                         "libfa_stream_read.so beside --lib, when it exists)")
    ap.add_argument("--varlen", action="store_true",
                    help="the varlen prefill benchmark instead")
    ap.add_argument("--gqa", action="store_true",
                    help="GQA prefill with and without pack_gqa instead")
    a = ap.parse_args()
    REPEATS = max(1, a.repeats)
    from test_sm90_attention import open_runtime
    lib, rt, stream, kernel, run = open_runtime(a.lib, a.artifacts)
    variants, runtimes = [], [(lib, rt)]
    for spec in a.variant:
        name, _, path = spec.partition("=")
        path, _, vlib_path = path.partition("@")
        vlib, vrt, _, vkernel, vrun = open_runtime(vlib_path or a.lib, path, stream)
        variants.append((name, vkernel, vrun))
        runtimes.append((vlib, vrt))
    if a.decode or a.varlen or a.gqa:
        shapes = (tuple(tuple(int(x) for x in sh.split("x")) for sh in a.decode_shapes.split(","))
                  if a.decode_shapes else DECODE_SHAPES)
        if a.floor_lib and not os.path.exists(a.floor_lib):
            ap.error("--floor-lib %s: no such file" % a.floor_lib)
        floor_lib = a.floor_lib or os.path.join(os.path.dirname(os.path.abspath(a.lib)),
                                                "libfa_stream_read.so")
        pages = tuple(int(x) for x in a.pages.split(",") if x)
        if a.decode:
            clib, crt, _, ckernel, crun = open_runtime(a.lib, a.artifacts, stream)
            runtimes.append((clib, crt))
        rows = (decode_benchmark(kernel, run, stream, pages=pages, variants=variants,
                                 shapes=shapes, graphs=a.graphs, floor=stream_floor(floor_lib),
                                 changed=(ckernel, crun))
                if a.decode
                else varlen_benchmark(kernel, run, stream, variants=variants) if a.varlen
                else gqa_benchmark(kernel, run, stream))
        name = "decode.json" if a.decode else "varlen.json" if a.varlen else "gqa.json"
    else:
        rows = benchmark(kernel, run, stream,
                         head_dims=tuple(int(x) for x in a.head_dims.split(",")),
                         seqlens=tuple(int(x) for x in a.seqlens.split(",")),
                         masks=tuple(a.masks.split(",")), variants=variants)
        name = "bench.json"
    for l, r in runtimes:
        l.fa_runtime_destroy(r)
    # Which GPU ran it: the lent machines differ by a few percent in the
    # ratios (docs/BENCHMARKS.md, method), so results are compared per
    # machine.
    props = torch.cuda.get_device_properties(0)
    rows.insert(0, {"device": {"name": props.name, "uuid": str(getattr(props, "uuid", "")),
                               "torch": torch.__version__,
                               "cuda": torch.version.cuda}})
    print("device: %s %s" % (props.name, rows[0]["device"]["uuid"]), flush=True)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, name), "w") as f:
        json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
