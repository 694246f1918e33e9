// RUN: fa-run %s | FileCheck %s
// Window sides near INT64_MAX mean no bound: flashattn-tile takes a side of
// 2^62 keys or more as -1 (i + Sk - Sq + R would overflow i64), checked
// against the float64 reference. Just below 2^62 the side is kept.

// CHECK: right_max {{.*}} PASS
// CHECK: left_max_sq_above_sk {{.*}} PASS
// CHECK: both_2_62_causal {{.*}} PASS
// CHECK: right_below_2_62 {{.*}} PASS
// CHECK: fa-run: all 4 case(s) within tolerance

func.func @right_max(%q: memref<1x128x4x64xf16>, %k: memref<1x128x4x64xf16>, %v: memref<1x128x4x64xf16>, %o: memref<1x128x4x64xf16>, %l: memref<1x4x128xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x128x4x64xf16>, memref<1x128x4x64xf16>, memref<1x128x4x64xf16>)
      outs(%o, %l : memref<1x128x4x64xf16>, memref<1x4x128xf32>) {window_size = array<i64: -1, 9223372036854775807>}
  return
}
func.func @left_max_sq_above_sk(%q: memref<1x256x2x64xbf16>, %k: memref<1x64x2x64xbf16>, %v: memref<1x64x2x64xbf16>, %o: memref<1x256x2x64xbf16>, %l: memref<1x2x256xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x256x2x64xbf16>, memref<1x64x2x64xbf16>, memref<1x64x2x64xbf16>)
      outs(%o, %l : memref<1x256x2x64xbf16>, memref<1x2x256xf32>) {window_size = array<i64: 9223372036854775807, 0>}
  return
}
func.func @both_2_62_causal(%q: memref<1x128x4x64xf16>, %k: memref<1x127x4x64xf16>, %v: memref<1x127x4x64xf16>, %o: memref<1x128x4x64xf16>, %l: memref<1x4x128xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x128x4x64xf16>, memref<1x127x4x64xf16>, memref<1x127x4x64xf16>)
      outs(%o, %l : memref<1x128x4x64xf16>, memref<1x4x128xf32>) {window_size = array<i64: 4611686018427387904, 4611686018427387904>, causal = #flashattn.causal<bottom_right>}
  return
}
func.func @right_below_2_62(%q: memref<1x64x2x64xf32>, %k: memref<1x96x2x64xf32>, %v: memref<1x96x2x64xf32>, %o: memref<1x64x2x64xf32>, %l: memref<1x2x64xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xf32>, memref<1x96x2x64xf32>, memref<1x96x2x64xf32>)
      outs(%o, %l : memref<1x64x2x64xf32>, memref<1x2x64xf32>) {window_size = array<i64: 16, 4611686018427387903>}
  return
}
