"""One attention call on torch tensors: checks, the kernel's config, the
runtime call. The public functions (interface.py) and the registered ops
(_ops.py) all end here.

Shapes (FlashAttention's, docs/SEMANTICS.md):
  dense   q [B, Sq, Hq, D], k / v [B, Sk, Hkv, D|Dv], out [B, Sq, Hq, Dv],
          lse [B, Hq, Sq] f32
  varlen  q [Tq, Hq, D] + cu_seqlens_q [B+1] int32, k / v [Tk, Hkv, D]
          + cu_seqlens_k [B+1] int32, lse [Hq, Tq]
  paged   k / v [num_pages, page_size, Hkv, D] + block_table [B, P] int32
          + seqused_k [B] int32
  append  k_new / v_new [B, S_new, Hkv, D] + cache_seqlens [B] int32
"""

import torch

from . import _runtime

DTYPES = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}
SM90_HEAD_DIMS = (64, 128, 256)


def fail(message):
    raise ValueError("flashattn_mlir: " + message)


def check_tensor(name, t, rank, dtype=None, device=None):
    if not isinstance(t, torch.Tensor):
        fail("%s must be a torch.Tensor, got %s" % (name, type(t).__name__))
    if t.dim() not in (rank if isinstance(rank, tuple) else (rank,)):
        fail("%s must have rank %s, got shape %s" % (name, rank, list(t.shape)))
    if dtype is not None and t.dtype != dtype:
        fail("%s must be %s, got %s" % (name, dtype, t.dtype))
    if device is not None and t.device != device:
        fail("%s must be on %s (as q), got %s" % (name, device, t.device))
    if t.numel() and t.stride(-1) != 1:
        fail("%s must have a contiguous last dimension (stride 1), got strides %s"
             % (name, list(t.stride())))


_targets = {}


def target_of(device):
    """"host" or "sm90" for a tensor's device (remembered per device)."""
    target = _targets.get(device)
    if target is None:
        target = _targets[device] = _target_of(device)
    return target


def _target_of(device):
    if device.type == "cpu":
        return "host"
    if device.type == "cuda":
        if torch.cuda.get_device_capability(device) != (9, 0):
            raise NotImplementedError(
                "flashattn_mlir: CUDA kernels are built for sm_90a (Hopper); %s is sm_%d%d"
                % (device, *torch.cuda.get_device_capability(device)))
        return "sm90"
    fail("tensors must be on the CPU or a CUDA device, got %s" % device)


def metadata(name, t):
    """int32 metadata, host-readable: a CUDA tensor is copied to the host
    (a synchronizing copy, which a CUDA graph capture cannot take)."""
    check_tensor(name, t, 1, torch.int32)
    if t.device.type == "cpu":
        return t.contiguous()
    if torch.cuda.is_current_stream_capturing():
        fail("%s on the GPU is read through a host copy, which a CUDA graph capture "
             "cannot make: pass it in host memory (its values are then those of "
             "capture time at every replay)" % name)
    return t.cpu().contiguous()


def lse_shape(q, varlen_q):
    return [q.shape[1], q.shape[0]] if varlen_q else [q.shape[0], q.shape[2], q.shape[1]]


