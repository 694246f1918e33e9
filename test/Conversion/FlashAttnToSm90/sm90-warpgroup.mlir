// RUN: fa-opt %s --flashattn-plan="target=sm90 block-m=64 block-n=64 consumers=1 kv-heads-per-block=1 warp-specialize=off" --flashattn-split-kv --flashattn-tile --flashattn-sm90-warpgroup --split-input-file --verify-diagnostics | FileCheck %s
// RUN: fa-opt %s --flashattn-plan="target=sm90 block-m=64 block-n=64 consumers=1 kv-heads-per-block=1 warp-specialize=off" --flashattn-split-kv --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warpgroup --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=RING

// flashattn-tile's kernel (causal bottom-right, GQA 4/2, lse) distributed
// over one warpgroup: an llvm.func of 128 threads with the ABI (q, k, v,
// out, lse, their dims, the tensor maps of q, k and v), which the op gets
// too. The persistent loop runs from ctaid by nctaid carrying the state
// (3 phases, the two rows' max and sum, O, S); Q and each K / V tile come
// by TMA after a CTA barrier and an mbarrier wait; S by wgmma on
// descriptors (4 k16 steps at head_dim 64); the boundary mask (a
// tile_map) under the scf.if that yields the state, its row op (key_end)
// once per row of the thread (2), its select per register; the softmax by
// quad shuffles and exp2; O += P V by wgmma_rs (4 k16 steps of 64 keys).
// CHECK-LABEL: func.func @causal
// CHECK: flashattn.attention
// CHECK-SAME: flashattn.sm90 = #flashattn.sm90_entries<kernel = @fa_sm90_0_module::@fa_sm90_0, abi = {fa_sm90_0 = #flashattn.kernel_abi<threads = 128
// CHECK: gpu.module @fa_sm90_0_module
// CHECK-NOT: gpu.func
// CHECK: llvm.func @fa_sm90_0(
// CHECK-SAME: flashattn.abi = #flashattn.kernel_abi<threads = 128, smem = 24600, params = [#flashattn.param<kind = ptr, arg = "q">, #flashattn.param<kind = ptr, arg = "k">, #flashattn.param<kind = ptr, arg = "v">, #flashattn.param<kind = ptr, arg = "out">, #flashattn.param<kind = ptr, arg = "lse">, #flashattn.param<kind = dims, arg = "q", rank = 4>, #flashattn.param<kind = dims, arg = "k", rank = 4>, #flashattn.param<kind = dims, arg = "v", rank = 4>, #flashattn.param<kind = dims, arg = "out", rank = 4>, #flashattn.param<kind = dims, arg = "lse", rank = 3>, #flashattn.param<kind = tma, arg = "q", box = [64, 1, 64, 1], swizzle = 128>, #flashattn.param<kind = tma, arg = "k", box = [64, 1, 64, 1], swizzle = 128>, #flashattn.param<kind = tma, arg = "v", box = [64, 1, 64, 1], swizzle = 128>]>
// CHECK: %[[CTA:.*]] = nvvm.read.ptx.sreg.ctaid.x
// CHECK: %[[GRID:.*]] = nvvm.read.ptx.sreg.nctaid.x
// CHECK: scf.for %{{.*}} = %{{.*}} to %c16 step %{{.*}} iter_args({{.*}}) -> (i32, i32, i32, f32, f32, f32, f32, !llvm.struct<{{.*}}>, !llvm.struct<{{.*}}>)
// CHECK:   flashattn.key_blocks
// CHECK:   nvvm.barrier0
// CHECK:   nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK:   nvvm.mbarrier.try_wait.parity
// CHECK:   scf.for %{{.*}} = %begin to %end step %c1 iter_args(
// CHECK:     nvvm.barrier0
// CHECK:     nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK:     nvvm.mbarrier.try_wait.parity
// CHECK:     nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: nvvm.wgmma.mma_async
// CHECK:     nvvm.wgmma.commit.group.sync.aligned
// CHECK:     nvvm.wgmma.wait.group.sync.aligned 0
// CHECK:     scf.if %{{.*}} -> (i32, i32, i32, f32, f32, f32, f32,
// CHECK-COUNT-2: flashattn.key_end
// CHECK-NOT: flashattn.key_end
// CHECK:       scf.yield
// CHECK:     } else {
// CHECK:     nvvm.shfl.sync bfly
// CHECK:     llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK:     nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK:     nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: flashattn.wgmma_rs
// CHECK:     scf.yield
// CHECK:   llvm.store
// CHECK: llvm.return
// After flashattn-sm90-pipeline-kv: K and V in rings of 2 slots (Q 8 KiB,
// 2 x 2 x 8 KiB, 5 mbarriers: Q's, then K's and V's by slot); before the
// key-block loop block begin's K and V start under one CTA barrier with no
// wait; in the loop block n + 1's start (guarded), then the waits on slot
// s = (n - begin) mod 2: its mbarrier (40968 + 8 s for K), the phase bit
// s of the carried phases, flipped after; S reads K's slot; V's rows past
// the 130 keys are TMA's zeros (the dense layout): P V follows V's wait
// with no store to shared memory.
// RING-LABEL: func.func @causal
// RING: llvm.func @fa_sm90_0(
// RING-SAME: smem = 41000
// RING-COUNT-5: nvvm.mbarrier.init
// RING-NOT: nvvm.mbarrier.init
// RING: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg24,
// RING: nvvm.mbarrier.try_wait.parity
// RING: nvvm.barrier0
// RING: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg25,
// RING-NOT: nvvm.barrier0
// RING: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg26,
// RING-NOT: nvvm.mbarrier.try_wait.parity
// RING: scf.for %{{.*}} = %begin to %end step %c1 iter_args(
// RING:   arith.remsi
// RING:   scf.if
// RING:     nvvm.barrier0
// RING:     nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg25,
// RING:     nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg26,
// RING:   %[[SLOT:.*]] = arith.index_cast %{{.*}} : index to i32
// RING:   %[[BIT:.*]] = arith.shrui %{{.*}}, %[[SLOT]] : i32
// RING:   %[[PARITY:.*]] = arith.andi %[[BIT]], %{{.*}} : i32
// RING:   %[[OFF:.*]] = arith.muli %[[SLOT]], %c8_i32
// RING:   %[[AT:.*]] = arith.addi %c40968_i32, %[[OFF]]
// RING:   %[[BAR:.*]] = llvm.getelementptr %{{.*}}[%[[AT]]]
// RING:   nvvm.mbarrier.try_wait.parity %[[BAR]], %[[PARITY]]
// RING:   %[[FLIP:.*]] = arith.shli %{{.*}}, %[[SLOT]] : i32
// RING:   arith.xori %{{.*}}, %[[FLIP]] : i32
// RING:   nvvm.wgmma.mma_async
// RING:   nvvm.mbarrier.try_wait.parity
// RING-NOT: llvm.store
// RING:   flashattn.wgmma_rs
func.func @causal(%q: memref<2x100x4x64xbf16>, %k: memref<2x130x2x64xbf16>, %v: memref<2x130x2x64xbf16>,
                  %o: memref<2x100x4x64xbf16>, %l: memref<2x4x100xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x100x4x64xbf16>, memref<2x130x2x64xbf16>, memref<2x130x2x64xbf16>)
      outs(%o, %l : memref<2x100x4x64xbf16>, memref<2x4x100xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}

