/*===- cuda_variant.h - which kernels a launch runs, and how wide --*- C -*-===*/

#ifndef FLASHATTN_RT_CUDA_VARIANT_H
#define FLASHATTN_RT_CUDA_VARIANT_H

#include "cuda_driver.h"

/* The kernels of an artifact a call runs: the artifact's own, or those of
 * a twin pair of entries (automatic pack_gqa: the packed kernels; several
 * kv heads per key block: the one-head kernels), seen through a view of the
 * kernel with the twins' functions, tensor maps and tile sizes. Both views
 * may apply (the one-head view then of the packed one). */
typedef struct fa_variant {
  fa_kernel packed, kv1;
} fa_variant;

/* The kernel a call with queries `q` (NULL: none) and metadata `call` on a
 * device of `sms` SMs launches: `k`, or a view in `views`. */
fa_kernel *fa_cuda_choose_variant(fa_kernel *k, const fa_tensor *q,
                                  const fa_attention_args *call, int64_t sms,
                                  fa_variant *views) FA_HIDDEN;

/* Tiles per split of a launch: one per tile table entry and head when the
 * launch has a table (`entries` of them), else from the dense shapes of q
 * and k, as the kernel counts them (0 when unknown). */
int64_t fa_cuda_launch_tiles(const fa_kernel *k, bool table, int64_t entries,
                             const fa_tensor *q, const fa_tensor *keys) FA_HIDDEN;

/* The split count of a split-KV launch with `tiles` tiles per split: the
 * artifact's num_splits, or with auto_splits FlashAttention's heuristic
 * (fa_num_splits_for) over the key blocks of the longest sequence: from the
 * tile table (`entries` of it) when there is one, else k's dense shape. */
int64_t fa_cuda_split_count(const fa_kernel *k, const int32_t *table, int64_t entries,
                            const fa_tensor *keys, int64_t tiles, unsigned sms) FA_HIDDEN;

#endif
