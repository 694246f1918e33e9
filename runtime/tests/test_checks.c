/*===- test_checks.c - run-time input checks ------------------------------===*
 *
 * Every check of fa_attention_run answers its status with a message, and
 * nothing is written when a check fails (outputs stay NaN, the cache stays
 * as it was): null pointers, struct size, shapes that do not match the
 * kernel, batch mismatch, operands the kernel was not compiled for,
 * cu_seqlens not monotone / not starting at 0 / past the tensor, block_table
 * entries past the pool, seqused_k past capacity, an append past capacity,
 * appends of two sequences (or one, twice) into the same cache rows.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
#include "common.h"

#include "flashattn/artifact.h"

/* Internal (runtime/src/internal.h): a config's key at a CPU level. */
fa_status fa_config_key_at(const fa_attention_config *c, const char *version,
                           const char *level, char key[33]);

static fa_runtime *rt;

static int all_nan(const fa_tensor *t, fa_dtype dt) {
  for (int64_t i = 0; i < numel(t); ++i)
    if (!isnan(to_double(dt, t->data, i)))
      return 0;
  return 1;
}

/* Expects `status` and an untouched (NaN) out. */
static void expect_fail(fa_kernel *k, fa_attention_args *a, fa_status status,
                        const char *needle, const char *what) {
  fill_nan(&a->out, fa_kernel_config(k)->out_dtype);
  fa_status st = fa_attention_run(rt, k, a);
  CHECK(st == status, "%s: %s, expected %s (%s)", what, fa_status_string(st),
        fa_status_string(status), fa_runtime_last_error(rt));
  CHECK(strstr(fa_runtime_last_error(rt), needle) != NULL,
        "%s: message '%s' lacks '%s'", what, fa_runtime_last_error(rt), needle);
  CHECK(all_nan(&a->out, fa_kernel_config(k)->out_dtype), "%s: out was written", what);
}

