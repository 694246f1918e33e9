//===- TileGridKernels.h - flashattn-tile's sm90 combine and append -*- C++ -*-===//
//
// The kernels beside an sm90 attention kernel that move one element (or
// one 16-byte chunk) a thread in a grid-stride loop (TileGridKernels.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_LIB_TRANSFORMS_TILEGRIDKERNELS_H
#define FLASHATTN_LIB_TRANSFORMS_TILEGRIDKERNELS_H

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::flashattn {

/// Threads a block of the combine and of the append kernel (the runtime
/// launches them so).
constexpr int64_t kCombineThreads = 128;
constexpr int64_t kAppendThreads = 256;

/// `gpu.func @name(partial_out, partial_lse, out[, lse]) kernel` at the end
/// of `kernels`: split-KV `combine`'s merge, one element of out a thread
/// (flashattn.merge_splits), over the runtime's views [S, B, Sq, H, D],
/// [S, B, H, Sq], [B, Sq, H, D], [B, H, Sq] (varlen: B = 1, Sq = total_q).
void buildCombineKernel(CombineOp combine, OpBuilder &b, gpu::GPUModuleOp kernels,
                        StringRef name);

/// `gpu.func @name(k_new, v_new, k, v, tile_table[, page_table]) kernel`
/// at the end of `kernels`: `op`'s kv-cache append, one 16-byte chunk of
/// k_new and of v_new a thread, written at cache_seqlens[b] + r (the
/// tile table's append pairs) of the dense cache or of the sequence's
/// pages.
void buildAppendKernel(AttentionOp op, OpBuilder &b, gpu::GPUModuleOp kernels, StringRef name);

} // namespace mlir::flashattn

#endif
