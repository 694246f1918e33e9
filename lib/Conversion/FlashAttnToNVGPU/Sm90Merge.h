//===- Sm90Merge.h - the split-KV merge and the combine / append kernels -===//
//
// The split-KV merge of partial results (docs/SEMANTICS.md, "Split-KV and
// flashattn.combine"), which the combine kernel and the partial kernels'
// fused merge emit; the combine and append kernels (Sm90Merge.cpp) are
// declared in Sm90Kernel.h.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_CONVERSION_FLASHATTNTONVGPU_SM90MERGE_H
#define FLASHATTN_CONVERSION_FLASHATTNTONVGPU_SM90MERGE_H

#include "KernelEmitter.h"

#include <functional>
#include <utility>

namespace mlir::flashattn {

/// The address of split `s`'s element `off` of a partial result: element
/// s * stride + off (i64) of `type` at global pointer `base`.
Value splitElement(KernelEmitter &w, Value base, Value s, Value stride, Value off, Type type);

/// The merge of `V` consecutive values of one output row over the `S`
/// (i64) splits (Sm90Merge.cpp); `loadL(s)` and `loadO(s)` emit split s's
/// lse and its V values. Emits the normalized values into `out` and
/// returns (empty row, lse).
std::pair<Value, Value> emitMerge(KernelEmitter &w, Value S, int V,
                                  const std::function<Value(Value)> &loadL,
                                  const std::function<KernelEmitter::Values(Value)> &loadO,
                                  KernelEmitter::Values &out);

} // namespace mlir::flashattn

#endif
