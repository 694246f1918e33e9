"""Paged16 decode with pages scattered over the whole pool, within 2 MB
windows (64 pages of 32 KB), or in order: is the scatter's cost the TLB's?"""
import sys, torch, json, os
sys.path.insert(0, "test/gpu"); sys.path.insert(0, "bench")
from test_sm90_attention import open_runtime, pinned_i32
from sm90_bench import median_times
L = "build/gpu-carry/libflashattn_rt.so.1"
lib, rt, stream, kernel, run = open_runtime(L, "build/gpu-carry/sm90")
_, _, _, kv, rv = open_runtime(L, "build/gpu-carry/exp/bn64s4", stream)
torch.manual_seed(0)
rows = []
for b, sk in [(1, 131072), (16, 8192), (64, 4096)]:
    q = torch.randn(b, 1, 32, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, sk, 8, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    out = torch.empty_like(q); lse = torch.empty(b, 32, 1, device="cuda")
    used = pinned_i32([sk] * b)
    ps = 16; n = b * sk // ps
    fns = {}
    kd = kernel(128, "bf16", "bottom_right", 32, 8, None, 0, 0, None, True)
    fns["dense"] = lambda: run(kd, q, k, v, out, lse, deadline=0)
    kp16 = kernel(128, "bf16", "bottom_right", 32, 8, None, 0, 0, None, True, False, True, ps)
    kv16 = kv(128, "bf16", "bottom_right", 32, 8, None, 0, 0, None, True, False, True, ps)
    for name, win in [("global", n), ("win64", 64), ("win8", 8), ("seq", 1)]:
        perm = torch.cat([torch.randperm(min(win, n - s)) + s for s in range(0, n, win)]) if win > 1 else torch.arange(n)
        kp = k.reshape(n, ps, 8, 128)[perm.cuda()].contiguous()
        vp = v.reshape(n, ps, 8, 128)[perm.cuda()].contiguous()
        inv = torch.empty_like(perm); inv[perm] = torch.arange(n)
        bt = inv.reshape(b, sk // ps).to(torch.int32).cuda()
        fns[name] = (lambda kp=kp, vp=vp, bt=bt: run(kp16, q, kp, vp, out, lse, deadline=0, seqused_k=used, block_table=bt))
        fns["bn64s4_" + name] = (lambda kp=kp, vp=vp, bt=bt: rv(kv16, q, kp, vp, out, lse, deadline=0, seqused_k=used, block_table=bt))
    med = median_times(fns, stream)
    row = {"batch": b, "keys": sk, "us": {n_: t * 1e3 for n_, t in med.items()}}
    rows.append(row)
    print("b=%d sk=%d dense %.1f us  " % (b, sk, row["us"]["dense"]) + "  ".join("%s %.3f" % (n_, row["us"]["dense"] / t) for n_, t in row["us"].items() if n_ != "dense"), flush=True)
os.makedirs(sys.argv[1], exist_ok=True)
json.dump(rows, open(os.path.join(sys.argv[1], "scatter.json"), "w"), indent=1)
