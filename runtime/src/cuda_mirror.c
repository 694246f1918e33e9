/*===- cuda_mirror.c - device mirrors of host block_tables ----------------===*
 *
 * A host block_table's device mirror on a stream: one of the stream's
 * FA_MIRRORS_PER_STREAM buffers (its slot, cuda_stream.c). A buffer holding
 * a table of the same size and XXH3-128 is used as it is. Otherwise, when a
 * buffer of this size differs from the new table in at most FA_MIRROR_SPANS
 * runs covering at most a quarter of it (a decode step in which some
 * sequences took a new page), only those runs are copied into the closest
 * such buffer (a patch; on HMM/ATS devices the range from the first run to
 * the end of the last, through one pinned block); else the least recently
 * used buffer is refilled whole. Copies go from the mirror's host copy
 * (pageable, or on HMM/ATS devices through fa_cuda_staged_copy's pinned
 * blocks), so that the caller may change its table once the call returns.
 * The kernels then read it as a device block_table. Calls on one stream run
 * in order, so a copy lands after the kernels that read the buffer's
 * previous contents. A grown buffer's predecessor is retired (freed at
 * release). Decode steps pass the same block_table to every layer until a
 * sequence takes a new page: most calls copy nothing, and the others a few
 * entries.
 *
 *===----------------------------------------------------------------------===*/

#include "cuda_context.h"

#include <stdlib.h>
#include <string.h>

/* A run of changed entries, and the runs of a patch. */
typedef struct entry_span {
  size_t first, count;
} entry_span;

typedef struct mirror_patch {
  entry_span span[FA_MIRROR_SPANS];
  int count;
} mirror_patch;

/* The runs of entries in which `now` differs from `old` (n entries each):
 * at most FA_MIRROR_SPANS of them, runs fewer than FA_MIRROR_GAP equal
 * entries apart joined into one. Their number (0: the same contents) and
 * in `entries` how many entries they cover; -1 when more runs would be
 * needed. Equal stretches are skipped 64 bytes at a time. */
static int changed_spans(const int32_t *old, const int32_t *now, size_t n, entry_span *spans,
                         size_t *entries) {
  int k = 0;
  *entries = 0;
  for (size_t i = 0; i < n;) {
    if (i % 16 == 0 && n - i >= 16 && memcmp(old + i, now + i, 64) == 0) {
      i += 16;
      continue;
    }
    if (old[i] != now[i]) {
      size_t end = k ? spans[k - 1].first + spans[k - 1].count : 0;
      if (k && i - end < FA_MIRROR_GAP) {
        *entries += i + 1 - end;
        spans[k - 1].count = i + 1 - spans[k - 1].first;
      } else {
        if (k == FA_MIRROR_SPANS)
          return -1;
        spans[k++] = (entry_span){i, 1};
        *entries += 1;
      }
    }
    ++i;
  }
  return k;
}

/* Marks mirror `m` as holding a table of `bytes` with `hash`, used at call
 * `now`, once its copies are enqueued; its device address. */
static uint64_t mirror_holds(fa_table_mirror *m, size_t bytes, XXH128_hash_t hash,
                             uint64_t now) {
  m->bytes = bytes;
  m->hash = hash;
  m->used = now;
  return m->ptr;
}

/* The mirror of `s` that holds a table of `bytes` with `hash`, or NULL and
 * in *lru the least recently used one. */
static fa_table_mirror *same_table(fa_stream_state *s, size_t bytes, XXH128_hash_t hash,
                                   fa_table_mirror **lru) {
  *lru = NULL;
  for (int j = 0; j < FA_MIRRORS_PER_STREAM; ++j) {
    fa_table_mirror *c = &s->mirror[j];
    if (c->bytes == bytes && XXH128_isEqual(hash, c->hash))
      return c;
    if (!*lru || c->used < (*lru)->used)
      *lru = c;
  }
  return NULL;
}

/* The mirror of this size that the fewest entries separate from `table`
 * (within the patch limits: FA_MIRROR_SPANS runs, under a quarter of the
 * entries), with those runs in *patch; NULL when none is. */
static fa_table_mirror *closest_table(fa_stream_state *s, const int32_t *table, size_t bytes,
                                      mirror_patch *patch) {
  const size_t n = bytes / sizeof(int32_t);
  fa_table_mirror *base = NULL;
  entry_span tried[FA_MIRROR_SPANS];
  size_t fewest = n / 4 + 1;
  for (int j = 0; j < FA_MIRRORS_PER_STREAM; ++j) {
    fa_table_mirror *c = &s->mirror[j];
    size_t entries;
    int kc;
    if (c->bytes != bytes || !c->shadow ||
        (kc = changed_spans(c->shadow, table, n, tried, &entries)) < 0 || entries >= fewest)
      continue;
    base = c;
    fewest = entries;
    patch->count = kc;
    memcpy(patch->span, tried, sizeof(patch->span));
  }
  return base;
}

