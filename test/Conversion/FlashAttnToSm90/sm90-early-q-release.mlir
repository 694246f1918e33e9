// RUN: fa-opt %s --split-input-file --flashattn-plan=target=sm90 --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s --check-prefixes=CHECK,CAUSAL
// RUN: fa-opt %s --split-input-file --flashattn-plan="target=sm90 early-q-release=off" --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s --check-prefix=OFF

// The plan's early_q_release (flashattn-plan's below head_dim 256): the consumers' release of Q after the overlapped key-block loop
// moves into the loop's last block. The first block (before the loop)
// releases it after its Q K^T when it is the last one (begin + 1 >= end);
// a later block after its wait for the previous P V (nothing in flight),
// with V's release; after the loop, Q goes back only when the loop had no
// block.
// CHECK-LABEL: func.func @hd128(
// CHECK: early_q_release = true{{.*}}intra_wg_overlap = true>>
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
// OFF-LABEL: func.func @hd128(
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

// -----

// With the plan's predicated_q_release (head_dim 128 under a causal mask
// with a left window, where the key blocks ascend) and the boundary split
// (dynamic lengths: blocks before the diagonal without the mask, the rest
// with it), Q's release sits in the second loop only, as a predicated
// arrive, and after both loops when the first one had the last block (the
// second none).
// CAUSAL-LABEL: func.func @hd128_causal_window(
// CAUSAL: early_q_release = true{{.*}}predicated_q_release = true
// CAUSAL: } consumers {
// CAUSAL: %[[BOUND:.*]] = arith.maxsi %{{.*}}, %[[FROM:[0-9]+]] : index
// CAUSAL-NEXT: %[[MASKED:.*]] = arith.minsi %[[BOUND]], %[[END:.*]] : index
// CAUSAL: scf.for %{{.*}} = %[[FROM]] to %[[MASKED]] step
// CAUSAL-NOT: flashattn.mbarrier_arrive_if
// CAUSAL: scf.for %[[N:.*]] = %[[MASKED]] to %[[END]] step
// CAUSAL-NEXT: %[[NEXT:.*]] = arith.addi %[[N]], %c1
// CAUSAL-NEXT: %[[LAST:.*]] = arith.cmpi sge, %[[NEXT]], %[[END]] : index
// CAUSAL: flashattn.mbarrier_arrive_if %[[LAST]], %[[QEMPTY:.*]] : !llvm.ptr<3>
// CAUSAL: scf.yield
// CAUSAL: %[[NOMASKED:.*]] = arith.cmpi sge, %[[MASKED]], %[[END]] : index
// CAUSAL: %[[STEADY:.*]] = arith.cmpi slt, %[[FROM]], %[[END]] : index
// CAUSAL: %[[HELD:.*]] = arith.andi %[[STEADY]], %[[NOMASKED]] : i1
// CAUSAL: scf.if %[[HELD]] {
// CAUSAL: nvvm.mbarrier.arrive
func.func @hd128_causal_window(%q: memref<?x?x2x128xbf16>, %k: memref<?x?x2x128xbf16>,
                               %v: memref<?x?x2x128xbf16>, %o: memref<?x?x2x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<?x?x2x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x2x128xbf16>)
      outs(%o : memref<?x?x2x128xbf16>) {causal = #flashattn.causal<bottom_right>,
                                         window_size = array<i64: 256, 0>}
  return
}

// -----

