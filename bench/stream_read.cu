// The decode benchmark's streaming-read floor (benchmark code, not in the
// product's path): a kernel that reads K and V exactly as a decode kernel
// must, and computes nothing. Its time is what any attention kernel over
// the same tensors, on the same GPU, in the same conditions (the bench's L2
// flush) can at best approach; bench/sm90_bench.py --decode reports ours and
// cuDNN beside it.
//
// Tensors: k and v [batch, keys, kv_heads, head_dim], 2-byte elements
// (bf16 / f16), contiguous (FlashAttention's layout), head_dim a multiple
// of 8 and at most 256. Key blocks of 128 keys (the decode kernels'
// block_n) land through TMA (cuTensorMapEncodeTiled, a 128-key x 1-head x
// head_dim box, no swizzle; PTX ISA 9.7.9.27 cp.async.bulk.tensor) into two
// shared-memory stages of K + V per CTA, completed on mbarriers (PTX ISA
// 9.7.13.15); a stage is refilled as soon as it lands.
//
// Two schedules:
//   static (dynamic = 0): the decode kernels' work units, (batch, kv head,
//     split) for `splits` splits of the key blocks, unit u to CTA u mod
//     grid (grid = min(units, sms)): what our kernel and cuDNN's run.
//   dynamic (dynamic = 1): `sms` CTAs take single key blocks from an atomic
//     counter, block i = (unit i mod (batch x kv_heads), key block i div
//     (batch x kv_heads)): the balanced ideal, which an attention kernel
//     could reach only by merging partial results of every block.
//
// Build (test/gpu/prepare.sh): nvcc -arch=sm_90a -shared -lcuda.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

namespace {

struct Args {
  int units;        // static: batch x kv_heads x splits; dynamic: batch x kv_heads
  int splits;       // static
  int blocks;       // key blocks per (batch, kv head): ceil(keys / 128)
  int kv_heads;
  int keys;
  int dynamic;
  uint32_t stage_bytes;  // K + V of one key block (TMA counts the whole box)
  unsigned long long *counter;
  unsigned long long base;  // dynamic: the counter's value at this launch
};

constexpr int kBlockN = 128;

__device__ __forceinline__ void wait_parity(uint32_t bar, uint32_t parity) {
  asm volatile("{\n .reg .pred p;\n WAIT%=:\n"
               " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               " @!p bra WAIT%=;\n}" ::"r"(bar), "r"(parity) : "memory");
}

__global__ void __launch_bounds__(32)
    stream_read(Args a, const __grid_constant__ CUtensorMap tk, const __grid_constant__ CUtensorMap tv) {
  extern __shared__ __align__(1024) char smem[];
  __shared__ __align__(8) uint64_t full[2];
  const int lane = threadIdx.x, G = gridDim.x, c = blockIdx.x;
  if (lane == 0) {
    for (int s = 0; s < 2; ++s)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(
          (uint32_t)__cvta_generic_to_shared(&full[s])));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncwarp();
  if (lane != 0)
    return;
  const long long total = (long long)a.units * (a.dynamic ? a.blocks : 1);
  // Static: the current unit and its block range [j, end).
  long long u = c;
  int j = 0, end = 0;
  auto range = [&]() {
    int s = (int)(u % a.splits);
    j = (int)((long long)s * a.blocks / a.splits);
    end = (int)((long long)(s + 1) * a.blocks / a.splits);
  };
  if (!a.dynamic && u < a.units)
    range();
  unsigned long long claim = a.dynamic ? atomicAdd(a.counter, 1ull) : 0;
  // The next key block as (batch x kv_heads index, block), false past the end.
  auto next = [&](int &bh, int &blk) -> bool {
    if (a.dynamic) {
      long long i = (long long)(claim - a.base);
      claim = atomicAdd(a.counter, 1ull);
      if (i >= total)
        return false;
      bh = (int)(i % a.units);
      blk = (int)(i / a.units);
      return true;
    }
    while (u < a.units && j >= end) {
      u += G;
      if (u < a.units)
        range();
    }
    if (u >= a.units)
      return false;
    bh = (int)(u / a.splits);
    blk = j++;
    return true;
  };
  auto issue = [&](int bh, int blk, int s) {
    uint32_t bar = (uint32_t)__cvta_generic_to_shared(&full[s]);
    uint32_t dst = (uint32_t)__cvta_generic_to_shared(smem + (size_t)s * a.stage_bytes);
    int h = bh % a.kv_heads, row = (bh / a.kv_heads) * a.keys + blk * kBlockN;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar),
                 "r"(a.stage_bytes) : "memory");
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst),
                 "l"(&tk), "r"(0), "r"(h), "r"(row), "r"(bar) : "memory");
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst + a.stage_bytes / 2),
                 "l"(&tv), "r"(0), "r"(h), "r"(row), "r"(bar) : "memory");
  };
  bool live[2] = {false, false};
  for (int s = 0; s < 2; ++s) {
    int bh, blk;
    if (next(bh, blk)) {
      issue(bh, blk, s);
      live[s] = true;
    }
  }
  uint32_t phase = 0;
  for (int s = 0; live[0] || live[1]; s ^= 1) {
    if (!live[s])
      continue;
    wait_parity((uint32_t)__cvta_generic_to_shared(&full[s]), (phase >> s) & 1);
    phase ^= 1u << s;
    int bh, blk;
    if (next(bh, blk))
      issue(bh, blk, s);
    else
      live[s] = false;
  }
}

