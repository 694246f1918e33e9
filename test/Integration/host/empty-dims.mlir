// RUN: fa-run %s | FileCheck %s
// Statically empty extents and unit dimensions on the host path, against
// the float64 reference (outputs poisoned with NaN first): no keys gives out
// 0 and lse -inf; no queries writes nothing; head_dim 1 with one key; a
// pool of no page with a block_table of no column holds no key (out 0, lse
// -inf).

// CHECK: no_keys {{.*}} PASS
// CHECK: no_queries {{.*}} PASS
// CHECK: head_dim_1 {{.*}} PASS
// CHECK: head_dim_1_causal {{.*}} PASS
// CHECK: pool_of_no_page {{.*}} PASS
// CHECK: fa-run: all 5 case(s) within tolerance

func.func @no_keys(%q: memref<2x5x2x64xf16>, %k: memref<2x0x2x64xf16>, %v: memref<2x0x2x64xf16>, %o: memref<2x5x2x64xf16>, %l: memref<2x2x5xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x5x2x64xf16>, memref<2x0x2x64xf16>, memref<2x0x2x64xf16>) outs(%o, %l : memref<2x5x2x64xf16>, memref<2x2x5xf32>)
  return
}
func.func @no_queries(%q: memref<2x0x2x64xf16>, %k: memref<2x7x2x64xf16>, %v: memref<2x7x2x64xf16>, %o: memref<2x0x2x64xf16>, %l: memref<2x2x0xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x0x2x64xf16>, memref<2x7x2x64xf16>, memref<2x7x2x64xf16>) outs(%o, %l : memref<2x0x2x64xf16>, memref<2x2x0xf32>)
  return
}
func.func @head_dim_1(%q: memref<1x64x2x1xf32>, %k: memref<1x1x2x1xf32>, %v: memref<1x1x2x1xf32>, %o: memref<1x64x2x1xf32>, %l: memref<1x2x64xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x1xf32>, memref<1x1x2x1xf32>, memref<1x1x2x1xf32>) outs(%o, %l : memref<1x64x2x1xf32>, memref<1x2x64xf32>)
  return
}
func.func @head_dim_1_causal(%q: memref<1x3x1x1xf16>, %k: memref<1x5x1x1xf16>, %v: memref<1x5x1x1xf16>, %o: memref<1x3x1x1xf16>, %l: memref<1x1x3xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x3x1x1xf16>, memref<1x5x1x1xf16>, memref<1x5x1x1xf16>) outs(%o, %l : memref<1x3x1x1xf16>, memref<1x1x3xf32>) {causal = #flashattn.causal<top_left>}
  return
}
func.func @pool_of_no_page(%q: memref<1x3x2x64xf16>, %k: memref<0x16x2x64xf16>, %v: memref<0x16x2x64xf16>,
    %su: memref<1xi32>, %bt: memref<1x0xi32>, %o: memref<1x3x2x64xf16>, %l: memref<1x2x3xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x3x2x64xf16>, memref<0x16x2x64xf16>, memref<0x16x2x64xf16>)
      seqused_k(%su : memref<1xi32>) block_table(%bt : memref<1x0xi32>)
      outs(%o, %l : memref<1x3x2x64xf16>, memref<1x2x3xf32>)
  return
}
