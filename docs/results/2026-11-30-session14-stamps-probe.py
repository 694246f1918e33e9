# Per-CTA timelines at decode batch 16 / 8k: ours (artifact built with the
# experimental FA_EXP_STAMPS: globaltimer at kernel entry, K_0 landed, before
# and after the epilogue, tile end; written into k's first bytes) against
# the streaming-read floor (probe_floor.so, static schedule: entry and end).
# One launch after each L2 flush (write or read), 5 launches per flush mode.
import ctypes, json, os, sys, torch
sys.path.insert(0, "test/gpu"); sys.path.insert(0, "bench")
import sm90_bench as B
from test_sm90_attention import open_runtime
L, A, S = sys.argv[1], sys.argv[2], sys.argv[3]
lib, rt, stream, kernel, run = open_runtime(L, A)
_, _, _, skernel, srun = open_runtime(L, S, stream)
P = ctypes.CDLL("build/gpu-carry/exp/probe_floor.so")
class Work(ctypes.Structure):
    _fields_ = [("k", ctypes.c_void_p), ("v", ctypes.c_void_p), ("outer", ctypes.c_longlong),
                ("inner", ctypes.c_longlong), ("row_stride", ctypes.c_longlong),
                ("base", ctypes.c_longlong), ("counter", ctypes.c_void_p), ("stamps", ctypes.c_void_p),
                ("heads", ctypes.c_int), ("units", ctypes.c_int), ("rows", ctypes.c_int),
                ("blk", ctypes.c_int), ("mode", ctypes.c_int), ("stages", ctypes.c_int),
                ("kind", ctypes.c_int), ("hkv", ctypes.c_int), ("keys", ctypes.c_int),
                ("threads", ctypes.c_int), ("smem_extra", ctypes.c_int)]
hq, hkv, d = 32, 8, 128
b, sk = (int(x) for x in os.environ.get("SHAPE", "16x8192").split("x"))
SPLITS = int(os.environ.get("SPLITS", "1"))
F = ctypes.CDLL("build/gpu-carry/libfa_stream_read.so")
fbase = ctypes.c_ulonglong(0)
torch.manual_seed(0)
q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16)
k = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
v = torch.randn_like(k)
out = torch.empty_like(q); lse = torch.empty(b, hq, 1, device="cuda")
kd = kernel(d, "bf16", "bottom_right", hq, hkv, None, 0, 0, None, True)
ks = skernel(d, "bf16", "bottom_right", hq, hkv, None, 0, 0, None, True)
stamps = torch.zeros(132 * 3, dtype=torch.int64, device="cuda")
counter = torch.zeros(1, dtype=torch.int64, device="cuda")
def floor():
    if SPLITS > 1:   # the bench's floor (no stamps): (b, kv head, split) units
        r = F.fa_bench_stream_read(ctypes.c_void_p(k.data_ptr()), ctypes.c_void_p(v.data_ptr()), b, sk, hkv, d, SPLITS, 0, 132,
                                   ctypes.c_void_p(counter.data_ptr()), ctypes.byref(fbase), ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        assert r == 0, r
        stamps.zero_()
        return
    w = Work(k.data_ptr(), v.data_ptr(), sk * hkv * 256, 256, hkv * 256, 0, counter.data_ptr(), stamps.data_ptr(),
             hkv, b * hkv, sk, 128, 0, 2, 2, hkv, sk, 32, 0)
    assert P.probe_launch(ctypes.byref(w), b * hkv, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)) == 0
kb = k.view(torch.int64)
B.REPEATS = 21
res = {"timing": {}, "ours": {}, "floor": {}}
for fl in ("write", "read"):
    os.environ["FA_BENCH_FLUSH"] = fl
    med = B.median_times({"ours": lambda: run(kd, q, k, v, out, lse, deadline=0),
                          "ours_stamped": lambda: srun(ks, q, k, v, out, lse, deadline=0),
                          "floor": floor}, stream)
    res["timing"][fl] = {n: m * 1e3 for n, m in med.items()}
    print(fl, {n: round(m * 1e3, 1) for n, m in med.items()}, flush=True)
buf = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
marks = torch.zeros(2, dtype=torch.int64, device="cuda")
def mark(i):
    assert P.probe_marker(ctypes.c_void_p(marks.data_ptr()), i, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)) == 0
for fl in ("write", "read"):
    res["ours"][fl] = []; res["floor"][fl] = []
    for rep in range(7):
        for who in ("ours", "floor"):
            with torch.cuda.stream(stream):
                if fl == "write": buf.zero_()
                else: torch.amax(buf, 0)
                torch.cuda._sleep(2_000_000)
                st, en = torch.cuda.Event(True), torch.cuda.Event(True)
                mark(0)
                st.record()
                if who == "ours": srun(ks, q, k, v, out, lse, deadline=0)
                else: floor()
                en.record()
                mark(1)
            torch.cuda.synchronize()
            ms = st.elapsed_time(en)
            m0, m1 = marks.cpu().tolist()
            if who == "ours":
                s = kb.flatten()[: b * hkv * SPLITS * 8].view(-1, 8).cpu()
                t0 = int(s[:, 0].min()); tend = int(s[:, 5].max())
                rel = lambda c: sorted(((s[:, c] - t0).double() / 1e3).tolist())
                pts = {"entry": rel(0), "k0": rel(3), "pre_epi": rel(4), "post_epi": rel(6), "end": rel(5)}
                pts["merge"] = sorted(((s[:, 5] - s[:, 6]).double() / 1e3).tolist())
            elif SPLITS > 1:
                res[who][fl].append({"us": ms * 1e3, "gaps": {"mark0_to_mark1": (m1 - m0) / 1e3}})
                print("%s %-5s %6.1f us  mark0_to_mark1 %.2f" % (fl, who, ms * 1e3, (m1 - m0) / 1e3), flush=True)
                continue
            else:
                s = stamps.view(-1, 3)[: b * hkv].cpu()
                t0 = int(s[:, 1].min()); tend = int(s[:, 2].max())
                pts = {"entry": sorted(((s[:, 1] - t0).double() / 1e3).tolist()),
                       "end": sorted(((s[:, 2] - t0).double() / 1e3).tolist())}
            gaps = {"mark0_to_entry": (t0 - m0) / 1e3, "end_to_mark1": (m1 - tend) / 1e3, "mark0_to_mark1": (m1 - m0) / 1e3}
            res[who][fl].append({"us": ms * 1e3, "pts": pts, "gaps": gaps})
            print("%s %-5s %6.1f us  " % (fl, who, ms * 1e3) + " ".join("%s %.2f" % kv for kv in gaps.items()) + "  " + "  ".join(
                "%s %.1f/%.1f/%.1f" % (n, x[0], x[len(x) // 2], x[-1]) for n, x in pts.items()), flush=True)
json.dump(res, open(os.path.join(os.environ.get("OUT", "."), "stamps-%dx%d.json" % (b, sk)), "w"))
