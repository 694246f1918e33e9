/*===- schedule.c - the sm90 kernels' tile table --------------------------===*
 *
 * A cubin with metadata "tile_table": true (varlen, seqused_k, paged KV,
 * append: the kernel's `tile_table` parameter) runs
 * over a table of (sequence, m_block) entries the runtime builds per launch
 * from the host-readable cu_seqlens_q, cu_seqlens_k and seqused_k, so that
 * tiles exist only for real rows: sequence b of q_len queries gets
 * ceil(q_len x G / block_m) entries (G = pack_groups, query heads folded
 * into a tile's rows with pack_gqa), a sequence with no queries none. Each
 * entry serves every head (the kernel's tiles go in groups of hg heads,
 * entry by entry in a group, head fastest).
 *
 * Layout (i32): entry 0 = {E, append pairs index (below), hg, 0, ...}, hg
 * the heads per group of the kernel's tile order (tiles go group by group,
 * entry by entry in a group, head fastest: the K/V of a group's heads fit
 * 32 MB of L2); word 3, zero, is the lpt scheduler's tile counter when the
 * launch needs one (cuda_launch.c: no separate memset); then E entries of 8: q
 * position, q
 * batch, q length, k position, k batch, k length, m_block, sequence; q/k
 * position and batch are the TMA coordinates of the sequence's first
 * row (varlen: cu_seqlens[b] and 0; dense: 0 and b), k length is
 * seqused_k[b] when given. Paged KV: after the entries, the page list of
 * each sequence with queries (block_table[b, 0 : ceil(k_len / page_size)]),
 * and an entry's k position is the table index where its sequence's list
 * starts (k batch 0). With the block_table in device memory the kernels
 * read it there (their page_table parameter): no lists are copied, and
 * the k position is b x max_pages, the start of row b. kv-cache append: k
 * length cache_seqlens[b] + S_new, every sequence's page list (the append
 * kernel writes through it even where a sequence has no queries), and
 * word 1 of entry 0 is the index of B pairs (cache_seqlens[b], page list
 * index) the append kernel reads.
 *
 * Order: longest first (FlashAttention-3's LPT order, which its varlen
 * scheduler gets by sorting batches by length), by the key blocks each tile
 * visits under the mask (the kernel's key range, docs/ARCHITECTURE.md "Rules every lowering keeps"), ties in
 * (sequence, m_block) order.
 *
 *===----------------------------------------------------------------------===*/

#include "internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  int32_t f[8];
  int64_t work;
} tile_entry;

static int by_work(const void *a, const void *b) {
  const tile_entry *x = (const tile_entry *)a, *y = (const tile_entry *)b;
  if (x->work != y->work)
    return x->work > y->work ? -1 : 1;
  if (x->f[7] != y->f[7])
    return x->f[7] < y->f[7] ? -1 : 1;
  return x->f[6] < y->f[6] ? -1 : x->f[6] > y->f[6];
}

/* The heads per group of the kernel's tile order (word 2 of the table):
 * as many as have their K and V rows (kv_rows keys of head_dim + head_dim_v
 * 2-byte elements per kv head) in 32 MB of L2, times the query heads per
 * kv head unless pack_gqa folded them into the rows; 1 to `heads`.
 * FlashAttention-3's scheduler groups heads the same way. When no sequence
 * has more than one tile per head (decode), a head's K/V is read once
 * whatever the order: all heads in one group, so that the CTAs at work
 * read the heads of the same keys together (the rows of a key's heads are
 * adjacent in memory; head-major order measured 3-5% slower for paged
 * decode at batch 64-128). */
static int64_t l2_head_group(const fa_kernel *k, int64_t heads, int64_t kv_rows,
                             bool one_tile_per_sequence) {
  const fa_attention_config *c = &k->artifact.config;
  if (one_tile_per_sequence)
    return heads;
  /* A tile head covers kv_heads_per_block kv heads. */
  int64_t bytes = kv_rows * (c->head_dim + c->head_dim_v) * 2 *
                  (k->artifact.kv_heads_per_block > 1 ? k->artifact.kv_heads_per_block : 1);
  int64_t hg = bytes > 0 ? ((int64_t)32 << 20) / bytes : heads;
  if (hg < 1)
    hg = 1;
  if (k->artifact.pack_groups <= 1 && c->num_kv_heads > 0)
    hg *= c->num_q_heads / c->num_kv_heads;
  return hg < heads ? hg : heads;
}

