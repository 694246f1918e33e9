//===- Scores.h - the steps between S = Q K^T and the softmax --*- C++ -*-===//
//
// Private to flashattn-raise.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_LIB_TRANSFORMS_RAISE_SCORES_H
#define FLASHATTN_LIB_TRANSFORMS_RAISE_SCORES_H

#include "KeyRange.h"

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::flashattn::raise {

/// A tensor read at the chain's loops through `map` (dims or constants).
struct Read {
  Value tensor;
  AffineMap map;
};

/// One step the score region applies, in order: s + tensor, or
/// select(keep, s, value) with keep = cond (negated when `inverted`).
struct ScoreTerm {
  enum Kind { Add, SelectFinite } kind;
  Read read;
  bool inverted = false;
  double value = 0;
};

/// A boolean mask selecting -inf: keep = tensor (negated when `inverted`).
struct BoolMask {
  Read read;
  bool inverted = false;
};

/// What the chain from S to the softmax's input does to the scores.
struct Scores {
  double scale = 1.0;
  KeyRange keys;                 ///< from index comparisons (causal, window)
  SmallVector<ScoreTerm> terms;  ///< innermost first
  SmallVector<BoolMask> masks;
};

/// The chain dims of the scores: `rank` loops, the query at `queryDim`, the
/// keys last.
struct ChainDims {
  unsigned rank;
  unsigned queryDim;
};

/// Walks from X (the softmax's input) to S over elementwise steps: a
/// multiply or divide by a positive constant (the scale, before any
/// additive or finite-select step), the addition of a tensor, a select of
/// a boolean tensor or of index comparisons (a key range: causal, window) to
/// -inf or to a finite constant, and casts. Returns S (where
/// `isContraction` holds) with `scores` filled, or null.
Value matchScoreSteps(Value x, ChainDims dims, Scores &scores,
                      function_ref<bool(Value)> isContraction);

} // namespace mlir::flashattn::raise

#endif // FLASHATTN_LIB_TRANSFORMS_RAISE_SCORES_H
