// RUN: fa-opt %s --flashattn-decompose-to-linalg --split-input-file --verify-diagnostics | FileCheck %s

// GQA 4 / 2 under bottom-right causal with a left window, softcap and lse:
// S = Q K^T over head_dim (K's head d1 floordiv 2), one elementwise generic
// for the scale, softcap and the mask (j <= i + Sk - Sq, i + Sk - Sq - 3 <=
// j) as a select to -inf, the row max, exp(S - m) with 0 for an -inf m, the
// row sum, O = P V, then out = O / l (0 where l is 0) and lse = m + log l
// (-inf where l is 0), into the op's outs.
// CHECK-DAG: #[[Q:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d4)>
// CHECK-DAG: #[[K:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1 floordiv 2, d4)>
// CHECK-DAG: #[[V:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d1 floordiv 2, d3)>
// CHECK-LABEL: func.func @gqa
// CHECK-SAME: (%[[QA:.*]]: tensor<2x5x4x8xbf16>, %[[KA:.*]]: tensor<2x7x2x8xbf16>, %[[VA:.*]]: tensor<2x7x2x8xbf16>, %[[OA:.*]]: tensor<2x5x4x8xbf16>, %[[LA:.*]]: tensor<2x4x5xf32>)
// CHECK: %[[OFF:.*]] = arith.subi %c7, %c5 : index
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[Q]], #[[K]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[QA]], %[[KA]] : {{.*}}) outs(%{{.*}} : tensor<2x4x5x7xf32>)
// CHECK: %[[X:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<2x4x5x7xf32>)
// CHECK:   %[[I:.*]] = linalg.index 2 : index
// CHECK:   %[[J:.*]] = linalg.index 3 : index
// CHECK:   math.tanh
// CHECK:   %[[DIAG:.*]] = arith.addi %[[I]], %[[OFF]] : index
// CHECK:   %[[CAUSAL:.*]] = arith.cmpi sle, %[[J]], %[[DIAG]] : index
// CHECK:   %[[LO:.*]] = arith.addi %[[DIAG]], %c-3 : index
// CHECK:   %[[WIN:.*]] = arith.cmpi sle, %[[LO]], %[[J]] : index
// CHECK:   %[[OK:.*]] = arith.andi %[[CAUSAL]], %[[WIN]] : i1
// CHECK:   arith.select %[[OK]], %{{.*}}, %cst{{.*}} : f32
// CHECK: %[[M:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[X]] : {{.*}}) outs(%{{.*}} : tensor<2x4x5xf32>)
// CHECK:   arith.maximumf
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[M]] : {{.*}})
// CHECK:   %[[EMPTY:.*]] = arith.cmpf oeq, %{{.*}}, %cst
// CHECK:   %[[SAFE:.*]] = arith.select %[[EMPTY]], %cst{{.*}}, %{{.*}} : f32
// CHECK:   %[[SH:.*]] = arith.subf %{{.*}}, %[[SAFE]] : f32
// CHECK:   math.exp %[[SH]] : f32
// CHECK: %[[L:.*]] = linalg.generic {{.*}} ins(%[[P]] : {{.*}}) outs(%{{.*}} : tensor<2x4x5xf32>)
// CHECK:   arith.addf
// CHECK: %[[O:.*]] = linalg.generic {indexing_maps = [{{.*}}, #[[V]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[P]], %[[VA]] : {{.*}}) outs(%{{.*}} : tensor<2x5x4x8xf32>)
// CHECK: %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[O]], %[[L]] : {{.*}}) outs(%[[OA]] : tensor<2x5x4x8xbf16>)
// CHECK:   %[[SOME:.*]] = arith.cmpf ogt
// CHECK:   %[[DIV:.*]] = arith.divf
// CHECK:   %[[R:.*]] = arith.select %[[SOME]], %[[DIV]], %cst
// CHECK:   arith.truncf %[[R]] : f32 to bf16
// CHECK: %[[LSE:.*]] = linalg.generic {{.*}} ins(%[[M]], %[[L]] : {{.*}}) outs(%[[LA]] : tensor<2x4x5xf32>)
// CHECK:   math.log
// CHECK: return %[[OUT]], %[[LSE]]
// CHECK-NOT: flashattn.attention
func.func @gqa(%q: tensor<2x5x4x8xbf16>, %k: tensor<2x7x2x8xbf16>, %v: tensor<2x7x2x8xbf16>,
               %o: tensor<2x5x4x8xbf16>, %l: tensor<2x4x5xf32>) -> (tensor<2x5x4x8xbf16>, tensor<2x4x5xf32>) {
  %r:2 = flashattn.attention ins(%q, %k, %v : tensor<2x5x4x8xbf16>, tensor<2x7x2x8xbf16>, tensor<2x7x2x8xbf16>)
      outs(%o, %l : tensor<2x5x4x8xbf16>, tensor<2x4x5xf32>) {causal = #flashattn.causal<bottom_right>, window_size = array<i64: 3, -1>, softcap = 30.0 : f32}
      -> tensor<2x5x4x8xbf16>, tensor<2x4x5xf32>
  return %r#0, %r#1 : tensor<2x5x4x8xbf16>, tensor<2x4x5xf32>
}

// -----

// Dynamic sequence lengths and batch: sizes from tensor.dim; the score
// region inlined with the loop indices as (b, h, i, j); MHA (no floordiv).
// CHECK-LABEL: func.func @dynamic_score
// CHECK-DAG: %[[B:.*]] = tensor.dim %arg0, %c0
// CHECK-DAG: %[[SQ:.*]] = tensor.dim %arg0, %c1
// CHECK-DAG: %[[SK:.*]] = tensor.dim %arg1, %c1
// CHECK: tensor.empty(%[[B]], %[[SQ]], %[[SK]]) : tensor<?x2x?x?xf32>
// CHECK: linalg.generic
// CHECK:   %[[H:.*]] = linalg.index 1 : index
// CHECK:   %[[I:.*]] = linalg.index 2 : index
// CHECK:   %[[J:.*]] = linalg.index 3 : index
// CHECK:   %[[D:.*]] = arith.subi %[[I]], %[[J]] : index
// CHECK-NOT: floordiv
func.func @dynamic_score(%q: tensor<?x?x2x16xf16>, %k: tensor<?x?x2x16xf16>, %v: tensor<?x?x2x16xf16>,
                         %o: tensor<?x?x2x16xf16>) -> tensor<?x?x2x16xf16> {
  %r = flashattn.attention ins(%q, %k, %v : tensor<?x?x2x16xf16>, tensor<?x?x2x16xf16>, tensor<?x?x2x16xf16>)
      outs(%o : tensor<?x?x2x16xf16>)
      score(%s: f32, %b: index, %h: index, %i: index, %j: index) {
        %d = arith.subi %i, %j : index
        %di = arith.index_cast %d : index to i64
        %df = arith.sitofp %di : i64 to f32
        %r = arith.addf %s, %df : f32
        flashattn.yield %r : f32
      } -> tensor<?x?x2x16xf16>
  return %r : tensor<?x?x2x16xf16>
}

// -----

func.func @varlen(%q: tensor<10x2x16xf16>, %k: tensor<12x2x16xf16>, %v: tensor<12x2x16xf16>,
                  %cq: tensor<3xi32>, %ck: tensor<3xi32>, %o: tensor<10x2x16xf16>) -> tensor<10x2x16xf16> {
  // expected-error @+1 {{does not decompose into linalg: varlen (cu_seqlens) layouts}}
  %r = flashattn.attention ins(%q, %k, %v : tensor<10x2x16xf16>, tensor<12x2x16xf16>, tensor<12x2x16xf16>)
      cu_seqlens_q(%cq : tensor<3xi32>) cu_seqlens_k(%ck : tensor<3xi32>)
      outs(%o : tensor<10x2x16xf16>) -> tensor<10x2x16xf16>
  return %r : tensor<10x2x16xf16>
}

// -----

func.func @memref(%q: memref<1x4x2x16xf16>, %k: memref<1x4x2x16xf16>, %v: memref<1x4x2x16xf16>,
                  %o: memref<1x4x2x16xf16>) {
  // expected-error @+1 {{does not decompose into linalg: it is on memrefs (decompose the tensor form, then bufferize)}}
  flashattn.attention ins(%q, %k, %v : memref<1x4x2x16xf16>, memref<1x4x2x16xf16>, memref<1x4x2x16xf16>)
      outs(%o : memref<1x4x2x16xf16>)
  return
}

// -----

func.func @dynamic_heads(%q: tensor<1x4x?x16xf16>, %k: tensor<1x4x?x16xf16>, %v: tensor<1x4x?x16xf16>,
                         %o: tensor<1x4x?x16xf16>) -> tensor<1x4x?x16xf16> {
  // expected-error @+1 {{does not decompose into linalg: dynamic head counts (the kv head h / G needs a static G)}}
  %r = flashattn.attention ins(%q, %k, %v : tensor<1x4x?x16xf16>, tensor<1x4x?x16xf16>, tensor<1x4x?x16xf16>)
      outs(%o : tensor<1x4x?x16xf16>) -> tensor<1x4x?x16xf16>
  return %r : tensor<1x4x?x16xf16>
}
