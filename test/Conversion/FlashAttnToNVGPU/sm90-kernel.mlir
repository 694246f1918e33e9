// RUN: fa-opt %s --flashattn-plan=target=sm90 --convert-flashattn-to-nvgpu --split-input-file --verify-diagnostics | FileCheck %s
// RUN: fa-opt %s --flashattn-plan="target=sm90 scheduler-barrier=off tma-store=off" --convert-flashattn-to-nvgpu --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=OFF
// RUN: not fa-opt %s --flashattn-plan="target=sm90 tma-store=maybe" --convert-flashattn-to-nvgpu --split-input-file 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: not fa-opt %s --flashattn-plan="target=sm90 kv-heads-per-block=3" --convert-flashattn-to-nvgpu --split-input-file 2>&1 | FileCheck %s --check-prefix=BADHP
// RUN: fa-opt %s --flashattn-plan="target=sm90 l2-hint-q=normal l2-hint-kv=last" --convert-flashattn-to-nvgpu --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=HINT
// RUN: not fa-opt %s --flashattn-plan="target=sm90 l2-hint-kv=lru" --convert-flashattn-to-nvgpu --split-input-file 2>&1 | FileCheck %s --check-prefix=BADL2

// The code-generation overrides: without the scheduler barrier and the
// TMA-store epilogue, no named-barrier turns and no bulk tensor stores.
// OFF-LABEL: func.func @gqa
// OFF-NOT: arg = "out", box
// OFF: gpu.module @fa_sm90_0_module
// OFF-NOT: nvvm.barrier.arrive
// OFF-NOT: nvvm.cp.async.bulk.tensor.global.shared.cta
// OFF: llvm.store %{{.*}}, %{{.*}} : vector<2xbf16>, !llvm.ptr<1>
// OFF: llvm.return
// BADL2: error: flashattn-plan: l2-hint-kv takes auto, normal, first or last, got 'lru'

// The L2 policy overrides: Q with none, K and V with evict_last.
// HINT-LABEL: func.func @gqa
// HINT: llvm.func @fa_sm90_0(
// HINT-NOT: evict_first
// HINT: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}}] : !llvm.ptr<7>, !llvm.ptr
// HINT: %[[LAST:.*]] = flashattn.l2_policy evict_last
// HINT: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}}] l2_cache_hint = %[[LAST]] : !llvm.ptr<7>, !llvm.ptr
// HINT: llvm.return

// BADOPT: error: flashattn-plan: tma-store takes auto, on or off, got 'maybe'

