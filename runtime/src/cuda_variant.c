/*===- cuda_variant.c - which kernels a launch runs, and how wide ---------===*
 *
 * The choices a launch makes from the call's sizes and the SM count, with
 * no driver call: the twin kernels (automatic pack_gqa, one kv head per key
 * block), the split count of split-KV (FlashAttention's occupancy
 * heuristic) and the persistent grid.
 *
 *===----------------------------------------------------------------------===*/

#include "cuda_variant.h"

#include <math.h>

/* Tiles per split of a dense call: batch x Hq / G x ceil(Sq G / block_m)
 * (G the pack_groups with pack_gqa: Hq / Hkv, times the kv heads per key
 * block of a kernel that packs several). */
static int64_t dense_tiles(const fa_kernel *k, int64_t batch, int64_t sq, int64_t hq) {
  int64_t bm = k->artifact.block_m > 0 ? k->artifact.block_m : 1;
  int64_t g = fa_tile_groups(&k->artifact);
  return batch * (hq / g) * ((sq * g + bm - 1) / bm);
}

int64_t fa_num_splits_heuristic(const fa_kernel *k, int64_t batch, int64_t sq,
                                int64_t hq, int64_t sk, int64_t sms) {
  int64_t bn = k->artifact.block_n;
  return fa_num_splits_for(dense_tiles(k, batch, sq, hq), (sk + bn - 1) / bn, sms);
}

unsigned fa_launch_grid(int64_t units, unsigned sms) {
  return units > 0 && units < (int64_t)sms ? (unsigned)units : sms;
}

int64_t fa_num_splits_for(int64_t tiles, int64_t blocks, int64_t sms) {
  if (tiles <= 0 || blocks <= 0 || sms <= 0 || 10 * tiles >= 8 * sms)
    return 1;
  int64_t most = 128;
  if (most > sms)
    most = sms;
  if (most > blocks)
    most = blocks;
  double best = 0, eff[129];
  for (int64_t s = 1; s <= most; ++s) {
    double waves = (double)(tiles * s) / (double)sms;
    eff[s] = waves / ceil(waves);
    if (eff[s] > best)
      best = eff[s];
  }
  for (int64_t s = 1; s <= most; ++s)
    if (eff[s] >= FA_SPLIT_EFFICIENCY * best)
      return s;
  return 1;
}

int64_t fa_cuda_launch_tiles(const fa_kernel *k, bool table, int64_t entries,
                             const fa_tensor *q, const fa_tensor *keys) {
  if (table)
    return entries * (k->artifact.config.num_q_heads / fa_tile_groups(&k->artifact));
  if (q && keys && q->rank == 4 && keys->rank == 4)
    return dense_tiles(k, q->shape[0], q->shape[1], q->shape[2]);
  return 0;
}

int64_t fa_cuda_split_count(const fa_kernel *k, const int32_t *table, int64_t entries,
                            const fa_tensor *keys, int64_t tiles, unsigned sms) {
  if (!k->artifact.auto_splits)
    return k->artifact.config.num_splits;
  /* The key blocks of the longest sequence: the table's entries hold each
   * tile's key count in word 5. */
  int64_t longest = 0;
  if (table) {
    for (int64_t e = 1; e <= entries; ++e)
      if (table[8 * e + 5] > longest)
        longest = table[8 * e + 5];
  } else {
    longest = keys->shape[1];
  }
  return fa_num_splits_for(tiles, (longest + k->artifact.block_n - 1) / k->artifact.block_n,
                           (int64_t)sms);
}

/* `view` = kernel `k` seen through twin entries of its cubin: `fn` and
 * `dense` in place of the main and dense functions, with the twins' own
 * parameter lists (`role`, and its dense twin after it; the caller sets
 * the tile sizes that differ). */
static void twin_view(fa_kernel *view, const fa_kernel *k, void *fn, void *dense,
                      fa_entry_role role) {
  *view = *k;
  view->cu_function = fn;
  view->cu_dense = dense;
  view->artifact.abi[FA_ENTRY_MAIN] = k->artifact.abi[role];
  view->artifact.abi[FA_ENTRY_DENSE] = k->artifact.abi[role + 1];
}

/* The most query rows of one sequence in the call. */
static int64_t longest_query(const fa_kernel *k, const fa_tensor *q,
                             const fa_attention_args *call) {
  if (!(k->artifact.config.flags & FA_VARLEN_Q))
    return q->shape[1];
  int64_t longest = 0;
  const int32_t *starts = (const int32_t *)call->cu_seqlens_q.data;
  for (int64_t b = 0; b + 1 < call->cu_seqlens_q.shape[0]; ++b)
    if (starts[b + 1] - starts[b] > longest)
      longest = starts[b + 1] - starts[b];
  return longest;
}

/* Automatic pack_gqa: the packed entries when every sequence's queries of
 * a kv head fit one tile (q_len x G <= block_m: decode, speculative
 * decode), as FlashAttention-3 decides; measured on the H200, packing
 * longer prefills costs up to 16% (docs/BENCHMARKS.md). The launch then
 * sees the artifact through a view with the packed kernels, their
 * parameter lists (q's map grouped, never one of out: no TMA store) and G. */
static fa_kernel *packed_variant(fa_kernel *k, const fa_tensor *q,
                                 const fa_attention_args *call, fa_kernel *view) {
  if (!k->cu_packed || !q ||
      longest_query(k, q, call) * k->artifact.packed_groups > k->artifact.block_m)
    return k;
  twin_view(view, k, k->cu_packed, k->cu_dense_packed, FA_ENTRY_PACKED);
  view->artifact.pack_groups = k->artifact.packed_groups;
  return view;
}

/* Several kv heads per key block: HP times fewer tiles, each reading HP
 * heads of a page in one box. A call with too few of them to fill the SMs
 * (FlashAttention's 80% rule, counting one tile per sequence and head
 * group) would be split, and pay the combine: it takes the one-head
 * kernels, which have HP times more tiles. Measured on the H200 (docs/
 * BENCHMARKS.md): decode over 16-key pages, batch 1-16. */
static fa_kernel *kv1_variant(fa_kernel *k, const fa_tensor *q,
                              const fa_attention_args *call, int64_t sms, fa_kernel *view) {
  if (!k->cu_kv1 || !q)
    return k;
  int64_t seqs = k->artifact.config.flags & FA_VARLEN_Q ? call->cu_seqlens_q.shape[0] - 1
                                                        : q->shape[0];
  int64_t tiles = seqs * (k->artifact.config.num_q_heads / fa_tile_groups(&k->artifact));
  if (10 * tiles >= 8 * sms)
    return k;
  int hp = k->artifact.kv_heads_per_block;
  twin_view(view, k, k->cu_kv1, k->cu_dense_kv1, FA_ENTRY_KV1);
  view->artifact.block_n = k->artifact.block_n * hp;
  view->artifact.pack_groups = k->artifact.pack_groups / hp;
  view->artifact.kv_heads_per_block = 1;
  return view;
}

fa_kernel *fa_cuda_choose_variant(fa_kernel *k, const fa_tensor *q,
                                  const fa_attention_args *call, int64_t sms,
                                  fa_variant *views) {
  k = packed_variant(k, q, call, &views->packed);
  return kv1_variant(k, q, call, sms, &views->kv1);
}
