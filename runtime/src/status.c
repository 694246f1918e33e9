/*===- status.c - status strings, errors, debug log -----------------------===*/

#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

const char *fa_status_string(fa_status status) {
  switch (status) {
  case FA_OK: return "FA_OK";
  case FA_ERROR_INVALID_ARGUMENT: return "FA_ERROR_INVALID_ARGUMENT";
  case FA_ERROR_SHAPE_MISMATCH: return "FA_ERROR_SHAPE_MISMATCH";
  case FA_ERROR_BAD_INPUT: return "FA_ERROR_BAD_INPUT";
  case FA_ERROR_OUT_OF_MEMORY: return "FA_ERROR_OUT_OF_MEMORY";
  case FA_ERROR_IO: return "FA_ERROR_IO";
  case FA_ERROR_CORRUPT_ARTIFACT: return "FA_ERROR_CORRUPT_ARTIFACT";
  case FA_ERROR_CACHE_MISS: return "FA_ERROR_CACHE_MISS";
  case FA_ERROR_COMPILE_FAILED: return "FA_ERROR_COMPILE_FAILED";
  case FA_ERROR_NO_DRIVER: return "FA_ERROR_NO_DRIVER";
  case FA_ERROR_CUDA: return "FA_ERROR_CUDA";
  case FA_ERROR_UNSUPPORTED: return "FA_ERROR_UNSUPPORTED";
  case FA_ERROR_LOAD_FAILED: return "FA_ERROR_LOAD_FAILED";
  }
  return "FA_ERROR_UNKNOWN_STATUS";
}

uint32_t fa_runtime_abi_version(void) { return FA_RT_ABI_VERSION; }

void fa_debug(const char *fmt, ...) {
  static int enabled = -1;
  if (enabled < 0) {
    const char *env = getenv("FLASHATTN_DEBUG");
    enabled = env && *env && *env != '0';
  }
  if (!enabled)
    return;
  va_list ap;
  va_start(ap, fmt);
  fputs("flashattn_rt: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

fa_status fa_fail(fa_runtime *rt, fa_status status, const char *fmt, ...) {
  char buf[FA_ERROR_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (rt)
    snprintf(rt->error, sizeof(rt->error), "%s", buf);
  fa_debug("%s: %s", fa_status_string(status), buf);
  return status;
}

const char *fa_runtime_last_error(const fa_runtime *runtime) {
  return runtime ? runtime->error : "null runtime";
}
