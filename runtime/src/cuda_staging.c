/*===- cuda_staging.c - host-to-device copies of the CUDA backend ---------===*
 *
 * The tile tables and block_table mirrors go to the device with
 * cuMemcpyHtoDAsync, from pageable memory in pieces the driver stages
 * before it returns (fa_cuda_copy_pageable), or, on devices that read
 * pageable memory themselves (HMM, ATS), through page-locked blocks of the
 * runtime's (fa_cuda_staged_copy: cuMemHostAlloc, cuMemFreeHost,
 * cuEventCreate, cuEventRecord, cuEventQuery, cuEventSynchronize,
 * cuEventDestroy).
 *
 *===----------------------------------------------------------------------===*/

#include "cuda_context.h"

#include <string.h>

/* In pieces of at most FA_PAGEABLE_COPY_BYTES: the driver stages a
 * pageable copy that small and returns, while a larger one waits for the
 * stream's earlier work (measured on the H200: a 68 KB table, batch 128
 * over 16-key pages, made every call wait about 1 ms for the previous
 * kernels; docs/BENCHMARKS.md). Used for captured copies (which read the
 * source, kept for the graph, at every replay) and where pinned staging is
 * unavailable (fa_cuda_staged_copy's fallback). There, outside capture, the
 * source is taken to be consumed when this returns: the driver API's "API
 * synchronization behavior" section has a pageable host-to-device copy
 * staged (or the stream synchronized) before returning, which is what the
 * H200 machines here do, though a system whose copy engines read pageable
 * memory in place (HMM, ATS) may not. */
CUresult fa_cuda_copy_pageable(const fa_cuda *cu, uint64_t dst, const void *src,
                               size_t bytes, void *stream) {
  CUresult r = 0;
  for (size_t at = 0; r == 0 && at < bytes; at += FA_PAGEABLE_COPY_BYTES) {
    size_t piece = bytes - at < FA_PAGEABLE_COPY_BYTES ? bytes - at : FA_PAGEABLE_COPY_BYTES;
    r = cu->drv.cuMemcpyHtoDAsync(dst + at, (const unsigned char *)src + at, piece,
                                  (CUstream)stream);
  }
  return r;
}

static bool has_pinned_calls(const fa_cu_driver *drv) {
  return drv->cuMemHostAlloc && drv->cuMemFreeHost && drv->cuEventCreate &&
         drv->cuEventDestroy && drv->cuEventRecord && drv->cuEventQuery &&
         drv->cuEventSynchronize;
}

/* A pinned block for a copy of `bytes` (*out; 0 returned): the first idle
 * one from the next on (copies on several streams finish out of order);
 * with none idle a new one, up to FA_PINNED_BLOCKS (at least 16 KB,
 * committed once it has memory and an event), past which the next block
 * once its copy is done. Grown at least twofold when too small, so that
 * tables that grow a little at a time do not reallocate every call. */
static CUresult take_block(fa_cuda *cu, size_t bytes, fa_pinned_block **out) {
  const fa_cu_driver *drv = &cu->drv;
  fa_staging *st = &cu->staging;
  fa_pinned_block *b = NULL;
  for (int i = 0; i < st->num && !b; ++i) {
    fa_pinned_block *c = &st->block[(st->next + i) % st->num];
    if (c->pending && drv->cuEventQuery(c->done) == 0)
      c->pending = false;
    if (!c->pending)
      b = c;
  }
  CUresult r = 0;
  if (!b && st->num < FA_PINNED_BLOCKS) {
    fa_pinned_block fresh = {NULL, bytes < 16384 ? 16384 : bytes, NULL, false};
    r = drv->cuMemHostAlloc(&fresh.host, fresh.cap, 0);
    if (r == 0 && (r = drv->cuEventCreate(&fresh.done, CU_EVENT_DISABLE_TIMING)) != 0)
      drv->cuMemFreeHost(fresh.host);
    if (r == 0) {
      st->block[st->num] = fresh;
      b = &st->block[st->num++];
    }
  } else if (!b) {
    /* FA_PINNED_BLOCKS copies in flight: wait for the next one's. */
    b = &st->block[st->next];
    r = drv->cuEventSynchronize(b->done);
    if (r == 0)
      b->pending = false;
  }
  if (r == 0 && b->cap < bytes) {
    size_t cap = 2 * b->cap > bytes ? 2 * b->cap : bytes;
    void *host = NULL;
    r = drv->cuMemHostAlloc(&host, cap, 0);
    if (r == 0) {
      drv->cuMemFreeHost(b->host);
      b->host = host;
      b->cap = cap;
    }
  }
  *out = b;
  return r;
}

