// RUN: fa-run %s | FileCheck %s
// Split-KV with 1..8 splits merged by flashattn.combine, including splits with no keys (more splits than key blocks, causal rows whose keys end early), with and without lse.

// CHECK: splits_1 {{.*}} PASS
// CHECK: splits_2 {{.*}} PASS
// CHECK: splits_3 {{.*}} PASS
// CHECK: splits_4 {{.*}} PASS
// CHECK: splits_5 {{.*}} PASS
// CHECK: splits_6 {{.*}} PASS
// CHECK: splits_7 {{.*}} PASS
// CHECK: splits_8_more_than_blocks {{.*}} PASS
// CHECK: splits_8_causal_prefill {{.*}} PASS
// CHECK: splits_4_no_lse {{.*}} PASS
// CHECK: splits_3_varlen_padding {{.*}} PASS
// CHECK: fa-run: all 11 case(s) within tolerance

func.func @splits_1(%q: memref<2x4x4x64xf16>, %k: memref<2x300x2x64xf16>, %v: memref<2x300x2x64xf16>, %o: memref<2x4x4x64xf16>, %l: memref<2x4x4xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x4x4x64xf16>, memref<2x300x2x64xf16>, memref<2x300x2x64xf16>)
      outs(%o, %l : memref<2x4x4x64xf16>, memref<2x4x4xf32>) {causal = #flashattn.causal<bottom_right>, num_splits = 1}
  return
}
func.func @splits_2(%q: memref<2x4x4x64xbf16>, %k: memref<2x300x2x64xbf16>, %v: memref<2x300x2x64xbf16>, %o: memref<2x4x4x64xbf16>, %l: memref<2x4x4xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x4x4x64xbf16>, memref<2x300x2x64xbf16>, memref<2x300x2x64xbf16>)
      outs(%o, %l : memref<2x4x4x64xbf16>, memref<2x4x4xf32>) {causal = #flashattn.causal<bottom_right>, num_splits = 2}
  return
}
func.func @splits_3(%q: memref<2x4x4x64xf32>, %k: memref<2x300x2x64xf32>, %v: memref<2x300x2x64xf32>, %o: memref<2x4x4x64xf32>, %l: memref<2x4x4xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x4x4x64xf32>, memref<2x300x2x64xf32>, memref<2x300x2x64xf32>)
      outs(%o, %l : memref<2x4x4x64xf32>, memref<2x4x4xf32>) {causal = #flashattn.causal<bottom_right>, num_splits = 3}
  return
}
func.func @splits_4(%q: memref<2x4x4x64xf16>, %k: memref<2x300x2x64xf16>, %v: memref<2x300x2x64xf16>, %o: memref<2x4x4x64xf16>, %l: memref<2x4x4xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x4x4x64xf16>, memref<2x300x2x64xf16>, memref<2x300x2x64xf16>)
      outs(%o, %l : memref<2x4x4x64xf16>, memref<2x4x4xf32>) {causal = #flashattn.causal<bottom_right>, num_splits = 4}
  return
}
func.func @splits_5(%q: memref<2x4x4x64xf16>, %k: memref<2x500x2x64xf16>, %v: memref<2x500x2x64xf16>, %o: memref<2x4x4x64xf16>, %l: memref<2x4x4xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x4x4x64xf16>, memref<2x500x2x64xf16>, memref<2x500x2x64xf16>)
      outs(%o, %l : memref<2x4x4x64xf16>, memref<2x4x4xf32>) {causal = #flashattn.causal<bottom_right>, num_splits = 5}
  return
}
func.func @splits_6(%q: memref<2x4x4x64xbf16>, %k: memref<2x300x2x64xbf16>, %v: memref<2x300x2x64xbf16>, %o: memref<2x4x4x64xbf16>, %l: memref<2x4x4xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x4x4x64xbf16>, memref<2x300x2x64xbf16>, memref<2x300x2x64xbf16>)
      outs(%o, %l : memref<2x4x4x64xbf16>, memref<2x4x4xf32>) {causal = #flashattn.causal<bottom_right>, num_splits = 6}
  return
}
func.func @splits_7(%q: memref<2x4x4x64xf16>, %k: memref<2x700x2x64xf16>, %v: memref<2x700x2x64xf16>, %o: memref<2x4x4x64xf16>, %l: memref<2x4x4xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x4x4x64xf16>, memref<2x700x2x64xf16>, memref<2x700x2x64xf16>)
      outs(%o, %l : memref<2x4x4x64xf16>, memref<2x4x4xf32>) {causal = #flashattn.causal<bottom_right>, num_splits = 7}
  return
}
func.func @splits_8_more_than_blocks(%q: memref<2x4x4x64xf32>, %k: memref<2x100x2x64xf32>, %v: memref<2x100x2x64xf32>, %o: memref<2x4x4x64xf32>, %l: memref<2x4x4xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x4x4x64xf32>, memref<2x100x2x64xf32>, memref<2x100x2x64xf32>)
      outs(%o, %l : memref<2x4x4x64xf32>, memref<2x4x4xf32>) {causal = #flashattn.causal<bottom_right>, num_splits = 8}
  return
}
func.func @splits_8_causal_prefill(%q: memref<2x120x4x64xf16>, %k: memref<2x200x2x64xf16>, %v: memref<2x200x2x64xf16>, %o: memref<2x120x4x64xf16>, %l: memref<2x4x120xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x120x4x64xf16>, memref<2x200x2x64xf16>, memref<2x200x2x64xf16>)
      outs(%o, %l : memref<2x120x4x64xf16>, memref<2x4x120xf32>) {causal = #flashattn.causal<top_left>, num_splits = 8}
  return
}
func.func @splits_4_no_lse(%q: memref<2x4x4x64xf16>, %k: memref<2x300x2x64xf16>, %v: memref<2x300x2x64xf16>, %o: memref<2x4x4x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x4x4x64xf16>, memref<2x300x2x64xf16>, memref<2x300x2x64xf16>)
      outs(%o : memref<2x4x4x64xf16>) {causal = #flashattn.causal<bottom_right>, num_splits = 4}
  return
}

// Packed q longer than its sequences (rows 70..99 belong to none): the
// partial lse starts at -inf, so the combine never weighs unwritten rows.
func.func @splits_3_varlen_padding(%q: memref<100x4x64xf32>, %k: memref<300x2x64xf32>, %v: memref<300x2x64xf32>,
    %cq: memref<3xi32> {fa.values = array<i32: 0, 40, 70>},
    %ck: memref<3xi32> {fa.values = array<i32: 0, 130, 300>},
    %o: memref<100x4x64xf32>, %l: memref<4x100xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<100x4x64xf32>, memref<300x2x64xf32>, memref<300x2x64xf32>)
      cu_seqlens_q(%cq : memref<3xi32>) cu_seqlens_k(%ck : memref<3xi32>)
      outs(%o, %l : memref<100x4x64xf32>, memref<4x100xf32>)
      {causal = #flashattn.causal<bottom_right>, num_splits = 3}
  return
}
