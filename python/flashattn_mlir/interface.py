"""FlashAttention 2.x's Python interface (flash_attn_interface.py) over
flashattn-mlir's kernels, plus an SDPA-shaped entry.

Same signatures, defaults, return values and semantics as FlashAttention:
causal is bottom-right aligned (the last query sees the last key) in every
flash_attn_* function, softmax_scale defaults to 1/sqrt(head_dim),
window_size=(-1, -1) is unbounded, softcap=0 is off, the lse is in natural
log, [B, Hq, Sq] (or [Hq, Tq] for varlen) float32. FlashAttention-3's
extras are keyword-only: num_splits (split-KV; 1 = none, 0 = automatic)
and pack_gqa (None = automatic).

What flashattn-mlir cannot serve raises and never computes something else:
dropout_p > 0, rotary embeddings, cache_batch_idx, cache_leftpad (ValueError
naming the argument), a head_dim or device without a kernel
(NotImplementedError), and backward (NotImplementedError when autograd
reaches it).

Metadata: cu_seqlens_q, cu_seqlens_k, seqused_k and cache_seqlens must be
int32; on a CUDA device they are read through a host copy (a synchronizing
copy: the runtime checks them on the host and builds its tile table from
them). A CUDA block_table is read by the kernels where it is.

Tensors: the last dimension must be contiguous (stride 1); other strides
are made contiguous by a copy (a kv cache appended to must be contiguous,
as it is written in place). CPU tensors run on the host kernels (float32
too), CUDA tensors on the sm_90a kernels (float16, bfloat16).
"""

import torch

from . import _ops


def _unsupported(**given):
    for name, value in given.items():
        if value:
            raise ValueError("flashattn_mlir: %s is not supported (flashattn-mlir computes "
                             "attention without it); got %r" % (name, value))


def _window(window_size):
    left, right = window_size
    return int(left), int(right)


def _result(out, lse, return_lse, probs=False):
    if not return_lse:
        return out
    return (out, lse, None) if probs else (out, lse)


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False,
                    window_size=(-1, -1), softcap=0.0, alibi_slopes=None, deterministic=False,
                    return_attn_probs=False, *, num_splits=1, pack_gqa=None):
    """out [B, Sq, Hq, Dv] = attention(q [B, Sq, Hq, D], k [B, Sk, Hkv, D],
    v [B, Sk, Hkv, Dv]); with return_attn_probs, (out, softmax_lse
    [B, Hq, Sq] float32, None): the probabilities themselves are never
    materialized (FlashAttention returns them only for dropout tests)."""
    _unsupported(dropout_p=dropout_p)
    left, right = _window(window_size)
    out, lse = _ops.attention(q, k, v, scale=softmax_scale, causal=causal, window_left=left,
                              window_right=right, softcap=softcap, alibi_slopes=alibi_slopes,
                              num_splits=num_splits, pack_gqa=pack_gqa,
                              return_lse=return_attn_probs)
    return _result(out, lse, return_attn_probs, probs=True)


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False,
                              window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                              deterministic=False, return_attn_probs=False, *, num_splits=1,
                              pack_gqa=None):
    """flash_attn_func with qkv [B, S, 3, H, D]."""
    return flash_attn_func(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], dropout_p, softmax_scale,
                           causal, window_size, softcap, alibi_slopes, deterministic,
                           return_attn_probs, num_splits=num_splits, pack_gqa=pack_gqa)


