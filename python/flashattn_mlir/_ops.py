"""The two operators, registered with PyTorch where it can take them.

torch 2.4+: `torch.library.custom_op` ops `flashattn_mlir::attention` and
`flashattn_mlir::attention_append` (which mutates k_cache / v_cache) with
fake implementations (register_fake), so that torch.compile(fullgraph=True)
traces through them and torch.library.opcheck passes; `attention` has an
autograd registration whose backward raises NotImplementedError (there is
no backward kernel yet; torch takes none for a mutating op). Eager calls
with nothing requiring grad run the implementation directly, without the
dispatcher; torch.compile, export and autograd go through the ops. Older torch (Debian's 1.13): plain functions, wrapped
in an autograd.Function with the same raising backward when an input
requires grad.
"""

from typing import Optional, Tuple

import torch

from . import _core

BACKWARD_MESSAGE = ("flashattn_mlir: the backward pass is not implemented yet "
                    "(flashattn-mlir has forward kernels only)")
HAS_CUSTOM_OP = hasattr(torch.library, "custom_op") and hasattr(torch.library, "register_fake")


def _causal(causal, top_left):
    return "none" if not causal else ("top_left" if top_left else "bottom_right")


def _fake(q, v, varlen_q, return_lse):
    out = q.new_empty(list(q.shape[:-1]) + [v.shape[-1]])
    shape = _core.lse_shape(q, varlen_q) if return_lse else [0]
    return out, q.new_empty(shape, dtype=torch.float32)


def _options(alibi_slopes, scale, causal, window_left, window_right, softcap, num_splits,
             pack_gqa, return_lse):
    """The keyword arguments of _core.attention shared by both ops."""
    return dict(alibi_slopes=alibi_slopes, scale=scale, causal=causal,
                window_left=window_left, window_right=window_right, softcap=softcap,
                num_splits=num_splits, pack_gqa=None if pack_gqa < 0 else bool(pack_gqa),
                return_lse=return_lse)


def _fwd_impl(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_k, block_table, *options):
    return _core.attention(q, k, v, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                           seqused_k=seqused_k, block_table=block_table, **_options(*options))


def _append_impl(q, k_cache, v_cache, k_new, v_new, cache_seqlens, block_table, *options):
    return _core.attention(q, k_cache, v_cache, k_new=k_new, v_new=v_new,
                           cache_seqlens=cache_seqlens, block_table=block_table,
                           **_options(*options))


def _no_backward(ctx, *grads):
    raise NotImplementedError(BACKWARD_MESSAGE)


