/*===- test_cuda.c - the CUDA backend without a driver --------------------===*
 *
 * With FLASHATTN_LIBCUDA naming a library that does not exist, probing and
 * loading an sm90 artifact answer FA_ERROR_NO_DRIVER with a message; nothing
 * crashes. The default libcuda.so.1 is probed too: on a machine with a
 * driver the test is skipped (77) rather than launching anything.
 *
 *===----------------------------------------------------------------------===*/

#include "common.h"

#include "flashattn/artifact.h"
#include "flashattn/version.h"

int main(void) {
  fa_runtime_options opts = {0};
  opts.struct_size = sizeof(opts);
  opts.disable_disk_cache = 1;
  opts.compiler_library = "";
  fa_runtime *rt = NULL;
  CHECK_STATUS(fa_runtime_create(&opts, &rt), FA_OK, rt);

  setenv("FLASHATTN_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  int32_t sms = -1;
  CHECK_STATUS(fa_cuda_probe(rt, &sms), FA_ERROR_NO_DRIVER, rt);
  CHECK(strstr(fa_runtime_last_error(rt), "no CUDA driver") != NULL,
        "message: %s", fa_runtime_last_error(rt));
  CHECK(sms == -1, "num_sms written without a driver");

  /* An sm90 artifact (payload is not inspected before the driver loads). */
  fa_attention_config c = fa_attention_config_default();
  c.target = FA_TARGET_SM90;
  void *bytes = NULL;
  size_t size = 0;
  const char payload[] = "not a real cubin";
  CHECK(fa_artifact_build(&c, FA_COMPILER_VERSION, FA_ARTIFACT_CUBIN,
                          "{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"],"
                          "\"block\":[384,1,1],\"smem\":200000}",
                          payload, sizeof(payload), &bytes, &size) == FA_OK,
        "building a cubin artifact");
  fa_kernel *k = NULL;
  CHECK_STATUS(fa_kernel_load_artifact(rt, bytes, size, &k), FA_ERROR_NO_DRIVER, rt);
  CHECK(k == NULL, "a kernel came back without a driver");
  fa_artifact_free(bytes);

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
