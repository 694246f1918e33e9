/*===- cuda_tma.c - tensor maps (TMA descriptors) of a launch -------------===*
 *
 * One 128-byte CUtensorMap per "tma" parameter of the launched entry's
 * "abi" list (artifact.c), encoded for the call's
 * tensor with cuTensorMapEncodeTiled (CUDA Driver API, Tensor Map Object
 * Management): dimensions innermost first, global strides in bytes of each
 * outer dimension, the metadata's box and swizzle, no interleave, L2
 * promotion 128B, no OOB fill (zeros). fa_tma_check validates alignment and
 * strides first, without the driver (run.c, before anything runs; the
 * launch for a twin's own map list). A map with a group G > 1 views q with
 * its heads split (pack_gqa); a "page_panels" map views a paged pool as
 * 64-column panels of 8-row groups, one box a page.
 *
 *===----------------------------------------------------------------------===*/

#include "cuda_context.h"
#include "cuda_tma.h"

#include <string.h>

fa_dtype fa_tma_dtype(const fa_artifact *a, const fa_tma_desc *m) {
  return strcmp(m->arg, "out") == 0   ? a->config.out_dtype
         : strcmp(m->arg, "lse") == 0 ? FA_F32
                                      : a->config.dtype;
}

/* The row-major shape a tensor map sees: the tensor's, or with a group
 * G > 1 the heads split, [B, S, H, D] as [B, S, H / G, G, D] (pack_gqa;
 * varlen [T, H, D] as [T, H / G, G, D]). Returns the view's rank. */
static int tma_view(const fa_tma_desc *m, int rank, const int64_t *shape, int64_t view[5]) {
  int group = m->group;
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
static int tma_layout(const fa_tma_desc *m, int rank, const int64_t *shape, size_t es,
                      uint64_t gdims[5], uint64_t gstrides[5]) {
  if (m->page_panels) {
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
  int r = tma_view(m, rank, shape, view);
  uint64_t stride = es;
  for (int d = 0; d < r; ++d) {
    gdims[d] = view[r - 1 - d] > 0 ? (uint64_t)view[r - 1 - d] : 1;
    if (d > 0)
      gstrides[d - 1] = stride;
    stride *= gdims[d];
  }
  return r;
}

fa_status fa_tma_check(fa_runtime *rt, const fa_kernel *k, const fa_tma_desc *m,
                       const fa_tensor *t) {
  size_t elem_size = fa_dtype_size(fa_tma_dtype(&k->artifact, m));
  const char *name = m->arg;
  int rank = m->rank;
  int group = m->group;
  /* A grouped map views the 4-D tensor as 5-D (heads split by group), as
   * does a page panel map. */
  int tensor_rank = group > 1 || m->page_panels ? rank - 1 : rank;
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
  if (m->page_panels && (t->shape[3] % 64 != 0 || t->shape[1] % 8 != 0))
    return fa_fail(rt, FA_ERROR_SHAPE_MISMATCH,
                   "'%s': the page panel map needs [num_pages, page_size, Hkv, D] "
                   "with page_size a multiple of 8 and D of 64",
                   name);
  uint64_t gdims[5] = {0}, gstrides[5] = {0};
  rank = tma_layout(m, t->rank, t->shape, elem_size, gdims, gstrides);
  for (int d = 0; d + 1 < rank; ++d)
    if (gstrides[d] % 16 != 0 || gstrides[d] >= (1ull << 40))
      return fa_fail(rt, FA_ERROR_BAD_INPUT,
                     "'%s' stride of map dim %d is %llu bytes: TMA needs a "
                     "multiple of 16 below 2^40",
                     name, d + 1, (unsigned long long)gstrides[d]);
  int swz = m->swizzle;
  if (swz && (uint64_t)m->box[0] * elem_size > (uint64_t)swz)
    return fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT,
                   "tensor map of '%s': inner box %d x %zu bytes exceeds the "
                   "%d-byte swizzle",
                   name, m->box[0], elem_size, swz);
  return FA_OK;
}

/* The maps of one entry over the call's tensors that have them. */
static fa_status check_entry(fa_runtime *rt, const fa_kernel *k, fa_entry_role role,
                             const char *const *names, const fa_tensor *const *tensors,
                             int n) {
  const fa_abi *abi = &k->artifact.abi[role];
  /* A split-KV partial kernel's out and lse are the runtime's partial
   * buffers, not the call's. */
  const bool partial = role == FA_ENTRY_MAIN && k->artifact.combine_entry[0];
  for (int i = 0; i < abi->num_params; ++i) {
    const fa_param *p = &abi->params[i];
    if (p->kind != FA_PARAM_TMA ||
        (partial && (!strcmp(p->arg, "out") || !strcmp(p->arg, "lse"))))
      continue;
    for (int j = 0; j < n; ++j)
      if (!strcmp(names[j], p->arg)) {
        fa_status st = fa_tma_check(rt, k, &p->tma, tensors[j]);
        if (st != FA_OK)
          return st;
      }
  }
  return FA_OK;
}

fa_status fa_tma_check_call(fa_runtime *rt, const fa_kernel *k, const char *const *names,
                            const fa_tensor *const *tensors, int n) {
  fa_status st = check_entry(rt, k, FA_ENTRY_MAIN, names, tensors, n);
  return st != FA_OK ? st : check_entry(rt, k, FA_ENTRY_DENSE, names, tensors, n);
}

fa_status fa_cuda_encode_map(fa_runtime *rt, const fa_cuda *cu, const fa_kernel *k,
                             const fa_tma_desc *m, const fa_cu_tensor *t,
                             fa_cu_tensor_map *map) {
  fa_dtype dt = fa_tma_dtype(&k->artifact, m);
  size_t es = fa_dtype_size(dt);
  uint64_t gdims[5] = {0}, gstrides[5] = {0};
  unsigned box[5], estrides[5];
  int rank = tma_layout(m, t->rank, t->shape, es, gdims, gstrides);
  for (int d = 0; d < rank; ++d) {
    box[d] = (unsigned)m->box[d];
    estrides[d] = 1;
  }
  int swizzle = m->swizzle == 0 ? 0 : m->swizzle == 32 ? 1 : m->swizzle == 64 ? 2 : 3;
  int cutype = dt == FA_F32   ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
               : dt == FA_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                              : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  CUresult r = cu->drv.cuTensorMapEncodeTiled(map->bytes, cutype, (unsigned)rank, t->data,
                                              gdims, gstrides, box, estrides, 0, swizzle,
                                              CU_TENSOR_MAP_L2_PROMOTION_L2_128B, 0);
  if (r != 0)
    return fa_fail(rt, FA_ERROR_CUDA, "cuTensorMapEncodeTiled for '%s' failed: %s", m->arg,
                   fa_cu_error(&cu->drv, r));
  return FA_OK;
}