// A planned GQA attention (head_dim 128, bottom-right causal, lse) gets an
// sm_90a kernel in a gpu.module, named on the op with its shared memory
// (128 x 128 Q + 2 stages x (K + V) 128 x 128 + the 128 x 128 O tile of
// the TMA-store epilogue, bf16, + 10 mbarriers + the tile index) and
// threads (a producer and 2 consumer warpgroups).
// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: func.func @gqa
// CHECK: flashattn.attention {{.*}}flashattn.sm90 = #flashattn.sm90_entries<kernel = @fa_sm90_0_module::@fa_sm90_0, abi = {fa_sm90_0 = #flashattn.kernel_abi<threads = 384, smem = 196696, params = [#flashattn.param<kind = ptr, arg = "q">,
// CHECK-SAME: #flashattn.param<kind = tma, arg = "out", box = [64, 1, 64, 1], swizzle = 128>, #flashattn.param<kind = tile_counter>]>}>
// CHECK-SAME: plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 128, stages = 2, consumers = 2, schedule = lpt, num_splits = 1, pack_gqa = false, sm90 = <scheduler_barrier = true, tma_store = true, early_q_release = true, conditional_rescale = true, rescale_under_qk = true, reduce_chains = 4, l2_hint_q = evict_first>>
// The kernel: the runtime's ABI (pointers, i64 dims, 3 tensor maps as
// 128-byte grid constants, then the lpt schedule's tile counter), 384
// threads, one CTA per SM, dynamic shared memory 1024-aligned.
// CHECK: gpu.module @fa_sm90_0_module
// CHECK: llvm.mlir.global external @fa_sm90_0_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// CHECK: llvm.func @fa_sm90_0(%{{.*}}: !llvm.ptr<1>, {{.*}}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}, %[[COUNTER:.*]]: !llvm.ptr<1>) attributes {flashattn.abi = #flashattn.kernel_abi<threads = 384, smem = 196696, params = [{{.*}}]>, nvvm.kernel, nvvm.maxntid = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32}
// Thread 0 prefetches the 4 tensor maps (q, k, v, out) from the parameter
// space, then initializes the mbarriers: full_Q (1 arrival + TMA bytes),
// empty_Q (the 256 consumer threads), then full / empty K and V per stage;
// made visible to the async proxy.
// CHECK-COUNT-4: nvvm.prefetch tensormap in_param_space, %arg{{[0-9]+}} : !llvm.ptr
// CHECK-NEXT: arith.constant
// CHECK-NEXT: llvm.getelementptr
// CHECK-NEXT: nvvm.mbarrier.init %{{.*}}, %c1_i32
// CHECK-NEXT: llvm.getelementptr
// CHECK-NEXT: nvvm.mbarrier.init %{{.*}}, %c256_i32
// CHECK-COUNT-8: nvvm.mbarrier.init
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.barrier0
// Warpgroup 0 is the producer: it gives registers back (40), the consumers
// take them (232); its thread 0
// runs the persistent loop over tiles (from blockIdx), carrying the
// key-block count (stage phases) and the tile count (Q phase).
// CHECK: flashattn.warp_specialize %{{.*}} {consumer_regs = 232 : i32, producer_regs = 40 : i32} producer {
// CHECK: scf.while (%{{.*}} = %{{.*}}, %{{.*}} = %c0_i32, %{{.*}} = %c0_i32) : (i32, i32, i32) -> (i32, i32, i32)
// CHECK: ^bb0(%[[TILE:.*]]: i32, %{{.*}}: i32, %{{.*}}: i32):
// Causal, so the lpt order, in groups of (batch, head)s whose K and V
// (Sk x 4 D bytes per kv head: 32 MB / 4D / Sk of them) fit 32 MB of L2, q heads of a kv head
// together: group by group, in a group (batch, head) fastest, m_block
// descending.
// CHECK: %[[SK1:.*]] = arith.maxsi %{{.*}}, %c1_i32 : i32
// CHECK: %[[PERL2:.*]] = arith.divui %c65536_i32, %[[SK1]] : i32
// CHECK: %[[HG:.*]] = arith.minui
// CHECK-NEXT: %[[INGROUP:.*]] = arith.muli %[[HG]], %[[NMB:.*]] : i32
// CHECK-NEXT: %[[G:.*]] = arith.divui %[[TILE]], %[[INGROUP]] : i32
// CHECK-NEXT: %[[FIRST:.*]] = arith.muli %[[G]], %[[HG]] : i32
// CHECK-NEXT: %[[R:.*]] = arith.remui %[[TILE]], %[[INGROUP]] : i32
// CHECK-NEXT: %[[LEFT:.*]] = arith.subi %{{.*}}, %[[FIRST]] : i32
// CHECK-NEXT: %[[HERE:.*]] = arith.minui %[[HG]], %[[LEFT]] : i32
// CHECK-NEXT: %[[H:.*]] = arith.remui %[[R]], %[[HERE]] : i32
// CHECK-NEXT: arith.addi %[[FIRST]], %[[H]] : i32
// CHECK-NEXT: %[[ROUND:.*]] = arith.divui %[[R]], %[[HERE]] : i32
// CHECK-NEXT: %[[LAST:.*]] = arith.subi %[[NMB]], %c1_i32
// CHECK-NEXT: arith.subi %[[LAST]], %[[ROUND]]
// Q after the consumers released the previous tile's (empty_Q), the tile
// index stored for them, Q by TMA (two 64-column boxes of 128-byte
// swizzle), expect_tx first, each box with an L2 evict_first policy (a
// tile reads its Q once).
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: llvm.store %[[TILE]], %{{.*}} : i32, !llvm.ptr<3>
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32 : !llvm.ptr<3>, i32
// CHECK-COUNT-2: flashattn.l2_policy evict_first
// CHECK-NOT: llvm.return
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] l2_cache_hint = %{{.*}} : !llvm.ptr<7>, !llvm.ptr
// Then K and V of each key block, each after its stage's empty barrier,
// with no policy (evict_normal: other tiles read them again).
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}}] : !llvm.ptr<7>, !llvm.ptr
// The next tile from the atomic counter (dynamic lpt schedule), unless
// there are no more tiles than CTAs (then the counter is never read); past
// the last, the index alone with a plain arrive on full_Q.
// CHECK: %[[MORE:.*]] = arith.cmpi ugt, %[[NTILES:.*]], %{{.*}} : i32
// CHECK-NEXT: scf.if %[[MORE]] -> (i32) {
// CHECK-NEXT: llvm.atomicrmw add %[[COUNTER]], %c1_i32 monotonic : !llvm.ptr<1>, i32
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[NTILES]] : i32
// CHECK: llvm.store
// CHECK: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// The consumers take the registers; each tile starts when full_Q
// completes, with the index the producer wrote.
// The consumer's warpgroup index and the tile index go through a shuffle
// from lane 0, so that ptxas sees them warp-uniform (and keeps the wgmma
// descriptors derived from them in uniform registers).
// CHECK: } consumers {
// CHECK: %[[CWG:.*]] = arith.divui
// CHECK-NEXT: nvvm.shfl.sync  idx %{{.*}}, %[[CWG]], %c0_i32, %c31_i32 : i32 -> i32
// CHECK: scf.while
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: %[[SLOT:.*]] = llvm.load %{{.*}} : !llvm.ptr<3> -> i32
// CHECK-NEXT: %[[UTILE:.*]] = nvvm.shfl.sync  idx %{{.*}}, %[[SLOT]], %c0_i32, %c31_i32 : i32 -> i32
// CHECK: scf.condition({{.*}}) %[[UTILE]]
// Block 0: S = Q K^T by wgmma (8 k16 steps, the first with a zero
// accumulator), K released, its softmax. A descriptor is its low 32 bits
// (start address >> 4, leading offset) joined at the wgmma with the
// constant high half: stride offset 1024 >> 4 = 64 at bit 32, 128-byte
// swizzle at bit 62 (2^62 + 64 x 2^32 = 4611686293305294848).
// Under the causal mask each consumer computes only the key blocks its own
// 64 rows reach, nC = min(max(ceil(lim(last row) / 128) - nbLo, 0),
// nblocks), and releases the tile's others.
// (The tile's own key range first, then the consumer's, both from the
// key-range ops on the tile's Sk and Sk - Sq.)
// CHECK: %[[NBLO:.*]], %{{.*}} = flashattn.key_blocks rows[%{{.*}}, %{{.*}}) keys %[[SK:[0-9]+]] offset %[[SHIFT:[0-9]+]] {block_n = 128 : i64, causal = #flashattn.causal<bottom_right>} : i32
// The consumer's last row, min(first + 63, rows - 1), and its key end.
// CHECK: %[[LAST:.*]] = arith.minsi %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[LIM:.*]] = flashattn.key_end row %[[LAST]] keys %[[SK]] offset %[[SHIFT]] {causal = #flashattn.causal<bottom_right>} : i32
// CHECK-NEXT: %[[LIM0:.*]] = arith.maxsi %[[LIM]], %c0_i32 : i32
// CHECK-NEXT: %[[NBEND:.*]] = arith.ceildivsi %[[LIM0]], %c128_i32{{.*}} : i32
// CHECK-NEXT: %[[NC0:.*]] = arith.subi %[[NBEND]], %[[NBLO]] : i32
// CHECK-NEXT: %[[NC1:.*]] = arith.maxsi %[[NC0]], %c0_i32 : i32
// CHECK-NEXT: %[[NC:.*]] = arith.minsi %[[NC1]], %[[NBLK:.*]] : i32
// CHECK-NEXT: arith.cmpi sgt, %[[NC]], %c0_i32 : i32
// CHECK: scf.if %{{.*}} -> (i32, f32, f32, f32, f32, !llvm.struct<(f32
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: %[[LO:.*]] = arith.extui %{{.*}} : i32 to i64
// CHECK-NEXT: %[[HI:.*]] = arith.constant 4611686293305294848 : i64
// CHECK-NEXT: %[[DA:.*]] = arith.ori %[[LO]], %[[HI]] : i64
// CHECK: nvvm.wgmma.mma_async %[[DA]], %{{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-COUNT-7: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive
// Causal head_dim 128 releases Q after the tile's last S (a predicated
// arrive: here when the tile has one key block).
// CHECK: flashattn.mbarrier_arrive_if %{{.*}}, %{{.*}} : !llvm.ptr<3>
// CHECK: nvvm.shfl.sync bfly
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// Blocks 1..n-1 carry m, l, O, the previous block's alpha and packed P:
// both waits before the fence, this consumer's turn, S_n issued; then (at
// head_dim 128) O *= alpha of block n - 1 under S_n's wgmma, only in warps
// where a row moved its max (conditional rescaling), a second fence,
// P_{n-1} V_{n-1} issued; the softmax of S_n between wait_group 1 and
// wait_group 0.
// CHECK: scf.for %{{.*}} = %c1_i32 to %[[NC]] step {{.*}} -> (i32, f32, f32, f32, f32, !llvm.struct<({{.*}})>, f32, f32, i32, i32,
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.barrier id = %c1_i32{{.*}} number_of_threads = %c256_i32
// CHECK: nvvm.barrier id = %c2_i32{{.*}} number_of_threads = %c256_i32
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NOT: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: arith.cmpf une
// CHECK: nvvm.vote.sync any %{{.*}}, %{{.*}} -> i1
// CHECK-NEXT: scf.if %{{.*}} -> (!llvm.struct<(f32
// CHECK: arith.mulf
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NOT: nvvm.wgmma.commit.group.sync.aligned
// CHECK: flashattn.wgmma_rs %{{.*}}, [%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}], %{{.*}} {element = bf16, n = 128 : i64}
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// The other consumer's turn (warp-scheduler barrier: consumer 0 passes to
// named barrier 2, consumer 1 to barrier 1, 256 threads).
// CHECK: nvvm.barrier.arrive id = %c2_i32{{.*}} number_of_threads = %c256_i32
// CHECK: nvvm.barrier.arrive id = %c1_i32{{.*}} number_of_threads = %c256_i32
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvvm.mbarrier.arrive
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive
// CHECK: scf.yield
// The last block: its rescale, its P V.
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.vote.sync any
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: flashattn.wgmma_rs
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// The blocks past this consumer's rows: each waited for, released, and its
// GEMM turn taken.
// CHECK: scf.for %{{.*}} = %[[NC]] to %[[NBLK]] step %c1_i32 iter_args(%{{.*}} = %{{.*}}#0) -> (i32)
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive
// CHECK: nvvm.barrier id
// CHECK: nvvm.barrier.arrive id
// CHECK: } else {
// CHECK: nvvm.mbarrier.arrive
// Epilogue: the previous store has read the O tile (one thread waits, the
// warpgroup syncs on its named barrier), bf16 pairs into the swizzled tile,
// the async-proxy fence, one thread stores the two 64-column boxes by TMA;
// lse from one thread of each quad.
// CHECK: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK: nvvm.barrier id = %c3_i32{{.*}} number_of_threads = %c128_i32
// CHECK: arith.xori
// CHECK: llvm.store %{{.*}}, %{{.*}} : i32, !llvm.ptr<3>
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.barrier id
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.global.shared.cta %{{.*}}, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : !llvm.ptr, <3>
// CHECK: nvvm.cp.async.bulk.commit.group
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<1>
// The last store has read shared memory before the kernel ends.
// CHECK: nvvm.cp.async.bulk.wait_group 0
// CHECK: llvm.return
func.func @gqa(%q: memref<2x256x8x128xbf16>, %k: memref<2x256x2x128xbf16>, %v: memref<2x256x2x128xbf16>,
               %o: memref<2x256x8x128xbf16>, %l: memref<2x8x256xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x256x8x128xbf16>, memref<2x256x2x128xbf16>, memref<2x256x2x128xbf16>)
      outs(%o, %l : memref<2x256x8x128xbf16>, memref<2x8x256xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}

