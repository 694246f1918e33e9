/*===- common.h - helpers of the runtime tests ---------------------*- C -*-===*
 *
 * CHECK macros, element conversion (f16 through the compiler's _Float16,
 * bf16 by bit rounding), seeded N(0,1)-like inputs, and a float64 reference
 * written plainly from docs/SEMANTICS.md (no tiling, no online softmax)
 * for dense / varlen / paged layouts with causal, window, GQA and the
 * kv-cache append.
 *
 *===----------------------------------------------------------------------===*/

#ifndef FA_RT_TESTS_COMMON_H
#define FA_RT_TESTS_COMMON_H

#include "flashattn/runtime.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_failures = 0;
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__);                  \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)
#define CHECK_STATUS(expr, expected, rt)                                       \
  do {                                                                         \
    fa_status s_ = (expr);                                                     \
    CHECK(s_ == (expected), "%s returned %s, expected %s (%s)", #expr,        \
          fa_status_string(s_), fa_status_string(expected),                   \
          fa_runtime_last_error(rt));                                          \
  } while (0)

static inline double to_double(fa_dtype t, const void *p, int64_t i) {
  switch (t) {
  case FA_F32: return ((const float *)p)[i];
  case FA_F16: return (double)((const _Float16 *)p)[i];
  case FA_BF16: {
    uint32_t bits = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
  }
  }
  return 0;
}

