/*===- cuda_launch.c - a launch of a cubin artifact -----------------------===*
 *
 * Launch ABI of a cubin artifact: described by the artifact itself. Its
 * metadata's "abi" gives each entry's parameter list (artifact.c parses it
 * into fa_abi), and launch_one packs the parameters by walking it: "ptr"
 * the device pointer of the launch's tensor of that name, "dims" its shape
 * (row-major int64s, as many as its rank, which must be the parameter's),
 * "tma" one 128-byte CUtensorMap of it (cuda_tma.c), and the launch's own
 * values below, each where the list puts it. Block = metadata "block" (the
 * combine 128 threads, the append 256), dynamic shared memory = "smem"
 * (cuda_module.c), grid = min(work units, SMs) ("persistent";
 * fa_launch_grid).
 *
 * The values (which the metadata's flags ask for, and artifact.c checked
 * that the abi has exactly those): "tile_counter" (flags "tile_counter",
 * the dense entries "dense_tile_counter"): a u32 zero at launch (a
 * stream-ordered allocation per launch, so concurrent launches on several
 * streams never share it; zeroed by cuMemsetD32Async, or with a tile table
 * the table's zero word 3), the dynamic tile scheduler's counter; a launch
 * with no more work units (tiles x splits) than CTAs (the grid) never reads
 * it, and gets an unzeroed address instead. "tile_table" (varlen,
 * seqused_k, paged, append): the tile table (schedule.c), built on the host
 * from the call's cu_seqlens / seqused_k and copied into the same
 * stream-ordered scratch (cuda_staging.c); a call with no query rows
 * launches nothing. "tile_table_inline" (N bytes by value, the attention
 * kernels): a launch whose table fits there, with no counter to zero, no
 * append and no page lists to copy, passes the table that way and a null
 * table pointer, and copies nothing; others pass zeros. "page_table": the
 * page lists (the device block_table, a stream's mirror of a host one
 * (cuda_mirror.c), or the tile table with copies of a host-readable one).
 * "merge_out", "merge_lse", "merge_counters" (split-KV "fused_combine", the
 * partial kernels): below.
 *
 * Split-KV (metadata "combine_entry", config num_splits = S > 1, or 0 and
 * the count chosen per launch, cuda_variant.c): the runtime allocates a
 * stream-ordered workspace for the partial results, out f32 [S, B, Sq, H,
 * Dv] and lse f32 [S, B, H, Sq]; the attention kernel takes them in place of
 * out and lse (their abi's "out" and "lse"), then merges them itself
 * ("fused_combine": the caller's out, lse or null and the counters of
 * cuda_stream.c / cuda_graph.c, or null counters for no merge) or the
 * combine kernel (tensors partial_out, partial_lse, out[, lse]; 128
 * threads, a grid-stride loop)
 * merges them into the caller's out and lse; the workspace is freed on the
 * stream (cuMemFreeAsync). (A call with no output row never gets here:
 * run.c returns first, unless it appends rows.)
 *
 * A launch is planned (launch_plan: the kernels, the tile table, the split
 * count, the scratch's layout), then run; finish_plan releases what the
 * plan owns on every path.
 *
 *===----------------------------------------------------------------------===*/

#include "cuda_context.h"
#include "cuda_tma.h"
#include "cuda_variant.h"

#include <stdlib.h>
#include <string.h>

/* One kernel launch: the parameters of the entry's list `abi`, the
 * pointers, dims and tensor maps of `tensors` (found by `names`, n of
 * them), the other kinds from the fields below: the tile counter, table
 * and page lists (null pointers where the launch has none), the by-value
 * table (`inline_table`, with a null `tile_table`, or zeros), and
 * `merge`, a fused-combine partial kernel's out, lse and counters (null
 * counters: no merge). `attention`: the block is the artifact's. */
typedef struct kernel_launch {
  void *function;
  const fa_abi *abi;
  const fa_cu_tensor *tensors;
  const char *const *names;
  int n;
  bool attention;
  unsigned grid, smem;
  void *tile_counter, *tile_table, *page_table;
  const void *inline_table;
  void *const *merge;
} kernel_launch;

/* A launch's kernel parameters (`params`, `p` of them: one per abi
 * parameter, `rank` per dims) and the values they point at. */
typedef struct param_values {
  void *params[FA_MAX_PARAMS];
  void *ptrs[FA_MAX_PARAMS];
  int64_t dims[FA_MAX_ARGS * 5];
  fa_cu_tensor_map maps[FA_MAX_TMA];
  int p, d, m;
} param_values;

