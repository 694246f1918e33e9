// Probe (test-only CUDA C, not product code): how fast can ANY kernel read
// batch 16 / 8k's K and V (2 x 268 MB, [16, 8192, 8, 128] bf16) on this
// H200? A pure streaming read through 1-D bulk copies (cp.async.bulk, PTX
// ISA 9.7.9.25) into shared memory, completed on mbarriers (PTX ISA 9.7.13.15),
// nothing computed. Work units are (batch, kv head) as in the decode
// kernels; an item is `blk` keys of K and V (rows of 256 B).
//   mode 0: static, CTA c reads whole units c, c + grid, ... (ours' shape)
//   mode 1: dynamic items from an atomic counter (item i: unit i % units,
//           key block i / units), no merge needed since nothing is computed
//   mode 2: static, equal contiguous shares of the unit-major item list
#include <cuda_runtime.h>
#include <stdint.h>
#include <cuda.h>
#include <string.h>

struct Work {
  const char *k, *v;
  long long outer;      // bytes between units of consecutive batch index
  long long inner;      // bytes between heads of one batch index
  long long row_stride; // bytes between consecutive keys of a unit
  long long base;       // mode 1: counter value at this launch's start
  unsigned long long *counter;
  long long *stamps;    // [grid][3]: smid, start, end (globaltimer, ns)
  int heads, units, rows, blk, mode, stages;
  int kind; // 0: 256 B bulk copies per key; 1: one 1-D bulk copy per item (contiguous units); 2: tensor maps (one box per item)
  int hkv, keys; // kind 2: the dense [B, keys, hkv, 128] layout
  int threads, smem_extra; // launch shape: threads per CTA (warp 0 works), extra dynamic smem
};

__device__ __forceinline__ uint64_t gtime() {
  uint64_t t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t phase) {
  asm volatile("{\n .reg .pred p;\n WAIT%=:\n"
               " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               " @!p bra WAIT%=;\n}" :: "r"(bar), "r"(phase) : "memory");
}

