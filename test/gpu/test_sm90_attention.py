#!/usr/bin/env python3
"""The generated sm_90a attention kernels on the H200 (run there, not in CI).

Loads the artifacts build_sm90_artifacts.sh compiled (TMA + WGMMA kernels
from the compiler), runs them through libflashattn_rt (ctypes) on PyTorch
tensors with the outputs poisoned first, and checks out and lse against a
float64 reference with docs/SEMANTICS.md's tolerance rule (FlashAttention's:
rtol * max|naive - ref| + atol, naive = f32 scores of the rounded inputs, P
rounded to the element type; lse within 1e-3, -inf exactly where the
reference has it). Then, when every case passed, the benchmark of
bench/sm90_bench.py in the same process (unless --no-bench).

Every launch is watched: a kernel that does not finish within the deadline
ends the process (exit 3). Results go to --out/results.json.

Usage: test_sm90_attention.py --lib LIBRT --artifacts DIR --out DIR [--no-bench]
"""

import argparse
import ctypes as C
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_runtime_launch import Options, attention_args, synchronize  # noqa: E402

FA_OK = 0

# (name, head_dim, dtype, causal, hq, hkv, batch, seqlen_q, seqlen_k,
#  window (left, right), softcap)
CASES = [
    ("dense_gqa_1023", 128, "bf16", "none", 8, 2, 2, 1023, 1023, None, 0),
    ("causal_br_sq113_sk1025", 128, "bf16", "bottom_right", 8, 2, 2, 113, 1025, None, 0),
    ("causal_tl_sq1025_sk700", 128, "f16", "top_left", 4, 4, 1, 1025, 700, None, 0),
    ("mqa_br_empty_rows_hd64", 64, "bf16", "bottom_right", 4, 1, 2, 1025, 513, None, 0),
    ("dense_hd256_1023", 256, "bf16", "none", 4, 2, 1, 1023, 1023, None, 0),
    ("mqa_br_hd256_f16_1025", 256, "f16", "bottom_right", 4, 1, 1, 1025, 1025, None, 0),
    ("mha_hd64_f16_sq113_sk4000", 64, "f16", "none", 8, 8, 2, 113, 4000, None, 0),
    # No key at all (k / v of 0 rows: PyTorch gives them address 0): every
    # row empty, out 0 and lse -inf, written by the runtime's memsets.
    ("no_keys_dense_gqa", 128, "bf16", "none", 8, 2, 2, 64, 0, None, 0),
    ("window_br_hd128", 128, "bf16", "bottom_right", 8, 2, 2, 1023, 1023, (255, 0), 0),
    ("window_both_hd64_f16", 64, "f16", "none", 4, 4, 1, 1025, 1025, (100, 50), 0),
    ("window_left_only_sq_gt_sk", 128, "bf16", "none", 4, 2, 1, 1025, 700, (64, -1), 0),
    # Sides of 2^30 keys or more are no bound (i32 position sums in the
    # kernel would overflow): the same mask as bottom-right causal alone.
    ("window_huge_sides_br", 64, "f16", "bottom_right", 4, 2, 1, 300, 700,
     (1073741824, 2147483646), 0),
    ("softcap_hd256", 256, "bf16", "none", 4, 2, 1, 1023, 1023, None, 30.0),
    ("softcap_window_causal_f16", 128, "f16", "bottom_right", 4, 1, 2, 113, 1025, (64, 0), 50.0),
    # More tiles than SMs: the persistent loop runs several tiles per CTA
    # (the dynamic counter under causal, the static stride without).
    ("multi_tile_causal_gqa_4000", 128, "bf16", "bottom_right", 8, 2, 2, 4000, 4000, None, 0),
    ("multi_tile_hd64_f16_3000", 64, "f16", "none", 8, 8, 2, 3000, 3000, None, 0),
    ("multi_tile_hd256_causal_2500", 256, "f16", "bottom_right", 4, 1, 3, 2500, 2500, None, 0),
    # 384 short causal tiles: the counter hands each CTA several, in a
    # case small enough for compute-sanitizer racecheck.
    ("multi_tile_causal_hd64_300", 64, "bf16", "bottom_right", 32, 32, 4, 300, 300, None, 0),
    # Split-KV (last field: num_splits): the partial kernel + the generated
    # combine; splits with no keys (window), rows with no keys, decode.
    ("split3_gqa_br_sq113_sk1025", 128, "bf16", "bottom_right", 8, 2, 2, 113, 1025, None, 0, 3),
    ("split4_decode_hd64_f16", 64, "f16", "none", 4, 4, 1, 1, 4000, None, 0, 4),
    ("split5_window_empty_splits_hd256", 256, "bf16", "bottom_right", 4, 1, 1, 64, 1023, (100, 0), 0, 5),
    ("split2_empty_rows_sq1025_sk513", 128, "bf16", "bottom_right", 4, 2, 2, 1025, 513, None, 0, 2),
    # Score / mask regions (last field: test/gpu/regions/<name>.regions, mirrored
    # by REGIONS below), inlined into the kernel.
    ("score_bias_br_gqa", 128, "bf16", "bottom_right", 8, 2, 2, 113, 1025, None, 0, 1, "bias"),
    ("mask_document_hd64_f16", 64, "f16", "none", 4, 4, 1, 1023, 1023, None, 0, 1, "doc"),
    ("score_mask_softcap_split3_hd256", 256, "bf16", "none", 4, 2, 1, 200, 1025, None, 20.0, 3, "half"),
    # pack_gqa (last field): the query heads of a kv head fold into one
    # tile's rows (decode, speculative decode, MQA, prefill, with split-KV).
    ("pack_decode_gqa32x8", 128, "bf16", "bottom_right", 32, 8, 4, 1, 4000, None, 0, 1, None, True),
    ("pack_spec8_gqa32x8", 128, "bf16", "bottom_right", 32, 8, 2, 8, 1025, None, 0, 1, None, True),
    ("pack_mqa_hd64_f16_300", 64, "f16", "none", 8, 1, 2, 300, 1000, None, 0, 1, None, True),
    ("pack_prefill_hd256_causal", 256, "f16", "bottom_right", 16, 4, 1, 500, 500, None, 0, 1, None, True),
    ("pack_split4_decode_gqa32x8", 128, "bf16", "bottom_right", 32, 8, 2, 2, 8000, None, 0, 4, None, True),
    # Automatic num_splits (0): the runtime picks the count per launch
    # (FlashAttention's heuristic, efficiency 0.95): 16 for one decode sequence over 32k keys,
    # 1 for a 2 x 300-token prefill (160 tiles), and without pack_gqa.
    ("auto_split_decode_32k_pack", 128, "bf16", "bottom_right", 32, 8, 1, 1, 32768, None, 0, 0, None, True),
    ("auto_split_prefill_pack", 128, "bf16", "bottom_right", 32, 8, 2, 300, 1000, None, 0, 0, None, True),
    ("auto_split_decode_hd64_f16", 64, "f16", "none", 4, 4, 1, 1, 4000, None, 0, 0),
    # ... over keys off the block, speculative tokens, MHA.
    ("auto_split_decode_b3_5000", 128, "bf16", "bottom_right", 32, 8, 3, 1, 5000, None, 0, 0,
     None, True),
    ("auto_split_spec4_b2_3001", 128, "bf16", "bottom_right", 32, 8, 2, 4, 3001, None, 0, 0,
     None, True),
    ("auto_split_hd64_f16_mha_sq3", 64, "f16", "none", 4, 4, 2, 3, 7000, None, 0, 0),
    # Automatic pack_gqa (the config's default): the runtime takes the packed
    # entries for one query token and the unpacked ones for 300.
    ("auto_pack_auto_split_decode", 128, "bf16", "bottom_right", 32, 8, 2, 1, 4000, None, 0, 0),
    ("auto_pack_prefill_300", 128, "bf16", "bottom_right", 32, 8, 2, 300, 1000, None, 0, 0),
    # ... and without splits, where the unpacked kernel stores out by TMA and
    # takes the tile counter (the packed one has its own parameter list).
    ("auto_pack_decode_nosplit", 128, "bf16", "bottom_right", 8, 2, 2, 1, 4000, None, 0),
]

