#!/usr/bin/env python3
"""The flashattn_mlir package on the H200 (sm90, kernels from a precompiled
cache, no compiler there), with torch 2.x:
  1. the functions against the float64 reference (python/tests/reference.py)
     and the bad-input paths on CUDA;
  2. torch.library.opcheck on both ops, torch.compile(fullgraph=True) of a
     decoder layer's attention, a dense decode step captured in a CUDA graph
     and replayed with the same results;
  3. a Llama-style decoder (Llama-3-8B attention shapes: 32 query / 8 kv heads,
     head_dim 128, hidden 4096; LAYERS layers, random weights): prefill, then 64
     teacher-forced decode steps from a paged cache, every step's logits against
     the same model on SDPA (bf16) and in float32, FlashAttention's rule; our
     op counted by the profiler; prefill and decode tokens/s beside SDPA's cuDNN
     backend; the host time per call from Python beside SDPA's.
Writes DIR/torch_package.json. Exit 0 when every check passes.

Here (no GPU): `test_torch_package.py --print-configs > F` lists the kernel
configurations it needs, for `python3 -m flashattn_mlir precompile`.

Usage: test_torch_package.py --out DIR   (FLASHATTN_CACHE_DIR set, the
package and the runtime on PYTHONPATH / FLASHATTN_RT_LIB)
"""

import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "tests"))

HQ, HKV, D, HIDDEN, LAYERS, PAGE = 32, 8, 128, 4096, 2, 64
PROMPT, STEPS, BATCH = 512, 64, 2


def cfg(causal="bottom_right", flags=(), splits=1, page=0, hq=HQ, hkv=HKV):
    return {"target": "sm90", "dtype": "bf16", "out_dtype": "bf16", "num_q_heads": hq,
            "num_kv_heads": hkv, "head_dim": D, "head_dim_v": D, "flags": sorted(flags),
            "page_size": page, "causal": causal, "window_left": -1, "window_right": -1,
            "softcap": 0.0, "scale": 0.0, "num_splits": splits, "pack_gqa": -1}


CONFIGS = [
    cfg(),                                                   # prefill, flash_attn_func
    cfg(flags=("with_lse",)),                                # return_attn_probs
    cfg(flags=("varlen_q", "varlen_k")),                     # varlen
    cfg(flags=("paged", "seqused_k", "with_lse"), splits=0, page=PAGE),  # kvcache, lse
    cfg(flags=("append", "paged", "seqused_k"), splits=0, page=PAGE),    # decode append
    cfg(causal="none", splits=0),                            # dense decode (graph)
    cfg(causal="none"),                                      # host-overhead call
    cfg(causal="top_left", hq=HKV),                          # SDPA entry
]


class Checks:
    """Named pass/fail results with details."""

    def __init__(self):
        self.checks, self.numbers = {}, {}

    def run(self, name, fn):
        try:
            detail = fn()
            self.checks[name] = {"passed": True, "detail": detail}
            print("PASS %s %s" % (name, detail or ""), flush=True)
        except Exception as e:  # a failed check is recorded, the next one runs
            self.checks[name] = {"passed": False, "detail": "%s: %s" % (type(e).__name__, e)}
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e), flush=True)


def rand(torch, *shape):
    return torch.randn(*shape, device="cuda", dtype=torch.bfloat16)


def expect(torch, q, k, v, out, lse=None, causal="none"):
    from reference import check, check_lse, sequence
    for b in range(q.shape[0]):
        qb, kb, vb = q[b].cpu(), k[b].cpu(), v[b].cpu()
        ref, ref_lse = sequence(qb, kb, vb, 1 / math.sqrt(D), causal)
        naive, _ = sequence(qb, kb, vb, 1 / math.sqrt(D), causal, dtype=torch.float32,
                            round_p=torch.bfloat16)
        check(out[b].cpu(), ref, naive.to(torch.bfloat16), torch.bfloat16)
        if lse is not None:
            check_lse(lse[b].cpu(), ref_lse)