static const fa_cu_tensor *launch_tensor(const kernel_launch *l, const char *name) {
  for (int i = 0; i < l->n; ++i)
    if (!strcmp(l->names[i], name))
      return &l->tensors[i];
  return NULL;
}

/* Abi parameter i of the launched entry from a tensor of the launch: its
 * pointer, dims (one int64 kernel parameter each; the tensor has the
 * parameter's rank) or tensor map. */
static fa_status tensor_param(fa_runtime *rt, const fa_cuda *cu, const fa_kernel *k,
                              const kernel_launch *l, int i, param_values *v) {
  const fa_param *p = &l->abi->params[i];
  const fa_cu_tensor *t = launch_tensor(l, p->arg);
  if (!t)
    return fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT,
                   "abi parameter %d: the launch has no tensor '%s'", i, p->arg);
  if (p->kind == FA_PARAM_DIMS && t->rank != p->rank)
    return fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT,
                   "abi parameter %d: dims of '%s' of rank %d, the tensor's rank is %d", i,
                   p->arg, p->rank, (int)t->rank);
  if (p->kind == FA_PARAM_PTR) {
    v->ptrs[i] = t->data;
    v->params[v->p++] = &v->ptrs[i];
    return FA_OK;
  }
  if (p->kind == FA_PARAM_DIMS) {
    for (int r = 0; r < t->rank; ++r) {
      v->dims[v->d] = t->shape[r];
      v->params[v->p++] = &v->dims[v->d++];
    }
    return FA_OK;
  }
  v->params[v->p++] = v->maps[v->m].bytes;
  return fa_cuda_encode_map(rt, cu, k, &p->tma, t, &v->maps[v->m++]);
}

/* Abi parameter i of the launched entry from the launch's own values: a
 * pointer's slot, or the by-value table. */
static fa_status launch_param(fa_runtime *rt, const kernel_launch *l, int i, param_values *v) {
  static const unsigned char no_table[FA_MAX_INLINE_TABLE_BYTES];
  fa_param_kind kind = l->abi->params[i].kind;
  if (kind == FA_PARAM_TILE_TABLE_INLINE) {
    v->params[v->p++] = (void *)(uintptr_t)(l->inline_table ? l->inline_table : no_table);
    return FA_OK;
  }
  if (kind >= FA_PARAM_MERGE_OUT && !l->merge)
    return fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT,
                   "abi parameter %d: the fused merge's, in a launch with no merge", i);
  v->ptrs[i] = kind == FA_PARAM_TILE_COUNTER ? l->tile_counter
               : kind == FA_PARAM_TILE_TABLE ? l->tile_table
               : kind == FA_PARAM_PAGE_TABLE ? l->page_table
                                             : l->merge[kind - FA_PARAM_MERGE_OUT];
  v->params[v->p++] = &v->ptrs[i];
  return FA_OK;
}

static fa_status launch_one(fa_runtime *rt, const fa_cuda *cu, const fa_kernel *k,
                            void *stream, const kernel_launch *l) {
  param_values v;
  v.p = v.d = v.m = 0;
  for (int i = 0; i < l->abi->num_params; ++i) {
    fa_status st = l->abi->params[i].kind <= FA_PARAM_TMA ? tensor_param(rt, cu, k, l, i, &v)
                                                          : launch_param(rt, l, i, &v);
    if (st != FA_OK)
      return st;
  }
  /* Non-attention entries: the combine takes 128 threads, the append 256. */
  unsigned block[3] = {l->function == k->cu_append ? 256u : 128u, 1, 1};
  if (l->attention)
    for (int i = 0; i < 3; ++i)
      block[i] = (unsigned)k->artifact.block[i];
  CUresult r = cu->drv.cuLaunchKernel(l->function, l->grid, 1, 1, block[0], block[1], block[2],
                                      l->smem, (CUstream)stream, v.params, NULL);
  if (r != 0)
    return fa_fail(rt, FA_ERROR_CUDA, "cuLaunchKernel failed: %s", fa_cu_error(&cu->drv, r));
  return FA_OK;
}

/* Storage a plan's fields may point into, left uninitialized. */
typedef struct plan_storage {
  fa_variant views;           /* a twin's view of the kernel */
  fa_attention_args mirrored; /* the call with its block_table's mirror */
  _Alignas(16) unsigned char inline_table[FA_MAX_INLINE_TABLE_BYTES];
} plan_storage;

/* A launch: what it runs and with what. It owns the tile table until the
 * table is freed or kept for a graph (`kept`), the scratch (`ws`) and a
 * captured counter slice; finish_plan releases them. */
