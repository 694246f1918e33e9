// RUN: fa-opt %s --flashattn-raise | FileCheck %s --check-prefix=RAISED
// RUN: fa-opt %s --flashattn-raise --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --convert-linalg-to-loops --flashattn-host-pipeline | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs > %t.raised
// RUN: fa-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --convert-linalg-to-loops --flashattn-host-pipeline | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs > %t.unraised
// RUN: python3 %S/Inputs/compare_printed.py %t.raised %t.unraised | FileCheck %s
//
// Attention in linalg + softmax (SDPA layout, f32): Q K^T, a scale, an
// additive mask whose row 3 is all the dtype's minimum (Hugging Face's
// form: that row keeps its causal keys, all equally weighted), top-left
// causal from linalg.index, the softmax decomposition, P V. Raised and
// lowered by the host pipeline, it gives the same values as the unraised
// module through upstream's linalg lowering (f32 rule).
// RAISED: flashattn.attention {{.*}} {causal = #flashattn.causal<top_left>, scale = 2.500000e-01 : f32}
// RAISED: score(
// RAISED: tensor.extract
// RAISED-NOT: math.exp
// CHECK: compare: 256 values, {{.*}}: PASS

#qk_q = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#qk_k = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#qk_s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#pv_p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#pv_v = affine_map<(b, h, i, e, j) -> (b, h, j, e)>
#pv_o = affine_map<(b, h, i, e, j) -> (b, h, i, e)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i, 0)>
#row3 = affine_map<(b, h, i, j) -> (b, h, i)>

func.func private @printMemrefF32(tensor<*xf32>)

func.func @sdpa(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x12x16xf32>, %v: tensor<1x2x12x16xf32>,
                %mask: tensor<1x2x8x12xf32>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 4.0 : f32
  %e0 = tensor.empty() : tensor<1x2x8x12xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x8x12xf32>) -> tensor<1x2x8x12xf32>
  %s = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x12x16xf32>) outs(%z0 : tensor<1x2x8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x12xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x2x8x12xf32>) outs(%e0 : tensor<1x2x8x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.divf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x12xf32>
  %added = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%scaled, %mask : tensor<1x2x8x12xf32>, tensor<1x2x8x12xf32>) outs(%e0 : tensor<1x2x8x12xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %r = arith.addf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x12xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%added : tensor<1x2x8x12xf32>) outs(%e0 : tensor<1x2x8x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %keep = arith.cmpi sle, %j, %i : index
    %r = arith.select %keep, %a, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x12xf32>
  %e1 = tensor.empty() : tensor<1x2x8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x : tensor<1x2x8x12xf32>) outs(%mi : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %mx : tensor<1x2x8x12xf32>, tensor<1x2x8xf32>) outs(%e0 : tensor<1x2x8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x12xf32>
  %li = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %l = linalg.generic {indexing_maps = [#id, #row3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<1x2x8x12xf32>) outs(%li : tensor<1x2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #row3, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %l : tensor<1x2x8x12xf32>, tensor<1x2x8xf32>) outs(%e0 : tensor<1x2x8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x12xf32>
  %e2 = tensor.empty() : tensor<1x2x8x16xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x12xf32>, tensor<1x2x12x16xf32>) outs(%z2 : tensor<1x2x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// sin(0.37 b + 0.11 h + 0.23 i + 0.07 j + seed) over a shape.
func.func @inputs(%t: tensor<?x?x?x?xf32>, %seed: f32) -> tensor<?x?x?x?xf32> {
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%t : tensor<?x?x?x?xf32>) {
  ^bb0(%o: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %f0 = arith.index_cast %i0 : index to i64
    %f1 = arith.index_cast %i1 : index to i64
    %f2 = arith.index_cast %i2 : index to i64
    %f3 = arith.index_cast %i3 : index to i64
    %g0 = arith.sitofp %f0 : i64 to f32
    %g1 = arith.sitofp %f1 : i64 to f32
    %g2 = arith.sitofp %f2 : i64 to f32
    %g3 = arith.sitofp %f3 : i64 to f32
    %c0 = arith.constant 0.37 : f32
    %c1 = arith.constant 0.11 : f32
    %c2 = arith.constant 0.23 : f32
    %c3 = arith.constant 0.07 : f32
    %a0 = arith.mulf %g0, %c0 : f32
    %a1 = arith.mulf %g1, %c1 : f32
    %a2 = arith.mulf %g2, %c2 : f32
    %a3 = arith.mulf %g3, %c3 : f32
    %s0 = arith.addf %a0, %a1 : f32
    %s1 = arith.addf %s0, %a2 : f32
    %s2 = arith.addf %s1, %a3 : f32
    %s3 = arith.addf %s2, %seed : f32
    %y = math.sin %s3 : f32
    linalg.yield %y : f32
  } -> tensor<?x?x?x?xf32>
  return %r : tensor<?x?x?x?xf32>
}

func.func @main() {
  %s1 = arith.constant 1.0 : f32
  %s2 = arith.constant 2.0 : f32
  %s3 = arith.constant 3.0 : f32
  %eq = tensor.empty() : tensor<1x2x8x16xf32>
  %ek = tensor.empty() : tensor<1x2x12x16xf32>
  %qd = tensor.cast %eq : tensor<1x2x8x16xf32> to tensor<?x?x?x?xf32>
  %kd = tensor.cast %ek : tensor<1x2x12x16xf32> to tensor<?x?x?x?xf32>
  %q0 = call @inputs(%qd, %s1) : (tensor<?x?x?x?xf32>, f32) -> tensor<?x?x?x?xf32>
  %k0 = call @inputs(%kd, %s2) : (tensor<?x?x?x?xf32>, f32) -> tensor<?x?x?x?xf32>
  %kd2 = tensor.cast %ek : tensor<1x2x12x16xf32> to tensor<?x?x?x?xf32>
  %v0 = call @inputs(%kd2, %s3) : (tensor<?x?x?x?xf32>, f32) -> tensor<?x?x?x?xf32>
  %q = tensor.cast %q0 : tensor<?x?x?x?xf32> to tensor<1x2x8x16xf32>
  %k = tensor.cast %k0 : tensor<?x?x?x?xf32> to tensor<1x2x12x16xf32>
  %v = tensor.cast %v0 : tensor<?x?x?x?xf32> to tensor<1x2x12x16xf32>
  // The additive mask: 0, and the f32 minimum on every key of row 3.
  %em = tensor.empty() : tensor<1x2x8x12xf32>
  %mask = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%em : tensor<1x2x8x12xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 2 : index
    %c3i = arith.constant 3 : index
    %row3 = arith.cmpi eq, %i, %c3i : index
    %min = arith.constant -3.40282347e+38 : f32
    %z = arith.constant 0.0 : f32
    %m = arith.select %row3, %min, %z : f32
    linalg.yield %m : f32
  } -> tensor<1x2x8x12xf32>
  %o = call @sdpa(%q, %k, %v, %mask) : (tensor<1x2x8x16xf32>, tensor<1x2x12x16xf32>, tensor<1x2x12x16xf32>, tensor<1x2x8x12xf32>) -> tensor<1x2x8x16xf32>
  %u = tensor.cast %o : tensor<1x2x8x16xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
