//===- Passes.td - flashattn conversion passes -------------*- tablegen -*-===//

#ifndef FLASHATTN_CONVERSION_PASSES
#define FLASHATTN_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def ConvertFlashAttnToVector : Pass<"convert-flashattn-to-vector"> {
  let summary = "Lower the flashattn tile ops and combine to scf/vector/memref";
  let description = [{
    The host conversion: each tile-level op becomes scf.for loops over rows
    whose bodies use vector ops along the contiguous dimension (head_dim or
    the key block), arith and math.exp2 / math.log; `flashattn.combine`
    becomes a loop over output rows (DESIGN.md section 1: empty splits weigh
    0, all empty gives 0 and -inf). The result lowers to LLVM with upstream
    passes (see `flashattn-host-pipeline`).
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

#endif // FLASHATTN_CONVERSION_PASSES