def functions(torch, fa, c):
    """The functions on sm90 against float64, and CUDA's bad inputs."""
    q, k, v = rand(torch, 2, 300, HQ, D), rand(torch, 2, 700, HKV, D), rand(torch, 2, 700, HKV, D)
    c.run("flash_attn_func causal", lambda: expect(
        torch, q, k, v, fa.flash_attn_func(q, k, v, causal=True), causal="bottom_right"))

    def with_lse():
        out, lse, probs = fa.flash_attn_func(q, k, v, causal=True, return_attn_probs=True)
        assert probs is None
        expect(torch, q, k, v, out, lse, causal="bottom_right")
    c.run("flash_attn_func lse", with_lse)

    def varlen():
        cu = torch.tensor([0, 300, 600], dtype=torch.int32, device="cuda")
        cuk = torch.tensor([0, 700, 1400], dtype=torch.int32, device="cuda")
        out = fa.flash_attn_varlen_func(q.reshape(600, HQ, D), k.reshape(1400, HKV, D),
                                        v.reshape(1400, HKV, D), cu, cuk, 300, 700,
                                        causal=True)
        expect(torch, q, k, v, out.reshape(2, 300, HQ, D), causal="bottom_right")
    c.run("flash_attn_varlen_func (device cu_seqlens)", varlen)

    def paged():
        lens = torch.tensor([700, 129], dtype=torch.int32)
        kk, vv = rand(torch, 2, 768, HKV, D), rand(torch, 2, 768, HKV, D)
        pk, pv, bt = paged_pool(torch, kk, vv)
        q1 = q[:, :1]
        out, lse = fa.flash_attn_with_kvcache(q1, pk, pv, cache_seqlens=lens, block_table=bt,
                                              causal=True, return_softmax_lse=True)
        for b, n in enumerate(lens.tolist()):
            expect(torch, q1[b:b + 1], kk[b:b + 1, :n], vv[b:b + 1, :n], out[b:b + 1],
                   lse[b:b + 1], causal="bottom_right")
    c.run("flash_attn_with_kvcache paged", paged)

    def sdpa():
        qs, ks, vs = (t.transpose(1, 2) for t in (q[:, :, :HKV], k, v))
        out = fa.scaled_dot_product_attention(qs, ks, vs, is_causal=True)
        expect(torch, q[:, :, :HKV], k, v, out.transpose(1, 2), causal="top_left")
    c.run("scaled_dot_product_attention top-left", sdpa)
    bad_inputs(torch, fa, c, q, k, v)


def bad_inputs(torch, fa, c, q, k, v):
    def raises(exc, text, call):
        try:
            call()
        except exc as e:
            assert text in str(e), str(e)
            return str(e)
        raise AssertionError("no %s" % exc.__name__)
    c.run("bad: k on the CPU", lambda: raises(ValueError, "must be on cuda", lambda:
          fa.flash_attn_func(q, k.cpu(), v)))
    c.run("bad: float32 on CUDA", lambda: raises(ValueError, "float16 or bfloat16", lambda:
          fa.flash_attn_func(q.float(), k.float(), v.float())))
    c.run("bad: head_dim 96", lambda: raises(NotImplementedError, "head_dim 96", lambda:
          fa.flash_attn_func(q[..., :96], k[..., :96], v[..., :96])))
    c.run("bad: last dim strided", lambda: raises(ValueError, "contiguous last", lambda:
          fa.flash_attn_func(q[..., ::2], k, v)))
    c.run("bad: alibi on sm90", lambda: raises(NotImplementedError, "alibi_slopes", lambda:
          fa.flash_attn_func(q, k, v, alibi_slopes=torch.ones(HQ, device="cuda"))))
    c.run("bad: dropout", lambda: raises(ValueError, "dropout_p", lambda:
          fa.flash_attn_func(q, k, v, dropout_p=0.1)))
    c.run("bad: cache miss names it", lambda: raises(fa.FlashAttnError, "FA_ERROR_CACHE_MISS",
          lambda: fa.flash_attn_func(q, k, v, softcap=5.0)))


