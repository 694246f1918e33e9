// RUN: fa-run %s | FileCheck %s
// Dense attention: MHA in f32/f16/bf16, GQA 4:1 and MQA, head_dim 64/96/128/192/256, head_dim_v 128 with head_dim 192, lse.

// CHECK: mha_f32 {{.*}} PASS
// CHECK: mha_f16 {{.*}} PASS
// CHECK: mha_bf16 {{.*}} PASS
// CHECK: gqa_32_8 {{.*}} PASS
// CHECK: mqa {{.*}} PASS
// CHECK: hd96 {{.*}} PASS
// CHECK: hd128 {{.*}} PASS
// CHECK: hd192_dv128 {{.*}} PASS
// CHECK: hd256 {{.*}} PASS
// CHECK: no_lse_f32_out {{.*}} PASS
// CHECK: explicit_scale {{.*}} PASS
// CHECK: fa-run: all 11 case(s) within tolerance

func.func @mha_f32(%q: memref<2x77x4x64xf32>, %k: memref<2x93x4x64xf32>, %v: memref<2x93x4x64xf32>, %o: memref<2x77x4x64xf32>, %l: memref<2x4x77xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x77x4x64xf32>, memref<2x93x4x64xf32>, memref<2x93x4x64xf32>)
      outs(%o, %l : memref<2x77x4x64xf32>, memref<2x4x77xf32>)
  return
}
func.func @mha_f16(%q: memref<2x77x4x64xf16>, %k: memref<2x93x4x64xf16>, %v: memref<2x93x4x64xf16>, %o: memref<2x77x4x64xf16>, %l: memref<2x4x77xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x77x4x64xf16>, memref<2x93x4x64xf16>, memref<2x93x4x64xf16>)
      outs(%o, %l : memref<2x77x4x64xf16>, memref<2x4x77xf32>)
  return
}
func.func @mha_bf16(%q: memref<2x77x4x64xbf16>, %k: memref<2x93x4x64xbf16>, %v: memref<2x93x4x64xbf16>, %o: memref<2x77x4x64xbf16>, %l: memref<2x4x77xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x77x4x64xbf16>, memref<2x93x4x64xbf16>, memref<2x93x4x64xbf16>)
      outs(%o, %l : memref<2x77x4x64xbf16>, memref<2x4x77xf32>)
  return
}
func.func @gqa_32_8(%q: memref<1x40x32x64xbf16>, %k: memref<1x70x8x64xbf16>, %v: memref<1x70x8x64xbf16>, %o: memref<1x40x32x64xbf16>, %l: memref<1x32x40xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x40x32x64xbf16>, memref<1x70x8x64xbf16>, memref<1x70x8x64xbf16>)
      outs(%o, %l : memref<1x40x32x64xbf16>, memref<1x32x40xf32>)
  return
}
func.func @mqa(%q: memref<2x33x8x64xf16>, %k: memref<2x65x1x64xf16>, %v: memref<2x65x1x64xf16>, %o: memref<2x33x8x64xf16>, %l: memref<2x8x33xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x33x8x64xf16>, memref<2x65x1x64xf16>, memref<2x65x1x64xf16>)
      outs(%o, %l : memref<2x33x8x64xf16>, memref<2x8x33xf32>)
  return
}
func.func @hd96(%q: memref<1x50x2x96xf16>, %k: memref<1x70x2x96xf16>, %v: memref<1x70x2x96xf16>, %o: memref<1x50x2x96xf16>, %l: memref<1x2x50xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x50x2x96xf16>, memref<1x70x2x96xf16>, memref<1x70x2x96xf16>)
      outs(%o, %l : memref<1x50x2x96xf16>, memref<1x2x50xf32>)
  return
}
func.func @hd128(%q: memref<1x50x2x128xbf16>, %k: memref<1x130x1x128xbf16>, %v: memref<1x130x1x128xbf16>, %o: memref<1x50x2x128xbf16>, %l: memref<1x2x50xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x50x2x128xbf16>, memref<1x130x1x128xbf16>, memref<1x130x1x128xbf16>)
      outs(%o, %l : memref<1x50x2x128xbf16>, memref<1x2x50xf32>)
  return
}
func.func @hd192_dv128(%q: memref<1x50x2x192xbf16>, %k: memref<1x70x2x192xbf16>, %v: memref<1x70x2x128xbf16>, %o: memref<1x50x2x128xbf16>, %l: memref<1x2x50xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x50x2x192xbf16>, memref<1x70x2x192xbf16>, memref<1x70x2x128xbf16>)
      outs(%o, %l : memref<1x50x2x128xbf16>, memref<1x2x50xf32>)
  return
}
func.func @hd256(%q: memref<1x50x2x256xf16>, %k: memref<1x70x2x256xf16>, %v: memref<1x70x2x256xf16>, %o: memref<1x50x2x256xf16>, %l: memref<1x2x50xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x50x2x256xf16>, memref<1x70x2x256xf16>, memref<1x70x2x256xf16>)
      outs(%o, %l : memref<1x50x2x256xf16>, memref<1x2x50xf32>)
  return
}
func.func @no_lse_f32_out(%q: memref<1x30x2x64xbf16>, %k: memref<1x30x2x64xbf16>, %v: memref<1x30x2x64xbf16>, %o: memref<1x30x2x64xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x30x2x64xbf16>, memref<1x30x2x64xbf16>, memref<1x30x2x64xbf16>)
      outs(%o : memref<1x30x2x64xf32>)
  return
}
func.func @explicit_scale(%q: memref<1x30x2x64xf32>, %k: memref<1x100x2x64xf32>, %v: memref<1x100x2x64xf32>, %o: memref<1x30x2x64xf32>, %l: memref<1x2x30xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x30x2x64xf32>, memref<1x100x2x64xf32>, memref<1x100x2x64xf32>)
      outs(%o, %l : memref<1x30x2x64xf32>, memref<1x2x30xf32>) {scale = 0.3 : f32}
  return
}