typedef struct launch_plan {
  plan_storage *storage;
  /* The call. */
  fa_kernel *k; /* the artifact's kernel, or a twin's view of it */
  const fa_tensor *const *tensors;
  const fa_attention_args *call;
  bool pages_on_device;
  void *stream;
  unsigned sms;
  int n;
  const char *names[FA_MAX_ARGS];
  fa_cu_tensor args[FA_MAX_ARGS];
  const fa_tensor *q, *keys, *v, *out, *lse;
  bool varlen_q, append;
  int capture;  /* fa_cuda_stream_capturing, asked where it matters */
  bool done;    /* nothing more to launch */
  /* The tile table (malloc'd, `words` i32, `entries` tiles per head). */
  int32_t *table;
  int64_t entries, words;
  /* The work: tiles per split, splits, the partial results' shape. */
  int64_t tiles, splits, b, sq, h, dv;
  unsigned grid;
  void *attention, *combine; /* combine: NULL without partial results */
  const fa_abi *abi;         /* the attention kernel's parameters */
  bool takes_counter;
  const void *inline_table;
  /* The scratch: table | counter | partial out | partial lse. */
  size_t counter_bytes, table_bytes, out_bytes, lse_bytes;
  bool has_ws;
  uint64_t ws, parts;
  void *dtable, *pages, *counter;
  /* The fused merge's counters (0: the combine kernel merges), a captured
   * launch's own slice when slice_words > 0; under stream capture the
   * copied table, kept for the graph. */
  uint64_t merge_ctr;
  size_t slice_words;
  void *kept;
} launch_plan;

/* The call's kernel arguments, their names and the tensors by role. */
static void plan_start(launch_plan *p, fa_kernel *k, int n) {
  p->k = k;
  p->n = n;
  p->varlen_q = k->artifact.config.flags & FA_VARLEN_Q;
  for (int i = 0; i < n; ++i) {
    const char *nm = p->names[i] = k->artifact.arg_names[i];
    const fa_tensor *t = p->tensors[i];
    p->args[i] = fa_cu_tensor_of(t);
    if (!strcmp(nm, "q")) p->q = t;
    else if (!strcmp(nm, "k")) p->keys = t;
    else if (!strcmp(nm, "v")) p->v = t;
    else if (!strcmp(nm, "out")) p->out = t;
    else if (!strcmp(nm, "lse")) p->lse = t;
  }
}

/* No key at all (a cache, packed k or pool of 0 rows: run.c took its
 * capacity as 0, so only an append of no rows and seqused_k 0 got
 * through): every row is empty, out 0 and lse -inf (as FlashAttention
 * zeroes out for seqlen_k 0). Two memsets on the stream write that without
 * a kernel launch over no key. */
static bool has_no_key(const launch_plan *p) {
  return p->keys && p->out && fa_tensor_elements(p->keys) == 0 &&
         fa_tensor_elements(p->out) > 0;
}

static fa_status fill_empty_rows(fa_runtime *rt, const fa_cuda *cu, const launch_plan *p) {
  const fa_cu_driver *drv = &cu->drv;
  size_t bytes = (size_t)fa_tensor_elements(p->out) *
                 fa_dtype_size(p->k->artifact.config.out_dtype);
  if (!drv->cuMemsetD32Async)
    return fa_fail(rt, FA_ERROR_NO_DRIVER, "libcuda lacks cuMemsetD32Async");
  if (bytes % 4 != 0)
    return fa_fail(rt, FA_ERROR_UNSUPPORTED,
                   "out of %zu bytes (not a multiple of 4) with no key", bytes);
  CUresult r = drv->cuMemsetD32Async((uint64_t)(uintptr_t)p->out->data, 0, bytes / 4,
                                     (CUstream)p->stream);
  if (r == 0 && p->lse)
    r = drv->cuMemsetD32Async((uint64_t)(uintptr_t)p->lse->data, 0xFF800000u,
                              (size_t)fa_tensor_elements(p->lse), (CUstream)p->stream);
  if (r != 0)
    return fa_fail(rt, FA_ERROR_CUDA, "filling the empty rows: %s", fa_cu_error(drv, r));
  return FA_OK;
}

/* The kernels (fa_cuda_choose_variant). A twin's own tensor maps are
 * checked here: run.c checked the call's tensors against the main entries'
 * only (the one-head twins' page panel maps, for one, exist only here). */