def paged_pool(torch, k, v, extra=0):
    """k / v [B, S, H, D] (S a multiple of PAGE) as a shuffled pool of pages
    with extra free pages per sequence, and its block_table [B, S / PAGE + extra]."""
    b, s, h, d = k.shape
    per = s // PAGE + extra
    n = b * per
    order = torch.randperm(n, device="cuda")
    pk = torch.zeros(n, PAGE, h, d, dtype=k.dtype, device="cuda")
    pv = torch.zeros_like(pk)
    bt = order.reshape(b, per).to(torch.int32)
    for i in range(b):
        pages = bt[i, :s // PAGE].long()
        pk[pages] = k[i].reshape(-1, PAGE, h, d)
        pv[pages] = v[i].reshape(-1, PAGE, h, d)
    return pk, pv, bt


def framework(torch, fa, c):
    """opcheck, torch.compile(fullgraph=True), a CUDA graph."""
    from flashattn_mlir import _ops
    q, k, v = rand(torch, 1, 128, HQ, D), rand(torch, 1, 128, HKV, D), rand(torch, 1, 128, HKV, D)
    c.run("opcheck attention", lambda: str(torch.library.opcheck(
        _ops._fwd_op, (q, k, v, None, None, None, None, None, None, "bottom_right", -1, -1, 0.0,
                       1, -1, False))))
    kc, vc = rand(torch, 2, 256, HKV, D), rand(torch, 2, 256, HKV, D)
    pk, pv, bt = paged_pool(torch, kc, vc)
    lens = torch.tensor([100, 3], dtype=torch.int32)
    q1, kn, vn = rand(torch, 2, 1, HQ, D), rand(torch, 2, 1, HKV, D), rand(torch, 2, 1, HKV, D)
    c.run("opcheck attention_append", lambda: str(torch.library.opcheck(
        _ops._append_op, (q1, pk, pv, kn, vn, lens, bt, None, None, "bottom_right", -1, -1, 0.0,
                          0, -1, False))))

    def compiled():
        def attn(q, k, v):
            return fa.flash_attn_func(q, k, v, causal=True) * 2
        eager = attn(q, k, v)
        out = torch.compile(attn, fullgraph=True)(q, k, v)
        assert torch.equal(out, eager), (out - eager).abs().max()
    c.run("torch.compile fullgraph", compiled)

    def compiled_decode():
        # The model's decode attention: the append into the paged cache
        # (a mutating op) under fullgraph, against the same step eager.
        ours = OursAttention(torch, fa, 2, 256)
        ours.lens += 100
        q1, kn, vn = rand(torch, 2, 1, HQ, D), rand(torch, 2, 1, HKV, D), rand(torch, 2, 1, HKV, D)
        eager = ours(0, q1, kn, vn)
        out = torch.compile(lambda q, k, v: ours(0, q, k, v), fullgraph=True)(q1, kn, vn)
        assert torch.equal(out, eager), (out - eager).abs().max()
    c.run("torch.compile fullgraph: the model's decode attention", compiled_decode)

    def graph():
        qd, kd, vd = rand(torch, 4, 1, HQ, D), rand(torch, 4, 4096, HKV, D), rand(torch, 4, 4096,
                                                                               HKV, D)
        step = lambda: fa.flash_attn_with_kvcache(qd, kd, vd)  # noqa: E731
        eager = step().clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            step()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = step()
        qd.copy_(rand(torch, 4, 1, HQ, D))
        g.replay()
        torch.cuda.synchronize()
        fresh = step()
        assert torch.equal(out, fresh), "replay differs from an eager call on the new q"
        assert not torch.equal(out, eager)
        expect(torch, qd, kd, vd, out)
    c.run("CUDA graph dense decode", graph)

class Decoder:
    """A Llama-style decoder (RMSNorm, RoPE, GQA attention, SwiGLU MLP) with
    random weights; `attend` is the attention implementation."""

    def __init__(self, torch, dtype, seed=0, vocab=8192, ffn=14336):
        g = torch.Generator(device="cuda").manual_seed(seed)
        w = lambda *s: (torch.randn(*s, device="cuda", generator=g) * 0.02).to(dtype)  # noqa
        self.torch, self.dtype = torch, dtype
        self.embed = w(vocab, HIDDEN)
        self.layers = [dict(qkv=w(HIDDEN, (HQ + 2 * HKV) * D), o=w(HQ * D, HIDDEN),
                            up=w(HIDDEN, 2 * ffn), down=w(ffn, HIDDEN)) for _ in range(LAYERS)]
        self.head = w(HIDDEN, vocab)

    def to(self, dtype):
        other = Decoder.__new__(Decoder)
        other.torch, other.dtype = self.torch, dtype
        other.embed, other.head = self.embed.to(dtype), self.head.to(dtype)
        other.layers = [{n: t.to(dtype) for n, t in l.items()} for l in self.layers]
        return other

    def rope(self, x, pos):
        torch = self.torch
        half = D // 2
        freq = 500000.0 ** (-torch.arange(half, device="cuda", dtype=torch.float32) / half)
        ang = pos[:, :, None].float() * freq
        cos, sin = ang.cos()[:, :, None], ang.sin()[:, :, None]
        x1, x2 = x[..., :half].float(), x[..., half:].float()
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).to(x.dtype)

    def norm(self, x):
        xf = x.float()
        return (xf * self.torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype)

    def forward(self, tokens, pos, attend):
        """tokens, pos [B, S] -> logits [B, S, vocab] (float32)."""
        torch = self.torch
        x = self.embed[tokens]
        b, s = tokens.shape
        for i, l in enumerate(self.layers):
            qkv = self.norm(x) @ l["qkv"]
            q, k, v = qkv.split([HQ * D, HKV * D, HKV * D], -1)
            q = self.rope(q.reshape(b, s, HQ, D), pos)
            k = self.rope(k.reshape(b, s, HKV, D), pos)
            a = attend(i, q, k, v.reshape(b, s, HKV, D))
            x = x + a.reshape(b, s, HQ * D) @ l["o"]
            gate, up = (self.norm(x) @ l["up"]).chunk(2, -1)
            x = x + (torch.nn.functional.silu(gate) * up) @ l["down"]
        return (self.norm(x) @ self.head).float()


