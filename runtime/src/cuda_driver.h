/*===- cuda_driver.h - the CUDA driver's symbols, loaded by dlopen -*- C -*-===*
 *
 * The CUDA backend (the cuda_*.c files) calls the driver only through
 * fa_cu_driver, a table of function pointers that fa_cu_driver_open fills
 * with dlsym from libcuda.so.1 (or $FLASHATTN_LIBCUDA), so that the library
 * builds and runs where no driver exists and answers FA_ERROR_NO_DRIVER.
 * FA_CU_SYMBOLS below is the whole list: the driver functions the runtime
 * uses, the symbol each is loaded from (the _v2 entry points where the
 * driver has them), and whether a driver without it is unusable (required)
 * or only the features that need it are (optional, checked at use). The
 * types and enum values are those of cuda.h (CUDA 12), declared here so
 * that no CUDA header is needed to build.
 *
 *===----------------------------------------------------------------------===*/

#ifndef FLASHATTN_RT_CUDA_DRIVER_H
#define FLASHATTN_RT_CUDA_DRIVER_H

#include "internal.h"

#include <stdbool.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;

/* The backend's state, one per runtime (cuda_context.h). */
typedef struct fa_cuda fa_cuda;

/* CUresult values. */
enum { CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_OUT_OF_MEMORY = 2 };

/* CUtensorMapDataType, CUtensorMapL2promotion values. */
enum {
  CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
  CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
  CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2
};

/* CUpointer_attribute and CUmemorytype values. */
enum {
  CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
  CU_MEMORYTYPE_DEVICE = 2
};

/* CUdevice_attribute and CUfunction_attribute values. */
enum {
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS = 88,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
};

/* Streams, events, stream capture and user objects. */
enum {
  CU_STREAM_NON_BLOCKING = 1,
  CU_EVENT_DISABLE_TIMING = 2,
  CU_STREAM_CAPTURE_MODE_RELAXED = 2,
  CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
  CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2,
  CU_USER_OBJECT_NO_DESTRUCTOR_SYNC = 1,
  CU_GRAPH_USER_OBJECT_MOVE = 1
};

/* The per-thread default stream's handle (one for every thread's stream). */
#define FA_CU_STREAM_PER_THREAD ((void *)(uintptr_t)2)

/* X(field, symbol, required, parameters): every function returns CUresult.
 * The required ones are loaded in this order, and the first missing one is
 * named in the error. */
