"""The package's functions on the CPU (host kernels) against the float64
reference of reference.py, and every bad-input path.

Kernels are compiled on first use into a cache directory of the test
session (FLASHATTN_CACHE_DIR is set by conftest.py)."""

import math

import pytest
import torch

import flashattn_mlir as fa
from reference import check, check_lse, sequence

torch.manual_seed(0)
BF16, F16, F32 = torch.bfloat16, torch.float16, torch.float32


def rand(*shape, dtype=BF16):
    return torch.randn(*shape, dtype=torch.float32).to(dtype)


def expect(q, k, v, out, lse=None, scale=None, causal="none", window=(-1, -1), softcap=0.0):
    """Checks a batched call ([B, S, H, D]) sequence by sequence."""
    scale = scale if scale is not None else 1 / math.sqrt(q.shape[-1])
    for b in range(q.shape[0]):
        ref, ref_lse = sequence(q[b], k[b], v[b], scale, causal, window, softcap)
        naive, _ = sequence(q[b], k[b], v[b], scale, causal, window, softcap, torch.float32,
                            round_p=q.dtype)
        check(out[b], ref, naive.to(q.dtype), q.dtype, softcap=bool(softcap))
        if lse is not None:
            check_lse(lse[b], ref_lse)


@pytest.mark.parametrize("dtype", [BF16, F16, F32])
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attn_func(dtype, causal):
    # GQA 4 / 2, Sq < Sk: bottom-right causal (the last query sees every key).
    q, k, v = rand(2, 37, 4, 64, dtype=dtype), rand(2, 50, 2, 64, dtype=dtype), \
        rand(2, 50, 2, 64, dtype=dtype)
    out = fa.flash_attn_func(q, k, v, causal=causal)
    assert out.shape == (2, 37, 4, 64) and out.dtype == dtype
    expect(q, k, v, out, causal="bottom_right" if causal else "none")


def test_return_attn_probs_gives_lse_and_empty_rows():
    # Sq > Sk under bottom-right causal: the first Sq - Sk rows see no key
    # (out 0, lse -inf); probabilities are not materialized (None).
    q, k, v = rand(1, 20, 2, 32), rand(1, 8, 2, 32), rand(1, 8, 2, 32)
    out, lse, probs = fa.flash_attn_func(q, k, v, causal=True, return_attn_probs=True)
    assert probs is None and lse.shape == (1, 2, 20) and lse.dtype == F32
    assert torch.all(out[0, :12] == 0) and torch.all(torch.isneginf(lse[0, :, :12]))
    expect(q, k, v, out, lse, causal="bottom_right")


def test_window_softcap_scale():
    q, k, v = rand(1, 64, 2, 64), rand(1, 64, 2, 64), rand(1, 64, 2, 64)
    out = fa.flash_attn_func(q, k, v, softmax_scale=0.3, window_size=(8, 4), softcap=5.0)
    expect(q, k, v, out, scale=0.3, window=(8, 4), softcap=5.0)


def test_packed_forms():
    qkv = rand(2, 33, 3, 4, 64)
    out = fa.flash_attn_qkvpacked_func(qkv, causal=True)
    expect(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], out, causal="bottom_right")
    q, kv = rand(2, 10, 4, 64), rand(2, 40, 2, 2, 64)
    out = fa.flash_attn_kvpacked_func(q, kv)
    expect(q, kv[:, :, 0], kv[:, :, 1], out)


def test_varlen():
    lens_q, lens_k = [5, 0, 17, 1], [9, 3, 17, 0]
    cq = torch.tensor([0] + list(torch.tensor(lens_q).cumsum(0)), dtype=torch.int32)
    ck = torch.tensor([0] + list(torch.tensor(lens_k).cumsum(0)), dtype=torch.int32)
    q, k, v = rand(sum(lens_q), 4, 64), rand(sum(lens_k), 2, 64), rand(sum(lens_k), 2, 64)
    out, lse, _ = fa.flash_attn_varlen_func(q, k, v, cq, ck, max(lens_q), max(lens_k),
                                            causal=True, return_attn_probs=True)
    assert out.shape == q.shape and lse.shape == (4, sum(lens_q))
    for b in range(4):
        qs, ks = slice(cq[b], cq[b + 1]), slice(ck[b], ck[b + 1])
        ref, ref_lse = sequence(q[qs], k[ks], v[ks], 1 / 8, "bottom_right")
        naive, _ = sequence(q[qs], k[ks], v[ks], 1 / 8, "bottom_right", dtype=F32,
                            round_p=BF16)
        check(out[qs], ref, naive.to(BF16), BF16)
        check_lse(lse[:, qs], ref_lse)


