// RUN: fa-opt %s --flashattn-raise | FileCheck %s --check-prefix=RAISED
// RUN: fa-opt %s --flashattn-raise --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --convert-linalg-to-loops --flashattn-host-pipeline | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs > %t.raised
// RUN: fa-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --convert-linalg-to-loops --flashattn-host-pipeline | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs > %t.unraised
// RUN: python3 %S/Inputs/compare_printed.py %t.raised %t.unraised | FileCheck %s
//
// A causal sliding window in StableHLO-to-linalg's primitive form, JAX's
// [B, T, N, H] layout: two iotas, (row >= col) and (row - col <= 2)
// combined with andi, broadcast, selecting JAX's large finite negative;
// the scale a splat tensor; softmax by linalg.reduce / broadcast / map.
// Raised: window_size [2, 0] on the operands in place; lowered by the host
// pipeline it gives the unraised module's values (f32 rule).
// RAISED: flashattn.attention ins(%arg0, %arg1, %arg2 : {{.*}}) {{.*}} {scale = 2.500000e-01 : f32, window_size = array<i64: 2, 0>}
// CHECK: compare: 256 values, {{.*}}: PASS

#q5 = affine_map<(b, n, t, s, h) -> (b, t, n, h)>
#k5 = affine_map<(b, n, t, s, h) -> (b, s, n, h)>
#s5 = affine_map<(b, n, t, s, h) -> (b, n, t, s)>
#p5 = affine_map<(b, t, n, h, s) -> (b, n, t, s)>
#v5 = affine_map<(b, t, n, h, s) -> (b, s, n, h)>
#o5 = affine_map<(b, t, n, h, s) -> (b, t, n, h)>
#id2 = affine_map<(t, s) -> (t, s)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>

func.func private @printMemrefF32(tensor<*xf32>)

func.func @sdpa(%q: tensor<1x8x2x16xf32>, %k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x16xf32>) -> tensor<1x8x2x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %two = arith.constant 2 : i32
  %scale = arith.constant dense<0.25> : tensor<1x2x8x8xf32>
  %big = arith.constant dense<-2.38197633e+38> : tensor<1x2x8x8xf32>
  %e0 = tensor.empty() : tensor<1x2x8x8xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [#q5, #k5, #s5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>) outs(%z0 : tensor<1x2x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %x0 = linalg.map { arith.mulf } ins(%s, %scale : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>)
  %ie = tensor.empty() : tensor<8x8xi32>
  %rows = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%ie : tensor<8x8xi32>) {
  ^bb0(%o: i32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i32
    linalg.yield %c : i32
  } -> tensor<8x8xi32>
  %cols = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%ie : tensor<8x8xi32>) {
  ^bb0(%o: i32):
    %j = linalg.index 1 : index
    %c = arith.index_cast %j : index to i32
    linalg.yield %c : i32
  } -> tensor<8x8xi32>
  %be = tensor.empty() : tensor<8x8xi1>
  %keep2 = linalg.map ins(%rows, %cols : tensor<8x8xi32>, tensor<8x8xi32>) outs(%be : tensor<8x8xi1>)
      (%r: i32, %c: i32, %init: i1) {
    %ge = arith.cmpi sge, %r, %c : i32
    %d = arith.subi %r, %c : i32
    %near = arith.cmpi sle, %d, %two : i32
    %both = arith.andi %ge, %near : i1
    linalg.yield %both : i1
  }
  %ke = tensor.empty() : tensor<1x2x8x8xi1>
  %keep = linalg.broadcast ins(%keep2 : tensor<8x8xi1>) outs(%ke : tensor<1x2x8x8xi1>) dimensions = [0, 1]
  %x = linalg.map ins(%keep, %x0, %big : tensor<1x2x8x8xi1>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>)
      (%m: i1, %a: f32, %n: f32, %init: f32) {
    %r = arith.select %m, %a, %n : f32
    linalg.yield %r : f32
  }
  %e1 = tensor.empty() : tensor<1x2x8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %mx = linalg.reduce { arith.maximumf } ins(%x : tensor<1x2x8x8xf32>) outs(%mi : tensor<1x2x8xf32>) dimensions = [3]
  %mb = linalg.broadcast ins(%mx : tensor<1x2x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>) dimensions = [3]
  %d = linalg.map { arith.subf } ins(%x, %mb : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>)
  %ex = linalg.map { math.exp } ins(%d : tensor<1x2x8x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>)
  %li = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  %l = linalg.reduce { arith.addf } ins(%ex : tensor<1x2x8x8xf32>) outs(%li : tensor<1x2x8xf32>) dimensions = [3]
  %lb = linalg.broadcast ins(%l : tensor<1x2x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>) dimensions = [3]
  %p = linalg.map { arith.divf } ins(%ex, %lb : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) outs(%e0 : tensor<1x2x8x8xf32>)
  %oe = tensor.empty() : tensor<1x8x2x16xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<1x8x2x16xf32>) -> tensor<1x8x2x16xf32>
  %o = linalg.generic {indexing_maps = [#p5, #v5, #o5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x8x2x16xf32>) outs(%oz : tensor<1x8x2x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x8x2x16xf32>
  return %o : tensor<1x8x2x16xf32>
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
  %e = tensor.empty() : tensor<1x8x2x16xf32>
  %d = tensor.cast %e : tensor<1x8x2x16xf32> to tensor<?x?x?x?xf32>
  %q0 = call @inputs(%d, %s1) : (tensor<?x?x?x?xf32>, f32) -> tensor<?x?x?x?xf32>
  %d2 = tensor.cast %e : tensor<1x8x2x16xf32> to tensor<?x?x?x?xf32>
  %k0 = call @inputs(%d2, %s2) : (tensor<?x?x?x?xf32>, f32) -> tensor<?x?x?x?xf32>
  %d3 = tensor.cast %e : tensor<1x8x2x16xf32> to tensor<?x?x?x?xf32>
  %v0 = call @inputs(%d3, %s3) : (tensor<?x?x?x?xf32>, f32) -> tensor<?x?x?x?xf32>
  %q = tensor.cast %q0 : tensor<?x?x?x?xf32> to tensor<1x8x2x16xf32>
  %k = tensor.cast %k0 : tensor<?x?x?x?xf32> to tensor<1x8x2x16xf32>
  %v = tensor.cast %v0 : tensor<?x?x?x?xf32> to tensor<1x8x2x16xf32>
  %o = call @sdpa(%q, %k, %v) : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>) -> tensor<1x8x2x16xf32>
  %u = tensor.cast %o : tensor<1x8x2x16xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