# Varlen and seqused_k (the runtime's tile table): (name, head_dim, dtype,
# causal, hq, hkv, [(q_len, k_len) per sequence], window, layout, pack,
# used) with layout "varlen" (q, k, v packed by cu_seqlens_q / cu_seqlens_k)
# or "dense" (q [B, max q_len, ...], k [B, max k_len, ...]; with "dense" the
# q lengths must all be equal), and used: k lengths come from seqused_k
# (the k tensor holds k_len + 37 rows per sequence, NaN past k_len); an optional last field
# is num_splits (0: automatic, from the tile table). Layout "paged<P>": q
# dense, k and v a pool [num_pages, P, Hkv, D] addressed through a
# block_table of shuffled pages, k lengths from seqused_k.
VARLEN_CASES = [
    ("varlen_br_gqa_uneven", 128, "bf16", "bottom_right", 8, 2,
     [(0, 5), (1, 0), (300, 395), (129, 1029), (1000, 1000), (1, 1), (513, 200)],
     None, "varlen", False, False),
    ("varlen_mqa_hd64_f16", 64, "f16", "none", 8, 1,
     [(1, 1), (200, 0), (0, 0), (777, 1500), (64, 64)], None, "varlen", False, False),
    ("varlen_tl_hd256_f16", 256, "f16", "top_left", 4, 4,
     [(1025, 700), (1, 3000), (0, 10), (400, 400)], None, "varlen", False, False),
    ("varlen_window_br_hd128", 128, "bf16", "bottom_right", 4, 2,
     [(700, 900), (5, 5), (130, 0), (1, 300)], (100, 0), "varlen", False, False),
    ("varlen_pack_gqa32x8", 128, "bf16", "bottom_right", 32, 8,
     [(1, 4000), (8, 1025), (0, 0), (300, 300), (1, 0)], None, "varlen", True, False),
    ("seqused_decode_pack", 128, "bf16", "bottom_right", 32, 8,
     [(4, 4096), (4, 1000), (4, 0), (4, 1)], None, "dense", True, True),
    ("varlen_seqused_hd64", 64, "bf16", "bottom_right", 8, 2,
     [(300, 500), (1, 1), (0, 7), (129, 0), (64, 2000)], None, "varlen", False, True),
    # More tiles than SMs, lengths 128 to 4k (the benchmark's shape).
    # Automatic pack_gqa over varlen q (the longest sequence decides).
    ("varlen_auto_pack_decode", 128, "bf16", "bottom_right", 8, 2,
     [(1, 3000), (1, 1), (0, 5), (1, 0)], None, "varlen", False, False),
    ("varlen_many_tiles_causal", 128, "bf16", "bottom_right", 16, 16,
     [(n, n) for n in (4000, 128, 2500, 999, 3072, 1, 2048, 130, 1500, 4096)],
     None, "varlen", False, False),
    # Split-KV over the tile table: decode over a kv cache (seqused_k,
    # automatic splits), varlen with 3 splits, varlen + seqused_k automatic.
    ("seqused_decode_auto_split", 128, "bf16", "bottom_right", 32, 8,
     [(1, 32768), (1, 1000), (1, 0)], None, "dense", True, True, 0),
    ("varlen_split3", 128, "bf16", "bottom_right", 8, 2,
     [(300, 2000), (1, 0), (0, 9), (129, 129), (2, 5000)], None, "varlen", False, False, 3),
    ("varlen_seqused_auto_split_f16", 64, "f16", "none", 8, 2,
     [(1, 3000), (7, 7), (0, 0), (1, 1)], None, "varlen", False, True, 0),
    # Paged KV (one TMA box per page; lengths not a multiple of the page).
    ("paged16_decode_pack_auto_split", 128, "bf16", "bottom_right", 32, 8,
     [(1, 4000), (1, 1), (1, 0), (1, 1000)], None, "paged16", True, True, 0),
    # kv_heads_per_block (pack_gqa over pages below 64 keys): 4 kv heads
    # per key block of 32 keys with pages of 16, 8 with pages of 8, 2
    # with 8 / 2 heads; speculative tokens, lengths off the page. Enough
    # sequences for the grouped kernels (tiles = sequences x Hkv / HP fill
    # 80% of 132 SMs); with fewer (paged16_decode_pack_auto_split) the
    # runtime takes the one-head twins.
    ("paged16_spec4_kv_heads4", 128, "bf16", "bottom_right", 32, 8,
     [(4, n) for n in (999, 3, 0, 4, 2050, 1)] + [(4, (i * 397) % 1500) for i in range(50)],
     None, "paged16", True, True, 0),
    ("paged8_spec2_kv_heads8", 128, "bf16", "bottom_right", 32, 8,
     [(2, n) for n in (1001, 1, 0, 17)] + [(2, (i * 211) % 900) for i in range(104)],
     None, "paged8", True, True, 0),
    ("paged16_hd64_f16_kv_heads2_split3", 64, "f16", "none", 8, 2,
     [(3, n) for n in (700, 5, 0, 48)] + [(3, (i * 131) % 600) for i in range(104)],
     None, "paged16", True, True, 3),
    ("paged64_spec8_gqa", 128, "bf16", "bottom_right", 8, 2,
     [(8, 700), (8, 64), (8, 129)], None, "paged64", False, True),
    ("paged256_prefill_hd64_f16", 64, "f16", "bottom_right", 8, 2,
     [(300, 300), (300, 1000)], None, "paged256", False, True),
    ("paged16_hd256_f16_split3", 256, "f16", "none", 4, 1,
     [(5, 33), (5, 2000)], None, "paged16", False, True, 3),
    # Pages of 1 and 3 keys: per-row cp.async copies by the producer threads.
    ("paged1_decode_pack_auto_split", 128, "bf16", "bottom_right", 32, 8,
     [(1, 4000), (1, 1), (1, 0), (1, 1000)], None, "paged1", True, True, 0),
    ("paged1_prefill_hd64_f16", 64, "f16", "bottom_right", 8, 2,
     [(300, 300), (300, 1000)], None, "paged1", False, True),
    ("paged3_spec5_hd128", 128, "bf16", "none", 8, 2,
     [(5, 1000), (5, 7), (5, 0)], None, "paged3", False, True),
    ("paged3_spec3_hd256_f16", 256, "f16", "bottom_right", 4, 1,
     [(3, 700), (3, 2), (3, 0)], None, "paged3", False, True),
]