static fa_status plan_variant(fa_runtime *rt, const fa_cuda *cu, launch_plan *p) {
  fa_kernel *k = fa_cuda_choose_variant(p->k, p->q, p->call, (int64_t)cu->num_sms,
                                        &p->storage->views);
  if (k == p->k)
    return FA_OK;
  p->k = k;
  return fa_tma_check_call(rt, k, p->names, p->tensors, p->n);
}

/* Whether the stream is capturing, asked once where it matters (the
 * block_table mirror, the fused merge and a copied tile table depend on
 * it); then a host block_table (checked by run.c) read by the kernels from
 * the stream's device mirror when there is one (not under stream capture,
 * whose replays repeat the call as captured). */
static void plan_pages(fa_cuda *cu, launch_plan *p) {
  const fa_kernel *k = p->k;
  p->append = k->cu_append != NULL;
  p->capture = k->artifact.tile_table || k->cu_combine
                   ? fa_cuda_stream_capturing(cu, p->stream) : 0;
  const fa_tensor *bt = &p->call->block_table;
  if (!(k->artifact.config.flags & FA_PAGED) || !k->artifact.page_table || p->pages_on_device ||
      !bt->data || bt->rank != 2 || p->capture != 0)
    return;
  uint64_t mirror = fa_cuda_block_table_mirror(cu, p->stream, bt);
  if (!mirror)
    return;
  p->storage->mirrored = *p->call;
  p->storage->mirrored.block_table.data = (void *)(uintptr_t)mirror;
  p->call = &p->storage->mirrored;
  p->pages_on_device = true;
}

/* The tile table (varlen, seqused_k, paged, append), built on the host,
 * and the launch's tiles per split. */
static fa_status plan_table(fa_runtime *rt, launch_plan *p) {
  if (p->k->artifact.tile_table) {
    fa_status st = fa_sm90_tile_table(rt, p->k, p->call, p->pages_on_device, &p->table,
                                      &p->entries, &p->words);
    if (st != FA_OK)
      return st;
    if (p->entries == 0 && !p->append) { /* no query rows: nothing to write */
      p->done = true;
      return FA_OK;
    }
  }
  p->tiles = fa_cuda_launch_tiles(p->k, p->table != NULL, p->entries, p->q, p->keys);
  return FA_OK;
}

/* Split-KV: the count, and the partial results' shape. Varlen q: out [Tq,
 * H, Dv] and lse [H, Tq] are seen as batch 1, the partial results as [S, 1,
 * Tq, H, Dv] and [S, 1, H, Tq]. */
static fa_status plan_splits(fa_runtime *rt, launch_plan *p) {
  const fa_kernel *k = p->k;
  p->splits = 1;
  if (!k->cu_combine)
    return FA_OK;
  int orank = p->varlen_q ? 3 : 4;
  if (!p->q || !p->keys || !p->v || !p->out || p->out->rank != orank ||
      (k->artifact.config.num_splits < 2 && !k->artifact.auto_splits))
    return fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT,
                   "split-KV cubin without q, k, v, out or num_splits");
  p->splits = fa_cuda_split_count(k, p->table, p->entries, p->keys, p->tiles, p->sms);
  /* The kernel counts (tile, split) work units in i32. */
  if (p->tiles * p->splits >= INT32_MAX)
    return fa_fail(rt, FA_ERROR_UNSUPPORTED,
                   "%lld tiles x %lld splits exceed the kernel's i32 work index",
                   (long long)p->tiles, (long long)p->splits);
  p->b = p->varlen_q ? 1 : p->out->shape[0];
  p->sq = p->out->shape[orank - 3];
  p->h = p->out->shape[orank - 2];
  p->dv = p->out->shape[orank - 1];
  return FA_OK;
}

/* The grid and the kernels: one split and a dense entry launch no partial
 * results and no combine. */
static void plan_kernels(launch_plan *p) {
  const fa_kernel *k = p->k;
  p->grid = fa_launch_grid(p->tiles * p->splits, p->sms);
  const bool use_dense = k->cu_combine && p->splits == 1 && k->cu_dense;
  p->combine = use_dense ? NULL : k->cu_combine;
  p->attention = use_dense ? k->cu_dense : k->cu_function;
  p->abi = &k->artifact.abi[use_dense ? FA_ENTRY_DENSE : FA_ENTRY_MAIN];
  p->takes_counter = use_dense ? k->artifact.dense_tile_counter : k->artifact.tile_counter;
}

/* The table by value (the kernels' "tile_table_inline" parameter) when it
 * fits and nothing else needs it in device memory: no counter to zero
 * (every tile is some CTA's first), no append (its kernel reads the
 * table), page lists in the caller's device block_table. The launch then
 * has no host-to-device copy before it (measured on the H200: the copy and
 * the wait for it cost about 2 us per decode call, docs/BENCHMARKS.md). */
