/*===- fake_cuda.c - a stand-in libcuda for the launch-path tests --------===*
 *
 * The driver entry points runtime/src/cuda_driver.h lists, with no GPU behind them:
 * a device of fake_state.num_sms SMs, "device memory" that is host memory
 * (cuMemAlloc / cuMemAllocAsync return malloc'd blocks, and fake_device_range
 * marks an address range the test's tensors live in), copies and memsets
 * done on the host at once, modules whose functions are their names, and
 * kernel launches recorded (function name, grid, block, shared memory,
 * stream) instead of run, and CUDA user objects whose references the
 * capture's graph keeps until the test destroys it (fake_graph_destroy).
 * The test (test_launch.c) opens the same library
 * (FLASHATTN_LIBCUDA) and reads or steers `fake_state`: which stream is
 * capturing, which call fails.
 *
 * Values follow cuda.h (CUDA 12): CUDA_SUCCESS 0, CUDA_ERROR_INVALID_VALUE 1,
 * CUDA_ERROR_OUT_OF_MEMORY 2; CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2,
 * _IS_MANAGED 8, _DEVICE_ORDINAL 9; CU_MEMORYTYPE_DEVICE 2;
 * CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16.
 *
 *===----------------------------------------------------------------------===*/

#include "fake_cuda.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

fake_cuda_state fake_state = {
    .num_sms = 132, .fail_memset_at = -1, .fail_launch_at = -1, .fail_copy_at = -1};

typedef int CUresult;
enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2 };

static _Thread_local void *current_ctx;
static char primary_ctx;
static char module_handle;
static char function_names[64][FAKE_NAME_BYTES];
static int num_functions;

/* Blocks handed out as device memory, to tell them from host memory. */
typedef struct block {
  uintptr_t at;
  size_t bytes;
} block;
static block blocks[4096];
static int num_blocks;

static void remember(void *p, size_t bytes) {
  if (num_blocks < 4096)
    blocks[num_blocks++] = (block){(uintptr_t)p, bytes};
}

static void forget(uintptr_t p) {
  for (int i = 0; i < num_blocks; ++i)
    if (blocks[i].at == p) {
      blocks[i] = blocks[--num_blocks];
      return;
    }
}

static int on_device(uint64_t p) {
  if (p >= fake_state.device_lo && p < fake_state.device_hi)
    return 1;
  for (int i = 0; i < num_blocks; ++i)
    if (p >= blocks[i].at && p < blocks[i].at + blocks[i].bytes)
      return 1;
  return 0;
}

CUresult cuInit(unsigned flags) { (void)flags; return OK; }
CUresult cuDeviceGet(int *dev, int ordinal) { *dev = ordinal; return OK; }
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
  (void)dev;
  *v = attr == 16 ? fake_state.num_sms : attr == 88 ? fake_state.pageable_access : 0;
  return OK;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) { (void)dev; *ctx = &primary_ctx; return OK; }
