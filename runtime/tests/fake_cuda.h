/*===- fake_cuda.h - the stand-in libcuda's state (tests only) -----------===*
 *
 * Shared between fake_cuda.c (built as libfake_cuda.so, loaded by the runtime
 * through FLASHATTN_LIBCUDA) and test_launch.c, which opens the same library
 * and reads `fake_state` through dlsym.
 *
 *===----------------------------------------------------------------------===*/
#ifndef FLASHATTN_RUNTIME_TESTS_FAKE_CUDA_H
#define FLASHATTN_RUNTIME_TESTS_FAKE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#define FAKE_NAME_BYTES 128
#define FAKE_MAX_LAUNCHES 256

/* One recorded cuLaunchKernel. */
typedef struct fake_launch {
  char name[FAKE_NAME_BYTES];
  unsigned grid, block, smem;
  void *stream;
} fake_launch;

typedef struct fake_cuda_state {
  int num_sms;
  int pageable_access; /* CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS (HMM, ATS) */
  /* [device_lo, device_hi): addresses cuPointerGetAttribute calls device
   * memory of device 0 (besides the blocks the fake allocated). */
  uint64_t device_lo, device_hi;
  void *capturing_stream;  /* cuStreamIsCapturing answers ACTIVE for it */
  int capture_invalidated; /* ... or INVALIDATED while this is set */
  int capture_mode;        /* cuThreadExchangeStreamCaptureMode's */
  int fail_memset_at;      /* the cuMemsetD32Async (0-based) that fails; -1 none */
  int fail_launch_at;      /* the cuLaunchKernel (0-based) that fails; -1 none */
  int fail_copy_at;        /* the cuMemcpyHtoDAsync (0-based, counted in num_copies) that fails; -1 none */
  int fail_async_alloc;    /* cuMemAllocAsync answers this CUresult while it is nonzero */
  int num_memsets, num_launches_total, num_copies;
  size_t copied_bytes;
  /* Destinations of the host-to-device copies: copy n (0-based, counting
   * num_copies) at copy_dst[n % 8]. */
  uint64_t copy_dst[8];
  int num_allocs, num_frees, num_async_allocs, num_async_frees;
  int num_streams_created, num_streams_destroyed;
  /* CUDA user objects (cuUserObjectCreate): created, retained by the
   * capture's graph, destroyed (their destructor run); cuUserObjectCreate
   * fails while fail_create is set, cuGraphRetainUserObject while
   * fail_retain is set. */
  int num_user_objects, num_retained, num_destroyed;
  int fail_create, fail_retain;
  /* Page-locked memory and events: cuMemHostAlloc calls (failing while
   * fail_host_alloc is set) and frees, host-to-device copies whose source
   * lies in such memory, event records and waits; cuEventQuery answers
   * CUDA_ERROR_NOT_READY while events_pending is set. */
  int num_host_allocs, num_host_frees, num_pinned_copies;
  int num_event_records, num_event_syncs, num_stream_syncs;
  int fail_host_alloc, events_pending;
  /* cuTensorMapEncodeTiled calls: encode n (0-based, counting
   * num_tma_encodes) at tma[n % 8], its rank, dims, strides and box. */
  int num_tma_encodes;
  struct {
    unsigned rank;
    uint64_t dims[5], strides[4];
    unsigned box[5];
  } tma[8];
  fake_launch launches[FAKE_MAX_LAUNCHES]; /* since the test last cleared it */
  int num_launches;
} fake_cuda_state;

/* The graph the capturing stream records into is destroyed: the
 * destructors of the user objects it holds run (exported by the fake as
 * `fake_graph_destroy`, found by the test through dlsym). */
typedef void (*fake_graph_destroy_fn)(void);

#endif
