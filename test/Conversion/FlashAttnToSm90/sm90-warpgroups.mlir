// RUN: fa-opt %s --flashattn-plan=target=sm90 --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warpgroup | FileCheck %s
// RUN: fa-opt %s --flashattn-plan="target=sm90 intra-wg-overlap=off prefetch-next-q=off" --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s --check-prefix=WS
// RUN: fa-opt %s --flashattn-plan=target=sm90 --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s --check-prefix=OV

// flashattn-sm90-warpgroup over 128 x 128 score tiles (flashattn-plan's):
// two warpgroups, 256 threads; Q's TMA box holds the tile's 128
// rows (16 KiB at head_dim 64, then the K and V rings of 2 x 16 KiB each);
// warpgroup g = tid / 128 (through shfl.sync idx: warp-uniform for
// ptxas) computes rows [64 g, 64 g + 64): its Q K^T runs
// in its own branch, with Q's descriptors at 64 g rows of 128 bytes into
// Q (8192 bytes for g = 1), as m64n128k16 steps, committed and waited for
// in the branch.
// CHECK-LABEL: func.func @causal
// CHECK: llvm.func @fa_sm90_0(
// CHECK-SAME: threads = 256, smem = 81960
// CHECK-SAME: #flashattn.param<kind = tma, arg = "q", box = [64, 1, 128, 1], swizzle = 128>
// CHECK-SAME: #flashattn.param<kind = tma, arg = "k", box = [64, 1, 128, 1], swizzle = 128>
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x
// CHECK: %[[G:.*]] = arith.divui %[[TID]], %c128_i32
// CHECK: %[[WG:.*]] = nvvm.shfl.sync idx %{{.*}}, %[[G]], %{{.*}}, %c31_i32
// CHECK: scf.for %{{.*}} = %begin to %end
// CHECK:   %[[FIRST:.*]] = arith.cmpi eq, %[[WG]], %{{.*}} : i32
// CHECK:   scf.if %[[FIRST]] -> (!llvm.struct<
// CHECK:     nvvm.wgmma.fence.aligned
// CHECK:     llvm.getelementptr %{{.*}}[0] :
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>
// CHECK:     nvvm.wgmma.wait.group.sync.aligned 0
// CHECK:   } else {
// CHECK:     nvvm.wgmma.fence.aligned
// CHECK:     llvm.getelementptr %{{.*}}[8192] :
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>
// CHECK:     nvvm.wgmma.wait.group.sync.aligned 0
// CHECK:   }
// CHECK:   flashattn.wgmma_rs