// -----

// Score and mask regions are inlined at every score: the region's ops (the
// bias, the document test) appear in the kernel, the stand-in calls and
// declarations are gone, and the mask is and-ed into the keep predicate.
// CHECK-LABEL: func.func @regions
// CHECK: gpu.module @fa_sm90_0_module
// CHECK-NOT: func.func private
// CHECK: llvm.func @fa_sm90_0(
// CHECK-NOT: func.call
// CHECK: arith.divui %{{.*}}, %{{.*}} : index
// CHECK: arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK: arith.andi
// CHECK: arith.sitofp %{{.*}} : i64 to f32
// CHECK: arith.addf
// CHECK-NOT: func.call
// CHECK: llvm.return
func.func @regions(%q: memref<1x64x2x64xf16>, %k: memref<1x64x2x64xf16>, %v: memref<1x64x2x64xf16>,
                   %o: memref<1x64x2x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xf16>, memref<1x64x2x64xf16>, memref<1x64x2x64xf16>)
      outs(%o : memref<1x64x2x64xf16>)
      score(%s: f32, %b: index, %h: index, %i: index, %j: index) {
        %d = arith.subi %i, %j : index
        %di = arith.index_cast %d : index to i64
        %df = arith.sitofp %di : i64 to f32
        %r = arith.addf %s, %df : f32
        flashattn.yield %r : f32
      } mask(%b: index, %h: index, %i: index, %j: index) {
        %c16 = arith.constant 16 : index
        %di = arith.divui %i, %c16 : index
        %dj = arith.divui %j, %c16 : index
        %keep = arith.cmpi eq, %di, %dj : index
        flashattn.yield %keep : i1
      }
  return
}

// -----

// What the kernel does not do yet is reported, not miscompiled: a region
// that reads a table defined outside it (it would need a kernel argument).
func.func @region_reads_table(%q: memref<1x64x2x64xf16>, %k: memref<1x64x2x64xf16>, %v: memref<1x64x2x64xf16>,
                              %o: memref<1x64x2x64xf16>, %doc: memref<64xi32>) {
  // expected-error @+1 {{convert-flashattn-to-nvgpu: score/mask regions on sm90 cannot use values defined outside them (a bias table or document ids need a kernel argument)}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xf16>, memref<1x64x2x64xf16>, memref<1x64x2x64xf16>)
      outs(%o : memref<1x64x2x64xf16>)
      mask(%b: index, %h: index, %i: index, %j: index) {
        %di = memref.load %doc[%i] : memref<64xi32>
        %dj = memref.load %doc[%j] : memref<64xi32>
        %keep = arith.cmpi eq, %di, %dj : i32
        flashattn.yield %keep : i1
      }
  return
}

// -----

// Ops beyond arith (what the kernel's lowering covers) are reported.
func.func @region_math(%q: memref<1x64x2x64xf16>, %k: memref<1x64x2x64xf16>, %v: memref<1x64x2x64xf16>,
                       %o: memref<1x64x2x64xf16>) {
  // expected-error @+1 {{convert-flashattn-to-nvgpu: score/mask regions on sm90 take arith ops only (found 'math.exp')}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xf16>, memref<1x64x2x64xf16>, memref<1x64x2x64xf16>)
      outs(%o : memref<1x64x2x64xf16>)
      score(%s: f32, %b: index, %h: index, %i: index, %j: index) {
        %e = math.exp %s : f32
        flashattn.yield %e : f32
      }
  return
}

// -----

