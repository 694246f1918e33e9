/*===- test_cuda.c - the CUDA backend without a driver --------------------===*
 *
 * With FLASHATTN_LIBCUDA naming a library that does not exist, probing and
 * running an sm90 artifact answer FA_ERROR_NO_DRIVER with a message; nothing
 * crashes. Tensor-map (TMA) requirements are checked before the driver. The default libcuda.so.1 is probed too: on a machine with a
 * driver the test is skipped (77) rather than launching anything.
 *
 *===----------------------------------------------------------------------===*/

#define _ISOC11_SOURCE
#include <stdbool.h>

#include "common.h"

#include "abi_stub.h"
#include "flashattn/artifact.h"
#include "flashattn/version.h"

/* Internal (runtime/src/internal.h): the launch-time split heuristic. */
int64_t fa_num_splits_heuristic(const fa_kernel *k, int64_t batch,
                                int64_t sq, int64_t hq, int64_t sk, int64_t sms);
/* Internal (runtime/src/cuda_variant.c): the persistent kernels' grid. */
unsigned fa_launch_grid(int64_t units, unsigned sms);
/* Internal (runtime/src/schedule.c): the varlen tile table. */
fa_status fa_sm90_tile_table(fa_runtime *rt, const fa_kernel *k,
                             const fa_attention_args *args, bool pages_on_device,
                             int32_t **table, int64_t *entries, int64_t *words);
/* Internal (runtime/src/cuda_tma.c): the call's tensors against the tensor
 * maps of the main and dense entries. */
fa_status fa_tma_check_call(fa_runtime *rt, const fa_kernel *k, const char *const *names,
                            const fa_tensor *const *tensors, int n);

/* Builds a cubin artifact of config c with metadata `meta` as written
 * (a stand-in payload: cubins load without a driver, at their first
 * launch) and loads it into *k: fa_kernel_load_artifact's status. */
static fa_status load_cubin_as_is(fa_runtime *rt, const fa_attention_config *c,
                                  const char *meta, const char *what, fa_kernel **k) {
  static const char payload[] = "not a real cubin";
  void *bytes = NULL;
  size_t size = 0;
  CHECK(fa_artifact_build(c, FA_COMPILER_VERSION, FA_ARTIFACT_CUBIN, meta, payload,
                          sizeof(payload), &bytes, &size) == FA_OK,
        "building %s", what);
  fa_status st = fa_kernel_load_artifact(rt, bytes, size, k);
  fa_artifact_free(bytes);
  return st;
}

/* The same with the abi the compiler writes for `meta`'s launch fields
 * added where `meta` has none (abi_stub.h): the tests below check the
 * other fields. */
static fa_status load_cubin(fa_runtime *rt, const fa_attention_config *c, const char *meta,
                            const char *what, fa_kernel **k) {
  char *full = abi_stub_add(meta);
  fa_status st = load_cubin_as_is(rt, c, full, what, k);
  free(full);
  return st;
}

