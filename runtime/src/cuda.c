/*===- cuda.c - the CUDA backend (driver API through dlopen) --------------===*
 *
 * libcuda.so.1 is opened with dlopen at first use, so that the library
 * builds and runs where no driver exists and answers FA_ERROR_NO_DRIVER.
 * Only the driver functions below are used (CUDA Driver API reference):
 * cuInit, cuDeviceGet, cuDeviceGetAttribute, cuDevicePrimaryCtxRetain,
 * cuCtxGetCurrent, cuCtxGetDevice, cuCtxSetCurrent (the runtime's
 * context, the one current at its first use, is made current around each
 * call and the caller's restored), cuPointerGetAttribute (memory type
 * and device of the call's pointers), cuModuleLoadData, cuModuleGetFunction,
 * cuFuncSetAttribute, cuLaunchKernel, cuGetErrorString, cuTensorMapEncodeTiled,
 * and for split-KV, the tile counter and the tile table cuMemAllocAsync /
 * cuMemFreeAsync (stream-ordered allocation, CUDA 11.2+), cuMemsetD32Async
 * and cuMemcpyHtoDAsync, and cuStreamIsCapturing (a table copied under
 * stream capture is kept for the graph's replays); for the fused split-KV
 * merge's counters cuMemAlloc / cuMemFree, cuThreadExchangeStreamCaptureMode
 * and, for captured launches, cuStreamCreate / cuStreamSynchronize /
 * cuStreamDestroy (a stream of the runtime's own that zeroes their chunks
 * outside the capture) and cuStreamGetCaptureInfo_v2 / cuUserObjectCreate /
 * cuGraphRetainUserObject / cuUserObjectRelease (what captured nodes read
 * is handed to the capture's graph: graph_owned); on devices that read
 * pageable memory themselves (cuDeviceGetAttribute
 * CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS), cuMemHostAlloc /
 * cuMemFreeHost / cuEventCreate / cuEventRecord / cuEventQuery /
 * cuEventSynchronize / cuEventDestroy for the pinned staging of eager
 * host-to-device copies (staged_copy).
 *
 * Launch ABI of a cubin artifact: the kernel takes one device pointer per
 * argument in the metadata's "args" order followed by one int64 per
 * dimension of each argument (row-major shapes), block = metadata "block",
 * dynamic shared memory = "smem" (raised with cuFuncSetAttribute above
 * 48 KB), grid = min(work units, SMs) ("persistent"; fa_launch_grid), then one 128-byte
 * CUtensorMap per metadata "tma" entry, encoded for the call's tensor with
 * cuTensorMapEncodeTiled (CUDA Driver API, Tensor Map Object Management):
 * dimensions innermost first, global strides in bytes of each outer
 * dimension, the metadata's box and swizzle, no interleave, L2 promotion
 * 128B, no OOB fill (zeros). fa_tma_check validates alignment and strides
 * first, without the driver. With metadata "tile_counter": true the kernel
 * takes one more pointer after the tensor maps: a u32 zero at launch (a
 * stream-ordered allocation per launch, so concurrent launches on several
 * streams never share it; zeroed by cuMemsetD32Async, or with a tile table
 * the table's zero word 3), the dynamic tile scheduler's counter; a launch
 * with no more work units (tiles x splits) than CTAs (the grid) never
 * reads it, and gets an unzeroed address instead. With metadata "tile_table": true (varlen,
 * seqused_k, paged, append) the next parameter is the tile table
 * (schedule.c), built on the host from the call's cu_seqlens / seqused_k
 * and copied into the same stream-ordered scratch (cuMemcpyHtoDAsync); a
 * call with no query rows launches nothing. With "tile_table_inline": N
 * the attention kernels take N more bytes by value after the table
 * pointer: a launch whose table fits there, with no counter to zero, no
 * append and no page lists to copy, passes the table that way and a null
 * pointer, and copies nothing. With "page_table": true the
 * last parameter holds the page lists (the device block_table, or the
 * tile table with copies of a host-readable one).
 *
 * Split-KV (metadata "combine_entry", config num_splits = S > 1): the
 * runtime allocates a stream-ordered workspace for the partial results, out
 * f32 [S, B, Sq, H, Dv] and lse f32 [S, B, H, Sq]; the attention kernel takes
 * them in place of out and lse, then the combine kernel (args partial_out,
 * partial_lse, out[, lse], their dims; 128 threads, a grid-stride loop)
 * merges them into the caller's out and lse; the workspace is freed on the
 * stream. (A call with no output row never gets here: run.c returns
 * first, unless it appends rows.)
 *
 *===----------------------------------------------------------------------===*/

#include "internal.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;

typedef struct cuda_api {
  void *lib;
  int num_sms;
  /* Eager host-to-device copies go through pinned staging (staged_copy):
   * the device reads pageable host memory coherently (HMM, ATS:
   * CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS), or
   * FLASHATTN_PINNED_STAGING says so. */
  int pinned_staging;
  /* The device this runtime drives and its context: the context current
   * on the thread at the runtime's first CUDA use (a caller's current
   * device, e.g. after cudaSetDevice / torch.cuda.set_device), else device
   * 0's primary context. */
  int device;
  CUcontext ctx;
  bool retained; /* ctx is device 0's primary context, retained here */
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxGetCurrent)(CUcontext *);
  CUresult (*cuCtxGetDevice)(CUdevice *);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuMemAllocAsync)(uint64_t *, size_t, CUstream);
  CUresult (*cuMemFreeAsync)(uint64_t, CUstream);
  CUresult (*cuMemsetD32Async)(uint64_t, unsigned, size_t, CUstream);
  CUresult (*cuMemcpyHtoDAsync)(uint64_t, const void *, size_t, CUstream);
  CUresult (*cuPointerGetAttribute)(void *data, int attribute, uint64_t ptr);
  CUresult (*cuStreamIsCapturing)(CUstream, int *status);
  /* Host tile tables copied by launches captured into CUDA graphs that
   * could not be handed to their graph (give_to_graph): each replay copies
   * from them again, so they live as long as the runtime. */
  void **held;
  size_t num_held, cap_held;
  CUresult (*cuMemAlloc)(uint64_t *, size_t);
  CUresult (*cuMemFree)(uint64_t);
  CUresult (*cuThreadExchangeStreamCaptureMode)(int *mode);
  /* Per-stream state (launches on one stream never overlap), one slot per
   * stream handle: the fused split-KV merge's u32 counters (`ptr`, `words`:
   * one per tile, zero between launches, since each launch's merging units
   * set theirs back to 0) and the block_table mirrors. A grown buffer's
   * predecessor may still be read by pending launches: it is retired, and
   * freed with the others at release. */
  struct {
    void *stream;
    uint64_t ptr;
    size_t words;
    /* Device mirrors of the last host block_tables calls on this stream
     * passed (block_table_mirror): address and capacity, the size and
     * XXH3-128 of the contents held (valid when bytes > 0), a host copy of
     * them (`shadow`, cap bytes: what a patch is found against and copied
     * from), and the call count at their last use (the least recent is
     * refilled). */
    struct table_mirror {
      uint64_t ptr;
      size_t cap, bytes;
      XXH128_hash_t hash;
      int32_t *shadow;
      uint64_t used;
    } mirror[FA_MIRRORS_PER_STREAM];
    uint64_t calls;
  } streams[FA_MAX_STREAMS];
  int num_streams;
  uint64_t *retired;
  size_t num_retired;
  /* Counters of launches captured into CUDA graphs: each captured launch
   * its own slice of a chunk (zeroed once, on `zero_stream`, a stream of
   * the runtime's own that no capture sees). A replay leaves its slice at
   * zero like any launch. The chunks live until the runtime is destroyed;
   * a slice whose graphs are all destroyed comes back (graph_refs) and is
   * reused, zeroed again, by a later capture (`spare`). */
  struct captured_chunk {
    uint64_t ptr;
    size_t words, used;
  } *captured;
  size_t num_captured;
  struct spare_slice {
    uint64_t ptr;
    size_t words;
  } *spare;
  size_t num_spare, cap_spare;
  CUstream zero_stream;
  /* What captured calls hand to their graphs (graph_owned), shared with
   * the destructors the driver runs on its own thread; NULL until the
   * first hand-over. */
  struct graph_refs *graphs;
  CUresult (*cuStreamGetCaptureInfo)(CUstream, int *status, uint64_t *id, void **graph,
                                     const void **deps, size_t *num_deps);
  CUresult (*cuUserObjectCreate)(void **object, void *ptr, void (*destroy)(void *),
                                 unsigned refs, unsigned flags);
  CUresult (*cuUserObjectRelease)(void *object, unsigned count);
  CUresult (*cuGraphRetainUserObject)(void *graph, void *object, unsigned count,
                                      unsigned flags);
  /* Pinned staging of host-to-device copies outside capture (staged_copy):
   * blocks of page-locked memory, each with the event recorded after the
   * copy that last read it. */
  struct pinned_block {
    void *host;
    size_t cap;
    void *done; /* CUevent */
    bool pending; /* `done` recorded and maybe not reached */
  } pinned[FA_PINNED_BLOCKS];
  int num_pinned, next_pinned; /* blocks made; the next to try */
  CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
  CUresult (*cuMemFreeHost)(void *);
  CUresult (*cuEventCreate)(void **, unsigned);
  CUresult (*cuEventDestroy)(void *);
  CUresult (*cuEventRecord)(void *, CUstream);
  CUresult (*cuEventQuery)(void *);
  CUresult (*cuEventSynchronize)(void *);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuTensorMapEncodeTiled)(void *map, int dtype, unsigned rank,
                                     void *global, const uint64_t *dims,
                                     const uint64_t *strides, const unsigned *box,
                                     const unsigned *elem_strides, int interleave,
                                     int swizzle, int l2, int oob);
} cuda_api;

/* CUtensorMapDataType, CUtensorMapSwizzle, CUtensorMapL2promotion values. */
enum {
  CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
  CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
  CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2
};

/* CUpointer_attribute and CUmemorytype values, and CUDA_ERROR_INVALID_VALUE. */
enum {
  CUDA_ERROR_INVALID_VALUE = 1,
  CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
  CU_MEMORYTYPE_DEVICE = 2
};

enum {
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS = 88,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
};

static const char *cuError(cuda_api *api, CUresult r) {
  const char *s = NULL;
  if (api->cuGetErrorString)
    api->cuGetErrorString(r, &s);
  return s ? s : "unknown CUDA error";
}

/* Makes the runtime's context current and stores the caller's in *prev
 * (restored by leave_context), so that the runtime never changes the
 * context a caller's thread has current. Nonzero when the switch failed
 * (nothing to restore then). */
static CUresult enter_context(cuda_api *api, CUcontext *prev) {
  *prev = NULL;
  if (api->cuCtxGetCurrent(prev) != 0)
    *prev = NULL;
  CUresult r = *prev != api->ctx ? api->cuCtxSetCurrent(api->ctx) : 0;
  if (r != 0)
    *prev = api->ctx; /* leave_context does nothing */
  return r;
}

static void leave_context(cuda_api *api, CUcontext prev) {
  if (prev != api->ctx)
    api->cuCtxSetCurrent(prev);
}