/* Key blocks of block_n a tile of rows [r0, r1) (packed by g) visits:
 * [lo, hi) with hi = min(Sk, pos1 + c) and lo = pos0 + Sk - Sq - left. */
static int64_t tile_blocks(const fa_attention_config *c, int64_t r0, int64_t r1,
                           int64_t g, int64_t sq, int64_t sk, int64_t bn) {
  int64_t pos0 = r0 / g, pos1 = (r1 + g - 1) / g, off = sk - sq;
  int64_t hi = sk, lo = 0;
  if (c->causal == FA_CAUSAL_TOP_LEFT && pos1 < hi)
    hi = pos1;
  if (c->causal == FA_CAUSAL_BOTTOM_RIGHT && pos1 + off < hi)
    hi = pos1 + off;
  if (c->window_right >= 0 && pos1 + off + c->window_right < hi)
    hi = pos1 + off + c->window_right;
  if (c->window_left >= 0 && pos0 + off - c->window_left > lo)
    lo = pos0 + off - c->window_left;
  if (hi <= 0)
    return 0;
  int64_t n = (hi + bn - 1) / bn - lo / bn;
  return n > 0 ? n : 0;
}

/* The call's sequences as the table sees them. */
typedef struct table_call {
  const fa_attention_args *a;
  bool varlen_q, varlen_k, used_k, paged, append, pages_on_device;
  int64_t batch, s_new, page_size, table_cols, bm, g;
} table_call;

static int64_t q_len(const table_call *t, int64_t b) {
  const int32_t *cu_q = (const int32_t *)t->a->cu_seqlens_q.data;
  return t->varlen_q ? cu_q[b + 1] - cu_q[b] : t->a->q.shape[1];
}

/* The keys of sequence b: cache_seqlens[b] + S_new with an append,
 * seqused_k[b] when given, else from cu_seqlens_k or the dense k. */
static int64_t k_len(const table_call *t, int64_t b) {
  const int32_t *cu_k = (const int32_t *)t->a->cu_seqlens_k.data;
  if (t->append)
    return ((const int32_t *)t->a->cache_seqlens.data)[b] + t->s_new;
  if (t->used_k)
    return ((const int32_t *)t->a->seqused_k.data)[b];
  return t->varlen_k ? cu_k[b + 1] - cu_k[b] : t->a->k.shape[1];
}

/* Whether sequence b's page list is copied into the table. */
static bool copies_pages(const table_call *t, int64_t b) {
  return t->paged && !t->pages_on_device && (q_len(t, b) > 0 || t->append);
}

/* The table's size: entries, page-list words (with the append's pairs),
 * the kv rows the tiles read, and whether no sequence has more than one
 * tile per head. */
typedef struct table_size {
  int64_t total, page_words, kv_rows;
  bool single;
} table_size;

static table_size size_table(const table_call *t) {
  table_size z = {0, 0, 0, true};
  for (int64_t b = 0; b < t->batch; ++b) {
    int64_t ql = q_len(t, b);
    z.total += (ql * t->g + t->bm - 1) / t->bm;
    z.single = z.single && ql * t->g <= t->bm;
    if (ql > 0)
      z.kv_rows += k_len(t, b);
    if (copies_pages(t, b))
      z.page_words += (k_len(t, b) + t->page_size - 1) / t->page_size;
  }
  if (t->append)
    z.page_words += 2 * t->batch;
  return z;
}

/* Sequence b's entries (appended to list at *n) and, in `out`, its page
 * list (at *page_at, then advanced) and its append pair (at pairs_at). */
