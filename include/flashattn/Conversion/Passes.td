//===- Passes.td - flashattn conversion passes -------------*- tablegen -*-===//

#ifndef FLASHATTN_CONVERSION_PASSES
#define FLASHATTN_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def ConvertFlashAttnToVector : Pass<"convert-flashattn-to-vector"> {
  let summary = "Lower the flashattn tile ops and combine to scf/vector/memref";
  let description = [{
    The host conversion: each tile-level op becomes scf.for loops over rows
    whose bodies use vector ops along the contiguous dimension (head_dim or
    the key block), arith and math.exp2 / math.log; the two tile GEMMs become
    a register-blocked micro-kernel (8 rows x `vector-bits` / 32 columns of
    accumulators, K transposed once for Q K^T); `flashattn.combine`
    becomes a loop over output rows (DESIGN.md section 1: empty splits weigh
    0, all empty gives 0 and -inf). The result lowers to LLVM with upstream
    passes (see `flashattn-host-pipeline`).
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "int64_t", /*default=*/"256",
           "width of the target's vector registers in bits (256: AVX2, 512: "
           "AVX-512): the tile GEMMs keep 8 rows x one register of columns "
           "in registers">
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

#endif // FLASHATTN_CONVERSION_PASSES
