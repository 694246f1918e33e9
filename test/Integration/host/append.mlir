// RUN: fa-run %s | FileCheck %s
// kv-cache append (cache_seqlens counts keys before the append), dense and paged, then attend over cache_seqlens + S_new keys; including an append that fills the cache exactly and one into an empty cache.

// CHECK: append_dense {{.*}} PASS
// CHECK: append_dense_full {{.*}} PASS
// CHECK: append_paged_16 {{.*}} PASS
// CHECK: append_paged_random {{.*}} PASS
// CHECK: append_decode_1 {{.*}} PASS
// CHECK: fa-run: all 5 case(s) within tolerance

func.func @append_dense(%q: memref<2x3x4x64xf16>, %k: memref<2x96x2x64xf16>, %v: memref<2x96x2x64xf16>, %kn: memref<2x3x2x64xf16>, %vn: memref<2x3x2x64xf16>, %cs: memref<2xi32> {fa.values = array<i32: 10, 50>}, %o: memref<2x3x4x64xf16>, %l: memref<2x4x3xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x3x4x64xf16>, memref<2x96x2x64xf16>, memref<2x96x2x64xf16>)
      k_new(%kn : memref<2x3x2x64xf16>)
      v_new(%vn : memref<2x3x2x64xf16>)
      cache_seqlens(%cs : memref<2xi32>)
      outs(%o, %l : memref<2x3x4x64xf16>, memref<2x4x3xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}
func.func @append_dense_full(%q: memref<2x3x4x64xbf16>, %k: memref<2x96x2x64xbf16>, %v: memref<2x96x2x64xbf16>, %kn: memref<2x3x2x64xbf16>, %vn: memref<2x3x2x64xbf16>, %cs: memref<2xi32> {fa.values = array<i32: 93, 0>}, %o: memref<2x3x4x64xbf16>, %l: memref<2x4x3xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x3x4x64xbf16>, memref<2x96x2x64xbf16>, memref<2x96x2x64xbf16>)
      k_new(%kn : memref<2x3x2x64xbf16>)
      v_new(%vn : memref<2x3x2x64xbf16>)
      cache_seqlens(%cs : memref<2xi32>)
      outs(%o, %l : memref<2x3x4x64xbf16>, memref<2x4x3xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}
func.func @append_paged_16(%q: memref<2x3x4x64xf16>, %k: memref<12x16x2x64xf16>, %v: memref<12x16x2x64xf16>, %su: memref<2xi32> {fa.values = array<i32: 0, 0>}, %bt: memref<2x6xi32>, %kn: memref<2x3x2x64xf16>, %vn: memref<2x3x2x64xf16>, %cs: memref<2xi32> {fa.values = array<i32: 30, 0>}, %o: memref<2x3x4x64xf16>, %l: memref<2x4x3xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x3x4x64xf16>, memref<12x16x2x64xf16>, memref<12x16x2x64xf16>)
      seqused_k(%su : memref<2xi32>)
      block_table(%bt : memref<2x6xi32>)
      k_new(%kn : memref<2x3x2x64xf16>)
      v_new(%vn : memref<2x3x2x64xf16>)
      cache_seqlens(%cs : memref<2xi32>)
      outs(%o, %l : memref<2x3x4x64xf16>, memref<2x4x3xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}
func.func @append_paged_random(%q: memref<2x3x4x64xf32>, %k: memref<12x16x2x64xf32>, %v: memref<12x16x2x64xf32>, %su: memref<2xi32> {fa.values = array<i32: 0, 0>}, %bt: memref<2x6xi32>, %kn: memref<2x3x2x64xf32>, %vn: memref<2x3x2x64xf32>, %cs: memref<2xi32>, %o: memref<2x3x4x64xf32>, %l: memref<2x4x3xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x3x4x64xf32>, memref<12x16x2x64xf32>, memref<12x16x2x64xf32>)
      seqused_k(%su : memref<2xi32>)
      block_table(%bt : memref<2x6xi32>)
      k_new(%kn : memref<2x3x2x64xf32>)
      v_new(%vn : memref<2x3x2x64xf32>)
      cache_seqlens(%cs : memref<2xi32>)
      outs(%o, %l : memref<2x3x4x64xf32>, memref<2x4x3xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}
func.func @append_decode_1(%q: memref<2x1x4x64xbf16>, %k: memref<2x96x2x64xbf16>, %v: memref<2x96x2x64xbf16>, %kn: memref<2x1x2x64xbf16>, %vn: memref<2x1x2x64xbf16>, %cs: memref<2xi32> {fa.values = array<i32: 95, 7>}, %o: memref<2x1x4x64xbf16>, %l: memref<2x4x1xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x1x4x64xbf16>, memref<2x96x2x64xbf16>, memref<2x96x2x64xbf16>)
      k_new(%kn : memref<2x1x2x64xbf16>)
      v_new(%vn : memref<2x1x2x64xbf16>)
      cache_seqlens(%cs : memref<2xi32>)
      outs(%o, %l : memref<2x1x4x64xbf16>, memref<2x4x1xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}