/* Relaxed stream-capture mode on this thread (cuThreadExchangeStreamCaptureMode,
 * CU_STREAM_CAPTURE_MODE_RELAXED = 2) around the calls that a capture in
 * global mode, this thread's or another's, forbids: cuMemAlloc, cuMemFree,
 * cuStreamSynchronize, and the pinned staging's cuMemHostAlloc,
 * cuMemFreeHost, cuEventCreate, cuEventQuery, cuEventSynchronize. Returns
 * whether the switch took; relaxed_leave restores the previous mode. */
static bool relaxed_enter(cuda_api *api, int *mode) {
  *mode = 2;
  return api->cuThreadExchangeStreamCaptureMode &&
         api->cuThreadExchangeStreamCaptureMode(mode) == 0;
}

static void relaxed_leave(cuda_api *api, bool entered, int mode) {
  if (entered)
    api->cuThreadExchangeStreamCaptureMode(&mode);
}

/* Whether `ptr` is device memory (not managed: managed and host memory are
 * reachable from the host and from any device), and then, with `ordinal`,
 * its device. Unregistered host memory is not known to the driver
 * (CUDA_ERROR_INVALID_VALUE): host memory. Returns any other driver error.
 * In the runtime's context. */
static CUresult device_memory(cuda_api *api, const void *ptr, bool *device, int *ordinal) {
  uint64_t addr = (uint64_t)(uintptr_t)ptr;
  unsigned type = 0, managed = 0;
  *device = false;
  CUresult r = api->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, addr);
  if (r == CUDA_ERROR_INVALID_VALUE)
    return 0;
  if (r != 0 || type != CU_MEMORYTYPE_DEVICE)
    return r;
  if (api->cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, addr) != 0)
    managed = 0;
  *device = !managed;
  if (*device && ordinal)
    r = api->cuPointerGetAttribute(ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, addr);
  return r;
}

