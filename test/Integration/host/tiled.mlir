// RUN: fa-run --tile-sizes=1,1,16 %s | FileCheck %s
// RUN: fa-run --tile-sizes=0,2,0 %s | FileCheck %s
// RUN: fa-run --decompose --tile-sizes=2,1,7 %s | FileCheck %s
// Each op tiled through its TilingInterface (scf.for over batch, kv heads
// and query rows, the op on tensor.extract_slice tiles) before the host
// lowering, or before the decomposition into linalg, against the float64
// reference of the untiled op: GQA with lse over row tiles that do not
// divide Sq, softcap, a mask region and a score region that read only the
// key position, no keys at all, and under causal masks and a window (row
// tiles carry q_start and seqlen_q).

// CHECK: gqa_lse {{.*}} PASS
// CHECK: softcap_f16 {{.*}} PASS
// CHECK: key_mask_and_score {{.*}} PASS
// CHECK: no_keys {{.*}} PASS
// CHECK: causal_gqa_more_queries {{.*}} PASS
// CHECK: window_top_left {{.*}} PASS
// CHECK: fa-run: all 6 case(s) within tolerance

func.func @gqa_lse(%q: tensor<2x70x8x64xbf16>, %k: tensor<2x90x4x64xbf16>, %v: tensor<2x90x4x64xbf16>, %o: tensor<2x70x8x64xbf16>, %l: tensor<2x8x70xf32>) -> (tensor<2x70x8x64xbf16>, tensor<2x8x70xf32>) {
  %r:2 = flashattn.attention ins(%q, %k, %v : tensor<2x70x8x64xbf16>, tensor<2x90x4x64xbf16>, tensor<2x90x4x64xbf16>)
      outs(%o, %l : tensor<2x70x8x64xbf16>, tensor<2x8x70xf32>) -> tensor<2x70x8x64xbf16>, tensor<2x8x70xf32>
  return %r#0, %r#1 : tensor<2x70x8x64xbf16>, tensor<2x8x70xf32>
}
func.func @softcap_f16(%q: tensor<2x33x2x32xf16>, %k: tensor<2x50x2x32xf16>, %v: tensor<2x50x2x32xf16>, %o: tensor<2x33x2x32xf16>) -> tensor<2x33x2x32xf16> {
  %r = flashattn.attention ins(%q, %k, %v : tensor<2x33x2x32xf16>, tensor<2x50x2x32xf16>, tensor<2x50x2x32xf16>)
      outs(%o : tensor<2x33x2x32xf16>) {softcap = 4.0 : f32} -> tensor<2x33x2x32xf16>
  return %r : tensor<2x33x2x32xf16>
}
func.func @key_mask_and_score(%q: tensor<2x40x4x32xbf16>, %k: tensor<2x60x2x32xbf16>, %v: tensor<2x60x2x32xbf16>, %o: tensor<2x40x4x32xf32>, %l: tensor<2x4x40xf32>) -> (tensor<2x40x4x32xf32>, tensor<2x4x40xf32>) {
  %r:2 = flashattn.attention ins(%q, %k, %v : tensor<2x40x4x32xbf16>, tensor<2x60x2x32xbf16>, tensor<2x60x2x32xbf16>)
      outs(%o, %l : tensor<2x40x4x32xf32>, tensor<2x4x40xf32>)
      score(%s: f32, %b: index, %h: index, %i: index, %j: index) {
        %ji = arith.index_cast %j : index to i64
        %jf = arith.sitofp %ji : i64 to f32
        %c = arith.constant -0.02 : f32
        %bias = arith.mulf %jf, %c : f32
        %r = arith.addf %s, %bias : f32
        flashattn.yield %r : f32
      }
      mask(%b: index, %h: index, %i: index, %j: index) {
        %c3 = arith.constant 3 : index
        %m = arith.remui %j, %c3 : index
        %c0 = arith.constant 0 : index
        %keep = arith.cmpi ne, %m, %c0 : index
        flashattn.yield %keep : i1
      } -> tensor<2x40x4x32xf32>, tensor<2x4x40xf32>
  return %r#0, %r#1 : tensor<2x40x4x32xf32>, tensor<2x4x40xf32>
}
func.func @no_keys(%q: tensor<2x20x4x16xf16>, %k: tensor<2x0x2x16xf16>, %v: tensor<2x0x2x16xf16>, %o: tensor<2x20x4x16xf16>, %l: tensor<2x4x20xf32>) -> (tensor<2x20x4x16xf16>, tensor<2x4x20xf32>) {
  %r:2 = flashattn.attention ins(%q, %k, %v : tensor<2x20x4x16xf16>, tensor<2x0x2x16xf16>, tensor<2x0x2x16xf16>)
      outs(%o, %l : tensor<2x20x4x16xf16>, tensor<2x4x20xf32>) -> tensor<2x20x4x16xf16>, tensor<2x4x20xf32>
  return %r#0, %r#1 : tensor<2x20x4x16xf16>, tensor<2x4x20xf32>
}
func.func @causal_gqa_more_queries(%q: tensor<2x50x4x32xbf16>, %k: tensor<2x35x2x32xbf16>, %v: tensor<2x35x2x32xbf16>, %o: tensor<2x50x4x32xbf16>, %l: tensor<2x4x50xf32>) -> (tensor<2x50x4x32xbf16>, tensor<2x4x50xf32>) {
  %r:2 = flashattn.attention ins(%q, %k, %v : tensor<2x50x4x32xbf16>, tensor<2x35x2x32xbf16>, tensor<2x35x2x32xbf16>)
      outs(%o, %l : tensor<2x50x4x32xbf16>, tensor<2x4x50xf32>) {causal = #flashattn.causal<bottom_right>} -> tensor<2x50x4x32xbf16>, tensor<2x4x50xf32>
  return %r#0, %r#1 : tensor<2x50x4x32xbf16>, tensor<2x4x50xf32>
}
func.func @window_top_left(%q: tensor<1x40x2x32xf16>, %k: tensor<1x60x2x32xf16>, %v: tensor<1x60x2x32xf16>, %o: tensor<1x40x2x32xf16>) -> tensor<1x40x2x32xf16> {
  %r = flashattn.attention ins(%q, %k, %v : tensor<1x40x2x32xf16>, tensor<1x60x2x32xf16>, tensor<1x60x2x32xf16>)
      outs(%o : tensor<1x40x2x32xf16>) {causal = #flashattn.causal<top_left>, window_size = array<i64: 5, -1>} -> tensor<1x40x2x32xf16>
  return %r : tensor<1x40x2x32xf16>
}