static void plan_inline_table(launch_plan *p) {
  const fa_kernel *k = p->k;
  size_t bytes = (size_t)p->words * sizeof(int32_t);
  if (!p->table || p->append || bytes > (size_t)k->artifact.tile_table_inline ||
      ((k->artifact.config.flags & FA_PAGED) && !p->pages_on_device) ||
      (p->takes_counter && p->tiles * p->splits > (int64_t)p->sms))
    return;
  memset(p->storage->inline_table, 0, sizeof(p->storage->inline_table));
  memcpy(p->storage->inline_table, p->table, bytes);
  p->inline_table = p->storage->inline_table;
}

/* Stream-ordered scratch: the tile table (in 256-byte units), the zeroed
 * tile counter of the dynamic scheduler (4 bytes, in 256; only with more
 * work units (tiles x splits) than CTAs, the grid being min(units, SMs):
 * otherwise the kernel never reads it; with a table it is the table's zero
 * word 3, copied with it), the split-KV partial results. */
static void plan_scratch(launch_plan *p) {
  p->counter_bytes =
      p->takes_counter && !p->table && p->tiles * p->splits > (int64_t)p->sms ? 256 : 0;
  p->table_bytes = p->table && !p->inline_table
                       ? ((size_t)p->words * sizeof(int32_t) + 255) / 256 * 256 : 0;
  p->out_bytes = p->combine ? (size_t)(p->splits * p->b * p->sq * p->h * p->dv) * 4 : 0;
  p->lse_bytes = p->combine ? (size_t)(p->splits * p->b * p->h * p->sq) * 4 : 0;
}

static size_t scratch_bytes(const launch_plan *p) {
  return p->counter_bytes + p->table_bytes + p->out_bytes + p->lse_bytes;
}

/* Everything up to the driver calls that run the launch; p->done when
 * there is nothing (more) to launch. */
static fa_status plan_launch(fa_runtime *rt, fa_cuda *cu, launch_plan *p) {
  if (has_no_key(p)) {
    p->done = true;
    return fill_empty_rows(rt, cu, p);
  }
  fa_status st = plan_variant(rt, cu, p);
  if (st != FA_OK)
    return st;
  plan_pages(cu, p);
  st = plan_table(rt, p);
  if (st != FA_OK || p->done)
    return st;
  st = plan_splits(rt, p);
  if (st != FA_OK)
    return st;
  plan_kernels(p);
  plan_inline_table(p);
  plan_scratch(p);
  return FA_OK;
}

/* The scratch, on the stream, and where each part of it is. */
static fa_status alloc_scratch(fa_runtime *rt, const fa_cuda *cu, launch_plan *p) {
  const fa_cu_driver *drv = &cu->drv;
  if (!drv->cuMemAllocAsync || !drv->cuMemFreeAsync || !drv->cuMemsetD32Async ||
      !drv->cuMemcpyHtoDAsync)
    return fa_fail(rt, FA_ERROR_NO_DRIVER,
                   "libcuda lacks cuMemAllocAsync (split-KV, the tile counter "
                   "and the tile table need CUDA 11.2+)");
  size_t bytes = scratch_bytes(p);
  CUresult r = drv->cuMemAllocAsync(&p->ws, bytes, (CUstream)p->stream);
  /* Any failure but out of memory (no memory pools, a capture or context
   * error) is the driver's. */
  if (r != 0)
    return fa_fail(rt, r == CUDA_ERROR_OUT_OF_MEMORY ? FA_ERROR_OUT_OF_MEMORY : FA_ERROR_CUDA,
                   "launch scratch of %zu bytes: %s", bytes, fa_cu_error(drv, r));
  p->has_ws = true;
  uint64_t ws = p->ws;
  p->dtable = p->table_bytes ? (void *)(uintptr_t)ws : NULL;
  /* Paged: the page lists, where the kernels read them. */
  p->pages = p->k->artifact.page_table
                 ? (p->pages_on_device ? p->call->block_table.data : p->dtable) : NULL;
  /* The counter: its own zeroed word, the table's word 3, or (no bytes:
   * never read) the scratch's start. */
  p->counter = !p->takes_counter ? NULL
               : p->table_bytes  ? (void *)(uintptr_t)(ws + 3 * sizeof(int32_t))
                                 : (void *)(uintptr_t)(ws + p->table_bytes);
  p->parts = ws + p->table_bytes + p->counter_bytes;
  return FA_OK;
}

