// RUN: fa-opt %s --flashattn-plan=target=sm90 --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s
// RUN: fa-opt %s --flashattn-plan="target=sm90 stages=1" --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s --check-prefix=ONE

// Pages of 1 key: no TMA box takes them, so the plan copies rows
// (kv_row_copies) and every producer thread runs the producer's loops:
// K's and V's full mbarriers count its 128 arrives. Q still comes by TMA
// from thread 0. Each K / V block is a loop of cp.async copies of 16
// bytes (the thread's chunk column of every 128 / (D / 8) = 16th row):
// key row0 + r of page pages[list + key], a page outside the pool (k's
// dim 0) read as page 0 with source size 0, as rows past `rows`; into
// the swizzled slot (chunk ^ (r % 8)). Each load's copies arrive once the
// next load's are issued (the carried offset of their mbarrier, 0 for
// none: wait_group 1, a fence for the async proxy, the arrive); the key
// loop's last ones at its exit (wait_group 0).
// CHECK-LABEL: func.func @paged1
// CHECK: #flashattn.sm90_entries<kernel = @fa_sm90_0_module::@fa_sm90_0, kv_row_copies = true
// CHECK: llvm.func @fa_sm90_0(
// CHECK: nvvm.mbarrier.init %{{.*}}, %c1_i32
// CHECK-COUNT-4: nvvm.mbarrier.init %{{.*}}, %c128_i32
// CHECK: flashattn.warp_specialize
// CHECK-NOT: scf.if
// CHECK: scf.for
// CHECK: scf.if %{{.*}} {
// CHECK:   nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK:   %[[STEP:.*]] = arith.muli %[[I]], %c16_i32
// CHECK:   %[[R:.*]] = arith.addi %{{.*}}, %[[STEP]] : i32
// CHECK:   %[[REAL:.*]] = arith.cmpi slt, %[[R]], %{{.*}} : i32
// CHECK:   %[[PAGE:.*]] = llvm.load %{{.*}} invariant : !llvm.ptr<1> -> i32
// CHECK:   %[[IN:.*]] = arith.cmpi ult, %[[PAGE]], %{{.*}} : i32
// CHECK:   arith.select %[[IN]], %[[PAGE]], %c0_i32
// CHECK:   %[[LOW:.*]] = arith.andi %[[R]], %c7_i32
// CHECK:   arith.xori %{{.*}}, %[[LOW]] : i32
// CHECK:   %[[OK:.*]] = arith.andi %[[REAL]], %[[IN]] : i1
// CHECK:   %[[BYTES:.*]] = arith.select %[[OK]], %c16_i32{{.*}}, %c0_i32{{.*}} : i32
// CHECK:   nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache =  cg, %[[BYTES]]
// CHECK: nvvm.cp.async.commit.group
// CHECK: %[[ANY:.*]] = arith.cmpi ne, %[[PEND:.*]], %c0_i32
// CHECK-NEXT: scf.if %[[ANY]] {
// CHECK-NEXT:   nvvm.cp.async.wait.group 1
// CHECK-NEXT:   nvvm.fence.proxy
// CHECK-NEXT:   %[[BAR:.*]] = llvm.getelementptr %{{.*}}[%[[PEND]]]
// CHECK-NEXT:   nvvm.mbarrier.arrive %[[BAR]]
// CHECK: %[[KEYS:.*]]:4 = scf.for %{{.*}} = %begin to %end step %c1 iter_args({{.*}}) -> (i32, i32, i32, i32) {
// CHECK:   nvvm.cp.async.shared.global
// CHECK: }
// CHECK: %[[LEFT:.*]] = arith.cmpi ne, %[[KEYS]]#3, %c0_i32
// CHECK: scf.if %[[LEFT]] {
// CHECK-NEXT:   nvvm.cp.async.wait.group 0
// CHECK-NEXT:   nvvm.fence.proxy
// CHECK:   nvvm.mbarrier.arrive
// With one slot a ring (stages=1) each load's copies arrive at once: the
// consumers release V only after the next K.
// ONE-LABEL: func.func @paged1
// ONE: nvvm.cp.async.commit.group
// ONE: nvvm.cp.async.wait.group 0
// ONE-NEXT: nvvm.fence.proxy
// ONE: nvvm.mbarrier.arrive
// ONE: nvvm.cp.async.shared.global
// ONE: nvvm.cp.async.commit.group
// ONE: nvvm.cp.async.wait.group 0
// ONE-NEXT: nvvm.fence.proxy
// ONE: nvvm.mbarrier.arrive
func.func @paged1(%q: memref<2x1x4x64xf16>, %kc: memref<64x1x2x64xf16>, %vc: memref<64x1x2x64xf16>,
                  %bt: memref<2x32xi32>, %used: memref<2xi32>, %o: memref<2x1x4x64xf16>) {
  flashattn.attention ins(%q, %kc, %vc : memref<2x1x4x64xf16>, memref<64x1x2x64xf16>, memref<64x1x2x64xf16>)
      seqused_k(%used : memref<2xi32>) block_table(%bt : memref<2x32xi32>)
      outs(%o : memref<2x1x4x64xf16>)
  return
}
