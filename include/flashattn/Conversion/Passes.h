//===- Passes.h - flashattn conversion passes -------------------*- C++ -*-===//
//
// convert-flashattn-to-vector (the host conversion) and its patterns.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_CONVERSION_PASSES_H
#define FLASHATTN_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
namespace flashattn {

#define GEN_PASS_DECL
#include "flashattn/Conversion/Passes.h.inc"

/// Lowers the tile-level ops and flashattn.combine (memref form) to
/// scf/vector/memref/arith/math.
void populateFlashAttnToVectorConversionPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "flashattn/Conversion/Passes.h.inc"

} // namespace flashattn
} // namespace mlir

#endif // FLASHATTN_CONVERSION_PASSES_H
