/*===- cuda_context.h - the CUDA backend's state, device and context -*- C -*-===*
 *
 * struct fa_cuda: what a runtime keeps for the CUDA backend (rt->cuda,
 * made at the first CUDA use by fa_cuda_get), one part per file:
 *   cuda_driver.c   the driver's symbol table (dlopen / dlsym), `drv`;
 *   cuda_context.c  the device and context a runtime drives (this header);
 *   cuda_module.c   cubins: modules and their functions;
 *   cuda_tma.c      tensor maps (TMA descriptors) and their checks;
 *   cuda_variant.c  the kernels a call runs: twins, split count, grid;
 *   cuda_stream.c   per-stream state: slots, merge counters, `streams`;
 *   cuda_mirror.c   device mirrors of host block_tables (in the slots);
 *   cuda_staging.c  host-to-device copies: pageable, pinned, `staging`;
 *   cuda_graph.c    launches under stream capture: their counters and what
 *                   their graphs own (CUDA user objects), `graphs`;
 *   cuda_launch.c   a launch: fa_cuda_launch.
 *
 *===----------------------------------------------------------------------===*/

#ifndef FLASHATTN_RT_CUDA_CONTEXT_H
#define FLASHATTN_RT_CUDA_CONTEXT_H

#include "cuda_driver.h"
#include "cuda_graph.h"
#include "cuda_staging.h"
#include "cuda_stream.h"

struct fa_cuda {
  fa_cu_driver drv;
  /* The device this runtime drives and its context: the context current
   * on the thread at the runtime's first CUDA use (a caller's current
   * device, e.g. after cudaSetDevice / torch.cuda.set_device), else device
   * 0's primary context. */
  int device;
  CUcontext ctx;
  bool retained; /* ctx is device 0's primary context, retained here */
  int num_sms;
  fa_staging staging;
  fa_stream_table streams;
  fa_graph_state graphs;
};

/* The runtime's CUDA state, made (driver loaded, device and context chosen)
 * at the first call: FA_ERROR_NO_DRIVER without a usable driver. */
fa_status fa_cuda_get(fa_runtime *rt, fa_cuda **out) FA_HIDDEN;

/* Makes the runtime's context current and stores the caller's in *prev
 * (restored by fa_cuda_leave), so that the runtime never changes the
 * context a caller's thread has current. Nonzero when the switch failed
 * (fa_cuda_leave then does nothing). */
CUresult fa_cuda_enter(const fa_cuda *cu, CUcontext *prev) FA_HIDDEN;
void fa_cuda_leave(const fa_cuda *cu, CUcontext prev) FA_HIDDEN;

/* Whether `ptr` is device memory (not managed: managed and host memory are
 * reachable from the host and from any device), and then, with `ordinal`,
 * its device. Unregistered host memory is not known to the driver
 * (CUDA_ERROR_INVALID_VALUE): host memory. Returns any other driver error.
 * In the runtime's context. */
CUresult fa_cuda_device_memory(const fa_cuda *cu, const void *ptr, bool *device,
                               int *ordinal) FA_HIDDEN;

#endif
