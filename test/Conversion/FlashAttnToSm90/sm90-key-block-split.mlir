// RUN: fa-opt %s --flashattn-plan="target=sm90 consumers=3 rescale-under-qk=off" --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup --split-input-file | FileCheck %s
// RUN: fa-opt %s --flashattn-plan="target=sm90 descending-key-blocks=off" --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup --split-input-file | FileCheck %s --check-prefix=TURNS
// RUN: fa-opt %s --flashattn-plan="target=sm90 consumers=3 descending-key-blocks=on" --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup --split-input-file | FileCheck %s --check-prefix=DESC
// RUN: fa-opt %s --flashattn-plan=target=sm90 --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup --split-input-file | FileCheck %s --check-prefix=DESCTURNS
// RUN: fa-opt %s --flashattn-plan="target=sm90 consumers=3 descending-key-blocks=on intra-wg-overlap=off" --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup --split-input-file | FileCheck %s --check-prefix=DESCLOOP
// rescale-under-qk=off in the first run: the branch of O's rescale under Q K^T
// would come before the masks the window case checks.

// A warp-specialized consumer's key blocks under a causal mask, 3
// consumers (no turns): the blocks its own 64 rows see (the key_blocks of
// rows [m0 + 64 g, min(m0 + 64 g + 64, m1)), g its warpgroup), none for a
// warpgroup past the tile's rows; the steady blocks in two loops split at
// flashattn-tile's bound taken at the consumer's own first row,
// floor(key_end(m0 + 64 g) / block_n) (FlashAttention-3 masks per
// warpgroup): before it no mask (no key_end), from it the boundary mask
// without its branch, j < key_end(i) compared per register as the
// register's constant column offset (0, 1, 8, 9, ... in a thread's first
// row) against lim = key_end(i) - n0 - col0, once a row; then the
// tile's blocks past the consumer's own, their K and V waited for and
// released only (no wgmma), carrying the phases alone.
// CHECK-LABEL: func.func @causal
// CHECK: } consumers {
// CHECK: %[[BEGIN:[a-z0-9_]+]], %[[END:[a-z0-9_]+]] = flashattn.key_blocks rows[%[[M0:.*]], %[[M1:.*]]) keys %c512
// CHECK: %[[END0:.*]] = flashattn.key_end row %[[M0]] keys %c512
// CHECK: %[[FROM:.*]] = arith.floordivsi %[[END0]], %c128
// CHECK: %[[G64:.*]] = arith.muli %{{.*}}, %c64_i32
// CHECK: %[[G64I:.*]] = arith.index_cast %[[G64]] : i32 to index
// CHECK: %[[FIRST:.*]] = arith.addi %[[M0]], %[[G64I]]
// CHECK: %[[LASTP:.*]] = arith.addi %[[FIRST]], %c64
// CHECK: %[[LAST:.*]] = arith.minsi %[[LASTP]], %[[M1]]
// CHECK: %{{.*}}, %[[OWN:[a-z0-9_]+]] = flashattn.key_blocks rows[%[[FIRST]], %[[LAST]]) keys %c512
// CHECK: %[[OWNC:.*]] = arith.minsi %[[OWN]], %[[END]]
// CHECK: %[[IN:.*]] = arith.cmpi slt, %[[FIRST]], %[[M1]]
// CHECK: %[[UB:.*]] = arith.select %[[IN]], %[[OWNC]], %[[BEGIN]]
// CHECK: %[[G64B:.*]] = arith.muli %{{.*}}, %c64_i32
// CHECK: %[[G64BI:.*]] = arith.index_cast %[[G64B]] : i32 to index
// CHECK: %[[OWNROW:.*]] = arith.addi %[[M0]], %[[G64BI]]
// CHECK: %[[OWNKEYEND:.*]] = flashattn.key_end row %[[OWNROW]] keys %c512
// CHECK: %[[OWNFROM:.*]] = arith.floordivsi %[[OWNKEYEND]], %c128
// CHECK: %[[SPLIT0:.*]] = arith.maxsi %[[OWNFROM]], %[[S0:[a-z0-9_]+]]
// CHECK: %[[SPLIT:.*]] = arith.minsi %[[SPLIT0]], %[[UB]]
// CHECK: scf.for %{{.*}} = %[[S0]] to %[[SPLIT]] step %c1
// CHECK-NOT: flashattn.key_end
// CHECK: nvvm.wgmma.mma_async
// CHECK-NOT: flashattn.key_end
// CHECK: flashattn.wgmma_rs
// CHECK-NOT: flashattn.key_end
// CHECK: scf.yield
// CHECK: scf.for %{{.*}} = %[[SPLIT]] to %[[UB]] step %c1
// CHECK: nvvm.wgmma.mma_async
// CHECK-NOT: scf.if
// CHECK: %[[KEYEND:.*]] = flashattn.key_end
// CHECK-NEXT: %[[COL0:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK-NEXT: %[[REL:.*]] = arith.subi %[[KEYEND]], %{{.*}} : index
// CHECK-NEXT: %[[LIM:.*]] = arith.subi %[[REL]], %[[COL0]] : index
// CHECK: %[[IN0:.*]] = arith.cmpi slt, %c0{{(_[0-9]+)?}}, %[[LIM]] : index
// CHECK-NEXT: arith.select %[[IN0]]
// CHECK: arith.cmpi slt, %c1{{(_[0-9]+)?}}, %[[LIM]] : index
// CHECK: arith.cmpi slt, %c8{{(_[0-9]+)?}}, %[[LIM]] : index
// CHECK: arith.cmpi slt, %c9{{(_[0-9]+)?}}, %[[LIM]] : index
// CHECK: flashattn.wgmma_rs
// CHECK: scf.yield
// CHECK: %[[DRAIN:.*]] = arith.maxsi %[[UB]], %[[BEGIN]]
// CHECK: scf.for %{{.*}} = %[[DRAIN]] to %[[END]] step %c1 iter_args({{.*}}) -> (i32, i32, i32) {
// CHECK-NOT: wgmma
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NOT: wgmma
// CHECK: nvvm.mbarrier.arrive
// CHECK-NOT: wgmma
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NOT: wgmma
// CHECK: nvvm.mbarrier.arrive
// CHECK-NOT: wgmma
// CHECK: scf.yield

