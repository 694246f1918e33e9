import sys, os, json, statistics as st
sys.path.insert(0, "test/gpu"); sys.path.insert(0, "bench")
import torch
from test_sm90_attention import open_runtime
out_dir = sys.argv[1]; os.makedirs(out_dir, exist_ok=True)
configs = [a.split("=") for a in sys.argv[2:]]  # name=lib:dir
flush = torch.empty(64 << 20, dtype=torch.float32, device="cuda")
res = {}
rts = {}
hq, hkv, d = 32, 8, 128
shapes = ((16, 8192), (1, 131072))
data = {s: (torch.randn(s[0], s[1], hkv, d, device="cuda", dtype=torch.bfloat16),
            torch.randn(s[0], s[1], hkv, d, device="cuda", dtype=torch.bfloat16)) for s in shapes}
for name, spec in configs:
    libp, adir = spec.split(":")
    lib, rt, stream, kernel, run = open_runtime(libp, adir)
    kern = kernel(d, "bf16", "bottom_right", hq, hkv, None, 0, 0, None, True)
    for (b, sk) in shapes:
        k, v = data[(b, sk)]
        runs = []
        for it in range(5):
            q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16)
            out = torch.empty_like(q); lse = torch.empty(b, hq, 1, device="cuda")
            k.view(torch.int64).flatten()[: 8192 * 8].zero_()
            flush.fill_(it); torch.cuda.synchronize()
            e0 = torch.cuda.Event(enable_timing=True); e1 = torch.cuda.Event(enable_timing=True)
            e0.record(); run(kern, q, k, v, out, lse, deadline=0); e1.record(); torch.cuda.synchronize()
            ev = e0.elapsed_time(e1) * 1e3
            s = k.view(torch.int64).flatten()[: 8192 * 8].view(8192, 8).cpu().tolist()
            units = [u for u in s if u[2] != 0]
            t0 = min(u[0] for u in units)
            rel = [[(x - t0) / 1e3 if i != 7 else x for i, x in enumerate(u)] for u in units]
            runs.append({"event_us": ev, "units": rel})
        res["%s %dx%d" % (name, b, sk)] = runs
        # summary over runs 1..4
        ends, bub_q, bub_k, epi, merge, k0, span = [], [], [], [], [], [], []
        for r in runs[1:]:
            bycta = {}
            for u in r["units"]:
                bycta.setdefault(u[7] // 1024, []).append(u)
            cend = []
            for c, us in bycta.items():
                us.sort(key=lambda u: u[2])
                cend.append(us[-1][5])
                k0.append(us[0][3])
                for a, b_ in zip(us, us[1:]):
                    bub_q.append(b_[2] - a[5]); bub_k.append(b_[3] - a[5])
                for u in us:
                    epi.append(u[6] - u[4]); merge.append(u[5] - u[6])
            ends.append((min(cend), st.median(cend), max(cend)))
        f = lambda xs: "%.2f/%.2f/%.2f" % (min(xs), st.median(xs), max(xs)) if xs else "-"
        print("%s b%d/%d: event %s units %d ctas %d | cta end min/med/max %s | first k0 %s | q_in-prev_end %s | k0_in-prev_end %s | epilogue %s | merge %s" % (
            name, b, sk, [round(r["event_us"], 1) for r in runs], len(runs[-1]["units"]),
            len({u[7] // 1024 for u in runs[-1]["units"]}),
            [tuple(round(x, 1) for x in e) for e in ends], f(k0), f(bub_q), f(bub_k), f(epi), f(merge)), flush=True)
    lib.fa_runtime_destroy(rt)
json.dump(res, open(os.path.join(out_dir, "stamps2.json"), "w"))