// Scalars the NVPTX backend cannot lower inline (i128 arithmetic needs a
// library call it lacks) are reported, not handed to LLVM to abort on.
func.func @region_i128(%q: memref<1x64x2x64xf16>, %k: memref<1x64x2x64xf16>, %v: memref<1x64x2x64xf16>,
                       %o: memref<1x64x2x64xf16>) {
  // expected-error @+1 {{convert-flashattn-to-nvgpu: score/mask regions on sm90 compute on integers of up to 64 bits, index, f16, bf16, f32 or f64 only (found 'i128' in 'arith.index_cast')}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xf16>, memref<1x64x2x64xf16>, memref<1x64x2x64xf16>)
      outs(%o : memref<1x64x2x64xf16>)
      score(%s: f32, %b: index, %h: index, %i: index, %j: index) {
        %x = arith.index_cast %i : index to i128
        %p = arith.muli %x, %x : i128
        %f = arith.sitofp %p : i128 to f32
        %r = arith.addf %s, %f : f32
        flashattn.yield %r : f32
      }
  return
}

// -----

// Softcap and a sliding window: tanh with afn (tanh.approx.f32), the window's
// lower bound on the keys.
// Not causal: the static order (m_block fastest), tile += gridDim, no
// counter.
// CHECK-LABEL: func.func @softcap_window
// CHECK: flashattn.attention {{.*}}schedule = static
// CHECK: gpu.module @fa_sm90_0_module
// CHECK: scf.while
// CHECK: ^bb0(%[[TILE:.*]]: i32, %{{.*}}: i32, %{{.*}}: i32):
// CHECK-NEXT: arith.remui %[[TILE]], %[[NMB:.*]] : i32
// CHECK-NEXT: arith.divui %[[TILE]], %[[NMB]] : i32
// CHECK-NOT: llvm.atomicrmw
// CHECK: arith.addi %[[TILE]], %{{.*}} : i32
// CHECK: llvm.intr.tanh(%{{.*}}) {fastmathFlags = #llvm.fastmath<afn>} : (f32) -> f32
// CHECK: arith.cmpi sge
func.func @softcap_window(%q: memref<1x64x2x64xf16>, %k: memref<1x64x2x64xf16>, %v: memref<1x64x2x64xf16>,
                          %o: memref<1x64x2x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xf16>, memref<1x64x2x64xf16>, memref<1x64x2x64xf16>)
      outs(%o : memref<1x64x2x64xf16>) {softcap = 30.0 : f32, window_size = array<i64: 32, 0>}
  return
}

// -----

func.func @hd96(%q: memref<1x64x2x96xbf16>, %k: memref<1x64x2x96xbf16>, %v: memref<1x64x2x96xbf16>,
                %o: memref<1x64x2x96xbf16>) {
  // expected-error @+1 {{convert-flashattn-to-nvgpu: the sm90 kernel takes head_dim 64, 128 or 256 (= head_dim_v)}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x96xbf16>, memref<1x64x2x96xbf16>, memref<1x64x2x96xbf16>)
      outs(%o : memref<1x64x2x96xbf16>)
  return
}

// -----

func.func @row_tile(%q: memref<1x64x2x64xbf16>, %k: memref<1x64x2x64xbf16>, %v: memref<1x64x2x64xbf16>,
                    %o: memref<1x64x2x64xbf16>, %start: index, %n: index) {
  // expected-error @+1 {{convert-flashattn-to-nvgpu: a tile of query rows (q_start, seqlen_q) is not in the sm90 kernel}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xbf16>, memref<1x64x2x64xbf16>, memref<1x64x2x64xbf16>)
      q_start(%start) seqlen_q(%n) outs(%o : memref<1x64x2x64xbf16>)
  return
}

// -----

func.func @f32(%q: memref<1x64x2x64xf32>, %k: memref<1x64x2x64xf32>, %v: memref<1x64x2x64xf32>,
               %o: memref<1x64x2x64xf32>) {
  // expected-error @+1 {{convert-flashattn-to-nvgpu: the sm90 kernel takes bf16 or f16 inputs}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xf32>, memref<1x64x2x64xf32>, memref<1x64x2x64xf32>)
      outs(%o : memref<1x64x2x64xf32>)
  return
}

// -----

// Split-KV in the partial form (what flashattn-split-kv makes): the partial
// op's kernel writes f32 partial out [S, B, Sq, H, D] and lse [S, B, H, Sq]
// per (tile, split); the combine reading them becomes a second kernel of the
// same module.
// CHECK-LABEL: func.func @split
// CHECK: flashattn.attention {{.*}}flashattn.sm90 = #flashattn.sm90_entries<kernel = @fa_sm90_0_module::@fa_sm90_0, combine = @fa_sm90_0_module::@fa_sm90_0_combine,
// CHECK-SAME: #flashattn.param<kind = merge_out>, #flashattn.param<kind = merge_lse>, #flashattn.param<kind = merge_counters>]>
// CHECK: flashattn.combine {{.*}}{flashattn.sm90 = #flashattn.sm90_entries<kernel = @fa_sm90_0_module::@fa_sm90_0_combine>}
// CHECK: gpu.module @fa_sm90_0_module
// CHECK: llvm.func @fa_sm90_0(
// The split count is the partial out's leading dimension, read at run
// time (the runtime may choose it per launch: automatic num_splits);
// %arg17 is dim 0 of out after 5 pointers and the 12 dims of q, k, v.
// CHECK: %[[S:.*]] = arith.trunci %arg17 : i64 to i32
// The work loop runs over (tile, split), split fastest.
// CHECK: ^bb0(%[[TILE:.*]]: i32, %{{.*}}: i32, %{{.*}}: i32):
// CHECK-NEXT: %[[SPLIT:.*]] = arith.remui %[[TILE]], %[[S]]
// CHECK-NEXT: arith.divui %[[TILE]], %[[S]]
// The epilogue stores f32 pairs (no truncation) into the split's slice.
// CHECK: llvm.store %{{.*}}, %{{.*}} : vector<2xf32>, !llvm.ptr<1>
// The fused combine: the consumers' named barrier (id 2 C + 2 = 6), one
// gpu-scope acq_rel atomic count per tile on the counters (the kernel's
// last parameter), which the last unit sets back to 0; after a second
// barrier that unit merges the tile's rows, 4 columns a step, from the
// splits' partial results (volatile loads) into the final out (bf16).
// CHECK: nvvm.barrier id = %c6_i32 number_of_threads = %c256_i32
// CHECK: %[[CP:.*]] = llvm.getelementptr %arg31[%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
// CHECK: flashattn.atomic_add_acq_rel %[[CP]], 1 : !llvm.ptr<1>
// CHECK: llvm.store %c0_i32, %[[CP]] : i32, !llvm.ptr<1>
// CHECK: nvvm.barrier id = %c6_i32 number_of_threads = %c256_i32
// CHECK: llvm.load volatile %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK: llvm.intr.fma
// CHECK: arith.truncf %{{.*}} : vector<4xf32> to vector<4xbf16>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<4xbf16>, !llvm.ptr<1>
// CHECK: llvm.func @fa_sm90_0_combine(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i64
// One pass over the splits: the max of their lse, the exp2-weighted sums
// rescaled as the max grows; empty rows (max = -inf) get out 0 and lse
// -inf.
// CHECK: arith.maximumf
// CHECK: nvvm.ex2.approx.ftz.f
// CHECK: llvm.intr.fma
// CHECK: nvvm.lg2.approx.f
// CHECK: arith.select %{{.*}}, %cst{{.*}}, %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @split(%q: memref<2x113x8x128xbf16>, %k: memref<2x1025x2x128xbf16>, %v: memref<2x1025x2x128xbf16>,
                 %o: memref<2x113x8x128xbf16>, %l: memref<2x8x113xf32>,
                 %po: memref<3x2x113x8x128xf32>, %pl: memref<3x2x8x113xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x113x8x128xbf16>, memref<2x1025x2x128xbf16>, memref<2x1025x2x128xbf16>)
      outs(%po, %pl : memref<3x2x113x8x128xf32>, memref<3x2x8x113xf32>) {num_splits = 3}
  flashattn.combine ins(%po, %pl : memref<3x2x113x8x128xf32>, memref<3x2x8x113xf32>)
      outs(%o, %l : memref<2x113x8x128xbf16>, memref<2x8x113xf32>)
  return
}