static void add_sequence(const table_call *t, const fa_kernel *k, int64_t b, int64_t total,
                         int64_t pairs_at, int32_t *out, int64_t *page_at, tile_entry *list,
                         int64_t *n) {
  const fa_attention_args *a = t->a;
  int64_t q_pos = t->varlen_q ? ((const int32_t *)a->cu_seqlens_q.data)[b] : 0;
  int64_t ql = q_len(t, b), kl = k_len(t, b);
  int64_t k_pos = t->varlen_k ? ((const int32_t *)a->cu_seqlens_k.data)[b] : 0;
  if (t->paged && t->pages_on_device) {
    k_pos = b * t->table_cols;
  } else if (copies_pages(t, b)) {
    int64_t np = (kl + t->page_size - 1) / t->page_size;
    k_pos = *page_at;
    if (np > 0) /* (an empty block_table may have null data) */
      memcpy(&out[*page_at], &((const int32_t *)a->block_table.data)[b * t->table_cols],
             (size_t)np * sizeof(int32_t));
    *page_at += np;
  }
  if (t->append) {
    out[pairs_at + 2 * b] = ((const int32_t *)a->cache_seqlens.data)[b];
    out[pairs_at + 2 * b + 1] = (int32_t)(t->paged ? k_pos : 8 * (total + 1));
  }
  int64_t rows = ql * t->g, bm = t->bm;
  for (int64_t m = 0; m * bm < rows; ++m) {
    tile_entry *e = &list[(*n)++];
    int64_t r1 = (m + 1) * bm < rows ? (m + 1) * bm : rows;
    int32_t f[8] = {(int32_t)q_pos, t->varlen_q ? 0 : (int32_t)b, (int32_t)ql,
                    (int32_t)k_pos, t->varlen_k || t->paged ? 0 : (int32_t)b, (int32_t)kl,
                    (int32_t)m,     (int32_t)b};
    memcpy(e->f, f, sizeof(f));
    /* A tile with no keys still loads Q and writes its rows. */
    e->work = 1 + tile_blocks(&k->artifact.config, m * bm, r1, t->g, ql, kl,
                              k->artifact.block_n);
  }
}

fa_status fa_sm90_tile_table(fa_runtime *rt, const fa_kernel *k,
                             const fa_attention_args *a, bool pages_on_device,
                             int32_t **table, int64_t *entries, int64_t *words) {
  *table = NULL;
  *entries = 0;
  *words = 0;
  const fa_attention_config *c = &k->artifact.config;
  const bool varlen_q = c->flags & FA_VARLEN_Q, append = c->flags & FA_APPEND,
             paged = c->flags & FA_PAGED;
  const table_call t = {
      .a = a,
      .varlen_q = varlen_q,
      .varlen_k = c->flags & FA_VARLEN_K,
      .used_k = c->flags & FA_SEQUSED_K,
      .paged = paged,
      .append = append,
      .pages_on_device = pages_on_device,
      .batch = varlen_q ? a->cu_seqlens_q.shape[0] - 1 : a->q.shape[0],
      .s_new = append ? a->k_new.shape[1] : 0,
      .page_size = c->page_size,
      .table_cols = paged ? a->block_table.shape[1] : 0,
      .bm = k->artifact.block_m,
      .g = fa_tile_groups(&k->artifact)};
  if (t.bm <= 0 || k->artifact.block_n <= 0)
    return fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT,
                   "tile_table without block_m and block_n");
  const table_size z = size_table(&t);
  /* The kernel counts tiles (entries x heads) in i32. Tile heads: the
   * query heads, or the groups of G packed ones (the kv heads, or groups of
   * kv_heads_per_block of them). */
  int64_t heads = c->num_q_heads / t.g;
  if (z.total * heads >= INT32_MAX || 8 * (z.total + 1) + z.page_words >= INT32_MAX)
    return fa_fail(rt, FA_ERROR_UNSUPPORTED,
                   "%lld tiles x %lld heads exceed the kernel's i32 tile index",
                   (long long)z.total, (long long)heads);
  tile_entry *list = (tile_entry *)calloc((size_t)(z.total ? z.total : 1), sizeof(*list));
  int32_t *out = (int32_t *)calloc((size_t)(8 * (z.total + 1) + z.page_words), sizeof(int32_t));
  if (!list || !out) {
    free(list);
    free(out);
    return fa_fail(rt, FA_ERROR_OUT_OF_MEMORY, "tile table of %lld entries",
                   (long long)z.total);
  }
  /* The append kernel's (start, page list) pairs follow the page lists. */
  int64_t n = 0, page_at = 8 * (z.total + 1);
  int64_t pairs_at = page_at + z.page_words - (append ? 2 * t.batch : 0);
  for (int64_t b = 0; b < t.batch; ++b)
    add_sequence(&t, k, b, z.total, pairs_at, out, &page_at, list, &n);
  qsort(list, (size_t)n, sizeof(*list), by_work);
  out[0] = (int32_t)n;
  out[2] = (int32_t)l2_head_group(k, heads, z.kv_rows, z.single);
  if (append) {
    out[1] = (int32_t)pairs_at;
    page_at += 2 * t.batch;
  }
  for (int64_t i = 0; i < n; ++i)
    memcpy(&out[8 * (i + 1)], list[i].f, sizeof(list[i].f));
  free(list);
  *table = out;
  *entries = n;
  *words = page_at;
  return FA_OK;
}
