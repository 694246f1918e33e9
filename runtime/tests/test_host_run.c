/*===- test_host_run.c - host artifacts run against the float64 reference -===*
 *
 * Kernels are compiled on a cache miss by the compiler library (the path
 * comes from the build) into a fresh cache directory, then run through the
 * public API on seeded inputs with outputs poisoned (NaN) first, and checked
 * against the reference of common.h: dense GQA causal with lse at two shapes
 * (one with empty rows), varlen with empty sequences, paged + kv-cache append,
 * and split-KV decode with a window.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
#include "common.h"

static double max_err(const fa_attention_config *c, const fa_attention_args *a,
                      const double *ref, int64_t n, int *nan_seen) {
  double e = 0;
  for (int64_t i = 0; i < n; ++i) {
    double o = to_double(c->out_dtype, a->out.data, i);
    if (isnan(o))
      *nan_seen = 1;
    e = fmax(e, fabs(o - ref[i]));
  }
  return e;
}

static double lse_err(const fa_attention_args *a, const double *ref, int64_t n,
                      int *inf_mismatch) {
  double e = 0;
  for (int64_t i = 0; i < n; ++i) {
    double l = ((const float *)a->lse.data)[i];
    if (isinf(ref[i]) || isinf(l) || isnan(l))
      *inf_mismatch |= !(isinf(ref[i]) && isinf(l) && (ref[i] < 0) == (l < 0));
    else
      e = fmax(e, fabs(l - ref[i]));
  }
  return e;
}

/* Runs `a` with `k` and checks it; tol is an absolute tolerance on out. */
static void run_and_check(fa_runtime *rt, fa_kernel *k, fa_attention_args *a,
                          double tol, const char *name) {
  const fa_attention_config *c = fa_kernel_config(k);
  fill_nan(&a->out, c->out_dtype);
  if (a->lse.data)
    fill_nan(&a->lse, FA_F32);
  int64_t n = numel(&a->out);
  double *ref = (double *)calloc((size_t)n, sizeof(double));
  double *ref_lse = a->lse.data ? (double *)calloc((size_t)numel(&a->lse), sizeof(double)) : NULL;
  reference(c, a, ref, ref_lse);
  CHECK_STATUS(fa_attention_run(rt, k, a), FA_OK, rt);
  int nan_seen = 0, inf_mismatch = 0;
  double e = max_err(c, a, ref, n, &nan_seen);
  double le = ref_lse ? lse_err(a, ref_lse, numel(&a->lse), &inf_mismatch) : 0;
  printf("%-28s max_abs_err %.3e (tol %.1e)  lse_err %.3e\n", name, e, tol, le);
  CHECK(!nan_seen, "%s: NaN in the output", name);
  CHECK(e <= tol, "%s: max abs error %g > %g", name, e, tol);
  CHECK(!inf_mismatch && le <= 1e-3, "%s: lse error %g (inf mismatch %d)", name, le, inf_mismatch);
  free(ref);
  free(ref_lse);
}

