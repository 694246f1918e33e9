"""A deployment's flow without the compiler: record the configurations a
workload asks for, precompile them into a cache directory, then run from
that cache with compilation off (the H200 machine's case)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

WORKLOAD = textwrap.dedent("""
    import sys, torch, flashattn_mlir as fa
    q = torch.randn(1, 16, 4, 64).bfloat16()
    k = torch.randn(1, 16, 2, 64).bfloat16()
    out = fa.flash_attn_func(q, k, k, causal=True)
    out, lse = fa.flash_attn_with_kvcache(q, k, k, cache_seqlens=9, return_softmax_lse=True)
    if len(sys.argv) > 1:  # a configuration nobody precompiled
        fa.flash_attn_func(q, k, k, softcap=3.0)
    print("ran")
""")


def run(args, env, **kw):
    full = dict(os.environ, **env)
    return subprocess.run([sys.executable] + args, env=full, capture_output=True, text=True,
                          **kw)


def test_record_precompile_run_without_compiler(tmp_path):
    recorded, cache = tmp_path / "configs.jsonl", tmp_path / "cache"
    scratch = tmp_path / "scratch"
    # 1. Record (with any cache: here a scratch one).
    r = run(["-c", WORKLOAD], {"FLASHATTN_RECORD_CONFIGS": str(recorded),
                               "FLASHATTN_CACHE_DIR": str(scratch)})
    assert r.returncode == 0, r.stderr
    configs = [json.loads(line) for line in recorded.read_text().splitlines()]
    assert len(configs) == 2 and {c["causal"] for c in configs} == {"bottom_right", "none"}
    assert any("with_lse" in c["flags"] and "seqused_k" in c["flags"] for c in configs)
    # 2. Precompile into the deployment's cache; a second run compiles nothing.
    cmd = ["-m", "flashattn_mlir", "precompile", "--cache-dir", str(cache), str(recorded)]
    r = run(cmd, {})
    assert r.returncode == 0 and "2 configurations: 2 compiled" in r.stdout, r.stderr
    r = run(cmd, {})
    assert "0 compiled, 2 already cached" in r.stdout, r.stdout + r.stderr
    # 3. Run with compilation off: every kernel from the cache ...
    off = {"FLASHATTN_CACHE_DIR": str(cache), "FLASHATTN_COMPILER_LIB": ""}
    r = run(["-c", WORKLOAD], off)
    assert r.returncode == 0 and "ran" in r.stdout, r.stderr
    # ... and a configuration that was not precompiled is a clear miss.
    r = run(["-c", WORKLOAD, "miss"], off)
    assert r.returncode != 0 and "FA_ERROR_CACHE_MISS" in r.stderr, r.stderr


def test_precompile_rejects_bad_configurations(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"target": "host", "head_dim": 64, "num_splits": 999}]))
    r = run(["-m", "flashattn_mlir", "precompile", "--cache-dir", str(tmp_path / "c"), str(bad)],
            {})
    assert r.returncode != 0 and "invalid configuration" in r.stderr, r.stderr
    with pytest.raises(ValueError, match="invalid configuration"):
        from flashattn_mlir import precompile
        precompile([{"target": "host", "num_q_heads": 3, "num_kv_heads": 2}], str(tmp_path))