if HAS_CUSTOM_OP:
    Tensor = torch.Tensor

    @torch.library.custom_op("flashattn_mlir::attention", mutates_args=())
    def _fwd_op(q: Tensor, k: Tensor, v: Tensor, cu_seqlens_q: Optional[Tensor],
                cu_seqlens_k: Optional[Tensor], seqused_k: Optional[Tensor],
                block_table: Optional[Tensor], alibi_slopes: Optional[Tensor],
                scale: Optional[float], causal: str, window_left: int, window_right: int,
                softcap: float, num_splits: int, pack_gqa: int,
                return_lse: bool) -> Tuple[Tensor, Tensor]:
        return _fwd_impl(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_k, block_table,
                         alibi_slopes, scale, causal, window_left, window_right, softcap,
                         num_splits, pack_gqa, return_lse)

    @_fwd_op.register_fake
    def _(q, k, v, cu_seqlens_q, *rest):
        return _fake(q, v, cu_seqlens_q is not None, rest[-1])

    @torch.library.custom_op("flashattn_mlir::attention_append",
                             mutates_args=("k_cache", "v_cache"))
    def _append_op(q: Tensor, k_cache: Tensor, v_cache: Tensor, k_new: Tensor, v_new: Tensor,
                   cache_seqlens: Tensor, block_table: Optional[Tensor],
                   alibi_slopes: Optional[Tensor], scale: Optional[float], causal: str,
                   window_left: int, window_right: int, softcap: float, num_splits: int,
                   pack_gqa: int, return_lse: bool) -> Tuple[Tensor, Tensor]:
        return _append_impl(q, k_cache, v_cache, k_new, v_new, cache_seqlens, block_table,
                            alibi_slopes, scale, causal, window_left, window_right, softcap,
                            num_splits, pack_gqa, return_lse)

    @_append_op.register_fake
    def _(q, k_cache, v_cache, *rest):
        return _fake(q, v_cache, False, rest[-1])

    # torch takes no autograd formula for a mutating op (attention_append):
    # its backward is torch's own "not registered" error.
    _fwd_op.register_autograd(_no_backward, setup_context=lambda ctx, inputs, output: None)

    _functorch = getattr(torch._C, "_functorch", None)
    _wrapped = getattr(_functorch, "is_functorch_wrapped_tensor", lambda t: False)
    _dispatch_modes = getattr(torch._C, "_len_torch_dispatch_stack", lambda: 0)
    _function_mode = getattr(torch._C, "_is_torch_function_mode_enabled", lambda: False)

    def _eager(args):
        """Whether a call may skip the dispatcher: plain tensors (no fake,
        functorch, subclass or dispatch-mode tensors), not under
        torch.compile / export, forward AD or a mode, nothing requiring
        grad. (The custom op's Python dispatch costs tens of microseconds a
        call, decode's whole budget.)"""
        if torch.compiler.is_compiling() or _dispatch_modes() or _function_mode():
            return False
        if getattr(torch.autograd.forward_ad, "_current_level", -1) >= 0:
            return False
        grad = torch.is_grad_enabled()
        for a in args:
            if isinstance(a, torch.Tensor) and (
                    type(a) is not torch.Tensor or _wrapped(a) or (grad and a.requires_grad)):
                return False
        return True

    _bump = getattr(torch.autograd.graph, "increment_version", None)

    def _call_fwd(*args):
        return _fwd_impl(*args) if _eager(args) else _fwd_op(*args)

    def _call_append(*args):
        if not _eager(args):
            return _append_op(*args)
        result = _append_impl(*args)
        if _bump is not None:  # the caches changed in place, as the op says
            _bump(args[1])
            _bump(args[2])
        return result
else:
    class _Forward(torch.autograd.Function):
        """Forward through `impl`; backward raises."""

        @staticmethod
        def forward(ctx, impl, *args):
            return impl(*args)

        backward = staticmethod(_no_backward)

    def _through_autograd(impl, args):
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            return _Forward.apply(impl, *args)
        return impl(*args)

    def _call_fwd(*args):
        return _through_autograd(_fwd_impl, args)

    def _call_append(*args):
        return _through_autograd(_append_impl, args)


def attention(q, k, v, *, cu_seqlens_q=None, cu_seqlens_k=None, seqused_k=None,
              block_table=None, alibi_slopes=None, scale=None, causal=False, top_left=False,
              window_left=-1, window_right=-1, softcap=0.0, num_splits=1, pack_gqa=None,
              return_lse=False):
    """(out, lse) through the registered op (lse empty unless return_lse)."""
    return _call_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_k, block_table, alibi_slopes,
                     None if scale is None else float(scale), _causal(causal, top_left),
                     int(window_left), int(window_right), float(softcap), int(num_splits),
                     -1 if pack_gqa is None else int(bool(pack_gqa)), bool(return_lse))


def attention_append(q, k_cache, v_cache, k_new, v_new, cache_seqlens, *, block_table=None,
                     alibi_slopes=None, scale=None, causal=False, window_left=-1,
                     window_right=-1, softcap=0.0, num_splits=0, pack_gqa=None,
                     return_lse=False):
    """Appends k_new / v_new to the cache in place, then (out, lse)."""
    return _call_append(q, k_cache, v_cache, k_new, v_new, cache_seqlens, block_table,
                        alibi_slopes, None if scale is None else float(scale),
                        _causal(causal, False), int(window_left), int(window_right),
                        float(softcap), int(num_splits),
                        -1 if pack_gqa is None else int(bool(pack_gqa)), bool(return_lse))
