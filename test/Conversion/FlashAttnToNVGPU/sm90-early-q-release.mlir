// RUN: fa-opt %s --flashattn-plan="target=sm90 tiled" --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s
// RUN: fa-opt %s --flashattn-plan="target=sm90 tiled early-q-release=off" --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s --check-prefix=OFF

// The plan's early_q_release (flashattn-plan{tiled} without a causal
// mask): the consumers' release of Q after the overlapped key-block loop
// moves into the loop's last block. The first block (before the loop)
// releases it after its Q K^T when it is the last one (begin + 1 >= end);
// a later block after its wait for the previous P V (nothing in flight),
// with V's release; after the loop, Q goes back only when the loop had no
// block.
// CHECK-LABEL: func.func @hd128
// CHECK: early_q_release = true
// CHECK: } consumers {
// CHECK: %[[ANY:.*]] = arith.cmpi slt, %[[BEGIN:.*]], %[[END:.*]] : index
// CHECK: scf.if %[[ANY]]
// CHECK: %[[NEXT:.*]] = arith.addi %[[BEGIN]], %c1
// CHECK-NEXT: %[[LAST:.*]] = arith.cmpi sge, %[[NEXT]], %[[END]] : index
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: scf.if %[[LAST]] {
// CHECK: nvvm.mbarrier.arrive
// CHECK: scf.for %[[N:.*]] = %{{.*}} to %[[END]]
// CHECK: %[[NEXT2:.*]] = arith.addi %[[N]], %c1
// CHECK-NEXT: %[[LAST2:.*]] = arith.cmpi sge, %[[NEXT2]], %[[END]] : index
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive
// CHECK: scf.if %[[LAST2]] {
// CHECK: nvvm.mbarrier.arrive
// CHECK: scf.yield
// CHECK: %[[NONE:.*]] = arith.xori %[[ANY]], %true
// CHECK-NEXT: scf.if %[[NONE]] {
// CHECK: nvvm.mbarrier.arrive

// Without it, Q goes back right after the last block's Q K^T: after the
// key-block loops, before the last P V (issued under the same condition).
// OFF-LABEL: func.func @hd128
// OFF-NOT: early_q_release = true
// OFF: } consumers {
// OFF: %[[ANY:.*]] = arith.cmpi slt, %{{.*}}, %[[END:.*]] : index
// OFF: scf.for %{{.*}} = %{{.*}} to %[[END]] step
// OFF: scf.if %[[ANY]] {
// OFF-NOT: wgmma
// OFF: nvvm.mbarrier.arrive
// OFF-NEXT: }
// OFF-NEXT: scf.if %[[ANY]] -> (!llvm.struct
// OFF: flashattn.wgmma_rs
// And after the loop only when it had no block.
// OFF: %[[NONE:.*]] = arith.xori %[[ANY]], %true
// OFF-NEXT: scf.if %[[NONE]] {
func.func @hd128(%q: memref<1x200x2x128xbf16>, %k: memref<1x200x2x128xbf16>, %v: memref<1x200x2x128xbf16>,
                 %o: memref<1x200x2x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x200x2x128xbf16>, memref<1x200x2x128xbf16>, memref<1x200x2x128xbf16>)
      outs(%o : memref<1x200x2x128xbf16>)
  return
}