class OursAttention:
    """Prefill with flash_attn_func, decode with flash_attn_with_kvcache
    appending to a paged cache (shuffled pages)."""

    def __init__(self, torch, fa, batch, capacity):
        self.torch, self.fa = torch, fa
        per = capacity // PAGE
        self.bt = torch.randperm(batch * per, device="cuda").reshape(batch, per).to(torch.int32)
        shape = (batch * per, PAGE, HKV, D)
        self.k = [torch.zeros(shape, dtype=torch.bfloat16, device="cuda") for _ in range(LAYERS)]
        self.v = [torch.zeros_like(t) for t in self.k]
        self.lens = torch.zeros(batch, dtype=torch.int32)

    def __call__(self, layer, q, k, v):
        if q.shape[1] > 1:  # prefill: attend, then fill the pages
            out = self.fa.flash_attn_func(q, k, v, causal=True)
            pages = self.bt[:, :q.shape[1] // PAGE].reshape(-1).long()
            self.k[layer][pages] = k.reshape(-1, PAGE, HKV, D)
            self.v[layer][pages] = v.reshape(-1, PAGE, HKV, D)
            return out
        return self.fa.flash_attn_with_kvcache(q, self.k[layer], self.v[layer], k, v,
                                               cache_seqlens=self.lens, block_table=self.bt,
                                               causal=True)


class SdpaAttention:
    """SDPA over a dense cache [B, Hkv, S, D] (prefill causal; a decode query
    sees every cached key)."""

    def __init__(self, torch, batch, capacity, dtype):
        self.torch = torch
        self.k = [torch.zeros(batch, HKV, capacity, D, dtype=dtype, device="cuda")
                  for _ in range(LAYERS)]
        self.v = [torch.zeros_like(t) for t in self.k]
        self.n = 0

    def __call__(self, layer, q, k, v):
        s = q.shape[1]
        self.k[layer][:, :, self.n:self.n + s] = k.transpose(1, 2)
        self.v[layer][:, :, self.n:self.n + s] = v.transpose(1, 2)
        kk, vv = self.k[layer][:, :, :self.n + s], self.v[layer][:, :, :self.n + s]
        out = self.torch.nn.functional.scaled_dot_product_attention(
            q.transpose(1, 2), kk, vv, is_causal=s > 1, enable_gqa=True)
        return out.transpose(1, 2)

def generate(torch, model, attend, tokens, advance):
    """Prefill tokens[:, :PROMPT], then STEPS teacher-forced steps: the
    logits of each position that predicts a next token, [STEPS + 1]."""
    b = tokens.shape[0]
    pos = torch.arange(PROMPT + STEPS, device="cuda")[None].expand(b, -1)
    logits = [model.forward(tokens[:, :PROMPT], pos[:, :PROMPT], attend)[:, -1]]
    advance(PROMPT)
    for t in range(PROMPT, PROMPT + STEPS):
        logits.append(model.forward(tokens[:, t:t + 1], pos[:, t:t + 1], attend)[:, -1])
        advance(1)
    return logits


def model_check(torch, fa, c, numbers):
    """Ours vs SDPA bf16 vs float32 at every step, FlashAttention's rule on
    the logits: max|ours - f32| <= 2 max|sdpa - f32| + 2 max|bf16(f32) - f32|."""
    model = Decoder(torch, torch.bfloat16)
    tokens = torch.randint(0, 8192, (BATCH, PROMPT + STEPS), device="cuda")
    cap = PROMPT + STEPS + PAGE
    ours = OursAttention(torch, fa, BATCH, cap)

    def adv_ours(n):
        ours.lens += n
    got = generate(torch, model, ours, tokens, adv_ours)
    ref_runs = {}
    for name, m, dtype in (("sdpa", model, torch.bfloat16),
                           ("f32", model.to(torch.float32), torch.float32)):
        att = SdpaAttention(torch, BATCH, cap, dtype)

        def adv(n, att=att):
            att.n += n
        ref_runs[name] = generate(torch, m, att, tokens, adv)
    worst = 0.0
    for step, (o, s, f) in enumerate(zip(got, ref_runs["sdpa"], ref_runs["f32"])):
        err, base = (o - f).abs().max().item(), (s - f).abs().max().item()
        atol = 2 * (f.bfloat16().float() - f).abs().max().item()
        assert not torch.isnan(o).any(), "NaN at step %d" % step
        assert err <= 2 * base + atol, "step %d: |ours - f32| %.4g > 2 x %.4g + %.4g" % (
            step, err, base, atol)
        worst = max(worst, err / (2 * base + atol))
    numbers["model_worst_error_over_bound"] = worst
    return "%d steps, worst error / bound %.3f" % (len(got), worst)


def op_ran(torch, fa, c):
    """The profiler sees our kernels run: one per layer in a decode step."""
    model = Decoder(torch, torch.bfloat16)
    ours = OursAttention(torch, fa, 1, PROMPT + PAGE)
    tok = torch.zeros(1, 1, dtype=torch.long, device="cuda")
    pos = torch.zeros(1, 1, dtype=torch.long, device="cuda")
    ours.lens += 1
    model.forward(tok, pos, ours)  # warm: the first launch loads the module
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        model.forward(tok, pos, ours)
        torch.cuda.synchronize()
    names = [e.key for e in prof.key_averages() if e.key.startswith("fa_sm90")]
    n = sum(e.count for e in prof.key_averages() if e.key.startswith("fa_sm90"))
    assert n >= LAYERS, "profiler saw %d launches of our kernels (%s)" % (n, names)
    return "%d launches of %s" % (n, sorted(set(names)))

def timed(torch, fn, reps=5):
    """Median seconds of fn() over reps runs (after one warm-up)."""
    fn()
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def throughput(torch, fa, numbers, batch=8, prompt=2048, steps=32):
    """Prefill and decode tokens/s of the whole model (eager PyTorch), ours
    (paged cache) and SDPA's cuDNN backend (dense cache), interleaved runs,
    medians of 3 rounds."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    model = Decoder(torch, torch.bfloat16)
    tokens = torch.randint(0, 8192, (batch, prompt + steps), device="cuda")
    pos = torch.arange(prompt + steps, device="cuda")[None].expand(batch, -1)
    cap = prompt + steps + PAGE

    def run(kind, decode):
        att = (OursAttention(torch, fa, batch, cap) if kind == "ours"
               else SdpaAttention(torch, batch, cap, torch.bfloat16))
        model.forward(tokens[:, :prompt], pos[:, :prompt], att)
        if not decode:
            return
        for t in range(prompt, prompt + steps):
            if kind == "ours":
                att.lens += 1 if t > prompt else prompt
            else:
                att.n = t
            model.forward(tokens[:, t:t + 1], pos[:, t:t + 1], att)

    res = {}
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        for kind in ("ours", "cudnn") * 3:
            pre = timed(torch, lambda: run(kind, False), reps=3)
            full = timed(torch, lambda: run(kind, True), reps=1)
            res.setdefault(kind, []).append((pre, (full - pre) / steps))
    for kind, runs in res.items():
        pre = sorted(r[0] for r in runs)[1]
        step = sorted(r[1] for r in runs)[1]
        numbers["%s_prefill_tokens_per_s" % kind] = batch * prompt / pre
        numbers["%s_decode_tokens_per_s" % kind] = batch / step
    numbers["throughput_shape"] = "batch %d, prompt %d, %d decode steps, %d layers" % (
        batch, prompt, steps, LAYERS)
    return {k: round(v) for k, v in numbers.items() if k.endswith("per_s")}


def host_overhead(torch, fa, numbers):
    """Host time per call from Python behind a GPU spin: ours
    (flash_attn_func) and SDPA (cuDNN), one decode token over 4k keys."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q, k, v = rand(torch, 1, 1, HQ, D), rand(torch, 1, 4096, HKV, D), rand(torch, 1, 4096, HKV, D)
    qs, ks, vs = q.transpose(1, 2).contiguous(), k.transpose(1, 2).contiguous(), \
        v.transpose(1, 2).contiguous()
    from flashattn_mlir import _ops
    calls = {"ours": lambda: fa.flash_attn_func(q, k, v),
             "ours_custom_op": lambda: _ops._fwd_op(q, k, v, None, None, None, None, None, None,
                                                    "none", -1, -1, 0.0, 1, -1, False),
             "cudnn": lambda: torch.nn.functional.scaled_dot_product_attention(
                 qs, ks, vs, enable_gqa=True)}
    rounds = {name: [] for name in calls}
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        for call in calls.values():
            call()
        for _ in range(9):  # interleaved rounds
            for name, call in calls.items():
                torch.cuda.synchronize()
                torch.cuda._sleep(50_000_000)
                t0 = time.perf_counter()
                for _ in range(12):
                    call()
                rounds[name].append((time.perf_counter() - t0) / 12)
        torch.cuda.synchronize()
    out = {name: sorted(r)[4] * 1e6 for name, r in rounds.items()}
    numbers["host_us_per_call"] = out
    return "us per call: " + ", ".join("%s %.1f" % kv for kv in out.items())

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--print-configs", action="store_true")
    a = ap.parse_args()
    if a.print_configs:
        print(json.dumps(CONFIGS, indent=1))
        return 0
    import torch
    import flashattn_mlir as fa
    c = Checks()
    c.numbers["torch"] = torch.__version__
    functions(torch, fa, c)
    framework(torch, fa, c)
    c.run("model: logits at every step", lambda: model_check(torch, fa, c, c.numbers))
    c.run("model: our op ran", lambda: op_ran(torch, fa, c))
    c.run("model: tokens/s", lambda: throughput(torch, fa, c.numbers))
    c.run("host overhead", lambda: host_overhead(torch, fa, c.numbers))
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "torch_package.json"), "w") as f:
        json.dump({"checks": c.checks, "numbers": c.numbers}, f, indent=1)
    failed = [n for n, r in c.checks.items() if not r["passed"]]
    print("torch package: %s" % ("all passed" if not failed else "FAILED: " + ", ".join(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    sys.exit(main())
