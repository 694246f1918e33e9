// RUN: fa-opt %s --flashattn-raise | FileCheck %s --check-prefix=RAISED
// RUN: fa-opt %s --flashattn-raise --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --convert-linalg-to-loops --flashattn-host-pipeline | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs > %t.raised
// RUN: fa-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --convert-linalg-to-loops --flashattn-host-pipeline | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs > %t.unraised
// RUN: python3 %S/Inputs/compare_printed.py %t.raised %t.unraised | FileCheck %s
//
// GQA attention in torch-mlir's form (4 query heads over 2 kv heads
// repeated by expand_shape + broadcast + collapse_shape, K^T by
// linalg.transpose, the matmuls as linalg.batch_matmul between
// collapse_shape and expand_shape) with one fused step: top-left causal
// from linalg.index, the scale and an additive mask whose row 3 is all the
// f32 minimum. Raised (the op reads the 2 kv heads) and lowered by the host
// pipeline, it gives the unraised module's values (f32 rule).
// RAISED: flashattn.attention {{.*}} tensor<1x12x2x16xf32>, tensor<1x12x2x16xf32>) {{.*}} {causal = #flashattn.causal<top_left>, scale = 2.500000e-01 : f32}
// RAISED-NOT: linalg.batch_matmul
// CHECK: compare: 512 values, {{.*}}: PASS

#bcast5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, 0, d3, d4)>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i, 0)>
#row3 = affine_map<(b, h, i, j) -> (b, h, i)>

func.func private @printMemrefF32(tensor<*xf32>)

