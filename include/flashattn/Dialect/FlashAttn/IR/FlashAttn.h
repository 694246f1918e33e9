//===- FlashAttn.h - FlashAttn dialect, attributes and ops ------*- C++ -*-===//
//
// The one header to include for the flashattn dialect: the dialect class,
// its enums, the #flashattn.plan attribute and the ops.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_DIALECT_FLASHATTN_IR_FLASHATTN_H
#define FLASHATTN_DIALECT_FLASHATTN_IR_FLASHATTN_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
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

/// The largest block_m and block_n of a host plan. LLVM's compile time of
/// the host lowering grows faster than linearly in block_n (x86-64, measured
/// with fa-run on one head_dim 64 case: 0.6 s at 4096, 1.7 s at 8192, 5.5 s
/// at 16384, 21 s at 32768, and the X86 backend crashes above 32768:
/// "SmallVector unable to grow" at 32769, SIGSEGV in instruction selection at
/// 65536); 4096 keeps a kernel's compile under a second, 64 times the
/// plan's own 64. block_m does not change compile time, but the S tile is
/// block_m x block_n f32 on the heap (64 MiB at 4096 x 4096); the same bound
/// keeps it small.
constexpr int64_t kMaxHostTileDim = 4096;

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

namespace mlir::flashattn {
/// Clones the single block of a score or mask `region` (minus its
/// flashattn.yield) at `b` with the block arguments bound to `args`, and
/// returns the value it yields: how every lowering evaluates a region.
/// Values from above the region are taken through `outside` where it maps
/// them (e.g. constants cloned into a kernel), else as they are.
Value inlineRegion(OpBuilder &b, Region &region, ValueRange args,
                   const IRMapping *outside = nullptr);

/// The plan of the flashattn.attention under `root` naming the sm90 kernel
/// `name` of gpu.module `kernels` (flashattn-tile builds a kernel an op);
/// null when no op with a plan names it.
PlanAttr planOfSm90Kernel(Operation *root, StringAttr kernels, StringAttr name);

/// The tile, the rows and `async` of a flashattn.tile_load or
/// flashattn.tile_load_paged.
Value loadedTile(Operation *load);
Value loadedRows(Operation *load);
bool isAsyncLoad(Operation *load);
} // namespace mlir::flashattn

#endif // FLASHATTN_DIALECT_FLASHATTN_IR_FLASHATTN_H
