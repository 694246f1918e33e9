// RUN: fa-opt %s --split-input-file --flashattn-plan="target=sm90 drain-idle-consumers=on" --flashattn-split-kv --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s

// With the plan's drain_idle_consumers (off unless asked for).
// Packed decode (pack_gqa: 4 query heads of a kv head, one token: 4 rows
// of a 128-row tile, two consumers of 64 rows): a consumer whose first row
// (64 g) is at or past the rows of its Q tile (the tile_wait's) computes no
// key block. Its own end is the loop's begin, so its iterations are all
// drained (waits and releases, no wgmma), each with its turn at the
// scheduler barrier (nvvm.barrier, then nvvm.barrier.arrive), and one
// turn more after them when there was a block: the N + 1 turns of a
// consumer that computes the loop's N blocks. Here the key blocks descend
// (head_dim 128, causal), so the drain loop runs before the consumer's own
// iterations.
// CHECK-LABEL: func.func @decode(
// CHECK: plan = #flashattn.plan<{{.*}}drain_idle_consumers = true
// CHECK: } consumers {
// CHECK: %[[BEGIN:[a-z0-9_]+]], %[[END:[a-z0-9_]+]] = flashattn.key_blocks rows
// CHECK: %[[G64:.*]] = arith.muli %[[WG:.*]], %c64_i32 : i32
// CHECK-NEXT: %[[FIRST:.*]] = arith.index_cast %[[G64]] : i32 to index
// CHECK-NEXT: %[[IDLE:.*]] = arith.cmpi sge, %[[FIRST]], %[[ROWS:.*]] : index
// CHECK-NEXT: %[[OWN:.*]] = arith.select %[[IDLE]], %[[BEGIN]], %[[END]] : index
// CHECK-NEXT: %[[OWNC:.*]] = arith.maxsi %[[OWN]], %[[BEGIN]] : index
// CHECK-NEXT: %[[SUM:.*]] = arith.addi %[[BEGIN]], %[[END]] : index
// CHECK-NEXT: %[[LO:.*]] = arith.subi %[[SUM]], %[[OWNC]] : index
// CHECK-NEXT: scf.for %{{.*}} = %[[BEGIN]] to %[[LO]] step
// CHECK: nvvm.barrier id
// CHECK: nvvm.barrier.arrive id
// CHECK-NOT: wgmma
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NOT: wgmma
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[RAN:.*]] = arith.cmpi slt, %[[BEGIN]], %[[LO]] : index
// CHECK-NEXT: scf.if %[[RAN]] {
// CHECK: nvvm.barrier id
// CHECK: nvvm.barrier.arrive id
// CHECK: nvvm.wgmma.mma_async
func.func @decode(%q: memref<1x1x32x128xbf16>, %k: memref<1x32768x8x128xbf16>,
                  %v: memref<1x32768x8x128xbf16>, %o: memref<1x1x32x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x1x32x128xbf16>, memref<1x32768x8x128xbf16>, memref<1x32768x8x128xbf16>)
      outs(%o : memref<1x1x32x128xbf16>) {causal = #flashattn.causal<bottom_right>,
                                          num_splits = 4 : i64, pack_gqa = true}
  return
}

// -----

// Without pack_gqa every consumer keeps its loop: a tile's rows are query
// positions, and only a sequence's last tile has fewer than 128 (no
// check for idle consumers, no drain loop).
// CHECK-LABEL: func.func @prefill(
// CHECK: } consumers {
// CHECK-NOT: arith.select %{{.*}}, %begin, %end
// CHECK: nvvm.wgmma.mma_async
// CHECK-NOT: arith.select %{{.*}}, %begin, %end
// CHECK: llvm.return
func.func @prefill(%q: memref<1x1024x4x128xbf16>, %k: memref<1x1024x4x128xbf16>,
                   %v: memref<1x1024x4x128xbf16>, %o: memref<1x1024x4x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x1024x4x128xbf16>, memref<1x1024x4x128xbf16>, memref<1x1024x4x128xbf16>)
      outs(%o : memref<1x1024x4x128xbf16>)
  return
}

// -----