// -----

// Softcap: math.tanh becomes tanh.approx.f32 (llvm.intr.tanh with afn),
// once per score register (32 at 64 x 64).
// CHECK-LABEL: func.func @softcap
// CHECK: llvm.func @fa_sm90_0
// CHECK-COUNT-32: llvm.intr.tanh(%{{.*}}) {fastmathFlags = #llvm.fastmath<afn>}
// CHECK-NOT: llvm.intr.tanh
// CHECK-NOT: math.tanh
func.func @softcap(%q: memref<1x64x2x128xf16>, %k: memref<1x64x2x128xf16>, %v: memref<1x64x2x128xf16>,
                   %o: memref<1x64x2x128xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x128xf16>, memref<1x64x2x128xf16>, memref<1x64x2x128xf16>)
      outs(%o : memref<1x64x2x128xf16>) {softcap = 30.0 : f32}
  return
}

// -----

// A head_dim the sm90 kernels do not take is reported (the ops naming a
// kernel are checked before it is built).
func.func @hd96(%q: memref<1x64x2x96xf16>, %k: memref<1x64x2x96xf16>, %v: memref<1x64x2x96xf16>,
                %o: memref<1x64x2x96xf16>) {
  // expected-error @+1 {{flashattn-sm90-warpgroup: the sm90 kernel takes head_dim 64, 128 or 256 (= head_dim_v)}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x96xf16>, memref<1x64x2x96xf16>, memref<1x64x2x96xf16>)
      outs(%o : memref<1x64x2x96xf16>)
  return
}

