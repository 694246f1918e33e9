/*===- cuda_stream.c - per-stream state of the CUDA backend ---------------===*
 *
 * Launches on one stream never overlap, so state that lives across calls
 * can be kept per stream: one slot per stream handle (up to
 * FA_MAX_STREAMS), holding the fused split-KV merge's u32 counters and the
 * block_table mirrors (cuda_mirror.c). fa_cuda_release_stream frees a
 * stream's slot before the caller destroys the stream; the rest go at
 * release.
 *
 *===----------------------------------------------------------------------===*/

#include "cuda_context.h"

#include <stdlib.h>
#include <string.h>

int fa_cuda_stream_capturing(const fa_cuda *cu, void *stream) {
  int status = 0; /* CUstreamCaptureStatus: NONE 0, ACTIVE 1, INVALIDATED 2 */
  if (!cu->drv.cuStreamIsCapturing ||
      cu->drv.cuStreamIsCapturing((CUstream)stream, &status) != 0)
    return -1;
  return status != 0;
}

/* The index of `stream`'s slot, or -1. */
static int find_slot(const fa_cuda *cu, void *stream) {
  for (int i = 0; i < cu->streams.num; ++i)
    if (cu->streams.slot[i].stream == stream)
      return i;
  return -1;
}

fa_stream_state *fa_cuda_stream_slot(fa_cuda *cu, void *stream) {
  int i = find_slot(cu, stream);
  if (i >= 0)
    return &cu->streams.slot[i];
  if (cu->streams.num == FA_MAX_STREAMS)
    return NULL;
  fa_stream_state *s = &cu->streams.slot[cu->streams.num++];
  memset(s, 0, sizeof(*s));
  s->stream = stream;
  return s;
}

/* Frees a slot's counters and mirrors (in the runtime's context); the
 * first failure, or 0. */
static CUresult free_slot(const fa_cuda *cu, fa_stream_state *s) {
  CUresult r = 0, ri;
  for (int j = 0; j < FA_MIRRORS_PER_STREAM; ++j) {
    free(s->mirror[j].shadow);
    s->mirror[j].shadow = NULL;
  }
  if (s->ptr && (ri = cu->drv.cuMemFree(s->ptr)) != 0)
    r = ri;
  for (int j = 0; j < FA_MIRRORS_PER_STREAM; ++j)
    if (s->mirror[j].ptr && (ri = cu->drv.cuMemFree(s->mirror[j].ptr)) != 0 && r == 0)
      r = ri;
  return r;
}

bool fa_cuda_room_to_retire(fa_cuda *cu) {
  uint64_t *grown = (uint64_t *)realloc(cu->streams.retired,
                                        (cu->streams.num_retired + 1) * sizeof(uint64_t));
  if (!grown)
    return false;
  cu->streams.retired = grown;
  return true;
}

void fa_cuda_retire(fa_cuda *cu, uint64_t ptr) {
  cu->streams.retired[cu->streams.num_retired++] = ptr;
}

/* Grows slot `s`'s counters to at least `need` words (at least doubling,
 * 4096 at first): allocated in relaxed capture mode, so that another
 * thread's global-mode stream capture is not disturbed, and zeroed on the
 * stream; the old array retired. 0 when that fails. */
static uint64_t grow_counters(fa_cuda *cu, fa_stream_state *s, size_t need) {
  const fa_cu_driver *drv = &cu->drv;
  size_t words = 4096;
  if (2 * s->words > words)
    words = 2 * s->words;
  if (need > words)
    words = need;
  if (!fa_cuda_room_to_retire(cu))
    return 0;
  uint64_t ptr = 0;
  if (fa_cu_alloc_relaxed(drv, &ptr, words * sizeof(uint32_t)) != 0)
    return 0;
  if (drv->cuMemsetD32Async(ptr, 0, words, (CUstream)s->stream) != 0) {
    fa_cu_free_relaxed(drv, ptr);
    return 0;
  }
  if (s->ptr)
    fa_cuda_retire(cu, s->ptr);
  s->ptr = ptr;
  s->words = words;
  return ptr;
}

/* The stream's array, allocated and zeroed at its first use or when it
 * must grow. Under stream capture (`capture` > 0) the launch's own slice
 * instead (fa_cuda_captured_counters: a graph may replay beside later calls
 * on the stream). 0 when the fused merge cannot run there: a capture status
 * the driver cannot tell, the per-thread default stream (one handle for
 * every thread's stream), past FA_MAX_STREAMS streams, without the driver
 * functions, or when the allocation or the zeroing fails. */
uint64_t fa_cuda_merge_counters(fa_cuda *cu, void *stream, int capture, int64_t tiles,
                                size_t *slice_words) {
  *slice_words = 0;
  if (!cu->drv.cuMemAlloc || !cu->drv.cuMemFree || !cu->drv.cuMemsetD32Async)
    return 0;
  if (capture > 0)
    return fa_cuda_captured_counters(cu, tiles, slice_words);
  if (capture != 0 || stream == FA_CU_STREAM_PER_THREAD)
    return 0;
  fa_stream_state *s = fa_cuda_stream_slot(cu, stream);
  if (!s)
    return 0;
  if (s->words >= (size_t)tiles)
    return s->ptr;
  return grow_counters(cu, s, (size_t)tiles);
}

fa_status fa_cuda_release_stream(fa_runtime *runtime, void *stream) {
  if (!runtime)
    return FA_ERROR_INVALID_ARGUMENT;
  fa_cuda *cu = (fa_cuda *)runtime->cuda;
  if (!cu)
    return FA_OK;
  int i = find_slot(cu, stream);
  if (i < 0)
    return FA_OK;
  const fa_cu_driver *drv = &cu->drv;
  CUcontext prev;
  if (fa_cuda_enter(cu, &prev) != 0)
    return fa_fail(runtime, FA_ERROR_CUDA, "cuCtxSetCurrent failed");
  int mode;
  bool relaxed = fa_cu_relaxed_enter(drv, &mode);
  /* The stream's work that may still read the buffers, finished first. */
  CUresult sync = drv->cuStreamSynchronize ? drv->cuStreamSynchronize((CUstream)stream) : 0;
  CUresult freed = sync == 0 ? free_slot(cu, &cu->streams.slot[i]) : 0;
  fa_cu_relaxed_leave(drv, relaxed, mode);
  fa_cuda_leave(cu, prev);
  if (sync != 0)
    return fa_fail(runtime, FA_ERROR_CUDA, "cuStreamSynchronize failed: %s",
                   fa_cu_error(drv, sync));
  cu->streams.slot[i] = cu->streams.slot[--cu->streams.num];
  if (freed != 0)
    return fa_fail(runtime, FA_ERROR_CUDA, "cuMemFree failed: %s", fa_cu_error(drv, freed));
  return FA_OK;
}

void fa_cuda_streams_release(fa_cuda *cu) {
  for (int i = 0; i < cu->streams.num; ++i)
    free_slot(cu, &cu->streams.slot[i]);
  for (size_t i = 0; i < cu->streams.num_retired; ++i)
    cu->drv.cuMemFree(cu->streams.retired[i]);
}

void fa_cuda_streams_free_host(fa_cuda *cu) {
  /* (free_slot already freed and cleared the shadows it reached.) */
  for (int i = 0; i < cu->streams.num; ++i)
    for (int j = 0; j < FA_MIRRORS_PER_STREAM; ++j)
      free(cu->streams.slot[i].mirror[j].shadow);
  free(cu->streams.retired);
}
