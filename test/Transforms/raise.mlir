// RUN: fa-opt %s --flashattn-raise --split-input-file | FileCheck %s

// torch-mlir's linalg-on-tensors SDPA with an additive mask (the
// decomposition: keepdim max / sum [B, H, Sq, 1], a divide by sqrt(D)):
// flashattn.attention on the transposed operands with scale 1/sqrt(32), a score
// region adding the mask (captured, tensor.extract at b, h, i, j), and a
// transpose of its result back to [B, H, Sq, D].
// CHECK-LABEL: func.func @torch_additive
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<2x4x16x32xf32>, %[[K:[a-z0-9]+]]: tensor<2x4x24x32xf32>, %[[V:[a-z0-9]+]]: tensor<2x4x24x32xf32>, %[[M:[a-z0-9]+]]: tensor<2x4x16x24xf32>
// CHECK-DAG: %[[QT:.*]] = linalg.transpose ins(%[[Q]] : {{.*}}) outs(%{{.*}} : tensor<2x16x4x32xf32>) permutation = [0, 2, 1, 3]
// CHECK-DAG: %[[VT:.*]] = linalg.transpose ins(%[[V]] : {{.*}}) outs(%{{.*}} : tensor<2x24x4x32xf32>) permutation = [0, 2, 1, 3]
// CHECK-DAG: %[[KT:.*]] = linalg.transpose ins(%[[K]] : {{.*}}) outs(%{{.*}} : tensor<2x24x4x32xf32>) permutation = [0, 2, 1, 3]
// CHECK: %[[O:.*]] = flashattn.attention ins(%[[QT]], %[[KT]], %[[VT]] : {{.*}}) outs(%{{.*}} : tensor<2x16x4x32xf32>) {scale = 0.176776{{[0-9]+}} : f32} score(%[[S:.*]]: f32, %[[B:.*]]: index, %[[H:.*]]: index, %[[I:.*]]: index, %[[J:.*]]: index) {
// CHECK-NEXT: %[[E:.*]] = tensor.extract %[[M]][%[[B]], %[[H]], %[[I]], %[[J]]]
// CHECK-NEXT: %[[R:.*]] = arith.addf %[[S]], %[[E]] : f32
// CHECK-NEXT: flashattn.yield %[[R]]
// CHECK: %[[OT:.*]] = linalg.transpose ins(%[[O]] : {{.*}}) outs(%{{.*}} : tensor<2x4x16x32xf32>) permutation = [0, 2, 1, 3]
// CHECK: return %[[OT]]
// CHECK-NOT: math.exp
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_kt = affine_map<(b, h, i, j, d) -> (b, h, d, j)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i, 0)>
func.func @torch_additive(%q: tensor<2x4x16x32xf32>, %k: tensor<2x4x24x32xf32>, %v: tensor<2x4x24x32xf32>, %mask: tensor<2x4x16x24xf32>) -> tensor<2x4x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 5.65685425 : f32
  %e0 = tensor.empty() : tensor<2x4x16x24xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x16x32xf32>, tensor<2x4x24x32xf32>) outs(%z0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %x0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %r = arith.divf %a0, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %x = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x0, %mask : tensor<2x4x16x24xf32>, tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a0: f32, %a1: f32, %o: f32):
    %r = arith.addf %a0, %a1 : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %e1 = tensor.empty() : tensor<2x4x16x1xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2x4x16x1xf32>) -> tensor<2x4x16x1xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x : tensor<2x4x16x24xf32>) outs(%mi : tensor<2x4x16x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x1xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %mx : tensor<2x4x16x24xf32>, tensor<2x4x16x1xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %li = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4x16x1xf32>) -> tensor<2x4x16x1xf32>
  %l = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<2x4x16x24xf32>) outs(%li : tensor<2x4x16x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x1xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %l : tensor<2x4x16x24xf32>, tensor<2x4x16x1xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %e2 = tensor.empty() : tensor<2x4x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x16x32xf32>) -> tensor<2x4x16x32xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x4x16x24xf32>, tensor<2x4x24x32xf32>) outs(%z2 : tensor<2x4x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x32xf32>
  return %o : tensor<2x4x16x32xf32>
}

// -----

// linalg.softmax over the keys, K given transposed [B, H, D, Sk], a boolean
// mask selected to -inf and a causal select from linalg.index (j <= i):
// top-left causal, a mask region reading the i1 tensor.
// CHECK-LABEL: func.func @softmax_bool_causal
// CHECK: linalg.transpose ins(%arg1 : tensor<2x4x32x24xf32>) outs(%{{.*}} : tensor<2x24x4x32xf32>) permutation = [0, 3, 1, 2]
// CHECK: flashattn.attention {{.*}} {causal = #flashattn.causal<top_left>, scale = 0.176776692 : f32} mask(%[[B:.*]]: index, %[[H:.*]]: index, %[[I:.*]]: index, %[[J:.*]]: index) {
// CHECK-NEXT: %[[KEEP:.*]] = tensor.extract %arg3[%[[B]], %[[H]], %[[I]], %[[J]]] : tensor<2x4x16x24xi1>
// CHECK-NEXT: flashattn.yield %[[KEEP]] : i1
// CHECK-NOT: linalg.softmax
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_kt = affine_map<(b, h, i, j, d) -> (b, h, d, j)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i, 0)>
func.func @softmax_bool_causal(%q: tensor<2x4x16x32xf32>, %k: tensor<2x4x32x24xf32>, %v: tensor<2x4x24x32xf32>, %keep: tensor<2x4x16x24xi1>) -> tensor<2x4x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.17677669 : f32
  %e0 = tensor.empty() : tensor<2x4x16x24xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_kt, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x16x32xf32>, tensor<2x4x32x24xf32>) outs(%z0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %x0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %r = arith.mulf %a0, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %x1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x0, %keep : tensor<2x4x16x24xf32>, tensor<2x4x16x24xi1>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a0: f32, %a1: i1, %o: f32):
    %r = arith.select %a1, %a0, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x1 : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %ok = arith.cmpi sle, %j, %i : index
    %r = arith.select %ok, %a0, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %p = linalg.softmax dimension(3) ins(%x : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %e2 = tensor.empty() : tensor<2x4x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x16x32xf32>) -> tensor<2x4x16x32xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x4x16x24xf32>, tensor<2x4x24x32xf32>) outs(%z2 : tensor<2x4x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x32xf32>
  return %o : tensor<2x4x16x32xf32>
}

