// RUN: fa-opt %s --flashattn-plan="target=sm90" --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s
// RUN: fa-opt %s --flashattn-plan="target=sm90 prefetch-next-q=off" --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s --check-prefix=OFF

// The plan's prefetch_next_q (head_dim 128 causal, tiles from the launch's
// counter): Q gets two buffers of 32 KiB at bytes 0 and 32768 (the K ring
// from 65536), each with a full and an empty mbarrier (6 full ones with
// one arrive, 6 empty ones with 256: Q, K and V twice), and the tile
// index a buffer (bytes 229472 + 4 slot). Each work loop carries its
// iteration's slot from 0, flipped at every tile: the producer waits for
// the slot's empty mbarrier (its phase bit), writes the tile's index at
// the slot's place and copies Q there; the consumers wait for the slot's
// full mbarrier, read the index there, and their Q K^T reads Q at 32768
// slot (plus 8192 a warpgroup's 64 rows). So the producer copies the next
// tile's Q as soon as it has issued this tile's last K and V, into the
// buffer the tile before released; but ahead of a tile of more than 16 key
// blocks (end - begin of its key_blocks) it first waits for the tile
// before to release its Q (the other buffer's empty mbarrier at the
// producer's phase bit for it, not flipped), so the consumers meet at a
// long tile's Q. Without it: one buffer, 32 KiB less.
// CHECK-LABEL: func.func @causal
// CHECK: llvm.func @fa_sm90_0(
// CHECK-SAME: smem = 229480
// CHECK-COUNT-6: nvvm.mbarrier.init %{{.*}}, %c1_i32
// CHECK-COUNT-6: nvvm.mbarrier.init %{{.*}}, %c256_i32
// CHECK: flashattn.warp_specialize
// CHECK: scf.while (%{{.*}} = %{{.*}}, %{{.*}} = %c0_i32{{[_0-9]*}}, %[[PPH:[a-z0-9]+]] = %c-1_i32
// CHECK: } do {
// CHECK-NEXT: ^bb0(%[[PT:[a-z0-9]+]]: i32, %[[PSLOT:[a-z0-9]+]]: i32, %[[PPHQ:[a-z0-9]+]]: i32,
// CHECK: %[[BEGIN:[a-z0-9_]+]], %[[END:[a-z0-9_]+]] = flashattn.key_blocks
// CHECK: %[[B32:.*]] = arith.index_cast %[[BEGIN]] : index to i32
// CHECK: %[[E32:.*]] = arith.index_cast %[[END]] : index to i32
// CHECK: %[[BLOCKS:.*]] = arith.subi %[[E32]], %[[B32]] : i32
// CHECK: %[[OTHER:.*]] = arith.xori %[[PSLOT]], %c1_i32
// CHECK: %[[LONG:.*]] = arith.cmpi sgt, %[[BLOCKS]], %c16_i32
// CHECK: scf.if %[[LONG]] {
// CHECK: %[[OBIT:.*]] = arith.shrui %[[PPHQ]], %[[OTHER]]
// CHECK: %[[OOFF:.*]] = arith.muli %[[OTHER]], %c8_i32
// CHECK: %[[OAT:.*]] = arith.addi %c229424_i32{{[_0-9]*}}, %[[OOFF]]
// CHECK: %[[OEMPTY:.*]] = llvm.getelementptr %{{.*}}[%[[OAT]]]
// CHECK: nvvm.mbarrier.try_wait.parity %[[OEMPTY]]
// CHECK: }
// CHECK: %[[QOFF:.*]] = arith.muli %[[PSLOT]], %c32768_i32
// CHECK: %[[QAT:.*]] = arith.addi %c0_i32{{[_0-9]*}}, %[[QOFF]]
// CHECK: %[[QBUF:.*]] = llvm.getelementptr %{{.*}}[%[[QAT]]]
// CHECK: %[[PBIT:.*]] = arith.shrui %[[PPHQ]], %[[PSLOT]]
// CHECK: %[[EOFF:.*]] = arith.muli %[[PSLOT]], %c8_i32
// CHECK: %[[EAT:.*]] = arith.addi %c229424_i32{{[_0-9]*}}, %[[EOFF]]
// CHECK: %[[EMPTY:.*]] = llvm.getelementptr %{{.*}}[%[[EAT]]]
// CHECK: nvvm.mbarrier.try_wait.parity %[[EMPTY]]
// CHECK: %[[IOFF:.*]] = arith.muli %[[PSLOT]], %c4_i32
// CHECK: %[[IAT:.*]] = arith.addi %c229472_i32{{[_0-9]*}}, %[[IOFF]]
// CHECK: %[[IDX:.*]] = llvm.getelementptr %{{.*}}[%[[IAT]]]
// CHECK: llvm.store %[[PT]], %[[IDX]]
// CHECK: nvvm.mbarrier.arrive.expect_tx
// CHECK: %[[QDST:.*]] = llvm.getelementptr %[[QBUF]][0]
// CHECK: %[[QDSTC:.*]] = llvm.addrspacecast %[[QDST]]
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[QDSTC]]
// CHECK: %[[PNEXT:.*]] = arith.xori %[[PSLOT]], %c1_i32
// CHECK: } consumers {
// CHECK: scf.while (%[[CSLOT0:[a-z0-9]+]] = %c0_i32{{[_0-9]*}}, %[[CPH:[a-z0-9]+]] = %c0_i32
// CHECK: %[[CBIT:.*]] = arith.shrui %[[CPH]], %[[CSLOT0]]
// CHECK: %[[FOFF:.*]] = arith.muli %[[CSLOT0]], %c8_i32
// CHECK: %[[FAT:.*]] = arith.addi %c229376_i32{{[_0-9]*}}, %[[FOFF]]
// CHECK: %[[FULL:.*]] = llvm.getelementptr %{{.*}}[%[[FAT]]]
// CHECK: nvvm.mbarrier.try_wait.parity %[[FULL]]
// CHECK: %[[ROFF:.*]] = arith.muli %[[CSLOT0]], %c4_i32
// CHECK: %[[RAT:.*]] = arith.addi %c229472_i32{{[_0-9]*}}, %[[ROFF]]
// CHECK: %[[RIDX:.*]] = llvm.getelementptr %{{.*}}[%[[RAT]]]
// CHECK: llvm.load %[[RIDX]]
// CHECK: } do {
// CHECK-NEXT: ^bb0(%{{[a-z0-9]+}}: i32, %[[CSLOT:[a-z0-9]+]]: i32,
// CHECK: %[[QK:.*]] = arith.muli %[[CSLOT]], %c32768_i32
// CHECK: %[[QKAT:.*]] = arith.addi %c0_i32{{[_0-9]*}}, %[[QK]]
// CHECK: %[[QKBUF:.*]] = llvm.getelementptr %{{.*}}[%[[QKAT]]]
// CHECK: llvm.getelementptr %[[QKBUF]][%{{.*}}]
// CHECK: nvvm.wgmma.mma_async
// CHECK: %[[CNEXT:.*]] = arith.xori %[[CSLOT]], %c1_i32
// CHECK: scf.yield %[[CNEXT]]

// OFF-LABEL: func.func @causal
// OFF: smem = 196696
// OFF-COUNT-5: nvvm.mbarrier.init %{{.*}}, %c1_i32
// OFF-NOT: nvvm.mbarrier.init %{{.*}}, %c1_i32
func.func @causal(%q: memref<2x512x4x128xbf16>, %k: memref<2x512x4x128xbf16>,
                  %o: memref<2x512x4x128xbf16>) {
  flashattn.attention ins(%q, %k, %k : memref<2x512x4x128xbf16>, memref<2x512x4x128xbf16>, memref<2x512x4x128xbf16>)
      outs(%o : memref<2x512x4x128xbf16>) {causal = #flashattn.causal<bottom_right>}
  return
}