// -----

// Varlen: the ABI has the packed dims (q, k, v, out [T, H, D], lse [H, T]),
// 3-D tensor maps and the tile table (a device pointer, or null and the
// grid-constant inline copy); the table's words are read from the one the
// pointer picks, and V's rows past the tile's keys are zeroed in shared
// memory after its wait (the next sequence's rows are not past the tensor).
// CHECK-LABEL: func.func @varlen
// CHECK: llvm.func @fa_sm90_0(
// CHECK-SAME: #flashattn.param<kind = dims, arg = "q", rank = 3>
// CHECK-SAME: #flashattn.param<kind = dims, arg = "lse", rank = 2>, #flashattn.param<kind = tma, arg = "q", box = [64, 1, 64], swizzle = 128>
// CHECK-SAME: #flashattn.param<kind = tile_table>, #flashattn.param<kind = tile_table_inline, bytes = 2048>]>
// CHECK: %[[NULL:.*]] = llvm.icmp "eq" %{{.*}}, %{{.*}} : !llvm.ptr<1>
// CHECK: %[[TABLE:.*]] = llvm.select %[[NULL]], %{{.*}}, %{{.*}} : i1, !llvm.ptr
// CHECK: %[[W:.*]] = llvm.getelementptr %[[TABLE]][%{{.*}}] : (!llvm.ptr, i32) -> !llvm.ptr, i32
// CHECK: llvm.load %[[W]] invariant : !llvm.ptr -> i32
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: %[[SHORT:.*]] = arith.cmpi slt, %{{.*}}, %c64_i32
// CHECK: scf.if %[[SHORT]] {
// CHECK:   llvm.store %{{.*}} : vector<4xi32>, !llvm.ptr<3>
// CHECK:   nvvm.fence.proxy
// CHECK: flashattn.wgmma_rs
func.func @varlen(%q: memref<?x4x64xbf16>, %k: memref<?x2x64xbf16>, %v: memref<?x2x64xbf16>,
                  %cq: memref<3xi32>, %ck: memref<3xi32>, %o: memref<?x4x64xbf16>, %l: memref<4x?xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<?x4x64xbf16>, memref<?x2x64xbf16>, memref<?x2x64xbf16>)
      cu_seqlens_q(%cq : memref<3xi32>) cu_seqlens_k(%ck : memref<3xi32>)
      outs(%o, %l : memref<?x4x64xbf16>, memref<4x?xf32>)
  return
}

// -----

// Paged (pages of 64 keys): the ABI adds the page table; a key block's page
// is its list's entry (list start + row0 / 64), read from the page table,
// and the TMA box's coordinates are (column, kv head, row0 % 64, page).
// CHECK-LABEL: func.func @paged
// CHECK: llvm.func @fa_sm90_0(
// CHECK-SAME: #flashattn.param<kind = tile_table_inline, bytes = 2048>, #flashattn.param<kind = page_table>]>
// CHECK: %[[AT:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
// CHECK: %[[PAGE:.*]] = llvm.load %[[AT]] invariant : !llvm.ptr<1> -> i32
// CHECK: %[[ROW:.*]] = arith.remui %{{.*}}, %c64_i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %{{.*}}, box[%{{.*}}, %{{.*}}, %[[ROW]], %[[PAGE]]]
func.func @paged(%q: memref<2x1x4x64xf16>, %kc: memref<16x64x2x64xf16>, %vc: memref<16x64x2x64xf16>,
                 %bt: memref<2x8xi32>, %used: memref<2xi32>, %o: memref<2x1x4x64xf16>) {
  flashattn.attention ins(%q, %kc, %vc : memref<2x1x4x64xf16>, memref<16x64x2x64xf16>, memref<16x64x2x64xf16>)
      seqused_k(%used : memref<2xi32>) block_table(%bt : memref<2x8xi32>)
      outs(%o : memref<2x1x4x64xf16>)
  return
}

// -----

