// RUN: fa-opt %s --flashattn-raise --split-input-file | FileCheck %s

// torch-mlir's linalg-on-tensors SDPA with an additive mask (the
// decomposition: keepdim max / sum [B, H, Sq, 1], a divide by sqrt(D)):
// flashattn.attention on the transposed operands with scale 1/sqrt(32), a score
// region adding the mask (captured, tensor.extract at b, h, i, j), and a
// transpose of its result back to [B, H, Sq, D].
// CHECK-LABEL: func.func @torch_additive
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<2x4x16x32xf32>, %[[K:[a-z0-9]+]]: tensor<2x4x24x32xf32>, %[[V:[a-z0-9]+]]: tensor<2x4x24x32xf32>, %[[M:[a-z0-9]+]]: tensor<2x4x16x24xf32>
// CHECK: %[[QT:.*]] = linalg.transpose ins(%[[Q]] : {{.*}}) outs(%{{.*}} : tensor<2x16x4x32xf32>) permutation = [0, 2, 1, 3]
// CHECK: %[[VT:.*]] = linalg.transpose ins(%[[V]] : {{.*}}) outs(%{{.*}} : tensor<2x24x4x32xf32>) permutation = [0, 2, 1, 3]
// CHECK: %[[KT:.*]] = linalg.transpose ins(%[[K]] : {{.*}}) outs(%{{.*}} : tensor<2x24x4x32xf32>) permutation = [0, 2, 1, 3]
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
