// RUN: fa-opt %s --flashattn-plan="target=sm90 rescale-under-qk=off" --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s

// The plan's conditional_rescale (flashattn-plan's but with 3 consumers
// under a causal mask, FlashAttention-4): a row's max moves only when it grows by more than 8
// (exp2 units), and O is rescaled only in a warp where some row's factor
// is not 1 (vote.sync.any, a warp-uniform branch). Here O's rescale
// stays in the softmax (rescale-under-qk=off; the plan's choice but at
// head_dim 128, sm90-rescale-under-qk.mlir).
// CHECK-LABEL: func.func @hd128
// CHECK: sm90 = <{{.*}}conditional_rescale = true
// CHECK: } consumers {
// CHECK: %[[EIGHT:.*]] = arith.constant 8.000000e+00 : f32
// CHECK: %[[GROW:.*]] = arith.subf %[[NEW:.*]], %[[OLD:.*]] : f32
// CHECK: %[[MOVES:.*]] = arith.cmpf ogt, %[[GROW]], %[[EIGHT]] : f32
// CHECK: arith.select %[[MOVES]], %[[NEW]], %[[OLD]] : f32
// CHECK: %[[ANY:.*]] = nvvm.vote.sync any %{{.*}}, %{{.*}} -> i1
// CHECK: scf.if %[[ANY]] -> (!llvm.struct<
// CHECK: arith.mulf
// CHECK: } else {
// In the overlapped loop the previous block's P V is waited for after this
// block's P (its exp2s), its V slot released, and only then the branch:
// wgmma.wait_group is .aligned (the same instruction for all 128 threads
// of the warpgroup), the vote is each warp's.
// CHECK: scf.for
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: %[[VOTE:.*]] = nvvm.vote.sync any
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: llvm.nvvm.ex2
// CHECK: nvvm.mbarrier.arrive
// CHECK-NEXT: scf.if %[[VOTE]] -> (!llvm.struct<
// CHECK-NOT: nvvm.wgmma.wait.group
// CHECK: } else {
// CHECK-NEXT: scf.yield
// CHECK-NEXT: }
// CHECK-NOT: llvm.nvvm.ex2
// CHECK-NOT: nvvm.wgmma.wait.group
// CHECK: scf.yield
func.func @hd128(%q: memref<1x200x2x128xbf16>, %k: memref<1x200x2x128xbf16>, %v: memref<1x200x2x128xbf16>,
                 %o: memref<1x200x2x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x200x2x128xbf16>, memref<1x200x2x128xbf16>, memref<1x200x2x128xbf16>)
      outs(%o : memref<1x200x2x128xbf16>) {causal = #flashattn.causal<bottom_right>}
  return
}