// -----

func.func @split_not_partial(%q: memref<1x64x2x64xbf16>, %k: memref<1x640x2x64xbf16>, %v: memref<1x640x2x64xbf16>,
                             %o: memref<1x64x2x64xbf16>) {
  // expected-error @+1 {{convert-flashattn-to-nvgpu: split-KV needs the partial form (run flashattn-split-kv first)}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xbf16>, memref<1x640x2x64xbf16>, memref<1x640x2x64xbf16>)
      outs(%o : memref<1x64x2x64xbf16>) {num_splits = 2}
  return
}

// -----

// A partial form whose combine is missing (or reads the partials through
// something else) is reported: the runtime launches both kernels together.
func.func @partial_without_combine(%q: memref<1x64x2x64xbf16>, %k: memref<1x640x2x64xbf16>, %v: memref<1x640x2x64xbf16>,
                                   %po: memref<2x1x64x2x64xf32>, %pl: memref<2x1x2x64xf32>) {
  // expected-error @+1 {{convert-flashattn-to-nvgpu: the partial form needs the flashattn.combine that reads its out and lse directly (memref form)}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xbf16>, memref<1x640x2x64xbf16>, memref<1x640x2x64xbf16>)
      outs(%po, %pl : memref<2x1x64x2x64xf32>, memref<2x1x2x64xf32>) {num_splits = 2}
  return
}

// -----