extern "C" __global__ void __launch_bounds__(384) stream_probe(Work w, const __grid_constant__ CUtensorMap tk, const __grid_constant__ CUtensorMap tv) {
  extern __shared__ __align__(1024) char smem[];
  __shared__ __align__(8) uint64_t full[4];
  if (threadIdx.x >= 32) return;
  const int lane = threadIdx.x;
  const int G = gridDim.x, c = blockIdx.x;
  const uint32_t stage_bytes = 2u * w.blk * 256u;
  if (lane == 0) {
    for (int s = 0; s < w.stages; ++s)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"((uint32_t)__cvta_generic_to_shared(&full[s])));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncwarp();
  uint64_t t0 = gtime();
  const long long ipu = w.rows / w.blk;
  const long long total = (long long)w.units * ipu;
  long long p = 0, pend = 0;
  long long lo = 0, hi = 0;
  if (w.mode == 2) { lo = c * total / G; hi = (c + 1) * total / G; }
  long long n0 = w.mode == 0 ? (c < w.units ? ((w.units - 1 - c) / G + 1) * ipu : 0) : 0;
  unsigned long long claim = 0;
  if (w.mode == 1 && lane == 0) claim = atomicAdd(w.counter, 1ull);
  // The next item (unit-major index u * ipu + j), or -1.
  auto next = [&]() -> long long {
    if (w.mode == 0) {
      if (p >= n0) return -1;
      long long u = c + (p / ipu) * G, j = p % ipu; ++p;
      return u * ipu + j;
    }
    if (w.mode == 2) { return lo + p < hi ? lo + p++ : -1; }
    long long i = (long long)__shfl_sync(0xffffffffu, claim, 0) - w.base;
    if (lane == 0) claim = atomicAdd(w.counter, 1ull);
    if (i >= total) return -1;
    return (i % w.units) * ipu + i / w.units;
  };
  auto issue = [&](long long item, int s) {
    long long u = item / ipu, j = item % ipu;
    long long off = (u / w.heads) * w.outer + (u % w.heads) * w.inner + j * w.blk * w.row_stride;
    uint32_t bar = (uint32_t)__cvta_generic_to_shared(&full[s]);
    uint32_t dst = (uint32_t)__cvta_generic_to_shared(smem + (size_t)s * stage_bytes);
    if (lane == 0)
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(stage_bytes) : "memory");
    __syncwarp();
    if (w.kind == 1) {
      if (lane == 0) {
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(dst), "l"(w.k + off), "r"(w.blk * 256), "r"(bar) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(dst + w.blk * 256u), "l"(w.v + off), "r"(w.blk * 256), "r"(bar) : "memory");
      }
      return;
    }
    if (w.kind == 3) {  // ours' boxes: 128B swizzle, two 64-element halves per tensor
      if (lane == 0) {
        int h = (int)(u % w.hkv), row = (int)((u / w.hkv) * w.keys + j * w.blk);
        for (int half = 0; half < 2; ++half) {
          asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                       :: "r"(dst + half * w.blk * 128u), "l"(&tk), "r"(half * 64), "r"(h), "r"(row), "r"(bar) : "memory");
          asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                       :: "r"(dst + w.blk * 256u + half * w.blk * 128u), "l"(&tv), "r"(half * 64), "r"(h), "r"(row), "r"(bar) : "memory");
        }
      }
      return;
    }
    if (w.kind == 2) {
      if (lane == 0) {
        int h = (int)(u % w.hkv), row = (int)((u / w.hkv) * w.keys + j * w.blk);
        asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                     :: "r"(dst), "l"(&tk), "r"(0), "r"(h), "r"(row), "r"(bar) : "memory");
        asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                     :: "r"(dst + w.blk * 256u), "l"(&tv), "r"(0), "r"(h), "r"(row), "r"(bar) : "memory");
      }
      return;
    }
    for (int r = lane; r < w.blk; r += 32) {
      const char *gk = w.k + off + r * w.row_stride, *gv = w.v + off + r * w.row_stride;
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 256, [%2];"
                   :: "r"(dst + r * 256u), "l"(gk), "r"(bar) : "memory");
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 256, [%2];"
                   :: "r"(dst + (w.blk + r) * 256u), "l"(gv), "r"(bar) : "memory");
    }
  };
  bool live[4] = {false, false, false, false};
  uint32_t phase = 0;
  int nlive = 0;
  for (int s = 0; s < w.stages; ++s) {
    long long it = next();
    if (it >= 0) { issue(it, s); live[s] = true; ++nlive; }
  }
  for (int s = 0; nlive > 0; s = (s + 1) % w.stages) {
    if (!live[s]) continue;
    mbar_wait((uint32_t)__cvta_generic_to_shared(&full[s]), (phase >> s) & 1);
    phase ^= 1u << s;
    long long it = next();
    if (it >= 0) issue(it, s); else { live[s] = false; --nlive; }
  }
  if (lane == 0) {
    unsigned smid; asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    w.stamps[c * 3 + 0] = smid; w.stamps[c * 3 + 1] = (long long)t0; w.stamps[c * 3 + 2] = (long long)gtime();
  }
}