def flash_attn_kvpacked_func(q, kv, dropout_p=0.0, softmax_scale=None, causal=False,
                             window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                             deterministic=False, return_attn_probs=False, *, num_splits=1,
                             pack_gqa=None):
    """flash_attn_func with kv [B, Sk, 2, Hkv, D]."""
    return flash_attn_func(q, kv[:, :, 0], kv[:, :, 1], dropout_p, softmax_scale, causal,
                           window_size, softcap, alibi_slopes, deterministic, return_attn_probs,
                           num_splits=num_splits, pack_gqa=pack_gqa)


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                           dropout_p=0.0, softmax_scale=None, causal=False,
                           window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                           deterministic=False, return_attn_probs=False, block_table=None, *,
                           seqused_k=None, num_splits=1, pack_gqa=None):
    """Packed sequences: q [Tq, Hq, D] with cu_seqlens_q [B+1] int32, k / v
    [Tk, Hkv, D] with cu_seqlens_k [B+1] int32 (or a paged cache
    [num_pages, page_size, Hkv, D] through block_table [B, P] int32, its
    lengths from seqused_k [B]); out [Tq, Hq, Dv], lse [Hq, Tq].
    max_seqlen_q / max_seqlen_k are accepted for compatibility (the runtime
    reads the lengths from cu_seqlens)."""
    _unsupported(dropout_p=dropout_p)
    left, right = _window(window_size)
    paged = block_table is not None
    if paged and cu_seqlens_k.dtype != torch.int32:
        raise ValueError("flashattn_mlir: cu_seqlens_k must be torch.int32, got %s"
                         % cu_seqlens_k.dtype)
    if paged and seqused_k is None:
        # FlashAttention's paged varlen: the sequence lengths of cu_seqlens_k.
        seqused_k = (cu_seqlens_k[1:] - cu_seqlens_k[:-1]).to(cu_seqlens_k.dtype)
    out, lse = _ops.attention(q, k, v, cu_seqlens_q=cu_seqlens_q,
                              cu_seqlens_k=None if paged else cu_seqlens_k,
                              seqused_k=seqused_k, block_table=block_table,
                              scale=softmax_scale, causal=causal, window_left=left,
                              window_right=right, softcap=softcap, alibi_slopes=alibi_slopes,
                              num_splits=num_splits, pack_gqa=pack_gqa,
                              return_lse=return_attn_probs)
    return _result(out, lse, return_attn_probs, probs=True)


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None,
                            rotary_sin=None, cache_seqlens=None, cache_batch_idx=None,
                            cache_leftpad=None, block_table=None, softmax_scale=None,
                            causal=False, window_size=(-1, -1), softcap=0.0,
                            rotary_interleaved=True, alibi_slopes=None, num_splits=0,
                            return_softmax_lse=False, *, pack_gqa=None):
    """Decode over a kv cache: q [B, Sq, Hq, D]; k_cache / v_cache
    [B, S_cache, Hkv, D] or paged [num_pages, page_size, Hkv, D] with
    block_table [B, P] int32; cache_seqlens (int or [B] int32) keys
    already in the cache. With k / v [B, S_new, Hkv, D] the new keys are
    written into the cache in place at cache_seqlens first, and attention
    covers cache_seqlens + S_new keys. Without cache_seqlens the whole cache
    is attended. Returns out, or (out, lse) with return_softmax_lse."""
    _unsupported(rotary_cos=rotary_cos is not None, rotary_sin=rotary_sin is not None,
                 cache_batch_idx=cache_batch_idx is not None,
                 cache_leftpad=cache_leftpad is not None)
    left, right = _window(window_size)
    batch = q.shape[0]
    append = k is not None or v is not None
    if append and (k is None or v is None):
        raise ValueError("flashattn_mlir: k and v are appended together; got only %s"
                         % ("k" if v is None else "v"))
    if append and cache_seqlens is None:
        raise ValueError("flashattn_mlir: appending k / v needs cache_seqlens (where the new "
                         "keys go), as FlashAttention")
    if isinstance(cache_seqlens, torch.Tensor) and cache_seqlens.dtype != torch.int32:
        raise ValueError("flashattn_mlir: cache_seqlens must be torch.int32, got %s"
                         % cache_seqlens.dtype)
    if isinstance(cache_seqlens, int):
        cache_seqlens = torch.full((batch,), cache_seqlens, dtype=torch.int32)
    paged = block_table is not None
    if cache_seqlens is None and paged:
        cache_seqlens = torch.full((batch,), block_table.shape[1] * k_cache.shape[1],
                                   dtype=torch.int32)
    kw = dict(block_table=block_table, scale=softmax_scale, causal=causal, window_left=left,
              window_right=right, softcap=softcap, alibi_slopes=alibi_slopes,
              num_splits=num_splits, pack_gqa=pack_gqa, return_lse=return_softmax_lse)
    if append:
        out, lse = _ops.attention_append(q, k_cache, v_cache, k, v, cache_seqlens, **kw)
    else:
        out, lse = _ops.attention(q, k_cache, v_cache, seqused_k=cache_seqlens, **kw)
    return _result(out, lse, return_softmax_lse)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """torch.nn.functional.scaled_dot_product_attention's shapes and
    semantics: query [B, Hq, Sq, D], key / value [B, Hkv, Sk, D|Dv] ->
    [B, Hq, Sq, Dv]; is_causal is top-left aligned (query i sees keys
    0..i), as SDPA's; Hq != Hkv needs enable_gqa=True. attn_mask is not
    supported (ValueError)."""
    _unsupported(attn_mask=attn_mask is not None, dropout_p=dropout_p)
    if query.dim() != 4:
        raise ValueError("flashattn_mlir: query must be [B, H, S, D], got shape %s"
                         % list(query.shape))
    if query.shape[1] != key.shape[1] and not enable_gqa:
        raise ValueError("flashattn_mlir: %d query heads over %d kv heads needs "
                         "enable_gqa=True (as SDPA)" % (query.shape[1], key.shape[1]))
    q, k, v = (t.transpose(1, 2) for t in (query, key, value))
    out, _ = _ops.attention(q, k, v, scale=scale, causal=is_causal, top_left=True)
    return out.transpose(1, 2)
