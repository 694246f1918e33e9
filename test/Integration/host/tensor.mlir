// RUN: fa-run %s | FileCheck %s
// The tensor form (what an ML compiler emits): one-shot-bufferize turns it into the memref form, then the host pipeline; with and without lse, with a score region and split-KV.

// CHECK: tensor_gqa_causal {{.*}} PASS
// CHECK: tensor_no_lse_split {{.*}} PASS
// CHECK: tensor_score {{.*}} PASS
// CHECK: fa-run: all 3 case(s) within tolerance

func.func @tensor_gqa_causal(%q: tensor<1x70x4x64xbf16>, %k: tensor<1x90x2x64xbf16>, %v: tensor<1x90x2x64xbf16>, %o: tensor<1x70x4x64xbf16>, %l: tensor<1x4x70xf32>) -> (tensor<1x70x4x64xbf16>, tensor<1x4x70xf32>) {
  %r:2 = flashattn.attention ins(%q, %k, %v : tensor<1x70x4x64xbf16>, tensor<1x90x2x64xbf16>, tensor<1x90x2x64xbf16>)
      outs(%o, %l : tensor<1x70x4x64xbf16>, tensor<1x4x70xf32>) {causal = #flashattn.causal<bottom_right>} -> tensor<1x70x4x64xbf16>, tensor<1x4x70xf32>
  return %r#0, %r#1 : tensor<1x70x4x64xbf16>, tensor<1x4x70xf32>
}
func.func @tensor_no_lse_split(%q: tensor<2x5x4x64xf32>, %k: tensor<2x200x4x64xf32>, %v: tensor<2x200x4x64xf32>, %o: tensor<2x5x4x64xf32>) -> tensor<2x5x4x64xf32> {
  %r = flashattn.attention ins(%q, %k, %v : tensor<2x5x4x64xf32>, tensor<2x200x4x64xf32>, tensor<2x200x4x64xf32>)
      outs(%o : tensor<2x5x4x64xf32>) {num_splits = 3} -> tensor<2x5x4x64xf32>
  return %r : tensor<2x5x4x64xf32>
}
func.func @tensor_score(%q: tensor<1x60x2x64xf16>, %k: tensor<1x90x2x64xf16>, %v: tensor<1x90x2x64xf16>, %o: tensor<1x60x2x64xf16>, %l: tensor<1x2x60xf32>) -> (tensor<1x60x2x64xf16>, tensor<1x2x60xf32>) {
  %r:2 = flashattn.attention ins(%q, %k, %v : tensor<1x60x2x64xf16>, tensor<1x90x2x64xf16>, tensor<1x90x2x64xf16>)
      outs(%o, %l : tensor<1x60x2x64xf16>, tensor<1x2x60xf32>)
      score(%s: f32, %b: index, %h: index, %i: index, %j: index) {
        %d = arith.subi %i, %j : index
        %di = arith.index_cast %d : index to i64
        %df = arith.sitofp %di : i64 to f32
        %c = arith.constant -0.05 : f32
        %bias = arith.mulf %df, %c : f32
        %r = arith.addf %s, %bias : f32
        flashattn.yield %r : f32
      } -> tensor<1x60x2x64xf16>, tensor<1x2x60xf32>
  return %r#0, %r#1 : tensor<1x60x2x64xf16>, tensor<1x2x60xf32>
}
