// RUN: fa-run %s | FileCheck %s
// Paged KV through block_table with page sizes 1, 16 and 256, lengths that are not a multiple of the page (and 0), decode and prefill.

// CHECK: page_1 {{.*}} PASS
// CHECK: page_16 {{.*}} PASS
// CHECK: page_256 {{.*}} PASS
// CHECK: page_16_empty_seq {{.*}} PASS
// CHECK: page_16_prefill {{.*}} PASS
// CHECK: fa-run: all 5 case(s) within tolerance

func.func @page_1(%q: memref<2x3x4x64xf16>, %k: memref<400x1x2x64xf16>, %v: memref<400x1x2x64xf16>, %su: memref<2xi32> {fa.values = array<i32: 137, 1>}, %bt: memref<2x150xi32>, %o: memref<2x3x4x64xf16>, %l: memref<2x4x3xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x3x4x64xf16>, memref<400x1x2x64xf16>, memref<400x1x2x64xf16>)
      seqused_k(%su : memref<2xi32>)
      block_table(%bt : memref<2x150xi32>)
      outs(%o, %l : memref<2x3x4x64xf16>, memref<2x4x3xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}
func.func @page_16(%q: memref<2x3x4x64xbf16>, %k: memref<40x16x2x64xbf16>, %v: memref<40x16x2x64xbf16>, %su: memref<2xi32> {fa.values = array<i32: 150, 33>}, %bt: memref<2x10xi32>, %o: memref<2x3x4x64xbf16>, %l: memref<2x4x3xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x3x4x64xbf16>, memref<40x16x2x64xbf16>, memref<40x16x2x64xbf16>)
      seqused_k(%su : memref<2xi32>)
      block_table(%bt : memref<2x10xi32>)
      outs(%o, %l : memref<2x3x4x64xbf16>, memref<2x4x3xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}
func.func @page_256(%q: memref<2x3x4x64xf32>, %k: memref<4x256x2x64xf32>, %v: memref<4x256x2x64xf32>, %su: memref<2xi32> {fa.values = array<i32: 300, 511>}, %bt: memref<2x2xi32>, %o: memref<2x3x4x64xf32>, %l: memref<2x4x3xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x3x4x64xf32>, memref<4x256x2x64xf32>, memref<4x256x2x64xf32>)
      seqused_k(%su : memref<2xi32>)
      block_table(%bt : memref<2x2xi32>)
      outs(%o, %l : memref<2x3x4x64xf32>, memref<2x4x3xf32>)
  return
}
func.func @page_16_empty_seq(%q: memref<2x3x4x64xf16>, %k: memref<20x16x2x64xf16>, %v: memref<20x16x2x64xf16>, %su: memref<2xi32> {fa.values = array<i32: 0, 77>}, %bt: memref<2x8xi32>, %o: memref<2x3x4x64xf16>, %l: memref<2x4x3xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x3x4x64xf16>, memref<20x16x2x64xf16>, memref<20x16x2x64xf16>)
      seqused_k(%su : memref<2xi32>)
      block_table(%bt : memref<2x8xi32>)
      outs(%o, %l : memref<2x3x4x64xf16>, memref<2x4x3xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}
func.func @page_16_prefill(%q: memref<2x90x4x64xf16>, %k: memref<40x16x2x64xf16>, %v: memref<40x16x2x64xf16>, %su: memref<2xi32> {fa.values = array<i32: 150, 100>}, %bt: memref<2x10xi32>, %o: memref<2x90x4x64xf16>, %l: memref<2x4x90xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x90x4x64xf16>, memref<40x16x2x64xf16>, memref<40x16x2x64xf16>)
      seqused_k(%su : memref<2xi32>)
      block_table(%bt : memref<2x10xi32>)
      outs(%o, %l : memref<2x90x4x64xf16>, memref<2x4x90xf32>) {causal = #flashattn.causal<top_left>}
  return
}