// Pages of 16 keys at head_dim 128: a key block is 4 whole pages, one TMA
// box each through the pool's page panel map (box {64 columns, 8 rows, 2
// panels, 2 row groups, 1 page}, at {0, 0, 2 x kv head, 0, page}), each
// page read from the list and landing whole at 4 KB a page; the boxes
// past the block's rows are not loaded, and the bytes the mbarrier
// expects count the pages loaded (ceil(rows / 16) x 4096). K's and V's
// wgmma descriptors step over that layout: 8-row atoms 2 KB apart (K's
// SBO: the high word 1 << 30 | 2048 >> 4), V's 64-column panels 1 KB
// apart (its LBO, 1024 >> 4 << 16 in the low word).
// CHECK-LABEL: func.func @paged16
// CHECK: llvm.func @fa_sm90_0(
// CHECK-SAME: #flashattn.param<kind = tma, arg = "k", box = [64, 8, 2, 2, 1], swizzle = 128, page_panels = true>
// CHECK-SAME: #flashattn.param<kind = tma, arg = "v", box = [64, 8, 2, 2, 1], swizzle = 128, page_panels = true>
// CHECK: %[[PARTS:.*]] = arith.ceildivui %{{.*}}, %c16_i32
// CHECK: %[[BYTES:.*]] = arith.muli %[[PARTS]], %c4096_i32
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %[[BYTES]]
// CHECK: %[[PAGE0:.*]] = llvm.load %{{.*}} invariant : !llvm.ptr<1> -> i32
// CHECK: %[[PANEL0:.*]] = arith.muli %[[HEAD:.*]], %c2_i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, box[%[[Z:.*]], %[[Z]], %[[PANEL0]], %[[Z]], %[[PAGE0]]]
// CHECK: %[[MORE:.*]] = arith.cmpi slt, %c1_i32{{.*}}, %[[PARTS]]
// CHECK: scf.if %[[MORE]] {
// CHECK:   llvm.getelementptr %{{.*}}[4096] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK:   %[[PAGE1:.*]] = llvm.load %{{.*}} invariant : !llvm.ptr<1> -> i32
// CHECK:   nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[PAGE1]]]
// CHECK: %[[KHI:.*]] = arith.constant 4611686568183201792 : i64
// CHECK: %[[KDESC:.*]] = arith.ori %{{.*}}, %[[KHI]] : i64
// CHECK: nvvm.wgmma.mma_async %{{.*}}, %[[KDESC]]
// CHECK: %[[VLBO:.*]] = arith.constant 4194304 : i32
// CHECK: arith.ori %{{.*}}, %[[VLBO]] : i32
// CHECK: flashattn.wgmma_rs
func.func @paged16(%q: memref<2x1x4x128xf16>, %kc: memref<16x16x2x128xf16>, %vc: memref<16x16x2x128xf16>,
                   %bt: memref<2x8xi32>, %used: memref<2xi32>, %o: memref<2x1x4x128xf16>) {
  flashattn.attention ins(%q, %kc, %vc : memref<2x1x4x128xf16>, memref<16x16x2x128xf16>, memref<16x16x2x128xf16>)
      seqused_k(%used : memref<2xi32>) block_table(%bt : memref<2x8xi32>)
      outs(%o : memref<2x1x4x128xf16>)
  return
}

// -----

// Pages of 4 keys are reported without a producer warpgroup to copy
// their rows (a TMA box of 4 rows breaks the swizzle's 8-row atoms).
func.func @paged4(%q: memref<2x1x4x64xf16>, %kc: memref<16x4x2x64xf16>, %vc: memref<16x4x2x64xf16>,
                  %bt: memref<2x8xi32>, %used: memref<2xi32>, %o: memref<2x1x4x64xf16>) {
  // expected-error @+1 {{flashattn-sm90-warpgroup: pages of a multiple of the key block (64) or of 8 keys dividing it, or the plan's kv_row_copies with a producer warpgroup, got 'memref<16x4x2x64xf16>'}}
  flashattn.attention ins(%q, %kc, %vc : memref<2x1x4x64xf16>, memref<16x4x2x64xf16>, memref<16x4x2x64xf16>)
      seqused_k(%used : memref<2xi32>) block_table(%bt : memref<2x8xi32>)
      outs(%o : memref<2x1x4x64xf16>)
  return
}

// -----

