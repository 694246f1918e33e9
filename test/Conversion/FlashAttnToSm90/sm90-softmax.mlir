// RUN: fa-opt %s --flashattn-plan=target=sm90 --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s

// The fragment softmax of flashattn-sm90-warpgroup. tile_qk's scale
// (1 / sqrt(128) * log2(e) = 0.12751...) stays out of S's registers: the
// row max is taken on the raw scores (the scale is positive), in the
// plan's reduce_chains = 4 interleaved chains (4 independent maxes, then
// each chain goes on from its own), and over the quad; the max is scaled
// once, and each P = exp2(s * scale - m) is one fma. The sum of P runs in
// 4 chains too.
// CHECK-LABEL: func.func @hd128
// CHECK: reduce_chains = 4
// CHECK: } consumers {
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: arith.mulf
// CHECK: %[[SCALE:.*]] = arith.constant 0.127517{{[0-9]*}} : f32
// CHECK-NOT: arith.mulf
// CHECK: %[[C0:.*]] = arith.maxnumf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: %[[C1:.*]] = arith.maxnumf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: %[[C2:.*]] = arith.maxnumf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: %[[C3:.*]] = arith.maxnumf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: arith.maxnumf %[[C0]], %{{.*}} : f32
// CHECK-NEXT: arith.maxnumf %[[C1]], %{{.*}} : f32
// CHECK: nvvm.shfl.sync  bfly %{{.*}}, %{{.*}}, %c2_i32
// CHECK-NEXT: %[[RAW:.*]] = arith.maxnumf
// CHECK-NEXT: %[[MAX:.*]] = arith.mulf %[[RAW]], %[[SCALE]] : f32
// CHECK: %[[NEG:.*]] = arith.negf %{{.*}} : f32
// CHECK-NEXT: %[[E:.*]] = llvm.intr.fma(%{{.*}}, %[[SCALE]], %[[NEG]])
// CHECK-NEXT: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%[[E]])
// CHECK: %[[S0:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: %[[S1:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: %[[S2:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: %[[S3:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: arith.addf %[[S0]], %{{.*}} : f32
func.func @hd128(%q: memref<1x200x2x128xbf16>, %k: memref<1x200x2x128xbf16>, %v: memref<1x200x2x128xbf16>,
                 %o: memref<1x200x2x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x200x2x128xbf16>, memref<1x200x2x128xbf16>, memref<1x200x2x128xbf16>)
      outs(%o : memref<1x200x2x128xbf16>)
  return
}
