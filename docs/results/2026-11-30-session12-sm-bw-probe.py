# Per-SM streaming read under full load, and whether WHICH 4 SMs sit idle
# matters when 128 of 132 SMs each read one 4 MB chunk (the decode shape of
# batch 16 / 8k: 128 units on 132 SMs). One CTA per SM (large dynamic smem);
# a CTA on an SM of the `idle` mask returns at once; the others take chunks
# from an atomic counter. Records each CTA's SM and end time (globaltimer).
import os, sys, json, torch
from torch.utils.cpp_extension import load_inline
src = r'''
#include <torch/extension.h>
#include <cuda_runtime.h>
__device__ unsigned long long gtime() { unsigned long long t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }
__global__ void __launch_bounds__(512) readk(const int4* __restrict__ src, long long chunk16, int chunks,
    const int* idle, int* counter, long long* out, int* sink) {
  extern __shared__ int smem[];
  unsigned smid; asm volatile("mov.u32 %0, %smid;" : "=r"(smid));
  __shared__ int work;
  if (idle[smid]) { if (threadIdx.x == 0) { out[blockIdx.x * 4 + 0] = smid; out[blockIdx.x * 4 + 1] = -1; } return; }
  unsigned long long t0 = gtime();
  if (threadIdx.x == 0) work = atomicAdd(counter, 1);
  __syncthreads();
  int w = work;
  int4 acc = make_int4(0, 0, 0, 0);
  if (w < chunks) {
    const int4* p = src + (long long)w * chunk16;
    for (long long i = threadIdx.x; i < chunk16; i += blockDim.x * 16) {
      int4 v[16];
      #pragma unroll
      for (int u = 0; u < 16; ++u) { long long j = i + (long long)u * blockDim.x; v[u] = j < chunk16 ? __ldcs(p + j) : make_int4(0,0,0,0); }
      #pragma unroll
      for (int u = 0; u < 16; ++u) { acc.x ^= v[u].x; acc.y ^= v[u].y; acc.z ^= v[u].z; acc.w ^= v[u].w; }
    }
  }
  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x12345678) sink[0] = 1;
  __syncthreads();
  if (threadIdx.x == 0) { out[blockIdx.x * 4 + 0] = smid; out[blockIdx.x * 4 + 1] = w; out[blockIdx.x * 4 + 2] = t0; out[blockIdx.x * 4 + 3] = gtime(); }
}
void run(torch::Tensor src, long long chunk16, int chunks, torch::Tensor idle, torch::Tensor counter, torch::Tensor out, torch::Tensor sink, int grid) {
  int smem = 200 * 1024;
  cudaFuncSetAttribute(readk, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  readk<<<grid, 512, smem>>>((const int4*)src.data_ptr(), chunk16, chunks, idle.data_ptr<int>(), counter.data_ptr<int>(), (long long*)out.data_ptr(), sink.data_ptr<int>());
}
'''
m = load_inline("smbw16", cpp_sources="void run(torch::Tensor, long long, int, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, int);",
                cuda_sources=src, functions=["run"], extra_cuda_cflags=["-O3", "-gencode=arch=compute_90a,code=sm_90a"], verbose=False)
sms = torch.cuda.get_device_properties(0).multi_processor_count
chunk = 4 << 20
chunks = 128
src_t = torch.empty(max(chunks, sms) * chunk // 4 + 1024, dtype=torch.int32, device="cuda").random_()
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
sink = torch.zeros(1, dtype=torch.int32, device="cuda")
def launch(idle_set, grid=sms, nchunks=chunks):
    idle = torch.zeros(1024, dtype=torch.int32, device="cuda")
    for s in idle_set: idle[s] = 1
    counter = torch.zeros(1, dtype=torch.int32, device="cuda")
    out = torch.zeros(grid * 4, dtype=torch.int64, device="cuda")
    flush.zero_(); torch.cuda._sleep(2_000_000)
    st, en = torch.cuda.Event(True), torch.cuda.Event(True)
    st.record(); m.run(src_t, chunk // 16, nchunks, idle, counter, out, sink, grid); en.record()
    torch.cuda.synchronize()
    o = out.view(grid, 4).cpu().tolist()
    t0 = min(r[2] for r in o if r[1] >= 0 and r[1] < nchunks)
    ends = {int(r[0]): (r[3] - t0) / 1000.0 for r in o if r[1] >= 0 and r[1] < nchunks}
    return st.elapsed_time(en) * 1000.0, ends
res = {"sms": sms}
# 1) calibration: 132 chunks, every SM busy; per-SM end, 5 launches.
per = {}
for rep in range(5):
    _, ends = launch([], sms, sms)
    for s, e in ends.items(): per.setdefault(s, []).append(e)
med = {s: sorted(v)[len(v) // 2] for s, v in per.items()}
order = sorted(med, key=lambda s: med[s])
print("calib: ends %.1f..%.1f us; fastest %s; slowest %s" % (med[order[0]], med[order[-1]], order[:8], order[-8:]))
res["calib_median_end_us"] = med
# 2) 128 chunks with 4 idle SMs: none forced (the 4 last to arrive idle),
# the 4 fastest SMs idle, the 4 slowest idle, 4 spread; interleaved, 15 rounds.
sets = {"none": [], "fastest4": order[:4], "slowest4": order[-4:], "spread4": order[::33][:4]}
times = {k: [] for k in sets}
for rep in range(15):
    for k in (list(sets)[rep % 4:] + list(sets)[:rep % 4]):
        us, _ = launch(sets[k]); times[k].append(us)
for k, v in times.items():
    v.sort(); print("%-9s median %.1f us (min %.1f, max %.1f) idle %s" % (k, v[len(v) // 2], v[0], v[-1], sets[k]))
res["times_us"] = times; res["sets"] = sets
json.dump(res, open(os.path.join(os.environ.get("OUT", "."), "sm_bw.json"), "w"))