// Split-KV (num_splits 3, the partial form): the kernel's partial out and
// lse take the launch's split count (a dynamic leading dimension, dims of
// rank 5 and 4), and the flashattn.combine reading them gets the merge
// kernel fa_sm90_0_combine of the same module, which the op's entries name.
// CHECK-LABEL: func.func @split
// CHECK: flashattn.attention
// CHECK-SAME: combine = @fa_sm90_0_module::@fa_sm90_0_combine
// CHECK-SAME: fa_sm90_0_combine = #flashattn.kernel_abi<threads = 128, smem = 0, params = [#flashattn.param<kind = ptr, arg = "partial_out">, #flashattn.param<kind = ptr, arg = "partial_lse">, #flashattn.param<kind = ptr, arg = "out">, #flashattn.param<kind = ptr, arg = "lse">, #flashattn.param<kind = dims, arg = "partial_out", rank = 5>, #flashattn.param<kind = dims, arg = "partial_lse", rank = 4>, #flashattn.param<kind = dims, arg = "out", rank = 4>, #flashattn.param<kind = dims, arg = "lse", rank = 3>]>
// CHECK: flashattn.combine
// CHECK-SAME: flashattn.sm90 = #flashattn.sm90_entries<kernel = @fa_sm90_0_module::@fa_sm90_0_combine>
// CHECK: llvm.func @fa_sm90_0(
// CHECK-SAME: #flashattn.param<kind = dims, arg = "out", rank = 5>, #flashattn.param<kind = dims, arg = "lse", rank = 4>
// CHECK: flashattn.key_blocks rows[{{.*}}) keys %{{.*}} offset %{{.*}} split %{{.*}} of %{{.*}} {block_n = 64 : i64} : index
// CHECK: llvm.func @fa_sm90_0_combine(
func.func @split(%q: memref<2x8x4x64xbf16>, %k: memref<2x1024x2x64xbf16>, %v: memref<2x1024x2x64xbf16>,
                 %o: memref<2x8x4x64xbf16>, %l: memref<2x4x8xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x8x4x64xbf16>, memref<2x1024x2x64xbf16>, memref<2x1024x2x64xbf16>)
      outs(%o, %l : memref<2x8x4x64xbf16>, memref<2x4x8xf32>) {num_splits = 3 : i64}
  return
}

// -----

// Varlen with splits: the runtime's partial results keep a batch dimension
// in every layout ([S, B, Sq, H, D], [S, B, H, Sq]): the op's [S, Tq, H, D]
// and [S, H, Tq] take a unit batch at dimension 1 in the ABI.
// CHECK-LABEL: func.func @varlen_split
// CHECK: llvm.func @fa_sm90_0(
// CHECK-SAME: #flashattn.param<kind = dims, arg = "q", rank = 3>
// CHECK-SAME: #flashattn.param<kind = dims, arg = "out", rank = 5>, #flashattn.param<kind = dims, arg = "lse", rank = 4>
func.func @varlen_split(%q: memref<?x4x64xbf16>, %k: memref<?x2x64xbf16>, %v: memref<?x2x64xbf16>,
                        %cq: memref<3xi32>, %ck: memref<3xi32>, %o: memref<?x4x64xbf16>, %l: memref<4x?xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<?x4x64xbf16>, memref<?x2x64xbf16>, memref<?x2x64xbf16>)
      cu_seqlens_q(%cq : memref<3xi32>) cu_seqlens_k(%ck : memref<3xi32>)
      outs(%o, %l : memref<?x4x64xbf16>, memref<4x?xf32>) {num_splits = 2 : i64}
  return
}

// -----

// kv-cache append: the module also gets the copy kernel, launched first,
// which the op's entries name (append = ...) with its ABI.
// CHECK-LABEL: func.func @append
// CHECK: flashattn.attention
// CHECK-SAME: append = @fa_sm90_0_module::@fa_sm90_0_append
// CHECK-SAME: fa_sm90_0_append = #flashattn.kernel_abi<
// CHECK: llvm.func @fa_sm90_0(
// CHECK: llvm.func @fa_sm90_0_append(
func.func @append(%q: memref<2x1x4x64xf16>, %kc: memref<2x256x2x64xf16>, %vc: memref<2x256x2x64xf16>,
                  %kn: memref<2x1x2x64xf16>, %vn: memref<2x1x2x64xf16>, %cs: memref<2xi32>,
                  %o: memref<2x1x4x64xf16>) {
  flashattn.attention ins(%q, %kc, %vc : memref<2x1x4x64xf16>, memref<2x256x2x64xf16>, memref<2x256x2x64xf16>)
      k_new(%kn : memref<2x1x2x64xf16>) v_new(%vn : memref<2x1x2x64xf16>) cache_seqlens(%cs : memref<2xi32>)
      outs(%o : memref<2x1x4x64xf16>)
  return
}