// Over pages (seqused_k), V's rows past a sequence's keys are zeroed
// under named barrier 1 of both consumers: the idle consumer reaches it in
// its drain loop, the other after its wgmma, two instructions, so the
// barrier is barrier.sync without .aligned (llvm.nvvm.barrier.cta.sync
// .count; nvvm.barrier is aligned).
// CHECK-LABEL: func.func @paged_decode(
// CHECK: } consumers {
// CHECK: %[[IDLE:.*]] = arith.cmpi sge, %{{.*}}, %{{.*}} : index
// CHECK-NEXT: arith.select %[[IDLE]]
// CHECK: scf.for
// CHECK: nvvm.bar.warp.sync
// CHECK-NOT: wgmma
// CHECK: scf.for
// CHECK: llvm.store
// CHECK-NOT: wgmma
// CHECK: llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.count"(%c1_i32{{.*}}, %c256_i32{{.*}})
// CHECK-NOT: wgmma
// CHECK: nvvm.mbarrier.arrive
// CHECK-NOT: wgmma
// CHECK: scf.yield
func.func @paged_decode(%q: memref<2x1x8x128xbf16>, %kc: memref<64x16x2x128xbf16>,
                        %vc: memref<64x16x2x128xbf16>, %bt: memref<2x32xi32>,
                        %used: memref<2xi32>, %o: memref<2x1x8x128xbf16>) {
  flashattn.attention ins(%q, %kc, %vc : memref<2x1x8x128xbf16>, memref<64x16x2x128xbf16>, memref<64x16x2x128xbf16>)
      seqused_k(%used : memref<2xi32>) block_table(%bt : memref<2x32xi32>)
      outs(%o : memref<2x1x8x128xbf16>) {causal = #flashattn.causal<bottom_right>, pack_gqa = true}
  return
}

// -----

// Without a causal mask the key blocks ascend: the idle consumer's loop
// is empty ([begin, begin)) and its drain loop runs every block after it,
// one turn an iteration (consumer 0 awaits barrier 2, consumer 1 barrier
// 3; each arrives on the other's), after a warp sync, and one more turn
// after the loop when it ran. Here the Q tile's rows are 4 (a constant:
// one token of 4 query heads).
// CHECK-LABEL: func.func @decode_ascending(
// CHECK: } consumers {
// CHECK: %[[IDLE:.*]] = arith.cmpi sge, %{{.*}}, %c4 : index
// CHECK-NEXT: %[[OWN:.*]] = arith.select %[[IDLE]], %[[BEGIN:[a-z0-9_]+]], %[[END:[a-z0-9_]+]] : index
// CHECK: %[[LO:.*]] = arith.maxsi %[[OWN]], %[[BEGIN]] : index
// CHECK-NEXT: scf.for %{{.*}} = %[[LO]] to %[[END]] step
// CHECK-NEXT: arith.constant -1
// CHECK-NEXT: nvvm.bar.warp.sync
// CHECK: nvvm.barrier id = %c2_i32{{.*}} number_of_threads = %c256_i32
// CHECK: nvvm.barrier id = %c3_i32 number_of_threads = %c256_i32
// CHECK: nvvm.barrier.arrive id = %c3_i32 number_of_threads = %c256_i32
// CHECK: nvvm.barrier.arrive id = %c2_i32{{.*}} number_of_threads = %c256_i32
// CHECK-NOT: nvvm.barrier
// CHECK-NOT: wgmma
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NOT: nvvm.barrier
// CHECK-NOT: wgmma
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[RAN:.*]] = arith.cmpi slt, %[[LO]], %[[END]] : index
// CHECK-NEXT: scf.if %[[RAN]] {
// CHECK-NEXT: arith.constant -1
// CHECK-NEXT: nvvm.bar.warp.sync
// CHECK: nvvm.barrier id = %c2_i32{{.*}} number_of_threads = %c256_i32
// CHECK: nvvm.barrier id = %c3_i32 number_of_threads = %c256_i32
// CHECK: nvvm.barrier.arrive id = %c3_i32 number_of_threads = %c256_i32
// CHECK: nvvm.barrier.arrive id = %c2_i32{{.*}} number_of_threads = %c256_i32
// CHECK-NEXT: }
// CHECK-NEXT: }
func.func @decode_ascending(%q: memref<1x1x32x128xbf16>, %k: memref<1x32768x8x128xbf16>,
                            %v: memref<1x32768x8x128xbf16>, %o: memref<1x1x32x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x1x32x128xbf16>, memref<1x32768x8x128xbf16>, memref<1x32768x8x128xbf16>)
      outs(%o : memref<1x1x32x128xbf16>) {num_splits = 4 : i64, pack_gqa = true}
  return
}
