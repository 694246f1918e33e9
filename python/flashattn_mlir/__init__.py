"""flashattn_mlir: FlashAttention's Python interface over flashattn-mlir's
kernels (libflashattn_rt through ctypes, no compiled extension).

    from flashattn_mlir import flash_attn_func
    out = flash_attn_func(q, k, v, causal=True)   # q [B, Sq, Hq, D]

Kernels come from the runtime's disk cache ($FLASHATTN_CACHE_DIR, else
~/.cache/flashattn), compiled on a miss by libflashattn_compiler where it
is installed; `python3 -m flashattn_mlir precompile` fills a cache for a
deployment without the compiler. See interface.py for the semantics.
"""

from ._runtime import FlashAttnError, FlashAttnUnsupportedError, configure
from .interface import (flash_attn_func, flash_attn_kvpacked_func, flash_attn_qkvpacked_func,
                        flash_attn_varlen_func, flash_attn_with_kvcache,
                        scaled_dot_product_attention)
from .precompile import precompile

__all__ = ["flash_attn_func", "flash_attn_kvpacked_func", "flash_attn_qkvpacked_func",
           "flash_attn_varlen_func", "flash_attn_with_kvcache", "scaled_dot_product_attention",
           "precompile", "configure", "FlashAttnError", "FlashAttnUnsupportedError"]