// A plan the kernel cannot implement is reported with its values: block_m
// must be 64 rows per consumer warpgroup.
func.func @plan_block_m(%q: memref<1x64x2x64xbf16>, %k: memref<1x64x2x64xbf16>, %v: memref<1x64x2x64xbf16>,
                        %o: memref<1x64x2x64xbf16>) {
  // expected-error @+1 {{convert-flashattn-to-nvgpu: the sm90 kernel takes 1 to 3 consumer warpgroups of 64 rows each (block_m = 64 x consumers); the plan has block_m = 256, consumers = 4}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xbf16>, memref<1x64x2x64xbf16>, memref<1x64x2x64xbf16>)
      outs(%o : memref<1x64x2x64xbf16>)
      {plan = #flashattn.plan<target = sm90, block_m = 256, block_n = 64, stages = 2, consumers = 4, schedule = static, num_splits = 1, pack_gqa = false>}
  return
}

// -----

// head_dim 256 with 4 stages of 256-key blocks needs far more than the
// 227 KB of shared memory of an sm_90 block.
func.func @plan_smem(%q: memref<1x64x2x256xbf16>, %k: memref<1x64x2x256xbf16>, %v: memref<1x64x2x256xbf16>,
                     %o: memref<1x64x2x256xbf16>) {
  // expected-error @+1 {{convert-flashattn-to-nvgpu: the plan needs 1114264 bytes of shared memory (Q, stages x K/V, mbarriers); sm_90 has 232448 per block}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x256xbf16>, memref<1x64x2x256xbf16>, memref<1x64x2x256xbf16>)
      outs(%o : memref<1x64x2x256xbf16>)
      {plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 256, stages = 4, consumers = 2, schedule = static, num_splits = 1, pack_gqa = false>}
  return
}

// -----

// pack_gqa: the 4 query heads of each kv head share tiles. The tiles run
// over (batch, kv head, packed m_block) with Sq x 4 packed rows; Q comes
// through a 5-D tensor map (coordinates d, g = 0, kv head, position
// m0 / 4, batch); a packed row R is position R / 4 of head kvh 4 + R % 4;
// no TMA store (rows of one tile are spread over heads).
// CHECK-LABEL: func.func @pack_gqa
// CHECK: flashattn.attention
// CHECK-NOT: arg = "out", box
// CHECK-SAME: #flashattn.param<kind = tma, arg = "q", box = [64, 4, 1, 32, 1], swizzle = 128, group = 4>
// CHECK-SAME: pack_gqa = true
// CHECK: llvm.func @fa_sm90_0(
// CHECK: %[[ROWS:.*]] = arith.muli %{{.*}}, %[[G:c4_i32[_0-9]*]] : i32
// CHECK-NEXT: arith.ceildivui %[[ROWS]], %{{.*}} : i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %{{.*}}, box[%{{.*}}, %c0_i32, %{{.*}}, %{{.*}}, %{{.*}}] l2_cache_hint = %{{.*}} : !llvm.ptr<7>, !llvm.ptr
// CHECK: arith.divui %{{.*}}, %[[G]] : i32
// CHECK: arith.remui %{{.*}}, %[[G]] : i32
// CHECK-NOT: nvvm.cp.async.bulk.tensor.global.shared.cta
// CHECK: llvm.return
func.func @pack_gqa(%q: memref<2x1x32x128xbf16>, %k: memref<2x4000x8x128xbf16>, %v: memref<2x4000x8x128xbf16>,
                    %o: memref<2x1x32x128xbf16>, %l: memref<2x32x1xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x1x32x128xbf16>, memref<2x4000x8x128xbf16>, memref<2x4000x8x128xbf16>)
      outs(%o, %l : memref<2x1x32x128xbf16>, memref<2x32x1xf32>) {causal = #flashattn.causal<bottom_right>, pack_gqa = true}
  return
}

// -----

// pack_gqa needs the group to divide block_m (the Q map's box).
func.func @pack_gqa_group(%q: memref<1x8x6x64xbf16>, %k: memref<1x64x1x64xbf16>, %v: memref<1x64x1x64xbf16>,
                          %o: memref<1x8x6x64xbf16>) {
  // expected-error @+1 {{convert-flashattn-to-nvgpu: pack_gqa on sm90 needs Hq / Hkv dividing block_m (the Q tensor map's box is G heads x block_m / G positions); Hq / Hkv = 6, block_m = 128}}
  flashattn.attention ins(%q, %k, %v : memref<1x8x6x64xbf16>, memref<1x64x1x64xbf16>, memref<1x64x1x64xbf16>)
      outs(%o : memref<1x8x6x64xbf16>) {pack_gqa = true, window_size = array<i64: 16, 0>}
  return
}

// -----

// Varlen: q/out [Tq, H, D], k/v [Tk, Hkv, D], lse [Hq, Tq] take 3 (lse 2)
// dims each, their tensor maps 3 coordinates; cu_seqlens are not kernel
// arguments: the runtime builds the tile table from them (a pointer, then
// a 2048-byte copy by value read when the pointer is null), whose entry 0
// is the number of (sequence, m_block) tiles per head. Tiles read their
// sequence's fields; no TMA store (a tile's last rows would land in the
// next sequence).
// CHECK-LABEL: func.func @varlen
// CHECK: flashattn.attention {{.*}}#flashattn.param<kind = tile_table>
// CHECK: llvm.func @fa_sm90_0(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %[[TQ:arg5]]: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %[[QMAP:arg19]]: !llvm.ptr {{{.*}}}, %{{.*}}: !llvm.ptr {{{.*}}}, %{{.*}}: !llvm.ptr {{{.*}}}, %{{.*}}: !llvm.ptr<1>, %[[TABLE:arg23]]: !llvm.ptr<1>, %[[INLINE:arg24]]: !llvm.ptr {llvm.align = 16 : i64, llvm.byval = !llvm.array<2048 x i8>, nvvm.grid_constant})
// CHECK: %[[GLOBAL:.*]] = llvm.addrspacecast %[[TABLE]] : !llvm.ptr<1> to !llvm.ptr
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr<1>
// CHECK: %[[ISNULL:.*]] = llvm.icmp "eq" %[[TABLE]], %[[NULL]] : !llvm.ptr<1>
// CHECK: %[[TT:.*]] = llvm.select %[[ISNULL]], %[[INLINE]], %[[GLOBAL]] : i1, !llvm.ptr
// CHECK: %[[COUNT:.*]] = llvm.load %[[TT]] invariant : !llvm.ptr -> i32
// CHECK: arith.muli %[[COUNT]], %{{.*}} : i32
// Tiles go in groups of hg heads (word 2, reloaded per tile), entry by
// entry in a group, head fastest.
// CHECK: %[[HGP:.*]] = llvm.getelementptr %[[TT]][2] : (!llvm.ptr) -> !llvm.ptr, i32
// CHECK-NEXT: %[[HGW:.*]] = llvm.load %[[HGP]] : !llvm.ptr -> i32
// CHECK-NEXT: %[[HG1:.*]] = arith.maxui %[[HGW]], %c1_i32
// CHECK-NEXT: %[[HG:.*]] = arith.minui %[[HG1]], %{{.*}} : i32
// CHECK-NEXT: arith.muli %[[HG]], %[[COUNT]] : i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[QMAP]], %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}] l2_cache_hint = %{{.*}} : !llvm.ptr<7>, !llvm.ptr
// A V block reaching past its sequence: the producer warp zeroes those rows
// (16-byte stores), fences them, syncs and completes full_V by hand.
// CHECK: llvm.mlir.zero : vector<4xi32>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK: nvvm.fence.proxy
// CHECK: nvvm.bar.warp.sync
// CHECK: nvvm.mbarrier.arrive
// CHECK-NOT: nvvm.cp.async.bulk.tensor.global.shared.cta
// CHECK: llvm.return
func.func @varlen(%q: memref<?x8x128xbf16>, %k: memref<?x2x128xbf16>, %v: memref<?x2x128xbf16>,
                  %cq: memref<4xi32>, %ck: memref<4xi32>,
                  %o: memref<?x8x128xbf16>, %l: memref<8x?xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<?x8x128xbf16>, memref<?x2x128xbf16>, memref<?x2x128xbf16>)
      cu_seqlens_q(%cq : memref<4xi32>) cu_seqlens_k(%ck : memref<4xi32>)
      outs(%o, %l : memref<?x8x128xbf16>, memref<8x?xf32>)
      {causal = #flashattn.causal<bottom_right>}
  return
}

// -----

// seqused_k on dense tensors: the tile table too (k lengths from
// seqused_k), 4-D maps.
// CHECK-LABEL: func.func @seqused_k
// CHECK: flashattn.attention {{.*}}#flashattn.param<kind = tile_table>
// CHECK: llvm.func @fa_sm90_0(
// CHECK-SAME: %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr {llvm.align = 16 : i64, llvm.byval = !llvm.array<2048 x i8>, nvvm.grid_constant})
func.func @seqused_k(%q: memref<2x1x8x128xbf16>, %k: memref<2x512x8x128xbf16>, %v: memref<2x512x8x128xbf16>,
                     %su: memref<2xi32>, %o: memref<2x1x8x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x128xbf16>, memref<2x512x8x128xbf16>, memref<2x512x8x128xbf16>)
      seqused_k(%su : memref<2xi32>) outs(%o : memref<2x1x8x128xbf16>)
  return
}

// -----

// kv-cache append: a third entry of the module copies k_new / v_new into
// the cache in 16-byte chunks (a grid-stride loop), reading each
// sequence's start from the tile table the attention kernel also takes;
// the op names it.
// CHECK-LABEL: func.func @append
// CHECK: flashattn.attention {{.*}}append = @fa_sm90_0_module::@fa_sm90_0_append
// CHECK-SAME: #flashattn.param<kind = tile_table>
// CHECK: llvm.func @fa_sm90_0(
// CHECK: llvm.func @fa_sm90_0_append(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, {{(%[^:]*: i64, )+}}%[[TABLE:.*]]: !llvm.ptr<1>)
// CHECK: scf.for
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
func.func @append(%q: memref<2x4x8x128xbf16>, %k: memref<2x512x2x128xbf16>, %v: memref<2x512x2x128xbf16>,
                  %kn: memref<2x4x2x128xbf16>, %vn: memref<2x4x2x128xbf16>, %cs: memref<2xi32>,
                  %o: memref<2x4x8x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x4x8x128xbf16>, memref<2x512x2x128xbf16>, memref<2x512x2x128xbf16>)
      k_new(%kn : memref<2x4x2x128xbf16>) v_new(%vn : memref<2x4x2x128xbf16>) cache_seqlens(%cs : memref<2xi32>)
      outs(%o : memref<2x4x8x128xbf16>) {causal = #flashattn.causal<bottom_right>}
  return
}

// -----