// Warp-specialized (flashattn-sm90-warp-specialize; one Q buffer:
// sm90-prefetch-next-q.mlir has the plan's two): 384 threads, a full
// mbarrier (one arrive: the TMA's expect_tx) and an empty one (256 arrives:
// every consumer thread's release) a tile, for Q, 2 K and 2 V slots. The
// producer's thread 0 waits on a slot's empty mbarrier, then issues its
// TMA onto the full one, with no CTA barrier; the consumers wait on the
// full one, compute and arrive on the empty one (V's rows past the 500
// keys are TMA's zeros in this dense layout: none zeroed). The plan's
// scheduler barrier: consumer g takes its turns at the tensor cores on
// named barrier 2 + g and hands them over on the other's (consumer 1 hands
// the first one to consumer 0); a turn is a block's P V with the next
// block's Q K^T, so one consumer's softmax runs under the other's GEMMs.
// The causal plan's lpt schedule takes the tiles from a counter (the
// launch's tile_counter): the producer's work loop is an scf.while from
// its block index, writing each tile's index at byte 98384 of shared
// memory before Q's arrive, the next from an atomic add; past the last it
// writes the index with a bare arrive on Q's full mbarrier. The consumers'
// loop waits for Q, reads the index and stops past the last tile. The
// plan's tma_store: each consumer stages its 64 rows of O in the 16 KiB
// past the rings (bytes 81920 on) under its named barrier (5 + g, 128
// threads, the id a constant in the consumer's branch; its first thread waits first until its previous store read the
// tile), fences them for the async proxy and stores them with TMA (the
// launch's "out" tensor map, boxes of 64 rows); lse goes from registers.
// Before exiting, that thread waits for its stores.
// WS-LABEL: func.func @causal
// WS: llvm.func @fa_sm90_0(
// WS-SAME: threads = 384, smem = 98392
// WS-SAME: #flashattn.param<kind = tma, arg = "out", box = [64, 1, 64, 1], swizzle = 128>
// WS-SAME: #flashattn.param<kind = tile_counter>
// WS-SAME: nvvm.minctasm = 1
// WS: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x
// WS-COUNT-5: nvvm.mbarrier.init %{{.*}}, %c1_i32
// WS-COUNT-5: nvvm.mbarrier.init %{{.*}}, %c256_i32
// WS: nvvm.barrier0
// WS: flashattn.warp_specialize %[[TID]] {consumer_regs = 232 : i32, producer_regs = 40 : i32} producer {
// WS-NOT: nvvm.barrier0
// WS-NOT: nvvm.wgmma
// WS: scf.while
// WS: scf.condition
// WS: } do {
// WS: nvvm.mbarrier.try_wait.parity
// WS: arith.xori
// WS: %[[SLOT:.*]] = llvm.getelementptr %{{.*}}[98384]
// WS-NEXT: llvm.store %{{.*}}, %[[SLOT]] : i32, !llvm.ptr<3>
// WS: nvvm.mbarrier.arrive.expect_tx
// WS: nvvm.cp.async.bulk.tensor.shared.cluster.global
// WS: llvm.atomicrmw add %{{.*}}, %c1_i32{{.*}} monotonic
// WS: scf.yield
// WS: nvvm.mbarrier.try_wait.parity
// WS: %[[LAST:.*]] = llvm.getelementptr %{{.*}}[98384]
// WS-NEXT: llvm.store %{{.*}}, %[[LAST]] : i32, !llvm.ptr<3>
// WS: nvvm.mbarrier.arrive %
// WS-NOT: nvvm.wgmma
// WS-NOT: nvvm.barrier0
// WS: } consumers {
// WS-NOT: nvvm.barrier0
// WS-NOT: nvvm.cp.async.bulk.tensor
// WS: nvvm.barrier.arrive id = %{{.*}} number_of_threads = %c256_i32
// WS: scf.while
// WS: nvvm.mbarrier.try_wait.parity
// WS: %[[READ:.*]] = llvm.getelementptr %{{.*}}[98384]
// WS-NEXT: %[[T:.*]] = llvm.load %[[READ]] : !llvm.ptr<3> -> i32
// WS: %[[TU:.*]] = nvvm.shfl.sync  idx %{{.*}}, %[[T]]
// WS: %[[MORE:.*]] = arith.cmpi slt, %[[TU]]
// WS: scf.condition(%[[MORE]]) %[[TU]]
// WS: } do {
// WS: nvvm.mbarrier.try_wait.parity
// WS: nvvm.barrier id = %{{.*}} number_of_threads = %c256_i32
// WS: nvvm.wgmma.mma_async
// WS: nvvm.barrier.arrive id = %{{.*}} number_of_threads = %c256_i32
// WS: nvvm.mbarrier.arrive %
// WS: nvvm.mbarrier.try_wait.parity
// WS-NOT: llvm.store
// WS: nvvm.barrier id = %{{.*}} number_of_threads = %c256_i32
// WS-NOT: llvm.store
// WS: flashattn.wgmma_rs
// WS: nvvm.barrier.arrive id = %{{.*}} number_of_threads = %c256_i32
// WS: nvvm.mbarrier.arrive %
// WS: }
// WS: nvvm.mbarrier.arrive %
// WS-NOT: nvvm.barrier0
// WS-NOT: nvvm.cp.async.bulk.tensor.shared.cluster.global
// WS: nvvm.cp.async.bulk.wait_group 0 {read}
// WS: nvvm.barrier id = %c5_i32{{.*}} number_of_threads = %c128_i32
// WS: nvvm.barrier id = %c6_i32{{.*}} number_of_threads = %c128_i32
// WS: %[[AT:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<3>, i32)
// WS-NEXT: llvm.store %{{.*}}, %[[AT]] : i32, !llvm.ptr<3>
// WS: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// WS: nvvm.barrier id = %c5_i32{{.*}} number_of_threads = %c128_i32
// WS: nvvm.barrier id = %c6_i32{{.*}} number_of_threads = %c128_i32
// WS: nvvm.cp.async.bulk.tensor.global.shared.cta
// WS: nvvm.cp.async.bulk.commit.group
// WS: }
// WS: nvvm.cp.async.bulk.wait_group 0
// WS-NOT: nvvm.cp.async.bulk.tensor.shared.cluster.global
// WS: llvm.return

