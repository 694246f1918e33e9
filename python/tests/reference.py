"""float64 attention (docs/SEMANTICS.md) and FlashAttention's tolerance rule,
computed independently of the package: dense per-sequence math, masks from
positions, no tiling."""

import math

import torch


def allowed(sq, sk, causal, window, device="cpu"):
    """[sq, sk] bool: which keys each query sees. causal: "none",
    "top_left" or "bottom_right"; window (left, right), -1 unbounded."""
    i = torch.arange(sq, device=device)[:, None]
    j = torch.arange(sk, device=device)[None, :]
    ok = torch.ones(sq, sk, dtype=torch.bool, device=device)
    shift = 0 if causal == "top_left" else sk - sq  # bottom-right: diagonal at sk - sq
    if causal != "none":
        ok &= j <= i + shift
    left, right = window
    if left >= 0:
        ok &= j >= i + (sk - sq) - left
    if right >= 0:
        ok &= j <= i + (sk - sq) + right
    return ok


def sequence(q, k, v, scale, causal="none", window=(-1, -1), softcap=0.0, dtype=torch.float64,
             round_p=None):
    """One sequence: q [Sq, Hq, D], k / v [Sk, Hkv, D] -> out [Sq, Hq, Dv],
    lse [Hq, Sq] in `dtype` (float64: the reference); round_p rounds P
    before P V (the naive computation in the element type)."""
    sq, hq, _ = q.shape
    sk, hkv, _ = k.shape
    if sk == 0:  # no key: every row empty
        return (torch.zeros(sq, hq, v.shape[-1], dtype=dtype),
                torch.full((hq, sq), -math.inf, dtype=dtype))
    g = hq // hkv
    qd, kd, vd = (t.to(dtype) for t in (q, k, v))
    kd = kd.repeat_interleave(g, dim=1)
    vd = vd.repeat_interleave(g, dim=1)
    s = torch.einsum("ihd,jhd->hij", qd, kd) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    ok = allowed(sq, sk, causal, window)
    s = s.masked_fill(~ok, -math.inf)
    m = s.amax(-1, keepdim=True)
    m_safe = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    p = torch.exp(s - m_safe)
    l = p.sum(-1, keepdim=True)
    lse = torch.where(l[..., 0] > 0, (m_safe + torch.log(l))[..., 0],
                      torch.full_like(l[..., 0], -math.inf))
    p = p / torch.where(l > 0, l, torch.ones_like(l))
    if round_p is not None:
        p = p.to(round_p).to(dtype)
    out = torch.einsum("hij,jhd->ihd", p, vd)
    return out, lse


def check(out, ref, naive, element, softcap=False):
    """FlashAttention's rule: max|out - ref| <= rtol max|naive - ref| + atol."""
    out, ref, naive = (t.to(torch.float64) for t in (out, ref, naive))
    assert not torch.isnan(out).any()
    if out.numel() == 0:
        return
    if element == torch.float32:
        bound = 2 * (naive - ref).abs().max() + 1e-5 * ref.abs().max() + 1e-6
    else:
        rtol = 3 if softcap else 2
        atol = 2 * (ref.to(element).to(torch.float64) - ref).abs().max()
        bound = rtol * (naive - ref).abs().max() + atol
    err = (out - ref).abs().max()
    assert err <= bound, "max error %g above the bound %g" % (err, bound)


def check_lse(lse, ref):
    lse, ref = lse.to(torch.float64), ref.to(torch.float64)
    assert not torch.isnan(lse).any()
    inf = torch.isinf(ref)
    assert torch.equal(torch.isinf(lse) & (lse < 0), inf), "lse -inf where ref is not"
    err = (lse[~inf] - ref[~inf]).abs()
    assert err.numel() == 0 or (err <= 1e-3 + 1e-6 * ref[~inf].abs()).all(), "lse error %g" % err.max()