CUresult cuDevicePrimaryCtxRelease_v2(int dev) { (void)dev; return OK; }
CUresult cuCtxSetCurrent(void *ctx) { current_ctx = ctx; return OK; }
CUresult cuCtxGetCurrent(void **ctx) { *ctx = current_ctx; return OK; }
CUresult cuCtxGetDevice(int *dev) { *dev = 0; return OK; }
CUresult cuModuleLoadData(void **module, const void *image) {
  (void)image;
  *module = &module_handle;
  return OK;
}
CUresult cuModuleGetFunction(void **fn, void *module, const char *name) {
  (void)module;
  for (int i = 0; i < num_functions; ++i)
    if (!strcmp(function_names[i], name)) {
      *fn = function_names[i];
      return OK;
    }
  if (num_functions == 64 || strlen(name) >= FAKE_NAME_BYTES)
    return INVALID_VALUE;
  strcpy(function_names[num_functions], name);
  *fn = function_names[num_functions++];
  return OK;
}
CUresult cuModuleUnload(void *module) { (void)module; return OK; }
CUresult cuFuncSetAttribute(void *fn, int attr, int value) {
  (void)fn; (void)attr; (void)value;
  return OK;
}
CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned smem, void *stream,
                        void **params, void **extra) {
  (void)gy; (void)gz; (void)by; (void)bz; (void)params; (void)extra;
  if (fake_state.fail_launch_at == fake_state.num_launches_total++)
    return INVALID_VALUE;
  if (fake_state.num_launches < FAKE_MAX_LAUNCHES) {
    fake_launch *l = &fake_state.launches[fake_state.num_launches++];
    strcpy(l->name, (const char *)fn);
    l->grid = gx;
    l->block = bx;
    l->smem = smem;
    l->stream = stream;
  }
  return OK;
}
CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = r == INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE (fake)" : "fake error";
  return OK;
}
CUresult cuTensorMapEncodeTiled(void *map, int dtype, unsigned rank, void *global,
                                const uint64_t *dims, const uint64_t *strides,
                                const unsigned *box, const unsigned *elem_strides,
                                int interleave, int swizzle, int l2, int oob) {
  (void)dtype; (void)global; (void)elem_strides; (void)interleave; (void)swizzle; (void)l2;
  (void)oob;
  int n = fake_state.num_tma_encodes++ % 8;
  fake_state.tma[n].rank = rank;
  for (unsigned d = 0; d < rank && d < 5; ++d) {
    fake_state.tma[n].dims[d] = dims[d];
    fake_state.tma[n].box[d] = box[d];
    if (d > 0)
      fake_state.tma[n].strides[d - 1] = strides[d - 1];
  }
  memset(map, 0, 128);
  return OK;
}
static CUresult alloc(uint64_t *p, size_t bytes) {
  void *m = malloc(bytes ? bytes : 1);
  if (!m)
    return OUT_OF_MEMORY;
  remember(m, bytes);
  *p = (uint64_t)(uintptr_t)m;
  return OK;
}
static void release(uint64_t p) {
  forget((uintptr_t)p);
  free((void *)(uintptr_t)p);
}
CUresult cuMemAllocAsync(uint64_t *p, size_t bytes, void *stream) {
  (void)stream;
  fake_state.num_async_allocs++;
  if (fake_state.fail_async_alloc)
    return (CUresult)fake_state.fail_async_alloc;
  return alloc(p, bytes);
}
CUresult cuMemFreeAsync(uint64_t p, void *stream) {
  (void)stream;
  fake_state.num_async_frees++;
  release(p);
  return OK;
}
CUresult cuMemAlloc_v2(uint64_t *p, size_t bytes) {
  fake_state.num_allocs++;
  return alloc(p, bytes);
}
CUresult cuMemFree_v2(uint64_t p) {
  fake_state.num_frees++;
  release(p);
  return OK;
}
CUresult cuMemsetD32Async(uint64_t p, unsigned value, size_t count, void *stream) {
  (void)stream;
  if (fake_state.fail_memset_at == fake_state.num_memsets++)
    return INVALID_VALUE;
  uint32_t *w = (uint32_t *)(uintptr_t)p;
  for (size_t i = 0; i < count; ++i)
    w[i] = value;
  return OK;
}
/* Page-locked host blocks handed out by cuMemHostAlloc. */
static block pinned[64];
static int num_pinned;

static int in_pinned(const void *p) {
  for (int i = 0; i < num_pinned; ++i)
    if ((uintptr_t)p >= pinned[i].at && (uintptr_t)p < pinned[i].at + pinned[i].bytes)
      return 1;
  return 0;
}

CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned flags) {
  (void)flags;
  if (fake_state.fail_host_alloc || num_pinned == 64)
    return OUT_OF_MEMORY;
  *p = malloc(bytes ? bytes : 1);
  if (!*p)
    return OUT_OF_MEMORY;
  pinned[num_pinned++] = (block){(uintptr_t)*p, bytes};
  fake_state.num_host_allocs++;
  return OK;
}
CUresult cuMemFreeHost(void *p) {
  for (int i = 0; i < num_pinned; ++i)
    if (pinned[i].at == (uintptr_t)p) {
      pinned[i] = pinned[--num_pinned];
      break;
    }
  free(p);
  fake_state.num_host_frees++;
  return OK;
}
static char event_handles[256];
static int num_events;
CUresult cuEventCreate(void **event, unsigned flags) {
  (void)flags;
  if (num_events == 256)
    return OUT_OF_MEMORY;
  *event = &event_handles[num_events++];
  return OK;
}
CUresult cuEventDestroy_v2(void *event) { (void)event; return OK; }
CUresult cuEventRecord(void *event, void *stream) {
  (void)event; (void)stream;
  fake_state.num_event_records++;
  return OK;
}
CUresult cuEventQuery(void *event) {
  (void)event;
  return fake_state.events_pending ? 600 /* CUDA_ERROR_NOT_READY */ : OK;
}
CUresult cuEventSynchronize(void *event) {
  (void)event;
  fake_state.num_event_syncs++;
  return OK;
}