// The plan's intra_wg_overlap: the key-block loop's first block runs
// before it (under the loop's condition), its P V deferred; each iteration
// issues the previous block's P V (P and its V slot carried: 9 state + 1
// + 32 packed values) right after its own Q K^T, with no branch between
// the warpgroups (Q at 64 g rows; only the turns' barriers sit in each
// consumer's branch, their ids constants), hands the turn over, waits for Q K^T
// alone (wait_group 1), and for P V (wait_group 0) only before O's
// rescale, then releases that V slot; the last P V runs after the loop.
// OV-LABEL: func.func @causal
// The leader thread prefetches Q's, K's, V's and O's tensor maps into the
// tensormap cache at entry, before the mbarriers' init.
// OV: llvm.func @fa_sm90_0(
// OV-SAME: %[[QMAP:arg[0-9]+]]: !llvm.ptr {llvm.align = 64 : i64, llvm.byval
// OV-SAME: %[[KMAP:arg[0-9]+]]: !llvm.ptr {llvm.align = 64 : i64, llvm.byval
// OV-SAME: %[[VMAP:arg[0-9]+]]: !llvm.ptr {llvm.align = 64 : i64, llvm.byval
// OV-SAME: %[[OMAP:arg[0-9]+]]: !llvm.ptr {llvm.align = 64 : i64, llvm.byval
// OV: nvvm.prefetch tensormap in_param_space, %[[QMAP]]
// OV-NEXT: nvvm.prefetch tensormap in_param_space, %[[KMAP]]
// OV-NEXT: nvvm.prefetch tensormap in_param_space, %[[VMAP]]
// OV-NEXT: nvvm.prefetch tensormap in_param_space, %[[OMAP]]
// OV: nvvm.mbarrier.init
// OV: } consumers {
// OV: scf.if
// OV: nvvm.wgmma.mma_async
// OV: nvvm.wgmma.wait.group.sync.aligned 0
// OV-NOT: flashattn.wgmma_rs
// OV: %{{.*}}:42 = scf.for
// OV: nvvm.barrier id = %c2_i32
// OV: nvvm.barrier id = %c3_i32
// OV-NEXT: }
// OV-NOT: scf.if
// OV: nvvm.wgmma.mma_async
// OV: nvvm.wgmma.commit.group.sync.aligned
// OV: flashattn.wgmma_rs
// OV: nvvm.wgmma.commit.group.sync.aligned
// OV: nvvm.barrier.arrive id = %c3_i32
// OV: nvvm.barrier.arrive id = %c2_i32
// OV-NEXT: }
// OV-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// OV: nvvm.wgmma.wait.group.sync.aligned 0
// OV: nvvm.mbarrier.arrive
// OV-NOT: flashattn.wgmma_rs
// OV: scf.yield
// OV: scf.if
// OV: nvvm.barrier id =
// OV: flashattn.wgmma_rs
// OV: nvvm.wgmma.wait.group.sync.aligned 0
// OV: nvvm.barrier.arrive
// OV: nvvm.mbarrier.arrive
func.func @causal(%q: memref<2x100x4x64xbf16>, %k: memref<2x130x2x64xbf16>, %v: memref<2x130x2x64xbf16>,
                  %o: memref<2x100x4x64xbf16>, %l: memref<2x4x100xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x100x4x64xbf16>, memref<2x130x2x64xbf16>, memref<2x130x2x64xbf16>)
      outs(%o, %l : memref<2x100x4x64xbf16>, memref<2x4x100xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}