// The same with the plan's descending_key_blocks: iteration j computes
// block top - j (top = begin + end - 1), so a consumer's own blocks are
// the last iterations, [lo, end) with lo = begin + end - max(own end,
// begin) (a split's blocks may end below their begin): first
// the blocks past its rows, waited for and released only, then its own
// last block (peeled, masked), then the masked blocks down to its bound,
// the iterations j < top + 1 - floor(key_end(m0 + 64 g) / block_n),
// then the unmasked ones to the tile's end, with no key_end after them.
// Without the intra-warpgroup overlap (one loop, the mask's branch kept):
// the drains first all the same, then the consumer's own iterations.
// DESCLOOP-LABEL: func.func @causal
// DESCLOOP: } consumers {
// DESCLOOP: %[[BEGIN:[a-z0-9_]+]], %[[END:[a-z0-9_]+]] = flashattn.key_blocks rows
// DESCLOOP: %[[UB:.*]] = arith.select %{{.*}}, %{{.*}}, %[[BEGIN]]
// DESCLOOP-NEXT: %[[UBC:.*]] = arith.maxsi %[[UB]], %[[BEGIN]]
// DESCLOOP-NEXT: %[[SUM:.*]] = arith.addi %[[BEGIN]], %[[END]]
// DESCLOOP-NEXT: %[[LO:.*]] = arith.subi %[[SUM]], %[[UBC]]
// DESCLOOP-NEXT: scf.for %{{.*}} = %[[BEGIN]] to %[[LO]] step %c1
// DESCLOOP-NOT: wgmma
// DESCLOOP: scf.for %{{.*}} = %[[LO]] to %[[END]] step %c1
// DESCLOOP: nvvm.wgmma.mma_async
// DESCLOOP: scf.if
// DESCLOOP: flashattn.key_end
// DESCLOOP-NOT: scf.for %{{.*}} step %c1 iter_args
// DESCLOOP: llvm.return
// DESC-LABEL: func.func @causal
// DESC: } consumers {
// DESC: %[[BEGIN:[a-z0-9_]+]], %[[END:[a-z0-9_]+]] = flashattn.key_blocks rows[%{{.*}}, %{{.*}}) keys %c512
// DESC: %[[SUM:.*]] = arith.addi %[[BEGIN]], %[[END]]
// DESC-NEXT: %[[TOP:.*]] = arith.subi %[[SUM]], %c1
// DESC: %{{.*}}, %[[OWN:[a-z0-9_]+]] = flashattn.key_blocks rows
// DESC: %[[OWNC:.*]] = arith.minsi %[[OWN]], %[[END]]
// DESC: %[[UB:.*]] = arith.select %{{.*}}, %[[OWNC]], %[[BEGIN]]
// DESC-NEXT: %[[UBC:.*]] = arith.maxsi %[[UB]], %[[BEGIN]]
// DESC-NEXT: %[[SUM2:.*]] = arith.addi %[[BEGIN]], %[[END]]
// DESC-NEXT: %[[LO:.*]] = arith.subi %[[SUM2]], %[[UBC]]
// DESC-NEXT: scf.for %{{.*}} = %[[BEGIN]] to %[[LO]] step %c1 iter_args({{.*}}) -> (i32, i32, i32) {
// DESC-NOT: wgmma
// DESC: nvvm.mbarrier.arrive
// DESC-NOT: wgmma
// DESC: nvvm.mbarrier.arrive
// DESC-NOT: wgmma
// DESC: scf.yield
// DESC: arith.cmpi slt, %[[LO]], %[[END]]
// DESC: arith.subi %[[TOP]], %[[LO]]
// DESC: nvvm.wgmma.mma_async
// DESC: flashattn.key_end
// DESC: %[[S0:.*]] = arith.addi %[[LO]], %c1
// DESC: %[[OWNEND:.*]] = flashattn.key_end row
// DESC-NEXT: %[[OWNFROM:.*]] = arith.floordivsi %[[OWNEND]], %c128
// DESC: %[[TOP1:.*]] = arith.addi %[[TOP]], %c1
// DESC-NEXT: %[[J:.*]] = arith.subi %[[TOP1]], %[[OWNFROM]]
// DESC-NEXT: %[[SPLIT0:.*]] = arith.maxsi %[[J]], %[[S0]]
// DESC-NEXT: %[[SPLIT:.*]] = arith.minsi %[[SPLIT0]], %[[END]]
// DESC-NEXT: scf.for %{{.*}} = %[[S0]] to %[[SPLIT]] step %c1
// DESC: nvvm.wgmma.mma_async
// DESC: flashattn.wgmma_rs
// DESC: flashattn.key_end
// DESC: scf.for %{{.*}} = %[[SPLIT]] to %[[END]] step %c1
// DESC: nvvm.wgmma.mma_async
// DESC: flashattn.wgmma_rs
// DESC-NOT: flashattn.key_end
// DESC: llvm.return
func.func @causal(%q: memref<2x512x32x64xbf16>, %k: memref<2x512x32x64xbf16>,
                  %v: memref<2x512x32x64xbf16>, %o: memref<2x512x32x64xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x512x32x64xbf16>, memref<2x512x32x64xbf16>, memref<2x512x32x64xbf16>)
      outs(%o : memref<2x512x32x64xbf16>) {causal = #flashattn.causal<bottom_right>}
  return
}