def paged_cache(k, v, page):
    """k / v [B, S, H, D] as a shuffled pool [pages, page, H, D] and its
    block_table [B, S / page] int32."""
    b, s, h, d = k.shape
    n = b * s // page
    order = torch.randperm(n)
    pool_k, pool_v = torch.zeros(n, page, h, d, dtype=k.dtype), torch.zeros(n, page, h, d,
                                                                           dtype=v.dtype)
    pool_k[order] = k.reshape(n, page, h, d)
    pool_v[order] = v.reshape(n, page, h, d)
    return pool_k, pool_v, order.reshape(b, s // page).to(torch.int32)


def test_with_kvcache_seqlens_and_paged():
    q, kc, vc = rand(3, 1, 8, 64), rand(3, 64, 2, 64), rand(3, 64, 2, 64)
    lens = torch.tensor([64, 1, 30], dtype=torch.int32)
    out, lse = fa.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=lens, causal=True,
                                          return_softmax_lse=True)
    pk, pv, bt = paged_cache(kc, vc, 16)
    paged = fa.flash_attn_with_kvcache(q, pk, pv, cache_seqlens=lens, block_table=bt,
                                       causal=True)
    for b, n in enumerate(lens.tolist()):
        ref, ref_lse = sequence(q[b], kc[b, :n], vc[b, :n], 1 / 8, "bottom_right")
        naive, _ = sequence(q[b], kc[b, :n], vc[b, :n], 1 / 8, "bottom_right", dtype=F32,
                            round_p=BF16)
        check(out[b], ref, naive.to(BF16), BF16)
        check(paged[b], ref, naive.to(BF16), BF16)
        check_lse(lse[b], ref_lse)


def test_with_kvcache_append_in_place():
    q, kc, vc = rand(2, 2, 4, 64), rand(2, 40, 2, 64), rand(2, 40, 2, 64)
    kn, vn = rand(2, 2, 2, 64), rand(2, 2, 2, 64)
    lens = torch.tensor([5, 30], dtype=torch.int32)
    before_k = kc.clone()
    out = fa.flash_attn_with_kvcache(q, kc, vc, kn, vn, cache_seqlens=lens, causal=True)
    for b, n in enumerate(lens.tolist()):
        assert torch.equal(kc[b, n:n + 2], kn[b]) and torch.equal(vc[b, n:n + 2], vn[b])
        assert torch.equal(kc[b, :n], before_k[b, :n])
        ref, _ = sequence(q[b], kc[b, :n + 2], vc[b, :n + 2], 1 / 8, "bottom_right")
        naive, _ = sequence(q[b], kc[b, :n + 2], vc[b, :n + 2], 1 / 8, "bottom_right",
                            dtype=F32, round_p=BF16)
        check(out[b], ref, naive.to(BF16), BF16)


def test_with_kvcache_append_paged():
    q, kc, vc = rand(2, 3, 8, 64), rand(2, 64, 2, 64), rand(2, 64, 2, 64)
    kn, vn = rand(2, 3, 2, 64), rand(2, 3, 2, 64)
    pk, pv, bt = paged_cache(kc, vc, 16)
    lens = torch.tensor([5, 30], dtype=torch.int32)
    out = fa.flash_attn_with_kvcache(q, pk, pv, kn, vn, cache_seqlens=lens, block_table=bt,
                                     causal=True)
    for b, n in enumerate(lens.tolist()):
        keys = pk[bt[b].long()].reshape(64, 2, 64)
        values = pv[bt[b].long()].reshape(64, 2, 64)
        assert torch.equal(keys[n:n + 3], kn[b]) and torch.equal(keys[:n], kc[b, :n])
        ref, _ = sequence(q[b], keys[:n + 3], values[:n + 3], 1 / 8, "bottom_right")
        naive, _ = sequence(q[b], keys[:n + 3], values[:n + 3], 1 / 8, "bottom_right",
                            dtype=F32, round_p=BF16)
        check(out[b], ref, naive.to(BF16), BF16)


def test_sdpa_entry_is_top_left():
    # SDPA's is_causal is top-left: query i sees keys 0..i even when Sk > Sq.
    q, k, v = rand(2, 4, 10, 64), rand(2, 2, 30, 64), rand(2, 2, 30, 64)
    out = fa.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    assert out.shape == (2, 4, 10, 64)
    expect(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), out.transpose(1, 2),
           causal="top_left")


def test_non_contiguous_strides_are_copied():
    q = rand(2, 4, 16, 64).transpose(1, 2)  # [B, S, H, D] view, last dim contiguous
    k, v = rand(2, 16, 4, 64), rand(2, 16, 4, 64)
    expect(q, k, v, fa.flash_attn_func(q, k, v))


