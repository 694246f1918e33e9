// The IR builders (lib/Conversion/FlashAttnToNVGPU/Sm90KernelBuilder.cpp)
// give byte for byte the PTX of the MLIR-text generator (Sm90Kernel.cpp),
// for every configuration the GPU tests compile
// (test/gpu/build_sm90_artifacts.sh): dense, causal, windows, softcap,
// regions, split-KV, pack_gqa, varlen, seqused_k, paged (TMA boxes, page
// panels, per-row copies) and kv-cache append. PTX needs only LLVM's NVPTX
// back end (no ptxas).
// RUN: rm -rf %t && mkdir -p %t
// RUN: cd %fa_src && env FA_COMPARE_GENERATORS=1 FA_OUT=%t sh test/gpu/build_sm90_artifacts.sh %fa_obj | FileCheck %s
// CHECK: same PTX: d128_bf16_none_h8x2
// CHECK: same PTX: d128_bf16_bottom_right_h8x2_s3
// CHECK: same PTX: d128_bf16_bottom_right_h8x2_rbias
// CHECK: same PTX: d128_bf16_bottom_right_h32x8_s0_p_u_g16
// CHECK: same PTX: d128_bf16_bottom_right_h32x8_s0_p_u_g1
// CHECK: same PTX: d128_bf16_bottom_right_h32x8_s0_p_u_g64_a
// CHECK-NOT: DIFFERENT