// -----

// head_dim_v other than head_dim is reported, not miscompiled.
func.func @hdv(%q: memref<1x64x2x128xbf16>, %k: memref<1x64x2x128xbf16>, %v: memref<1x64x2x64xbf16>,
               %o: memref<1x64x2x64xbf16>) {
  // expected-error @+1 {{flashattn-sm90-warpgroup: the sm90 kernel takes head_dim 64, 128 or 256 (= head_dim_v)}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x128xbf16>, memref<1x64x2x128xbf16>, memref<1x64x2x64xbf16>)
      outs(%o : memref<1x64x2x64xbf16>)
  return
}

// -----

// What the kernels do not take is reported, not miscompiled: f32 inputs,
func.func @f32(%q: memref<1x64x2x64xf32>, %k: memref<1x64x2x64xf32>, %v: memref<1x64x2x64xf32>,
               %o: memref<1x64x2x64xf32>) {
  // expected-error @+1 {{flashattn-sm90-warpgroup: the sm90 kernel takes bf16 or f16 inputs}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xf32>, memref<1x64x2x64xf32>, memref<1x64x2x64xf32>)
      outs(%o : memref<1x64x2x64xf32>)
  return
}

// -----

// a region op beyond arith (what the kernels' LLVM lowering covers),
func.func @region_math(%q: memref<1x64x2x64xf16>, %k: memref<1x64x2x64xf16>, %v: memref<1x64x2x64xf16>,
                       %o: memref<1x64x2x64xf16>) {
  // expected-error @+1 {{flashattn-sm90-warpgroup: score/mask regions on sm90 take arith ops only (found 'math.exp')}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xf16>, memref<1x64x2x64xf16>, memref<1x64x2x64xf16>)
      outs(%o : memref<1x64x2x64xf16>)
      score(%s: f32, %b: index, %h: index, %i: index, %j: index) {
        %e = math.exp %s : f32
        flashattn.yield %e : f32
      }
  return
}

// -----