// -----

// A left window (head_dim 128): the boundary branch is `nb >= from || nb <
// until`; the steady blocks before `from`
// keep it (blocks the window starts in come first; on the tile's bound,
// so the split is at the tile's `from` too), those from `from` on take
// the mask without the branch.
// CHECK-LABEL: func.func @window
// CHECK: } consumers {
// CHECK: flashattn.key_blocks rows[%[[M0:[a-z0-9_]+]],
// CHECK: %[[E0:.*]] = flashattn.key_end row %[[M0]]
// CHECK: %[[FROM:.*]] = arith.floordivsi %[[E0]], %c128
// CHECK: %[[B1:.*]] = flashattn.key_begin row
// CHECK: %[[UNTIL:.*]] = arith.ceildivsi %[[B1]], %c128
// CHECK-NOT: arith.floordivsi
// CHECK: %[[SPLIT0:.*]] = arith.maxsi %[[FROM]], %[[S0:[a-z0-9_]+]]
// CHECK: %[[SPLIT:.*]] = arith.minsi %[[SPLIT0]], %[[UB:[a-z0-9_]+]]
// CHECK: scf.for %[[N:.*]] = %[[S0]] to %[[SPLIT]] step %c1
// CHECK: %[[LATE:.*]] = arith.cmpi sge, %[[N]], %[[FROM]]
// CHECK: %[[EARLY:.*]] = arith.cmpi slt, %[[N]], %[[UNTIL]]
// CHECK: %[[BOUNDARY:.*]] = arith.ori %[[LATE]], %[[EARLY]]
// CHECK-NEXT: scf.if %[[BOUNDARY]]
// CHECK: flashattn.key_begin
// CHECK: scf.for %{{.*}} = %[[SPLIT]] to %[[UB]] step %c1
// CHECK: arith.ori
// CHECK-NOT: scf.if
// CHECK: flashattn.key_begin
// descending_key_blocks leaves a left window's loop ascending (its
// boundary branch also runs below a bound).
// DESC-LABEL: func.func @window
// DESC-NOT: arith.addi %begin{{[_0-9]*}}, %end
// DESC: llvm.return
func.func @window(%q: memref<1x1024x8x128xbf16>, %k: memref<1x1024x2x128xbf16>,
                  %v: memref<1x1024x2x128xbf16>, %o: memref<1x1024x8x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x1024x8x128xbf16>, memref<1x1024x2x128xbf16>, memref<1x1024x2x128xbf16>)
      outs(%o : memref<1x1024x8x128xbf16>) {window_size = array<i64: 255, 0>}
  return
}

