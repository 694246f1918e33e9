// RUN: fa-opt %s --flashattn-plan --flashattn-split-kv --split-input-file | FileCheck %s

// num_splits = 4 on memrefs: ONE partial attention writes f32 partials over a
// leading split dimension (lse too, even when the op has none; it starts at
// -inf so that rows no tile writes weigh 0), then flashattn.combine merges
// them into the original outs; the partial buffers are freed after the
// combine. Regions move to the partial op.
// CHECK-LABEL: func.func @memref_split
// CHECK-SAME: (%[[Q:.*]]: memref<2x3x8x64xf16>, %[[K:.*]]: memref<2x500x2x64xf16>, %[[V:.*]]: memref<2x500x2x64xf16>, %[[O:.*]]: memref<2x3x8x64xf16>)
// CHECK: %[[PO:.*]] = memref.alloc() : memref<4x2x3x8x64xf32>
// CHECK: %[[PL:.*]] = memref.alloc() : memref<4x2x8x3xf32>
// CHECK: scf.for
// CHECK:   scf.for
// CHECK:     scf.for
// CHECK:       scf.for
// CHECK:         memref.store %{{.*}}, %[[PL]]
// CHECK: flashattn.attention ins(%[[Q]], %[[K]], %[[V]] : {{.*}}) outs(%[[PO]], %[[PL]] : memref<4x2x3x8x64xf32>, memref<4x2x8x3xf32>)
// CHECK-SAME: num_splits = 4 : i64
// CHECK-SAME: num_splits = 4, pack_gqa = false>
// CHECK-SAME: mask(
// CHECK: flashattn.combine ins(%[[PO]], %[[PL]] : memref<4x2x3x8x64xf32>, memref<4x2x8x3xf32>) outs(%[[O]] : memref<2x3x8x64xf16>)
// CHECK-NEXT: memref.dealloc %[[PO]]
// CHECK-NEXT: memref.dealloc %[[PL]]
func.func @memref_split(%q: memref<2x3x8x64xf16>, %k: memref<2x500x2x64xf16>,
                        %v: memref<2x500x2x64xf16>, %o: memref<2x3x8x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x3x8x64xf16>, memref<2x500x2x64xf16>, memref<2x500x2x64xf16>)
      outs(%o : memref<2x3x8x64xf16>) {num_splits = 4}
      mask(%b: index, %h: index, %i: index, %j: index) {
        %t = arith.constant true
        flashattn.yield %t : i1
      }
  return
}

// -----

// Tensor form, packed (varlen) q with dynamic total: tensor.empty with the
// dynamic sizes read from the operands; the combine's results replace the op.
// CHECK-LABEL: func.func @tensor_varlen
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[T:.*]] = tensor.dim %{{.*}}, %[[C0]] : tensor<?x4x64xbf16>
// CHECK: %[[PO:.*]] = tensor.empty(%[[T]]) : tensor<2x?x4x64xf32>
// CHECK: %[[PL:.*]] = tensor.splat %{{.*}}[%{{.*}}] : tensor<2x4x?xf32>
// CHECK: %[[P0:.*]], %[[P1:.*]] = flashattn.attention {{.*}} outs(%[[PO]], %[[PL]] : tensor<2x?x4x64xf32>, tensor<2x4x?xf32>)
// CHECK: %[[R:.*]]:2 = flashattn.combine ins(%[[P0]], %[[P1]] : {{.*}}) outs(%{{.*}}, %{{.*}} : tensor<?x4x64xbf16>, tensor<4x?xf32>) -> tensor<?x4x64xbf16>, tensor<4x?xf32>
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @tensor_varlen(%q: tensor<?x4x64xbf16>, %k: tensor<?x4x64xbf16>,
                         %v: tensor<?x4x64xbf16>, %cq: tensor<3xi32>, %ck: tensor<3xi32>,
                         %o: tensor<?x4x64xbf16>, %l: tensor<4x?xf32>)
    -> (tensor<?x4x64xbf16>, tensor<4x?xf32>) {
  %r:2 = flashattn.attention ins(%q, %k, %v : tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4x64xbf16>)
      cu_seqlens_q(%cq : tensor<3xi32>) cu_seqlens_k(%ck : tensor<3xi32>)
      outs(%o, %l : tensor<?x4x64xbf16>, tensor<4x?xf32>) {num_splits = 2}
      -> tensor<?x4x64xbf16>, tensor<4x?xf32>
  return %r#0, %r#1 : tensor<?x4x64xbf16>, tensor<4x?xf32>
}

// -----

// num_splits = 1 (or automatic on the host): nothing to split.
// CHECK-LABEL: func.func @no_split
// CHECK-NOT: flashattn.combine
// CHECK-NOT: memref.alloc
func.func @no_split(%q: memref<1x3x2x64xf16>, %k: memref<1x50x2x64xf16>,
                    %v: memref<1x50x2x64xf16>, %o: memref<1x3x2x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x3x2x64xf16>, memref<1x50x2x64xf16>, memref<1x50x2x64xf16>)
      outs(%o : memref<1x3x2x64xf16>)
  return
}
