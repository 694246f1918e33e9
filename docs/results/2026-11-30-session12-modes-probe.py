# Dense decode through three kernels of the same cubin family, in one loop:
# the dense kernel (ours), the seqused_k (table-mode) kernel with full
# lengths, and the paged16 one-head twin over the same memory in order;
# cuDNN beside. 31 rounds, turning order, cold L2 (bench's median_times).
import sys, json, torch
import torch.nn.functional as F
sys.path.insert(0, "test/gpu"); sys.path.insert(0, "bench")
import sm90_bench as B
from test_sm90_attention import open_runtime, pinned_i32
from torch.nn.attention import SDPBackend, sdpa_kernel
B.REPEATS = 31
L = "build/gpu-carry/libflashattn_rt.so.1"
lib, rt, stream, kernel, run = open_runtime(L, "build/gpu-carry/sm90")
hq, hkv, d = 32, 8, 128
rows = []
for b, sk in [(16, 8192), (1, 131072), (32, 8192)]:
    torch.manual_seed(0)
    q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    out = torch.empty_like(q); lse = torch.empty(b, hq, 1, device="cuda")
    used = pinned_i32([sk] * b)
    kd = kernel(d, "bf16", "bottom_right", hq, hkv, None, 0, 0, None, True)
    ku = kernel(d, "bf16", "bottom_right", hq, hkv, None, 0, 0, None, True, False, True)
    kp = kernel(d, "bf16", "bottom_right", hq, hkv, None, 0, 0, None, True, False, True, 16)
    n = b * sk // 16
    bt = torch.arange(n, dtype=torch.int32, device="cuda").reshape(b, -1)
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    def cudnn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)
    fns = {"ours": lambda: run(kd, q, k, v, out, lse, deadline=0),
           "dense_u": lambda: run(ku, q, k, v, out, lse, deadline=0, seqused_k=used),
           "paged16_seq": lambda: run(kp, q, k.reshape(n, 16, hkv, d), v.reshape(n, 16, hkv, d), out, lse, deadline=0, seqused_k=used, block_table=bt),
           "cudnn": cudnn}
    med = B.median_times(fns, stream)
    o = med["ours"]
    print("%d/%d" % (b, sk), " ".join("%s %.1f us (ours/x %.3f)" % (n_, m * 1e3, o / m) for n_, m in med.items()), flush=True)
    rows.append({"batch": b, "keys": sk, "us": {n_: m * 1e3 for n_, m in med.items()}})
import os
json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "modes.json"), "w"), indent=1)