# kv-cache append then attend: (name, head_dim, dtype, causal, hq, hkv,
# cache_seqlens, S_new, capacity, page (0 = a dense cache), pack, splits).
# q has S_new tokens per sequence; the keys are cache_seqlens[b] + S_new.
APPEND_CASES = [
    ("append_dense_spec4", 128, "bf16", "bottom_right", 8, 2, [0, 100, 1000, 4095], 4, 4099,
     0, False, 1),
    ("append_paged64_decode_pack_auto", 128, "bf16", "bottom_right", 32, 8, [1000, 0, 63, 4000],
     1, 4096, 64, True, 0),
    ("append_paged16_hd64_f16", 64, "f16", "bottom_right", 8, 2, [0, 15, 100], 17, 256, 16,
     False, 1),
    ("append_paged1_hd128", 128, "bf16", "bottom_right", 8, 2, [0, 15, 100], 4, 256, 1,
     False, 1),
]

# The regions of test/gpu/regions/*.regions as (score_mod, mask_mod) on the
# natural-domain scores s [.., Sq, Sk], head index h [H, 1, 1], positions i
# [Sq, 1] and j [1, Sk].
REGIONS = {
    "bias": (lambda s, h, i, j: s + (i - j).to(s.dtype) * -0.01, None),
    "doc": (None, lambda h, i, j: (i // 256) == (j // 256)),
    "half": (lambda s, h, i, j: s - h.to(s.dtype) * 0.5, lambda h, i, j: 2 * j < i),
}


def artifact_name(d, dt, causal, hq, hkv, window=None, softcap=0, splits=1, regions=None,
                  pack=False, varlen=False, seqused=False, page=0, append=False):
    name = "d%d_%s_%s_h%dx%d" % (d, dt, causal, hq, hkv)
    if window:
        name += "_w%d_%d" % window
    if softcap:
        name += "_c%g" % softcap
    if regions:
        name += "_r" + regions
    if splits != 1:  # 0: automatic (chosen at launch)
        name += "_s%d" % splits
    if pack:
        name += "_p"
    if varlen:
        name += "_v"
    if seqused:
        name += "_u"
    if page:
        name += "_g%d" % page
    if append:
        name += "_a"
    return name + ".faa"


def masked_scores(qd, kd, causal, window, softcap, regions=None):
    """scale * q k^T with softcap, the score region, then -inf outside
    causal / window / the mask region."""
    sq, sk, d = qd.shape[-2], kd.shape[-2], qd.shape[-1]
    s = qd @ kd.transpose(-1, -2) / math.sqrt(d)
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    i = torch.arange(sq, device=qd.device)[:, None]
    j = torch.arange(sk, device=qd.device)[None, :]
    hh = torch.arange(qd.shape[1], device=qd.device)[:, None, None]
    score_mod, mask_mod = REGIONS[regions] if regions else (None, None)
    if score_mod:
        s = score_mod(s, hh, i, j)
    if mask_mod:
        s = s.masked_fill(~mask_mod(hh, i, j), float("-inf"))
    off = sk - sq
    if causal == "top_left":
        s = s.masked_fill(j > i, float("-inf"))
    elif causal == "bottom_right":
        s = s.masked_fill(j > i + off, float("-inf"))
    if window:
        left, right = window
        if left >= 0:
            s = s.masked_fill(j < i + off - left, float("-inf"))
        if right >= 0:
            s = s.masked_fill(j > i + off + right, float("-inf"))
    return s


def reference(q, k, v, causal, window=None, softcap=0, regions=None):
    """float64 out and lse per docs/SEMANTICS.md (GQA by head repetition)."""
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    qd = q.double().transpose(1, 2)
    kd = k.double().transpose(1, 2).repeat_interleave(hq // hkv, dim=1)
    vd = v.double().transpose(1, 2).repeat_interleave(hq // hkv, dim=1)
    s = masked_scores(qd, kd, causal, window, softcap, regions)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - torch.where(torch.isinf(lse), torch.zeros_like(lse), lse)[..., None])
    p = torch.nan_to_num(p, nan=0.0)
    out = (p @ vd).transpose(1, 2)
    return out, lse


def naive(q, k, v, causal, window=None, softcap=0, regions=None):
    """The unfused computation in the element type (FlashAttention's rule)."""
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    qf = q.float().transpose(1, 2)
    kf = k.float().transpose(1, 2).repeat_interleave(hq // hkv, dim=1)
    vv = v.transpose(1, 2).repeat_interleave(hq // hkv, dim=1)
    s = masked_scores(qf, kf, causal, window, softcap, regions)
    p = torch.nan_to_num(torch.softmax(s, dim=-1), nan=0.0).to(q.dtype)
    return (p.float() @ vv.float()).to(q.dtype).transpose(1, 2)


def script_args():
    """The command line of the GPU scripts that open the runtime on a
    directory of artifacts: --lib LIBRT --artifacts DIR [--out DIR]; the
    output directory is created."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    return a


def open_runtime(lib_path, artifacts, stream=None):
    """The runtime (ctypes), a stream (`stream` or a new one), kernel(config)
    -> loaded artifact, and run(kernel, q, k, v, out, lse, deadline)
    (watched unless deadline is 0)."""
    lib = C.CDLL(lib_path)
    lib.fa_status_string.restype = C.c_char_p
    lib.fa_runtime_last_error.restype = C.c_char_p
    opts = Options(C.sizeof(Options), None, 1, 0, b"")
    rt = C.c_void_p()
    assert lib.fa_runtime_create(C.byref(opts), C.byref(rt)) == FA_OK
    stream = stream or torch.cuda.Stream()
    kernels = {}

    def kernel(d, dt, causal, hq, hkv, window=None, softcap=0, splits=1, regions=None,
               pack=False, varlen=False, seqused=False, page=0, append=False):
        name = artifact_name(d, dt, causal, hq, hkv, window, softcap, splits, regions, pack,
                             varlen, seqused, page, append)
        if name not in kernels:
            k = C.c_void_p()
            st = lib.fa_kernel_load_artifact_file(rt, os.path.join(artifacts, name).encode(), C.byref(k))
            if st != FA_OK:
                raise RuntimeError("%s: %s" % (name, lib.fa_runtime_last_error(rt).decode()))
            kernels[name] = k
        return kernels[name]

    def run(k, q, kk, v, out, lse, deadline=30.0, **meta):
        """meta: cu_seqlens_q, cu_seqlens_k, seqused_k, block_table,
        cache_seqlens as host-readable (pinned CPU) int32 tensors, k_new and
        v_new as device tensors."""
        args = attention_args(q, kk, v, out, lse, stream.cuda_stream, **meta)
        # `stream` is one of PyTorch's non-blocking streams: it waits for
        # the caller's stream, where the inputs and the poisoned outputs
        # were made (a no-op when they are the same stream, e.g. under
        # capture or in the benchmark).
        caller = torch.cuda.current_stream()
        if caller != stream:
            stream.wait_stream(caller)
        with torch.cuda.stream(stream):
            st = lib.fa_attention_run(rt, k, C.byref(args))
            if deadline:
                synchronize(deadline)
        if st != FA_OK:
            raise RuntimeError(lib.fa_runtime_last_error(rt).decode())

    return lib, rt, stream, kernel, run


def check(name, dtype, out, lse, ref, ref_lse, nv, softcap=0, err=None):
    """docs/SEMANTICS.md's tolerance rule on out and lse (NaN anywhere
    fails: the outputs were poisoned)."""
    atol = 2 * (ref.to(dtype).double() - ref).abs().max().item() if ref.numel() else 0.0
    rtol = 3 if softcap else 2
    tol = rtol * ((nv - ref).abs().max().item() if ref.numel() else 0.0) + atol
    nan = bool(torch.isnan(out).any().item() or torch.isnan(lse).any().item())
    max_err = ((out.double() - ref).abs().max().item() if ref.numel() else 0.0) \
        if not nan else float("inf")
    fin = torch.isfinite(ref_lse)
    lse_err = (lse.double()[fin] - ref_lse[fin]).abs().max().item() if fin.any() else 0.0
    inf_ok = bool(torch.equal(torch.isneginf(lse), torch.isneginf(ref_lse)))
    empty_rows = int((~fin).sum().item())
    ok = err is None and not nan and max_err <= tol and lse_err <= 1e-3 and inf_ok
    print("%-28s %s  max_abs %.3e  tol %.3e  lse %.2e  empty_rows %d%s" % (
        name, "PASS" if ok else "FAIL", max_err, tol, lse_err, empty_rows,
        ("  " + err) if err else ""), flush=True)
    return ok, {"ok": ok, "max_abs_err": max_err, "tol": tol, "lse_err": lse_err,
                "empty_rows": empty_rows, "nan": nan, "error": err}


def pinned_i32(values):
    return torch.tensor(values, dtype=torch.int32).pin_memory()


def selected(name):
    """--only: run the cases whose name contains one of its substrings."""
    return not ONLY or any(s in name for s in ONLY)


ONLY = []
# (kernel, run) of the host twins (--host DIR), or None.
HOST = None
# The host path runs single-threaded here: cases above this many flops
# (4 x sum q_len k_len x Hq x D) are left to the sm90 side.
HOST_MAX_FLOPS = 2e10


def run_error(call):
    """None when `call()` (a launch through the runtime) succeeds, else the
    runtime's message (the RuntimeError it raised)."""
    try:
        call()
        return None
    except RuntimeError as e:
        return str(e)


def host_check(name, spec, inputs, meta, out, lse, ref, ref_lse, nv, dtype, rec, cache=None):
    """Runs the host twin of `spec` (kernel() arguments) on CPU copies of
    `inputs` (q, k, v) and `meta`, checks it against the same reference and
    tolerance, and records how far it is from the sm90 result `out`. With
    `cache` = (want_k, want_v) the host's cache after the call must equal
    them too. Returns False on a failure."""
    hk, hrun = HOST
    q, k, v = (t.cpu() for t in inputs)
    hmeta = {n: t.cpu() for n, t in meta.items()}
    hout = torch.full_like(q, float("nan"))
    hlse = torch.full(tuple(lse.shape), float("nan"))
    err = run_error(lambda: hrun(hk(*spec), q, k, v, hout, hlse, **hmeta))
    if cache is not None and err is None and not (
            same(k, cache[0].cpu()) and same(v, cache[1].cpu())):
        err = "the host path's cache is not what the append should leave"
    ok, hrec = check(name + " [host]", dtype, hout, hlse, ref.cpu(), ref_lse.cpu(), nv.cpu(), 0,
                     err)
    hrec["max_abs_vs_sm90"] = (hout.double() - out.cpu().double()).abs().max().item() \
        if hout.numel() else 0.0
    rec["host"] = hrec
    return ok


def device_block_table_check(name, kern, run, qkv, meta, out, lse, ref, ref_lse, nv, dtype,
                             rec):
    """The same paged call with the block_table in device memory (the
    kernels read it there, as FlashAttention's callers pass it): the same
    answers. Then with one page index of sequence 0 outside the pool (not
    checked for a device block_table): the call must not fault and the
    other sequences' answers must not change."""
    q, k, v = qkv
    dmeta = dict(meta)
    dmeta["block_table"] = meta["block_table"].cuda()
    dout, dlse = torch.full_like(out, float("nan")), torch.full_like(lse, float("nan"))
    err = run_error(lambda: run(kern, q, k, v, dout, dlse, **dmeta))
    ok, drec = check(name + " [device block_table]", dtype, dout, dlse, ref, ref_lse, nv, 0, err)
    rec["device_block_table"] = drec
    if len(ref) < 2:
        return ok
    dmeta["block_table"][0, 0] = k.shape[0] + 1000
    bout, blse = torch.full_like(out, float("nan")), torch.full_like(lse, float("nan"))
    err = run_error(lambda: run(kern, q, k, v, bout, blse, **dmeta))
    if err is None and not bool(torch.isfinite(bout[0]).all().item()):
        err = "sequence 0 (a page outside the pool, read as zeros) is not finite"
    bok, brec = check(name + " [page outside the pool]", dtype, bout[1:], blse[1:], ref[1:],
                      ref_lse[1:], nv[1:], 0, err)
    rec["page_outside_pool"] = brec
    return ok and bok


def same(a, b):
    """Bitwise-equal tensors (so NaN rows equal NaN rows, -0 differs from 0)."""
    return a.shape == b.shape and a.dtype == b.dtype and bool(
        torch.equal(a.view(torch.int16), b.view(torch.int16)))


def poison_past_sequences(layout, seqs, k, v, meta):
    """NaN in every k / v row that is no sequence's key (past seqused_k, the
    rest of a last page, unused pages): those rows may be read (a key block
    reaches past its sequence) but must never reach the output."""
    if layout == "varlen":
        cu = meta["cu_seqlens_k"].tolist()
        for b, (_, sk) in enumerate(seqs):
            k[cu[b] + sk:cu[b + 1]] = float("nan")
            v[cu[b] + sk:cu[b + 1]] = float("nan")
    elif layout == "dense":
        for b, (_, sk) in enumerate(seqs):
            k[b, sk:] = float("nan")
            v[b, sk:] = float("nan")
    else:
        ps, bt = k.shape[1], meta["block_table"].long()
        keep_k, keep_v = torch.full_like(k, float("nan")), torch.full_like(v, float("nan"))
        for b, (_, sk) in enumerate(seqs):
            idx = torch.arange(sk)
            i0, i1 = bt[b, idx // ps].cuda(), (idx % ps).cuda()
            keep_k[i0, i1], keep_v[i0, i1] = k[i0, i1], v[i0, i1]
        k.copy_(keep_k)
        v.copy_(keep_v)


def run_varlen_cases(kernel, run, results):
    """VARLEN_CASES: each sequence against its own float64 reference."""
    failures = []
    for name, d, dt, causal, hq, hkv, seqs, window, layout, pack, used, *rest in VARLEN_CASES:
        if not selected(name):
            continue
        splits = rest[0] if rest else 1
        dtype = torch.bfloat16 if dt == "bf16" else torch.float16
        nb = len(seqs)
        extra = 37 if used else 0  # k rows past seqused_k (NaN: read, never in the output)
        meta = {}
        if layout == "varlen":
            cu_q = [0]
            cu_k = [0]
            for sq, sk in seqs:
                cu_q.append(cu_q[-1] + sq)
                cu_k.append(cu_k[-1] + sk + extra)
            q = torch.randn(cu_q[-1], hq, d, device="cuda", dtype=dtype)
            k = torch.randn(cu_k[-1], hkv, d, device="cuda", dtype=dtype)
            v = torch.randn(cu_k[-1], hkv, d, device="cuda", dtype=dtype)
            out = torch.full_like(q, float("nan"))
            lse = torch.full((hq, cu_q[-1]), float("nan"), device="cuda")
            meta["cu_seqlens_q"] = pinned_i32(cu_q)
            meta["cu_seqlens_k"] = pinned_i32(cu_k)
            q_of = lambda b: q[cu_q[b]:cu_q[b + 1]]  # noqa: E731
            k_of = lambda t, b: t[cu_k[b]:cu_k[b] + seqs[b][1]]  # noqa: E731
            o_of = lambda t, b: t[cu_q[b]:cu_q[b + 1]]  # noqa: E731
        elif layout.startswith("paged"):
            ps = int(layout[5:])
            sq = seqs[0][0]
            assert all(s[0] == sq for s in seqs) and used
            cols = max(-(-s[1] // ps) for s in seqs) + 1
            num_pages = nb * cols + 3
            q = torch.randn(nb, sq, hq, d, device="cuda", dtype=dtype)
            k = torch.randn(num_pages, ps, hkv, d, device="cuda", dtype=dtype)
            v = torch.randn(num_pages, ps, hkv, d, device="cuda", dtype=dtype)
            bt = torch.randperm(num_pages)[:nb * cols].reshape(nb, cols).to(torch.int32)
            out = torch.full_like(q, float("nan"))
            lse = torch.full((nb, hq, sq), float("nan"), device="cuda")
            meta["block_table"] = bt.pin_memory()
            q_of = lambda b: q[b]  # noqa: E731

            def k_of(t, b, bt=bt, ps=ps):
                idx = torch.arange(seqs[b][1])
                return t[bt[b, idx // ps].long().cuda(), (idx % ps).cuda()]
            o_of = lambda t, b: t[b]  # noqa: E731
        else:
            sq = seqs[0][0]
            assert all(s[0] == sq for s in seqs)
            skmax = max(s[1] for s in seqs) + extra
            q = torch.randn(nb, sq, hq, d, device="cuda", dtype=dtype)
            k = torch.randn(nb, skmax, hkv, d, device="cuda", dtype=dtype)
            v = torch.randn(nb, skmax, hkv, d, device="cuda", dtype=dtype)
            out = torch.full_like(q, float("nan"))
            lse = torch.full((nb, hq, sq), float("nan"), device="cuda")
            q_of = lambda b: q[b]  # noqa: E731
            k_of = lambda t, b: t[b, :seqs[b][1]]  # noqa: E731
            o_of = lambda t, b: t[b]  # noqa: E731
        if used:
            meta["seqused_k"] = pinned_i32([s[1] for s in seqs])
        poison_past_sequences(layout, seqs, k, v, meta)
        meta0 = dict(meta)
        err = run_error(lambda: run(kernel(d, dt, causal, hq, hkv, window, 0, splits, None, pack,
                                           layout == "varlen", used,
                                           int(layout[5:]) if layout.startswith("paged") else 0),
                                    q, k, v, out, lse, **meta))
        ref = torch.zeros_like(out, dtype=torch.float64)
        ref_lse = torch.zeros_like(lse, dtype=torch.float64)
        nv = torch.zeros_like(ref)
        for b in range(nb):
            qb = q_of(b)[None]
            kb, vb = k_of(k, b)[None], k_of(v, b)[None]
            r, rl = reference(qb, kb, vb, causal, window)
            o_of(ref, b).copy_(r[0])
            o_of(nv, b).copy_(naive(qb, kb, vb, causal, window)[0].double())
            (ref_lse[:, cu_q[b]:cu_q[b + 1]] if layout == "varlen" else ref_lse[b]).copy_(rl[0])
        ok, rec = check(name, dtype, out, lse, ref, ref_lse, nv, 0, err)
        rec["seqs"] = seqs
        if layout.startswith("paged") and err is None:
            ok &= device_block_table_check(
                name, kernel(d, dt, causal, hq, hkv, window, 0, splits, None, pack, False, used,
                             int(layout[5:])),
                run, (q, k, v), meta, out, lse, ref, ref_lse, nv, dtype, rec)
        flops = 4 * sum(a * b for a, b in seqs) * hq * d
        if HOST and flops <= HOST_MAX_FLOPS:
            spec = (d, dt, causal, hq, hkv, window, 0, splits, None, pack, layout == "varlen",
                    used, int(layout[5:]) if layout.startswith("paged") else 0)
            ok &= host_check(name, spec, (q, k, v), meta0, out, lse, ref, ref_lse, nv, dtype,
                             rec)
        results["cases"][name] = rec
        if not ok:
            failures.append(name)
    return failures


def run_append_cases(kernel, run, results):
    """APPEND_CASES: the cache after the call must equal the cache before
    with the new rows at cache_seqlens[b] + r (and nothing else changed);
    out and lse against the float64 reference over the updated keys."""
    failures = []
    for name, d, dt, causal, hq, hkv, starts, s_new, cap, page, pack, splits in APPEND_CASES:
        if not selected(name):
            continue
        dtype = torch.bfloat16 if dt == "bf16" else torch.float16
        nb = len(starts)
        q = torch.randn(nb, s_new, hq, d, device="cuda", dtype=dtype)
        k_new = torch.randn(nb, s_new, hkv, d, device="cuda", dtype=dtype)
        v_new = torch.randn_like(k_new)
        meta = {"cache_seqlens": pinned_i32(starts), "k_new": k_new, "v_new": v_new}
        if page:
            cols = cap // page
            num_pages = nb * cols + 5
            k = torch.randn(num_pages, page, hkv, d, device="cuda", dtype=dtype)
            v = torch.randn_like(k)
            bt = torch.randperm(num_pages)[:nb * cols].reshape(nb, cols).to(torch.int32)
            meta["block_table"] = bt.pin_memory()
            meta["seqused_k"] = pinned_i32([s + s_new for s in starts])

            def rows(b, n, bt=bt, page=page):
                idx = torch.arange(n)
                return bt[b, idx // page].long().cuda(), (idx % page).cuda()
        else:
            k = torch.randn(nb, cap, hkv, d, device="cuda", dtype=dtype)
            v = torch.randn_like(k)

            def rows(b, n):
                return torch.full((n,), b, device="cuda"), torch.arange(n, device="cuda")
        # Every cache row that is not a sequence's key after the append
        # holds NaN (an uninitialized cache): it must not reach the output.
        live_k, live_v = torch.full_like(k, float("nan")), torch.full_like(v, float("nan"))
        for b, s0 in enumerate(starts):
            i0, i1 = rows(b, s0)
            live_k[i0, i1], live_v[i0, i1] = k[i0, i1], v[i0, i1]
        k.copy_(live_k)
        v.copy_(live_v)
        want_k, want_v = k.clone(), v.clone()
        for b, s0 in enumerate(starts):
            i0, i1 = rows(b, s0 + s_new)
            want_k[i0[s0:], i1[s0:]] = k_new[b]
            want_v[i0[s0:], i1[s0:]] = v_new[b]
        out = torch.full_like(q, float("nan"))
        lse = torch.full((nb, hq, s_new), float("nan"), device="cuda")
        k0, v0, meta0 = k.clone(), v.clone(), dict(meta)
        err = run_error(lambda: run(kernel(d, dt, causal, hq, hkv, None, 0, splits, None, pack,
                                           False, bool(page), page, True),
                                    q, k, v, out, lse, **meta))
        cache_ok = same(k, want_k) and same(v, want_v)
        ref = torch.zeros_like(out, dtype=torch.float64)
        ref_lse = torch.zeros_like(lse, dtype=torch.float64)
        nv = torch.zeros_like(ref)
        for b, s0 in enumerate(starts):
            i0, i1 = rows(b, s0 + s_new)
            kb, vb = want_k[i0, i1][None], want_v[i0, i1][None]
            r, rl = reference(q[b][None], kb, vb, causal)
            ref[b], ref_lse[b] = r[0], rl[0]
            nv[b] = naive(q[b][None], kb, vb, causal)[0].double()
        if not cache_ok:
            err = (err + "; " if err else "") + "the cache is not what the append should leave"
        ok, rec = check(name, dtype, out, lse, ref, ref_lse, nv, 0, err)
        if page:
            def device_run(bt, exp_k, exp_v, label, bad):
                """The call with block_table `bt` in device memory: the
                cache must end as (exp_k, exp_v); out / lse are checked for
                the sequences from `bad` + 1 on."""
                dk, dv = k0.clone(), v0.clone()
                dmeta = dict(meta0)
                dmeta["block_table"] = bt.cuda()
                dout = torch.full_like(out, float("nan"))
                dlse = torch.full_like(lse, float("nan"))
                derr = run_error(lambda: run(kernel(d, dt, causal, hq, hkv, None, 0, splits, None,
                                                    pack, False, True, page, True),
                                             q, dk, dv, dout, dlse, **dmeta))
                if derr is None and not (same(dk, exp_k) and same(dv, exp_v)):
                    derr = "the cache is not what the append should leave"
                s0 = bad + 1
                return check(name + " [" + label + "]", dtype, dout[s0:], dlse[s0:], ref[s0:],
                             ref_lse[s0:], nv[s0:], 0, derr)
            # The block_table in device memory: the same cache and answers.
            dok, rec["device_block_table"] = device_run(
                meta0["block_table"], want_k, want_v, "device block_table", -1)
            # The page of sequence 0's first new row outside the pool: those
            # rows are not written, nothing else changes, the other
            # sequences' answers stand.
            p0 = starts[0] // page
            bad_bt = meta0["block_table"].clone()
            bad_bt[0, p0] = k.shape[0] + 1000
            exp_k, exp_v = want_k.clone(), want_v.clone()
            for r in range(s_new):
                if (starts[0] + r) // page == p0:
                    pg, row = int(meta0["block_table"][0, p0]), (starts[0] + r) % page
                    exp_k[pg, row], exp_v[pg, row] = k0[pg, row], v0[pg, row]
            bok, rec["page_outside_pool"] = device_run(bad_bt, exp_k, exp_v,
                                                       "page outside the pool", 0)
            ok &= dok and bok
        if HOST:
            spec = (d, dt, causal, hq, hkv, None, 0, splits, None, pack, False, bool(page), page,
                    True)
            ok &= host_check(name, spec, (q, k0, v0), meta0, out, lse, ref, ref_lse, nv, dtype,
                             rec, (want_k, want_v))
        results["cases"][name] = rec
        if not ok:
            failures.append(name)
    # Past the capacity: a status and a message, nothing written.
    if not selected("append_past_capacity"):
        return failures
    k = torch.randn(2, 64, 2, 128, device="cuda", dtype=torch.bfloat16)
    v, k0 = torch.randn_like(k), k.clone()
    v0 = v.clone()
    q = torch.randn(2, 4, 8, 128, device="cuda", dtype=torch.bfloat16)
    out = torch.full_like(q, float("nan"))
    lse = torch.full((2, 8, 4), float("nan"), device="cuda")
    kn = torch.randn(2, 4, 2, 128, device="cuda", dtype=torch.bfloat16)
    err = run_error(lambda: run(kernel(128, "bf16", "bottom_right", 8, 2, append=True),
                                q, k, v, out, lse, cache_seqlens=pinned_i32([0, 61]),
                                k_new=kn, v_new=kn.clone())) or "accepted"
    ok = ("past capacity" in err and torch.equal(k, k0) and torch.equal(v, v0)
          and bool(torch.isnan(out).all().item()))
    print("%-28s %s  %s" % ("append_past_capacity", "PASS" if ok else "FAIL", err), flush=True)
    results["cases"]["append_past_capacity"] = {"ok": ok, "error": err}
    if not ok:
        failures.append("append_past_capacity")
    return failures


def run_metadata_placement_cases(kernel, run, results):
    """Integer metadata the runtime reads on the host, passed in device
    memory: a status naming it, and nothing written (out stays NaN). The
    kernel-side block_table is covered by device_block_table_check."""
    failures = []
    name = "metadata_on_device"
    if not selected(name):
        return failures
    q = torch.randn(300, 8, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(400, 2, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    out = torch.full_like(q, float("nan"))
    lse = torch.full((8, 300), float("nan"), device="cuda")
    cu_q = torch.tensor([0, 100, 300], dtype=torch.int32, device="cuda")
    cu_k = pinned_i32([0, 150, 400])
    err = run_error(lambda: run(kernel(128, "bf16", "bottom_right", 8, 2, varlen=True),
                                q, k, v, out, lse, cu_seqlens_q=cu_q,
                                cu_seqlens_k=cu_k)) or "accepted"
    ok = ("'cu_seqlens_q' is in device memory" in err
          and bool(torch.isnan(out).all().item()) and bool(torch.isnan(lse).all().item()))
    print("%-28s %s  %s" % (name, "PASS" if ok else "FAIL", err), flush=True)
    results["cases"][name] = {"ok": ok, "error": err}
    if not ok:
        failures.append(name)
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--out", default=".")
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--host", default="",
                    help="DIR of host twins of the serving artifacts: run the same cases "
                         "on the host path")
    ap.add_argument("--only", default="",
                    help="comma-separated substrings: run only the matching cases")
    a = ap.parse_args()
    ONLY.extend(s for s in a.only.split(",") if s)
    global HOST
    if a.host:
        _, _, _, hkernel, hrun = open_runtime(a.lib, a.host)
        HOST = (hkernel, hrun)
    lib, rt, stream, kernel, run = open_runtime(a.lib, a.artifacts)

    results = {"cases": {}, "bench": []}
    failures = []
    torch.manual_seed(0)
    for name, d, dt, causal, hq, hkv, b, sq, sk, window, softcap, *rest in CASES:
        if not selected(name):
            continue
        splits = rest[0] if rest else 1
        regions = rest[1] if len(rest) > 1 else None
        pack = rest[2] if len(rest) > 2 else False
        dtype = torch.bfloat16 if dt == "bf16" else torch.float16
        q = torch.randn(b, sq, hq, d, device="cuda", dtype=dtype)
        k = torch.randn(b, sk, hkv, d, device="cuda", dtype=dtype)
        v = torch.randn(b, sk, hkv, d, device="cuda", dtype=dtype)
        out = torch.full_like(q, float("nan"))
        lse = torch.full((b, hq, sq), float("nan"), device="cuda", dtype=torch.float32)
        err = run_error(lambda: run(kernel(d, dt, causal, hq, hkv, window, softcap, splits,
                                           regions, pack), q, k, v, out, lse))
        ref, ref_lse = reference(q, k, v, causal, window, softcap, regions)
        nv = naive(q, k, v, causal, window, softcap, regions).double()
        atol = 2 * (ref.to(dtype).double() - ref).abs().max().item()
        rtol = 3 if softcap else 2
        tol = rtol * (nv - ref).abs().max().item() + atol
        nan = bool(torch.isnan(out).any().item() or torch.isnan(lse).any().item())
        max_err = (out.double() - ref).abs().max().item() if not nan else float("inf")
        fin = torch.isfinite(ref_lse)
        lse_err = (lse.double()[fin] - ref_lse[fin]).abs().max().item() if fin.any() else 0.0
        inf_ok = bool(torch.equal(torch.isneginf(lse), torch.isneginf(ref_lse)))
        empty_rows = int((~fin).sum().item())
        ok = err is None and not nan and max_err <= tol and lse_err <= 1e-3 and inf_ok
        results["cases"][name] = {"ok": ok, "max_abs_err": max_err, "tol": tol,
                                  "lse_err": lse_err, "empty_rows": empty_rows,
                                  "nan": nan, "error": err}
        print("%-28s %s  max_abs %.3e  tol %.3e  lse %.2e  empty_rows %d%s" % (
            name, "PASS" if ok else "FAIL", max_err, tol, lse_err, empty_rows,
            ("  " + err) if err else ""), flush=True)
        if not ok:
            failures.append(name)

    failures += run_varlen_cases(kernel, run, results)
    failures += run_append_cases(kernel, run, results)
    failures += run_metadata_placement_cases(kernel, run, results)

    if not a.no_bench and not failures:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                        "..", "..", "bench"))
        import sm90_bench  # noqa: E402
        results["bench"] = sm90_bench.benchmark(kernel, run, stream)

    lib.fa_runtime_destroy(rt)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print("sm90 attention: %s" % ("FAILED " + ", ".join(failures) if failures else "all cases passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