def attention(q, k, v, *, cu_seqlens_q=None, cu_seqlens_k=None, seqused_k=None,
              block_table=None, alibi_slopes=None, k_new=None, v_new=None,
              cache_seqlens=None, scale=None, causal="none", window_left=-1,
              window_right=-1, softcap=0.0, num_splits=1, pack_gqa=None,
              return_lse=False):
    """(out, lse) of one call; lse is an empty tensor unless return_lse."""
    varlen_q, varlen_k = cu_seqlens_q is not None, cu_seqlens_k is not None
    paged = block_table is not None
    if not isinstance(q, torch.Tensor):
        fail("q must be a torch.Tensor, got %s" % type(q).__name__)
    device = q.device
    target = target_of(device)
    if q.dtype not in DTYPES or (q.dtype == torch.float32 and target != "host"):
        fail("q must be float16 or bfloat16%s, got %s"
             % (" (or float32 on the CPU)" if target == "host" else "", q.dtype))
    check_tensor("q", q, 3 if varlen_q else 4, device=device)
    kv_rank = 3 if varlen_k else 4
    check_tensor("k", k, kv_rank, q.dtype, device)
    check_tensor("v", v, kv_rank, q.dtype, device)
    hq, d, hkv, dv = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
    if k.shape[-1] != d:
        fail("k's head_dim %d differs from q's %d" % (k.shape[-1], d))
    if hkv == 0 or hq % hkv:
        fail("the query heads (%d) must be a multiple of the kv heads (%d)" % (hq, hkv))
    if target == "sm90" and (d not in SM90_HEAD_DIMS or dv != d):
        raise NotImplementedError(
            "flashattn_mlir: no sm_90a kernel for head_dim %d / head_dim_v %d (the kernels "
            "take head_dim = head_dim_v in %s)" % (d, dv, SM90_HEAD_DIMS))
    if append_given := (k_new is not None or v_new is not None):
        if k_new is None or v_new is None or cache_seqlens is None:
            fail("an append needs k_new, v_new and cache_seqlens together")
        check_tensor("k_new", k_new, 4, q.dtype, device)
        check_tensor("v_new", v_new, 4, q.dtype, device)
        if not (k.is_contiguous() and v.is_contiguous()):
            fail("the kv cache must be contiguous to append to it in place")
    if scale is not None and float(scale) == 0.0:
        fail("softmax_scale must be nonzero (None gives 1/sqrt(head_dim))")
    flags = []
    tensors = {}
    for name, t in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k),
                    ("seqused_k", seqused_k), ("cache_seqlens", cache_seqlens)):
        if t is not None:
            tensors[name] = metadata(name, t)
    if append_given and paged and seqused_k is None:
        # The runtime wants seqused_k with a block_table; under an append it
        # is the keys after it (checked, not read for the lengths).
        seqused_k = tensors["seqused_k"] = tensors["cache_seqlens"] + k_new.shape[1]
    if block_table is not None:
        check_tensor("block_table", block_table, 2, torch.int32)
        if block_table.device.type != "cpu" and block_table.device != device:
            fail("block_table must be on the CPU or on %s (as q), got %s"
                 % (device, block_table.device))
        bt = block_table if target == "sm90" else block_table.cpu()
        tensors["block_table"] = bt.contiguous()
        if seqused_k is None and not append_given:
            fail("a paged kv cache (block_table) needs seqused_k or cache_seqlens")
    if alibi_slopes is not None:
        if target == "sm90":
            raise NotImplementedError("flashattn_mlir: alibi_slopes has no sm_90a kernel "
                                      "(the host kernels take it)")
        check_tensor("alibi_slopes", alibi_slopes, (1, 2), torch.float32, device)
        tensors["alibi_slopes"] = alibi_slopes.contiguous()
        flags.append("alibi")
        if alibi_slopes.dim() == 2:
            flags.append("alibi_per_batch")
    flags += [f for f, on in (("varlen_q", varlen_q), ("varlen_k", varlen_k),
                              ("seqused_k", seqused_k is not None or paged),
                              ("paged", paged), ("append", append_given),
                              ("with_lse", return_lse)) if on]
    fields = (("target", target), ("dtype", DTYPES[q.dtype]), ("out_dtype", DTYPES[q.dtype]),
              ("num_q_heads", hq), ("num_kv_heads", hkv), ("head_dim", d), ("head_dim_v", dv),
              ("flags", tuple(flags)), ("page_size", k.shape[1] if paged else 0),
              ("causal", causal), ("window_left", int(window_left)),
              ("window_right", int(window_right)), ("softcap", float(softcap)),
              ("scale", 0.0 if scale is None else float(scale)),
              ("num_splits", int(num_splits)),
              ("pack_gqa", -1 if pack_gqa is None else int(bool(pack_gqa))))
    q, k, v = q.contiguous(), k if append_given else k.contiguous(), \
        v if append_given else v.contiguous()
    out = torch.empty(list(q.shape[:-1]) + [dv], dtype=q.dtype, device=device)
    lse = torch.empty(lse_shape(q, varlen_q) if return_lse else [0], dtype=torch.float32,
                      device=device)
    for name, t in (("q", q), ("k", k), ("v", v), ("out", out)):
        tensors[name] = t
    if return_lse:
        tensors["lse"] = lse
    if append_given:
        tensors["k_new"], tensors["v_new"] = k_new.contiguous(), v_new.contiguous()
    rt = runtime_for(target, device)
    kernel = rt.kernel(fields)
    stream = torch.cuda.current_stream(device).cuda_stream if target == "sm90" else None
    rt.run(kernel, tensors, stream)
    return out, lse


def runtime_for(target, device):
    """This thread's runtime for the device; a CUDA one is bound to its
    device at creation (fa_cuda_probe with the device current)."""
    if target == "host":
        return _runtime.runtime_for("cpu")
    rt = _runtime.runtime_for(device.index)
    if not rt.bound:
        with torch.cuda.device(device):
            rt.bind()
    return rt