int main(void) {
  char dir[] = "/tmp/fa-rt-checks-XXXXXX";
  if (!mkdtemp(dir))
    return 1;
  fa_runtime_options o = {0};
  o.struct_size = sizeof(o);
  o.cache_dir = dir;
  o.compiler_library = FA_TEST_COMPILER_LIB;
  CHECK_STATUS(fa_runtime_create(&o, &rt), FA_OK, rt);
  /* fa_config_validate: the reason of an invalid config, truncated to the
   * buffer; FA_OK for a valid one. */
  {
    fa_attention_config c = fa_attention_config_default();
    char why[128] = "";
    CHECK(fa_config_validate(&c, why, sizeof(why)) == FA_OK, "default config: %s", why);
    c.num_q_heads = 3;
    c.num_kv_heads = 2;
    CHECK(fa_config_validate(&c, why, sizeof(why)) == FA_ERROR_INVALID_ARGUMENT &&
              strstr(why, "num_q_heads (3) must be a positive multiple of num_kv_heads (2)"),
          "3 / 2 heads: %s", why);
    char small[8];
    CHECK(fa_config_validate(&c, small, sizeof(small)) == FA_ERROR_INVALID_ARGUMENT &&
              strlen(small) == 7,
          "truncated reason: '%s'", small);
    CHECK(fa_config_validate(&c, NULL, 0) == FA_ERROR_INVALID_ARGUMENT, "no buffer");
    CHECK(fa_config_validate(NULL, why, sizeof(why)) == FA_ERROR_INVALID_ARGUMENT &&
              strstr(why, "null config"),
          "null config: %s", why);
  }
  fa_runtime_options bad = o;
  bad.struct_size = 3;
  fa_runtime *nort = NULL;
  CHECK(fa_runtime_create(&bad, &nort) == FA_ERROR_INVALID_ARGUMENT && !nort, "options struct_size");
  CHECK(fa_runtime_create(&o, NULL) == FA_ERROR_INVALID_ARGUMENT, "null runtime pointer");

  /* Dense kernel. */
  fa_attention_config c = fa_attention_config_default();
  c.num_q_heads = 4; c.num_kv_heads = 2; c.head_dim = c.head_dim_v = 64;
  fa_kernel *dense = NULL;
  CHECK_STATUS(fa_kernel_get(rt, &c, &dense), FA_OK, rt);
  fa_attention_config badc = c;
  badc.num_q_heads = 3;
  fa_kernel *none = NULL;
  CHECK_STATUS(fa_kernel_get(rt, &badc, &none), FA_ERROR_INVALID_ARGUMENT, rt);
  CHECK_STATUS(fa_kernel_get(rt, NULL, &none), FA_ERROR_INVALID_ARGUMENT, rt);
  if (dense) {
    fa_attention_args a = empty_args();
    a.q = make_tensor(4, (int64_t[]){2, 8, 4, 64}, 2);
    a.k = make_tensor(4, (int64_t[]){2, 16, 2, 64}, 2);
    a.v = make_tensor(4, (int64_t[]){2, 16, 2, 64}, 2);
    a.out = make_tensor(4, (int64_t[]){2, 8, 4, 64}, 2);
    fill_normal(&a.q, FA_F16); fill_normal(&a.k, FA_F16); fill_normal(&a.v, FA_F16);
    CHECK_STATUS(fa_attention_run(rt, dense, NULL), FA_ERROR_INVALID_ARGUMENT, rt);
    CHECK_STATUS(fa_attention_run(rt, NULL, &a), FA_ERROR_INVALID_ARGUMENT, rt);
    fa_attention_args t = a;
    t.struct_size = 8;
    expect_fail(dense, &t, FA_ERROR_INVALID_ARGUMENT, "struct_size", "args struct_size");
    t = a; t.q.data = NULL;
    expect_fail(dense, &t, FA_ERROR_INVALID_ARGUMENT, "'q'", "null q");
    t = a; t.v.data = NULL;
    expect_fail(dense, &t, FA_ERROR_INVALID_ARGUMENT, "'v'", "null v");
    t = a; t.q.shape[2] = 8;
    expect_fail(dense, &t, FA_ERROR_SHAPE_MISMATCH, "'q' dim 2 is 8, expected 4", "q heads");
    t = a; t.q.shape[1] = 9;
    expect_fail(dense, &t, FA_ERROR_SHAPE_MISMATCH, "'out' dim 1 is 8, expected 9 (from the kernel's config, or from q / k", "out against q");
    t = a; t.k.shape[3] = 32;
    expect_fail(dense, &t, FA_ERROR_SHAPE_MISMATCH, "'k' dim 3", "k head_dim");
    t = a; t.k.shape[0] = 1; t.v.shape[0] = 1;
    expect_fail(dense, &t, FA_ERROR_SHAPE_MISMATCH, "batch size mismatch", "batch");
    t = a; t.q.rank = 3;
    expect_fail(dense, &t, FA_ERROR_SHAPE_MISMATCH, "rank-4", "q rank");
    /* Every dim in [0, 2^31 - 1] and all consistent, but q and out hold
     * (2^31 - 1)^2 x 4 x 64 elements: refused before any kernel indexes
     * them (the kernel's i64 offsets would overflow). */
    t = a;
    t.q.shape[0] = t.q.shape[1] = INT32_MAX;
    t.out.shape[0] = t.out.shape[1] = INT32_MAX;
    t.k.shape[0] = t.v.shape[0] = INT32_MAX;
    expect_fail(dense, &t, FA_ERROR_SHAPE_MISMATCH, "holds more than 2^60 elements",
                "element count overflow");
    t = a; t.lse = make_tensor(3, (int64_t[]){2, 4, 8}, 4);
    expect_fail(dense, &t, FA_ERROR_INVALID_ARGUMENT, "compiled without it", "unexpected lse");
    free(t.lse.data);
    /* Empty tensors may have null data (PyTorch gives them address 0):
     * no key gives out 0 (docs/SEMANTICS.md, empty rows); no query row is a call
     * with nothing to do. */
    t = a;
    t.k = (fa_tensor){NULL, 4, {2, 0, 2, 64}};
    t.v = (fa_tensor){NULL, 4, {2, 0, 2, 64}};
    fill_nan(&t.out, FA_F16);
    CHECK_STATUS(fa_attention_run(rt, dense, &t), FA_OK, rt);
    {
      const uint16_t *o = (const uint16_t *)t.out.data;
      int nonzero = 0;
      for (int i = 0; i < 2 * 8 * 4 * 64; ++i)
        nonzero += (o[i] & 0x7fff) != 0;
      CHECK(nonzero == 0, "no key: %d out values are not 0", nonzero);
    }
    t = a;
    t.q = (fa_tensor){NULL, 4, {2, 0, 4, 64}};
    t.out = (fa_tensor){NULL, 4, {2, 0, 4, 64}};
    CHECK_STATUS(fa_attention_run(rt, dense, &t), FA_OK, rt);
    t = a; t.k.data = NULL;
    expect_fail(dense, &t, FA_ERROR_INVALID_ARGUMENT, "'k' has null data for 4096 elements",
                "null k with elements");
    fill_nan(&a.out, FA_F16);
    CHECK_STATUS(fa_attention_run(rt, dense, &a), FA_OK, rt);
    CHECK(!all_nan(&a.out, FA_F16), "valid call wrote nothing");
    free(a.q.data); free(a.k.data); free(a.v.data); free(a.out.data);
  }

  /* Varlen kernel: cu_seqlens checks. */
  c.flags = FA_VARLEN_Q | FA_VARLEN_K;
  fa_kernel *varlen = NULL;
  CHECK_STATUS(fa_kernel_get(rt, &c, &varlen), FA_OK, rt);
  if (varlen) {
    int32_t cq[] = {0, 5, 12}, ck[] = {0, 9, 20};
    fa_attention_args a = empty_args();
    a.q = make_tensor(3, (int64_t[]){12, 4, 64}, 2);
    a.k = make_tensor(3, (int64_t[]){20, 2, 64}, 2);
    a.v = make_tensor(3, (int64_t[]){20, 2, 64}, 2);
    a.out = make_tensor(3, (int64_t[]){12, 4, 64}, 2);
    a.cu_seqlens_q = (fa_tensor){cq, 1, {3}};
    a.cu_seqlens_k = (fa_tensor){ck, 1, {3}};
    cq[1] = 13;
    expect_fail(varlen, &a, FA_ERROR_BAD_INPUT, "cu_seqlens_q is not monotone", "cu_seqlens_q monotone");
    cq[1] = 5; ck[2] = 21;
    expect_fail(varlen, &a, FA_ERROR_BAD_INPUT, "cu_seqlens_k[2] = 21 is past the tensor (20 rows)", "cu_seqlens_k past");
    ck[2] = 20; cq[0] = 1;
    expect_fail(varlen, &a, FA_ERROR_BAD_INPUT, "cu_seqlens_q[0] = 1, must be 0", "cu_seqlens_q start");
    cq[0] = 0;
    fa_attention_args t = a;
    t.cu_seqlens_q.data = NULL;
    expect_fail(varlen, &t, FA_ERROR_INVALID_ARGUMENT, "cu_seqlens_q", "null cu_seqlens_q");
    fill_normal(&a.q, FA_F16); fill_normal(&a.k, FA_F16); fill_normal(&a.v, FA_F16);
    CHECK_STATUS(fa_attention_run(rt, varlen, &a), FA_OK, rt);
    free(a.q.data); free(a.k.data); free(a.v.data); free(a.out.data);
  }

  /* Paged + append kernel: block_table, seqused_k and capacity checks. */
  c.flags = FA_PAGED | FA_SEQUSED_K | FA_APPEND;
  c.page_size = 16;
  fa_kernel *paged = NULL;
  CHECK_STATUS(fa_kernel_get(rt, &c, &paged), FA_OK, rt);
  if (paged) {
    int32_t bt[] = {0, 1, 2, 3}, used[] = {5, 5}, cs[] = {10, 20};
    fa_attention_args a = empty_args();
    a.q = make_tensor(4, (int64_t[]){2, 1, 4, 64}, 2);
    a.k = make_tensor(4, (int64_t[]){4, 16, 2, 64}, 2);
    a.v = make_tensor(4, (int64_t[]){4, 16, 2, 64}, 2);
    a.k_new = make_tensor(4, (int64_t[]){2, 3, 2, 64}, 2);
    a.v_new = make_tensor(4, (int64_t[]){2, 3, 2, 64}, 2);
    a.out = make_tensor(4, (int64_t[]){2, 1, 4, 64}, 2);
    a.block_table = (fa_tensor){bt, 2, {2, 2}};
    a.seqused_k = (fa_tensor){used, 1, {2}};
    a.cache_seqlens = (fa_tensor){cs, 1, {2}};
    fill_normal(&a.k, FA_F16);
    size_t cache_bytes = (size_t)numel(&a.k) * 2;
    void *before = malloc(cache_bytes);
    memcpy(before, a.k.data, cache_bytes);
    bt[3] = 4;
    expect_fail(paged, &a, FA_ERROR_BAD_INPUT, "block_table entry [3] = 4 is past the pool of 4 pages", "block_table past pool");
    bt[3] = 3; used[1] = 33;
    expect_fail(paged, &a, FA_ERROR_BAD_INPUT, "seqused_k[1] = 33 is outside [0, 32]", "seqused_k past capacity");
    used[1] = 5; cs[1] = 30;
    expect_fail(paged, &a, FA_ERROR_BAD_INPUT, "append past capacity: cache_seqlens[1] = 30 + 3 new rows > 32 keys", "append past capacity");
    /* Two sequences appending into the same cache rows: sequence 1's
     * positions 26..28 are in its second page, which its block_table row
     * names as page 0, where sequence 0 writes rows 10..12. */
    cs[1] = 26; bt[3] = 0;
    expect_fail(paged, &a, FA_ERROR_BAD_INPUT, "append aliasing: sequences 0 and 1 both write row 10 of page 0 (their block_table rows name the same page)", "append aliasing");
    /* One sequence's 17 new rows over a block_table row naming page 0
     * twice: position 16 lands on row 0 of page 0 again. */
    fa_attention_args twice = a;
    int32_t bt2[] = {0, 0, 2, 3}, cs2[] = {0, 0};
    twice.block_table.data = bt2;
    twice.cache_seqlens.data = cs2;
    twice.k_new = make_tensor(4, (int64_t[]){2, 17, 2, 64}, 2);
    twice.v_new = make_tensor(4, (int64_t[]){2, 17, 2, 64}, 2);
    expect_fail(paged, &twice, FA_ERROR_BAD_INPUT, "append aliasing: sequence 0 writes row 0 of page 0 twice (its block_table row names the page twice)", "append aliasing in one sequence");
    free(twice.k_new.data); free(twice.v_new.data);
    CHECK(memcmp(before, a.k.data, cache_bytes) == 0, "the cache changed on a rejected append");
    bt[3] = 3; cs[1] = 29;
    fill_normal(&a.q, FA_F16); fill_normal(&a.v, FA_F16);
    fill_normal(&a.k_new, FA_F16); fill_normal(&a.v_new, FA_F16);
    CHECK_STATUS(fa_attention_run(rt, paged, &a), FA_OK, rt);
    free(before);
    free(a.q.data); free(a.k.data); free(a.v.data); free(a.k_new.data);
    free(a.v_new.data); free(a.out.data);
  }

  /* A corrupt artifact given directly. */
  fa_kernel *k = NULL;
  CHECK_STATUS(fa_kernel_load_artifact(rt, "FLASHATTnope", 12, &k), FA_ERROR_CORRUPT_ARTIFACT, rt);
  CHECK_STATUS(fa_kernel_load_artifact_file(rt, "/nonexistent.faa", &k), FA_ERROR_IO, rt);

  /* A host artifact whose key is its config's on a CPU of another level
   * (compiled on another machine) is refused as unsupported, naming both
   * levels; under a key of no level it is corrupt. */
  {
    fa_attention_config c = fa_attention_config_default();
    c.target = FA_TARGET_HOST;
    const char *meta = "{\"args\":[\"q\",\"k\",\"v\",\"out\"],\"entry\":\"fa_entry\","
                       "\"target\":\"host\"}";
    void *bytes = NULL;
    size_t size = 0;
    CHECK_STATUS(fa_artifact_build(&c, "test 1", FA_ARTIFACT_HOST_SO, meta, "so", 2, &bytes, &size),
                 FA_OK, rt);
    const char *other = strcmp(fa_host_cpu_level(), "x86-64") ? "x86-64" : "x86-64-v3";
    char key[33];
    CHECK_STATUS(fa_config_key_at(&c, "test 1", other, key), FA_OK, rt);
    memcpy((char *)bytes + 16, key, 32);
    CHECK_STATUS(fa_kernel_load_artifact(rt, bytes, size, &k), FA_ERROR_UNSUPPORTED, rt);
    char expected[160];
    snprintf(expected, sizeof(expected),
             "host artifact compiled for CPU level %s, this CPU is %s", other, fa_host_cpu_level());
    CHECK(strstr(fa_runtime_last_error(rt), expected) != NULL, "message '%s' lacks '%s'",
          fa_runtime_last_error(rt), expected);
    memset((char *)bytes + 16, 'f', 32);
    CHECK_STATUS(fa_kernel_load_artifact(rt, bytes, size, &k), FA_ERROR_CORRUPT_ARTIFACT, rt);
    CHECK(strstr(fa_runtime_last_error(rt), "corrupt artifact: key does not match the config"),
          "message '%s'", fa_runtime_last_error(rt));
    fa_artifact_free(bytes);
  }
  CHECK(strcmp(fa_status_string(FA_ERROR_BAD_INPUT), "FA_ERROR_BAD_INPUT") == 0, "status string");
  CHECK(fa_runtime_abi_version() == FA_RT_ABI_VERSION, "abi version");

  fa_runtime_destroy(rt);
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "warning: cleanup failed\n");
  printf("%s\n", g_failures ? "FAILED" : "all checks passed");
  return g_failures ? 1 : 0;
}