// a region scalar NVPTX cannot lower inline (i128 arithmetic needs a
// library call it lacks), not handed to LLVM to abort on,
func.func @region_i128(%q: memref<1x64x2x64xf16>, %k: memref<1x64x2x64xf16>, %v: memref<1x64x2x64xf16>,
                       %o: memref<1x64x2x64xf16>) {
  // expected-error @+1 {{flashattn-sm90-warpgroup: score/mask regions on sm90 compute on integers of up to 64 bits, index, f16, bf16, f32 or f64 only (found 'i128' in 'arith.index_cast')}}
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

// and a partial form whose combine is missing (the runtime launches the
// partial and the combine kernels together).
func.func @partial_without_combine(%q: memref<1x64x2x64xbf16>, %k: memref<1x640x2x64xbf16>, %v: memref<1x640x2x64xbf16>,
                                   %po: memref<2x1x64x2x64xf32>, %pl: memref<2x1x2x64xf32>) {
  // expected-error @+1 {{flashattn-sm90-warpgroup: the split-KV partial results need a flashattn.combine (memref form) reading them}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xbf16>, memref<1x640x2x64xbf16>, memref<1x640x2x64xbf16>)
      outs(%po, %pl : memref<2x1x64x2x64xf32>, memref<2x1x2x64xf32>) {num_splits = 2}
  return
}

// -----

// A split-KV merge into f32 is reported: the sm90 combine writes bf16 or f16.
func.func @split_f32(%q: memref<1x8x2x64xbf16>, %k: memref<1x512x2x64xbf16>, %v: memref<1x512x2x64xbf16>,
                     %o: memref<1x8x2x64xf32>, %l: memref<1x2x8xf32>) {
  // expected-error @+1 {{flashattn-sm90-warpgroup: the sm90 combine writes bf16 or f16, got 'f32'}}
  flashattn.attention ins(%q, %k, %v : memref<1x8x2x64xbf16>, memref<1x512x2x64xbf16>, memref<1x512x2x64xbf16>)
      outs(%o, %l : memref<1x8x2x64xf32>, memref<1x2x8xf32>) {num_splits = 2 : i64}
  return
}

// -----

// Rings must fit in shared memory: 4 K and 4 V tiles at head_dim 256 do not.
module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-error @+1 {{flashattn-sm90-warpgroup: rings of 4 K and 4 V tiles at head_dim 256 need 294984 bytes of shared memory, more than 232448}}
    gpu.func @rings(%q: memref<1x64x1x256xbf16> {flashattn.arg = "q"}, %k: memref<1x64x1x256xbf16> {flashattn.arg = "k"},
                    %v: memref<1x64x1x256xbf16> {flashattn.arg = "v"}, %o: memref<1x64x1x256xbf16> {flashattn.arg = "out"}) kernel {
      %c0 = arith.constant 0 : index
      %c64 = arith.constant 64 : index
      %qt = memref.alloca() : memref<64x256xf32>
      %s = memref.alloca() : memref<64x64xf32>
      %kr = memref.alloca() : memref<4x64x256xf32>
      %vr = memref.alloca() : memref<4x64x256xf32>
      %kv = memref.subview %k[0, 0, 0, 0] [1, 64, 1, 256] [1, 1, 1, 1] : memref<1x64x1x256xbf16> to memref<64x256xbf16, strided<[256, 1]>>
      %vv = memref.subview %v[0, 0, 0, 0] [1, 64, 1, 256] [1, 1, 1, 1] : memref<1x64x1x256xbf16> to memref<64x256xbf16, strided<[256, 1]>>
      %ks = memref.subview %kr[%c0, 0, 0] [1, 64, 256] [1, 1, 1] : memref<4x64x256xf32> to memref<64x256xf32, strided<[256, 1], offset: ?>>
      %vs = memref.subview %vr[%c0, 0, 0] [1, 64, 256] [1, 1, 1] : memref<4x64x256xf32> to memref<64x256xf32, strided<[256, 1], offset: ?>>
      flashattn.tile_load async %kv[%c0] rows %c64 into %ks : memref<64x256xbf16, strided<[256, 1]>> into memref<64x256xf32, strided<[256, 1], offset: ?>>
      flashattn.tile_load async %vv[%c0] rows %c64 into %vs : memref<64x256xbf16, strided<[256, 1]>> into memref<64x256xf32, strided<[256, 1], offset: ?>>
      flashattn.tile_qk %qt, %ks into %s {scale = 1.0 : f32} : memref<64x256xf32>, memref<64x256xf32, strided<[256, 1], offset: ?>> into memref<64x64xf32>
      gpu.return
    }
  }
}

// -----

// pack_gqa (G = 4): Q's tensor map views q as [B, Sq, Hkv, 4, D] with a box
// of 4 heads x 16 positions (packed rows i 4 + g); its TMA's coordinates
// are (column, head 0 of the group, kv head = the view's head / 4, the
// tile's position m0 / 4, batch). Each stored row r is out's position r /
// 4, head r % 4.
// CHECK-LABEL: func.func @packed
// CHECK: llvm.func @fa_sm90_0(
// CHECK-SAME: #flashattn.param<kind = tma, arg = "q", box = [64, 4, 1, 16, 1], swizzle = 128, group = 4>
// CHECK: scf.for
// CHECK: %[[KVH:.*]] = arith.divui %{{.*}}, %c4_i32{{.*}} : i32
// CHECK: %[[P0:.*]] = arith.divui %{{.*}}, %c4_i32{{.*}} : i32
// CHECK: %[[POS:.*]] = arith.addi %{{.*}}, %[[P0]] : i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, box[%{{.*}}, %c0_i32{{[_0-9]*}}, %[[KVH]], %[[POS]], %{{.*}}]
// CHECK: scf.for
// CHECK: scf.if
// CHECK:   %[[RP:.*]] = arith.divui %[[ROW:.*]], %{{.*}} : i32
// CHECK:   %[[RH:.*]] = arith.remui %[[ROW]], %{{.*}} : i32
// CHECK:   llvm.store %{{.*}} : vector<2xbf16>, !llvm.ptr<1>
func.func @packed(%q: memref<2x100x8x64xbf16>, %k: memref<2x130x2x64xbf16>, %v: memref<2x130x2x64xbf16>,
                  %o: memref<2x100x8x64xbf16>, %l: memref<2x8x100xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x100x8x64xbf16>, memref<2x130x2x64xbf16>, memref<2x130x2x64xbf16>)
      outs(%o, %l : memref<2x100x8x64xbf16>, memref<2x8x100xf32>) {pack_gqa = true}
  return
}