#define FA_CU_SYMBOLS(X)                                                       \
  X(cuInit, "cuInit", true, (unsigned flags))                                  \
  X(cuDeviceGet, "cuDeviceGet", true, (CUdevice *, int ordinal))               \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", true,                        \
    (int *value, int attribute, CUdevice))                                     \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", true,               \
    (CUcontext *, CUdevice))                                                   \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", true,          \
    (CUdevice))                                                                \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", true, (CUcontext))                     \
  X(cuCtxGetCurrent, "cuCtxGetCurrent", true, (CUcontext *))                   \
  X(cuCtxGetDevice, "cuCtxGetDevice", true, (CUdevice *))                      \
  X(cuModuleLoadData, "cuModuleLoadData", true, (CUmodule *, const void *))    \
  X(cuModuleGetFunction, "cuModuleGetFunction", true,                          \
    (CUfunction *, CUmodule, const char *name))                                \
  X(cuModuleUnload, "cuModuleUnload", true, (CUmodule))                        \
  X(cuFuncSetAttribute, "cuFuncSetAttribute", true,                            \
    (CUfunction, int attribute, int value))                                    \
  X(cuLaunchKernel, "cuLaunchKernel", true,                                    \
    (CUfunction, unsigned grid_x, unsigned grid_y, unsigned grid_z,            \
     unsigned block_x, unsigned block_y, unsigned block_z, unsigned smem,      \
     CUstream, void **params, void **extra))                                   \
  X(cuGetErrorString, "cuGetErrorString", true, (CUresult, const char **))     \
  X(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", true,                    \
    (void *map, int dtype, unsigned rank, void *global,                        \
     const uint64_t *dims, const uint64_t *strides, const unsigned *box,       \
     const unsigned *elem_strides, int interleave, int swizzle, int l2,        \
     int oob))                                                                 \
  /* Stream-ordered scratch (CUDA 11.2+): split-KV, the tile counter and     \
   * the tile table. */                                                        \
  X(cuMemAllocAsync, "cuMemAllocAsync", false,                                 \
    (uint64_t *, size_t, CUstream))                                            \
  X(cuMemFreeAsync, "cuMemFreeAsync", false, (uint64_t, CUstream))             \
  X(cuMemsetD32Async, "cuMemsetD32Async", false,                               \
    (uint64_t, unsigned value, size_t words, CUstream))                        \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", false,                          \
    (uint64_t dst, const void *src, size_t bytes, CUstream))                   \
  /* Where the call's pointers live (memory type, device). */                 \
  X(cuPointerGetAttribute, "cuPointerGetAttribute", false,                     \
    (void *data, int attribute, uint64_t ptr))                                 \
  X(cuStreamIsCapturing, "cuStreamIsCapturing", false,                         \
    (CUstream, int *status))                                                   \
  /* Buffers that outlive a launch: merge counters, block_table mirrors. */   \
  X(cuMemAlloc, "cuMemAlloc_v2", false, (uint64_t *, size_t))                  \
  X(cuMemFree, "cuMemFree_v2", false, (uint64_t))                              \
  X(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode",   \
    false, (int *mode))                                                        \
  X(cuStreamCreate, "cuStreamCreate", false, (CUstream *, unsigned flags))     \
  X(cuStreamDestroy, "cuStreamDestroy_v2", false, (CUstream))                  \
  X(cuStreamSynchronize, "cuStreamSynchronize", false, (CUstream))             \
  /* CUDA graphs' user objects (CUDA 11.3+; the _v2 capture info: status,    \
   * id, graph, dependencies). */                                              \
  X(cuStreamGetCaptureInfo, "cuStreamGetCaptureInfo_v2", false,                \
    (CUstream, int *status, uint64_t *id, void **graph, const void **deps,    \
     size_t *num_deps))                                                        \
  X(cuUserObjectCreate, "cuUserObjectCreate", false,                           \
    (void **object, void *ptr, void (*destroy)(void *), unsigned refs,        \
     unsigned flags))                                                          \
  X(cuUserObjectRelease, "cuUserObjectRelease", false,                         \
    (void *object, unsigned count))                                            \
  X(cuGraphRetainUserObject, "cuGraphRetainUserObject", false,                 \
    (void *graph, void *object, unsigned count, unsigned flags))               \
  /* Pinned staging (cuda_staging.c). */                                      \
  X(cuMemHostAlloc, "cuMemHostAlloc", false,                                   \
    (void **, size_t, unsigned flags))                                         \
  X(cuMemFreeHost, "cuMemFreeHost", false, (void *))                           \
  X(cuEventCreate, "cuEventCreate", false, (void **, unsigned flags))          \
  X(cuEventDestroy, "cuEventDestroy_v2", false, (void *))                      \
  X(cuEventRecord, "cuEventRecord", false, (void *, CUstream))                 \
  X(cuEventQuery, "cuEventQuery", false, (void *))                             \
  X(cuEventSynchronize, "cuEventSynchronize", false, (void *))

typedef struct fa_cu_driver {
  void *lib; /* dlopen handle */
#define FA_CU_FIELD(field, symbol, required, params) CUresult(*field) params;
  FA_CU_SYMBOLS(FA_CU_FIELD)
#undef FA_CU_FIELD
} fa_cu_driver;

/* Opens the driver library and loads FA_CU_SYMBOLS into *drv:
 * FA_ERROR_NO_DRIVER (with *drv cleared) when the library is missing or
 * lacks a required symbol. */
fa_status fa_cu_driver_open(fa_runtime *rt, fa_cu_driver *drv) FA_HIDDEN;
void fa_cu_driver_close(fa_cu_driver *drv) FA_HIDDEN;

/* The driver's description of `r`. */
const char *fa_cu_error(const fa_cu_driver *drv, CUresult r) FA_HIDDEN;

/* Relaxed stream-capture mode on this thread
 * (cuThreadExchangeStreamCaptureMode) around the calls that a capture in
 * global mode, this thread's or another's, forbids: cuMemAlloc, cuMemFree,
 * cuStreamSynchronize, and the pinned staging's cuMemHostAlloc,
 * cuMemFreeHost, cuEventCreate, cuEventQuery, cuEventSynchronize. Returns
 * whether the switch took; fa_cu_relaxed_leave restores the previous mode. */
bool fa_cu_relaxed_enter(const fa_cu_driver *drv, int *mode) FA_HIDDEN;
void fa_cu_relaxed_leave(const fa_cu_driver *drv, bool entered, int mode) FA_HIDDEN;

/* cuMemAlloc and cuMemFree in relaxed capture mode (or the thread's mode
 * where it cannot be switched). */
CUresult fa_cu_alloc_relaxed(const fa_cu_driver *drv, uint64_t *ptr, size_t bytes) FA_HIDDEN;
CUresult fa_cu_free_relaxed(const fa_cu_driver *drv, uint64_t ptr) FA_HIDDEN;

#endif