/* The scratch's contents, enqueued on the stream: the zeroed counter, the
 * partial lse of rows no tile writes, the table. Eagerly the table is
 * consumed when the copy returns (fa_cuda_staged_copy), so it can be freed
 * after the launch. Under stream capture (CUDA graphs) the copy becomes a
 * graph node that reads the host table at every replay: the table then
 * lives as long as the graph (fa_cuda_after_capture) or else the runtime,
 * and replays copy the captured call's table. (A capture status the driver
 * could not tell counts as capturing: the table is then kept, never freed
 * under a copy node that reads it.) The merge runs in the partial kernels
 * where it can (fa_cuda_merge_counters), else the combine kernel after
 * them. */
static fa_status prepare_scratch(fa_runtime *rt, fa_cuda *cu, launch_plan *p) {
  const fa_cu_driver *drv = &cu->drv;
  CUstream stream = (CUstream)p->stream;
  const bool hold = p->table_bytes && p->capture != 0;
  /* Room to keep the table, before the copy node that will read it (even
   * when a step below fails: the table is kept either way). */
  if (hold && !fa_cuda_room_to_hold(cu))
    return fa_fail(rt, FA_ERROR_OUT_OF_MEMORY, "out of memory");
  /* (It stores out 4 values, 8 bytes, at a time.) */
  if (p->combine && p->k->artifact.fused_combine && p->tiles > 0 && p->out &&
      (uintptr_t)p->out->data % 8 == 0)
    p->merge_ctr = fa_cuda_merge_counters(cu, p->stream, p->capture, p->tiles, &p->slice_words);
  CUresult r = 0;
  if (p->counter_bytes)
    r = drv->cuMemsetD32Async(p->ws + p->table_bytes, 0, 1, stream);
  /* Packed rows past cu_seqlens_q[B] belong to no tile: lse_s -inf makes
   * the combine write them as out 0, lse -inf (never unwritten memory). */
  if (r == 0 && p->combine && p->varlen_q && !p->merge_ctr)
    r = drv->cuMemsetD32Async(p->parts + p->out_bytes, 0xFF800000u,
                              (size_t)(p->splits * p->b * p->h * p->sq), stream);
  size_t table = (size_t)p->words * sizeof(int32_t);
  if (r == 0 && p->table_bytes)
    r = p->capture == 0 ? fa_cuda_staged_copy(cu, p->ws, p->table, table, p->stream)
                        : fa_cuda_copy_pageable(cu, p->ws, p->table, table, p->stream);
  /* Recorded (or its recording failed): kept either way, since a graph
   * may still hold the copy node. */
  if (hold) {
    p->kept = p->table;
    p->table = NULL;
  }
  if (r != 0)
    return fa_fail(rt, FA_ERROR_CUDA, "preparing the launch failed: %s", fa_cu_error(drv, r));
  return FA_OK;
}

/* The attention kernel's tensor maps of the call's tensors, encoded and
 * dropped (not a split-KV partial kernel's out and lse). */
static fa_status probe_maps(fa_runtime *rt, const fa_cuda *cu, const launch_plan *p) {
  const bool partial = p->combine != NULL;
  for (int i = 0; i < p->abi->num_params; ++i) {
    const fa_param *m = &p->abi->params[i];
    if (m->kind != FA_PARAM_TMA ||
        (partial && (!strcmp(m->arg, "out") || !strcmp(m->arg, "lse"))))
      continue;
    for (int j = 0; j < p->n; ++j) {
      fa_cu_tensor_map map;
      fa_status st = strcmp(p->names[j], m->arg)
                         ? FA_OK : fa_cuda_encode_map(rt, cu, p->k, &m->tma, &p->args[j], &map);
      if (st != FA_OK)
        return st;
    }
  }
  return FA_OK;
}

/* kv-cache append: k_new / v_new into the cache before the attention reads
 * it (the checks of run.c kept every position inside the cache). The
 * attention's tensor maps are encoded first, so that a call failing there
 * has not written the cache yet. */
