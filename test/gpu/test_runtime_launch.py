#!/usr/bin/env python3
"""The runtime's CUDA backend on a real GPU (run on the H200, not in CI).

Builds the test kernels of runtime_kernels.cu with nvcc (sm_90a cubins),
wraps them into sm90 artifacts with fa_artifact_build, and drives
libflashattn_rt through ctypes with PyTorch tensors:
  1. fa_cuda_probe finds the driver and the SM count;
  2. a cubin artifact loads and launches on the caller's stream with the
     runtime's ABI (pointers, dims; persistent grid), out == q;
  3. a tensor map encoded by the runtime (cuTensorMapEncodeTiled) is used by
     a TMA load in the kernel: the box it brings is exactly q's;
  4. a misaligned tensor is rejected (FA_ERROR_BAD_INPUT) before any launch.
Every launch is bounded by a watchdog (the caller runs this under `timeout`;
each synchronize is polled with a deadline). Writes results.json to --out.
Exit 0 when every check passes.

Usage: test_runtime_launch.py --lib PATH/libflashattn_rt.so.1 --out DIR
"""

import argparse
import ctypes as C
import json
import os
import subprocess
import sys
import tempfile
import time

import torch

FA_OK, FA_ERROR_BAD_INPUT = 0, 3
FA_BF16, FA_TARGET_SM90, FA_ARTIFACT_CUBIN = 2, 1, 2


class Config(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("target", C.c_int), ("dtype", C.c_int),
                ("out_dtype", C.c_int), ("num_q_heads", C.c_int32),
                ("num_kv_heads", C.c_int32), ("head_dim", C.c_int32),
                ("head_dim_v", C.c_int32), ("flags", C.c_uint32),
                ("page_size", C.c_int32), ("causal", C.c_int),
                ("window_left", C.c_int32), ("window_right", C.c_int32),
                ("softcap", C.c_float), ("scale", C.c_float),
                ("num_splits", C.c_int32), ("pack_gqa", C.c_int32),
                ("regions", C.c_char_p)]


class Options(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("cache_dir", C.c_char_p),
                ("disable_disk_cache", C.c_int32), ("memory_entries", C.c_int32),
                ("compiler_library", C.c_char_p)]


class Tensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("rank", C.c_int32), ("shape", C.c_int64 * 4)]


ARG_NAMES = ["q", "k", "v", "out", "lse", "cu_seqlens_q", "cu_seqlens_k", "seqused_k",
             "block_table", "alibi_slopes", "k_new", "v_new", "cache_seqlens"]


class Args(C.Structure):
    _fields_ = [("struct_size", C.c_uint32)] + [(n, Tensor) for n in ARG_NAMES] + [
        ("stream", C.c_void_p)]


def tensor(t):
    x = Tensor()
    x.data = t.data_ptr()
    x.rank = t.dim()
    for i, s in enumerate(t.shape):
        x.shape[i] = s
    return x


def attention_args(q, k, v, out, lse, stream_handle, **meta):
    """fa_attention_args over torch tensors (lse may be None); meta: further
    fields by name (cu_seqlens_q, seqused_k, block_table, ...)."""
    args = Args()
    args.struct_size = C.sizeof(Args)
    args.q, args.k, args.v, args.out = tensor(q), tensor(k), tensor(v), tensor(out)
    if lse is not None:
        args.lse = tensor(lse)
    for name, t in meta.items():
        setattr(args, name, tensor(t))
    args.stream = stream_handle
    return args


def synchronize(deadline_s=30.0):
    """torch.cuda.synchronize with a deadline: a hung kernel fails the test."""
    ev = torch.cuda.Event()
    ev.record()
    end = time.time() + deadline_s
    while not ev.query():
        if time.time() > end:
            print("WATCHDOG: kernel did not finish in %.0f s" % deadline_s, flush=True)
            os._exit(3)
        time.sleep(0.001)


