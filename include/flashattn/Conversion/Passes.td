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

def ConvertFlashAttnToNVGPU : Pass<"convert-flashattn-to-nvgpu", "::mlir::ModuleOp"> {
  let summary = "Generate sm_90a kernels (TMA + WGMMA) for planned attention";
  let description = [{
    For every `flashattn.attention` planned for `sm90` (memref form), adds a
    `gpu.module` holding an sm_90a kernel in the LLVM/NVVM dialects and names
    it on the op (`flashattn.sm90_kernel = @module::@kernel`); the op stays
    as the host-side description of the launch (the runtime launches the
    kernel with the op's operands). The kernel (shared/SM90-KERNEL.md,
    FlashAttention-3): one warpgroup per CTA over 64-row query tiles, a
    persistent grid, Q/K/V by TMA into 128-byte-swizzled shared memory with
    2 K/V stages guarded by mbarriers, S = Q K^T and O += P V by wgmma (P in
    registers), the online softmax on the accumulator fragments, out and lse
    written from registers. Supported now: dense bf16/f16 q/k/v, head_dim 64,
    128 or 256 (= head_dim_v), GQA/MQA, causal top_left/bottom_right,
    sliding windows, softcap, lse, plan block_m = block_n = 64, and split-KV
    in the partial form of `flashattn-split-kv`: the partial op's kernel
    writes f32 partial out / lse per (tile, split), and the
    `flashattn.combine` that reads them becomes a second kernel of the same
    gpu.module (`flashattn.sm90_kernel` on the combine names it). Anything
    else (varlen, paged, append, ALiBi, split-KV not yet in the partial
    form) is reported. Score and mask regions are inlined into the kernel at
    every score (the mask on every key block, so it never skips blocks) when
    they use only their arguments, constants and arith ops; regions that
    read values from outside (bias tables) are reported.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
}

#endif // FLASHATTN_CONVERSION_PASSES