int main(void) {
  fa_runtime *rt = artifact_only_runtime();

  setenv("FLASHATTN_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  int32_t sms = -1;
  CHECK_STATUS(fa_cuda_probe(rt, &sms), FA_ERROR_NO_DRIVER, rt);
  CHECK(strstr(fa_runtime_last_error(rt), "no CUDA driver") != NULL,
        "message: %s", fa_runtime_last_error(rt));
  CHECK(sms == -1, "num_sms written without a driver");

  /* An sm90 artifact with a tensor map on q: it loads without a driver (the
   * cubin is loaded at its first launch); the call's tensors are checked
   * against the TMA rules before the driver is needed. */
  fa_attention_config c = fa_attention_config_default();
  c.target = FA_TARGET_SM90;
  c.num_q_heads = c.num_kv_heads = 2;
  c.head_dim = c.head_dim_v = 64;
  fa_kernel *k = NULL;
  CHECK_STATUS(load_cubin(rt, &c,
                          "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
                          "\"block\":[384,1,1],\"smem\":200000,"
                          "\"tma\":[{\"arg\":\"q\",\"box\":[64,1,128,1],\"swizzle\":128}]}",
                          "a cubin artifact", &k),
               FA_OK, rt);
  if (k) {
    fa_attention_args a = empty_args();
    unsigned char *qmem = (unsigned char *)aligned_alloc(64, 2 * 8 * 2 * 64 * 2 + 64);
    a.q = (fa_tensor){qmem + 2, 4, {2, 8, 2, 64}}; /* misaligned by 2 bytes */
    a.k = make_tensor(4, (int64_t[]){2, 8, 2, 64}, 2);
    a.v = make_tensor(4, (int64_t[]){2, 8, 2, 64}, 2);
    a.out = make_tensor(4, (int64_t[]){2, 8, 2, 64}, 2);
    CHECK_STATUS(fa_attention_run(rt, k, &a), FA_ERROR_BAD_INPUT, rt);
    CHECK(strstr(fa_runtime_last_error(rt), "16-byte aligned") != NULL,
          "message: %s", fa_runtime_last_error(rt));
    a.q.data = qmem;
    CHECK_STATUS(fa_attention_run(rt, k, &a), FA_ERROR_NO_DRIVER, rt);
    free(qmem);
    free(a.k.data); free(a.v.data); free(a.out.data);
  }

  /* Strides that are not multiples of 16 bytes: head_dim 4 in f16. */
  c.head_dim = c.head_dim_v = 4;
  CHECK_STATUS(load_cubin(rt, &c,
                          "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
                          "\"tma\":[{\"arg\":\"k\",\"box\":[4,1,64,1],\"swizzle\":0}]}",
                          "a second cubin artifact", &k),
               FA_OK, rt);
  if (k) {
    fa_attention_args a = empty_args();
    a.q = make_tensor(4, (int64_t[]){1, 8, 2, 4}, 2);
    a.k = make_tensor(4, (int64_t[]){1, 8, 2, 4}, 2);
    a.v = make_tensor(4, (int64_t[]){1, 8, 2, 4}, 2);
    a.out = make_tensor(4, (int64_t[]){1, 8, 2, 4}, 2);
    CHECK_STATUS(fa_attention_run(rt, k, &a), FA_ERROR_BAD_INPUT, rt);
    CHECK(strstr(fa_runtime_last_error(rt), "multiple of 16") != NULL,
          "message: %s", fa_runtime_last_error(rt));
    free(a.q.data); free(a.k.data); free(a.v.data); free(a.out.data);
  }

  /* A malformed tensor-map list is a corrupt artifact. */
  CHECK_STATUS(load_cubin(rt, &c,
                          "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
                          "\"tma\":[{\"arg\":\"k\",\"box\":[512],\"swizzle\":0}]}",
                          "a third cubin artifact", &k),
               FA_ERROR_CORRUPT_ARTIFACT, rt);

  /* So is a split-KV combine entry that is not a name. */
  CHECK_STATUS(load_cubin(rt, &c,
                          "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
                          "\"combine_entry\":7}",
                          "a fourth cubin artifact", &k),
               FA_ERROR_CORRUPT_ARTIFACT, rt);
  CHECK(strstr(fa_runtime_last_error(rt), "combine_entry") != NULL, "message: %s",
        fa_runtime_last_error(rt));

  /* And a split-KV cubin without its combine kernel. */
  c.num_splits = 2;
  CHECK_STATUS(load_cubin(rt, &c,
                          "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"]}",
                          "a fifth cubin artifact", &k),
               FA_ERROR_CORRUPT_ARTIFACT, rt);
  /* fused_combine: a boolean, and only beside a combine kernel (the
   * fallback the runtime launches where the merge cannot run). */
  {
    const char *bad[] = {"\"combine_entry\":\"c\",\"fused_combine\":1",
                         "\"fused_combine\":true"};
    for (int i = 0; i < 2; ++i) {
      char meta[256];
      snprintf(meta, sizeof(meta),
               "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],%s}", bad[i]);
      c.num_splits = i == 0 ? 2 : 1;
      CHECK_STATUS(load_cubin(rt, &c, meta, "a bad fused_combine", &k),
                   FA_ERROR_CORRUPT_ARTIFACT, rt);
      CHECK(strstr(fa_runtime_last_error(rt), "fused_combine") != NULL, "message: %s",
            fa_runtime_last_error(rt));
    }
    c.num_splits = 2;
    CHECK_STATUS(load_cubin(rt, &c,
                            "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
                            "\"combine_entry\":\"c\",\"fused_combine\":true}",
                            "a fused_combine artifact", &k),
                 FA_OK, rt);
  }
  c.num_splits = 1;

  /* Bad values of the pack_gqa view and the tile counter are corrupt
   * artifacts, with the field named. */
  {
    const char *bad[] = {
        /* a grouped map is 5-D (4-D for varlen q) */
        "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
        "\"tma\":[{\"arg\":\"q\",\"box\":[64,1,64],\"swizzle\":128,\"group\":4}]}",
        /* group within [1, 256] */
        "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
        "\"tma\":[{\"arg\":\"q\",\"box\":[64,4,1,32,1],\"swizzle\":128,\"group\":0}]}",
        /* tile_counter is a boolean */
        "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],\"tile_counter\":1}",
        /* tile_table is a boolean, and needs the tile sizes */
        "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],\"tile_table\":\"yes\"}",
        "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],\"tile_table\":true}",
        /* packed entries need G and their grouped q map */
        "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],\"packed_entry\":\"p\","
        "\"packed_groups\":4}",
        "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],\"packed_entry\":\"p\","
        "\"packed_groups\":2,\"packed_q_tma\":{\"arg\":\"q\",\"box\":[64,4,1,32,1],"
        "\"swizzle\":128,\"group\":4}}",
        /* kv heads per block: HP in [2, 8], with its one-head kernels, and
         * pack_groups = HP x Hq / Hkv */
        "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],\"kv_heads_per_block\":16}",
        "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],\"kv_heads_per_block\":2,"
        "\"pack_groups\":4}",
        "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],\"kv_heads_per_block\":2,"
        "\"pack_groups\":3,\"kv1_entry\":\"k1\",\"kv1_tma\":[{\"arg\":\"q\","
        "\"box\":[64,1,64,1],\"swizzle\":128}]}",
        "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],\"kv1_entry\":\"k1\"}",
        /* a page panel map is 5-D, flagged by a boolean */
        "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
        "\"tma\":[{\"arg\":\"k\",\"box\":[64,1,16,1],\"swizzle\":128,\"page_panels\":true}]}",
        "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
        "\"tma\":[{\"arg\":\"k\",\"box\":[64,8,2,2,1],\"swizzle\":128,\"page_panels\":1}]}"};
    const char *field[] = {"tma", "tma", "tile_counter", "tile_table", "tile_table",
                           "packed_entry", "packed_entry", "kv_heads_per_block",
                           "kv_heads_per_block", "kv_heads_per_block", "kv_heads_per_block",
                           "tma", "tma"};
    for (int i = 0; i < 13; ++i) {
      CHECK_STATUS(load_cubin(rt, &c, bad[i], "a bad artifact", &k), FA_ERROR_CORRUPT_ARTIFACT,
                   rt);
      CHECK(strstr(fa_runtime_last_error(rt), field[i]) != NULL, "case %d: %s", i,
            fa_runtime_last_error(rt));
    }
  }

  /* A grouped (pack_gqa) q map checks the 4-D tensor against the 5-D view:
   * heads must split by the group. */
  {
    int saved_d = c.head_dim;
    c.num_q_heads = 6;
    c.num_kv_heads = 2;
    c.head_dim = c.head_dim_v = 64;
    CHECK_STATUS(load_cubin(rt, &c,
                            "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
                            "\"tma\":[{\"arg\":\"q\",\"box\":[64,4,1,32,1],"
                            "\"swizzle\":128,\"group\":4}]}",
                            "a grouped-map artifact", &k),
                 FA_OK, rt);
    if (k) {
      fa_attention_args a = empty_args();
      a.q = make_tensor(4, (int64_t[]){1, 8, 6, 64}, 2);
      a.k = make_tensor(4, (int64_t[]){1, 8, 2, 64}, 2);
      a.v = make_tensor(4, (int64_t[]){1, 8, 2, 64}, 2);
      a.out = make_tensor(4, (int64_t[]){1, 8, 6, 64}, 2);
      CHECK_STATUS(fa_attention_run(rt, k, &a), FA_ERROR_SHAPE_MISMATCH, rt);
      CHECK(strstr(fa_runtime_last_error(rt), "pack_gqa group 4") != NULL, "message: %s",
            fa_runtime_last_error(rt));
      free(a.q.data); free(a.k.data); free(a.v.data); free(a.out.data);
    }
    /* The same with varlen q [Tq, H, D]: the heads are its dim 1 (the
     * message names 6 heads, not the head_dim 64). */
    c.flags = FA_VARLEN_Q | FA_VARLEN_K;
    CHECK_STATUS(load_cubin(rt, &c,
                            "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
                            "\"tile_table\":true,\"block_m\":128,\"block_n\":128,"
                            "\"tma\":[{\"arg\":\"q\",\"box\":[64,4,1,32],"
                            "\"swizzle\":128,\"group\":4}]}",
                            "a varlen grouped-map artifact", &k),
                 FA_OK, rt);
    if (k) {
      int32_t cu[] = {0, 10};
      fa_attention_args a = empty_args();
      a.q = make_tensor(3, (int64_t[]){10, 6, 64}, 2);
      a.k = make_tensor(3, (int64_t[]){10, 2, 64}, 2);
      a.v = make_tensor(3, (int64_t[]){10, 2, 64}, 2);
      a.out = make_tensor(3, (int64_t[]){10, 6, 64}, 2);
      a.cu_seqlens_q = (fa_tensor){cu, 1, {2}};
      a.cu_seqlens_k = (fa_tensor){cu, 1, {2}};
      CHECK_STATUS(fa_attention_run(rt, k, &a), FA_ERROR_SHAPE_MISMATCH, rt);
      CHECK(strstr(fa_runtime_last_error(rt), "'q' has 6 heads, not a multiple of the "
                                              "pack_gqa group 4") != NULL,
            "message: %s", fa_runtime_last_error(rt));
      free(a.q.data); free(a.k.data); free(a.v.data); free(a.out.data);
    }
    c.flags = 0;
    c.num_q_heads = c.num_kv_heads = 2;
    c.head_dim = c.head_dim_v = saved_d;
  }

  /* The "abi" (each entry's parameter list, in order): required of a
   * cubin, one list per entry and no other name, known kinds, arguments
   * of the entry's tensors with pointers then dims in their order, ranks
   * 1..5, and each launch value exactly where the flags ask for it. The
   * message names the entry and the parameter. */
  {
#define PTRS "{\"kind\":\"ptr\",\"arg\":\"q\"},{\"kind\":\"ptr\",\"arg\":\"k\"}," \
             "{\"kind\":\"ptr\",\"arg\":\"v\"},{\"kind\":\"ptr\",\"arg\":\"out\"},"
#define DIMS3 "{\"kind\":\"dims\",\"arg\":\"q\",\"rank\":4},"                  \
              "{\"kind\":\"dims\",\"arg\":\"k\",\"rank\":4},"                  \
              "{\"kind\":\"dims\",\"arg\":\"v\",\"rank\":4}"
#define HEAD "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
    struct {
      const char *meta, *want[2];
      int splits;
    } bad[] = {
        {HEAD "\"tile_counter\":true}", {"lacks its abi", ""}, 1},
        {HEAD "\"abi\":[]}", {"lacks its abi", ""}, 1},
        {HEAD "\"abi\":{\"k\":[{\"kind\":\"pointer\",\"arg\":\"q\"}]}}",
         {"entry 'k', parameter 0 (pointer)", "unknown kind"}, 1},
        {HEAD "\"abi\":{\"k\":[" PTRS DIMS3 ",{\"kind\":\"dims\",\"arg\":\"out\",\"rank\":6}]}}",
         {"entry 'k', parameter 7 (dims)", "rank outside 1..5"}, 1},
        {HEAD "\"abi\":{\"k\":[" PTRS DIMS3 ",{\"kind\":\"dims\",\"arg\":\"out\"}]}}",
         {"entry 'k', parameter 7 (dims)", "rank outside 1..5"}, 1},
        {HEAD "\"abi\":{\"k\":[{\"kind\":\"ptr\",\"arg\":\"x\"}]}}",
         {"entry 'k', parameter 0 (ptr)", "not one of the entry's tensors"}, 1},
        {HEAD "\"abi\":{\"k\":[{\"kind\":\"ptr\",\"arg\":\"k\"}]}}",
         {"entry 'k', parameter 0 (ptr)", "order of the entry's tensors"}, 1},
        {HEAD "\"abi\":{\"k\":[" PTRS DIMS3 "]}}", {"entry 'k'", "3 dims parameters"}, 1},
        {HEAD "\"abi\":{\"k\":[" PTRS DIMS3 ",{\"kind\":\"dims\",\"arg\":\"out\",\"rank\":4},"
              "{\"kind\":\"tile_counter\"}]}}",
         {"entry 'k', parameter 8 (tile_counter)", "flags do not ask"}, 1},
        {HEAD "\"tile_counter\":true,\"abi\":{\"k\":[" PTRS DIMS3
              ",{\"kind\":\"dims\",\"arg\":\"out\",\"rank\":4}]}}",
         {"entry 'k'", "0 tile_counter parameters"}, 1},
        {HEAD "\"abi\":{\"k\":[" PTRS DIMS3 ",{\"kind\":\"dims\",\"arg\":\"out\",\"rank\":4},"
              "{\"kind\":\"tma\",\"arg\":\"q\",\"box\":[64,1,512,1],\"swizzle\":128}]}}",
         {"entry 'k', parameter 8 (tma)", "bad tensor map"}, 1},
        {HEAD "\"abi\":{\"k\":[" PTRS DIMS3 ",{\"kind\":\"dims\",\"arg\":\"out\",\"rank\":4}],"
              "\"zz\":[]}}",
         {"'zz' is not an entry", ""}, 1},
        /* a split-KV partial kernel takes q, k, v and the partial out, lse */
        {HEAD "\"combine_entry\":\"c\",\"abi\":{\"c\":[],\"k\":[" PTRS DIMS3
              ",{\"kind\":\"dims\",\"arg\":\"out\",\"rank\":5}]}}",
         {"entry 'k'", "4 ptr parameters, its tensors 5"}, 2},
        /* the combine entry's list is missing */
        {HEAD "\"combine_entry\":\"c\",\"abi\":{\"k\":[{\"kind\":\"ptr\",\"arg\":\"q\"},"
              "{\"kind\":\"ptr\",\"arg\":\"k\"},{\"kind\":\"ptr\",\"arg\":\"v\"},"
              "{\"kind\":\"ptr\",\"arg\":\"out\"},{\"kind\":\"ptr\",\"arg\":\"lse\"},"
              DIMS3 ",{\"kind\":\"dims\",\"arg\":\"out\",\"rank\":5},"
              "{\"kind\":\"dims\",\"arg\":\"lse\",\"rank\":4}]}}",
         {"no list", "entry 'c'"}, 2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
      c.num_splits = bad[i].splits;
      CHECK_STATUS(load_cubin_as_is(rt, &c, bad[i].meta, "a bad abi", &k),
                   FA_ERROR_CORRUPT_ARTIFACT, rt);
      for (int w = 0; w < 2; ++w)
        CHECK(strstr(fa_runtime_last_error(rt), bad[i].want[w]) != NULL,
              "abi case %zu: want \"%s\": %s", i, bad[i].want[w], fa_runtime_last_error(rt));
    }
    c.num_splits = 1;
    /* The same list, right, loads. */
    CHECK_STATUS(load_cubin_as_is(rt, &c,
                                  HEAD "\"abi\":{\"k\":[" PTRS DIMS3
                                       ",{\"kind\":\"dims\",\"arg\":\"out\",\"rank\":4}]}}",
                                  "a hand-written abi", &k),
                 FA_OK, rt);
#undef PTRS
#undef DIMS3
#undef HEAD
  }

  /* Automatic num_splits: "auto_splits" needs config num_splits 0 and the
   * tile sizes; then the count is FlashAttention's heuristic at launch. */
  CHECK_STATUS(load_cubin(rt, &c,
                          "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
                          "\"auto_splits\":true,\"block_m\":128,\"block_n\":128}",
                          "an auto-split artifact with num_splits 1", &k),
               FA_ERROR_CORRUPT_ARTIFACT, rt);
  CHECK(strstr(fa_runtime_last_error(rt), "auto_splits") != NULL, "message: %s",
        fa_runtime_last_error(rt));
  c.num_splits = 0;
  c.num_q_heads = 32;
  c.num_kv_heads = 8;
  c.head_dim = c.head_dim_v = 128;
  CHECK_STATUS(load_cubin(rt, &c,
                          "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
                          "\"combine_entry\":\"c\",\"auto_splits\":true,"
                          "\"block_m\":128,\"block_n\":128,\"pack_groups\":4}",
                          "an auto-split artifact", &k),
               FA_OK, rt);
  if (k) {
    /* Decode, 32 / 8 heads packed 4 to a tile row group, 132 SMs: batch 1
     * has 8 tiles -> 16 splits over 32k keys (128 of 132 SMs, efficiency
     * 0.97: the first count within 0.95 of the best; FlashAttention's 0.85
     * would take 15); batch 16 (128 tiles, 97% of the SMs) -> 1; never
     * more splits than key blocks. */
    CHECK(fa_num_splits_heuristic(k, 1, 1, 32, 32768, 132) == 16, "b=1: %lld",
          (long long)fa_num_splits_heuristic(k, 1, 1, 32, 32768, 132));
    CHECK(fa_num_splits_heuristic(k, 16, 1, 32, 8192, 132) == 1, "b=16");
    CHECK(fa_num_splits_heuristic(k, 1, 1, 32, 300, 132) <= 3, "3 key blocks");
    CHECK(fa_num_splits_heuristic(k, 1, 1, 32, 0, 132) == 1, "no keys");
    /* The grid: one CTA per unit below the SM count, else one per SM. */
    CHECK(fa_launch_grid(128, 132) == 128, "128 units: %u CTAs", fa_launch_grid(128, 132));
    CHECK(fa_launch_grid(132, 132) == 132 && fa_launch_grid(1024, 132) == 132,
          "a full grid past the SM count");
    CHECK(fa_launch_grid(0, 132) == 132, "units unknown: one CTA per SM");
  }
  c.num_splits = 1;
  c.num_q_heads = c.num_kv_heads = 2;
  c.head_dim = c.head_dim_v = 64;

  /* The varlen tile table: one entry per (sequence, m_block) with real
   * rows, sum ceil(q_len x G / block_m) of them, longest first under a
   * causal mask; a sequence with no queries gets none, one with no keys
   * still gets its rows (output 0, lse -inf). The metadata is read on the
   * host: cu_seqlens_q {0, 0, 1, 300, 429}, cu_seqlens_k {0, 5, 5, 400,
   * 1429}, block_m 128, block_n 128. */
  c.flags = FA_VARLEN_Q | FA_VARLEN_K | FA_WITH_LSE;
  c.causal = FA_CAUSAL_BOTTOM_RIGHT;
  c.num_q_heads = 8;
  c.num_kv_heads = 2;
  CHECK_STATUS(load_cubin(rt, &c,
                          "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\",\"lse\"],"
                          "\"tile_table\":true,\"block_m\":128,\"block_n\":128}",
                          "a tile-table artifact", &k),
               FA_OK, rt);
  if (k) {
    int32_t cu_q[] = {0, 0, 1, 300, 429}, cu_k[] = {0, 5, 5, 400, 1429};
    fa_attention_args a = empty_args();
    a.q = make_tensor(3, (int64_t[]){429, 8, 64}, 2);
    a.k = make_tensor(3, (int64_t[]){1429, 2, 64}, 2);
    a.cu_seqlens_q = (fa_tensor){cu_q, 1, {5}};
    a.cu_seqlens_k = (fa_tensor){cu_k, 1, {5}};
    int32_t *t = NULL;
    int64_t n = -1, words = -1;
    CHECK_STATUS(fa_sm90_tile_table(rt, k, &a, false, &t, &n, &words), FA_OK, rt);
    /* ceil(0/128) + ceil(1/128) + ceil(299/128) + ceil(129/128) = 0+1+3+2 */
    CHECK(n == 6 && t && t[0] == 6, "entries: %lld", (long long)n);
    /* Heads per L2 group: 1424 keys x 256 bytes per kv head fit 32 MB many
     * times over: all 8 query heads in one group. */
    CHECK(t && t[2] == 8, "head group: %d", t ? t[2] : -1);
    /* Word 3 is zero: the lpt scheduler's counter, copied with the table. */
    CHECK(t && t[3] == 0, "counter word: %d", t ? t[3] : -1);
    if (t && n == 6) {
      /* Longest first: sequence 3 (129 queries over 1029 keys, bottom
       * right): m_blocks 0 and 1 both see all 9 key blocks (ties in
       * m_block order); sequence 2 (299 over 395): m_block 2 4 blocks, 1 3,
       * 0 2; sequence 1 (1 query, no keys) last. */
      int32_t want[6][8] = {{300, 0, 129, 400, 0, 1029, 0, 3},
                            {300, 0, 129, 400, 0, 1029, 1, 3},
                            {1, 0, 299, 5, 0, 395, 2, 2},
                            {1, 0, 299, 5, 0, 395, 1, 2},
                            {1, 0, 299, 5, 0, 395, 0, 2},
                            {0, 0, 1, 5, 0, 0, 0, 1}};
      for (int e = 0; e < 6; ++e)
        for (int f = 0; f < 8; ++f)
          CHECK(t[8 * (e + 1) + f] == want[e][f], "entry %d field %d: %d, want %d", e,
                f, t[8 * (e + 1) + f], want[e][f]);
    }
    free(t);
    free(a.q.data);
    free(a.k.data);
  }
  /* seqused_k on dense q and k: k length from seqused_k, positions 0 and
   * the batch as TMA coordinates; pack_gqa folds G = 4 heads into rows. */
  c.flags = FA_SEQUSED_K;
  CHECK_STATUS(load_cubin(rt, &c,
                          "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
                          "\"tile_table\":true,\"block_m\":128,\"block_n\":128,"
                          "\"pack_groups\":4}",
                          "a seqused_k artifact", &k),
               FA_OK, rt);
  if (k) {
    int32_t used[] = {700, 0};
    fa_attention_args a = empty_args();
    a.q = make_tensor(4, (int64_t[]){2, 40, 8, 64}, 2);
    a.k = make_tensor(4, (int64_t[]){2, 1000, 2, 64}, 2);
    a.seqused_k = (fa_tensor){used, 1, {2}};
    int32_t *t = NULL;
    int64_t n = -1, words = -1;
    CHECK_STATUS(fa_sm90_tile_table(rt, k, &a, false, &t, &n, &words), FA_OK, rt);
    /* 40 positions x 4 heads = 160 rows: 2 tiles per sequence. */
    CHECK(n == 4 && t, "seqused_k entries: %lld", (long long)n);
    if (t && n == 4) {
      int32_t want[4][8] = {{0, 0, 40, 0, 0, 700, 0, 0},
                            {0, 0, 40, 0, 0, 700, 1, 0},
                            {0, 1, 40, 0, 1, 0, 0, 1},
                            {0, 1, 40, 0, 1, 0, 1, 1}};
      for (int e = 0; e < 4; ++e)
        for (int f = 0; f < 8; ++f)
          CHECK(t[8 * (e + 1) + f] == want[e][f], "seqused entry %d field %d: %d, want %d",
                e, f, t[8 * (e + 1) + f], want[e][f]);
    }
    free(t);
    free(a.q.data);
    free(a.k.data);
  }
  /* 2^20 keys: one kv head's K and V (2^20 x 512 bytes at head_dim 128)
   * exceed 32 MB, so a group of the tile order is one kv head, its G = 4
   * query heads without pack_gqa (the table reads shapes only: no data). */
  {
    fa_attention_config c2 = c;
    c2.flags = FA_SEQUSED_K;
    c2.head_dim = c2.head_dim_v = 128; /* not the cached config above */
    fa_kernel *k2 = NULL;
    CHECK_STATUS(load_cubin(rt, &c2,
                            "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
                            "\"tile_table\":true,\"block_m\":128,\"block_n\":128}",
                            "a seqused_k artifact without pack_gqa", &k2),
                 FA_OK, rt);
    if (k2) {
      int32_t used[] = {1 << 20};
      fa_attention_args a = empty_args();
      a.q = (fa_tensor){NULL, 4, {1, 256, 8, 128}};
      a.k = (fa_tensor){NULL, 4, {1, 1 << 20, 2, 128}};
      a.seqused_k = (fa_tensor){used, 1, {1}};
      int32_t *t = NULL;
      int64_t n = -1, words = -1;
      CHECK_STATUS(fa_sm90_tile_table(rt, k2, &a, false, &t, &n, &words), FA_OK, rt);
      CHECK(n == 2 && t && t[2] == 4, "2^20 keys: %lld entries, head group %d",
            (long long)n, t ? t[2] : -1);
      free(t);
      /* Decode (one tile per head): K/V are read once in any order, so
       * all 8 heads form one group (the heads of a key read together). */
      a.q.shape[1] = 1;
      t = NULL;
      CHECK_STATUS(fa_sm90_tile_table(rt, k2, &a, false, &t, &n, &words), FA_OK, rt);
      CHECK(n == 1 && t && t[2] == 8, "decode over 2^20 keys: %lld entries, head group %d",
            (long long)n, t ? t[2] : -1);
      free(t);
    }
  }
  /* kv-cache append into a paged cache (pages of 16): k lengths
   * cache_seqlens + S_new, every sequence's page list, and the append
   * kernel's (start, page list) pairs at word 1. An append config without
   * its kernel (or with one but no tile table) is a corrupt artifact. */
  c.flags = FA_SEQUSED_K | FA_PAGED | FA_APPEND;
  c.page_size = 16;
  CHECK_STATUS(load_cubin(rt, &c,
                          "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
                          "\"tile_table\":true,\"block_m\":128,\"block_n\":128}",
                          "an append artifact without its kernel", &k),
               FA_ERROR_CORRUPT_ARTIFACT, rt);
  CHECK(strstr(fa_runtime_last_error(rt), "append_entry") != NULL, "message: %s",
        fa_runtime_last_error(rt));
  /* page_table only on a paged cubin with a tile table. */
  c.flags = FA_SEQUSED_K;
  c.page_size = 0;
  CHECK_STATUS(load_cubin(rt, &c,
                          "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
                          "\"tile_table\":true,\"page_table\":true,"
                          "\"block_m\":128,\"block_n\":128}",
                          "a page_table artifact without pages", &k),
               FA_ERROR_CORRUPT_ARTIFACT, rt);
  CHECK(strstr(fa_runtime_last_error(rt), "page_table") != NULL, "message: %s",
        fa_runtime_last_error(rt));
  /* tile_table_inline: a multiple of 16 in [32, 3072], with a tile table
   * only (a parameter the launch would otherwise pass nowhere). */
  {
    const char *bad[] = {"\"tile_table\":true,\"tile_table_inline\":4096",
                         "\"tile_table\":true,\"tile_table_inline\":100",
                         "\"tile_table\":true,\"tile_table_inline\":\"2048\"",
                         "\"tile_table_inline\":2048"};
    for (int i = 0; i < 4; ++i) {
      char meta[256];
      snprintf(meta, sizeof(meta),
               "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],%s,"
               "\"block_m\":128,\"block_n\":128}",
               bad[i]);
      CHECK_STATUS(load_cubin(rt, &c, meta, "a bad tile_table_inline", &k),
                   FA_ERROR_CORRUPT_ARTIFACT, rt);
      CHECK(strstr(fa_runtime_last_error(rt), "tile_table_inline") != NULL,
            "message: %s", fa_runtime_last_error(rt));
    }
    CHECK_STATUS(load_cubin(rt, &c,
                            "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
                            "\"tile_table\":true,\"tile_table_inline\":2048,"
                            "\"block_m\":128,\"block_n\":128}",
                            "a tile_table_inline artifact", &k),
                 FA_OK, rt);
  }
  /* A page panel map (one box per page: sm90PagePanels) checks the pool
   * [P, S, H, D] it views as 5-D: 4-D, pages of a multiple of 8 keys, D a
   * multiple of 64; the strides of the view are a row, 128 bytes, 8 rows
   * and a page. */
  /* ... and is a k or v map of a paged artifact whose box is a whole page:
   * {64, 8, head_dim / 64, page_size / 8, 1} (here head_dim 64). */
  {
    const char *bad[] = {"{\"arg\":\"k\",\"box\":[64,8,2,2,1]",   /* head_dim 128's */
                         "{\"arg\":\"k\",\"box\":[64,8,1,1,1]",   /* half a page */
                         "{\"arg\":\"q\",\"box\":[64,8,1,2,1]",   /* not k / v */
                         "{\"arg\":\"k\",\"box\":[64,8,1,2,1]"};  /* not paged */
    for (int i = 0; i < 4; ++i) {
      char meta[512];
      snprintf(meta, sizeof(meta),
               "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
               "\"tile_table\":true,\"block_m\":128,\"block_n\":128,"
               "\"tma\":[%s,\"swizzle\":128,\"page_panels\":true}]}",
               bad[i]);
      c.flags = i == 3 ? FA_SEQUSED_K : FA_SEQUSED_K | FA_PAGED;
      c.page_size = i == 3 ? 0 : 16;
      CHECK_STATUS(load_cubin(rt, &c, meta, "a bad page panel map", &k),
                   FA_ERROR_CORRUPT_ARTIFACT, rt);
      CHECK(strstr(fa_runtime_last_error(rt), "page_panels") != NULL, "case %d: %s", i,
            fa_runtime_last_error(rt));
    }
  }
  c.flags = FA_SEQUSED_K | FA_PAGED;
  c.page_size = 16;
  CHECK_STATUS(load_cubin(rt, &c,
                          "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
                          "\"tile_table\":true,\"block_m\":128,\"block_n\":128,"
                          "\"tma\":[{\"arg\":\"k\",\"box\":[64,8,1,2,1],\"swizzle\":128,"
                          "\"page_panels\":true}]}",
                          "a page panel artifact", &k),
               FA_OK, rt);
  if (k) {
    struct {
      int rank;
      int64_t shape[4];
      fa_status want;
    } pools[] = {{4, {10, 16, 2, 64}, FA_OK},
                 {4, {10, 12, 2, 64}, FA_ERROR_SHAPE_MISMATCH},
                 {4, {10, 16, 2, 32}, FA_ERROR_SHAPE_MISMATCH},
                 {3, {160, 2, 64, 0}, FA_ERROR_SHAPE_MISMATCH}};
    for (int i = 0; i < 4; ++i) {
      fa_tensor pool = make_tensor(pools[i].rank, pools[i].shape, 2);
      const char *name = "k";
      const fa_tensor *tensor = &pool;
      CHECK_STATUS(fa_tma_check_call(rt, k, &name, &tensor, 1), pools[i].want, rt);
      if (pools[i].want != FA_OK)
        CHECK(strstr(fa_runtime_last_error(rt), i == 3 ? "rank" : "page panel map") != NULL,
              "pool %d: %s", i, fa_runtime_last_error(rt));
      free(pool.data);
    }
  }
  c.flags = FA_SEQUSED_K | FA_PAGED | FA_APPEND;
  c.page_size = 16;
  CHECK_STATUS(load_cubin(rt, &c,
                          "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
                          "\"append_entry\":\"a\",\"block_m\":128,\"block_n\":128}",
                          "an append artifact without a tile table", &k),
               FA_ERROR_CORRUPT_ARTIFACT, rt);
  CHECK_STATUS(load_cubin(rt, &c,
                          "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
                          "\"append_entry\":\"a\",\"tile_table\":true,"
                          "\"block_m\":128,\"block_n\":128}",
                          "an append artifact", &k),
               FA_OK, rt);
  if (k) {
    int32_t starts[] = {20, 0}, pages[] = {7, 3, 9, 4, 1, 2, 8, 6};
    fa_attention_args a = empty_args();
    a.q = make_tensor(4, (int64_t[]){2, 1, 8, 64}, 2);
    a.k = make_tensor(4, (int64_t[]){10, 16, 2, 64}, 2);
    a.k_new = make_tensor(4, (int64_t[]){2, 1, 2, 64}, 2);
    a.cache_seqlens = (fa_tensor){starts, 1, {2}};
    a.block_table = (fa_tensor){pages, 2, {2, 4}};
    int32_t *t = NULL;
    int64_t n = -1, words = -1;
    CHECK_STATUS(fa_sm90_tile_table(rt, k, &a, false, &t, &n, &words), FA_OK, rt);
    /* Entries at 8..23; page lists at 24 (21 keys: pages 7, 3) and 26 (1
     * key: page 1); the pairs at 27: (20, 24), (0, 26). */
    CHECK(n == 2 && words == 31 && t && t[1] == 27, "append table: %lld entries, %lld "
          "words, pairs at %d", (long long)n, (long long)words, t ? t[1] : -1);
    if (t && words == 31) {
      int32_t want[] = {7, 3, 1, 20, 24, 0, 26};
      for (int i = 0; i < 7; ++i)
        CHECK(t[24 + i] == want[i], "append table word %d: %d, want %d", 24 + i, t[24 + i],
              want[i]);
      CHECK(t[8 + 5] == 21 && t[8 + 3] == 24, "entry 0: k length %d at %d", t[8 + 5],
            t[8 + 3]);
    }
    free(t);
    /* The block_table in device memory: no lists copied; a sequence's list
     * is row b of it (k position b x 4), the pairs right after the
     * entries: (20, 0), (0, 4). */
    t = NULL;
    CHECK_STATUS(fa_sm90_tile_table(rt, k, &a, true, &t, &n, &words), FA_OK, rt);
    CHECK(n == 2 && words == 28 && t && t[1] == 24, "device pages: %lld entries, %lld "
          "words, pairs at %d", (long long)n, (long long)words, t ? t[1] : -1);
    if (t && words == 28) {
      int32_t want[] = {20, 0, 0, 4};
      for (int i = 0; i < 4; ++i)
        CHECK(t[24 + i] == want[i], "device pages word %d: %d, want %d", 24 + i, t[24 + i],
              want[i]);
      CHECK(t[8 + 3] == 0 && t[16 + 3] == 4 && t[16 + 5] == 1,
            "device pages entries: k at %d and %d, k length %d", t[8 + 3], t[16 + 3],
            t[16 + 5]);
    }
    free(t);
    free(a.q.data);
    free(a.k.data);
    free(a.k_new.data);
  }
  c.flags = 0;
  c.page_size = 0;
  c.causal = FA_CAUSAL_NONE;
  c.num_q_heads = c.num_kv_heads = 2;

  unsetenv("FLASHATTN_LIBCUDA");
  fa_status st = fa_cuda_probe(rt, &sms);
  fa_runtime_destroy(rt);
  printf("%s\n", g_failures ? "FAILED" : "all checks passed");
  if (g_failures)
    return 1;
  if (st == FA_OK) {
    printf("a CUDA driver is present (%d SMs): default probe skipped\n", sms);
    return 77;
  }
  return st == FA_ERROR_NO_DRIVER ? 0 : 1;
}