@pytest.mark.parametrize("call, message", [
    (lambda q, k, v: fa.flash_attn_func(q.int(), k, v), "q must be float16 or bfloat16"),
    (lambda q, k, v: fa.flash_attn_func(q, k.half(), v), "k must be torch.bfloat16"),
    (lambda q, k, v: fa.flash_attn_func(q[0], k, v), "q must have rank 4"),
    (lambda q, k, v: fa.flash_attn_func(q, k[..., :32], v), "head_dim 32 differs"),
    (lambda q, k, v: fa.flash_attn_func(q[:, :, :3], k, v), "multiple of the kv heads"),
    (lambda q, k, v: fa.flash_attn_func(q.transpose(2, 3).contiguous().transpose(2, 3), k, v),
     "contiguous last dimension"),
    (lambda q, k, v: fa.flash_attn_func(q, k.to("meta"), v), "must be on cpu"),
    (lambda q, k, v: fa.flash_attn_func(q, k, v, dropout_p=0.1), "dropout_p is not supported"),
    (lambda q, k, v: fa.flash_attn_with_kvcache(q, k, v, rotary_cos=q), "rotary_cos"),
    (lambda q, k, v: fa.flash_attn_with_kvcache(q, k, v, cache_batch_idx=q), "cache_batch_idx"),
    (lambda q, k, v: fa.scaled_dot_product_attention(q, k, v, attn_mask=q), "attn_mask"),
    (lambda q, k, v: fa.scaled_dot_product_attention(q, k[:, :2], v[:, :2]),
     "enable_gqa=True"),
    (lambda q, k, v: fa.flash_attn_varlen_func(q[0], k[0], v[0], torch.tensor([0, 8]),
                                               torch.tensor([0, 8], dtype=torch.int32), 8, 8),
     "cu_seqlens_q must be torch.int32"),
])
def test_bad_input(call, message):
    q, k, v = rand(1, 8, 4, 64), rand(1, 8, 2, 64), rand(1, 8, 2, 64)
    with pytest.raises(ValueError, match=message):
        call(q, k, v)


def test_runtime_errors_name_the_problem():
    # cu_seqlens past the tensor: the runtime's check, raised with its message.
    q, k, v = rand(8, 2, 64), rand(8, 2, 64), rand(8, 2, 64)
    cu = torch.tensor([0, 4, 99], dtype=torch.int32)
    with pytest.raises(fa.FlashAttnError, match="FA_ERROR_BAD_INPUT"):
        fa.flash_attn_varlen_func(q, k, v, cu, cu, 4, 4)


@pytest.mark.parametrize("call, message", [
    (lambda q, k, v: fa.flash_attn_func(q, k, v, softmax_scale=0.0), "softmax_scale must be"),
    (lambda q, k, v: fa.flash_attn_with_kvcache(q, k, v, k=k[:, :1], cache_seqlens=1),
     "appended together; got only k"),
    (lambda q, k, v: fa.flash_attn_with_kvcache(q, k, v, k=k[:, :1], v=v[:, :1]),
     "needs cache_seqlens"),
    (lambda q, k, v: fa.flash_attn_with_kvcache(
        q, k, v, cache_seqlens=torch.tensor([3], dtype=torch.int64)), "cache_seqlens must be"),
    (lambda q, k, v: fa.flash_attn_with_kvcache(
        q, k.reshape(4, 2, 2, 64), v.reshape(4, 2, 2, 64), cache_seqlens=3,
        block_table=torch.zeros(1, 4, dtype=torch.int32, device="meta")), "block_table must be"),
])
def test_bad_kvcache_input(call, message):
    q, k, v = rand(1, 1, 4, 64), rand(1, 8, 2, 64), rand(1, 8, 2, 64)
    with pytest.raises(ValueError, match=message):
        call(q, k, v)


def test_alibi_and_seqused_k():
    q, k, v = rand(2, 6, 4, 32, dtype=F32), rand(2, 20, 2, 32, dtype=F32), \
        rand(2, 20, 2, 32, dtype=F32)
    slopes = torch.tensor([0.5, 0.25, 0.125, 0.0625])
    used = torch.tensor([20, 7], dtype=torch.int32)
    out = fa.flash_attn_with_kvcache(q, k, v, cache_seqlens=used, alibi_slopes=slopes,
                                     causal=True)
    for b, n in enumerate(used.tolist()):
        i = torch.arange(6)[:, None]
        j = torch.arange(n)[None, :]
        bias = -slopes[:, None, None].double() * (i + n - 6 - j).abs()
        s = torch.einsum("ihd,jhd->hij", q[b].double(), k[b, :n].double().repeat_interleave(
            2, dim=1)) / math.sqrt(32) + bias
        s = s.masked_fill(j > i + n - 6, -math.inf)
        ref = torch.einsum("hij,jhd->ihd", s.softmax(-1), v[b, :n].double().repeat_interleave(
            2, dim=1))
        assert (out[b].double() - ref).abs().max() < 1e-4


def test_configure_takes_effect_for_new_calls(tmp_path):
    from flashattn_mlir import _runtime
    before = _runtime.runtime_for("cpu")
    fa.configure(cache_dir=str(tmp_path))
    try:
        after = _runtime.runtime_for("cpu")
        assert after is not before
        q = rand(1, 4, 2, 64)
        fa.flash_attn_func(q, q, q)
        assert any(p.suffix == ".faa" for p in tmp_path.iterdir())
    finally:
        fa.configure()


def test_backward_raises():
    q = rand(1, 8, 2, 64).requires_grad_()
    k, v = rand(1, 8, 2, 64), rand(1, 8, 2, 64)
    out = fa.flash_attn_func(q, k, v)
    with pytest.raises(NotImplementedError, match="backward"):
        out.sum().backward()