static int encode(CUtensorMap *m, const void *base, const Work *w) {
  cuuint64_t dims[3] = {128, (cuuint64_t)w->hkv, (cuuint64_t)w->units / w->hkv * w->keys};
  cuuint64_t strides[2] = {256, (cuuint64_t)w->hkv * 256};
  cuuint32_t box[3] = {w->kind == 3 ? 64u : 128u, 1, (cuuint32_t)w->blk}, es[3] = {1, 1, 1};
  return (int)cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, (void *)base, dims, strides, box, es,
                                     CU_TENSOR_MAP_INTERLEAVE_NONE, w->kind == 3 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                                     CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

extern "C" int probe_launch(const Work *w, int grid, void *stream) {
  int smem = w->stages * 2 * w->blk * 256 + w->smem_extra;
  CUtensorMap tk, tv;
  memset(&tk, 0, sizeof tk); memset(&tv, 0, sizeof tv);
  if (w->kind >= 2) {
    int r = encode(&tk, w->k, w);
    if (r) return 1000 + r;
    r = encode(&tv, w->v, w);
    if (r) return 1000 + r;
  }
  cudaError_t e = cudaFuncSetAttribute(stream_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return (int)e;
  stream_probe<<<grid, w->threads, smem, (cudaStream_t)stream>>>(*w, tk, tv);
  return (int)cudaGetLastError();
}

// A one-thread kernel that writes %globaltimer to out[i]: brackets a launch
// on the same stream (its start after the previous kernel's end).
extern "C" __global__ void marker(long long *out, int i) { out[i] = (long long)gtime(); }
extern "C" int probe_marker(long long *out, int i, void *stream) {
  marker<<<1, 1, 0, (cudaStream_t)stream>>>(out, i);
  return (int)cudaGetLastError();
}

// Mode "hold V" (static units, tensor maps): K and V of a stage on their own
// mbarriers; K(g + 2) is issued when K(g) lands, V(g + 1) only when K(g)
// lands (ours releases V(g - 1) after P V(g - 1), issued with S(g)).
extern "C" __global__ void __launch_bounds__(32) stream_hold_v(Work w, const __grid_constant__ CUtensorMap tk, const __grid_constant__ CUtensorMap tv) {
  extern __shared__ __align__(1024) char smem[];
  __shared__ __align__(8) uint64_t fk[2], fv[2];
  const int lane = threadIdx.x;
  if (lane != 0) return;
  const uint32_t half = w.blk * 256u;
  for (int s = 0; s < 2; ++s) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"((uint32_t)__cvta_generic_to_shared(&fk[s])));
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"((uint32_t)__cvta_generic_to_shared(&fv[s])));
  }
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  const int ipu = w.rows / w.blk;
  for (int u = blockIdx.x; u < w.units; u += gridDim.x) {
    int h = u % w.hkv, row0 = (u / w.hkv) * w.keys;
    auto issue = [&](const CUtensorMap *m, uint64_t *bars, int g, uint32_t off) {
      int s = g & 1;
      uint32_t bar = (uint32_t)__cvta_generic_to_shared(&bars[s]);
      uint32_t dst = (uint32_t)__cvta_generic_to_shared(smem + off + s * 2 * half);
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(half) : "memory");
      asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                   :: "r"(dst), "l"(m), "r"(0), "r"(h), "r"(row0 + g * w.blk), "r"(bar) : "memory");
    };
    // (one unit per CTA at 16 / 8k: parities start at 0)
    issue(&tk, fk, 0, 0); issue(&tv, fv, 0, half);
    if (ipu > 1) { issue(&tk, fk, 1, 0); issue(&tv, fv, 1, half); }
    for (int g = 0; g < ipu; ++g) {
      mbar_wait((uint32_t)__cvta_generic_to_shared(&fk[g & 1]), (g >> 1) & 1);
      if (g + 2 < ipu) issue(&tk, fk, g + 2, 0);
      if (g >= 1 && g + 1 < ipu) issue(&tv, fv, g + 1, half);
      mbar_wait((uint32_t)__cvta_generic_to_shared(&fv[g & 1]), (g >> 1) & 1);
    }
    unsigned smid; asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    w.stamps[blockIdx.x * 3 + 0] = smid; w.stamps[blockIdx.x * 3 + 2] = (long long)gtime();
  }
}
extern "C" int probe_launch_hold_v(const Work *w, int grid, void *stream) {
  int smem = 2 * 2 * w->blk * 256;
  CUtensorMap tk, tv;
  memset(&tk, 0, sizeof tk); memset(&tv, 0, sizeof tv);
  int r = encode(&tk, w->k, w); if (r) return 1000 + r;
  r = encode(&tv, w->v, w); if (r) return 1000 + r;
  cudaError_t e = cudaFuncSetAttribute(stream_hold_v, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return (int)e;
  stream_hold_v<<<grid, 32, smem, (cudaStream_t)stream>>>(*w, tk, tv);
  return (int)cudaGetLastError();
}
