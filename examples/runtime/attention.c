/*===- attention.c - one attention through the public runtime API ---------===*
 *
 * A model runtime's view: link libflashattn_rt only (C11), describe the
 * attention (Llama-3-8B heads: 32 query / 8 kv heads, head_dim 128, bf16,
 * causal bottom-right, lse), get the kernel (memory cache, disk cache, or
 * compiled on a miss by the compiler library named by
 * FLASHATTN_COMPILER_LIB), run it on a 1 x 256 x 256 problem, and print where
 * the kernel came from, how long that took, and how far a few output rows are
 * from a float64 recomputation.
 *
 * Usage: attention [ARTIFACT.faa]   (load a precompiled artifact instead)
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 199309L
#include "flashattn/runtime.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static float bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof(f));
  return f;
}
static uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof(bits));
  return (uint16_t)((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

int main(int argc, char **argv) {
  enum { B = 1, S = 256, HQ = 32, HKV = 8, D = 128 };
  fa_runtime *rt = NULL;
  fa_status st = fa_runtime_create(NULL, &rt);
  if (st != FA_OK) {
    fprintf(stderr, "fa_runtime_create: %s\n", fa_status_string(st));
    return 1;
  }
  fa_attention_config c = fa_attention_config_default();
  c.dtype = c.out_dtype = FA_BF16;
  c.num_q_heads = HQ;
  c.num_kv_heads = HKV;
  c.head_dim = c.head_dim_v = D;
  c.causal = FA_CAUSAL_BOTTOM_RIGHT;
  c.flags = FA_WITH_LSE;

  fa_kernel *k = NULL;
  double t0 = now_ms();
  st = argc > 1 ? fa_kernel_load_artifact_file(rt, argv[1], &k)
                : fa_kernel_get(rt, &c, &k);
  double get_ms = now_ms() - t0;
  if (st != FA_OK) {
    fprintf(stderr, "getting the kernel failed: %s: %s\n", fa_status_string(st),
            fa_runtime_last_error(rt));
    fa_runtime_destroy(rt);
    return 1;
  }
  fa_cache_stats cs;
  fa_runtime_cache_stats(rt, &cs);
  const char *source = argc > 1        ? "artifact file"
                       : cs.compiles   ? "compiled (cache miss)"
                       : cs.disk_hits  ? "disk cache"
                                       : "memory cache";
  printf("kernel %s: %s in %.1f ms\n", fa_kernel_key(k), source, get_ms);

  size_t nq = (size_t)B * S * HQ * D, nk = (size_t)B * S * HKV * D;
  uint16_t *q = malloc(nq * 2), *kk = malloc(nk * 2), *v = malloc(nk * 2),
           *out = malloc(nq * 2);
  float *lse = malloc((size_t)B * HQ * S * sizeof(float));
  srand(1);
  for (size_t i = 0; i < nq; ++i)
    q[i] = f32_to_bf16((float)rand() / RAND_MAX - 0.5f);
  for (size_t i = 0; i < nk; ++i) {
    kk[i] = f32_to_bf16((float)rand() / RAND_MAX - 0.5f);
    v[i] = f32_to_bf16((float)rand() / RAND_MAX - 0.5f);
  }
  fa_attention_args a;
  memset(&a, 0, sizeof(a));
  a.struct_size = sizeof(a);
  a.q = (fa_tensor){q, 4, {B, S, HQ, D}};
  a.k = (fa_tensor){kk, 4, {B, S, HKV, D}};
  a.v = (fa_tensor){v, 4, {B, S, HKV, D}};
  a.out = (fa_tensor){out, 4, {B, S, HQ, D}};
  a.lse = (fa_tensor){lse, 3, {B, HQ, S}};
  t0 = now_ms();
  st = fa_attention_run(rt, k, &a);
  double run_ms = now_ms() - t0;
  if (st != FA_OK) {
    fprintf(stderr, "fa_attention_run: %s: %s\n", fa_status_string(st),
            fa_runtime_last_error(rt));
    return 1;
  }
  /* Recompute rows 0, 100 and 255 of head 5 in float64. */
  double max_err = 0;
  int rows[] = {0, 100, 255}, h = 5, g = h / (HQ / HKV);
  for (int r = 0; r < 3; ++r) {
    int i = rows[r];
    double s[S], mx = -INFINITY, sum = 0;
    for (int j = 0; j <= i; ++j) {
      double dot = 0;
      for (int x = 0; x < D; ++x)
        dot += bf16_to_f32(q[((size_t)i * HQ + h) * D + x]) *
               bf16_to_f32(kk[((size_t)j * HKV + g) * D + x]);
      s[j] = dot / sqrt((double)D);
      mx = fmax(mx, s[j]);
    }
    for (int j = 0; j <= i; ++j)
      sum += exp(s[j] - mx);
    for (int x = 0; x < D; ++x) {
      double ref = 0;
      for (int j = 0; j <= i; ++j)
        ref += exp(s[j] - mx) * bf16_to_f32(v[((size_t)j * HKV + g) * D + x]);
      ref /= sum;
      max_err = fmax(max_err, fabs(bf16_to_f32(out[((size_t)i * HQ + h) * D + x]) - ref));
    }
  }
  printf("ran 1x%dx%d (GQA %d/%d, head_dim %d, bf16, causal) in %.2f ms; "
         "max |out - float64| over 3 rows: %.2e\n",
         S, S, HQ, HKV, D, run_ms, max_err);
  free(q); free(kk); free(v); free(out); free(lse);
  fa_runtime_destroy(rt);
  return max_err < 2e-2 ? 0 : 1;
}