int encode(CUtensorMap *m, const void *base, int batch, int keys, int kv_heads, int head_dim) {
  cuuint64_t dims[3] = {(cuuint64_t)head_dim, (cuuint64_t)kv_heads, (cuuint64_t)batch * keys};
  cuuint64_t strides[2] = {(cuuint64_t)head_dim * 2, (cuuint64_t)kv_heads * head_dim * 2};
  cuuint32_t box[3] = {(cuuint32_t)head_dim, 1, kBlockN}, elem[3] = {1, 1, 1};
  return (int)cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, (void *)base, dims,
                                     strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                     CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

}  // namespace

// Launches one streaming read of k and v on `stream` (a CUstream). `counter`
// is a device u64 that the caller zeroes once and never again; `*base`
// carries its value from launch to launch (updated here), so that a launch
// needs no memset. Returns 0, or a CUresult + 1000 from the tensor-map
// encoding, or a cudaError_t from the launch.
extern "C" int fa_bench_stream_read(const void *k, const void *v, int batch, int keys,
                                    int kv_heads, int head_dim, int splits, int dynamic, int sms,
                                    void *counter, unsigned long long *base, void *stream) {
  if (head_dim % 8 != 0 || head_dim > 256 || splits < 1 || batch < 1 || keys < 1)
    return (int)cudaErrorInvalidValue;
  CUtensorMap tk, tv;
  memset(&tk, 0, sizeof tk);
  memset(&tv, 0, sizeof tv);
  int r = encode(&tk, k, batch, keys, kv_heads, head_dim);
  if (r == 0)
    r = encode(&tv, v, batch, keys, kv_heads, head_dim);
  if (r != 0)
    return 1000 + r;
  Args a;
  a.blocks = (keys + kBlockN - 1) / kBlockN;
  a.splits = dynamic ? 1 : splits;
  a.units = batch * kv_heads * a.splits;
  a.kv_heads = kv_heads;
  a.keys = keys;
  a.dynamic = dynamic;
  a.stage_bytes = 2u * kBlockN * head_dim * 2u;
  a.counter = (unsigned long long *)counter;
  a.base = *base;
  int grid = dynamic ? sms : (a.units < sms ? a.units : sms);
  if (dynamic)  // every CTA claims once at start and once per next()
    *base += (unsigned long long)a.units * a.blocks + 3ull * grid;
  int bytes = 2 * (int)a.stage_bytes;
  cudaError_t e =
      cudaFuncSetAttribute(stream_read, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess)
    return (int)e;
  stream_read<<<grid, 32, bytes, (cudaStream_t)stream>>>(a, tk, tv);
  return (int)cudaGetLastError();
}
