/*===- test_compile.c - the compiler out of process -----------------------===*
 *
 * A compiler library that aborts, crashes or hangs inside fa_kernel_get
 * (fake_compiler.c) gives FA_ERROR_COMPILE_FAILED with the reason, within
 * the time limit, and this process goes on: it then compiles with the
 * real compiler library and runs the kernel. An error the compiler reports
 * and bytes that are no artifact are statuses too, in and out of process;
 * options of the first release's size are accepted.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
#include "common.h"

#include <stddef.h>
#include <time.h>

static fa_runtime *make_rt(const char *lib, int timeout_s) {
  fa_runtime_options o = {0};
  o.struct_size = sizeof(o);
  o.disable_disk_cache = 1;
  o.compiler_library = lib;
  o.compile_timeout_s = timeout_s;
  fa_runtime *rt = NULL;
  return fa_runtime_create(&o, &rt) == FA_OK ? rt : NULL;
}

static fa_attention_config config_d(int d) {
  fa_attention_config c = fa_attention_config_default();
  c.num_q_heads = 2; c.num_kv_heads = 1; c.head_dim = c.head_dim_v = d;
  return c;
}

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* fa_kernel_get with head_dim d fails with `status` and `needle` in the
 * message. */
static void expect_compile_fail(fa_runtime *rt, int d, fa_status status, const char *needle) {
  fa_attention_config c = config_d(d);
  fa_kernel *k = NULL;
  fa_status st = fa_kernel_get(rt, &c, &k);
  CHECK(st == status && !k, "head_dim %d: %s, expected %s (%s)", d, fa_status_string(st),
        fa_status_string(status), fa_runtime_last_error(rt));
  CHECK(strstr(fa_runtime_last_error(rt), needle) != NULL, "head_dim %d: message '%s' lacks '%s'",
        d, fa_runtime_last_error(rt), needle);
}

int main(void) {
  fa_runtime *rt = make_rt(FA_TEST_FAKE_COMPILER, 2);
  CHECK(rt != NULL, "runtime");
  if (!rt)
    return 1;
  expect_compile_fail(rt, 8, FA_ERROR_COMPILE_FAILED, "the compiler crashed compiling");
  expect_compile_fail(rt, 8, FA_ERROR_COMPILE_FAILED, "signal 6");
  expect_compile_fail(rt, 24, FA_ERROR_COMPILE_FAILED, "signal 11");
  double t0 = seconds();
  expect_compile_fail(rt, 16, FA_ERROR_COMPILE_FAILED, "did not finish within 2 s");
  double waited = seconds() - t0;
  CHECK(waited >= 1.5 && waited < 30, "the hung compile returned after %.1f s (limit 2 s)", waited);
  expect_compile_fail(rt, 32, FA_ERROR_COMPILE_FAILED,
                      "failed: fake compiler: no kernel for head_dim 32");
  expect_compile_fail(rt, 40, FA_ERROR_CORRUPT_ARTIFACT, "");
  fa_runtime_destroy(rt);

  /* In the calling process (a negative limit): the reported error and the
   * bad bytes, the same statuses. */
  rt = make_rt(FA_TEST_FAKE_COMPILER, -1);
  CHECK(rt != NULL, "in-process runtime");
  if (rt) {
    expect_compile_fail(rt, 32, FA_ERROR_COMPILE_FAILED,
                        "failed: fake compiler: no kernel for head_dim 32");
    expect_compile_fail(rt, 40, FA_ERROR_CORRUPT_ARTIFACT, "");
    fa_runtime_destroy(rt);
  }

  /* This process survived all of it: the real compiler, out of process,
   * with options of the first release's size (no compile_timeout_s). */
  fa_runtime_options o = {0};
  o.struct_size = (uint32_t)offsetof(fa_runtime_options, compile_timeout_s);
  o.disable_disk_cache = 1;
  o.compiler_library = FA_TEST_COMPILER_LIB;
  rt = NULL;
  CHECK_STATUS(fa_runtime_create(&o, &rt), FA_OK, rt);
  if (rt) {
    fa_attention_config c = config_d(64);
    fa_kernel *k = NULL;
    CHECK_STATUS(fa_kernel_get(rt, &c, &k), FA_OK, rt);
    CHECK(k && run_small(rt, k), "the compiled kernel runs");
    fa_runtime_destroy(rt);
  }
  if (g_failures)
    return 1;
  printf("compile tests passed\n");
  return 0;
}
