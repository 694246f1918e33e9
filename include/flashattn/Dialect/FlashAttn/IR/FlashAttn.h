//===- FlashAttn.h - FlashAttn dialect, attributes and ops ------*- C++ -*-===//
//
// The one header to include for the flashattn dialect: the dialect class,
// its enums, the #flashattn.plan attribute and the ops.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_DIALECT_FLASHATTN_IR_FLASHATTN_H
#define FLASHATTN_DIALECT_FLASHATTN_IR_FLASHATTN_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttnOpsDialect.h.inc"

namespace mlir::flashattn {
/// The largest tile dimension (block_m, block_n, head_dim, head_dim_v): the
/// host lowering makes vectors of this many elements, and LLVM's vector
/// types hold fewer than 2^32. The plan, the tile ops, flashattn-tile and
/// the combine's host lowering all check against it.
constexpr int64_t kMaxTileDim = 65536;

/// Whether `type` (rank 1 or more) has a known static unit stride in its last
/// dimension: rows of head_dim contiguous, as the tile views and the host
/// lowerings require.
inline bool hasUnitInnerStride(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) && !strides.empty() &&
         strides.back() == 1;
}
} // namespace mlir::flashattn

#include "flashattn/Dialect/FlashAttn/IR/FlashAttnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "flashattn/Dialect/FlashAttn/IR/FlashAttnAttrs.h.inc"

#define GET_OP_CLASSES
#include "flashattn/Dialect/FlashAttn/IR/FlashAttnOps.h.inc"

#endif // FLASHATTN_DIALECT_FLASHATTN_IR_FLASHATTN_H