static fa_status launch_append(fa_runtime *rt, const fa_cuda *cu, const launch_plan *p) {
  fa_status st = probe_maps(rt, cu, p);
  if (st != FA_OK)
    return st;
  fa_cu_tensor rows[4] = {fa_cu_tensor_of(&p->call->k_new), fa_cu_tensor_of(&p->call->v_new),
                          fa_cu_tensor_of(p->keys), fa_cu_tensor_of(p->v)};
  const char *row_names[4] = {"k_new", "v_new", "k", "v"};
  int64_t chunks = rows[0].shape[0] * rows[0].shape[1] * rows[0].shape[2] *
                   (rows[0].shape[3] / 8);
  if (chunks <= 0)
    return FA_OK;
  int64_t blocks = (chunks + 255) / 256;
  unsigned grid = blocks < (int64_t)p->sms * 8 ? (unsigned)blocks : p->sms * 8;
  kernel_launch l = {.function = p->k->cu_append, .abi = &p->k->artifact.abi[FA_ENTRY_APPEND],
                     .tensors = rows, .names = row_names, .n = 4, .grid = grid,
                     .tile_table = p->dtable, .page_table = p->pages};
  return launch_one(rt, cu, p->k, p->stream, &l);
}

/* The attention kernel on the call's own out and lse (no partial
 * results). */
static fa_status launch_attention(fa_runtime *rt, const fa_cuda *cu, const launch_plan *p) {
  kernel_launch l = {.function = p->attention, .abi = p->abi, .tensors = p->args,
                     .names = p->names, .n = p->n, .attention = true, .grid = p->grid,
                     .smem = (unsigned)p->k->artifact.smem, .tile_counter = p->counter,
                     .tile_table = p->dtable, .page_table = p->pages,
                     .inline_table = p->inline_table};
  return launch_one(rt, cu, p->k, p->stream, &l);
}

/* The combine kernel: the partial results into the caller's out and lse,
 * 128 threads a block, up to 16 blocks per SM. */
static fa_status launch_combine(fa_runtime *rt, const fa_cuda *cu, const launch_plan *p,
                                fa_cu_tensor pout, fa_cu_tensor plse) {
  fa_cu_tensor second[4] = {pout, plse, {p->out->data, 4, {p->b, p->sq, p->h, p->dv}},
                            {NULL, 0, {0}}};
  if (p->lse)
    second[3] = (fa_cu_tensor){p->lse->data, 3, {p->b, p->h, p->sq}};
  const char *second_names[4] = {"partial_out", "partial_lse", "out", "lse"};
  int64_t total = p->b * p->sq * p->h * p->dv;
  int64_t blocks = (total + 127) / 128;
  unsigned grid = blocks < (int64_t)p->sms * 16 ? (unsigned)(blocks > 0 ? blocks : 1)
                                                : p->sms * 16;
  kernel_launch l = {.function = p->k->cu_combine,
                     .abi = &p->k->artifact.abi[FA_ENTRY_COMBINE], .tensors = second,
                     .names = second_names, .n = p->lse ? 4 : 3, .grid = grid};
  return launch_one(rt, cu, p->k, p->stream, &l);
}

/* Split-KV: the partial kernel on the scratch's partial out and lse (and
 * with fused_combine the caller's out, lse and the merge counters), then
 * the combine kernel unless the partial kernel merged. */
static fa_status launch_split(fa_runtime *rt, const fa_cuda *cu, const launch_plan *p) {
  fa_cu_tensor pout = {(void *)(uintptr_t)p->parts, 5, {p->splits, p->b, p->sq, p->h, p->dv}};
  fa_cu_tensor plse = {(void *)(uintptr_t)(p->parts + p->out_bytes), 4,
                       {p->splits, p->b, p->h, p->sq, 0}};
  fa_cu_tensor first[5] = {fa_cu_tensor_of(p->q), fa_cu_tensor_of(p->keys),
                           fa_cu_tensor_of(p->v), pout, plse};
  const char *first_names[5] = {"q", "k", "v", "out", "lse"};
  void *merge[3] = {p->out->data, p->lse ? p->lse->data : NULL,
                    (void *)(uintptr_t)p->merge_ctr};
  kernel_launch l = {.function = p->attention, .abi = p->abi, .tensors = first,
                     .names = first_names, .n = 5, .attention = true, .grid = p->grid,
                     .smem = (unsigned)p->k->artifact.smem,
                     .tile_counter = p->counter, .tile_table = p->dtable,
                     .page_table = p->pages, .inline_table = p->inline_table,
                     .merge = p->k->artifact.fused_combine ? merge : NULL};
  fa_status st = launch_one(rt, cu, p->k, p->stream, &l);
  if (st != FA_OK || p->merge_ctr)
    return st;
  return launch_combine(rt, cu, p, pout, plse);
}