func.func @sdpa(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x12x16xf32>, %v: tensor<1x2x12x16xf32>,
                %mask: tensor<1x4x8x12xf32>) -> tensor<1x4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.25 : f32
  %ku = tensor.expand_shape %k [[0], [1, 2], [3], [4]] output_shape [1, 2, 1, 12, 16] : tensor<1x2x12x16xf32> into tensor<1x2x1x12x16xf32>
  %ke = tensor.empty() : tensor<1x2x2x12x16xf32>
  %kb = linalg.generic {indexing_maps = [#bcast5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%ku : tensor<1x2x1x12x16xf32>) outs(%ke : tensor<1x2x2x12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<1x2x2x12x16xf32>
  %kr = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %vu = tensor.expand_shape %v [[0], [1, 2], [3], [4]] output_shape [1, 2, 1, 12, 16] : tensor<1x2x12x16xf32> into tensor<1x2x1x12x16xf32>
  %ve = tensor.empty() : tensor<1x2x2x12x16xf32>
  %vb = linalg.generic {indexing_maps = [#bcast5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%vu : tensor<1x2x1x12x16xf32>) outs(%ve : tensor<1x2x2x12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<1x2x2x12x16xf32>
  %vr = tensor.collapse_shape %vb [[0], [1, 2], [3], [4]] : tensor<1x2x2x12x16xf32> into tensor<1x4x12x16xf32>
  %kte = tensor.empty() : tensor<1x4x16x12xf32>
  %kt = linalg.transpose ins(%kr : tensor<1x4x12x16xf32>) outs(%kte : tensor<1x4x16x12xf32>) permutation = [0, 1, 3, 2]
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<1x4x8x16xf32> into tensor<4x8x16xf32>
  %kt3 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<1x4x16x12xf32> into tensor<4x16x12xf32>
  %se = tensor.empty() : tensor<4x8x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<4x8x12xf32>) -> tensor<4x8x12xf32>
  %s3 = linalg.batch_matmul ins(%q3, %kt3 : tensor<4x8x16xf32>, tensor<4x16x12xf32>) outs(%sz : tensor<4x8x12xf32>) -> tensor<4x8x12xf32>
  %s = tensor.expand_shape %s3 [[0, 1], [2], [3]] output_shape [1, 4, 8, 12] : tensor<4x8x12xf32> into tensor<1x4x8x12xf32>
  %e0 = tensor.empty() : tensor<1x4x8x12xf32>
  %x = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %mask : tensor<1x4x8x12xf32>, tensor<1x4x8x12xf32>) outs(%e0 : tensor<1x4x8x12xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %t = arith.mulf %a, %scale : f32
    %u = arith.addf %t, %m : f32
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %keep = arith.cmpi ule, %j, %i : index
    %r = arith.select %keep, %u, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x12xf32>
  %e1 = tensor.empty() : tensor<1x4x8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x : tensor<1x4x8x12xf32>) outs(%mi : tensor<1x4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8xf32>
  %mxk = tensor.expand_shape %mx [[0], [1], [2, 3]] output_shape [1, 4, 8, 1] : tensor<1x4x8xf32> into tensor<1x4x8x1xf32>
  %d = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %mxk : tensor<1x4x8x12xf32>, tensor<1x4x8x1xf32>) outs(%e0 : tensor<1x4x8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x12xf32>
  %ex = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%d : tensor<1x4x8x12xf32>) outs(%e0 : tensor<1x4x8x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x12xf32>
  %li = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %l = linalg.generic {indexing_maps = [#id, #row3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<1x4x8x12xf32>) outs(%li : tensor<1x4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8xf32>
  %lk = tensor.expand_shape %l [[0], [1], [2, 3]] output_shape [1, 4, 8, 1] : tensor<1x4x8xf32> into tensor<1x4x8x1xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %lk : tensor<1x4x8x12xf32>, tensor<1x4x8x1xf32>) outs(%e0 : tensor<1x4x8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8x12xf32>
  %p3 = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<1x4x8x12xf32> into tensor<4x8x12xf32>
  %v3 = tensor.collapse_shape %vr [[0, 1], [2], [3]] : tensor<1x4x12x16xf32> into tensor<4x12x16xf32>
  %oe = tensor.empty() : tensor<4x8x16xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %o3 = linalg.batch_matmul ins(%p3, %v3 : tensor<4x8x12xf32>, tensor<4x12x16xf32>) outs(%oz : tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %o = tensor.expand_shape %o3 [[0, 1], [2], [3]] output_shape [1, 4, 8, 16] : tensor<4x8x16xf32> into tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
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
  %eq = tensor.empty() : tensor<1x4x8x16xf32>
  %ek = tensor.empty() : tensor<1x2x12x16xf32>
  %qd = tensor.cast %eq : tensor<1x4x8x16xf32> to tensor<?x?x?x?xf32>
  %kd = tensor.cast %ek : tensor<1x2x12x16xf32> to tensor<?x?x?x?xf32>
  %q0 = call @inputs(%qd, %s1) : (tensor<?x?x?x?xf32>, f32) -> tensor<?x?x?x?xf32>
  %k0 = call @inputs(%kd, %s2) : (tensor<?x?x?x?xf32>, f32) -> tensor<?x?x?x?xf32>
  %kd2 = tensor.cast %ek : tensor<1x2x12x16xf32> to tensor<?x?x?x?xf32>
  %v0 = call @inputs(%kd2, %s3) : (tensor<?x?x?x?xf32>, f32) -> tensor<?x?x?x?xf32>
  %q = tensor.cast %q0 : tensor<?x?x?x?xf32> to tensor<1x4x8x16xf32>
  %k = tensor.cast %k0 : tensor<?x?x?x?xf32> to tensor<1x2x12x16xf32>
  %v = tensor.cast %v0 : tensor<?x?x?x?xf32> to tensor<1x2x12x16xf32>
  // The additive mask: 0, and the f32 minimum on every key of row 3.
  %em = tensor.empty() : tensor<1x4x8x12xf32>
  %mask = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%em : tensor<1x4x8x12xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 2 : index
    %c3i = arith.constant 3 : index
    %isrow3 = arith.cmpi eq, %i, %c3i : index
    %min = arith.constant -3.40282347e+38 : f32
    %z = arith.constant 0.0 : f32
    %m = arith.select %isrow3, %min, %z : f32
    linalg.yield %m : f32
  } -> tensor<1x4x8x12xf32>
  %o = call @sdpa(%q, %k, %v, %mask) : (tensor<1x4x8x16xf32>, tensor<1x2x12x16xf32>, tensor<1x2x12x16xf32>, tensor<1x4x8x12xf32>) -> tensor<1x4x8x16xf32>
  %u = tensor.cast %o : tensor<1x4x8x16xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