static fa_status load_api(fa_runtime *rt, cuda_api **out) {
  if (rt->cuda) {
    *out = (cuda_api *)rt->cuda;
    return FA_OK;
  }
  const char *name = getenv("FLASHATTN_LIBCUDA");
  void *lib = dlopen(name && *name ? name : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return fa_fail(rt, FA_ERROR_NO_DRIVER,
                   "no CUDA driver: dlopen(libcuda.so.1) failed: %s", dlerror());
  cuda_api *api = (cuda_api *)calloc(1, sizeof(*api));
  if (!api) {
    dlclose(lib);
    return fa_fail(rt, FA_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  api->lib = lib;
#define LOAD(fn, sym)                                                          \
  do {                                                                         \
    *(void **)(&api->fn) = dlsym(lib, sym);                                    \
    if (!api->fn) {                                                            \
      dlclose(lib);                                                            \
      free(api);                                                               \
      return fa_fail(rt, FA_ERROR_NO_DRIVER, "libcuda lacks %s", sym);         \
    }                                                                          \
  } while (0)
  LOAD(cuInit, "cuInit");
  LOAD(cuDeviceGet, "cuDeviceGet");
  LOAD(cuDeviceGetAttribute, "cuDeviceGetAttribute");
  LOAD(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  LOAD(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  LOAD(cuCtxSetCurrent, "cuCtxSetCurrent");
  LOAD(cuCtxGetCurrent, "cuCtxGetCurrent");
  LOAD(cuCtxGetDevice, "cuCtxGetDevice");
  LOAD(cuModuleLoadData, "cuModuleLoadData");
  LOAD(cuModuleGetFunction, "cuModuleGetFunction");
  LOAD(cuModuleUnload, "cuModuleUnload");
  LOAD(cuFuncSetAttribute, "cuFuncSetAttribute");
  LOAD(cuLaunchKernel, "cuLaunchKernel");
  LOAD(cuGetErrorString, "cuGetErrorString");
  LOAD(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled");
  /* Optional (split-KV only): checked at use. */
  *(void **)(&api->cuMemAllocAsync) = dlsym(lib, "cuMemAllocAsync");
  *(void **)(&api->cuMemFreeAsync) = dlsym(lib, "cuMemFreeAsync");
  *(void **)(&api->cuMemsetD32Async) = dlsym(lib, "cuMemsetD32Async");
  *(void **)(&api->cuMemcpyHtoDAsync) = dlsym(lib, "cuMemcpyHtoDAsync_v2");
  *(void **)(&api->cuPointerGetAttribute) = dlsym(lib, "cuPointerGetAttribute");
  *(void **)(&api->cuStreamIsCapturing) = dlsym(lib, "cuStreamIsCapturing");
  *(void **)(&api->cuMemAlloc) = dlsym(lib, "cuMemAlloc_v2");
  *(void **)(&api->cuMemFree) = dlsym(lib, "cuMemFree_v2");
  *(void **)(&api->cuThreadExchangeStreamCaptureMode) =
      dlsym(lib, "cuThreadExchangeStreamCaptureMode");
  *(void **)(&api->cuStreamCreate) = dlsym(lib, "cuStreamCreate");
  *(void **)(&api->cuStreamDestroy) = dlsym(lib, "cuStreamDestroy_v2");
  *(void **)(&api->cuStreamSynchronize) = dlsym(lib, "cuStreamSynchronize");
  /* CUDA 11.3+ (the _v2 signature: status, id, graph, dependencies). */
  *(void **)(&api->cuStreamGetCaptureInfo) = dlsym(lib, "cuStreamGetCaptureInfo_v2");
  *(void **)(&api->cuUserObjectCreate) = dlsym(lib, "cuUserObjectCreate");
  *(void **)(&api->cuUserObjectRelease) = dlsym(lib, "cuUserObjectRelease");
  *(void **)(&api->cuGraphRetainUserObject) = dlsym(lib, "cuGraphRetainUserObject");
  *(void **)(&api->cuMemHostAlloc) = dlsym(lib, "cuMemHostAlloc");
  *(void **)(&api->cuMemFreeHost) = dlsym(lib, "cuMemFreeHost");
  *(void **)(&api->cuEventCreate) = dlsym(lib, "cuEventCreate");
  *(void **)(&api->cuEventDestroy) = dlsym(lib, "cuEventDestroy_v2");
  *(void **)(&api->cuEventRecord) = dlsym(lib, "cuEventRecord");
  *(void **)(&api->cuEventQuery) = dlsym(lib, "cuEventQuery");
  *(void **)(&api->cuEventSynchronize) = dlsym(lib, "cuEventSynchronize");
#undef LOAD
  CUdevice dev = 0;
  CUcontext current = NULL;
  CUresult r = api->cuInit(0);
  if (r == 0)
    r = api->cuCtxGetCurrent(&current);
  if (r == 0 && current) {
    api->ctx = current;
    r = api->cuCtxGetDevice(&dev);
  } else {
    if (r == 0)
      r = api->cuDeviceGet(&dev, 0);
    if (r == 0)
      r = api->cuDevicePrimaryCtxRetain(&api->ctx, dev);
    api->retained = r == 0;
  }
  api->device = dev;
  if (r == 0)
    r = api->cuDeviceGetAttribute(&api->num_sms,
                                  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  /* HMM / ATS systems (staged_copy); unknown counts as no.
   * FLASHATTN_PINNED_STAGING=1 or 0 overrides the device's answer. */
  if (r == 0 && api->cuDeviceGetAttribute(&api->pinned_staging,
                                          CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
                                          dev) != 0)
    api->pinned_staging = 0;
  const char *staging = getenv("FLASHATTN_PINNED_STAGING");
  if (staging && (!strcmp(staging, "0") || !strcmp(staging, "1")))
    api->pinned_staging = staging[0] == '1';
  if (r != 0) {
    fa_status st = fa_fail(rt, FA_ERROR_NO_DRIVER,
                           "CUDA driver present but unusable: %s", cuError(api, r));
    if (api->retained)
      api->cuDevicePrimaryCtxRelease(dev);
    dlclose(lib);
    free(api);
    return st;
  }
  rt->cuda = api;
  *out = api;
  return FA_OK;
}

fa_status fa_cuda_on_device(fa_runtime *rt, const void *ptr, bool *on_device) {
  *on_device = false;
  cuda_api *api;
  fa_status st = load_api(rt, &api);
  if (st != FA_OK)
    return st;
  if (!api->cuPointerGetAttribute || !ptr)
    return FA_OK;
  CUcontext prev;
  if (enter_context(api, &prev) != 0)
    return fa_fail(rt, FA_ERROR_CUDA, "cuCtxSetCurrent failed");
  CUresult r = device_memory(api, ptr, on_device, NULL);
  leave_context(api, prev);
  if (r != 0)
    return fa_fail(rt, FA_ERROR_CUDA, "cuPointerGetAttribute failed: %s", cuError(api, r));
  return FA_OK;
}

fa_status fa_cuda_probe(fa_runtime *runtime, int32_t *num_sms) {
  if (!runtime)
    return FA_ERROR_INVALID_ARGUMENT;
  cuda_api *api;
  fa_status st = load_api(runtime, &api);
  if (st == FA_OK && num_sms)
    *num_sms = api->num_sms;
  return st;
}

fa_status fa_cuda_load(fa_runtime *rt, fa_kernel *k) {
  cuda_api *api;
  fa_status st = load_api(rt, &api);
  if (st != FA_OK)
    return st;
  k->cu_api = api;
  CUresult r = api->cuModuleLoadData(&k->cu_module, k->artifact.payload);
  /* The module's entries: the attention kernels (the main entry, always,
   * then its twins), each with the artifact's dynamic shared memory, and
   * the combine and append kernels; "" = absent. */
  const fa_artifact *art = &k->artifact;
  struct {
    const char *name;
    void **fn;
    bool attention;
  } entries[] = {{art->entry, &k->cu_function, true},
                 {art->dense_entry, &k->cu_dense, true},
                 {art->packed_entry, &k->cu_packed, true},
                 {art->packed_dense_entry, &k->cu_dense_packed, true},
                 {art->kv1_entry, &k->cu_kv1, true},
                 {art->kv1_dense_entry, &k->cu_dense_kv1, true},
                 {art->combine_entry, &k->cu_combine, false},
                 {art->append_entry, &k->cu_append, false}};
  for (size_t i = 0; i < sizeof entries / sizeof entries[0] && r == 0; ++i) {
    if (i > 0 && !entries[i].name[0])
      continue;
    r = api->cuModuleGetFunction(entries[i].fn, k->cu_module, entries[i].name);
    if (r == 0 && entries[i].attention && art->smem > 48 * 1024)
      r = api->cuFuncSetAttribute(*entries[i].fn,
                                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, art->smem);
  }
  if (r != 0) {
    /* Nothing half-loaded stays behind: a later launch must not take a
     * split-KV kernel for a plain one. */
    const char *why = cuError(api, r);
    fa_cuda_unload(k);
    return fa_fail(rt, FA_ERROR_CUDA, "loading the cubin failed: %s", why);
  }
  return FA_OK;
}

fa_dtype fa_tma_dtype(const fa_kernel *k, int i) {
  const char *arg = k->artifact.tma[i].arg;
  return strcmp(arg, "out") == 0   ? k->artifact.config.out_dtype
         : strcmp(arg, "lse") == 0 ? FA_F32
                                   : k->artifact.config.dtype;
}

/* The row-major shape a tensor map sees: the tensor's, or with a group
 * G > 1 the heads split, [B, S, H, D] as [B, S, H / G, G, D] (pack_gqa;
 * varlen [T, H, D] as [T, H / G, G, D]). Returns the view's rank. */
static int tma_view(const fa_kernel *k, int i, int rank, const int64_t *shape,
                    int64_t view[5]) {
  int group = k->artifact.tma[i].group;
  for (int d = 0; d < rank && d < 5; ++d)
    view[d] = shape[d];
  if (group > 1 && (rank == 4 || rank == 3)) {
    view[rank] = shape[rank - 1];
    view[rank - 1] = group;
    view[rank - 2] = shape[rank - 2] / group;
    return rank + 1;
  }
  return rank;
}

/* Map i's global dims (innermost first, extents of at least 1: an empty
 * tensor still needs a valid map, never read) and the byte strides of its
 * dims 1.. for a tensor of `rank` / `shape` with `es`-byte elements: the
 * tensor's own dims (or its pack_gqa view), contiguous; or the page panel
 * view of a paged pool [P, S, H, D] (fa_tma_desc.page_panels; the tensor
 * is 4-D, as fa_tma_check made sure). Returns the map's rank. */
static int tma_layout(const fa_kernel *k, int i, int rank, const int64_t *shape,
                      size_t es, uint64_t gdims[5], uint64_t gstrides[5]) {
  if (k->artifact.tma[i].page_panels) {
    uint64_t row = (uint64_t)shape[2] * (uint64_t)shape[3] * es;
    uint64_t d[5] = {64, 8, (uint64_t)(shape[2] * shape[3] / 64), (uint64_t)(shape[1] / 8),
                     (uint64_t)shape[0]};
    uint64_t st[4] = {row, 64 * es, 8 * row, (uint64_t)shape[1] * row};
    for (int j = 0; j < 5; ++j)
      gdims[j] = d[j] > 0 ? d[j] : 1;
    for (int j = 0; j < 4; ++j)
      gstrides[j] = st[j];
    return 5;
  }
  int64_t view[5];
  int r = tma_view(k, i, rank, shape, view);
  uint64_t stride = es;
  for (int d = 0; d < r; ++d) {
    gdims[d] = view[r - 1 - d] > 0 ? (uint64_t)view[r - 1 - d] : 1;
    if (d > 0)
      gstrides[d - 1] = stride;
    stride *= gdims[d];
  }
  return r;
}

fa_status fa_tma_check(fa_runtime *rt, const fa_kernel *k, int i,
                       const fa_tensor *t) {
  size_t elem_size = fa_dtype_size(fa_tma_dtype(k, i));
  const char *name = k->artifact.tma[i].arg;
  int rank = k->artifact.tma[i].rank;
  int group = k->artifact.tma[i].group;
  /* A grouped map views the 4-D tensor as 5-D (heads split by group), as
   * does a page panel map. */
  int tensor_rank = group > 1 || k->artifact.tma[i].page_panels ? rank - 1 : rank;
  if (t->rank != tensor_rank)
    return fa_fail(rt, FA_ERROR_SHAPE_MISMATCH,
                   "tensor map of '%s' has rank %d, the tensor %d", name,
                   tensor_rank, t->rank);
  /* Heads are the second-to-last dimension ([B, S, H, D] or varlen [T, H,
   * D]). */
  if (group > 1 && t->shape[t->rank - 2] % group != 0)
    return fa_fail(rt, FA_ERROR_SHAPE_MISMATCH,
                   "'%s' has %lld heads, not a multiple of the pack_gqa group %d",
                   name, (long long)t->shape[t->rank - 2], group);
  if ((uintptr_t)t->data % 16 != 0)
    return fa_fail(rt, FA_ERROR_BAD_INPUT,
                   "'%s' is not 16-byte aligned (TMA needs it)", name);
  /* (4-D by the rank check above.) */
  if (k->artifact.tma[i].page_panels && (t->shape[3] % 64 != 0 || t->shape[1] % 8 != 0))
    return fa_fail(rt, FA_ERROR_SHAPE_MISMATCH,
                   "'%s': the page panel map needs [num_pages, page_size, Hkv, D] "
                   "with page_size a multiple of 8 and D of 64",
                   name);
  uint64_t gdims[5] = {0}, gstrides[5] = {0};
  rank = tma_layout(k, i, t->rank, t->shape, elem_size, gdims, gstrides);
  for (int d = 0; d + 1 < rank; ++d)
    if (gstrides[d] % 16 != 0 || gstrides[d] >= (1ull << 40))
      return fa_fail(rt, FA_ERROR_BAD_INPUT,
                     "'%s' stride of map dim %d is %llu bytes: TMA needs a "
                     "multiple of 16 below 2^40",
                     name, d + 1, (unsigned long long)gstrides[d]);
  int swz = k->artifact.tma[i].swizzle;
  if (swz && (uint64_t)k->artifact.tma[i].box[0] * elem_size > (uint64_t)swz)
    return fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT,
                   "tensor map of '%s': inner box %d x %zu bytes exceeds the "
                   "%d-byte swizzle",
                   name, k->artifact.tma[i].box[0], elem_size, swz);
  return FA_OK;
}

/* `view` = kernel `k` seen through twin entries of its cubin: `fn` and
 * `dense` in place of the main and dense functions, with the twins' own
 * tensor-map list (the caller sets the tile sizes that differ). */
static void twin_view(fa_kernel *view, const fa_kernel *k, void *fn, void *dense,
                      const fa_tma_desc *tma, int num_tma) {
  *view = *k;
  view->cu_function = fn;
  view->cu_dense = dense;
  view->artifact.num_tma = num_tma;
  for (int i = 0; i < num_tma; ++i)
    view->artifact.tma[i] = tma[i];
}

/* Tiles per split of a dense call: batch x Hq / G x ceil(Sq G / block_m)
 * (G the pack_groups with pack_gqa: Hq / Hkv, times the kv heads per key
 * block of a kernel that packs several). */
static int64_t dense_tiles(const fa_kernel *k, int64_t batch, int64_t sq, int64_t hq) {
  int64_t bm = k->artifact.block_m > 0 ? k->artifact.block_m : 1;
  int64_t g = fa_tile_groups(&k->artifact);
  return batch * (hq / g) * ((sq * g + bm - 1) / bm);
}

int64_t fa_num_splits_heuristic(const fa_kernel *k, int64_t batch, int64_t sq,
                                int64_t hq, int64_t sk, int64_t sms) {
  int64_t bn = k->artifact.block_n;
  return fa_num_splits_for(dense_tiles(k, batch, sq, hq), (sk + bn - 1) / bn, sms);
}

unsigned fa_launch_grid(int64_t units, unsigned sms) {
  return units > 0 && units < (int64_t)sms ? (unsigned)units : sms;
}

int64_t fa_num_splits_for(int64_t tiles, int64_t blocks, int64_t sms) {
  if (tiles <= 0 || blocks <= 0 || sms <= 0 || 10 * tiles >= 8 * sms)
    return 1;
  int64_t most = 128;
  if (most > sms)
    most = sms;
  if (most > blocks)
    most = blocks;
  double best = 0, eff[129];
  for (int64_t s = 1; s <= most; ++s) {
    double waves = (double)(tiles * s) / (double)sms;
    eff[s] = waves / ceil(waves);
    if (eff[s] > best)
      best = eff[s];
  }
  for (int64_t s = 1; s <= most; ++s)
    if (eff[s] >= FA_SPLIT_EFFICIENCY * best)
      return s;
  return 1;
}

/* A kernel argument: fa_tensor plus rank 5 (split-KV partial out). */
typedef struct cu_tensor {
  void *data;
  int32_t rank;
  int64_t shape[5];
} cu_tensor;

static cu_tensor from_fa(const fa_tensor *t) {
  cu_tensor c = {t->data, t->rank, {0}};
  for (int i = 0; i < t->rank && i < 4; ++i)
    c.shape[i] = t->shape[i];
  return c;
}

/* Encodes the artifact's tensor maps for `tensors` (by name) into `maps`
 * (128 bytes each, 64-byte aligned). */
static fa_status encode_maps(fa_runtime *rt, cuda_api *api, fa_kernel *k,
                             const cu_tensor *tensors, const char *const *names,
                             int n, unsigned char (*maps)[128]) {
  for (int i = 0; i < k->artifact.num_tma; ++i) {
    const cu_tensor *t = NULL;
    for (int j = 0; j < n; ++j)
      if (strcmp(names[j], k->artifact.tma[i].arg) == 0)
        t = &tensors[j];
    if (!t)
      return fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT, "tensor map of unknown '%s'",
                     k->artifact.tma[i].arg);
    fa_dtype dt = fa_tma_dtype(k, i);
    size_t es = fa_dtype_size(dt);
    uint64_t gdims[5] = {0}, gstrides[5] = {0};
    unsigned box[5], estrides[5];
    int rank = tma_layout(k, i, t->rank, t->shape, es, gdims, gstrides);
    for (int d = 0; d < rank; ++d) {
      box[d] = (unsigned)k->artifact.tma[i].box[d];
      estrides[d] = 1;
    }
    int swz = k->artifact.tma[i].swizzle;
    int swizzle = swz == 0 ? 0 : swz == 32 ? 1 : swz == 64 ? 2 : 3;
    int cutype = dt == FA_F32   ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                 : dt == FA_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    CUresult r = api->cuTensorMapEncodeTiled(
        maps[i], cutype, (unsigned)rank, t->data, gdims, gstrides, box,
        estrides, 0, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, 0);
    if (r != 0)
      return fa_fail(rt, FA_ERROR_CUDA,
                     "cuTensorMapEncodeTiled for '%s' failed: %s",
                     k->artifact.tma[i].arg, cuError(api, r));
  }
  return FA_OK;
}

/* One launch: pointers of `tensors`, their dims, then (attention kernels)
 * the tensor maps of the metadata's "tma" entries, found by `names`. An
 * attention kernel with "tile_table_inline" also takes that many bytes by
 * value after the table pointer: `inline_table` (the table itself, with a
 * null `tile_table`), or zeros. */
static fa_status launch_one(fa_runtime *rt, cuda_api *api, fa_kernel *k,
                            void *function, const cu_tensor *tensors,
                            const char *const *names, int n, bool with_tma,
                            unsigned grid, unsigned smem, void *stream,
                            void *tile_counter, void *tile_table, void *page_table,
                            const void *inline_table, void *const *merge) {
  void *ptrs[FA_MAX_ARGS];
  int64_t dims[FA_MAX_ARGS * 5];
  /* Pointers, up to 5 dims each, 4 tensor maps, the tile counter, table,
   * its copy, page lists and the merge's 3 pointers. */
  void *params[FA_MAX_ARGS * 6 + 11];
  void *merge_ptrs[3];
  static const unsigned char no_table[FA_MAX_INLINE_TABLE_BYTES];
  /* CUtensorMap: 128 bytes, 64-byte aligned. */
  _Alignas(64) unsigned char maps[4][128];
  int p = 0, d = 0;
  for (int i = 0; i < n; ++i) {
    ptrs[i] = tensors[i].data;
    params[p++] = &ptrs[i];
  }
  for (int i = 0; i < n; ++i)
    for (int r = 0; r < tensors[i].rank; ++r) {
      dims[d] = tensors[i].shape[r];
      params[p++] = &dims[d++];
    }
  if (with_tma) {
    fa_status st = encode_maps(rt, api, k, tensors, names, n, maps);
    if (st != FA_OK)
      return st;
    for (int i = 0; i < k->artifact.num_tma; ++i)
      params[p++] = maps[i];
  }
  if (tile_counter)
    params[p++] = &tile_counter;
  if (tile_table || (with_tma && k->artifact.tile_table)) {
    params[p++] = &tile_table;
    if (with_tma && k->artifact.tile_table_inline)
      params[p++] = (void *)(uintptr_t)(inline_table ? inline_table : no_table);
  }
  if (page_table)
    params[p++] = &page_table;
  /* A fused-combine partial kernel: out, lse, counters (null: no merge). */
  if (merge)
    for (int i = 0; i < 3; ++i) {
      merge_ptrs[i] = merge[i];
      params[p++] = &merge_ptrs[i];
    }
  /* Non-attention entries: the combine takes 128 threads, the append 256. */
  unsigned block[3] = {function == k->cu_append ? 256u : 128u, 1, 1};
  if (with_tma)
    for (int i = 0; i < 3; ++i)
      block[i] = (unsigned)k->artifact.block[i];
  CUresult r = api->cuLaunchKernel(function, grid, 1, 1, block[0], block[1], block[2],
                                   smem, (CUstream)stream, params, NULL);
  if (r != 0)
    return fa_fail(rt, FA_ERROR_CUDA, "cuLaunchKernel failed: %s", cuError(api, r));
  return FA_OK;
}

static fa_status launch_in_context(fa_runtime *rt, cuda_api *api, fa_kernel *k,
                                   const fa_tensor *const *tensors, int n,
                                   const fa_attention_args *call, bool pages_on_device);

/* Whether `stream` is capturing (CUDA graphs): 1, 0, or -1 when the driver
 * cannot tell (cuStreamIsCapturing absent or failing). */
static int stream_capturing(cuda_api *api, void *stream) {
  int status = 0; /* CUstreamCaptureStatus: NONE 0, ACTIVE 1, INVALIDATED 2 */
  if (!api->cuStreamIsCapturing || api->cuStreamIsCapturing((CUstream)stream, &status) != 0)
    return -1;
  return status != 0;
}

/* The slot of `stream` in the per-stream table (streams[]), or -1. */
static int find_slot(const cuda_api *api, void *stream) {
  for (int i = 0; i < api->num_streams; ++i)
    if (api->streams[i].stream == stream)
      return i;
  return -1;
}

/* Frees slot i's counters and mirrors (in the runtime's context); the
 * first failure, or 0. */
static CUresult free_slot(cuda_api *api, int i) {
  CUresult r = 0, ri;
  for (int j = 0; j < FA_MIRRORS_PER_STREAM; ++j) {
    free(api->streams[i].mirror[j].shadow);
    api->streams[i].mirror[j].shadow = NULL;
  }
  if (api->streams[i].ptr && (ri = api->cuMemFree(api->streams[i].ptr)) != 0)
    r = ri;
  for (int j = 0; j < FA_MIRRORS_PER_STREAM; ++j)
    if (api->streams[i].mirror[j].ptr &&
        (ri = api->cuMemFree(api->streams[i].mirror[j].ptr)) != 0 && r == 0)
      r = ri;
  return r;
}

/* The slot of `stream`, made when the stream has none and there is room;
 * -1 past FA_MAX_STREAMS. */
static int stream_slot(cuda_api *api, void *stream) {
  int i = find_slot(api, stream);
  if (i >= 0)
    return i;
  i = api->num_streams;
  if (i == FA_MAX_STREAMS)
    return -1;
  memset(&api->streams[i], 0, sizeof(api->streams[i]));
  api->streams[i].stream = stream;
  api->num_streams++;
  return i;
}

/* Room for one more retired device buffer (false: out of memory). */
static bool room_to_retire(cuda_api *api) {
  uint64_t *grown =
      (uint64_t *)realloc(api->retired, (api->num_retired + 1) * sizeof(uint64_t));
  if (!grown)
    return false;
  api->retired = grown;
  return true;
}

/* Resources of captured calls handed to their CUDA graphs as user objects
 * (CUDA Driver API, Graph Management: cuUserObjectCreate and
 * cuGraphRetainUserObject; CUDA C++ Programming Guide, "CUDA User
 * Objects"). The capture's graph holds the reference, and so does every
 * executable graph instantiated from it; once the last is destroyed the
 * driver runs graph_released on an internal thread, after the launches
 * still pending on those graphs have completed. graph_released makes no
 * CUDA call (the driver forbids it there): it frees the host tile table a
 * copy node read, and gives the merge counters' slice back through
 * `back`, for the runtime to reuse at its next capture (take_back). After
 * the runtime is destroyed (alive false) it drops the slice: its chunk was
 * freed with the runtime. */
typedef struct graph_owned {
  struct graph_refs *owner;
  void *table;    /* a copied host tile table, or NULL */
  uint64_t slice; /* the fused merge's counters, or 0 */
  size_t words;
  struct graph_owned *next;
} graph_owned;

typedef struct graph_refs {
  pthread_mutex_t lock; /* over the fields below */
  int refs;             /* the runtime's, plus one per graph_owned alive */
  bool alive;           /* the runtime is not destroyed */
  graph_owned *back;    /* slices of destroyed graphs, not yet taken back */
} graph_refs;

static void graph_released(void *p) {
  graph_owned *o = (graph_owned *)p;
  graph_refs *g = o->owner;
  free(o->table);
  pthread_mutex_lock(&g->lock);
  bool keep = g->alive && o->slice;
  if (keep) {
    o->next = g->back;
    g->back = o;
  }
  bool last = --g->refs == 0;
  pthread_mutex_unlock(&g->lock);
  if (!keep)
    free(o);
  if (last) {
    pthread_mutex_destroy(&g->lock);
    free(g);
  }
}

/* Drops the runtime's reference to `g` (at release): graph_owned records
 * released later free their tables and drop their slices. */
static void drop_graph_refs(graph_refs *g) {
  pthread_mutex_lock(&g->lock);
  g->alive = false;
  graph_owned *o = g->back;
  g->back = NULL;
  bool last = --g->refs == 0;
  pthread_mutex_unlock(&g->lock);
  while (o) {
    graph_owned *next = o->next;
    free(o);
    o = next;
  }
  if (last) {
    pthread_mutex_destroy(&g->lock);
    free(g);
  }
}

/* A counter slice no graph holds, into api->spare for a later capture (a
 * slice with no room to go is left unused: it stays inside its chunk). */
static void spare_slice(cuda_api *api, uint64_t ptr, size_t words) {
  if (api->num_spare == api->cap_spare) {
    size_t cap = api->cap_spare ? 2 * api->cap_spare : 16;
    struct spare_slice *grown =
        (struct spare_slice *)realloc(api->spare, cap * sizeof(*grown));
    if (!grown)
      return;
    api->spare = grown;
    api->cap_spare = cap;
  }
  api->spare[api->num_spare++] = (struct spare_slice){ptr, words};
}

/* The slices destroyed graphs gave back, into api->spare. */
static void take_back(cuda_api *api) {
  graph_refs *g = api->graphs;
  if (!g)
    return;
  pthread_mutex_lock(&g->lock);
  graph_owned *o = g->back;
  g->back = NULL;
  pthread_mutex_unlock(&g->lock);
  while (o) {
    graph_owned *next = o->next;
    spare_slice(api, o->slice, o->words);
    free(o);
    o = next;
  }
}

/* What give_to_graph did with a captured call's table and slice. */
enum { KEPT_BY_CALLER = 0, HANDED_TO_GRAPH = 1, NEVER_RUN = 2 };

/* Hands a captured call's copied host table (or NULL) and counter slice
 * (or 0; `words` long) to the graph `stream` is capturing into: they live
 * as long as that graph and its executable graphs (HANDED_TO_GRAPH).
 * NEVER_RUN when the capture is invalidated (CU_STREAM_CAPTURE_STATUS_
 * INVALIDATED: its end returns no graph, so no recorded node ever runs):
 * the caller may free the table and reuse the slice at once.
 * KEPT_BY_CALLER when the driver lacks user objects (CUDA 11.3+), the
 * stream is not capturing, or a call fails: nothing was handed over, and
 * the caller keeps both for the runtime's lifetime. */
static int give_to_graph(cuda_api *api, void *stream, void *table, uint64_t slice,
                         size_t words) {
  if (!api->cuStreamGetCaptureInfo || !api->cuUserObjectCreate ||
      !api->cuUserObjectRelease || !api->cuGraphRetainUserObject)
    return KEPT_BY_CALLER;
  int status = 0; /* CU_STREAM_CAPTURE_STATUS_ACTIVE = 1, _INVALIDATED = 2 */
  void *graph = NULL;
  if (api->cuStreamGetCaptureInfo((CUstream)stream, &status, NULL, &graph, NULL, NULL) != 0)
    return KEPT_BY_CALLER;
  if (status == 2)
    return NEVER_RUN;
  if (status != 1 || !graph)
    return KEPT_BY_CALLER;
  if (!api->graphs) {
    graph_refs *g = (graph_refs *)calloc(1, sizeof(*g));
    if (!g)
      return KEPT_BY_CALLER;
    if (pthread_mutex_init(&g->lock, NULL) != 0) {
      free(g);
      return KEPT_BY_CALLER;
    }
    g->refs = 1;
    g->alive = true;
    api->graphs = g;
  }
  graph_owned *o = (graph_owned *)malloc(sizeof(*o));
  if (!o)
    return KEPT_BY_CALLER;
  *o = (graph_owned){api->graphs, table, slice, words, NULL};
  pthread_mutex_lock(&api->graphs->lock);
  api->graphs->refs++;
  pthread_mutex_unlock(&api->graphs->lock);
  void *object = NULL;
  int mode;
  bool relaxed = relaxed_enter(api, &mode);
  CUresult r = api->cuUserObjectCreate(&object, o, graph_released, 1,
                                       1 /* CU_USER_OBJECT_NO_DESTRUCTOR_SYNC */);
  if (r != 0) {
    relaxed_leave(api, relaxed, mode);
    o->table = NULL;
    o->slice = 0;
    graph_released(o);
    return KEPT_BY_CALLER;
  }
  r = api->cuGraphRetainUserObject(graph, object, 1, 1 /* CU_GRAPH_USER_OBJECT_MOVE */);
  if (r != 0) {
    /* Not the graph's: the release below runs graph_released, which must
     * then free nothing a graph node may read. */
    o->table = NULL;
    o->slice = 0;
    api->cuUserObjectRelease(object, 1);
  }
  relaxed_leave(api, relaxed, mode);
  return r == 0 ? HANDED_TO_GRAPH : KEPT_BY_CALLER;
}

/* Zeroes `words` u32 at `ptr` on the runtime's own non-blocking stream
 * (made at first use) and waits for it: outside any capture, in relaxed
 * capture mode (this thread's stream is capturing). */
static CUresult zero_now(cuda_api *api, uint64_t ptr, size_t words) {
  int mode;
  bool relaxed = relaxed_enter(api, &mode);
  if (!relaxed)
    return 1;
  CUresult r = 0;
  if (!api->zero_stream)
    r = api->cuStreamCreate(&api->zero_stream, 1 /* CU_STREAM_NON_BLOCKING */);
  if (r == 0)
    r = api->cuMemsetD32Async(ptr, 0, words, api->zero_stream);
  if (r == 0)
    r = api->cuStreamSynchronize(api->zero_stream);
  relaxed_leave(api, relaxed, mode);
  return r;
}

/* The counters of a launch being captured (CUDA graphs): a slice of
 * `tiles` words (rounded up to 256 bytes) no other launch uses. It is
 * the smallest slice destroyed graphs gave back that fits (take_back),
 * else carved from chunks of at least 64 KB allocated (cuMemAlloc, relaxed
 * capture mode); either way zeroed on the runtime's own non-blocking
 * stream, outside the capture (zero_now: a chunk at its allocation, a
 * given-back slice again before its reuse, so that a graph that broke the
 * rule below cannot spoil later captures). Every replay of the captured
 * launch leaves its slice at zero for the next. Replays of one executable
 * graph run in order (cuGraphLaunch); executable graphs made from one
 * capture (instantiated twice, cloned, embedded as child graphs) share
 * the slices and must not run at the same time (runtime.h). *words_out is
 * the slice's length. 0 when a driver call fails: the combine kernel runs
 * instead. */
static uint64_t captured_counters(cuda_api *api, int64_t tiles, size_t *words_out) {
  if (!api->cuStreamCreate || !api->cuStreamSynchronize || !api->cuStreamDestroy)
    return 0;
  size_t need = ((size_t)tiles + 63) / 64 * 64;
  take_back(api);
  size_t best = api->num_spare;
  for (size_t i = 0; i < api->num_spare; ++i)
    if (api->spare[i].words >= need &&
        (best == api->num_spare || api->spare[i].words < api->spare[best].words))
      best = i;
  if (best < api->num_spare) {
    struct spare_slice reuse = api->spare[best];
    if (zero_now(api, reuse.ptr, reuse.words) != 0)
      return 0; /* left in spare */
    api->spare[best] = api->spare[--api->num_spare];
    *words_out = reuse.words;
    return reuse.ptr;
  }
  if (api->num_captured) {
    struct captured_chunk *c = &api->captured[api->num_captured - 1];
    if (c->words - c->used >= need) {
      uint64_t ptr = c->ptr + c->used * sizeof(uint32_t);
      c->used += need;
      *words_out = need;
      return ptr;
    }
  }
  struct captured_chunk *grown = (struct captured_chunk *)realloc(
      api->captured, (api->num_captured + 1) * sizeof(*grown));
  if (!grown)
    return 0;
  api->captured = grown;
  size_t words = need > 16384 ? need : 16384;
  /* This thread's stream is capturing: without relaxed mode the calls
   * below would invalidate the capture. */
  int mode;
  bool relaxed = relaxed_enter(api, &mode);
  if (!relaxed)
    return 0;
  uint64_t ptr = 0;
  CUresult r = api->cuMemAlloc(&ptr, words * sizeof(uint32_t));
  relaxed_leave(api, relaxed, mode);
  if (r != 0)
    return 0;
  if (zero_now(api, ptr, words) != 0) {
    relaxed = relaxed_enter(api, &mode);
    api->cuMemFree(ptr);
    relaxed_leave(api, relaxed, mode);
    return 0;
  }
  api->captured[api->num_captured++] = (struct captured_chunk){ptr, words, need};
  *words_out = need;
  return ptr;
}

/* The fused merge's counters for a launch of `tiles` tiles on `stream`:
 * the stream's array, allocated (cuMemAlloc, in relaxed capture mode so
 * that another thread's global-mode stream capture is not disturbed) and
 * zeroed on the stream (cuMemsetD32Async) at its first use or when it must
 * grow (at least doubling). Under stream capture (`capture` from
 * stream_capturing) the launch's own slice instead (captured_counters: a
 * graph may replay beside later calls on the stream). 0 when the fused
 * merge cannot run there, and the caller launches the combine kernel: a
 * capture status the driver cannot tell, the per-thread default stream
 * (one handle for every thread's stream), past FA_MAX_STREAMS
 * streams, without the driver functions, or when the allocation or the
 * zeroing fails. */
static uint64_t merge_counters(cuda_api *api, void *stream, int capture, int64_t tiles,
                               size_t *slice_words) {
  *slice_words = 0;
  if (!api->cuMemAlloc || !api->cuMemFree || !api->cuMemsetD32Async)
    return 0;
  if (capture > 0)
    return captured_counters(api, tiles, slice_words);
  if (capture != 0 ||
      stream == (void *)(uintptr_t)2 /* CU_STREAM_PER_THREAD */)
    return 0;
  int i = stream_slot(api, stream);
  if (i < 0)
    return 0;
  size_t need = (size_t)tiles;
  if (api->streams[i].words >= need)
    return api->streams[i].ptr;
  size_t words = 4096;
  if (2 * api->streams[i].words > words)
    words = 2 * api->streams[i].words;
  if (need > words)
    words = need;
  if (!room_to_retire(api))
    return 0;
  int mode;
  bool relaxed = relaxed_enter(api, &mode);
  uint64_t ptr = 0;
  CUresult r = api->cuMemAlloc(&ptr, words * sizeof(uint32_t));
  relaxed_leave(api, relaxed, mode);
  if (r != 0)
    return 0;
  if (api->cuMemsetD32Async(ptr, 0, words, (CUstream)stream) != 0) {
    relaxed = relaxed_enter(api, &mode);
    api->cuMemFree(ptr);
    relaxed_leave(api, relaxed, mode);
    return 0;
  }
  if (api->streams[i].ptr)
    api->retired[api->num_retired++] = api->streams[i].ptr;
  api->streams[i].ptr = ptr;
  api->streams[i].words = words;
  return ptr;
}

/* A host-to-device copy from pageable memory on `stream`, in pieces of at
 * most FA_PAGEABLE_COPY_BYTES: the driver stages a pageable copy that
 * small and returns, while a larger one waits for the stream's earlier
 * work (measured on the H200: a 68 KB table, batch 128 over 16-key pages,
 * made every call wait about 1 ms for the previous kernels; docs/
 * BENCHMARKS.md). Used for captured copies (which read the source, kept
 * for the graph, at every replay) and where pinned staging is unavailable
 * (staged_copy's fallback). There, outside capture, the source is taken to
 * be consumed when this returns: the driver API's "API synchronization
 * behavior" section has a pageable host-to-device copy staged (or the
 * stream synchronized) before returning, which is what the H200 machines
 * here do, though a system whose copy engines read pageable memory in
 * place (HMM, ATS) may not. */
static CUresult copy_pageable(cuda_api *api, uint64_t dst, const void *src, size_t bytes,
                              void *stream) {
  CUresult r = 0;
  for (size_t at = 0; r == 0 && at < bytes; at += FA_PAGEABLE_COPY_BYTES) {
    size_t piece = bytes - at < FA_PAGEABLE_COPY_BYTES ? bytes - at : FA_PAGEABLE_COPY_BYTES;
    r = api->cuMemcpyHtoDAsync(dst + at, (const unsigned char *)src + at, piece,
                               (CUstream)stream);
  }
  return r;
}

/* A host-to-device copy of `bytes` from `src` on `stream`, outside stream
 * capture, after which the caller may free or change `src` at once.
 * - Where the device reads pageable memory itself (HMM, ATS:
 *   api->pinned_staging, unless FLASHATTN_PINNED_STAGING says otherwise),
 *   the driver need not stage a pageable copy (the
 *   driver API's "API synchronization behavior": it stages "if pageable
 *   memory must first be staged to pinned memory"), so a pageable copy
 *   might read `src` after this returns. There `src` is copied into a
 *   page-locked block of the runtime's, which is not reused until the
 *   event recorded after its copy is reached. A call takes the first idle
 *   block from the one after the last used (cuEventQuery: copies on
 *   several streams finish out of order); with none idle it makes one, up
 *   to FA_PINNED_BLOCKS (at least 16 KB each, grown twofold when a table
 *   needs more), past which it waits for the next block's copy
 *   (cuEventSynchronize). A GPU that keeps up reuses one block (making a
 *   block per call, cuMemHostAlloc, costs tens of microseconds).
 * - Elsewhere (the H200 machines here) copy_pageable, for `src` in
 *   pageable memory: the driver stages a small pageable copy into its
 *   command stream, which the kernel waits for less than for a
 *   copy-engine read of pinned memory (measured on the H200: decode with
 *   a host block_table that changes every call, 0.94-0.96 of dense with
 *   pageable copies, 0.81-0.92 from pinned memory; docs/BENCHMARKS.md).
 *   Without the driver calls or pinned memory there: copy_pageable, then
 *   a wait for the stream (cuStreamSynchronize).
 * The driver calls that a global-mode capture on another thread forbids
 * run in relaxed mode. */
static CUresult staged_copy(cuda_api *api, uint64_t dst, const void *src, size_t bytes,
                            void *stream) {
  if (!api->pinned_staging)
    return copy_pageable(api, dst, src, bytes, stream);
  CUresult r = 1;
  struct pinned_block *b = NULL;
  int mode;
  bool relaxed = relaxed_enter(api, &mode);
  if (api->cuMemHostAlloc && api->cuMemFreeHost && api->cuEventCreate && api->cuEventDestroy &&
      api->cuEventRecord && api->cuEventQuery && api->cuEventSynchronize) {
    /* An idle block, from the next one on (copies on several streams
     * finish out of order). */
    for (int i = 0; i < api->num_pinned && !b; ++i) {
      struct pinned_block *c = &api->pinned[(api->next_pinned + i) % api->num_pinned];
      if (c->pending && api->cuEventQuery(c->done) == 0)
        c->pending = false;
      if (!c->pending)
        b = c;
    }
    r = 0;
    if (!b && api->num_pinned < FA_PINNED_BLOCKS) {
      /* None idle: a new block, committed once it has memory and an
       * event. */
      struct pinned_block fresh = {NULL, bytes < 16384 ? 16384 : bytes, NULL, false};
      r = api->cuMemHostAlloc(&fresh.host, fresh.cap, 0);
      if (r == 0 && (r = api->cuEventCreate(&fresh.done, 2 /* DISABLE_TIMING */)) != 0)
        api->cuMemFreeHost(fresh.host);
      if (r == 0) {
        api->pinned[api->num_pinned] = fresh;
        b = &api->pinned[api->num_pinned++];
      }
    } else if (!b) {
      /* FA_PINNED_BLOCKS copies in flight: wait for the next one's. */
      b = &api->pinned[api->next_pinned];
      r = api->cuEventSynchronize(b->done);
      if (r == 0)
        b->pending = false;
    }
    if (r == 0 && b->cap < bytes) {
      /* Grown at least twofold, so that tables that grow a little at a
       * time do not reallocate every call. */
      size_t cap = 2 * b->cap > bytes ? 2 * b->cap : bytes;
      void *host = NULL;
      r = api->cuMemHostAlloc(&host, cap, 0);
      if (r == 0) {
        api->cuMemFreeHost(b->host);
        b->host = host;
        b->cap = cap;
      }
    }
  }
  if (r != 0) {
    /* No pinned block: a pageable copy, waited for before returning, since
     * on this device the driver may read `src` after the call. */
    r = copy_pageable(api, dst, src, bytes, stream);
    if (r == 0)
      r = api->cuStreamSynchronize ? api->cuStreamSynchronize((CUstream)stream) : 1;
    relaxed_leave(api, relaxed, mode);
    return r;
  }
  api->next_pinned = (int)(b - api->pinned + 1) % api->num_pinned;
  memcpy(b->host, src, bytes);
  r = api->cuMemcpyHtoDAsync(dst, b->host, bytes, (CUstream)stream);
  if (r == 0 && api->cuEventRecord(b->done, (CUstream)stream) == 0) {
    b->pending = true;
  } else if (r == 0) {
    /* No event to wait on later: wait for the copy now; if even that
     * fails, the block is given up (its memory left to the copy). */
    r = api->cuStreamSynchronize ? api->cuStreamSynchronize((CUstream)stream) : 1;
    if (r != 0) {
      b->host = NULL;
      b->cap = 0;
    }
  }
  relaxed_leave(api, relaxed, mode);
  return r;
}

/* The runs of entries in which `now` differs from `old` (n entries each):
 * at most FA_MIRROR_SPANS of them, runs fewer than FA_MIRROR_GAP equal
 * entries apart joined into one. Their number (0: the same contents) and
 * in `entries` how many entries they cover; -1 when more runs would be
 * needed. Equal stretches are skipped 64 bytes at a time. */
typedef struct {
  size_t first, count;
} entry_span;

static int changed_spans(const int32_t *old, const int32_t *now, size_t n, entry_span *spans,
                         size_t *entries) {
  int k = 0;
  *entries = 0;
  for (size_t i = 0; i < n;) {
    if (i % 16 == 0 && n - i >= 16 && memcmp(old + i, now + i, 64) == 0) {
      i += 16;
      continue;
    }
    if (old[i] != now[i]) {
      size_t end = k ? spans[k - 1].first + spans[k - 1].count : 0;
      if (k && i - end < FA_MIRROR_GAP) {
        *entries += i + 1 - end;
        spans[k - 1].count = i + 1 - spans[k - 1].first;
      } else {
        if (k == FA_MIRROR_SPANS)
          return -1;
        spans[k++] = (entry_span){i, 1};
        *entries += 1;
      }
    }
    ++i;
  }
  return k;
}

/* Marks mirror `m` as holding a table of `bytes` with `hash`, used at call
 * `now`, once its copies are enqueued; its device address. */
static uint64_t mirror_holds(struct table_mirror *m, size_t bytes, XXH128_hash_t hash,
                             uint64_t now) {
  m->bytes = bytes;
  m->hash = hash;
  m->used = now;
  return m->ptr;
}

/* A host block_table's device mirror on `stream` (neither capturing nor the
 * per-thread default stream): one of the stream's FA_MIRRORS_PER_STREAM
 * buffers. A buffer holding a table of the same size and XXH3-128 is used
 * as it is. Otherwise, when a buffer of this size differs from the new
 * table in at most FA_MIRROR_SPANS runs covering at most a quarter of it
 * (a decode step in which some sequences took a new page), only those runs
 * are copied into the closest such buffer (a patch; on HMM/ATS devices
 * the range from the first run to the end of the last, through one pinned
 * block); else the least recently used buffer is refilled whole. Copies
 * go from the mirror's host copy (pageable, or on HMM/ATS devices through
 * staged_copy's pinned blocks), so that the caller may change its table
 * once the call returns. The kernels then read it as a device
 * block_table. Calls on one stream run in order, so a copy lands after
 * the kernels that read the buffer's previous contents. A grown buffer's
 * predecessor is retired (freed at release). 0 when the stream has no
 * slot or a driver call or allocation fails: the caller copies the page
 * lists with the tile table instead. Decode steps pass the same
 * block_table to every layer until a sequence takes a new page: most
 * calls copy nothing, and the others a few entries. */
static uint64_t block_table_mirror(cuda_api *api, void *stream, const fa_tensor *bt) {
  size_t bytes = (size_t)(bt->shape[0] * bt->shape[1]) * sizeof(int32_t);
  if (!api->cuMemAlloc || !api->cuMemFree || !api->cuMemcpyHtoDAsync || !bytes ||
      stream == (void *)(uintptr_t)2 /* CU_STREAM_PER_THREAD */)
    return 0;
  int i = stream_slot(api, stream);
  if (i < 0)
    return 0;
  uint64_t now = ++api->streams[i].calls;
  const int32_t *table = (const int32_t *)bt->data;
  XXH128_hash_t hash = XXH3_128bits(table, bytes);
  struct table_mirror *m = NULL;
  for (int j = 0; j < FA_MIRRORS_PER_STREAM; ++j) {
    struct table_mirror *c = &api->streams[i].mirror[j];
    if (c->bytes == bytes && XXH128_isEqual(hash, c->hash)) {
      c->used = now;
      return c->ptr;
    }
    if (!m || c->used < m->used)
      m = c;
  }
  /* The mirror of this size that the fewest entries separate from the new
   * table (within the patch limits), if any: its runs are copied. */
  const size_t n = bytes / sizeof(int32_t);
  struct table_mirror *base = NULL;
  entry_span spans[FA_MIRROR_SPANS], tried[FA_MIRROR_SPANS];
  size_t fewest = n / 4 + 1;
  int k = 0;
  for (int j = 0; j < FA_MIRRORS_PER_STREAM; ++j) {
    struct table_mirror *c = &api->streams[i].mirror[j];
    size_t entries;
    int kc;
    if (c->bytes != bytes || !c->shadow ||
        (kc = changed_spans(c->shadow, table, n, tried, &entries)) < 0 || entries >= fewest)
      continue;
    base = c;
    fewest = entries;
    k = kc;
    memcpy(spans, tried, sizeof(spans));
  }
  CUresult r;
  if (base) {
    /* Invalid until every run is enqueued; a failed one leaves it the
     * least recently used, refilled whole next. */
    base->bytes = 0;
    base->used = 0;
    for (int s = 0; s < k; ++s)
      memcpy(base->shadow + spans[s].first, table + spans[s].first,
             spans[s].count * sizeof(int32_t));
    if (k > 1 && api->pinned_staging) {
      /* Through one pinned block: the range from the first run to the end
       * of the last, whose other entries are unchanged. */
      spans[0].count = spans[k - 1].first + spans[k - 1].count - spans[0].first;
      k = 1;
    }
    for (int s = 0; s < k; ++s) {
      r = staged_copy(api, base->ptr + spans[s].first * sizeof(int32_t),
                      base->shadow + spans[s].first, spans[s].count * sizeof(int32_t), stream);
      if (r != 0)
        return 0;
    }
    return mirror_holds(base, bytes, hash, now);
  }
  /* Invalid from here until its new contents are enqueued: a step that
   * fails below leaves no stale match behind. */
  m->bytes = 0;
  if (m->cap < bytes || !m->shadow) {
    size_t cap = 2 * m->cap > bytes ? 2 * m->cap : bytes;
    int32_t *shadow = (int32_t *)malloc(cap);
    if (!shadow)
      return 0;
    uint64_t ptr = 0;
    int mode;
    bool relaxed = relaxed_enter(api, &mode);
    CUresult ra = room_to_retire(api) ? api->cuMemAlloc(&ptr, cap) : 1;
    relaxed_leave(api, relaxed, mode);
    if (ra != 0) {
      free(shadow);
      return 0;
    }
    if (m->ptr)
      api->retired[api->num_retired++] = m->ptr;
    free(m->shadow);
    m->shadow = shadow;
    m->ptr = ptr;
    m->cap = cap;
  }
  /* From the mirror's host copy even when the caller's table is pinned:
   * the driver stages a small pageable copy into its command stream,
   * which the kernel waits for less than for a copy-engine read of pinned
   * memory (measured on the H200, decode with a host block_table that
   * changes every call: 0.94-0.96 of dense this way, 0.81-0.92 copying
   * from the caller's pinned table; docs/BENCHMARKS.md). */
  memcpy(m->shadow, table, bytes);
  r = staged_copy(api, m->ptr, m->shadow, bytes, stream);
  if (r != 0)
    return 0;
  return mirror_holds(m, bytes, hash, now);
}

fa_status fa_cuda_launch(fa_runtime *rt, fa_kernel *k,
                         const fa_tensor *const *tensors, int n,
                         const fa_attention_args *call, bool pages_on_device) {
  cuda_api *api;
  fa_status st = load_api(rt, &api);
  if (st != FA_OK)
    return st;
  /* The tensors must live on the runtime's device: a kernel of this
   * runtime's context cannot read another device's memory (nothing is
   * launched then). */
  CUcontext prev;
  if (enter_context(api, &prev) != 0)
    return fa_fail(rt, FA_ERROR_CUDA, "cuCtxSetCurrent failed");
  const void *extra[3] = {call->k_new.data, call->v_new.data,
                          pages_on_device ? call->block_table.data : NULL};
  const char *extra_names[3] = {"k_new", "v_new", "block_table"};
  for (int i = 0; i < n + 3 && api->cuPointerGetAttribute; ++i) {
    /* Device memory only (managed and host memory report the device they
     * were allocated from, but any device reaches them); a pointer the
     * driver cannot place is left to the launch. */
    const void *ptr = i < n ? tensors[i]->data : extra[i - n];
    bool device = false;
    int ordinal = -1;
    if (ptr && device_memory(api, ptr, &device, &ordinal) == 0 && device &&
        ordinal != api->device) {
      leave_context(api, prev);
      return fa_fail(rt, FA_ERROR_INVALID_ARGUMENT,
                     "'%s' is on device %d, this runtime drives device %d (the "
                     "device current at its first CUDA use): use one runtime per device",
                     i < n ? k->artifact.arg_names[i] : extra_names[i - n], ordinal,
                     api->device);
    }
  }
  /* The launch runs in the runtime's context; the caller's current context
   * is restored after it. */
  st = launch_in_context(rt, api, k, tensors, n, call, pages_on_device);
  leave_context(api, prev);
  return st;
}

static fa_status launch_in_context(fa_runtime *rt, cuda_api *api, fa_kernel *k,
                                   const fa_tensor *const *tensors, int n,
                                   const fa_attention_args *call, bool pages_on_device) {
  void *stream = call->stream;
  fa_status st = FA_OK;
  if (!k->cu_function)
    st = fa_cuda_load(rt, k);
  if (st != FA_OK)
    return st;
  unsigned sms = (unsigned)(api->num_sms > 0 ? api->num_sms : 1);
  const char *names[FA_MAX_ARGS];
  cu_tensor args[FA_MAX_ARGS];
  const fa_tensor *q = NULL, *kk = NULL, *v = NULL, *out = NULL, *lse = NULL;
  for (int i = 0; i < n; ++i) {
    names[i] = k->artifact.arg_names[i];
    args[i] = from_fa(tensors[i]);
    const char *nm = names[i];
    if (!strcmp(nm, "q")) q = tensors[i];
    else if (!strcmp(nm, "k")) kk = tensors[i];
    else if (!strcmp(nm, "v")) v = tensors[i];
    else if (!strcmp(nm, "out")) out = tensors[i];
    else if (!strcmp(nm, "lse")) lse = tensors[i];
  }
  /* No key at all (a cache, packed k or pool of 0 rows: run.c took its
   * capacity as 0, so only an append of no rows and seqused_k 0 got
   * through): every row is empty, out 0 and lse -inf (DESIGN.md section 1,
   * as FlashAttention zeroes out for seqlen_k 0). Two memsets on the
   * stream write that without a kernel launch over no key. */
  if (kk && out) {
    int64_t nk = fa_tensor_elements(kk), nout = fa_tensor_elements(out);
    if (nk == 0 && nout > 0) {
      size_t bytes = (size_t)nout * fa_dtype_size(k->artifact.config.out_dtype);
      if (!api->cuMemsetD32Async)
        return fa_fail(rt, FA_ERROR_NO_DRIVER, "libcuda lacks cuMemsetD32Async");
      if (bytes % 4 != 0)
        return fa_fail(rt, FA_ERROR_UNSUPPORTED,
                       "out of %zu bytes (not a multiple of 4) with no key", bytes);
      CUresult r = api->cuMemsetD32Async((uint64_t)(uintptr_t)out->data, 0, bytes / 4,
                                         (CUstream)stream);
      if (r == 0 && lse)
        r = api->cuMemsetD32Async((uint64_t)(uintptr_t)lse->data, 0xFF800000u,
                                  (size_t)fa_tensor_elements(lse), (CUstream)stream);
      if (r != 0)
        return fa_fail(rt, FA_ERROR_CUDA, "filling the empty rows: %s", cuError(api, r));
      return FA_OK;
    }
  }
  /* Automatic pack_gqa: the packed entries when every sequence's queries
   * of a kv head fit one tile (q_len x G <= block_m: decode, speculative
   * decode), as FlashAttention-3 decides; measured on the H200, packing
   * longer prefills costs up to 16% (docs/BENCHMARKS.md). The launch then
   * sees the artifact through a view with the packed kernels, q map and G. */
  const bool vq = k->artifact.config.flags & FA_VARLEN_Q;
  fa_kernel packed_view;
  if (k->cu_packed && q) {
    int64_t longest = vq ? 0 : q->shape[1];
    if (vq) {
      const int32_t *cu = (const int32_t *)call->cu_seqlens_q.data;
      for (int64_t b = 0; b + 1 < call->cu_seqlens_q.shape[0]; ++b)
        if (cu[b + 1] - cu[b] > longest)
          longest = cu[b + 1] - cu[b];
    }
    if (longest * k->artifact.packed_groups <= k->artifact.block_m) {
      /* Their own map list: q grouped, and never out (no TMA store). */
      twin_view(&packed_view, k, k->cu_packed, k->cu_dense_packed, k->artifact.packed_tma,
                k->artifact.num_packed_tma);
      packed_view.artifact.pack_groups = k->artifact.packed_groups;
      k = &packed_view;
    }
  }
  /* Several kv heads per key block: HP times fewer tiles, each reading
   * HP heads of a page in one box. A call with too few of them to fill the
   * SMs (FlashAttention's 80% rule, counting one tile per sequence and
   * head group) would be split, and pay the combine: it takes the one-head
   * kernels, which have HP times more tiles. Measured on the H200 (docs/
   * BENCHMARKS.md): decode over 16-key pages, batch 1-16. */
  fa_kernel kv1_view;
  if (k->cu_kv1 && q) {
    int64_t seqs = vq ? call->cu_seqlens_q.shape[0] - 1 : q->shape[0];
    int64_t tiles = seqs * (k->artifact.config.num_q_heads / fa_tile_groups(&k->artifact));
    if (10 * tiles < 8 * (int64_t)api->num_sms) {
      int hp = k->artifact.kv_heads_per_block;
      twin_view(&kv1_view, k, k->cu_kv1, k->cu_dense_kv1, k->artifact.kv1_tma,
                k->artifact.num_kv1_tma);
      kv1_view.artifact.block_n = k->artifact.block_n * hp;
      kv1_view.artifact.pack_groups = k->artifact.pack_groups / hp;
      kv1_view.artifact.kv_heads_per_block = 1;
      k = &kv1_view;
    }
  }
  /* A twin's own map list (run.c checked the call's tensors against the
   * main list only; the one-head twins' page panel maps, for one, exist
   * only here). */
  if (k == &packed_view || k == &kv1_view)
    for (int i = 0; i < k->artifact.num_tma; ++i)
      for (int j = 0; j < n; ++j)
        if (!strcmp(names[j], k->artifact.tma[i].arg) &&
            (st = fa_tma_check(rt, k, i, tensors[j])) != FA_OK)
          return st;
  const bool append = k->cu_append != NULL;
  /* Whether the stream is capturing, asked once where it matters: the
   * block_table mirror, the fused merge and a copied tile table depend on
   * it. */
  const int capture =
      k->artifact.tile_table || k->cu_combine ? stream_capturing(api, stream) : 0;
  /* A host block_table (checked by run.c): read by the kernels from the
   * stream's device mirror when there is one (block_table_mirror; not
   * under stream capture, whose replays repeat the call as captured). */
  fa_attention_args mirrored;
  if ((k->artifact.config.flags & FA_PAGED) && k->artifact.page_table && !pages_on_device &&
      call->block_table.data && call->block_table.rank == 2 && capture == 0) {
    uint64_t mirror = block_table_mirror(api, stream, &call->block_table);
    if (mirror) {
      mirrored = *call;
      mirrored.block_table.data = (void *)(uintptr_t)mirror;
      call = &mirrored;
      pages_on_device = true;
    }
  }
  /* The tile table (varlen, seqused_k, paged, append), built on the host. */
  int32_t *table = NULL;
  int64_t entries = 0, words = 0;
  if (k->artifact.tile_table) {
    st = fa_sm90_tile_table(rt, k, call, pages_on_device, &table, &entries, &words);
    if (st != FA_OK)
      return st;
    if (entries == 0 && !append) { /* no query rows: nothing to write */
      free(table);
      return FA_OK;
    }
  }
  /* The launch's tiles (per split): one per table entry and head, else from
   * the dense shapes (as the kernel counts them). */
  int64_t tiles = 0;
  if (table)
    tiles = entries * (k->artifact.config.num_q_heads / fa_tile_groups(&k->artifact));
  else if (q && kk && q->rank == 4 && kk->rank == 4)
    tiles = dense_tiles(k, q->shape[0], q->shape[1], q->shape[2]);
  /* Split-KV: the count (automatic: FlashAttention's heuristic, over the
   * table's tiles and longest sequence when there is a table), and the
   * partial results' shape. Varlen q: out [Tq, H, Dv] and lse [H, Tq] are
   * seen as batch 1, the partial results as [S, 1, Tq, H, Dv] and [S, 1, H,
   * Tq]. */
  int64_t splits = 1, b = 0, sq = 0, h = 0, dv = 0;
  if (k->cu_combine) {
    splits = k->artifact.config.num_splits;
    int orank = vq ? 3 : 4;
    if (!q || !kk || !v || !out || out->rank != orank ||
        (splits < 2 && !k->artifact.auto_splits)) {
      free(table);
      return fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT,
                     "split-KV cubin without q, k, v, out or num_splits");
    }
    /* The key blocks of the longest sequence: from the table when there is
     * one, else from the dense shapes. */
    int64_t keys = 0;
    if (table) {
      for (int64_t e = 1; e <= entries; ++e)
        if (table[8 * e + 5] > keys)
          keys = table[8 * e + 5];
    } else {
      keys = kk->shape[1];
    }
    if (k->artifact.auto_splits)
      splits = fa_num_splits_for(
          tiles, (keys + k->artifact.block_n - 1) / k->artifact.block_n, (int64_t)sms);
    /* The kernel counts (tile, split) work units in i32. */
    if (tiles * splits >= INT32_MAX) {
      free(table);
      return fa_fail(rt, FA_ERROR_UNSUPPORTED,
                     "%lld tiles x %lld splits exceed the kernel's i32 work index",
                     (long long)tiles, (long long)splits);
    }
    b = vq ? 1 : out->shape[0];
    sq = out->shape[orank - 3];
    h = out->shape[orank - 2];
    dv = out->shape[orank - 1];
  }
  unsigned grid = fa_launch_grid(tiles * splits, sms);
  /* One split and a dense entry: no partial results, no combine. */
  const bool use_dense = k->cu_combine && splits == 1 && k->cu_dense;
  void *combine = use_dense ? NULL : k->cu_combine;
  void *attention = use_dense ? k->cu_dense : k->cu_function;
  /* Stream-ordered scratch: the tile table (in 256-byte units), the zeroed
   * tile counter of the dynamic scheduler (4 bytes, in 256; only with more
   * tiles than CTAs: otherwise the kernel never reads it; with a table it
   * is the table's zero word 3, copied with it), the split-KV partial
   * results. */
  const bool takes_counter =
      use_dense ? k->artifact.dense_tile_counter : k->artifact.tile_counter;
  /* The table by value (the kernels' "tile_table_inline" parameter) when
   * it fits and nothing else needs it in device memory: no counter to
   * zero (every tile is some CTA's first), no append (its kernel reads the
   * table), page lists in the caller's device block_table. The launch then
   * has no host-to-device copy before it (measured on the H200: the copy
   * and the wait for it cost about 2 us per decode call, docs/
   * BENCHMARKS.md). */
  _Alignas(16) unsigned char inline_buf[FA_MAX_INLINE_TABLE_BYTES];
  const void *inline_table = NULL;
  if (table && !append && (size_t)words * sizeof(int32_t) <=
                              (size_t)k->artifact.tile_table_inline &&
      (!(k->artifact.config.flags & FA_PAGED) || pages_on_device) &&
      (!takes_counter || tiles * splits <= (int64_t)sms)) {
    memset(inline_buf, 0, sizeof(inline_buf));
    memcpy(inline_buf, table, (size_t)words * sizeof(int32_t));
    inline_table = inline_buf;
  }
  /* The counter is read only when there are more work units (tiles x
   * splits) than CTAs; the grid is min(units, SMs). */
  size_t counter_bytes = takes_counter && !table && tiles * splits > (int64_t)sms ? 256 : 0;
  size_t table_bytes = table && !inline_table
                           ? ((size_t)words * sizeof(int32_t) + 255) / 256 * 256 : 0;
  size_t out_bytes = combine ? (size_t)(splits * b * sq * h * dv) * 4 : 0;
  size_t lse_bytes = combine ? (size_t)(splits * b * h * sq) * 4 : 0;
  size_t ws_bytes = counter_bytes + table_bytes + out_bytes + lse_bytes;
  if (!ws_bytes) { /* q's address stands for a counter the kernel never reads */
    free(table);
    return launch_one(rt, api, k, attention, args, names, n, true, grid,
                      (unsigned)k->artifact.smem, stream,
                      takes_counter ? args[0].data : NULL, NULL,
                      k->artifact.page_table ? call->block_table.data : NULL, inline_table,
                      NULL);
  }
  if (!api->cuMemAllocAsync || !api->cuMemFreeAsync || !api->cuMemsetD32Async ||
      !api->cuMemcpyHtoDAsync) {
    free(table);
    return fa_fail(rt, FA_ERROR_NO_DRIVER,
                   "libcuda lacks cuMemAllocAsync (split-KV, the tile counter "
                   "and the tile table need CUDA 11.2+)");
  }
  uint64_t ws = 0;
  CUresult r = api->cuMemAllocAsync(&ws, ws_bytes, (CUstream)stream);
  if (r != 0) {
    free(table);
    /* CUDA_ERROR_OUT_OF_MEMORY = 2; any other failure (no memory pools, a
     * capture or context error) is the driver's. */
    return fa_fail(rt, r == 2 ? FA_ERROR_OUT_OF_MEMORY : FA_ERROR_CUDA,
                   "launch scratch of %zu bytes: %s", ws_bytes, cuError(api, r));
  }
  /* Layout: table | counter | partial results. */
  void *dtable = table_bytes ? (void *)(uintptr_t)ws : NULL;
  /* Paged: the page lists, where the kernels read them. */
  void *pages = k->artifact.page_table ? (pages_on_device ? call->block_table.data : dtable)
                                       : NULL;
  /* The counter: its own zeroed word, the table's word 3, or (no bytes:
   * never read) the scratch's start. */
  void *counter = !takes_counter ? NULL
                  : table_bytes  ? (void *)(uintptr_t)(ws + 3 * sizeof(int32_t))
                                 : (void *)(uintptr_t)(ws + table_bytes);
  uint64_t parts = ws + table_bytes + counter_bytes;
  /* Eagerly the table is consumed when the copy returns (staged_copy:
   * staged by the driver, or through pinned staging on HMM/ATS devices),
   * so it can be freed right after. Under stream capture (CUDA
   * graphs) the copy becomes a graph node that reads the host table at
   * every replay: the table then lives as long as the graph (give_to_graph,
   * below) or else the runtime, and replays copy the captured call's
   * table. */
  /* (A capture status the driver could not tell counts as capturing: the
   * table is then kept, never freed under a copy node that reads it.) */
  const bool hold = table_bytes && capture != 0;
  if (hold && api->num_held == api->cap_held) {
    /* Room to keep the table, before the copy node that will read it (even
     * when a step below fails: the table is kept below either way). */
    size_t cap = api->cap_held ? 2 * api->cap_held : 16;
    void **grown = (void **)realloc(api->held, cap * sizeof(void *));
    if (!grown) {
      free(table);
      api->cuMemFreeAsync(ws, (CUstream)stream);
      return fa_fail(rt, FA_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    api->held = grown;
    api->cap_held = cap;
  }
  /* The merge in the partial kernels where it can run (merge_counters),
   * else the combine kernel after them; taken here, past the returns
   * above, so that a captured slice always reaches the hand-over below. */
  uint64_t merge_ctr = 0;
  size_t slice_words = 0; /* merge_ctr's length when it is a captured slice */
  /* (It stores out 4 values, 8 bytes, at a time.) */
  if (combine && k->artifact.fused_combine && tiles > 0 && out &&
      (uintptr_t)out->data % 8 == 0)
    merge_ctr = merge_counters(api, stream, capture, tiles, &slice_words);
  if (counter_bytes)
    r = api->cuMemsetD32Async(ws + table_bytes, 0, 1, (CUstream)stream);
  /* Packed rows past cu_seqlens_q[B] belong to no tile: lse_s -inf makes
   * the combine write them as out 0, lse -inf (never unwritten memory). */
  if (r == 0 && combine && vq && !merge_ctr)
    r = api->cuMemsetD32Async(parts + out_bytes, 0xFF800000u,
                              (size_t)(splits * b * h * sq), (CUstream)stream);
  /* Eager calls: staged_copy; a captured copy reads the kept table at
   * each replay. */
  if (r == 0 && table_bytes)
    r = capture == 0
            ? staged_copy(api, ws, table, (size_t)words * sizeof(int32_t), stream)
            : copy_pageable(api, ws, table, (size_t)words * sizeof(int32_t), stream);
  /* Recorded (or its recording failed): kept either way, since a graph
   * may still hold the copy node; handed to the graph below. */
  void *kept = hold ? table : NULL;
  if (hold)
    table = NULL;
  free(table);
  if (r != 0)
    st = fa_fail(rt, FA_ERROR_CUDA, "preparing the launch failed: %s", cuError(api, r));
  /* kv-cache append: k_new / v_new into the cache before the attention
   * reads it (the checks of run.c kept every position inside the cache).
   * The attention's tensor maps are encoded first, so that a call failing
   * there has not written the cache yet. */
  if (st == FA_OK && append) {
    _Alignas(64) unsigned char probe[4][128];
    st = encode_maps(rt, api, k, args, names, n, probe);
  }
  if (st == FA_OK && append) {
    cu_tensor rows[4] = {from_fa(&call->k_new), from_fa(&call->v_new), from_fa(kk),
                         from_fa(v)};
    const char *row_names[4] = {"k_new", "v_new", "k", "v"};
    int64_t chunks = rows[0].shape[0] * rows[0].shape[1] * rows[0].shape[2] *
                     (rows[0].shape[3] / 8);
    int64_t blocks = (chunks + 255) / 256;
    unsigned grid = blocks < (int64_t)sms * 8 ? (unsigned)(blocks > 0 ? blocks : 1)
                                              : sms * 8;
    if (chunks > 0)
      st = launch_one(rt, api, k, k->cu_append, rows, row_names, 4, false, grid, 0,
                      stream, NULL, dtable, pages, NULL, NULL);
  }
  if (st == FA_OK && entries == 0 && k->artifact.tile_table) {
    /* Append only: no query rows to attend. */
  } else if (st == FA_OK && !combine) {
    st = launch_one(rt, api, k, attention, args, names, n, true, grid,
                    (unsigned)k->artifact.smem, stream, counter, dtable, pages, inline_table,
                    NULL);
  } else if (st == FA_OK) {
    cu_tensor pout = {(void *)(uintptr_t)parts, 5, {splits, b, sq, h, dv}};
    cu_tensor plse = {(void *)(uintptr_t)(parts + out_bytes), 4, {splits, b, h, sq, 0}};
    cu_tensor first[5] = {from_fa(q), from_fa(kk), from_fa(v), pout, plse};
    const char *first_names[5] = {"q", "k", "v", "out", "lse"};
    void *merge[3] = {out->data, lse ? lse->data : NULL, (void *)(uintptr_t)merge_ctr};
    st = launch_one(rt, api, k, attention, first, first_names, 5, true, grid,
                    (unsigned)k->artifact.smem, stream, counter, dtable, pages, inline_table,
                    k->artifact.fused_combine ? merge : NULL);
    if (st == FA_OK && !merge_ctr) {
      cu_tensor second[4] = {pout, plse, {out->data, 4, {b, sq, h, dv}}, {NULL, 0, {0}}};
      if (lse)
        second[3] = (cu_tensor){lse->data, 3, {b, h, sq}};
      const char *second_names[4] = {"partial_out", "partial_lse", "out", "lse"};
      int64_t total = b * sq * h * dv;
      int64_t blocks = (total + 127) / 128;
      unsigned grid = blocks < (int64_t)sms * 16 ? (unsigned)(blocks > 0 ? blocks : 1)
                                                 : sms * 16;
      st = launch_one(rt, api, k, k->cu_combine, second, second_names,
                      lse ? 4 : 3, false, grid, 0, stream, NULL, NULL, NULL, NULL, NULL);
    }
  }
  /* What the captured nodes read lives as long as their graph; where it
   * cannot be handed over, as long as the runtime (the table in `held`,
   * room made above; the slice in its chunk); an invalidated capture's
   * nodes never run, so both are free at once. */
  if (kept || slice_words) {
    int fate = give_to_graph(api, stream, kept, slice_words ? merge_ctr : 0, slice_words);
    if (fate == NEVER_RUN) {
      free(kept);
      if (slice_words)
        spare_slice(api, merge_ctr, slice_words);
    } else if (fate == KEPT_BY_CALLER && kept) {
      api->held[api->num_held++] = kept;
    }
  }
  r = api->cuMemFreeAsync(ws, (CUstream)stream);
  if (st == FA_OK && r != 0)
    st = fa_fail(rt, FA_ERROR_CUDA, "cuMemFreeAsync failed: %s", cuError(api, r));
  return st;
}

void fa_cuda_unload(fa_kernel *k) {
  cuda_api *api = (cuda_api *)k->cu_api;
  if (api && k->cu_module) {
    CUcontext prev; /* in the module's context */
    if (enter_context(api, &prev) == 0)
      api->cuModuleUnload(k->cu_module);
    leave_context(api, prev);
  }
  k->cu_module = k->cu_function = k->cu_combine = k->cu_append = k->cu_dense = NULL;
  k->cu_packed = k->cu_dense_packed = NULL;
  k->cu_kv1 = k->cu_dense_kv1 = NULL;
}

fa_status fa_cuda_release_stream(fa_runtime *runtime, void *stream) {
  if (!runtime)
    return FA_ERROR_INVALID_ARGUMENT;
  cuda_api *api = (cuda_api *)runtime->cuda;
  if (!api)
    return FA_OK;
  int i = find_slot(api, stream);
  if (i < 0)
    return FA_OK;
  CUcontext prev;
  if (enter_context(api, &prev) != 0)
    return fa_fail(runtime, FA_ERROR_CUDA, "cuCtxSetCurrent failed");
  int mode;
  bool relaxed = relaxed_enter(api, &mode);
  /* The stream's work that may still read the buffers, finished first. */
  CUresult r = api->cuStreamSynchronize ? api->cuStreamSynchronize((CUstream)stream) : 0;
  if (r != 0) {
    relaxed_leave(api, relaxed, mode);
    leave_context(api, prev);
    return fa_fail(runtime, FA_ERROR_CUDA, "cuStreamSynchronize failed: %s", cuError(api, r));
  }
  r = free_slot(api, i);
  relaxed_leave(api, relaxed, mode);
  leave_context(api, prev);
  api->streams[i] = api->streams[--api->num_streams];
  if (r != 0)
    return fa_fail(runtime, FA_ERROR_CUDA, "cuMemFree failed: %s", cuError(api, r));
  return FA_OK;
}

void fa_cuda_release(fa_runtime *rt) {
  cuda_api *api = (cuda_api *)rt->cuda;
  if (!api)
    return;
  for (size_t i = 0; i < api->num_held; ++i)
    free(api->held[i]);
  free(api->held);
  /* In the runtime's context; cuMemFree waits for the launches still
   * reading them. */
  CUcontext prev;
  if (api->num_streams + api->num_retired + api->num_captured + api->num_pinned > 0 ||
      api->zero_stream) {
    if (enter_context(api, &prev) == 0) {
      for (int i = 0; i < api->num_pinned; ++i) {
        if (api->pinned[i].pending) /* its copy may still read it */
          api->cuEventSynchronize(api->pinned[i].done);
        if (api->pinned[i].done)
          api->cuEventDestroy(api->pinned[i].done);
        if (api->pinned[i].host)
          api->cuMemFreeHost(api->pinned[i].host);
      }
      for (int i = 0; i < api->num_streams; ++i)
        free_slot(api, i);
      for (size_t i = 0; i < api->num_retired; ++i)
        api->cuMemFree(api->retired[i]);
      for (size_t i = 0; i < api->num_captured; ++i)
        api->cuMemFree(api->captured[i].ptr);
      if (api->zero_stream)
        api->cuStreamDestroy(api->zero_stream);
      leave_context(api, prev);
    }
    /* Host memory, freed even where the context could not be entered
     * (free_slot already freed and cleared those it reached). */
    for (int i = 0; i < api->num_streams; ++i)
      for (int j = 0; j < FA_MIRRORS_PER_STREAM; ++j)
        free(api->streams[i].mirror[j].shadow);
  }
  free(api->retired);
  free(api->captured);
  free(api->spare);
  if (api->graphs)
    drop_graph_refs(api->graphs);
  /* After the cache unloaded the modules (run.c). */
  if (api->retained)
    api->cuDevicePrimaryCtxRelease(api->device);
  dlclose(api->lib);
  free(api);
  rt->cuda = NULL;
}