// Head_dim 128 under a causal mask alone: the key blocks run from the
// tile's last down, so the masked loop comes first and the tile's last
// block is in the unmasked loop after it, where Q's release is a branch
// (no predicated arrive; predicated_q_release is off in this plan), none
// in the masked loop, and after both loops when the unmasked one had no
// block (the masked one had the last).
// CAUSAL-LABEL: func.func @hd128_causal(
// CAUSAL: early_q_release = true{{.*}}intra_wg_overlap = true, prefetch_next_q = true, descending_key_blocks = true>>
// CAUSAL: } consumers {
// CAUSAL-NOT: flashattn.mbarrier_arrive_if
// CAUSAL: scf.for %[[N1:[a-z0-9]+]] = %[[FROM:[0-9]+]] to %[[BOUNDARY:[0-9]+]] step
// CAUSAL-NEXT: %[[NEXT1:.*]] = arith.addi %[[N1]], %c1
// CAUSAL-NEXT: %[[LAST1:.*]] = arith.cmpi sge, %[[NEXT1]], %[[END:[a-z0-9]+]] : index
// CAUSAL-NOT: scf.if %[[LAST1]]
// CAUSAL-NOT: flashattn.mbarrier_arrive_if
// CAUSAL: scf.for %[[N:[a-z0-9]+]] = %[[BOUNDARY]] to %[[END]] step
// CAUSAL-NEXT: %[[NEXT:.*]] = arith.addi %[[N]], %c1
// CAUSAL-NEXT: %[[LAST:.*]] = arith.cmpi sge, %[[NEXT]], %[[END]] : index
// CAUSAL-NOT: flashattn.mbarrier_arrive_if
// CAUSAL: scf.if %[[LAST]] {
// CAUSAL: nvvm.mbarrier.arrive
// CAUSAL: scf.yield
// CAUSAL: %[[NOUNMASKED:.*]] = arith.cmpi sge, %[[BOUNDARY]], %[[END]] : index
// CAUSAL-NEXT: %[[STEADY:.*]] = arith.cmpi slt, %[[FROM]], %[[END]] : index
// CAUSAL-NEXT: %[[HELD:.*]] = arith.andi %[[STEADY]], %[[NOUNMASKED]] : i1
// CAUSAL-NEXT: scf.if %[[HELD]] {
// CAUSAL: nvvm.mbarrier.arrive
// CAUSAL-NOT: flashattn.mbarrier_arrive_if
// CAUSAL: return
func.func @hd128_causal(%q: memref<?x?x2x128xbf16>, %k: memref<?x?x2x128xbf16>,
                        %v: memref<?x?x2x128xbf16>, %o: memref<?x?x2x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<?x?x2x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x2x128xbf16>)
      outs(%o : memref<?x?x2x128xbf16>) {causal = #flashattn.causal<bottom_right>}
  return
}

// -----

// Under a causal mask without predicated_q_release (head_dim 64): the
// tile's last block holds its last row's diagonal, in the masked loop, so
// Q's release is a branch in that loop only (none in the loop before the
// diagonal) and after both loops when the masked one had no block.
// CAUSAL-LABEL: func.func @hd64_causal(
// CAUSAL: early_q_release = true
// CAUSAL: } consumers {
// CAUSAL: %[[BOUND:.*]] = arith.maxsi %{{.*}}, %[[FROM:[0-9]+]] : index
// CAUSAL-NEXT: %[[MASKED:.*]] = arith.minsi %[[BOUND]], %[[END:.*]] : index
// CAUSAL: scf.for %[[N1:[a-z0-9]+]] = %[[FROM]] to %[[MASKED]] step
// CAUSAL-NEXT: %[[NEXT1:.*]] = arith.addi %[[N1]], %c1
// CAUSAL-NEXT: %[[LAST1:.*]] = arith.cmpi sge, %[[NEXT1]], %[[END]] : index
// CAUSAL-NOT: scf.if %[[LAST1]]
// CAUSAL: scf.for %[[N:[a-z0-9]+]] = %[[MASKED]] to %[[END]] step
// CAUSAL-NEXT: %[[NEXT:.*]] = arith.addi %[[N]], %c1
// CAUSAL-NEXT: %[[LAST:.*]] = arith.cmpi sge, %[[NEXT]], %[[END]] : index
// CAUSAL-NOT: flashattn.mbarrier_arrive_if
// CAUSAL: scf.if %[[LAST]] {
// CAUSAL: nvvm.mbarrier.arrive
// CAUSAL: scf.yield
// CAUSAL: %[[NOMASKED:.*]] = arith.cmpi sge, %[[MASKED]], %[[END]] : index
// CAUSAL: %[[STEADY:.*]] = arith.cmpi slt, %[[FROM]], %[[END]] : index
// CAUSAL: %[[HELD:.*]] = arith.andi %[[STEADY]], %[[NOMASKED]] : i1
// CAUSAL: scf.if %[[HELD]] {
// CAUSAL: nvvm.mbarrier.arrive
func.func @hd64_causal(%q: memref<?x?x2x64xbf16>, %k: memref<?x?x2x64xbf16>,
                       %v: memref<?x?x2x64xbf16>, %o: memref<?x?x2x64xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<?x?x2x64xbf16>, memref<?x?x2x64xbf16>, memref<?x?x2x64xbf16>)
      outs(%o : memref<?x?x2x64xbf16>) {causal = #flashattn.causal<bottom_right>}
  return
}
