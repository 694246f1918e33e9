/*===- cuda_driver.c - the CUDA driver's symbols, loaded by dlopen --------===*
 *
 * libcuda.so.1 is opened with dlopen at the runtime's first CUDA use, and
 * every function of FA_CU_SYMBOLS (cuda_driver.h) is looked up here, in one
 * place.
 *
 *===----------------------------------------------------------------------===*/

#include "cuda_driver.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

fa_status fa_cu_driver_open(fa_runtime *rt, fa_cu_driver *drv) {
  memset(drv, 0, sizeof(*drv));
  const char *name = getenv("FLASHATTN_LIBCUDA");
  void *lib = dlopen(name && *name ? name : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return fa_fail(rt, FA_ERROR_NO_DRIVER,
                   "no CUDA driver: dlopen(libcuda.so.1) failed: %s", dlerror());
  const char *missing = NULL;
#define FA_CU_LOAD(field, symbol, required, params)                            \
  *(void **)(&drv->field) = dlsym(lib, symbol);                                \
  if ((required) && !drv->field && !missing)                                   \
    missing = symbol;
  FA_CU_SYMBOLS(FA_CU_LOAD)
#undef FA_CU_LOAD
  if (missing) {
    dlclose(lib);
    memset(drv, 0, sizeof(*drv));
    return fa_fail(rt, FA_ERROR_NO_DRIVER, "libcuda lacks %s", missing);
  }
  drv->lib = lib;
  return FA_OK;
}

void fa_cu_driver_close(fa_cu_driver *drv) {
  if (drv->lib)
    dlclose(drv->lib);
  memset(drv, 0, sizeof(*drv));
}

const char *fa_cu_error(const fa_cu_driver *drv, CUresult r) {
  const char *s = NULL;
  if (drv->cuGetErrorString)
    drv->cuGetErrorString(r, &s);
  return s ? s : "unknown CUDA error";
}

bool fa_cu_relaxed_enter(const fa_cu_driver *drv, int *mode) {
  *mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  return drv->cuThreadExchangeStreamCaptureMode &&
         drv->cuThreadExchangeStreamCaptureMode(mode) == 0;
}

void fa_cu_relaxed_leave(const fa_cu_driver *drv, bool entered, int mode) {
  if (entered)
    drv->cuThreadExchangeStreamCaptureMode(&mode);
}

CUresult fa_cu_alloc_relaxed(const fa_cu_driver *drv, uint64_t *ptr, size_t bytes) {
  int mode;
  bool relaxed = fa_cu_relaxed_enter(drv, &mode);
  CUresult r = drv->cuMemAlloc(ptr, bytes);
  fa_cu_relaxed_leave(drv, relaxed, mode);
  return r;
}

CUresult fa_cu_free_relaxed(const fa_cu_driver *drv, uint64_t ptr) {
  int mode;
  bool relaxed = fa_cu_relaxed_enter(drv, &mode);
  CUresult r = drv->cuMemFree(ptr);
  fa_cu_relaxed_leave(drv, relaxed, mode);
  return r;
}