static inline void from_double(fa_dtype t, void *p, int64_t i, double v) {
  float f = (float)v;
  switch (t) {
  case FA_F32: ((float *)p)[i] = f; return;
  case FA_F16: ((_Float16 *)p)[i] = (_Float16)f; return;
  case FA_BF16: {
    uint32_t bits;
    memcpy(&bits, &f, sizeof(bits));
    ((uint16_t *)p)[i] = isnan(f) ? 0x7FC0
                                  : (uint16_t)((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
    return;
  }
  }
}


static inline int64_t numel(const fa_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; ++i)
    n *= t->shape[i];
  return n;
}

/* A tensor of `rank` dims with allocated storage of elem_size bytes. */
static inline fa_tensor make_tensor(int rank, const int64_t *shape, size_t elem_size) {
  fa_tensor t;
  memset(&t, 0, sizeof(t));
  t.rank = rank;
  for (int i = 0; i < rank; ++i)
    t.shape[i] = shape[i];
  t.data = calloc((size_t)(numel(&t) ? numel(&t) : 1), elem_size);
  return t;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static inline double rand_unit(void) { /* xorshift64*, uniform in [0, 1) */
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return (double)((g_rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}
static inline double rand_normal(void) { /* Box-Muller */
  double u = rand_unit() + 1e-12, v = rand_unit();
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static inline void fill_normal(fa_tensor *t, fa_dtype dt) {
  for (int64_t i = 0; i < numel(t); ++i)
    from_double(dt, t->data, i, rand_normal());
}
static inline void fill_nan(fa_tensor *t, fa_dtype dt) {
  for (int64_t i = 0; i < numel(t); ++i)
    from_double(dt, t->data, i, NAN);
}

/* Float64 reference. Writes ref_out [rows of q, Hq, Dv] (same layout as out)
 * and ref_lse (same layout as lse). The caller has applied the append to
 * copies of k/v when testing it (pass them here). */
static inline void reference(const fa_attention_config *c, const fa_attention_args *a,
                      double *ref_out, double *ref_lse) {
  const uint32_t f = c->flags;
  const int64_t hq = c->num_q_heads, hkv = c->num_kv_heads, d = c->head_dim,
                dv = c->head_dim_v;
  const int varlenQ = f & FA_VARLEN_Q, varlenK = f & FA_VARLEN_K,
            paged = f & FA_PAGED;
  const int64_t batch = varlenQ ? a->cu_seqlens_q.shape[0] - 1 : a->q.shape[0];
  const double scale = c->scale ? c->scale : 1.0 / sqrt((double)d);
  const int32_t *cuq = (const int32_t *)a->cu_seqlens_q.data,
                *cuk = (const int32_t *)a->cu_seqlens_k.data,
                *used = (const int32_t *)a->seqused_k.data,
                *bt = (const int32_t *)a->block_table.data,
                *cs = (const int32_t *)a->cache_seqlens.data;
  int64_t sqDense = varlenQ ? 0 : a->q.shape[1];
  for (int64_t b = 0; b < batch; ++b) {
    int64_t qOff = varlenQ ? cuq[b] : 0;
    int64_t sq = varlenQ ? cuq[b + 1] - cuq[b] : sqDense;
    int64_t kOff = varlenK ? cuk[b] : 0, sk;
    int64_t snew = (f & FA_APPEND) ? a->k_new.shape[1] : 0;
    if (f & FA_APPEND)
      sk = cs[b] + snew;
    else if (f & FA_SEQUSED_K)
      sk = used[b];
    else if (varlenK)
      sk = cuk[b + 1] - cuk[b];
    else
      sk = a->k.shape[1];
    for (int64_t h = 0; h < hq; ++h) {
      int64_t g = h / (hq / hkv);
      for (int64_t i = 0; i < sq; ++i) {
        int64_t row = varlenQ ? qOff + i : b * sqDense + i;
        double *s = (double *)malloc(sizeof(double) * (size_t)(sk ? sk : 1));
        int64_t *kidx = (int64_t *)malloc(sizeof(int64_t) * (size_t)(sk ? sk : 1));
        double mx = -INFINITY;
        for (int64_t j = 0; j < sk; ++j) {
          /* Element offset of key row j (head g, column 0). */
          int64_t r;
          const void *kbuf = a->k.data;
          int fresh = (f & FA_APPEND) && j >= cs[b];
          if (fresh) {
            r = (b * snew + (j - cs[b])) * hkv + g;
            kbuf = a->k_new.data;
          } else if (paged) {
            int64_t ps = c->page_size;
            r = ((int64_t)bt[b * a->block_table.shape[1] + j / ps] * ps + j % ps) * hkv + g;
          } else if (varlenK) {
            r = (kOff + j) * hkv + g;
          } else {
            r = (b * a->k.shape[1] + j) * hkv + g;
          }
          kidx[j] = fresh ? -1 - r : r;
          double dot = 0;
          for (int64_t x = 0; x < d; ++x)
            dot += to_double(c->dtype, a->q.data, (row * hq + h) * d + x) *
                   to_double(c->dtype, kbuf, r * d + x);
          s[j] = scale * dot;
          int64_t off = sk - sq;
          int ok = 1;
          if (c->causal == FA_CAUSAL_TOP_LEFT) ok = ok && j <= i;
          if (c->causal == FA_CAUSAL_BOTTOM_RIGHT) ok = ok && j <= i + off;
          if (c->window_left >= 0) ok = ok && j >= i + off - c->window_left;
          if (c->window_right >= 0) ok = ok && j <= i + off + c->window_right;
          if (!ok)
            s[j] = -INFINITY;
          if (s[j] > mx)
            mx = s[j];
        }
        double sum = 0;
        for (int64_t j = 0; j < sk; ++j)
          sum += s[j] == -INFINITY ? 0 : exp(s[j] - mx);
        for (int64_t x = 0; x < dv; ++x) {
          double acc = 0;
          for (int64_t j = 0; j < sk; ++j) {
            if (s[j] == -INFINITY)
              continue;
            int64_t r = kidx[j] < 0 ? -1 - kidx[j] : kidx[j];
            const void *vbuf = kidx[j] < 0 ? a->v_new.data : a->v.data;
            acc += exp(s[j] - mx) * to_double(c->dtype, vbuf, r * dv + x);
          }
          ref_out[(row * hq + h) * dv + x] = sum > 0 ? acc / sum : 0;
        }
        if (ref_lse) {
          int64_t li = varlenQ ? h * a->q.shape[0] + row : (b * hq + h) * sqDense + i;
          ref_lse[li] = sum > 0 ? mx + log(sum) : -INFINITY;
        }
        free(s);
        free(kidx);
      }
    }
  }
}

static inline fa_attention_args empty_args(void) {
  fa_attention_args a;
  memset(&a, 0, sizeof(a));
  a.struct_size = sizeof(a);
  return a;
}

/* A runtime with no disk cache and no compiler library (the test loads its
 * artifacts itself); NULL, counted as a failure, when creation fails. */
static inline fa_runtime *artifact_only_runtime(void) {
  fa_runtime_options opts = {0};
  opts.struct_size = sizeof(opts);
  opts.disable_disk_cache = 1;
  opts.compiler_library = "";
  fa_runtime *rt = NULL;
  CHECK_STATUS(fa_runtime_create(&opts, &rt), FA_OK, rt);
  return rt;
}

/* Runs `k` (a dense f16 kernel of 2 query heads, 1 kv head, head_dim 64)
 * on 1 x 3 queries x 5 keys: whether it ran and wrote out. */
static inline int run_small(fa_runtime *rt, fa_kernel *k) {
  fa_attention_args a = empty_args();
  a.q = make_tensor(4, (int64_t[]){1, 3, 2, 64}, 2);
  a.k = make_tensor(4, (int64_t[]){1, 5, 1, 64}, 2);
  a.v = make_tensor(4, (int64_t[]){1, 5, 1, 64}, 2);
  a.out = make_tensor(4, (int64_t[]){1, 3, 2, 64}, 2);
  fill_normal(&a.q, FA_F16); fill_normal(&a.k, FA_F16); fill_normal(&a.v, FA_F16);
  fill_nan(&a.out, FA_F16);
  int ok = fa_attention_run(rt, k, &a) == FA_OK &&
           !isnan(to_double(FA_F16, a.out.data, 0));
  free(a.q.data); free(a.k.data); free(a.v.data); free(a.out.data);
  return ok;
}

#endif
