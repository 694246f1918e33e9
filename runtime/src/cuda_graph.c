/*===- cuda_graph.c - launches under stream capture -----------------------===*
 *
 * A launch captured into a CUDA graph (cuStreamIsCapturing) records nodes
 * that run again at every replay, so what they read must outlive the call:
 * the fused merge's counters (a slice of the runtime's own per captured
 * launch, fa_cuda_captured_counters) and a copied host tile table. Both are
 * handed to the capture's graph as a CUDA user object (give_to_graph), and
 * come back, or are freed, when the last graph holding them is destroyed.
 *
 *===----------------------------------------------------------------------===*/

#include "cuda_context.h"

#include <pthread.h>
#include <stdlib.h>

/* Resources of captured calls handed to their CUDA graphs as user objects
 * (CUDA Driver API, Graph Management: cuUserObjectCreate and
 * cuGraphRetainUserObject; CUDA C++ Programming Guide, "CUDA User
 * Objects"). The capture's graph holds the reference, and so does every
 * executable graph instantiated from it; once the last is destroyed the
 * driver runs graph_released on an internal thread, after the launches
 * still pending on those graphs have completed. graph_released makes no
 * CUDA call (the driver forbids it there): it frees the host tile table a
 * copy node read, and gives the merge counters' slice back through
 * `back`, for the runtime to reuse at its next capture (take_back). After
 * the runtime is destroyed (alive false) it drops the slice: its chunk was
 * freed with the runtime. */
typedef struct graph_owned {
  struct fa_graph_refs *owner;
  void *table;    /* a copied host tile table, or NULL */
  uint64_t slice; /* the fused merge's counters, or 0 */
  size_t words;
  struct graph_owned *next;
} graph_owned;

typedef struct fa_graph_refs {
  pthread_mutex_t lock; /* over the fields below */
  int refs;             /* the runtime's, plus one per graph_owned alive */
  bool alive;           /* the runtime is not destroyed */
  graph_owned *back;    /* slices of destroyed graphs, not yet taken back */
} graph_refs;

static void free_refs(graph_refs *g) {
  pthread_mutex_destroy(&g->lock);
  free(g);
}

static void graph_released(void *p) {
  graph_owned *o = (graph_owned *)p;
  graph_refs *g = o->owner;
  free(o->table);
  pthread_mutex_lock(&g->lock);
  bool keep = g->alive && o->slice;
  if (keep) {
    o->next = g->back;
    g->back = o;
  }
  bool last = --g->refs == 0;
  pthread_mutex_unlock(&g->lock);
  if (!keep)
    free(o);
  if (last)
    free_refs(g);
}

/* Drops the runtime's reference to `g` (at release): graph_owned records
 * released later free their tables and drop their slices. */
static void drop_graph_refs(graph_refs *g) {
  pthread_mutex_lock(&g->lock);
  g->alive = false;
  graph_owned *o = g->back;
  g->back = NULL;
  bool last = --g->refs == 0;
  pthread_mutex_unlock(&g->lock);
  while (o) {
    graph_owned *next = o->next;
    free(o);
    o = next;
  }
  if (last)
    free_refs(g);
}

/* A counter slice no graph holds, into `spare` for a later capture (a
 * slice with no room to go is left unused: it stays inside its chunk). */
static void spare_slice(fa_graph_state *gs, uint64_t ptr, size_t words) {
  if (gs->num_spare == gs->cap_spare) {
    size_t cap = gs->cap_spare ? 2 * gs->cap_spare : 16;
    fa_spare_slice *grown = (fa_spare_slice *)realloc(gs->spare, cap * sizeof(*grown));
    if (!grown)
      return;
    gs->spare = grown;
    gs->cap_spare = cap;
  }
  gs->spare[gs->num_spare++] = (fa_spare_slice){ptr, words};
}

/* The slices destroyed graphs gave back, into `spare`. */
static void take_back(fa_graph_state *gs) {
  graph_refs *g = gs->refs;
  if (!g)
    return;
  pthread_mutex_lock(&g->lock);
  graph_owned *o = g->back;
  g->back = NULL;
  pthread_mutex_unlock(&g->lock);
  while (o) {
    graph_owned *next = o->next;
    spare_slice(gs, o->slice, o->words);
    free(o);
    o = next;
  }
}

/* The runtime's graph_refs, made at the first hand-over (NULL when that
 * fails). */
static graph_refs *get_refs(fa_graph_state *gs) {
  if (gs->refs)
    return gs->refs;
  graph_refs *g = (graph_refs *)calloc(1, sizeof(*g));
  if (!g)
    return NULL;
  if (pthread_mutex_init(&g->lock, NULL) != 0) {
    free(g);
    return NULL;
  }
  g->refs = 1;
  g->alive = true;
  return gs->refs = g;
}

/* What give_to_graph did with a captured call's table and slice. */
enum { KEPT_BY_CALLER = 0, HANDED_TO_GRAPH = 1, NEVER_RUN = 2 };

