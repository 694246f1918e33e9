// RUN: fa-run %s | FileCheck %s
// Packed varlen batches: uneven lengths with sequences of zero queries and of zero keys, seqused_k over packed keys, GQA, causal, and packed q over a dense (batched) kv.

// CHECK: varlen_uneven {{.*}} PASS
// CHECK: varlen_zero_q_and_k {{.*}} PASS
// CHECK: varlen_seqused_k {{.*}} PASS
// CHECK: varlen_random {{.*}} PASS
// CHECK: varlen_q_dense_k {{.*}} PASS
// CHECK: fa-run: all 5 case(s) within tolerance

func.func @varlen_uneven(%q: memref<150x4x64xf16>, %k: memref<220x2x64xf16>, %v: memref<220x2x64xf16>, %cq: memref<5xi32> {fa.values = array<i32: 0, 1, 71, 71, 150>}, %ck: memref<5xi32> {fa.values = array<i32: 0, 90, 90, 130, 220>}, %o: memref<150x4x64xf16>, %l: memref<4x150xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<150x4x64xf16>, memref<220x2x64xf16>, memref<220x2x64xf16>)
      cu_seqlens_q(%cq : memref<5xi32>)
      cu_seqlens_k(%ck : memref<5xi32>)
      outs(%o, %l : memref<150x4x64xf16>, memref<4x150xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}
func.func @varlen_zero_q_and_k(%q: memref<100x2x64xf32>, %k: memref<100x2x64xf32>, %v: memref<100x2x64xf32>, %cq: memref<4xi32> {fa.values = array<i32: 0, 0, 60, 100>}, %ck: memref<4xi32> {fa.values = array<i32: 0, 50, 50, 100>}, %o: memref<100x2x64xf32>, %l: memref<2x100xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<100x2x64xf32>, memref<100x2x64xf32>, memref<100x2x64xf32>)
      cu_seqlens_q(%cq : memref<4xi32>)
      cu_seqlens_k(%ck : memref<4xi32>)
      outs(%o, %l : memref<100x2x64xf32>, memref<2x100xf32>) {causal = #flashattn.causal<top_left>}
  return
}
func.func @varlen_seqused_k(%q: memref<120x4x64xbf16>, %k: memref<200x4x64xbf16>, %v: memref<200x4x64xbf16>, %cq: memref<3xi32> {fa.values = array<i32: 0, 64, 120>}, %ck: memref<3xi32> {fa.values = array<i32: 0, 100, 200>}, %su: memref<2xi32> {fa.values = array<i32: 37, 0>}, %o: memref<120x4x64xbf16>, %l: memref<4x120xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<120x4x64xbf16>, memref<200x4x64xbf16>, memref<200x4x64xbf16>)
      cu_seqlens_q(%cq : memref<3xi32>)
      cu_seqlens_k(%ck : memref<3xi32>)
      seqused_k(%su : memref<2xi32>)
      outs(%o, %l : memref<120x4x64xbf16>, memref<4x120xf32>)
  return
}
func.func @varlen_random(%q: memref<300x8x64xf16>, %k: memref<300x2x64xf16>, %v: memref<300x2x64xf16>, %cq: memref<7xi32>, %ck: memref<7xi32>, %o: memref<300x8x64xf16>, %l: memref<8x300xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<300x8x64xf16>, memref<300x2x64xf16>, memref<300x2x64xf16>)
      cu_seqlens_q(%cq : memref<7xi32>)
      cu_seqlens_k(%ck : memref<7xi32>)
      outs(%o, %l : memref<300x8x64xf16>, memref<8x300xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}
func.func @varlen_q_dense_k(%q: memref<50x4x64xf16>, %k: memref<2x80x4x64xf16>, %v: memref<2x80x4x64xf16>, %cq: memref<3xi32> {fa.values = array<i32: 0, 1, 50>}, %o: memref<50x4x64xf16>, %l: memref<4x50xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<50x4x64xf16>, memref<2x80x4x64xf16>, memref<2x80x4x64xf16>)
      cu_seqlens_q(%cq : memref<3xi32>)
      outs(%o, %l : memref<50x4x64xf16>, memref<4x50xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}
