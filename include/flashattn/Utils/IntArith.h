//===- IntArith.h - signed integer arith at one location --------*- C++ -*-===//
//
// arith ops on one integer (or index) type at a builder's insertion point:
// what flashattn-tile's index computations and flashattn-lower-key-ranges'
// expansions (index on the host, i32 in the sm90 kernels) are written with.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_UTILS_INTARITH_H
#define FLASHATTN_UTILS_INTARITH_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

namespace mlir::flashattn {

struct IntArith {
  OpBuilder &b;
  Location loc;
  Type type;

  Value c(int64_t v) { return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, v)); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivSIOp::create(b, loc, x, y); }
  Value rem(Value x, Value y) { return arith::RemSIOp::create(b, loc, x, y); }
  /// Unsigned, for indices known non-negative (lets the lowering fold them).
  Value divu(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
  Value remu(Value x, Value y) { return arith::RemUIOp::create(b, loc, x, y); }
  Value ceilDiv(Value x, Value y) { return arith::CeilDivSIOp::create(b, loc, x, y); }
  Value floorDiv(Value x, Value y) { return arith::FloorDivSIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
};

} // namespace mlir::flashattn

#endif
