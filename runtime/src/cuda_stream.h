/*===- cuda_stream.h - per-stream state of the CUDA backend --------*- C -*-===*/

#ifndef FLASHATTN_RT_CUDA_STREAM_H
#define FLASHATTN_RT_CUDA_STREAM_H

#include "cuda_mirror.h"

/* Streams with state of their own per runtime (the fused merge's counters,
 * the block_table mirrors); calls on more streams launch the combine kernel
 * and copy their page lists instead. */
#define FA_MAX_STREAMS 64

/* Per-stream state (launches on one stream never overlap), one slot per
 * stream handle: the fused split-KV merge's u32 counters (`ptr`, `words`:
 * one per tile, zero between launches, since each launch's merging units
 * set theirs back to 0) and the block_table mirrors (cuda_mirror.c) with
 * the count of the calls that used them. */
typedef struct fa_stream_state {
  void *stream;
  uint64_t ptr;
  size_t words;
  fa_table_mirror mirror[FA_MIRRORS_PER_STREAM];
  uint64_t calls;
} fa_stream_state;

/* The slots, and the device buffers retired from them: a grown buffer's
 * predecessor may still be read by pending launches, so it is freed with
 * the others at release. */
typedef struct fa_stream_table {
  fa_stream_state slot[FA_MAX_STREAMS];
  int num;
  uint64_t *retired;
  size_t num_retired;
} fa_stream_table;

/* Whether `stream` is capturing (CUDA graphs): 1, 0, or -1 when the driver
 * cannot tell (cuStreamIsCapturing absent or failing). */
int fa_cuda_stream_capturing(const fa_cuda *cu, void *stream) FA_HIDDEN;

/* The slot of `stream`, made when the stream has none and there is room;
 * NULL past FA_MAX_STREAMS. */
fa_stream_state *fa_cuda_stream_slot(fa_cuda *cu, void *stream) FA_HIDDEN;

/* Room for one more retired device buffer (false: out of memory), and the
 * retirement, which then cannot fail. */
bool fa_cuda_room_to_retire(fa_cuda *cu) FA_HIDDEN;
void fa_cuda_retire(fa_cuda *cu, uint64_t ptr) FA_HIDDEN;

/* The fused merge's counters for a launch of `tiles` tiles on `stream`
 * (`capture` from fa_cuda_stream_capturing); 0 when the fused merge cannot
 * run there and the caller launches the combine kernel. *slice_words is the
 * length of a captured launch's own slice (cuda_graph.c), else 0. */
uint64_t fa_cuda_merge_counters(fa_cuda *cu, void *stream, int capture, int64_t tiles,
                                size_t *slice_words) FA_HIDDEN;

/* At release, in the runtime's context: every slot's device buffers and the
 * retired ones. fa_cuda_streams_free_host then frees the host memory (also
 * where the context could not be entered). */
void fa_cuda_streams_release(fa_cuda *cu) FA_HIDDEN;
void fa_cuda_streams_free_host(fa_cuda *cu) FA_HIDDEN;

#endif
