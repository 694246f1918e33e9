//===- Passes.h - flashattn conversion passes -------------------*- C++ -*-===//
//
// The conversions: convert-flashattn-to-vector (the host), and the sm90
// kernels' flashattn-sm90-warpgroup, flashattn-lower-warp-specialize and
// convert-flashattn-sm90-to-nvvm, with their patterns.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_CONVERSION_PASSES_H
#define FLASHATTN_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

#include <optional>

namespace mlir {
class RewritePatternSet;
namespace flashattn {

#define GEN_PASS_DECL
#include "flashattn/Conversion/Passes.h.inc"

/// Lowers the tile-level ops and flashattn.combine (memref form) to
/// scf/vector/memref/arith/math; `vectorBits` is the width of the target's
/// vector registers (256 for AVX2, 512 for AVX-512).
void populateFlashAttnToVectorConversionPatterns(RewritePatternSet &patterns,
                                                 int64_t vectorBits = 256);

/// flashattn-lower-warp-specialize: flashattn.warp_specialize -> scf.if on
/// the warpgroup index with setmaxnreg on each side.
void populateFlashAttnLowerWarpSpecializePatterns(RewritePatternSet &patterns);

/// convert-flashattn-sm90-to-nvvm: flashattn.wgmma_rs -> inline PTX.
void populateFlashAttnSm90ToNVVMPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "flashattn/Conversion/Passes.h.inc"

} // namespace flashattn
} // namespace mlir

#endif // FLASHATTN_CONVERSION_PASSES_H
