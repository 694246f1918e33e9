/*===- cuda_tma.h - tensor maps (TMA descriptors) of a launch ------*- C -*-===*/

#ifndef FLASHATTN_RT_CUDA_TMA_H
#define FLASHATTN_RT_CUDA_TMA_H

#include "cuda_driver.h"

/* A kernel argument: fa_tensor plus rank 5 (split-KV partial out). */
typedef struct fa_cu_tensor {
  void *data;
  int32_t rank;
  int64_t shape[5];
} fa_cu_tensor;

static inline fa_cu_tensor fa_cu_tensor_of(const fa_tensor *t) {
  fa_cu_tensor c = {t->data, t->rank, {0}};
  for (int i = 0; i < t->rank && i < 4; ++i)
    c.shape[i] = t->shape[i];
  return c;
}

/* A CUtensorMap: 128 bytes, 64-byte aligned. */
typedef struct fa_cu_tensor_map {
  _Alignas(64) unsigned char bytes[128];
} fa_cu_tensor_map;

/* Encodes tensor map `m` of kernel `k` for tensor `t` into `map` with
 * cuTensorMapEncodeTiled. fa_tma_check (internal.h) checked the call's
 * tensors first. */
fa_status fa_cuda_encode_map(fa_runtime *rt, const fa_cuda *cu, const fa_kernel *k,
                             const fa_tma_desc *m, const fa_cu_tensor *t,
                             fa_cu_tensor_map *map) FA_HIDDEN;

#endif
