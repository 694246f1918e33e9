// RUN: fa-opt %s --flashattn-host-pipeline | FileCheck %s

// The whole host pipeline ends in the LLVM dialect only: no flashattn, scf,
// vector, memref or arith op is left, and exp2 became the LLVM intrinsic.
// CHECK: llvm.func @split_decode
// CHECK: llvm.intr.exp2
// CHECK-NOT: {{ (flashattn|scf|memref|vector|arith|math|func)\.}}
// CHECK-NOT: unrealized_conversion_cast
func.func @split_decode(%q: memref<2x1x8x64xbf16>, %k: memref<64x16x2x64xbf16>, %v: memref<64x16x2x64xbf16>,
                        %su: memref<2xi32>, %bt: memref<2x16xi32>, %o: memref<2x1x8x64xbf16>, %l: memref<2x8x1xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x16x2x64xbf16>, memref<64x16x2x64xbf16>)
      seqused_k(%su : memref<2xi32>) block_table(%bt : memref<2x16xi32>)
      outs(%o, %l : memref<2x1x8x64xbf16>, memref<2x8x1xf32>)
      {causal = #flashattn.causal<bottom_right>, softcap = 30.0 : f32, num_splits = 4}
  return
}
