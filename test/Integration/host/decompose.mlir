// RUN: fa-run --decompose %s | FileCheck %s
// RUN: fa-run %s | FileCheck %s
// RUN: fa-run --tile-sizes=0,0,7 %s | FileCheck %s
// RUN: fa-run --decompose --tile-sizes=0,0,16 %s | FileCheck %s
// flashattn-decompose-to-linalg then upstream's linalg lowering (the first
// run) against the same float64 reference as flashattn's own host lowering
// (the second), on the same seeded inputs, then both on tiles of query rows
// (each tile's op with q_start and seqlen_q, the positional cases included): GQA under bottom-right causal
// with more queries than keys (empty rows: out 0, lse -inf), a window with
// softcap, ALiBi per batch and head, score and mask regions with top-left
// causal and an f32 out, a mask that removes every key, window sides so
// large that they bound nothing (2^63 - 1: as -1).

// CHECK: gqa_causal_empty_rows {{.*}} PASS
// CHECK: window_softcap {{.*}} PASS
// CHECK: alibi_batch_heads {{.*}} PASS
// CHECK: regions_top_left_f32_out {{.*}} PASS
// CHECK: mask_removes_all {{.*}} PASS
// CHECK: huge_window_sides {{.*}} PASS
// CHECK: fa-run: all 6 case(s) within tolerance

func.func @gqa_causal_empty_rows(%q: tensor<2x40x4x64xbf16>, %k: tensor<2x30x2x64xbf16>, %v: tensor<2x30x2x64xbf16>, %o: tensor<2x40x4x64xbf16>, %l: tensor<2x4x40xf32>) -> (tensor<2x40x4x64xbf16>, tensor<2x4x40xf32>) {
  %r:2 = flashattn.attention ins(%q, %k, %v : tensor<2x40x4x64xbf16>, tensor<2x30x2x64xbf16>, tensor<2x30x2x64xbf16>)
      outs(%o, %l : tensor<2x40x4x64xbf16>, tensor<2x4x40xf32>) {causal = #flashattn.causal<bottom_right>} -> tensor<2x40x4x64xbf16>, tensor<2x4x40xf32>
  return %r#0, %r#1 : tensor<2x40x4x64xbf16>, tensor<2x4x40xf32>
}
func.func @window_softcap(%q: tensor<1x50x2x32xf16>, %k: tensor<1x70x2x32xf16>, %v: tensor<1x70x2x32xf16>, %o: tensor<1x50x2x32xf16>, %l: tensor<1x2x50xf32>) -> (tensor<1x50x2x32xf16>, tensor<1x2x50xf32>) {
  %r:2 = flashattn.attention ins(%q, %k, %v : tensor<1x50x2x32xf16>, tensor<1x70x2x32xf16>, tensor<1x70x2x32xf16>)
      outs(%o, %l : tensor<1x50x2x32xf16>, tensor<1x2x50xf32>) {window_size = array<i64: 9, 4>, softcap = 3.0 : f32} -> tensor<1x50x2x32xf16>, tensor<1x2x50xf32>
  return %r#0, %r#1 : tensor<1x50x2x32xf16>, tensor<1x2x50xf32>
}
func.func @alibi_batch_heads(%q: tensor<2x20x4x32xf32>, %k: tensor<2x25x1x32xf32>, %v: tensor<2x25x1x32xf32>, %al: tensor<2x4xf32>, %o: tensor<2x20x4x32xf32>) -> tensor<2x20x4x32xf32> {
  %r = flashattn.attention ins(%q, %k, %v : tensor<2x20x4x32xf32>, tensor<2x25x1x32xf32>, tensor<2x25x1x32xf32>)
      alibi_slopes(%al : tensor<2x4xf32>)
      outs(%o : tensor<2x20x4x32xf32>) {causal = #flashattn.causal<bottom_right>} -> tensor<2x20x4x32xf32>
  return %r : tensor<2x20x4x32xf32>
}
func.func @regions_top_left_f32_out(%q: tensor<1x33x2x64xbf16>, %k: tensor<1x45x2x64xbf16>, %v: tensor<1x45x2x64xbf16>, %o: tensor<1x33x2x64xf32>, %l: tensor<1x2x33xf32>) -> (tensor<1x33x2x64xf32>, tensor<1x2x33xf32>) {
  %r:2 = flashattn.attention ins(%q, %k, %v : tensor<1x33x2x64xbf16>, tensor<1x45x2x64xbf16>, tensor<1x45x2x64xbf16>)
      outs(%o, %l : tensor<1x33x2x64xf32>, tensor<1x2x33xf32>) {causal = #flashattn.causal<top_left>}
      score(%s: f32, %b: index, %h: index, %i: index, %j: index) {
        %hi = arith.index_cast %h : index to i64
        %hf = arith.sitofp %hi : i64 to f32
        %c = arith.constant -0.5 : f32
        %bias = arith.mulf %hf, %c : f32
        %r = arith.addf %s, %bias : f32
        flashattn.yield %r : f32
      }
      mask(%b: index, %h: index, %i: index, %j: index) {
        %c3 = arith.constant 3 : index
        %m = arith.remui %j, %c3 : index
        %c0 = arith.constant 0 : index
        %keep = arith.cmpi ne, %m, %c0 : index
        flashattn.yield %keep : i1
      } -> tensor<1x33x2x64xf32>, tensor<1x2x33xf32>
  return %r#0, %r#1 : tensor<1x33x2x64xf32>, tensor<1x2x33xf32>
}
func.func @mask_removes_all(%q: tensor<1x8x2x16xf16>, %k: tensor<1x8x2x16xf16>, %v: tensor<1x8x2x16xf16>, %o: tensor<1x8x2x16xf16>, %l: tensor<1x2x8xf32>) -> (tensor<1x8x2x16xf16>, tensor<1x2x8xf32>) {
  %r:2 = flashattn.attention ins(%q, %k, %v : tensor<1x8x2x16xf16>, tensor<1x8x2x16xf16>, tensor<1x8x2x16xf16>)
      outs(%o, %l : tensor<1x8x2x16xf16>, tensor<1x2x8xf32>)
      mask(%b: index, %h: index, %i: index, %j: index) {
        %f = arith.constant false
        flashattn.yield %f : i1
      } -> tensor<1x8x2x16xf16>, tensor<1x2x8xf32>
  return %r#0, %r#1 : tensor<1x8x2x16xf16>, tensor<1x2x8xf32>
}
func.func @huge_window_sides(%q: tensor<1x4x2x16xf16>, %k: tensor<1x8x2x16xf16>, %v: tensor<1x8x2x16xf16>, %o: tensor<1x4x2x16xf16>, %l: tensor<1x2x4xf32>) -> (tensor<1x4x2x16xf16>, tensor<1x2x4xf32>) {
  %r:2 = flashattn.attention ins(%q, %k, %v : tensor<1x4x2x16xf16>, tensor<1x8x2x16xf16>, tensor<1x8x2x16xf16>)
      outs(%o, %l : tensor<1x4x2x16xf16>, tensor<1x2x4xf32>) {window_size = array<i64: 9223372036854775807, 9223372036854775807>} -> tensor<1x4x2x16xf16>, tensor<1x2x4xf32>
  return %r#0, %r#1 : tensor<1x4x2x16xf16>, tensor<1x2x4xf32>
}
