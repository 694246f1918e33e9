/*===- config.c - attention configs: validation, canonical text, key ------===*
 *
 * The canonical text lists every field that changes the generated code, in
 * a fixed order; the cache key is XXH3-128 (xxHash, Collet) of that text and
 * the compiler version, so the runtime and the compiler (which links this
 * file's library) derive the same key from the same config.
 *
 *===----------------------------------------------------------------------===*/

#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

size_t fa_dtype_size(fa_dtype t) { return t == FA_F32 ? 4 : 2; }

const char *fa_dtype_name(fa_dtype t) {
  switch (t) {
  case FA_F32: return "f32";
  case FA_F16: return "f16";
  case FA_BF16: return "bf16";
  }
  return "?";
}

fa_attention_config fa_attention_config_default(void) {
  fa_attention_config c;
  memset(&c, 0, sizeof(c));
  c.struct_size = sizeof(c);
  c.target = FA_TARGET_HOST;
  c.dtype = c.out_dtype = FA_F16;
  c.num_q_heads = c.num_kv_heads = 1;
  c.head_dim = c.head_dim_v = 128;
  c.causal = FA_CAUSAL_NONE;
  c.window_left = c.window_right = -1;
  c.num_splits = 1;
  c.pack_gqa = -1;
  return c;
}

static bool validDtype(fa_dtype t) { return t == FA_F32 || t == FA_F16 || t == FA_BF16; }

bool fa_config_valid(const fa_attention_config *c, char *why, size_t n) {
#define BAD(...) do { snprintf(why, n, __VA_ARGS__); return false; } while (0)
  if (!c) BAD("null config");
  if (c->struct_size != sizeof(*c))
    BAD("config struct_size %u, expected %zu (ABI %d)", c->struct_size,
        sizeof(*c), FA_RT_ABI_VERSION);
  if (c->target != FA_TARGET_HOST && c->target != FA_TARGET_SM90) BAD("unknown target %d", (int)c->target);
  if (!validDtype(c->dtype)) BAD("unknown dtype %d", (int)c->dtype);
  if (!validDtype(c->out_dtype) || (c->out_dtype != c->dtype && c->out_dtype != FA_F32))
    BAD("out_dtype must be dtype or f32");
  if (c->num_q_heads <= 0 || c->num_kv_heads <= 0 || c->num_q_heads % c->num_kv_heads)
    BAD("num_q_heads (%d) must be a positive multiple of num_kv_heads (%d)", c->num_q_heads, c->num_kv_heads);
  if (c->head_dim <= 0 || c->head_dim_v <= 0 || c->head_dim > 512 || c->head_dim_v > 512)
    BAD("head_dim %d / head_dim_v %d out of range (1..512)", c->head_dim, c->head_dim_v);
  if ((c->flags & FA_PAGED) && !(c->flags & FA_SEQUSED_K)) BAD("FA_PAGED needs FA_SEQUSED_K");
  if ((c->flags & FA_PAGED) && (c->flags & FA_VARLEN_K)) BAD("FA_PAGED and FA_VARLEN_K exclude each other");
  if ((c->flags & FA_PAGED) ? c->page_size <= 0 : c->page_size != 0) BAD("page_size %d does not match FA_PAGED", c->page_size);
  if ((c->flags & FA_APPEND) && (c->flags & FA_VARLEN_K)) BAD("FA_APPEND needs a dense or paged cache");
  if ((c->flags & FA_ALIBI_PER_BATCH) && !(c->flags & FA_ALIBI)) BAD("FA_ALIBI_PER_BATCH needs FA_ALIBI");
  if (c->causal < FA_CAUSAL_NONE || c->causal > FA_CAUSAL_BOTTOM_RIGHT) BAD("unknown causal %d", (int)c->causal);
  if (c->window_left < -1 || c->window_right < -1) BAD("window values must be >= -1");
  if (!(c->softcap >= 0) || isinf(c->softcap)) BAD("softcap must be finite and >= 0");
  if (!isfinite(c->scale)) BAD("scale must be finite");
  if (c->num_splits < 0 || c->num_splits > 256) BAD("num_splits must be in [0, 256]");
  if (c->pack_gqa < -1 || c->pack_gqa > 1) BAD("pack_gqa must be -1, 0 or 1");
  return true;
#undef BAD
}

fa_status fa_config_validate(const fa_attention_config *c, char *why, size_t n) {
  char reason[160];
  if (fa_config_valid(c, reason, sizeof(reason)))
    return FA_OK;
  if (why && n)
    snprintf(why, n, "%s", reason);
  return FA_ERROR_INVALID_ARGUMENT;
}

int fa_config_canonical(const fa_attention_config *c, char *buf, size_t n) {
  char why[128];
  if (!fa_config_valid(c, why, sizeof(why)))
    return -1;
  /* %a prints floats exactly. */
  return snprintf(buf, n,
                  "flashattn.attention/v1 target=%s dtype=%s out=%s hq=%d "
                  "hkv=%d d=%d dv=%d flags=0x%x page=%d causal=%d win=%d,%d "
                  "softcap=%a scale=%a splits=%d pack=%d regions=%s",
                  c->target == FA_TARGET_HOST ? "host" : "sm90",
                  fa_dtype_name(c->dtype), fa_dtype_name(c->out_dtype),
                  c->num_q_heads, c->num_kv_heads, c->head_dim, c->head_dim_v,
                  c->flags, c->page_size, (int)c->causal, c->window_left,
                  c->window_right, (double)c->softcap, (double)c->scale,
                  c->num_splits, c->pack_gqa, c->regions ? c->regions : "");
}

const char *fa_host_cpu_level(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return "x86-64-v4";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("bmi2"))
    return "x86-64-v3";
  return "x86-64";
#else
  return "generic";
#endif
}

fa_status fa_config_key_at(const fa_attention_config *c, const char *version,
                           const char *level, char key[33]) {
  if (!c || !key)
    return FA_ERROR_INVALID_ARGUMENT;
  int len = fa_config_canonical(c, NULL, 0);
  if (len < 0)
    return FA_ERROR_INVALID_ARGUMENT;
  XXH3_state_t *state = XXH3_createState();
  if (!state)
    return FA_ERROR_OUT_OF_MEMORY;
  char *text = (char *)malloc((size_t)len + 1);
  if (!text) {
    XXH3_freeState(state);
    return FA_ERROR_OUT_OF_MEMORY;
  }
  fa_config_canonical(c, text, (size_t)len + 1);
  XXH3_128bits_reset(state);
  XXH3_128bits_update(state, text, (size_t)len);
  XXH3_128bits_update(state, "\n", 1);
  if (version)
    XXH3_128bits_update(state, version, strlen(version));
  if (c->target == FA_TARGET_HOST) {
    XXH3_128bits_update(state, "\n", 1);
    XXH3_128bits_update(state, level, strlen(level));
  }
  XXH128_hash_t h = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  free(text);
  snprintf(key, 33, "%016llx%016llx", (unsigned long long)h.high64,
           (unsigned long long)h.low64);
  return FA_OK;
}

fa_status fa_config_key(const fa_attention_config *c, const char *version,
                        char key[33]) {
  return fa_config_key_at(c, version, fa_host_cpu_level(), key);
}

