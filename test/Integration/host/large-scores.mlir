// RUN: fa-run %s | FileCheck %s
// Large scores (softmax scales of 10, 100 and 1e30): the error of the
// fused kernel grows with the scores as the naive unfused computation's
// does, so the tolerance is relative to the naive error (f32 inputs too),
// and lse is checked relative to its magnitude (docs/SEMANTICS.md,
// "Tolerance of the tests"), against the float64 reference.

// CHECK: f32_scale10 {{.*}} PASS
// CHECK: f32_scale100 {{.*}} PASS
// CHECK: bf16_scale100 {{.*}} PASS
// CHECK: f32_scale1e30 {{.*}} PASS
// CHECK: fa-run: all 4 case(s) within tolerance

func.func @f32_scale10(%q: memref<1x64x2x64xf32>, %k: memref<1x200x2x64xf32>, %v: memref<1x200x2x64xf32>, %o: memref<1x64x2x64xf32>, %l: memref<1x2x64xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xf32>, memref<1x200x2x64xf32>, memref<1x200x2x64xf32>)
      outs(%o, %l : memref<1x64x2x64xf32>, memref<1x2x64xf32>) {scale = 10.0 : f32}
  return
}
func.func @f32_scale100(%q: memref<1x64x2x64xf32>, %k: memref<1x200x2x64xf32>, %v: memref<1x200x2x64xf32>, %o: memref<1x64x2x64xf32>, %l: memref<1x2x64xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xf32>, memref<1x200x2x64xf32>, memref<1x200x2x64xf32>)
      outs(%o, %l : memref<1x64x2x64xf32>, memref<1x2x64xf32>) {scale = 100.0 : f32, causal = #flashattn.causal<bottom_right>}
  return
}
func.func @bf16_scale100(%q: memref<1x64x2x64xbf16>, %k: memref<1x200x2x64xbf16>, %v: memref<1x200x2x64xbf16>, %o: memref<1x64x2x64xbf16>, %l: memref<1x2x64xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xbf16>, memref<1x200x2x64xbf16>, memref<1x200x2x64xbf16>)
      outs(%o, %l : memref<1x64x2x64xbf16>, memref<1x2x64xf32>) {scale = 100.0 : f32}
  return
}
func.func @f32_scale1e30(%q: memref<1x64x2x64xf32>, %k: memref<1x200x2x64xf32>, %v: memref<1x200x2x64xf32>, %o: memref<1x64x2x64xf32>, %l: memref<1x2x64xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xf32>, memref<1x200x2x64xf32>, memref<1x200x2x64xf32>)
      outs(%o, %l : memref<1x64x2x64xf32>, memref<1x2x64xf32>) {scale = 1.0e30 : f32}
  return
}
