/*===- cuda_context.c - the device and context a runtime drives -----------===*
 *
 * At its first CUDA use a runtime loads the driver (cuda_driver.c) and
 * binds to one device: the context current on the thread then (cuInit,
 * cuCtxGetCurrent, cuCtxGetDevice), else device 0's primary context
 * (cuDeviceGet, cuDevicePrimaryCtxRetain, released at the end). That
 * context is made current around each call and the caller's restored
 * (cuCtxSetCurrent). cuDeviceGetAttribute gives the SM count and whether
 * the device reads pageable memory itself (HMM, ATS: pinned staging,
 * cuda_staging.c); cuPointerGetAttribute where a pointer lives.
 *
 *===----------------------------------------------------------------------===*/

#include "cuda_context.h"

#include <stdlib.h>
#include <string.h>

CUresult fa_cuda_enter(const fa_cuda *cu, CUcontext *prev) {
  *prev = NULL;
  if (cu->drv.cuCtxGetCurrent(prev) != 0)
    *prev = NULL;
  CUresult r = *prev != cu->ctx ? cu->drv.cuCtxSetCurrent(cu->ctx) : 0;
  if (r != 0)
    *prev = cu->ctx; /* fa_cuda_leave does nothing */
  return r;
}

void fa_cuda_leave(const fa_cuda *cu, CUcontext prev) {
  if (prev != cu->ctx)
    cu->drv.cuCtxSetCurrent(prev);
}

CUresult fa_cuda_device_memory(const fa_cuda *cu, const void *ptr, bool *device,
                               int *ordinal) {
  const fa_cu_driver *drv = &cu->drv;
  uint64_t addr = (uint64_t)(uintptr_t)ptr;
  unsigned type = 0, managed = 0;
  *device = false;
  CUresult r = drv->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, addr);
  if (r == CUDA_ERROR_INVALID_VALUE)
    return 0;
  if (r != 0 || type != CU_MEMORYTYPE_DEVICE)
    return r;
  if (drv->cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, addr) != 0)
    managed = 0;
  *device = !managed;
  if (*device && ordinal)
    r = drv->cuPointerGetAttribute(ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, addr);
  return r;
}

/* Binds `cu` to the thread's current context and its device, else to
 * device 0's primary context (retained), and reads the device's SM count
 * and whether it reads pageable memory (unknown counts as no). */
static CUresult bind_device(fa_cuda *cu) {
  const fa_cu_driver *drv = &cu->drv;
  CUdevice dev = 0;
  CUcontext current = NULL;
  CUresult r = drv->cuInit(0);
  if (r == 0)
    r = drv->cuCtxGetCurrent(&current);
  if (r == 0 && current) {
    cu->ctx = current;
    r = drv->cuCtxGetDevice(&dev);
  } else {
    if (r == 0)
      r = drv->cuDeviceGet(&dev, 0);
    if (r == 0)
      r = drv->cuDevicePrimaryCtxRetain(&cu->ctx, dev);
    cu->retained = r == 0;
  }
  cu->device = dev;
  if (r == 0)
    r = drv->cuDeviceGetAttribute(&cu->num_sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  if (r == 0 && drv->cuDeviceGetAttribute(&cu->staging.pinned,
                                          CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, dev) != 0)
    cu->staging.pinned = 0;
  return r;
}

fa_status fa_cuda_get(fa_runtime *rt, fa_cuda **out) {
  if (rt->cuda) {
    *out = (fa_cuda *)rt->cuda;
    return FA_OK;
  }
  fa_cu_driver drv;
  fa_status st = fa_cu_driver_open(rt, &drv);
  if (st != FA_OK)
    return st;
  fa_cuda *cu = (fa_cuda *)calloc(1, sizeof(*cu));
  if (!cu) {
    fa_cu_driver_close(&drv);
    return fa_fail(rt, FA_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  cu->drv = drv;
  CUresult r = bind_device(cu);
  /* FLASHATTN_PINNED_STAGING=1 or 0 overrides the device's answer. */
  const char *staging = getenv("FLASHATTN_PINNED_STAGING");
  if (staging && (!strcmp(staging, "0") || !strcmp(staging, "1")))
    cu->staging.pinned = staging[0] == '1';
  if (r != 0) {
    st = fa_fail(rt, FA_ERROR_NO_DRIVER, "CUDA driver present but unusable: %s",
                 fa_cu_error(&cu->drv, r));
    if (cu->retained)
      cu->drv.cuDevicePrimaryCtxRelease(cu->device);
    fa_cu_driver_close(&cu->drv);
    free(cu);
    return st;
  }
  rt->cuda = cu;
  *out = cu;
  return FA_OK;
}

fa_status fa_cuda_on_device(fa_runtime *rt, const void *ptr, bool *on_device) {
  *on_device = false;
  fa_cuda *cu;
  fa_status st = fa_cuda_get(rt, &cu);
  if (st != FA_OK)
    return st;
  if (!cu->drv.cuPointerGetAttribute || !ptr)
    return FA_OK;
  CUcontext prev;
  if (fa_cuda_enter(cu, &prev) != 0)
    return fa_fail(rt, FA_ERROR_CUDA, "cuCtxSetCurrent failed");
  CUresult r = fa_cuda_device_memory(cu, ptr, on_device, NULL);
  fa_cuda_leave(cu, prev);
  if (r != 0)
    return fa_fail(rt, FA_ERROR_CUDA, "cuPointerGetAttribute failed: %s",
                   fa_cu_error(&cu->drv, r));
  return FA_OK;
}

fa_status fa_cuda_probe(fa_runtime *runtime, int32_t *num_sms) {
  if (!runtime)
    return FA_ERROR_INVALID_ARGUMENT;
  fa_cuda *cu;
  fa_status st = fa_cuda_get(runtime, &cu);
  if (st == FA_OK && num_sms)
    *num_sms = cu->num_sms;
  return st;
}

void fa_cuda_release(fa_runtime *rt) {
  fa_cuda *cu = (fa_cuda *)rt->cuda;
  if (!cu)
    return;
  /* Device memory, in the runtime's context; cuMemFree waits for the
   * launches still reading it. */
  if (cu->streams.num + cu->streams.num_retired + cu->graphs.num_chunks + cu->staging.num > 0 ||
      cu->graphs.zero_stream) {
    CUcontext prev;
    if (fa_cuda_enter(cu, &prev) == 0) {
      fa_cuda_staging_release(cu);
      fa_cuda_streams_release(cu);
      fa_cuda_graphs_release_device(cu);
      fa_cuda_leave(cu, prev);
    }
  }
  /* Host memory, freed even where the context could not be entered. */
  fa_cuda_streams_free_host(cu);
  fa_cuda_graphs_free_host(cu);
  /* After the cache unloaded the modules (run.c). */
  if (cu->retained)
    cu->drv.cuDevicePrimaryCtxRelease(cu->device);
  fa_cu_driver_close(&cu->drv);
  free(cu);
  rt->cuda = NULL;
}
