/*===- cuda_graph.h - launches under stream capture ----------------*- C -*-===*/

#ifndef FLASHATTN_RT_CUDA_GRAPH_H
#define FLASHATTN_RT_CUDA_GRAPH_H

#include "cuda_driver.h"

#include <stddef.h>
#include <stdint.h>

/* A chunk the captured launches' merge counters are carved from, and a
 * slice no graph holds any more. */
typedef struct fa_captured_chunk {
  uint64_t ptr;
  size_t words, used;
} fa_captured_chunk;

typedef struct fa_spare_slice {
  uint64_t ptr;
  size_t words;
} fa_spare_slice;

/* What launches captured into CUDA graphs keep (cuda_graph.c). */
typedef struct fa_graph_state {
  /* Host tile tables copied by captured launches that could not be handed
   * to their graph (fa_cuda_give_to_graph): each replay copies from them
   * again, so they live as long as the runtime. */
  void **held;
  size_t num_held, cap_held;
  /* Counters of captured launches: each its own slice of a chunk (zeroed
   * once, on `zero_stream`, a stream of the runtime's own that no capture
   * sees). A replay leaves its slice at zero like any launch. The chunks
   * live until the runtime is destroyed; a slice whose graphs are all
   * destroyed comes back (`refs`) and is reused, zeroed again, by a later
   * capture (`spare`). */
  fa_captured_chunk *chunks;
  size_t num_chunks;
  fa_spare_slice *spare;
  size_t num_spare, cap_spare;
  CUstream zero_stream;
  /* What captured calls hand to their graphs, shared with the destructors
   * the driver runs on its own thread; NULL until the first hand-over. */
  struct fa_graph_refs *refs;
} fa_graph_state;

/* The merge counters of a launch being captured: a slice of `tiles` words
 * or more (its length in *words_out) that no other launch uses, zeroed; 0
 * when a driver call fails. */
uint64_t fa_cuda_captured_counters(fa_cuda *cu, int64_t tiles, size_t *words_out) FA_HIDDEN;

/* Room in `held` for one more table (false: out of memory). */
bool fa_cuda_room_to_hold(fa_cuda *cu) FA_HIDDEN;

/* What a captured launch's nodes read, after the launch: its copied host
 * table (or NULL; room made by fa_cuda_room_to_hold) and its counter slice
 * (or 0, `words` long). They go to the capture's graph, or stay the
 * runtime's until release, or, when the capture was invalidated, are free
 * at once. */
void fa_cuda_after_capture(fa_cuda *cu, void *stream, void *table, uint64_t slice,
                           size_t words) FA_HIDDEN;

/* At release: in the runtime's context the chunks and the zeroing stream
 * (fa_cuda_graphs_release_device), then the host memory
 * (fa_cuda_graphs_free_host; graphs alive then free their tables and drop
 * their slices when destroyed). */
void fa_cuda_graphs_release_device(fa_cuda *cu) FA_HIDDEN;
void fa_cuda_graphs_free_host(fa_cuda *cu) FA_HIDDEN;

#endif
