/*===- cuda_staging.h - host-to-device copies of the CUDA backend --*- C -*-===*/

#ifndef FLASHATTN_RT_CUDA_STAGING_H
#define FLASHATTN_RT_CUDA_STAGING_H

#include "cuda_driver.h"

#include <stddef.h>
#include <stdint.h>

/* The largest piece of a host-to-device copy from pageable memory
 * (fa_cuda_copy_pageable: captured copies, and eager ones where pinned
 * staging is unavailable): copies up to this size return once staged. */
#define FA_PAGEABLE_COPY_BYTES ((size_t)65536)
/* Page-locked staging blocks for eager host-to-device copies on HMM/ATS
 * devices (fa_cuda_staged_copy): at most this many, each at least 16 KB,
 * made when none is idle; a call waits for a block only when this many
 * copies are in flight. */
#define FA_PINNED_BLOCKS 32

/* A block of page-locked memory, with the event recorded after the copy
 * that last read it. */
typedef struct fa_pinned_block {
  void *host;
  size_t cap;
  void *done;   /* CUevent */
  bool pending; /* `done` recorded and maybe not reached */
} fa_pinned_block;

typedef struct fa_staging {
  /* Eager host-to-device copies go through pinned blocks: the device reads
   * pageable host memory coherently (HMM, ATS:
   * CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS), or
   * FLASHATTN_PINNED_STAGING says so (cuda_context.c). */
  int pinned;
  fa_pinned_block block[FA_PINNED_BLOCKS];
  int num, next; /* blocks made; the next to try */
} fa_staging;

/* A host-to-device copy from pageable memory on `stream`, in pieces of at
 * most FA_PAGEABLE_COPY_BYTES. */
CUresult fa_cuda_copy_pageable(const fa_cuda *cu, uint64_t dst, const void *src,
                               size_t bytes, void *stream) FA_HIDDEN;

/* A host-to-device copy outside stream capture, after which the caller may
 * free or change `src` at once. */
CUresult fa_cuda_staged_copy(fa_cuda *cu, uint64_t dst, const void *src, size_t bytes,
                             void *stream) FA_HIDDEN;

/* At release, in the runtime's context: the pinned blocks, once their
 * copies are done. */
void fa_cuda_staging_release(fa_cuda *cu) FA_HIDDEN;

#endif