/* Record `o` as a user object retained by `graph` (MOVE: the graph's
 * reference is the only one). On failure nothing a graph node may read is
 * freed: `o` is released with no table or slice. */
static bool retain_by_graph(fa_cuda *cu, void *graph, graph_owned *o) {
  const fa_cu_driver *drv = &cu->drv;
  void *object = NULL;
  int mode;
  bool relaxed = fa_cu_relaxed_enter(drv, &mode);
  CUresult r = drv->cuUserObjectCreate(&object, o, graph_released, 1,
                                       CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
  if (r != 0) {
    o->table = NULL;
    o->slice = 0;
    graph_released(o);
  } else if ((r = drv->cuGraphRetainUserObject(graph, object, 1, CU_GRAPH_USER_OBJECT_MOVE)) !=
             0) {
    /* Not the graph's: the release below runs graph_released, which must
     * then free nothing a graph node may read. */
    o->table = NULL;
    o->slice = 0;
    drv->cuUserObjectRelease(object, 1);
  }
  fa_cu_relaxed_leave(drv, relaxed, mode);
  return r == 0;
}

/* Hands a captured call's copied host table (or NULL) and counter slice
 * (or 0; `words` long) to the graph `stream` is capturing into: they live
 * as long as that graph and its executable graphs (HANDED_TO_GRAPH).
 * NEVER_RUN when the capture is invalidated (its end returns no graph, so
 * no recorded node ever runs): the caller may free the table and reuse the
 * slice at once. KEPT_BY_CALLER when the driver lacks user objects (CUDA
 * 11.3+), the stream is not capturing, or a call fails: nothing was handed
 * over, and the caller keeps both for the runtime's lifetime. */
static int give_to_graph(fa_cuda *cu, void *stream, void *table, uint64_t slice,
                         size_t words) {
  const fa_cu_driver *drv = &cu->drv;
  if (!drv->cuStreamGetCaptureInfo || !drv->cuUserObjectCreate || !drv->cuUserObjectRelease ||
      !drv->cuGraphRetainUserObject)
    return KEPT_BY_CALLER;
  int status = 0;
  void *graph = NULL;
  if (drv->cuStreamGetCaptureInfo((CUstream)stream, &status, NULL, &graph, NULL, NULL) != 0)
    return KEPT_BY_CALLER;
  if (status == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
    return NEVER_RUN;
  graph_refs *g = status == CU_STREAM_CAPTURE_STATUS_ACTIVE && graph ? get_refs(&cu->graphs)
                                                                      : NULL;
  graph_owned *o = g ? (graph_owned *)malloc(sizeof(*o)) : NULL;
  if (!o)
    return KEPT_BY_CALLER;
  *o = (graph_owned){g, table, slice, words, NULL};
  pthread_mutex_lock(&g->lock);
  g->refs++;
  pthread_mutex_unlock(&g->lock);
  return retain_by_graph(cu, graph, o) ? HANDED_TO_GRAPH : KEPT_BY_CALLER;
}

bool fa_cuda_room_to_hold(fa_cuda *cu) {
  fa_graph_state *gs = &cu->graphs;
  if (gs->num_held < gs->cap_held)
    return true;
  size_t cap = gs->cap_held ? 2 * gs->cap_held : 16;
  void **grown = (void **)realloc(gs->held, cap * sizeof(void *));
  if (!grown)
    return false;
  gs->held = grown;
  gs->cap_held = cap;
  return true;
}

/* Where the nodes' resources cannot be handed over, they live as long as
 * the runtime (the table in `held`, room made before the launch; the slice
 * in its chunk); an invalidated capture's nodes never run, so both are free
 * at once. */
void fa_cuda_after_capture(fa_cuda *cu, void *stream, void *table, uint64_t slice,
                           size_t words) {
  if (!table && !words)
    return;
  int fate = give_to_graph(cu, stream, table, words ? slice : 0, words);
  if (fate == NEVER_RUN) {
    free(table);
    if (words)
      spare_slice(&cu->graphs, slice, words);
  } else if (fate == KEPT_BY_CALLER && table) {
    cu->graphs.held[cu->graphs.num_held++] = table;
  }
}

/* Zeroes `words` u32 at `ptr` on the runtime's own non-blocking stream
 * (made at first use) and waits for it: outside any capture, in relaxed
 * capture mode (this thread's stream is capturing). */
static CUresult zero_now(fa_cuda *cu, uint64_t ptr, size_t words) {
  const fa_cu_driver *drv = &cu->drv;
  int mode;
  bool relaxed = fa_cu_relaxed_enter(drv, &mode);
  if (!relaxed)
    return 1;
  CUresult r = 0;
  if (!cu->graphs.zero_stream)
    r = drv->cuStreamCreate(&cu->graphs.zero_stream, CU_STREAM_NON_BLOCKING);
  if (r == 0)
    r = drv->cuMemsetD32Async(ptr, 0, words, cu->graphs.zero_stream);
  if (r == 0)
    r = drv->cuStreamSynchronize(cu->graphs.zero_stream);
  fa_cu_relaxed_leave(drv, relaxed, mode);
  return r;
}

/* The index of the smallest spare slice of at least `need` words, or
 * num_spare. */
static size_t best_spare(const fa_graph_state *gs, size_t need) {
  size_t best = gs->num_spare;
  for (size_t i = 0; i < gs->num_spare; ++i)
    if (gs->spare[i].words >= need &&
        (best == gs->num_spare || gs->spare[i].words < gs->spare[best].words))
      best = i;
  return best;
}

/* Spare slice `i`, zeroed again (a graph that broke the one-at-a-time rule
 * cannot spoil later captures); 0 when the zeroing fails (it is left in
 * spare then). */
static uint64_t reuse_spare(fa_cuda *cu, size_t i, size_t *words_out) {
  fa_graph_state *gs = &cu->graphs;
  fa_spare_slice reuse = gs->spare[i];
  if (zero_now(cu, reuse.ptr, reuse.words) != 0)
    return 0;
  gs->spare[i] = gs->spare[--gs->num_spare];
  *words_out = reuse.words;
  return reuse.ptr;
}

/* A new chunk of at least 16384 words (64 KB), zeroed, its first `need`
 * words taken; 0 when an allocation or the zeroing fails. This thread's
 * stream is capturing: without relaxed mode the calls would invalidate the
 * capture. */
static uint64_t new_chunk(fa_cuda *cu, size_t need, size_t *words_out) {
  fa_graph_state *gs = &cu->graphs;
  fa_captured_chunk *grown =
      (fa_captured_chunk *)realloc(gs->chunks, (gs->num_chunks + 1) * sizeof(*grown));
  if (!grown)
    return 0;
  gs->chunks = grown;
  size_t words = need > 16384 ? need : 16384;
  int mode;
  bool relaxed = fa_cu_relaxed_enter(&cu->drv, &mode);
  if (!relaxed)
    return 0;
  uint64_t ptr = 0;
  CUresult r = cu->drv.cuMemAlloc(&ptr, words * sizeof(uint32_t));
  fa_cu_relaxed_leave(&cu->drv, relaxed, mode);
  if (r != 0)
    return 0;
  if (zero_now(cu, ptr, words) != 0) {
    fa_cu_free_relaxed(&cu->drv, ptr);
    return 0;
  }
  gs->chunks[gs->num_chunks++] = (fa_captured_chunk){ptr, words, need};
  *words_out = need;
  return ptr;
}

/* `tiles` words rounded up to 256 bytes: the smallest slice destroyed
 * graphs gave back that fits, else the rest of the last chunk, else a new
 * chunk; either way zeroed on the runtime's own non-blocking stream,
 * outside the capture (a chunk at its allocation, a given-back slice again
 * before its reuse). Every replay of the captured launch leaves its slice
 * at zero for the next. Replays of one executable graph run in order
 * (cuGraphLaunch); executable graphs made from one capture (instantiated
 * twice, cloned, embedded as child graphs) share the slices and must not
 * run at the same time (runtime.h). 0 when a driver call fails: the
 * combine kernel runs instead. */
uint64_t fa_cuda_captured_counters(fa_cuda *cu, int64_t tiles, size_t *words_out) {
  if (!cu->drv.cuStreamCreate || !cu->drv.cuStreamSynchronize || !cu->drv.cuStreamDestroy)
    return 0;
  size_t need = ((size_t)tiles + 63) / 64 * 64;
  fa_graph_state *gs = &cu->graphs;
  take_back(gs);
  size_t best = best_spare(gs, need);
  if (best < gs->num_spare)
    return reuse_spare(cu, best, words_out);
  if (gs->num_chunks) {
    fa_captured_chunk *c = &gs->chunks[gs->num_chunks - 1];
    if (c->words - c->used >= need) {
      uint64_t ptr = c->ptr + c->used * sizeof(uint32_t);
      c->used += need;
      *words_out = need;
      return ptr;
    }
  }
  return new_chunk(cu, need, words_out);
}

void fa_cuda_graphs_release_device(fa_cuda *cu) {
  for (size_t i = 0; i < cu->graphs.num_chunks; ++i)
    cu->drv.cuMemFree(cu->graphs.chunks[i].ptr);
  if (cu->graphs.zero_stream)
    cu->drv.cuStreamDestroy(cu->graphs.zero_stream);
}

void fa_cuda_graphs_free_host(fa_cuda *cu) {
  fa_graph_state *gs = &cu->graphs;
  for (size_t i = 0; i < gs->num_held; ++i)
    free(gs->held[i]);
  free(gs->held);
  free(gs->chunks);
  free(gs->spare);
  if (gs->refs)
    drop_graph_refs(gs->refs);
}
