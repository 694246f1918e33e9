//===- KeyRange.h - the keys an index condition keeps ----------*- C++ -*-===//
//
// Private to flashattn-raise.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_LIB_TRANSFORMS_RAISE_KEYRANGE_H
#define FLASHATTN_LIB_TRANSFORMS_RAISE_KEYRANGE_H

#include "mlir/IR/Value.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>

namespace mlir::flashattn::raise {

/// The keys kept relative to the query: query - left <= key <= query +
/// right (absent: unbounded). right = 0 alone is top-left causal.
struct KeyRange {
  std::optional<int64_t> left, right;
  void intersect(const KeyRange &other);
  bool any() const { return left || right; }
};

/// Which chain dim a payload integer is (the loop it reads), if any.
using ChainLoopFn = function_ref<std::optional<unsigned>(Value)>;

/// `cond` (an i1 in a payload; negated when `negate`) as a key range:
/// comparisons of linear forms key - query + c (arith.addi / subi of
/// indices and constants, through index casts), their conjunctions, and
/// negated disjunctions. `key` and `query` are the chain dims.
std::optional<KeyRange> keyRangeOf(Value cond, bool negate, ChainLoopFn chainLoop, unsigned key,
                                   unsigned query);

} // namespace mlir::flashattn::raise

#endif // FLASHATTN_LIB_TRANSFORMS_RAISE_KEYRANGE_H