// -----

// Near miss: the softmax over the queries (dimension 2): unchanged.
// CHECK-LABEL: func.func @softmax_wrong_dim
// CHECK-NOT: flashattn.attention
// CHECK: linalg.softmax dimension(2)
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_kt = affine_map<(b, h, i, j, d) -> (b, h, d, j)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i, 0)>
func.func @softmax_wrong_dim(%q: tensor<2x4x16x32xf32>, %k: tensor<2x4x24x32xf32>, %v: tensor<2x4x24x32xf32>) -> tensor<2x4x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.17677669 : f32
  %e0 = tensor.empty() : tensor<2x4x16x24xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x16x32xf32>, tensor<2x4x24x32xf32>) outs(%z0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %r = arith.mulf %a0, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %p = linalg.softmax dimension(2) ins(%x : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %e2 = tensor.empty() : tensor<2x4x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x16x32xf32>) -> tensor<2x4x16x32xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x4x16x24xf32>, tensor<2x4x24x32xf32>) outs(%z2 : tensor<2x4x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x32xf32>
  return %o : tensor<2x4x16x32xf32>
}

// -----

// Near miss: the scale applied after the softmax: unchanged.
// CHECK-LABEL: func.func @scale_after_softmax
// CHECK-NOT: flashattn.attention
// CHECK: linalg.softmax
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_kt = affine_map<(b, h, i, j, d) -> (b, h, d, j)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i, 0)>
func.func @scale_after_softmax(%q: tensor<2x4x16x32xf32>, %k: tensor<2x4x24x32xf32>, %v: tensor<2x4x24x32xf32>) -> tensor<2x4x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.17677669 : f32
  %e0 = tensor.empty() : tensor<2x4x16x24xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x16x32xf32>, tensor<2x4x24x32xf32>) outs(%z0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %p0 = linalg.softmax dimension(3) ins(%s : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%p0 : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %r = arith.mulf %a0, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %e2 = tensor.empty() : tensor<2x4x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x16x32xf32>) -> tensor<2x4x16x32xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x4x16x24xf32>, tensor<2x4x24x32xf32>) outs(%z2 : tensor<2x4x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x32xf32>
  return %o : tensor<2x4x16x32xf32>
}

// -----

// Near miss: a scale that is not a constant: unchanged.
// CHECK-LABEL: func.func @variable_scale
// CHECK-NOT: flashattn.attention
// CHECK: linalg.softmax
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_kt = affine_map<(b, h, i, j, d) -> (b, h, d, j)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i, 0)>
func.func @variable_scale(%q: tensor<2x4x16x32xf32>, %k: tensor<2x4x24x32xf32>, %v: tensor<2x4x24x32xf32>, %f: f32) -> tensor<2x4x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.17677669 : f32
  %e0 = tensor.empty() : tensor<2x4x16x24xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x16x32xf32>, tensor<2x4x24x32xf32>) outs(%z0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %r = arith.mulf %a0, %f : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %p = linalg.softmax dimension(3) ins(%x : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %e2 = tensor.empty() : tensor<2x4x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x16x32xf32>) -> tensor<2x4x16x32xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x4x16x24xf32>, tensor<2x4x24x32xf32>) outs(%z2 : tensor<2x4x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x32xf32>
  return %o : tensor<2x4x16x32xf32>
}

// -----

// Near miss: a mask that multiplies the scores (neither added nor selected
// to -inf): unchanged.
// CHECK-LABEL: func.func @multiplied_mask
// CHECK-NOT: flashattn.attention
// CHECK: linalg.softmax
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_kt = affine_map<(b, h, i, j, d) -> (b, h, d, j)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i, 0)>
func.func @multiplied_mask(%q: tensor<2x4x16x32xf32>, %k: tensor<2x4x24x32xf32>, %v: tensor<2x4x24x32xf32>, %mask: tensor<2x4x16x24xf32>) -> tensor<2x4x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.17677669 : f32
  %e0 = tensor.empty() : tensor<2x4x16x24xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x16x32xf32>, tensor<2x4x24x32xf32>) outs(%z0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %x0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %r = arith.mulf %a0, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %x = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x0, %mask : tensor<2x4x16x24xf32>, tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a0: f32, %a1: f32, %o: f32):
    %r = arith.mulf %a0, %a1 : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %p = linalg.softmax dimension(3) ins(%x : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %e2 = tensor.empty() : tensor<2x4x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x16x32xf32>) -> tensor<2x4x16x32xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x4x16x24xf32>, tensor<2x4x24x32xf32>) outs(%z2 : tensor<2x4x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x32xf32>
  return %o : tensor<2x4x16x32xf32>
}

// -----

// Near miss: the additive mask added before the scale (the op cannot scale
// a mask): unchanged.
// CHECK-LABEL: func.func @mask_before_scale
// CHECK-NOT: flashattn.attention
// CHECK: linalg.softmax
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_kt = affine_map<(b, h, i, j, d) -> (b, h, d, j)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i, 0)>
func.func @mask_before_scale(%q: tensor<2x4x16x32xf32>, %k: tensor<2x4x24x32xf32>, %v: tensor<2x4x24x32xf32>, %mask: tensor<2x4x16x24xf32>) -> tensor<2x4x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.17677669 : f32
  %e0 = tensor.empty() : tensor<2x4x16x24xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x16x32xf32>, tensor<2x4x24x32xf32>) outs(%z0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %x0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %mask : tensor<2x4x16x24xf32>, tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a0: f32, %a1: f32, %o: f32):
    %r = arith.addf %a0, %a1 : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x0 : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a0: f32, %o: f32):
    %r = arith.mulf %a0, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %p = linalg.softmax dimension(3) ins(%x : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %e2 = tensor.empty() : tensor<2x4x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x16x32xf32>) -> tensor<2x4x16x32xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x4x16x24xf32>, tensor<2x4x24x32xf32>) outs(%z2 : tensor<2x4x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x32xf32>
  return %o : tensor<2x4x16x32xf32>
}

// -----

