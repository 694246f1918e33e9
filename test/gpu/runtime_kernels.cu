// Test kernels for the runtime's CUDA backend (not product code): they take the
// parameters test_runtime_launch.py's "abi" lists (one pointer per argument, then
// the int64 dims of each argument, then one CUtensorMap per "tma" param) so that
// test_runtime_launch.py can check loading, launching on a stream and the
// tensor-map encoding on a real driver. Built with nvcc on the GPU machine.
#include <cuda.h>
#include <cuda/barrier>
#include <cstdint>

using barrier = cuda::barrier<cuda::thread_scope_block>;
namespace cde = cuda::device::experimental;

// out = q, element by element, over a persistent grid.
extern "C" __global__ void fa_test_copy(const uint16_t *q, const uint16_t *k,
                                        const uint16_t *v, uint16_t *out,
                                        long long q0, long long q1, long long q2,
                                        long long q3, long long k0, long long k1,
                                        long long k2, long long k3, long long v0,
                                        long long v1, long long v2, long long v3,
                                        long long o0, long long o1, long long o2,
                                        long long o3) {
  long long n = q0 * q1 * q2 * q3;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    out[i] = q[i];
}

// Block 0 loads the box (d 0..63, h 0, s 0..7, b 0) of q through the tensor
// map the runtime encoded (TMA, cp.async.bulk.tensor.4d, PTX ISA 9.7.9.25)
// and writes it to the same place in out; other blocks do nothing.
extern "C" __global__ void fa_test_tma(const uint16_t *q, const uint16_t *k,
                                       const uint16_t *v, uint16_t *out,
                                       long long q0, long long q1, long long q2,
                                       long long q3, long long k0, long long k1,
                                       long long k2, long long k3, long long v0,
                                       long long v1, long long v2, long long v3,
                                       long long o0, long long o1, long long o2,
                                       long long o3,
                                       const __grid_constant__ CUtensorMap qmap) {
  __shared__ alignas(128) uint16_t tile[8 * 64];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ barrier bar;
  if (blockIdx.x != 0)
    return;
  if (threadIdx.x == 0) {
    init(&bar, blockDim.x);
    cde::fence_proxy_async_shared_cta();
  }
  __syncthreads();
  barrier::arrival_token token;
  if (threadIdx.x == 0) {
    cde::cp_async_bulk_tensor_4d_global_to_shared(tile, &qmap, 0, 0, 0, 0, bar);
    token = cuda::device::barrier_arrive_tx(bar, 1, sizeof(tile));
  } else {
    token = bar.arrive();
  }
  bar.wait(std::move(token));
  for (int i = threadIdx.x; i < 8 * 64; i += blockDim.x) {
    int s = i / 64, d = i % 64;
    out[(s * q2 + 0) * q3 + d] = tile[i];
  }
}