// -----

// Head_dim 128 causal, 2 consumers taking turns at the tensor cores: each
// runs every key block (no own end), but splits at its own first row's
// bound floor(key_end(m0 + 64 g) / block_n) all the same.
// TURNS-LABEL: func.func @causal_turns
// TURNS: } consumers {
// TURNS: flashattn.key_blocks rows[%[[M0:[a-z0-9_]+]],
// TURNS: flashattn.key_end row %[[M0]]
// TURNS: %[[G64:.*]] = arith.muli %{{.*}}, %c64_i32
// TURNS-NEXT: %[[G64I:.*]] = arith.index_cast %[[G64]] : i32 to index
// TURNS-NEXT: %[[OWNROW:.*]] = arith.addi %[[M0]], %[[G64I]] : index
// TURNS-NEXT: %[[OWNEND:.*]] = flashattn.key_end row %[[OWNROW]]
// TURNS-NEXT: %[[OWNFROM:.*]] = arith.floordivsi %[[OWNEND]], %c128
// TURNS-NEXT: %[[SPLIT0:.*]] = arith.maxsi %[[OWNFROM]], %[[S0:[a-z0-9_]+]]
// TURNS-NEXT: %[[SPLIT:.*]] = arith.minsi %[[SPLIT0]], %[[END:[a-z0-9_]+]]
// TURNS-NEXT: scf.for %{{.*}} = %[[S0]] to %[[SPLIT]] step %c1
// TURNS: scf.for %{{.*}} = %[[SPLIT]] to %[[END]] step %c1
// The default plan at head_dim 128 under the causal mask: the key blocks
// from the last down (descending_key_blocks). With the turns every
// consumer runs all of them: the masked ones first, iterations j < top +
// 1 - floor(key_end(m0 + 64 g) / block_n), then the unmasked ones to the
// tile's end.
// DESCTURNS-LABEL: func.func @causal_turns
// DESCTURNS: } consumers {
// DESCTURNS: %[[BEGIN:[a-z0-9_]+]], %[[END:[a-z0-9_]+]] = flashattn.key_blocks rows[%[[M0:[a-z0-9_]+]],
// DESCTURNS: %[[SUM:.*]] = arith.addi %[[BEGIN]], %[[END]]
// DESCTURNS-NEXT: %[[TOP:.*]] = arith.subi %[[SUM]], %c1
// DESCTURNS-NOT: scf.for %{{.*}} step %c1
// DESCTURNS: %[[OWNFROM:.*]] = arith.floordivsi %{{.*}}, %c128
// DESCTURNS: %[[TOP1:.*]] = arith.addi %[[TOP]], %c1
// DESCTURNS-NEXT: %[[J:.*]] = arith.subi %[[TOP1]], %[[OWNFROM]]
// DESCTURNS-NEXT: %[[SPLIT0:.*]] = arith.maxsi %[[J]], %[[S0:[a-z0-9_]+]]
// DESCTURNS-NEXT: %[[SPLIT:.*]] = arith.minsi %[[SPLIT0]], %[[END]]
// DESCTURNS-NEXT: scf.for %{{.*}} = %[[S0]] to %[[SPLIT]] step %c1
// DESCTURNS: flashattn.key_end
// DESCTURNS: scf.for %{{.*}} = %[[SPLIT]] to %[[END]] step %c1
// DESCTURNS-NOT: flashattn.key_end
// DESCTURNS: llvm.return
func.func @causal_turns(%q: memref<2x512x4x128xbf16>, %k: memref<2x512x4x128xbf16>,
                        %v: memref<2x512x4x128xbf16>, %o: memref<2x512x4x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x512x4x128xbf16>, memref<2x512x4x128xbf16>, memref<2x512x4x128xbf16>)
      outs(%o : memref<2x512x4x128xbf16>) {causal = #flashattn.causal<bottom_right>}
  return
}