// torch-mlir's linalg-on-tensors form of its SDPA decomposition with GQA
// (repeat_interleave of K / V: expand_shape, a broadcast generic, a
// collapse_shape), k.transpose(-2, -1) as linalg.transpose, each 4-D
// matmul as linalg.batch_matmul between collapse_shape and expand_shape,
// mul.Scalar by a captured constant, and the softmax decomposition with
// separate sub / exp ops and keepdim statistics from expand_shape: the op
// reads the 2 kv heads unrepeated and untransposed.
// CHECK-LABEL: func.func @torch_gqa_batch_matmul
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<2x4x16x32xf32>, %[[K:[a-z0-9]+]]: tensor<2x2x24x32xf32>, %[[V:[a-z0-9]+]]: tensor<2x2x24x32xf32>
// CHECK-DAG: %[[QT:.*]] = linalg.transpose ins(%[[Q]] : {{.*}}) outs(%{{.*}} : tensor<2x16x4x32xf32>) permutation = [0, 2, 1, 3]
// CHECK-DAG: %[[KT:.*]] = linalg.transpose ins(%[[K]] : {{.*}}) outs(%{{.*}} : tensor<2x24x2x32xf32>) permutation = [0, 2, 1, 3]
// CHECK-DAG: %[[VT:.*]] = linalg.transpose ins(%[[V]] : {{.*}}) outs(%{{.*}} : tensor<2x24x2x32xf32>) permutation = [0, 2, 1, 3]
// CHECK: %[[O:.*]] = flashattn.attention ins(%[[QT]], %[[KT]], %[[VT]] : {{.*}}) outs(%{{.*}} : tensor<2x16x4x32xf32>) {scale = 0.176776{{[0-9]+}} : f32} -> tensor<2x16x4x32xf32>
// CHECK: %[[OT:.*]] = linalg.transpose ins(%[[O]] : {{.*}}) outs(%{{.*}} : tensor<2x4x16x32xf32>) permutation = [0, 2, 1, 3]
// CHECK: return %[[OT]]
// CHECK-NOT: linalg.batch_matmul
#bcast5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, 0, d3, d4)>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#red = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @torch_gqa_batch_matmul(%q: tensor<2x4x16x32xf32>, %k: tensor<2x2x24x32xf32>, %v: tensor<2x2x24x32xf32>) -> tensor<2x4x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.176776695 : f32
  %ku = tensor.expand_shape %k [[0], [1, 2], [3], [4]] output_shape [2, 2, 1, 24, 32] : tensor<2x2x24x32xf32> into tensor<2x2x1x24x32xf32>
  %vu = tensor.expand_shape %v [[0], [1, 2], [3], [4]] output_shape [2, 2, 1, 24, 32] : tensor<2x2x24x32xf32> into tensor<2x2x1x24x32xf32>
  %e5 = tensor.empty() : tensor<2x2x2x24x32xf32>
  %kb = linalg.generic {indexing_maps = [#bcast5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%ku : tensor<2x2x1x24x32xf32>) outs(%e5 : tensor<2x2x2x24x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x2x2x24x32xf32>
  %vb = linalg.generic {indexing_maps = [#bcast5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%vu : tensor<2x2x1x24x32xf32>) outs(%e5 : tensor<2x2x2x24x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x2x2x24x32xf32>
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<2x2x2x24x32xf32> into tensor<2x4x24x32xf32>
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<2x2x2x24x32xf32> into tensor<2x4x24x32xf32>
  %kte = tensor.empty() : tensor<2x4x32x24xf32>
  %kt = linalg.transpose ins(%kr : tensor<2x4x24x32xf32>) outs(%kte : tensor<2x4x32x24xf32>) permutation = [0, 1, 3, 2]
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x4x16x32xf32> into tensor<8x16x32xf32>
  %kt3 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<2x4x32x24xf32> into tensor<8x32x24xf32>
  %se = tensor.empty() : tensor<8x16x24xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<8x16x24xf32>) -> tensor<8x16x24xf32>
  %s3 = linalg.batch_matmul ins(%q3, %kt3 : tensor<8x16x32xf32>, tensor<8x32x24xf32>) outs(%sz : tensor<8x16x24xf32>) -> tensor<8x16x24xf32>
  %s = tensor.expand_shape %s3 [[0, 1], [2], [3]] output_shape [2, 4, 16, 24] : tensor<8x16x24xf32> into tensor<2x4x16x24xf32>
  %e0 = tensor.empty() : tensor<2x4x16x24xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %scale : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %e1 = tensor.empty() : tensor<2x4x16xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %mx = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x : tensor<2x4x16x24xf32>) outs(%mi : tensor<2x4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16xf32>
  %mxk = tensor.expand_shape %mx [[0], [1], [2, 3]] output_shape [2, 4, 16, 1] : tensor<2x4x16xf32> into tensor<2x4x16x1xf32>
  %d = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %mxk : tensor<2x4x16x24xf32>, tensor<2x4x16x1xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %ex = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%d : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %li = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %l = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<2x4x16x24xf32>) outs(%li : tensor<2x4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16xf32>
  %lk = tensor.expand_shape %l [[0], [1], [2, 3]] output_shape [2, 4, 16, 1] : tensor<2x4x16xf32> into tensor<2x4x16x1xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %lk : tensor<2x4x16x24xf32>, tensor<2x4x16x1xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %p3 = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<2x4x16x24xf32> into tensor<8x16x24xf32>
  %v3 = tensor.collapse_shape %vr [[0, 1], [2], [3]] : tensor<2x4x24x32xf32> into tensor<8x24x32xf32>
  %oe = tensor.empty() : tensor<8x16x32xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %o3 = linalg.batch_matmul ins(%p3, %v3 : tensor<8x16x24xf32>, tensor<8x24x32xf32>) outs(%oz : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %o = tensor.expand_shape %o3 [[0, 1], [2], [3]] output_shape [2, 4, 16, 32] : tensor<8x16x32xf32> into tensor<2x4x16x32xf32>
  return %o : tensor<2x4x16x32xf32>
}

// -----

// StableHLO-to-linalg with primitive ops, in JAX's [B, T, N, H] layout
// (einsum BTNH,BSNH->BNTS as a linalg.generic contraction): the scale a
// linalg.map multiply by a splat tensor constant, causal from two iotas
// compared (GE) and broadcast, selecting JAX's large finite negative,
// softmax as linalg.reduce / linalg.broadcast / linalg.map: top-left
// causal, and the op reads Q, K, V and writes O in place (no transpose).
// CHECK-LABEL: func.func @stablehlo_causal
// CHECK-NOT: linalg.transpose
// CHECK: %[[O:.*]] = flashattn.attention ins(%arg0, %arg1, %arg2 : {{.*}}) outs(%{{.*}} : tensor<2x16x4x32xf32>) {causal = #flashattn.causal<top_left>, scale = 0.176776{{[0-9]+}} : f32} -> tensor<2x16x4x32xf32>
// CHECK-NEXT: return %[[O]]
#q5 = affine_map<(b, n, t, s, h) -> (b, t, n, h)>
#k5 = affine_map<(b, n, t, s, h) -> (b, s, n, h)>
#s5 = affine_map<(b, n, t, s, h) -> (b, n, t, s)>
#p5 = affine_map<(b, t, n, h, s) -> (b, n, t, s)>
#v5 = affine_map<(b, t, n, h, s) -> (b, s, n, h)>
#o5 = affine_map<(b, t, n, h, s) -> (b, t, n, h)>
#id2 = affine_map<(t, s) -> (t, s)>
func.func @stablehlo_causal(%q: tensor<2x16x4x32xf32>, %k: tensor<2x16x4x32xf32>, %v: tensor<2x16x4x32xf32>) -> tensor<2x16x4x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant dense<0.176776695> : tensor<2x4x16x16xf32>
  %big = arith.constant dense<-2.38197633e+38> : tensor<2x4x16x16xf32>
  %e0 = tensor.empty() : tensor<2x4x16x16xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %s = linalg.generic {indexing_maps = [#q5, #k5, #s5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x16x4x32xf32>, tensor<2x16x4x32xf32>) outs(%z0 : tensor<2x4x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x16xf32>
  %x0 = linalg.map { arith.mulf } ins(%s, %scale : tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) outs(%e0 : tensor<2x4x16x16xf32>)
  %ie = tensor.empty() : tensor<16x16xi32>
  %rows = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%ie : tensor<16x16xi32>) {
  ^bb0(%o: i32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i32
    linalg.yield %c : i32
  } -> tensor<16x16xi32>
  %cols = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%ie : tensor<16x16xi32>) {
  ^bb0(%o: i32):
    %j = linalg.index 1 : index
    %c = arith.index_cast %j : index to i32
    linalg.yield %c : i32
  } -> tensor<16x16xi32>
  %be = tensor.empty() : tensor<16x16xi1>
  %keep2 = linalg.map ins(%rows, %cols : tensor<16x16xi32>, tensor<16x16xi32>) outs(%be : tensor<16x16xi1>)
      (%r: i32, %c: i32, %init: i1) {
    %ge = arith.cmpi sge, %r, %c : i32
    linalg.yield %ge : i1
  }
  %ke = tensor.empty() : tensor<2x4x16x16xi1>
  %keep = linalg.broadcast ins(%keep2 : tensor<16x16xi1>) outs(%ke : tensor<2x4x16x16xi1>) dimensions = [0, 1]
  %x = linalg.map ins(%keep, %x0, %big : tensor<2x4x16x16xi1>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) outs(%e0 : tensor<2x4x16x16xf32>)
      (%m: i1, %a: f32, %n: f32, %init: f32) {
    %r = arith.select %m, %a, %n : f32
    linalg.yield %r : f32
  }
  %e1 = tensor.empty() : tensor<2x4x16xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %mx = linalg.reduce { arith.maximumf } ins(%x : tensor<2x4x16x16xf32>) outs(%mi : tensor<2x4x16xf32>) dimensions = [3]
  %mb = linalg.broadcast ins(%mx : tensor<2x4x16xf32>) outs(%e0 : tensor<2x4x16x16xf32>) dimensions = [3]
  %d = linalg.map { arith.subf } ins(%x, %mb : tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) outs(%e0 : tensor<2x4x16x16xf32>)
  %ex = linalg.map { math.exp } ins(%d : tensor<2x4x16x16xf32>) outs(%e0 : tensor<2x4x16x16xf32>)
  %li = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %l = linalg.reduce { arith.addf } ins(%ex : tensor<2x4x16x16xf32>) outs(%li : tensor<2x4x16xf32>) dimensions = [3]
  %lb = linalg.broadcast ins(%l : tensor<2x4x16xf32>) outs(%e0 : tensor<2x4x16x16xf32>) dimensions = [3]
  %p = linalg.map { arith.divf } ins(%ex, %lb : tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) outs(%e0 : tensor<2x4x16x16xf32>)
  %oe = tensor.empty() : tensor<2x16x4x32xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x16x4x32xf32>) -> tensor<2x16x4x32xf32>
  %o = linalg.generic {indexing_maps = [#p5, #v5, #o5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x4x16x16xf32>, tensor<2x16x4x32xf32>) outs(%oz : tensor<2x16x4x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x16x4x32xf32>
  return %o : tensor<2x16x4x32xf32>
}

// -----

// Broadcast masks: an additive bias [1, H, Sq, Sk] read through a map with
// a constant batch index, then JAX's padding where(keep, x, large negative)
// from a [B, Sq, Sk] mask (finite: a fully masked row keeps the mean of V,
// so it stays a select in the score region), then masked_fill(pad, -inf)
// from a [B, Sk] key-padding mask broadcast by linalg.broadcast (a mask
// region keeping the keys not padded).
// CHECK-LABEL: func.func @broadcast_masks
// CHECK-SAME: %[[BIAS:[a-z0-9]+]]: tensor<1x4x16x24xf32>, %[[KEEP:[a-z0-9]+]]: tensor<2x16x24xi1>, %[[PAD:[a-z0-9]+]]: tensor<2x24xi1>
// CHECK-DAG: %[[TRUE:.*]] = arith.constant true
// CHECK-DAG: %[[C:.*]] = arith.constant -2.38197633E+38 : f32
// CHECK: flashattn.attention {{.*}} score(%[[S:.*]]: f32, %[[B:.*]]: index, %[[H:.*]]: index, %[[I:.*]]: index, %[[J:.*]]: index) {
// CHECK: %[[E:.*]] = tensor.extract %[[BIAS]][%{{.*}}, %[[H]], %[[I]], %[[J]]]
// CHECK: %[[A:.*]] = arith.addf %[[S]], %[[E]] : f32
// CHECK: %[[K:.*]] = tensor.extract %[[KEEP]][%[[B]], %[[I]], %[[J]]]
// CHECK: %[[R:.*]] = arith.select %[[K]], %[[A]], %[[C]] : f32
// CHECK: flashattn.yield %[[R]] : f32
// CHECK: } mask(%[[MB:.*]]: index, %[[MH:.*]]: index, %[[MI:.*]]: index, %[[MJ:.*]]: index) {
// CHECK: %[[P:.*]] = tensor.extract %[[PAD]][%[[MB]], %[[MJ]]]
// CHECK: %[[NP:.*]] = arith.xori %[[P]], %[[TRUE]] : i1
// CHECK: flashattn.yield %[[NP]] : i1
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#bias = affine_map<(b, h, i, j) -> (0, h, i, j)>
#bij = affine_map<(b, h, i, j) -> (b, i, j)>
func.func @broadcast_masks(%q: tensor<2x4x16x32xf32>, %k: tensor<2x4x24x32xf32>, %v: tensor<2x4x24x32xf32>,
                           %bias: tensor<1x4x16x24xf32>, %keep: tensor<2x16x24xi1>, %pad: tensor<2x24xi1>) -> tensor<2x4x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %big = arith.constant -2.38197633e+38 : f32
  %c = arith.constant 0.125 : f32
  %e0 = tensor.empty() : tensor<2x4x16x24xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x16x32xf32>, tensor<2x4x24x32xf32>) outs(%z0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %x0 = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %bias : tensor<2x4x16x24xf32>, tensor<1x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %t = arith.mulf %a, %c : f32
    %r = arith.addf %t, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %x1 = linalg.generic {indexing_maps = [#bij, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%keep, %x0 : tensor<2x16x24xi1>, tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%m: i1, %a: f32, %o: f32):
    %r = arith.select %m, %a, %big : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %pe = tensor.empty() : tensor<2x4x16x24xi1>
  %padb = linalg.broadcast ins(%pad : tensor<2x24xi1>) outs(%pe : tensor<2x4x16x24xi1>) dimensions = [1, 2]
  %x = linalg.map ins(%padb, %x1 : tensor<2x4x16x24xi1>, tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>)
      (%m: i1, %a: f32, %init: f32) {
    %r = arith.select %m, %ninf, %a : f32
    linalg.yield %r : f32
  }
  %es = tensor.empty() : tensor<2x4x16x24xf32>
  %p = linalg.softmax dimension(3) ins(%x : tensor<2x4x16x24xf32>) outs(%es : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %e2 = tensor.empty() : tensor<2x4x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x16x32xf32>) -> tensor<2x4x16x32xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x4x16x24xf32>, tensor<2x4x24x32xf32>) outs(%z2 : tensor<2x4x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x32xf32>
  return %o : tensor<2x4x16x32xf32>
}

// -----

// K / V repeated with the copies outside the kv heads ([G, Hkv] collapsed:
// query head h would read kv head h mod Hkv, not FlashAttention's
// h / (H / Hkv)): raised on the repeated tensors, 4 kv heads.
// CHECK-LABEL: func.func @repeat_groups_outside
// CHECK: flashattn.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<2x16x4x32xf32>, tensor<2x24x4x32xf32>, tensor<2x24x4x32xf32>)
#outer5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d3, d4)>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
func.func @repeat_groups_outside(%q: tensor<2x4x16x32xf32>, %k: tensor<2x2x24x32xf32>, %v: tensor<2x2x24x32xf32>) -> tensor<2x4x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e5 = tensor.empty() : tensor<2x2x2x24x32xf32>
  %kb = linalg.generic {indexing_maps = [#outer5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%k : tensor<2x2x24x32xf32>) outs(%e5 : tensor<2x2x2x24x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x2x2x24x32xf32>
  %vb = linalg.generic {indexing_maps = [#outer5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%v : tensor<2x2x24x32xf32>) outs(%e5 : tensor<2x2x2x24x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x2x2x24x32xf32>
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<2x2x2x24x32xf32> into tensor<2x4x24x32xf32>
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<2x2x2x24x32xf32> into tensor<2x4x24x32xf32>
  %e0 = tensor.empty() : tensor<2x4x16x24xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kr : tensor<2x4x16x32xf32>, tensor<2x4x24x32xf32>) outs(%z0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %e2 = tensor.empty() : tensor<2x4x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x16x32xf32>) -> tensor<2x4x16x32xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %vr : tensor<2x4x16x24xf32>, tensor<2x4x24x32xf32>) outs(%z2 : tensor<2x4x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x32xf32>
  return %o : tensor<2x4x16x32xf32>
}

// -----

// Near miss: keys at or after the query kept (j >= i, not causal): unchanged.
// CHECK-LABEL: func.func @anti_causal
// CHECK-NOT: flashattn.attention
// CHECK: linalg.softmax
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
func.func @anti_causal(%q: tensor<2x4x16x32xf32>, %k: tensor<2x4x24x32xf32>, %v: tensor<2x4x24x32xf32>) -> tensor<2x4x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<2x4x16x24xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x16x32xf32>, tensor<2x4x24x32xf32>) outs(%z0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %keep = arith.cmpi sge, %j, %i : index
    %r = arith.select %keep, %a, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %p = linalg.softmax dimension(3) ins(%x : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %e2 = tensor.empty() : tensor<2x4x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x16x32xf32>) -> tensor<2x4x16x32xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x4x16x24xf32>, tensor<2x4x24x32xf32>) outs(%z2 : tensor<2x4x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x32xf32>
  return %o : tensor<2x4x16x32xf32>
}

// -----

// Near miss: a batch_matmul whose operands collapse different [B, H]
// ([2, 4] and [4, 2]): batch n of Q and of K are not one (b, h): unchanged.
// CHECK-LABEL: func.func @batch_matmul_other_split
// CHECK-NOT: flashattn.attention
// CHECK: linalg.batch_matmul
func.func @batch_matmul_other_split(%q: tensor<2x4x16x32xf32>, %kt: tensor<4x2x32x24xf32>, %v: tensor<2x4x24x32xf32>) -> tensor<2x4x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x4x16x32xf32> into tensor<8x16x32xf32>
  %kt3 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<4x2x32x24xf32> into tensor<8x32x24xf32>
  %se = tensor.empty() : tensor<8x16x24xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<8x16x24xf32>) -> tensor<8x16x24xf32>
  %s3 = linalg.batch_matmul ins(%q3, %kt3 : tensor<8x16x32xf32>, tensor<8x32x24xf32>) outs(%sz : tensor<8x16x24xf32>) -> tensor<8x16x24xf32>
  %s = tensor.expand_shape %s3 [[0, 1], [2], [3]] output_shape [2, 4, 16, 24] : tensor<8x16x24xf32> into tensor<2x4x16x24xf32>
  %e0 = tensor.empty() : tensor<2x4x16x24xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %p3 = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<2x4x16x24xf32> into tensor<8x16x24xf32>
  %v3 = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<2x4x24x32xf32> into tensor<8x24x32xf32>
  %oe = tensor.empty() : tensor<8x16x32xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %o3 = linalg.batch_matmul ins(%p3, %v3 : tensor<8x16x24xf32>, tensor<8x24x32xf32>) outs(%oz : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %o = tensor.expand_shape %o3 [[0, 1], [2], [3]] output_shape [2, 4, 16, 32] : tensor<8x16x32xf32> into tensor<2x4x16x32xf32>
  return %o : tensor<2x4x16x32xf32>
}

// -----

// One head without a batch dim: linalg.matmul with a transposing
// indexing_maps for Q K^T, linalg.softmax over dimension 1, linalg.matmul
// with V: the op on [1, S, 1, D] views (expand_shape), its result collapsed
// back to [Sq, Dv].
// CHECK-LABEL: func.func @matmul_2d
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<16x32xf32>, %[[K:[a-z0-9]+]]: tensor<24x32xf32>, %[[V:[a-z0-9]+]]: tensor<24x8xf32>
// CHECK-DAG: %[[Q4:.*]] = tensor.expand_shape %[[Q]] {{\[}}[0, 1], [2, 3]] output_shape [1, 16, 1, 32]
// CHECK-DAG: %[[K4:.*]] = tensor.expand_shape %[[K]] {{\[}}[0, 1], [2, 3]] output_shape [1, 24, 1, 32]
// CHECK-DAG: %[[V4:.*]] = tensor.expand_shape %[[V]] {{\[}}[0, 1], [2, 3]] output_shape [1, 24, 1, 8]
// CHECK: %[[O:.*]] = flashattn.attention ins(%[[Q4]], %[[K4]], %[[V4]] : {{.*}}) outs(%{{.*}} : tensor<1x16x1x8xf32>) {scale = 1.000000e+00 : f32}
// CHECK: %[[O2:.*]] = tensor.collapse_shape %[[O]] {{\[}}[0, 1], [2, 3]] : tensor<1x16x1x8xf32> into tensor<16x8xf32>
// CHECK: return %[[O2]]
func.func @matmul_2d(%q: tensor<16x32xf32>, %k: tensor<24x32xf32>, %v: tensor<24x8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<16x24xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<16x24xf32>) -> tensor<16x24xf32>
  %s = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%q, %k : tensor<16x32xf32>, tensor<24x32xf32>) outs(%z0 : tensor<16x24xf32>) -> tensor<16x24xf32>
  %p = linalg.softmax dimension(1) ins(%s : tensor<16x24xf32>) outs(%e0 : tensor<16x24xf32>) -> tensor<16x24xf32>
  %e1 = tensor.empty() : tensor<16x8xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<16x8xf32>) -> tensor<16x8xf32>
  %o = linalg.matmul ins(%p, %v : tensor<16x24xf32>, tensor<24x8xf32>) outs(%z1 : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %o : tensor<16x8xf32>
}

// -----

// Near miss: a sliding window (j <= i and i - j <= 3) with Sq = 16 != Sk = 24:
// the op's window is bottom-right aligned, the written one top-left:
// unchanged.
// CHECK-LABEL: func.func @window_unequal_lengths
// CHECK-NOT: flashattn.attention
// CHECK: linalg.softmax
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
func.func @window_unequal_lengths(%q: tensor<2x4x16x32xf32>, %k: tensor<2x4x24x32xf32>, %v: tensor<2x4x24x32xf32>) -> tensor<2x4x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<2x4x16x24xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x16x32xf32>, tensor<2x4x24x32xf32>) outs(%z0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %c3 = arith.constant 3 : index
    %causal = arith.cmpi sle, %j, %i : index
    %d = arith.subi %i, %j : index
    %near = arith.cmpi sle, %d, %c3 : index
    %keep = arith.andi %causal, %near : i1
    %r = arith.select %keep, %a, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %p = linalg.softmax dimension(3) ins(%x : tensor<2x4x16x24xf32>) outs(%e0 : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %e2 = tensor.empty() : tensor<2x4x16x32xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x16x32xf32>) -> tensor<2x4x16x32xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x4x16x24xf32>, tensor<2x4x24x32xf32>) outs(%z2 : tensor<2x4x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x32xf32>
  return %o : tensor<2x4x16x32xf32>
}

// -----

// torch-mlir's bf16 form: the batch_matmuls accumulate in f32 and round to
// bf16 (a truncf generic before the expand_shape), the softmax in bf16:
// the op on the bf16 operands writes bf16 (its f32 accumulator rounded
// once, as the truncf of P V did).
// CHECK-LABEL: func.func @torch_bf16
// CHECK: %[[O:.*]] = flashattn.attention ins({{.*}} : tensor<1x16x2x32xbf16>, tensor<1x24x2x32xbf16>, tensor<1x24x2x32xbf16>) outs(%{{.*}} : tensor<1x16x2x32xbf16>)
// CHECK-NOT: linalg.batch_matmul
// CHECK-NOT: arith.truncf
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @torch_bf16(%q: tensor<1x2x16x32xbf16>, %kt: tensor<1x2x32x24xbf16>, %v: tensor<1x2x24x32xbf16>) -> tensor<1x2x16x32xbf16> {
  %zero = arith.constant 0.0 : f32
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<1x2x16x32xbf16> into tensor<2x16x32xbf16>
  %kt3 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<1x2x32x24xbf16> into tensor<2x32x24xbf16>
  %se = tensor.empty() : tensor<2x16x24xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x16x24xf32>) -> tensor<2x16x24xf32>
  %s3 = linalg.batch_matmul ins(%q3, %kt3 : tensor<2x16x32xbf16>, tensor<2x32x24xbf16>) outs(%sz : tensor<2x16x24xf32>) -> tensor<2x16x24xf32>
  %sbe = tensor.empty() : tensor<2x16x24xbf16>
  %sb = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s3 : tensor<2x16x24xf32>) outs(%sbe : tensor<2x16x24xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x16x24xbf16>
  %s = tensor.expand_shape %sb [[0, 1], [2], [3]] output_shape [1, 2, 16, 24] : tensor<2x16x24xbf16> into tensor<1x2x16x24xbf16>
  %e0 = tensor.empty() : tensor<1x2x16x24xbf16>
  %p = linalg.softmax dimension(3) ins(%s : tensor<1x2x16x24xbf16>) outs(%e0 : tensor<1x2x16x24xbf16>) -> tensor<1x2x16x24xbf16>
  %p3 = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<1x2x16x24xbf16> into tensor<2x16x24xbf16>
  %v3 = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<1x2x24x32xbf16> into tensor<2x24x32xbf16>
  %oe = tensor.empty() : tensor<2x16x32xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  %o3 = linalg.batch_matmul ins(%p3, %v3 : tensor<2x16x24xbf16>, tensor<2x24x32xbf16>) outs(%oz : tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  %obe = tensor.empty() : tensor<2x16x32xbf16>
  %ob = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%o3 : tensor<2x16x32xf32>) outs(%obe : tensor<2x16x32xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x16x32xbf16>
  %o = tensor.expand_shape %ob [[0, 1], [2], [3]] output_shape [1, 2, 16, 32] : tensor<2x16x32xbf16> into tensor<1x2x16x32xbf16>
  return %o : tensor<1x2x16x32xbf16>
}

// -----

// Near miss: an unsigned comparison of i - j (i - j <= 0 unsigned keeps only
// the diagonal; a difference may wrap): unchanged.
// CHECK-LABEL: func.func @unsigned_difference
// CHECK-NOT: flashattn.attention
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row3 = affine_map<(b, h, i, j) -> (b, h, i)>
func.func @unsigned_difference(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %minit = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<1x2x8x8xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%z0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %x0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x2x8x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant 0.25 : f32
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %x1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x0 : tensor<1x2x8x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %d = arith.subi %i, %j : index
    %c0 = arith.constant 0 : index
    %ok = arith.cmpi ule, %d, %c0 : index
    %r = arith.select %ok, %a, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %e1 = tensor.empty() : tensor<1x2x8xf32>
  %mi = linalg.fill ins(%minit : f32) outs(%e1 : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x1 : tensor<1x2x8x8xf32>) outs(%mi : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x1, %mx : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %li = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %l = linalg.generic {indexing_maps = [#id, #row3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<1x2x8x8xf32>) outs(%li : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %l : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %e2 = tensor.empty() : tensor<1x2x8x16xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%z2 : tensor<1x2x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Near miss: a "contraction" reducing over d while Q reads another loop e
// that out lacks ((sum q)(sum k), not a dot product): unchanged.
// CHECK-LABEL: func.func @qk_extra_loop
// CHECK-NOT: flashattn.attention
#q6 = affine_map<(b, h, i, j, d, e) -> (b, h, i, e)>
#k6 = affine_map<(b, h, i, j, d, e) -> (b, h, j, d)>
#s6 = affine_map<(b, h, i, j, d, e) -> (b, h, i, j)>
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row3 = affine_map<(b, h, i, j) -> (b, h, i)>
func.func @qk_extra_loop(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %minit = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<1x2x8x8xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [#q6, #k6, #s6], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "parallel"]}
      ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%z0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %x0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x2x8x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant 0.01 : f32
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %e1 = tensor.empty() : tensor<1x2x8xf32>
  %mi = linalg.fill ins(%minit : f32) outs(%e1 : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x0 : tensor<1x2x8x8xf32>) outs(%mi : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x0, %mx : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %li = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %l = linalg.generic {indexing_maps = [#id, #row3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<1x2x8x8xf32>) outs(%li : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %l : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %e2 = tensor.empty() : tensor<1x2x8x16xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%z2 : tensor<1x2x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Near miss: the softmax's sum reduces over the queries too (its result
// map (b, h)): unchanged.
// CHECK-LABEL: func.func @row_sum_over_queries
// CHECK-NOT: flashattn.attention
#row2 = affine_map<(b, h, i, j) -> (b, h)>
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row3 = affine_map<(b, h, i, j) -> (b, h, i)>
func.func @row_sum_over_queries(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %minit = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<1x2x8x8xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%z0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %x0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x2x8x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant 0.25 : f32
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %e1 = tensor.empty() : tensor<1x2x8xf32>
  %mi = linalg.fill ins(%minit : f32) outs(%e1 : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x0 : tensor<1x2x8x8xf32>) outs(%mi : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x0, %mx : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %e12 = tensor.empty() : tensor<1x2xf32>
  %li = linalg.fill ins(%zero : f32) outs(%e12 : tensor<1x2xf32>) -> tensor<1x2xf32>
  %l = linalg.generic {indexing_maps = [#id, #row2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<1x2x8x8xf32>) outs(%li : tensor<1x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2xf32>
  %p = linalg.generic {indexing_maps = [#id, #row2, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %l : tensor<1x2x8x8xf32>, tensor<1x2xf32>) outs(%e0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %e2 = tensor.empty() : tensor<1x2x8x16xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%z2 : tensor<1x2x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Near miss: the row max starts from a NaN fill (the unfused chain gives
// NaN): unchanged.
// CHECK-LABEL: func.func @max_init_nan
// CHECK-NOT: flashattn.attention
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row3 = affine_map<(b, h, i, j) -> (b, h, i)>
func.func @max_init_nan(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %minit = arith.constant 0x7FC00000 : f32
  %e0 = tensor.empty() : tensor<1x2x8x8xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%z0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %x0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x2x8x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant 0.25 : f32
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %e1 = tensor.empty() : tensor<1x2x8xf32>
  %mi = linalg.fill ins(%minit : f32) outs(%e1 : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x0 : tensor<1x2x8x8xf32>) outs(%mi : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x0, %mx : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %li = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %l = linalg.generic {indexing_maps = [#id, #row3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<1x2x8x8xf32>) outs(%li : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %l : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %e2 = tensor.empty() : tensor<1x2x8x16xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%z2 : tensor<1x2x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Near miss: a causal select to -1e30 outside a boolean -inf mask (a row
// whose causal keys are all masked averages V over the others): unchanged.
// CHECK-LABEL: func.func @finite_causal_over_mask
// CHECK-NOT: flashattn.attention
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row3 = affine_map<(b, h, i, j) -> (b, h, i)>
func.func @finite_causal_over_mask(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %keep: tensor<1x2x8x8xi1>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %minit = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<1x2x8x8xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %bigc = arith.constant -2.38197633e+38 : f32
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%z0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %x0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x2x8x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant 0.25 : f32
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %x1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x0, %keep : tensor<1x2x8x8xf32>, tensor<1x2x8x8xi1>) outs(%e0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %kk: i1, %o: f32):
    %r = arith.select %kk, %a, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %x2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x1 : tensor<1x2x8x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %ok = arith.cmpi sle, %j, %i : index
    %r = arith.select %ok, %a, %bigc : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %e1 = tensor.empty() : tensor<1x2x8xf32>
  %mi = linalg.fill ins(%minit : f32) outs(%e1 : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x2 : tensor<1x2x8x8xf32>) outs(%mi : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x2, %mx : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %li = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %l = linalg.generic {indexing_maps = [#id, #row3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<1x2x8x8xf32>) outs(%li : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %l : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %e2 = tensor.empty() : tensor<1x2x8x16xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%z2 : tensor<1x2x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Near miss: positions compared in i8 (wrapping past 127): unchanged.
// CHECK-LABEL: func.func @i8_positions
// CHECK-NOT: flashattn.attention
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row3 = affine_map<(b, h, i, j) -> (b, h, i)>
func.func @i8_positions(%q: tensor<1x1x40x16xf32>, %k: tensor<1x1x40x16xf32>, %v: tensor<1x1x40x16xf32>) -> tensor<1x1x40x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %minit = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<1x1x40x40xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x1x40x40xf32>) -> tensor<1x1x40x40xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x1x40x16xf32>, tensor<1x1x40x16xf32>) outs(%z0 : tensor<1x1x40x40xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x1x40x40xf32>
  %x0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x1x40x40xf32>) outs(%e0 : tensor<1x1x40x40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant 0.25 : f32
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x1x40x40xf32>
  %x1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x0 : tensor<1x1x40x40xf32>) outs(%e0 : tensor<1x1x40x40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %i8 = arith.index_cast %i : index to i8
    %j8 = arith.index_cast %j : index to i8
    %c = arith.constant 100 : i8
    %ia = arith.addi %i8, %c : i8
    %ja = arith.addi %j8, %c : i8
    %ok = arith.cmpi sle, %ja, %ia : i8
    %r = arith.select %ok, %a, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<1x1x40x40xf32>
  %e1 = tensor.empty() : tensor<1x1x40xf32>
  %mi = linalg.fill ins(%minit : f32) outs(%e1 : tensor<1x1x40xf32>) -> tensor<1x1x40xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x1 : tensor<1x1x40x40xf32>) outs(%mi : tensor<1x1x40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x1x40xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x1, %mx : tensor<1x1x40x40xf32>, tensor<1x1x40xf32>) outs(%e0 : tensor<1x1x40x40xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x1x40x40xf32>
  %li = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x1x40xf32>) -> tensor<1x1x40xf32>
  %l = linalg.generic {indexing_maps = [#id, #row3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<1x1x40x40xf32>) outs(%li : tensor<1x1x40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x1x40xf32>
  %p = linalg.generic {indexing_maps = [#id, #row3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %l : tensor<1x1x40x40xf32>, tensor<1x1x40xf32>) outs(%e0 : tensor<1x1x40x40xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x1x40x40xf32>
  %e2 = tensor.empty() : tensor<1x1x40x16xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x1x40x16xf32>) -> tensor<1x1x40x16xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x1x40x40xf32>, tensor<1x1x40x16xf32>) outs(%z2 : tensor<1x1x40x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x1x40x16xf32>
  return %o : tensor<1x1x40x16xf32>
}

// -----

// K repeated from 2 kv heads, V from 1 (both to 4 heads): the op cannot
// read them unrepeated with different head counts, so it reads both
// repeated.
// CHECK-LABEL: func.func @gqa_unequal_repeats
// CHECK: flashattn.attention ins({{.*}} : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#bB = affine_map<(d0, d1, d2, d3, d4) -> (0, d1, d3, d4)>
#bS = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, 0, d4)>
#bG = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row3 = affine_map<(b, h, i, j) -> (b, h, i)>
func.func @gqa_unequal_repeats(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x1x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %minit = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<2x4x8x8xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %ke5 = tensor.empty() : tensor<2x2x2x8x16xf32>
  %kb = linalg.generic {indexing_maps = [#bG, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%k : tensor<2x2x8x16xf32>) outs(%ke5 : tensor<2x2x2x8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x2x2x8x16xf32>
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<2x2x2x8x16xf32> into tensor<2x4x8x16xf32>
  %ve5 = tensor.empty() : tensor<2x1x4x8x16xf32>
  %vb = linalg.generic {indexing_maps = [#bG, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%v : tensor<2x1x8x16xf32>) outs(%ve5 : tensor<2x1x4x8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x1x4x8x16xf32>
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<2x1x4x8x16xf32> into tensor<2x4x8x16xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kr : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) outs(%z0 : tensor<2x4x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8x8xf32>
  %x0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x8x8xf32>) outs(%e0 : tensor<2x4x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant 0.25 : f32
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8x8xf32>
  %e1 = tensor.empty() : tensor<2x4x8xf32>
  %mi = linalg.fill ins(%minit : f32) outs(%e1 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x0 : tensor<2x4x8x8xf32>) outs(%mi : tensor<2x4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x0, %mx : tensor<2x4x8x8xf32>, tensor<2x4x8xf32>) outs(%e0 : tensor<2x4x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8x8xf32>
  %li = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %l = linalg.generic {indexing_maps = [#id, #row3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<2x4x8x8xf32>) outs(%li : tensor<2x4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %l : tensor<2x4x8x8xf32>, tensor<2x4x8xf32>) outs(%e0 : tensor<2x4x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8x8xf32>
  %e2 = tensor.empty() : tensor<2x4x8x16xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %vr : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) outs(%z2 : tensor<2x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}