def report(results, out_dir, title):
    """Writes results ({name: {"passed": bool, ...}}) to out_dir/results.json,
    prints "<title>: all passed" or the failed names, and returns the exit
    status (1 when any failed)."""
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    failed = [n for n, r in results.items() if not r["passed"]]
    print("%s: %s" % (title, "all passed" if not failed else "FAILED: " + ", ".join(failed)),
          flush=True)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    rt_lib = C.CDLL(a.lib)
    rt_lib.fa_status_string.restype = C.c_char_p
    rt_lib.fa_runtime_last_error.restype = C.c_char_p
    rt_lib.fa_attention_config_default.restype = Config

    results, failures = {}, []

    def check(name, ok, detail=""):
        results[name] = {"ok": bool(ok), "detail": detail}
        print(("PASS " if ok else "FAIL ") + name + (": " + detail if detail else ""), flush=True)
        if not ok:
            failures.append(name)

    here = os.path.dirname(os.path.abspath(__file__))
    work = tempfile.mkdtemp()
    cubin = os.path.join(work, "kernels.cubin")
    t0 = time.time()
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90a", "-std=c++17", "-O2", "-o", cubin,
                    os.path.join(here, "runtime_kernels.cu")], check=True)
    print("nvcc: %.1f s" % (time.time() - t0), flush=True)
    payload = open(cubin, "rb").read()

    opts = Options(C.sizeof(Options), None, 1, 0, b"")
    rt = C.c_void_p()
    assert rt_lib.fa_runtime_create(C.byref(opts), C.byref(rt)) == FA_OK
    sms = C.c_int32(-1)
    st = rt_lib.fa_cuda_probe(rt, C.byref(sms))
    check("probe", st == FA_OK and sms.value > 0,
          "%s, %d SMs" % (rt_lib.fa_status_string(st).decode(), sms.value))

    cfg = rt_lib.fa_attention_config_default()
    cfg.target, cfg.dtype, cfg.out_dtype = FA_TARGET_SM90, FA_BF16, FA_BF16
    cfg.num_q_heads = cfg.num_kv_heads = 4
    cfg.head_dim = cfg.head_dim_v = 64

    def load(meta, cfg):
        b, n = C.c_void_p(), C.c_size_t()
        st = rt_lib.fa_artifact_build(C.byref(cfg), b"test", FA_ARTIFACT_CUBIN, meta.encode(),
                                      payload, len(payload), C.byref(b), C.byref(n))
        assert st == FA_OK, st
        k = C.c_void_p()
        st = rt_lib.fa_kernel_load_artifact(rt, b, n, C.byref(k))
        rt_lib.fa_artifact_free(b)
        return st, k

    def abi(entry, maps=()):
        """The "abi" of a test kernel: q, k, v, out pointers, their 4-D dims,
        then a tensor map per entry of `maps` (runtime_kernels.cu)."""
        names = ["q", "k", "v", "out"]
        params = [{"kind": "ptr", "arg": n} for n in names]
        params += [{"kind": "dims", "arg": n, "rank": 4} for n in names]
        params += [dict(m, kind="tma") for m in maps]
        return '"abi":' + json.dumps({entry: params})

    B, S, H, D = 2, 1000, 4, 64
    q = torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16)
    kv = torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16)
    stream = torch.cuda.Stream()

    def run(k, q, out):
        args = attention_args(q, kv, kv, out, None, stream.cuda_stream)
        stream.wait_stream(torch.cuda.current_stream())  # inputs made there
        with torch.cuda.stream(stream):
            st = rt_lib.fa_attention_run(rt, k, C.byref(args))
            synchronize()
        return st

    # 2. Launch through the runtime's ABI on our stream.
    st, k = load('{"entry":"fa_test_copy","args":["q","k","v","out"],"block":[256,1,1],'
                 '"grid":"persistent",' + abi("fa_test_copy") + '}', cfg)
    check("load_cubin", st == FA_OK, rt_lib.fa_runtime_last_error(rt).decode())
    out = torch.full_like(q, float("nan"))
    st = run(k, q, out)
    check("launch_copy", st == FA_OK and torch.equal(out, q),
          "%s %s" % (rt_lib.fa_status_string(st).decode(), rt_lib.fa_runtime_last_error(rt).decode()))

    # 3. A tensor map encoded by the runtime, read by TMA in the kernel.
    cfg.causal = 1  # another config (another key) for the second kernel
    st, k2 = load('{"entry":"fa_test_tma","args":["q","k","v","out"],"block":[128,1,1],' +
                  abi("fa_test_tma", [{"arg": "q", "box": [64, 1, 8, 1], "swizzle": 0}]) + '}',
                  cfg)
    check("load_tma_cubin", st == FA_OK, rt_lib.fa_runtime_last_error(rt).decode())
    out = torch.zeros_like(q)
    st = run(k2, q, out)
    box_ok = torch.equal(out[0, :8, 0, :], q[0, :8, 0, :])
    rest_zero = bool((out[0, 8:].float().abs().sum() == 0).item())
    check("tma_map", st == FA_OK and box_ok and rest_zero,
          "%s %s box=%s" % (rt_lib.fa_status_string(st).decode(),
                            rt_lib.fa_runtime_last_error(rt).decode(), box_ok))

    # 4. A tensor 2 bytes off 16-byte alignment: rejected before the launch.
    flat = torch.empty(B * S * H * D + 8, device="cuda", dtype=torch.bfloat16)
    qm = flat[1:1 + B * S * H * D].view(B, S, H, D)
    out = torch.zeros_like(q)
    st = run(k2, qm, out)
    check("tma_alignment_check", st == FA_ERROR_BAD_INPUT and out.abs().sum().item() == 0,
          rt_lib.fa_runtime_last_error(rt).decode())

    rt_lib.fa_runtime_destroy(rt)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "num_sms": sms.value,
                   "results": results}, f, indent=1)
    print("runtime launch test: %s" % ("FAILED " + ", ".join(failures) if failures else "all passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
