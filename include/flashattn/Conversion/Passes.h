//===- Passes.h - flashattn conversion passes -------------------*- C++ -*-===//
//
// convert-flashattn-to-vector (the host conversion) and its patterns.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_CONVERSION_PASSES_H
#define FLASHATTN_CONVERSION_PASSES_H

#include "flashattn/Conversion/FlashAttnToNVGPU/Sm90Kernel.h"
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

/// Code-generation choices of convert-flashattn-to-nvgpu the plan does not
/// carry: nullopt = automatic, else forced on or off.
struct Sm90CodegenOptions {
  /// Split-KV partial form: also emit a dense kernel (`<name>_dense`,
  /// writing out / lse directly) for launches whose split count is 1 (the
  /// automatic count at launch).
  bool denseEntry = false;
  /// Automatic pack_gqa (Hq > Hkv, the plan did not pack): also emit the
  /// kernels with the query heads packed (`<name>_packed`,
  /// `<name>_dense_packed`), for launches that fit a tile.
  bool packedEntry = false;
  /// The unpipelined one-warpgroup kernel (buildSm90UnpipelinedKernel)
  /// instead of the pipelined warp-specialized one: the reference form.
  bool unpipelined = false;
};

/// convert-flashattn-to-nvgpu: planned sm90 attention -> a gpu.module with
/// the sm_90a kernels, named on the op (attribute flashattn.sm90, a
/// #flashattn.sm90_entries with each entry's #flashattn.kernel_abi).
void populateFlashAttnToNVGPUConversionPatterns(
    RewritePatternSet &patterns, const Sm90CodegenOptions &options = {});

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
