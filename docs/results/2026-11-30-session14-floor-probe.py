# Probe: the streaming-read floor at decode batch 16 / 8k (and 64 / 4k), in
# the bench's timing loop (sm90_bench.median_times: flush before each launch,
# turning order), beside ours and cuDNN. probe_floor.cu is the reader.
import ctypes, json, os, sys, torch
import torch.nn.functional as F
sys.path.insert(0, "test/gpu"); sys.path.insert(0, "bench")
import sm90_bench as B
from test_sm90_attention import open_runtime
from torch.nn.attention import SDPBackend, sdpa_kernel
B.REPEATS = int(os.environ.get("REPEATS", "21"))
L, A = sys.argv[1], sys.argv[2]
lib, rt, stream, kernel, run = open_runtime(L, A)
P = ctypes.CDLL("build/gpu-carry/exp/probe_floor.so")

class Work(ctypes.Structure):
    _fields_ = [("k", ctypes.c_void_p), ("v", ctypes.c_void_p), ("outer", ctypes.c_longlong),
                ("inner", ctypes.c_longlong), ("row_stride", ctypes.c_longlong),
                ("base", ctypes.c_longlong), ("counter", ctypes.c_void_p), ("stamps", ctypes.c_void_p),
                ("heads", ctypes.c_int), ("units", ctypes.c_int), ("rows", ctypes.c_int),
                ("blk", ctypes.c_int), ("mode", ctypes.c_int), ("stages", ctypes.c_int),
                ("kind", ctypes.c_int), ("hkv", ctypes.c_int), ("keys", ctypes.c_int),
                ("threads", ctypes.c_int), ("smem_extra", ctypes.c_int)]

counter = torch.zeros(1, dtype=torch.int64, device="cuda")
stamps = torch.zeros(264 * 3, dtype=torch.int64, device="cuda")
state = {"base": 0}
hq, hkv, d = 32, 8, 128
res = []
SHAPES = [tuple(int(x) for x in t.split("x")) for t in os.environ.get("SHAPES", "16x8192,64x4096").split(",")]
for b, sk in SHAPES:
    torch.manual_seed(0)
    q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    out = torch.empty_like(q); lse = torch.empty(b, hq, 1, device="cuda")
    kd = kernel(d, "bf16", "bottom_right", hq, hkv, None, 0, 0, None, True)
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    units = b * hkv

    def probe(mode, grid, stages, contiguous=False, blk=128, kind=2, threads=32, smem_extra=0):
        def f():
            if contiguous:   # unit u = 1/units of the bytes, in order
                w = Work(k.data_ptr(), v.data_ptr(), sk * 256, 0, 256, 0, 0, 0, 1, units, sk, blk, mode, stages)
            else:            # unit (b, h): keys at stride hkv * 256 B
                w = Work(k.data_ptr(), v.data_ptr(), sk * hkv * 256, 256, hkv * 256, 0, 0, 0, hkv, units, sk, blk, mode, stages)
            w.threads = threads; w.smem_extra = smem_extra; w.kind = kind; w.hkv = hkv; w.keys = sk; w.base = state["base"]; w.counter = counter.data_ptr(); w.stamps = stamps.data_ptr()
            if mode == 1:
                # the counter is never reset: each launch claims total + grid * (1 + stages)
                state["base"] += units * (sk // blk) + grid * (1 + stages)
            r = P.probe_launch(ctypes.byref(w), grid, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
            assert r == 0, r
        return f

    def cudnn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)
    g = min(units, 132)
    # Diagnostic: ours right after a tiny call of the same kernel (1 batch,
    # 128 keys), so that its code is in L2; "tiny" alone for subtraction.
    qs = torch.randn(1, 1, hq, d, device="cuda", dtype=torch.bfloat16)
    ks = torch.randn(1, 128, hkv, d, device="cuda", dtype=torch.bfloat16); vs = torch.randn_like(ks)
    os_ = torch.empty_like(qs); ls_ = torch.empty(1, hq, 1, device="cuda")
    def tiny():
        run(kd, qs, ks, vs, os_, ls_, deadline=0)
    def ours_warm():
        run(kd, qs, ks, vs, os_, ls_, deadline=0)
        run(kd, q, k, v, out, lse, deadline=0)
    fns = {"ours": lambda: run(kd, q, k, v, out, lse, deadline=0), "cudnn": cudnn,
           "tiny": tiny, "ours_warm": ours_warm,
           "tma_static_s2": probe(0, g, 2), "tma_dyn132_s2": probe(1, 132, 2),
           "tma_static_s2_384t": probe(0, g, 2, threads=384), "tma_static_s2_384t_192k": probe(0, g, 2, threads=384, smem_extra=64 << 10)}
    def hold_v():
        w = Work(k.data_ptr(), v.data_ptr(), sk * hkv * 256, 256, hkv * 256, 0, counter.data_ptr(), stamps.data_ptr(),
                 hkv, units, sk, 128, 0, 2, 2, hkv, sk, 32, 0)
        r = P.probe_launch_hold_v(ctypes.byref(w), g, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        assert r == 0, r
    fns["hold_v"] = hold_v
    fns["tma_static_s3"] = probe(0, g, 3)
    pst = fns["tma_static_s2"]
    def probe_warm():
        tiny()
        pst()
    fns["probe_warm"] = probe_warm
    nbytes = 2 * k.numel() * 2
    for flush in ("write", "read"):
        os.environ["FA_BENCH_FLUSH"] = flush
        med = B.median_times(fns, stream)
        o = med["ours"]
        print("%d/%d flush=%s" % (b, sk, flush), flush=True)
        for n_, m in med.items():
            print("  %-18s %7.1f us  %.2f TB/s  ours/x %.3f" % (n_, m * 1e3, nbytes / (m * 1e-3) / 1e12, o / m), flush=True)
        res.append({"batch": b, "keys": sk, "flush": flush, "us": {n_: m * 1e3 for n_, m in med.items()}})
    # The end spread of each probe mode (one launch after a write flush).
    spread = {}
    flushbuf = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for name, f in fns.items():
        if name in ("ours", "cudnn", "tiny", "ours_warm", "probe_warm", "hold_v"):
            continue
        stamps.zero_(); flushbuf.zero_(); f(); torch.cuda.synchronize()
        s = stamps.view(-1, 3).cpu()
        gr = 264 if "264" in name else 132 if "132" in name else g
        s = s[:gr]
        t0 = int(s[:, 1].min()); ends = sorted(((s[:, 2] - t0).double() / 1e3).tolist())
        spread[name] = {"end_min": ends[0], "end_median": ends[len(ends) // 2], "end_max": ends[-1]}
        print("  spread %-18s end min %.1f median %.1f max %.1f us" % (name, ends[0], ends[len(ends) // 2], ends[-1]), flush=True)
    res.append({"batch": b, "keys": sk, "spread": spread})
json.dump(res, open(os.path.join(os.environ.get("OUT", "."), "floor.json"), "w"), indent=1)
