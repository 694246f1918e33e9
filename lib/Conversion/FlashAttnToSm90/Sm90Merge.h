//===- Sm90Merge.h - the split-KV merge of partial results ------*- C++ -*-===//
//
// The split-KV merge of partial results (docs/SEMANTICS.md, "Split-KV and
// flashattn.combine"), which the combine kernel and the partial kernels'
// fused merge emit.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_CONVERSION_FLASHATTNTOSM90_SM90MERGE_H
#define FLASHATTN_CONVERSION_FLASHATTNTOSM90_SM90MERGE_H

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

/// One unit of the partial kernels' fused merge: 4 columns of one row,
/// from split s's partial out (f32, 16-byte aligned, element
/// s * outSlice + el of `partOut`) and lse (element s * lseSlice + lrow of
/// `partLse`), both loaded volatile (no L1 line filled before the other
/// splits wrote it), merged over the S (i64) splits into `out` (4 values of
/// `outType` at element el, one 8-byte store) and, at column `col` (i32)
/// 0, into `lse` (f32 at lrow; a null pointer: none).
struct MergeUnit {
  Value S, partOut, outSlice, el, partLse, lseSlice, lrow, out, lse, col;
  Type outType;
};
void emitMergeUnit(KernelEmitter &w, const MergeUnit &u);

} // namespace mlir::flashattn

#endif