// Paged KV: a TMA box per page; page sizes the key block can be cut into
// (or that hold whole blocks) only. With pages smaller than the key block,
// lane j of the producer warp loads page j's index and issues its box,
// after lane 0 set the barrier's byte count and the warp synced.
// The page lists are the last parameter (the call's device block_table,
// or the runtime's copies in the tile table).
// With pack_gqa (the plan packs one query token) over 16-key pages, a key
// block holds 2 kv heads (kv_heads_per_block = 2, q's map group 2 x 4
// heads): each box is 2 heads x 16 keys (4 KB at head_dim 64), so a block of
// 128 rows (64 keys) is 4 boxes, one per page, 2 x 16 x 128 bytes apart,
// at kv head 2 x (the tile's kv group).
// A forced count that does not divide the kv heads (or that a kernel
// without small pages cannot take) is an error naming the sizes.
// BADHP: error: flashattn-plan: kv-heads-per-block applies to pack_gqa kernels over paged KV
// BADHP: error: flashattn-plan: kv-heads-per-block = 3 needs to divide 8 and Hkv (2), hp x page_size to divide block_n (16, 128) and hp x Hq / Hkv (4) to divide block_m (128)
// CHECK-LABEL: func.func @paged16
// CHECK: flashattn.attention {{.*}}kv_heads_per_block = 2, abi = {{.*}}arg = "q", box = [64, 8, 1, 16, 1], swizzle = 128, group = 8>{{.*}}#flashattn.param<kind = tile_table>
// CHECK: llvm.func @fa_sm90_0({{.*}}, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr {{{.*}}}, %[[PAGES:arg[0-9]+]]: !llvm.ptr<1>) attributes
// CHECK: %[[LANE:.*]] = arith.remui %{{.*}}, %c32_i32 : i32
// CHECK: %[[HEAD0:.*]] = arith.muli %{{.*}}, %c2_i32{{.*}} : i32
// CHECK: llvm.getelementptr %[[PAGES]][
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[FULLK:[0-9]+]], %c16384_i32_{{[0-9]+}} : !llvm.ptr<3>, i32
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.bar.warp.sync
// CHECK: %[[MINE:.*]] = arith.cmpi ult, %[[LANE]], %c4_i32{{.*}} : i32
// CHECK-NEXT: scf.if %[[MINE]] {
// CHECK: arith.muli %{{.*}}, %c4096_i32 : i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %[[FULLK]], box[%{{.*}}, %[[HEAD0]], %c0_i32, %{{.*}}]
// The consumers: a score counts only where its column's kv head (c % 2)
// is its row's ((r % 8) / 4), on top of the key bound, in every block.
// CHECK: } consumers {
// CHECK: %[[CHP:.*]] = arith.remui %{{.*}}, %c2_i32{{.*}} : i32
// CHECK-NEXT: %[[SAME:.*]] = arith.cmpi eq, %{{.*}}, %[[CHP]] : i32
// CHECK: arith.andi %{{[0-9]+}}, %[[SAME]] : i1
// CHECK-NEXT: arith.select
func.func @paged16(%q: memref<2x1x8x64xbf16>, %k: memref<64x16x2x64xbf16>, %v: memref<64x16x2x64xbf16>,
                   %su: memref<2xi32>, %bt: memref<2x16xi32>, %o: memref<2x1x8x64xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x16x2x64xbf16>, memref<64x16x2x64xbf16>)
      seqused_k(%su : memref<2xi32>) block_table(%bt : memref<2x16xi32>)
      outs(%o : memref<2x1x8x64xbf16>)
  return
}

// -----

// MQA over 16-key pages: one kv head, so one head per box (block_n /
// page_size = 8 boxes, one per page, at head_dim 64), at the tile's kv head.
// CHECK-LABEL: func.func @paged16_mqa
// CHECK-NOT: kv_heads_per_block
// CHECK: %[[LANE:.*]] = arith.remui %{{.*}}, %c32_i32 : i32
// CHECK: nvvm.bar.warp.sync
// CHECK: %[[MINE:.*]] = arith.cmpi ult, %[[LANE]], %c8_i32{{.*}} : i32
// CHECK-NEXT: scf.if %[[MINE]] {
// CHECK: arith.muli %{{.*}}, %c2048_i32 : i32
func.func @paged16_mqa(%q: memref<2x1x8x64xbf16>, %k: memref<64x16x1x64xbf16>, %v: memref<64x16x1x64xbf16>,
                       %su: memref<2xi32>, %bt: memref<2x16xi32>, %o: memref<2x1x8x64xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x16x1x64xbf16>, memref<64x16x1x64xbf16>)
      seqused_k(%su : memref<2xi32>) block_table(%bt : memref<2x16xi32>)
      outs(%o : memref<2x1x8x64xbf16>)
  return
}

// -----

// The page panel layout (one kv head a box, pages smaller than the key
// block; sm90PagePanels): at head_dim 128 each 16-key page is ONE box of the
// 5-D view {64, 8, H D / 64, S / 8, P}, at coordinates {0, 0, 2 x kv head,
// 0, page}, 4 KB apart, so 8 lanes issue a 128-key block. The wgmma
// descriptors step by the layout's strides: K's stride byte offset is 2 KB
// (the next 8 keys; high word (2048 >> 4) | 1 << 30, against Q's 1 KB),
// V's leading byte offset 1 KB (the next 64 columns; (1024 >> 4) << 16 in
// the low word). The V rows past a sequence are zeroed in this layout:
// from the 8-row group of the first such row, each 16 bytes whose row
// ((offset / 2048) x 8 + offset % 1024 / 128) lies past it.
// CHECK-LABEL: func.func @paged16_mqa_hd128
// CHECK: %[[LANE:.*]] = arith.remui %{{.*}}, %c32_i32 : i32
// CHECK: nvvm.bar.warp.sync
// CHECK: %[[MINE:.*]] = arith.cmpi ult, %[[LANE]], %c8_i32{{.*}} : i32
// CHECK-NEXT: scf.if %[[MINE]] {
// CHECK: arith.muli %{{.*}}, %c4096_i32 : i32
// CHECK: %[[PANEL:.*]] = arith.muli %{{.*}}, %c2_i32{{.*}} : i32
// CHECK-NEXT: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, box[%c0_i32{{.*}}, %c0_i32{{.*}}, %[[PANEL]], %c0_i32{{.*}}, %{{.*}}]
// CHECK: scf.for %[[IV:.*]] = %{{.*}} to %c32768_i32{{.*}} step %c512_i32
// CHECK: %[[GROUP:.*]] = arith.divui %[[IV]], %c2048_i32{{.*}} : i32
// CHECK-NEXT: %[[GROW:.*]] = arith.muli %[[GROUP]], %c8_i32
// CHECK: %[[INP:.*]] = arith.remui %[[IV]], %c1024_i32{{.*}} : i32
// CHECK-NEXT: %[[RIG:.*]] = arith.divui %[[INP]], %c128_i32
// CHECK-NEXT: %[[ROW:.*]] = arith.addi %[[GROW]], %[[RIG]]
// CHECK-NEXT: arith.cmpi sge, %[[ROW]]
// K: the descriptor whose high word is the 2 KB stride byte offset (Q's
// beside it has 1 KB); its second 64-column panel starts 1 KB on (+64 in
// 16-byte units). V: leading byte offset 1 KB, stride byte offset 2 KB,
// and each k16 step 4 KB on (+256).
// CHECK: } consumers {
// CHECK: arith.constant 4611686293305294848 : i64
// CHECK-NEXT: arith.ori
// CHECK-NEXT: arith.extui %[[KLO:[0-9]+]] : i32 to i64
// CHECK-NEXT: arith.constant 4611686568183201792 : i64
// CHECK: arith.addi %[[KLO]], %c64_i32{{.*}} : i32
// CHECK: %[[VLO:[0-9]+]] = arith.ori %{{[0-9]+}}, %c4194304_i32{{.*}} : i32
// CHECK-NEXT: arith.extui %[[VLO]] : i32 to i64
// CHECK-NEXT: arith.constant 4611686568183201792 : i64
// CHECK-NOT: arith.addi %[[VLO]], %c128_i32
// CHECK: arith.addi %[[VLO]], %c256_i32{{.*}} : i32
func.func @paged16_mqa_hd128(%q: memref<2x1x8x128xbf16>, %k: memref<64x16x1x128xbf16>, %v: memref<64x16x1x128xbf16>,
                             %su: memref<2xi32>, %bt: memref<2x16xi32>, %o: memref<2x1x8x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x128xbf16>, memref<64x16x1x128xbf16>, memref<64x16x1x128xbf16>)
      seqused_k(%su : memref<2xi32>) block_table(%bt : memref<2x16xi32>)
      outs(%o : memref<2x1x8x128xbf16>)
  return
}