/* The copy through block `b`, then its event recorded (the block is reused
 * once it is reached). With no event to wait on later, a wait for the copy
 * now; if even that fails, the block is given up (its memory left to the
 * copy). */
static CUresult copy_through(fa_cuda *cu, fa_pinned_block *b, uint64_t dst, const void *src,
                             size_t bytes, void *stream) {
  const fa_cu_driver *drv = &cu->drv;
  cu->staging.next = (int)(b - cu->staging.block + 1) % cu->staging.num;
  memcpy(b->host, src, bytes);
  CUresult r = drv->cuMemcpyHtoDAsync(dst, b->host, bytes, (CUstream)stream);
  if (r == 0 && drv->cuEventRecord(b->done, (CUstream)stream) == 0) {
    b->pending = true;
  } else if (r == 0) {
    r = drv->cuStreamSynchronize ? drv->cuStreamSynchronize((CUstream)stream) : 1;
    if (r != 0) {
      b->host = NULL;
      b->cap = 0;
    }
  }
  return r;
}

/* - Where the device reads pageable memory itself (HMM, ATS:
 *   cu->staging.pinned, unless FLASHATTN_PINNED_STAGING says otherwise), the
 *   driver need not stage a pageable copy (the driver API's "API
 *   synchronization behavior": it stages "if pageable memory must first be
 *   staged to pinned memory"), so a pageable copy might read `src` after
 *   this returns. There `src` is copied into a page-locked block of the
 *   runtime's (take_block), which is not reused until the event recorded
 *   after its copy is reached. A GPU that keeps up reuses one block (making
 *   a block per call, cuMemHostAlloc, costs tens of microseconds).
 * - Elsewhere (the H200 machines here) fa_cuda_copy_pageable, for `src` in
 *   pageable memory: the driver stages a small pageable copy into its
 *   command stream, which the kernel waits for less than for a copy-engine
 *   read of pinned memory (measured on the H200: decode with a host
 *   block_table that changes every call, 0.94-0.96 of dense with pageable
 *   copies, 0.81-0.92 from pinned memory; docs/BENCHMARKS.md).
 *   Without the driver calls or pinned memory there: a pageable copy, then
 *   a wait for the stream (cuStreamSynchronize), since on this device the
 *   driver may read `src` after the call.
 * The driver calls that a global-mode capture on another thread forbids
 * run in relaxed mode. */
CUresult fa_cuda_staged_copy(fa_cuda *cu, uint64_t dst, const void *src, size_t bytes,
                             void *stream) {
  const fa_cu_driver *drv = &cu->drv;
  if (!cu->staging.pinned)
    return fa_cuda_copy_pageable(cu, dst, src, bytes, stream);
  int mode;
  bool relaxed = fa_cu_relaxed_enter(drv, &mode);
  fa_pinned_block *b = NULL;
  CUresult r = has_pinned_calls(drv) ? take_block(cu, bytes, &b) : 1;
  if (r == 0) {
    r = copy_through(cu, b, dst, src, bytes, stream);
  } else {
    r = fa_cuda_copy_pageable(cu, dst, src, bytes, stream);
    if (r == 0)
      r = drv->cuStreamSynchronize ? drv->cuStreamSynchronize((CUstream)stream) : 1;
  }
  fa_cu_relaxed_leave(drv, relaxed, mode);
  return r;
}

void fa_cuda_staging_release(fa_cuda *cu) {
  const fa_cu_driver *drv = &cu->drv;
  for (int i = 0; i < cu->staging.num; ++i) {
    fa_pinned_block *b = &cu->staging.block[i];
    if (b->pending) /* its copy may still read it */
      drv->cuEventSynchronize(b->done);
    if (b->done)
      drv->cuEventDestroy(b->done);
    if (b->host)
      drv->cuMemFreeHost(b->host);
  }
}
