//===- LoopBuilders.h - scf.for helpers of the lowerings --------*- C++ -*-===//
//
// Small builders shared by flashattn-tile and the host conversion: an
// scf.for with unit step whose body is a callback, with or without one
// carried value.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_UTILS_LOOPBUILDERS_H
#define FLASHATTN_UTILS_LOOPBUILDERS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace flashattn {

/// scf.for %iv = lb to ub step 1 { body(%iv) }; the builder's insertion
/// point is restored after the loop.
inline void buildFor(OpBuilder &b, Location loc, Value lb, Value ub,
                     function_ref<void(Value)> body) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(b, loc, lb, ub, one);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  body(loop.getInductionVar());
}

/// scf.for carrying one value: body(%iv, %carried) returns the next value;
/// returns the loop's result.
inline Value buildForCarry(OpBuilder &b, Location loc, Value lb, Value ub,
                           Value init, function_ref<Value(Value, Value)> body) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, lb, ub, one, ValueRange{init},
      [&](OpBuilder &nb, Location nloc, Value iv, ValueRange args) {
        scf::YieldOp::create(nb, nloc, body(iv, args[0]));
      });
  return loop.getResult(0);
}

} // namespace flashattn
} // namespace mlir

#endif // FLASHATTN_UTILS_LOOPBUILDERS_H
