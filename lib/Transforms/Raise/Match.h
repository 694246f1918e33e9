//===- Match.h - flashattn-raise's structural matchers ---------*- C++ -*-===//
//
// Private to flashattn-raise. The matchers look at upstream structured ops
// through linalg::LinalgOp (linalg.generic, linalg.map / reduce / broadcast
// / transpose, linalg.matmul / batch_matmul / contract), so the forms of
// torch-mlir's linalg-on-tensors output and of StableHLO-to-linalg (with or
// without primitive ops) are one case each.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_LIB_TRANSFORMS_RAISE_MATCH_H
#define FLASHATTN_LIB_TRANSFORMS_RAISE_MATCH_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace mlir::flashattn::raise {

/// The value `op` yields for its (only) result.
Value yieldedValue(linalg::LinalgOp op);

/// `v` without arith.extf / truncf around it.
Value unwrapCast(Value v);

/// Whether `v` (through casts) is the block argument of `op`'s input `i`.
bool isInputArg(Value v, linalg::LinalgOp op, unsigned i);

/// Whether `v` (through casts) is the block argument of `op`'s init.
bool isInitArg(Value v, linalg::LinalgOp op);

/// A structured op with one result over `rank` parallel loops whose result
/// map is the identity.
linalg::LinalgOp elementwiseOp(Value result, unsigned rank);

/// The scalar constant `v` is: an f32/f64 constant, or a splat tensor (a
/// dense constant, a linalg.fill, a broadcast of one).
std::optional<double> constantOf(Value v);

/// The scalar a payload operand `v` of `op` stands for when it is a
/// constant: a captured scalar or an input holding a splat.
std::optional<double> payloadConstant(Value v, linalg::LinalgOp op);

/// Whether every result of `map` is a dim or a constant.
bool isDimsOrConstants(AffineMap map);

/// A tensor read as `map` (from some loops to its dims, dims or constants)
/// seen through the ops that only move or repeat elements: broadcasts and
/// transposes (any structured op yielding its input), tensor.cast and
/// tensor.expand_shape adding unit dims. Returns the source and the map
/// composed onto it.
std::pair<Value, AffineMap> peelBroadcasts(Value tensor, AffineMap map);

/// `tensor` = a transpose (any structured op yielding its input through a
/// permutation map) of another: that one, with `labels` (one per dim)
/// permuted along. Repeats; returns `tensor` itself when it is none.
Value peelTransposes(Value tensor, SmallVectorImpl<int64_t> &labels);

/// `v` = tensor.collapse_shape of a tensor merging its dims pos and pos + 1
/// (every other group one dim): that tensor, or null.
Value collapsedPair(Value v, unsigned pos);

/// Whether `a` and `b` have the same size (static, or provably equal).
bool sameSize(Value a, int64_t dimA, Value b, int64_t dimB);

/// out = sum over one loop of a * b from a zero init, by any structured op
/// (casts in the payload allowed), as the loop of each operand's dims.
/// linalg.batch_matmul over tensor.collapse_shape [[0, 1], ...] of equal
/// leading dims is seen with its batch loop split in two (`liftedFrom` the
/// 3-D result then).
struct Contraction {
  linalg::LinalgOp op;
  Value a, b;
  SmallVector<int64_t> aLoops, bLoops, outLoops;
  int64_t reduction = -1;
  bool lifted = false; ///< the batch loop split over collapsed operands
};

/// The contraction producing `result`: an op's result, or the
/// tensor.expand_shape [[0, 1], ...] of a lifted one's (torch-mlir's view
/// of a 4-D matmul). `liftRoot` lifts an op's own result too (the caller
/// then collapses its 4-D replacement back).
std::optional<Contraction> matchContraction(Value result, bool liftRoot);

/// P = softmax over the last of `rank` dims of X: linalg.softmax, or its
/// decomposition (max, sub, exp, sum, div, in fused or separate ops, row
/// statistics kept or broadcast by separate ops). Casts around P are
/// skipped. Returns X.
Value matchSoftmax(Value p, unsigned rank);

/// The loop of `op` that `v` (an integer in its payload) is: linalg.index,
/// through index casts, or an input produced by an iota (a structured op
/// yielding a cast of linalg.index).
std::optional<unsigned> loopOf(Value v, linalg::LinalgOp op);

} // namespace mlir::flashattn::raise

#endif // FLASHATTN_LIB_TRANSFORMS_RAISE_MATCH_H