int main(void) {
  char dir[] = "/tmp/fa-rt-run-XXXXXX";
  if (!mkdtemp(dir))
    return 1;
  fa_runtime_options opts = {0};
  opts.struct_size = sizeof(opts);
  opts.cache_dir = dir;
  opts.compiler_library = FA_TEST_COMPILER_LIB;
  fa_runtime *rt = NULL;
  CHECK_STATUS(fa_runtime_create(&opts, &rt), FA_OK, rt);
  if (!rt)
    return 1;

  /* Dense GQA 4/2, causal bottom-right, f32, lse; two shapes. */
  fa_attention_config c = fa_attention_config_default();
  c.dtype = c.out_dtype = FA_F32;
  c.num_q_heads = 4; c.num_kv_heads = 2; c.head_dim = c.head_dim_v = 64;
  c.causal = FA_CAUSAL_BOTTOM_RIGHT;
  c.flags = FA_WITH_LSE;
  fa_kernel *k = NULL;
  CHECK_STATUS(fa_kernel_get(rt, &c, &k), FA_OK, rt);
  int64_t shapes[2][3] = {{2, 37, 70}, {1, 80, 50}}; /* B, Sq, Sk */
  for (int s = 0; k && s < 2; ++s) {
    int64_t B = shapes[s][0], Sq = shapes[s][1], Sk = shapes[s][2];
    fa_attention_args a = empty_args();
    a.q = make_tensor(4, (int64_t[]){B, Sq, 4, 64}, 4);
    a.k = make_tensor(4, (int64_t[]){B, Sk, 2, 64}, 4);
    a.v = make_tensor(4, (int64_t[]){B, Sk, 2, 64}, 4);
    a.out = make_tensor(4, (int64_t[]){B, Sq, 4, 64}, 4);
    a.lse = make_tensor(3, (int64_t[]){B, 4, Sq}, 4);
    fill_normal(&a.q, c.dtype); fill_normal(&a.k, c.dtype); fill_normal(&a.v, c.dtype);
    run_and_check(rt, k, &a, 1e-4, s ? "dense_causal_empty_rows" : "dense_gqa_causal");
    free(a.q.data); free(a.k.data); free(a.v.data); free(a.out.data); free(a.lse.data);
  }

  /* Varlen bf16 with a sequence of zero queries and one of zero keys. */
  c = fa_attention_config_default();
  c.dtype = c.out_dtype = FA_BF16;
  c.num_q_heads = c.num_kv_heads = 2; c.head_dim = c.head_dim_v = 64;
  c.flags = FA_VARLEN_Q | FA_VARLEN_K | FA_WITH_LSE;
  c.causal = FA_CAUSAL_TOP_LEFT;
  CHECK_STATUS(fa_kernel_get(rt, &c, &k), FA_OK, rt);
  if (k) {
    fa_attention_args a = empty_args();
    int32_t cq[] = {0, 0, 30, 75}, ck[] = {0, 20, 20, 90};
    a.q = make_tensor(3, (int64_t[]){75, 2, 64}, 2);
    a.k = make_tensor(3, (int64_t[]){90, 2, 64}, 2);
    a.v = make_tensor(3, (int64_t[]){90, 2, 64}, 2);
    a.out = make_tensor(3, (int64_t[]){75, 2, 64}, 2);
    a.lse = make_tensor(2, (int64_t[]){2, 75}, 4);
    a.cu_seqlens_q = (fa_tensor){cq, 1, {4}};
    a.cu_seqlens_k = (fa_tensor){ck, 1, {4}};
    fill_normal(&a.q, c.dtype); fill_normal(&a.k, c.dtype); fill_normal(&a.v, c.dtype);
    run_and_check(rt, k, &a, 3e-2, "varlen_empty_sequences");
    free(a.q.data); free(a.k.data); free(a.v.data); free(a.out.data); free(a.lse.data);
  }

  /* Paged (pages of 16) f16 with kv-cache append of 2 rows, causal. */
  c = fa_attention_config_default();
  c.dtype = c.out_dtype = FA_F16;
  c.num_q_heads = 4; c.num_kv_heads = 2; c.head_dim = c.head_dim_v = 64;
  c.flags = FA_PAGED | FA_SEQUSED_K | FA_APPEND | FA_WITH_LSE;
  c.page_size = 16;
  c.causal = FA_CAUSAL_BOTTOM_RIGHT;
  CHECK_STATUS(fa_kernel_get(rt, &c, &k), FA_OK, rt);
  if (k) {
    fa_attention_args a = empty_args();
    int32_t bt[] = {3, 7, 1, 0, 2, 6, 5, 4}, used[] = {0, 0}, cs[] = {10, 45};
    a.q = make_tensor(4, (int64_t[]){2, 2, 4, 64}, 2);
    a.k = make_tensor(4, (int64_t[]){8, 16, 2, 64}, 2);
    a.v = make_tensor(4, (int64_t[]){8, 16, 2, 64}, 2);
    a.k_new = make_tensor(4, (int64_t[]){2, 2, 2, 64}, 2);
    a.v_new = make_tensor(4, (int64_t[]){2, 2, 2, 64}, 2);
    a.out = make_tensor(4, (int64_t[]){2, 2, 4, 64}, 2);
    a.lse = make_tensor(3, (int64_t[]){2, 4, 2}, 4);
    a.block_table = (fa_tensor){bt, 2, {2, 4}};
    a.seqused_k = (fa_tensor){used, 1, {2}};
    a.cache_seqlens = (fa_tensor){cs, 1, {2}};
    fill_normal(&a.q, c.dtype); fill_normal(&a.k, c.dtype); fill_normal(&a.v, c.dtype);
    fill_normal(&a.k_new, c.dtype); fill_normal(&a.v_new, c.dtype);
    run_and_check(rt, k, &a, 2e-2, "paged_append");
    /* The new rows landed in the cache through the block table. */
    int ok = 1;
    for (int b = 0; b < 2; ++b)
      for (int r = 0; r < 2; ++r) {
        int pos = cs[b] + r, page = bt[b * 4 + pos / 16], slot = pos % 16;
        for (int g = 0; g < 2; ++g)
          for (int x = 0; x < 64; ++x)
            ok &= to_double(FA_F16, a.k.data, ((page * 16 + slot) * 2 + g) * 64 + x) ==
                  to_double(FA_F16, a.k_new.data, ((b * 2 + r) * 2 + g) * 64 + x);
      }
    CHECK(ok, "appended rows are not in the paged cache");
    free(a.q.data); free(a.k.data); free(a.v.data); free(a.k_new.data);
    free(a.v_new.data); free(a.out.data); free(a.lse.data);
  }

  /* Split-KV decode (3 splits) with a sliding window, f16. */
  c = fa_attention_config_default();
  c.dtype = c.out_dtype = FA_F16;
  c.num_q_heads = 8; c.num_kv_heads = 2; c.head_dim = c.head_dim_v = 64;
  c.num_splits = 3;
  c.window_left = 100; c.window_right = 0;
  c.flags = FA_WITH_LSE;
  CHECK_STATUS(fa_kernel_get(rt, &c, &k), FA_OK, rt);
  if (k) {
    fa_attention_args a = empty_args();
    a.q = make_tensor(4, (int64_t[]){3, 1, 8, 64}, 2);
    a.k = make_tensor(4, (int64_t[]){3, 300, 2, 64}, 2);
    a.v = make_tensor(4, (int64_t[]){3, 300, 2, 64}, 2);
    a.out = make_tensor(4, (int64_t[]){3, 1, 8, 64}, 2);
    a.lse = make_tensor(3, (int64_t[]){3, 8, 1}, 4);
    fill_normal(&a.q, c.dtype); fill_normal(&a.k, c.dtype); fill_normal(&a.v, c.dtype);
    run_and_check(rt, k, &a, 2e-2, "split_kv_window_decode");
    free(a.q.data); free(a.k.data); free(a.v.data); free(a.out.data); free(a.lse.data);
  }

  fa_runtime_destroy(rt);
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "warning: could not remove %s\n", dir);
  printf("%s\n", g_failures ? "FAILED" : "all checks passed");
  return g_failures ? 1 : 0;
}