/* Copies the runs of `patch` from `table` into mirror `base` (its host copy,
 * then the device buffer). Invalid until every run is enqueued; a failed
 * one leaves it the least recently used, refilled whole next. */
static bool patch_mirror(fa_cuda *cu, fa_table_mirror *base, const int32_t *table,
                         mirror_patch *patch, void *stream) {
  entry_span *spans = patch->span;
  int k = patch->count;
  base->bytes = 0;
  base->used = 0;
  for (int s = 0; s < k; ++s)
    memcpy(base->shadow + spans[s].first, table + spans[s].first,
           spans[s].count * sizeof(int32_t));
  if (k > 1 && cu->staging.pinned) {
    /* Through one pinned block: the range from the first run to the end
     * of the last, whose other entries are unchanged. */
    spans[0].count = spans[k - 1].first + spans[k - 1].count - spans[0].first;
    k = 1;
  }
  for (int s = 0; s < k; ++s)
    if (fa_cuda_staged_copy(cu, base->ptr + spans[s].first * sizeof(int32_t),
                            base->shadow + spans[s].first, spans[s].count * sizeof(int32_t),
                            stream) != 0)
      return false;
  return true;
}

/* Room in mirror `m` for `bytes`: a host copy and a device buffer of at
 * least twice the old capacity, the old buffer retired. */
static bool grow_mirror(fa_cuda *cu, fa_table_mirror *m, size_t bytes) {
  size_t cap = 2 * m->cap > bytes ? 2 * m->cap : bytes;
  int32_t *shadow = (int32_t *)malloc(cap);
  if (!shadow)
    return false;
  uint64_t ptr = 0;
  if (!fa_cuda_room_to_retire(cu) || fa_cu_alloc_relaxed(&cu->drv, &ptr, cap) != 0) {
    free(shadow);
    return false;
  }
  if (m->ptr)
    fa_cuda_retire(cu, m->ptr);
  free(m->shadow);
  m->shadow = shadow;
  m->ptr = ptr;
  m->cap = cap;
  return true;
}

/* Refills mirror `m` with the whole table: invalid from here until its new
 * contents are enqueued, so that a step that fails leaves no stale match
 * behind. */
static bool refill_mirror(fa_cuda *cu, fa_table_mirror *m, const int32_t *table, size_t bytes,
                          void *stream) {
  m->bytes = 0;
  if ((m->cap < bytes || !m->shadow) && !grow_mirror(cu, m, bytes))
    return false;
  /* From the mirror's host copy even when the caller's table is pinned:
   * the driver stages a small pageable copy into its command stream,
   * which the kernel waits for less than for a copy-engine read of pinned
   * memory (measured on the H200, decode with a host block_table that
   * changes every call: 0.94-0.96 of dense this way, 0.81-0.92 copying
   * from the caller's pinned table; docs/BENCHMARKS.md). */
  memcpy(m->shadow, table, bytes);
  return fa_cuda_staged_copy(cu, m->ptr, m->shadow, bytes, stream) == 0;
}

uint64_t fa_cuda_block_table_mirror(fa_cuda *cu, void *stream, const fa_tensor *bt) {
  size_t bytes = (size_t)(bt->shape[0] * bt->shape[1]) * sizeof(int32_t);
  if (!cu->drv.cuMemAlloc || !cu->drv.cuMemFree || !cu->drv.cuMemcpyHtoDAsync || !bytes ||
      stream == FA_CU_STREAM_PER_THREAD)
    return 0;
  fa_stream_state *s = fa_cuda_stream_slot(cu, stream);
  if (!s)
    return 0;
  uint64_t now = ++s->calls;
  const int32_t *table = (const int32_t *)bt->data;
  XXH128_hash_t hash = XXH3_128bits(table, bytes);
  fa_table_mirror *lru;
  fa_table_mirror *same = same_table(s, bytes, hash, &lru);
  if (same) {
    same->used = now;
    return same->ptr;
  }
  mirror_patch patch;
  fa_table_mirror *base = closest_table(s, table, bytes, &patch);
  if (base)
    return patch_mirror(cu, base, table, &patch, stream) ? mirror_holds(base, bytes, hash, now)
                                                          : 0;
  return refill_mirror(cu, lru, table, bytes, stream) ? mirror_holds(lru, bytes, hash, now) : 0;
}
