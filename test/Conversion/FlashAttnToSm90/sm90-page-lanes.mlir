// RUN: fa-opt %s --flashattn-plan="target=sm90 intra-wg-overlap=off" --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s

// Pages of 16 keys, 8 a key block of 128: the producer's warp 0 runs the
// producer (tid < 32), thread 0 sets the bytes the slot's full mbarrier
// expects (2048 a page), the warp syncs, and lane l < min(8, pages of the
// block) reads page l's index from the list and issues its box at l x
// 2048 bytes into the slot.
// CHECK-LABEL: func.func @paged16_lanes
// CHECK: flashattn.warp_specialize
// CHECK: %[[WARP0:.*]] = arith.cmpi ult, %{{.*}}, %c32_i32
// CHECK-NEXT: scf.if %[[WARP0]] {
// CHECK: scf.if %{{.*}} {
// CHECK:   %[[BYTES:.*]] = arith.muli %[[PAGES:.*]], %c2048_i32
// CHECK:   nvvm.mbarrier.arrive.expect_tx %[[BAR:.*]], %[[BYTES]]
// CHECK: nvvm.bar.warp.sync
// CHECK: %[[INBLOCK:.*]] = arith.cmpi ult, %[[LANE:.*]], %[[PAGES]] : i32
// CHECK: %[[INBOX:.*]] = arith.cmpi ult, %[[LANE]], %c8_i32
// CHECK: %[[MINE:.*]] = arith.andi %[[INBOX]], %[[INBLOCK]]
// CHECK: scf.if %[[MINE]] {
// CHECK:   %[[ENTRY:.*]] = arith.addi %{{.*}}, %[[LANE]] : i32
// CHECK:   %[[AT:.*]] = llvm.getelementptr %{{.*}}[%[[ENTRY]]] : (!llvm.ptr<1>, i32)
// CHECK:   %[[PAGE:.*]] = llvm.load %[[AT]] invariant
// CHECK:   arith.muli %[[LANE]], %c2048_i32
// CHECK:   nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %[[BAR]], box[%{{.*}}, %{{.*}}, %{{.*}}, %[[PAGE]]]
func.func @paged16_lanes(%q: memref<2x1x4x64xf16>, %kc: memref<16x16x2x64xf16>, %vc: memref<16x16x2x64xf16>,
                         %bt: memref<2x8xi32>, %used: memref<2xi32>, %o: memref<2x1x4x64xf16>) {
  flashattn.attention ins(%q, %kc, %vc : memref<2x1x4x64xf16>, memref<16x16x2x64xf16>, memref<16x16x2x64xf16>)
      seqused_k(%used : memref<2xi32>) block_table(%bt : memref<2x8xi32>)
      outs(%o : memref<2x1x4x64xf16>) {pack_gqa = false}
  return
}
