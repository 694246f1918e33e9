#!/usr/bin/env python3
"""One runtime per device (run on a machine with 2 GPUs, e.g. 2 H200s).

A runtime drives the device whose context is current on the thread at its
first CUDA use (torch.cuda.set_device picks it). For devices 0 and 1 this
test creates a runtime with that device current, runs a pack_gqa decode
call (32 query / 8 kv heads, head_dim 128, bf16, 1024 keys, automatic
num_splits) on that device's tensors and checks out against a float64
reference (docs/SEMANTICS.md's tolerance rule); then it passes device
1's tensors to device 0's runtime, which must fail with
FA_ERROR_INVALID_ARGUMENT naming the devices, launching nothing (out stays
as it was), and checks that the calls left the thread's current device as
they found it; last, it destroys each runtime with the other device
current (its split-KV merge counters must be freed on its own device).
With fewer than 2 GPUs it prints a skip line and exits 0.

Usage: test_multi_device.py --lib LIBRT --artifacts DIR [--out DIR]
"""

import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_runtime_launch import report  # noqa: E402
from test_sm90_attention import open_runtime, script_args  # noqa: E402

D, HQ, HKV, SK = 128, 32, 8, 1024


def inputs(device, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    q = torch.randn(2, 1, HQ, D, generator=g).to(device, torch.bfloat16)
    k = torch.randn(2, SK, HKV, D, generator=g).to(device, torch.bfloat16)
    v = torch.randn(2, SK, HKV, D, generator=g).to(device, torch.bfloat16)
    return q, k, v


def reference(q, k, v):
    """float64 attention (one query at the last position: every key)."""
    qd, kd, vd = (x.double() for x in (q, k, v))
    kd = kd.repeat_interleave(HQ // HKV, dim=2)
    vd = vd.repeat_interleave(HQ // HKV, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", qd, kd) / D ** 0.5
    return torch.einsum("bhqk,bkhd->bqhd", s.softmax(-1), vd)


def main():
    a = script_args()
    if torch.cuda.device_count() < 2:
        print("multi-device test: skipped (%d GPU)" % torch.cuda.device_count())
        return 0
    results = {}
    runtimes = {}
    for dev in (0, 1):
        torch.cuda.set_device(dev)
        torch.zeros(1, device="cuda")  # the device's context is current now
        lib, rt, stream, kernel, run = open_runtime(a.lib, a.artifacts)
        runtimes[dev] = (lib, rt, kernel, run)
        q, k, v = inputs("cuda:%d" % dev, dev)
        out = torch.full_like(q, float("nan"))
        lse = torch.empty(2, HQ, 1, device=q.device)
        run(kernel(D, "bf16", "bottom_right", HQ, HKV, None, 0, 0, None, True), q, k, v, out, lse)
        ref = reference(q, k, v)
        atol = 2 * (ref.to(torch.bfloat16).double() - ref).abs().max().item()
        err = (out.double() - ref).abs().max().item()
        ok = out.device.index == dev and err <= atol + 1e-3 and torch.cuda.current_device() == dev
        results["device%d" % dev] = {"passed": ok, "max_err": err, "atol": atol + 1e-3}
        print("%s device%d: max |out - ref| %.3g (atol %.3g)" % ("PASS" if ok else "FAIL", dev,
                                                                 err, atol + 1e-3), flush=True)
    # Device 1's tensors through device 0's runtime: refused, nothing written.
    lib, rt, kernel, run = runtimes[0]
    torch.cuda.set_device(1)
    q, k, v = inputs("cuda:1", 1)
    out = torch.full_like(q, 7.0)
    lse = torch.empty(2, HQ, 1, device=q.device)
    try:
        run(kernel(D, "bf16", "bottom_right", HQ, HKV, None, 0, 0, None, True), q, k, v, out, lse)
        msg = None
    except RuntimeError as e:
        msg = str(e)
    torch.cuda.synchronize(1)
    ok = (msg is not None and "device 1" in msg and "device 0" in msg and
          bool((out == 7.0).all()) and torch.cuda.current_device() == 1)
    results["cross_device_refused"] = {"passed": ok, "message": msg}
    print("%s cross-device call refused: %s" % ("PASS" if ok else "FAIL", msg), flush=True)
    # Each runtime destroyed while the other device is current: it unloads
    # its modules and frees its split-KV merge counters in its own context
    # and leaves the thread's device as it was (the bytes its device got
    # back are reported, not checked: the driver's allocation granularity
    # hides a 16 KB array).
    for dev, other in ((0, 1), (1, 0)):
        torch.cuda.synchronize(dev)
        torch.cuda.set_device(other)
        free_before = torch.cuda.mem_get_info(dev)[0]
        lib, rt, _, _ = runtimes[dev]
        lib.fa_runtime_destroy(rt)
        free_after = torch.cuda.mem_get_info(dev)[0]
        ok = torch.cuda.current_device() == other
        results["destroy_runtime%d" % dev] = {"passed": ok,
                                              "freed_bytes": free_after - free_before}
        print("%s runtime of device %d destroyed with device %d current: %d bytes freed" % (
            "PASS" if ok else "FAIL", dev, other, free_after - free_before), flush=True)
    return report(results, a.out, "multi-device test")


if __name__ == "__main__":
    sys.exit(main())
