/*===- cuda_module.c - a cubin artifact's module and functions ------------===*
 *
 * A cubin is loaded at its first launch, after the call's checks
 * (cuModuleLoadData), and its entries looked up (cuModuleGetFunction); the
 * attention kernels' dynamic shared memory limit is raised to the
 * artifact's "smem" above 48 KB (cuFuncSetAttribute).
 *
 *===----------------------------------------------------------------------===*/

#include "cuda_context.h"

fa_status fa_cuda_load(fa_runtime *rt, fa_kernel *k) {
  fa_cuda *cu;
  fa_status st = fa_cuda_get(rt, &cu);
  if (st != FA_OK)
    return st;
  const fa_cu_driver *drv = &cu->drv;
  k->cu_api = cu;
  CUresult r = drv->cuModuleLoadData(&k->cu_module, k->artifact.payload);
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
    r = drv->cuModuleGetFunction(entries[i].fn, k->cu_module, entries[i].name);
    if (r == 0 && entries[i].attention && art->smem > 48 * 1024)
      r = drv->cuFuncSetAttribute(*entries[i].fn,
                                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, art->smem);
  }
  if (r != 0) {
    /* Nothing half-loaded stays behind: a later launch must not take a
     * split-KV kernel for a plain one. */
    const char *why = fa_cu_error(drv, r);
    fa_cuda_unload(k);
    return fa_fail(rt, FA_ERROR_CUDA, "loading the cubin failed: %s", why);
  }
  return FA_OK;
}

void fa_cuda_unload(fa_kernel *k) {
  fa_cuda *cu = (fa_cuda *)k->cu_api;
  if (cu && k->cu_module) {
    CUcontext prev; /* in the module's context */
    if (fa_cuda_enter(cu, &prev) == 0)
      cu->drv.cuModuleUnload(k->cu_module);
    fa_cuda_leave(cu, prev);
  }
  k->cu_module = k->cu_function = k->cu_combine = k->cu_append = k->cu_dense = NULL;
  k->cu_packed = k->cu_dense_packed = NULL;
  k->cu_kv1 = k->cu_dense_kv1 = NULL;
}