// -----

// Pages of one key: the 128 producer threads copy rows with cp.async (16
// bytes each) and arrive on full barriers that count them.
// CHECK-LABEL: func.func @paged1
// CHECK: llvm.func @fa_sm90_0({{.*}}, %[[PAGES:arg[0-9]+]]: !llvm.ptr<1>) attributes
// CHECK: nvvm.mbarrier.init %{{.*}}, %c128_i32{{[_0-9]*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// A page index outside the pool (an unchecked device block_table) reads
// page 0; keys past the sequence and such pages copy 0 source bytes (zero
// fill).
// CHECK: %[[PP:.*]] = llvm.getelementptr %[[PAGES]][
// CHECK-NEXT: %[[PAGE:.*]] = llvm.load %[[PP]] invariant : !llvm.ptr<1> -> i32
// CHECK: %[[INPOOL:.*]] = arith.cmpi ult, %[[PAGE]], %{{.*}} : i32
// CHECK-NEXT: arith.select %[[INPOOL]], %[[PAGE]], %c0_i32
// CHECK: %[[REAL:.*]] = arith.andi %{{.*}}, %[[INPOOL]] : i1
// CHECK-NEXT: %[[BYTES:.*]] = arith.select %[[REAL]], %c16_i32, %c0_i32
// CHECK: nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = cg, %[[BYTES]] : !llvm.ptr<3>, !llvm.ptr<1>, i32
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvvm.cp.async.wait.group 1
// CHECK: nvvm.fence.proxy
// CHECK: nvvm.mbarrier.arrive
func.func @paged1(%q: memref<2x1x8x64xbf16>, %k: memref<64x1x2x64xbf16>, %v: memref<64x1x2x64xbf16>,
                  %su: memref<2xi32>, %bt: memref<2x16xi32>, %o: memref<2x1x8x64xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x1x2x64xbf16>, memref<64x1x2x64xbf16>)
      seqused_k(%su : memref<2xi32>) block_table(%bt : memref<2x16xi32>)
      outs(%o : memref<2x1x8x64xbf16>)
  return
}

// -----

// Pages of 1 at head_dim 256: per-row copies with the plan's 32-key blocks
// (with 64 the copying kernel spills).
// CHECK-LABEL: func.func @paged1_hd256
// CHECK: flashattn.attention {{.*}}block_n = 32
// CHECK: nvvm.cp.async.shared.global
func.func @paged1_hd256(%q: memref<2x1x8x256xbf16>, %k: memref<64x1x2x256xbf16>, %v: memref<64x1x2x256xbf16>,
                        %su: memref<2xi32>, %bt: memref<2x16xi32>, %o: memref<2x1x8x256xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x256xbf16>, memref<64x1x2x256xbf16>, memref<64x1x2x256xbf16>)
      seqused_k(%su : memref<2xi32>) block_table(%bt : memref<2x16xi32>)
      outs(%o : memref<2x1x8x256xbf16>)
  return
}

// -----

// The same with a given plan of 64-key blocks: reported, with the values.
func.func @paged1_hd256_bn64(%q: memref<2x1x8x256xbf16>, %k: memref<64x1x2x256xbf16>, %v: memref<64x1x2x256xbf16>,
                             %su: memref<2xi32>, %bt: memref<2x16xi32>, %o: memref<2x1x8x256xbf16>) {
  // expected-error @+1 {{convert-flashattn-to-nvgpu: per-row KV copies (pages below 8 keys) need 2 consumer warpgroups, and key blocks of at most 32 at head_dim 256; the plan has 2 consumers, head_dim 256, block_n 64}}
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x256xbf16>, memref<64x1x2x256xbf16>, memref<64x1x2x256xbf16>)
      seqused_k(%su : memref<2xi32>) block_table(%bt : memref<2x16xi32>)
      outs(%o : memref<2x1x8x256xbf16>)
      {plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 64, stages = 2, consumers = 2, schedule = static, num_splits = 1, pack_gqa = false>}
  return
}

// -----

// head_dim 256 takes FlashAttention-3's warp-scheduler barrier (named
// barriers 1 and 2, 256 threads: a consumer and the next) and the early Q
// release (the predicated arrive after a tile's last S) like the smaller
// head dims (measured faster since the descriptors are warp-uniform).
// CHECK-LABEL: func.func @hd256
// CHECK: llvm.func @fa_sm90_0(
// CHECK: nvvm.barrier.arrive id = %{{.*}} number_of_threads = %c256_i32
// CHECK: flashattn.mbarrier_arrive_if
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c256_i32
// CHECK: llvm.return
// OFF-LABEL: func.func @hd256
// OFF-NOT: nvvm.barrier id
// OFF: llvm.return
func.func @hd256(%q: memref<1x512x4x256xbf16>, %k: memref<1x512x4x256xbf16>, %v: memref<1x512x4x256xbf16>,
                 %o: memref<1x512x4x256xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x512x4x256xbf16>, memref<1x512x4x256xbf16>, memref<1x512x4x256xbf16>)
      outs(%o : memref<1x512x4x256xbf16>) {causal = #flashattn.causal<bottom_right>}
  return
}