CUresult cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t bytes, void *stream) {
  (void)stream;
  fake_state.copy_dst[fake_state.num_copies % 8] = dst;
  if (fake_state.fail_copy_at == fake_state.num_copies++)
    return INVALID_VALUE;
  if (in_pinned(src))
    fake_state.num_pinned_copies++;
  fake_state.copied_bytes += bytes;
  memcpy((void *)(uintptr_t)dst, src, bytes);
  return OK;
}
CUresult cuPointerGetAttribute(void *data, int attr, uint64_t p) {
  if (!on_device(p))
    return INVALID_VALUE; /* host memory the driver does not know */
  if (attr == 2)
    *(unsigned *)data = 2; /* CU_MEMORYTYPE_DEVICE */
  else if (attr == 8)
    *(unsigned *)data = 0;
  else if (attr == 9)
    *(int *)data = 0;
  return OK;
}
static int capture_status(void *stream) {
  if (!stream || stream != fake_state.capturing_stream)
    return 0;
  return fake_state.capture_invalidated ? 2 : 1;
}
CUresult cuStreamIsCapturing(void *stream, int *status) {
  *status = capture_status(stream);
  return OK;
}
CUresult cuThreadExchangeStreamCaptureMode(int *mode) {
  int previous = fake_state.capture_mode;
  fake_state.capture_mode = *mode;
  *mode = previous;
  return OK;
}
static char zero_stream_handle;
CUresult cuStreamCreate(void **stream, unsigned flags) {
  (void)flags;
  fake_state.num_streams_created++;
  *stream = &zero_stream_handle;
  return OK;
}
CUresult cuStreamDestroy_v2(void *stream) {
  (void)stream;
  fake_state.num_streams_destroyed++;
  return OK;
}
CUresult cuStreamSynchronize(void *stream) {
  (void)stream;
  fake_state.num_stream_syncs++;
  return OK;
}

/* Graphs and user objects: the capturing stream records into one graph
 * (`capture_graph`) whose user-object references are kept here until
 * fake_graph_destroy runs their destructors, as the driver does when a
 * graph and its executable graphs are gone. */
static char capture_graph;
typedef struct user_object {
  void *ptr;
  void (*destroy)(void *);
  unsigned refs;
  int in_graph;
} user_object;
static user_object objects[4096];
static int num_objects;

CUresult cuStreamGetCaptureInfo_v2(void *stream, int *status, uint64_t *id, void **graph,
                                   const void **deps, size_t *num_deps) {
  *status = capture_status(stream);
  int capturing = *status == 1;
  if (id)
    *id = capturing ? 1 : 0;
  if (graph)
    *graph = capturing ? &capture_graph : NULL;
  if (deps)
    *deps = NULL;
  if (num_deps)
    *num_deps = 0;
  return OK;
}

static void unref(user_object *o, unsigned count) {
  if (o->refs < count)
    return;
  o->refs -= count;
  if (o->refs == 0 && o->destroy) {
    o->destroy(o->ptr);
    o->destroy = NULL;
    o->ptr = NULL; /* what the destructor leaked is then unreachable (LSan) */
    fake_state.num_destroyed++;
  }
}

CUresult cuUserObjectCreate(void **object, void *ptr, void (*destroy)(void *), unsigned refs,
                            unsigned flags) {
  if (fake_state.fail_create || flags != 1 || refs == 0 || num_objects == 4096)
    return INVALID_VALUE;
  objects[num_objects] = (user_object){ptr, destroy, refs, 0};
  *object = &objects[num_objects++];
  fake_state.num_user_objects++;
  return OK;
}
CUresult cuUserObjectRelease(void *object, unsigned count) {
  unref((user_object *)object, count);
  return OK;
}
CUresult cuGraphRetainUserObject(void *graph, void *object, unsigned count, unsigned flags) {
  if (graph != &capture_graph || fake_state.fail_retain)
    return INVALID_VALUE;
  user_object *o = (user_object *)object;
  if (flags != 1) /* CU_GRAPH_USER_OBJECT_MOVE: the caller's references */
    o->refs += count;
  o->in_graph += count;
  fake_state.num_retained++;
  return OK;
}

void fake_graph_destroy(void) {
  for (int i = 0; i < num_objects; ++i)
    if (objects[i].in_graph) {
      unsigned n = (unsigned)objects[i].in_graph;
      objects[i].in_graph = 0;
      unref(&objects[i], n);
    }
}