/* The driver calls of a planned launch. */
static fa_status run_plan(fa_runtime *rt, fa_cuda *cu, launch_plan *p) {
  if (!scratch_bytes(p)) {
    /* q's address stands for a counter the kernel never reads. */
    p->counter = p->takes_counter ? p->args[0].data : NULL;
    p->pages = p->k->artifact.page_table ? p->call->block_table.data : NULL;
    return launch_attention(rt, cu, p);
  }
  fa_status st = alloc_scratch(rt, cu, p);
  if (st == FA_OK)
    st = prepare_scratch(rt, cu, p);
  if (st == FA_OK && p->append)
    st = launch_append(rt, cu, p);
  if (st != FA_OK || (p->entries == 0 && p->k->artifact.tile_table))
    return st; /* (append only: no query rows to attend) */
  return p->combine ? launch_split(rt, cu, p) : launch_attention(rt, cu, p);
}

/* Releases what the plan owns, whatever happened: what captured nodes read
 * goes to their graph (or stays the runtime's), the scratch is freed on the
 * stream, the host table freed. Returns `st`, or the failure of the
 * scratch's release. */
static fa_status finish_plan(fa_runtime *rt, fa_cuda *cu, launch_plan *p, fa_status st) {
  fa_cuda_after_capture(cu, p->stream, p->kept, p->merge_ctr, p->slice_words);
  if (p->has_ws) {
    CUresult r = cu->drv.cuMemFreeAsync(p->ws, (CUstream)p->stream);
    if (st == FA_OK && r != 0)
      st = fa_fail(rt, FA_ERROR_CUDA, "cuMemFreeAsync failed: %s", fa_cu_error(&cu->drv, r));
  }
  free(p->table);
  return st;
}

static fa_status launch_in_context(fa_runtime *rt, fa_cuda *cu, fa_kernel *k,
                                   const fa_tensor *const *tensors, int n,
                                   const fa_attention_args *call, bool pages_on_device) {
  fa_status st = k->cu_function ? FA_OK : fa_cuda_load(rt, k);
  if (st != FA_OK)
    return st;
  plan_storage storage;
  launch_plan p = {.storage = &storage,
                   .tensors = tensors,
                   .call = call,
                   .pages_on_device = pages_on_device,
                   .stream = call->stream,
                   .sms = (unsigned)(cu->num_sms > 0 ? cu->num_sms : 1)};
  plan_start(&p, k, n);
  st = plan_launch(rt, cu, &p);
  if (st == FA_OK && !p.done)
    st = run_plan(rt, cu, &p);
  return finish_plan(rt, cu, &p, st);
}

/* The tensors must live on the runtime's device: a kernel of this runtime's
 * context cannot read another device's memory (nothing is launched then).
 * Device memory only (managed and host memory report the device they were
 * allocated from, but any device reaches them); a pointer the driver
 * cannot place is left to the launch. In the runtime's context. */
static fa_status check_devices(fa_runtime *rt, const fa_cuda *cu, const fa_kernel *k,
                               const fa_tensor *const *tensors, int n,
                               const fa_attention_args *call, bool pages_on_device) {
  if (!cu->drv.cuPointerGetAttribute)
    return FA_OK;
  const void *extra[3] = {call->k_new.data, call->v_new.data,
                          pages_on_device ? call->block_table.data : NULL};
  const char *extra_names[3] = {"k_new", "v_new", "block_table"};
  for (int i = 0; i < n + 3; ++i) {
    const void *ptr = i < n ? tensors[i]->data : extra[i - n];
    bool device = false;
    int ordinal = -1;
    if (ptr && fa_cuda_device_memory(cu, ptr, &device, &ordinal) == 0 && device &&
        ordinal != cu->device)
      return fa_fail(rt, FA_ERROR_INVALID_ARGUMENT,
                     "'%s' is on device %d, this runtime drives device %d (the "
                     "device current at its first CUDA use): use one runtime per device",
                     i < n ? k->artifact.arg_names[i] : extra_names[i - n], ordinal,
                     cu->device);
  }
  return FA_OK;
}

fa_status fa_cuda_launch(fa_runtime *rt, fa_kernel *k, const fa_tensor *const *tensors, int n,
                         const fa_attention_args *call, bool pages_on_device) {
  fa_cuda *cu;
  fa_status st = fa_cuda_get(rt, &cu);
  if (st != FA_OK)
    return st;
  /* The launch runs in the runtime's context; the caller's current context
   * is restored after it. */
  CUcontext prev;
  if (fa_cuda_enter(cu, &prev) != 0)
    return fa_fail(rt, FA_ERROR_CUDA, "cuCtxSetCurrent failed");
  st = check_devices(rt, cu, k, tensors, n, call, pages_on_device);
  if (st == FA_OK)
    st = launch_in_context(rt, cu, k, tensors, n, call, pages_on_device);
  fa_cuda_leave(cu, prev);
  return st;
}
