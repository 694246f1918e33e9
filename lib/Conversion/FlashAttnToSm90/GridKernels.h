//===- GridKernels.h - flashattn-sm90-warpgroup's combine and append -*- C++ -*-===//
//
// The lowering of flashattn-tile's grid-stride kernels (the split-KV
// combine, the kv-cache append) to llvm.func kernels (GridKernels.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_LIB_CONVERSION_FLASHATTNTOSM90_GRIDKERNELS_H
#define FLASHATTN_LIB_CONVERSION_FLASHATTNTOSM90_GRIDKERNELS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::flashattn {

/// Whether `tiled` is a combine or append kernel of flashattn-tile (its
/// first argument is partial_out or k_new).
bool isGridKernel(gpu::GPUFuncOp tiled);

/// Builds `llvm.func @<tiled>_wg` before `tiled`, with its
/// #flashattn.kernel_abi; failure says why on the op.
LogicalResult lowerGridKernel(gpu::GPUFuncOp tiled, OpBuilder &b);

} // namespace mlir::flashattn

#endif
