// RUN: fa-opt %s --flashattn-plan="target=sm90 block-m=64 block-n=64 consumers=1" --flashattn-split-kv --convert-flashattn-to-nvgpu=unpipelined --split-input-file --verify-diagnostics | FileCheck %s

// The unpipelined form: one warpgroup (128 threads, no warp
// specialization), shared memory for Q and one K and V block of 64 x 128
// bf16 (3 x 16 KB) and two mbarriers; the dense kernels' parameters
// (pointers, dims, the tensor maps of q, k, v with 64-row boxes). Per tile:
// Q by TMA onto the first mbarrier and a wait; the key blocks of
// flashattn.key_blocks, each loaded onto the second mbarrier and waited
// for, S = Q K^T (8 k16 wgmma steps, committed and waited for), the
// softmax, O += P V (4 flashattn.wgmma_rs steps, committed and waited
// for); then out and lse.
// CHECK-LABEL: func.func @gqa
// CHECK: flashattn.sm90 = #flashattn.sm90_entries<kernel = @fa_sm90_0_module::@fa_sm90_0, abi = {fa_sm90_0 = #flashattn.kernel_abi<threads = 128, smem = 49168, params = [#flashattn.param<kind = ptr, arg = "q">
// CHECK-SAME: #flashattn.param<kind = tma, arg = "q", box = [64, 1, 64, 1], swizzle = 128>, #flashattn.param<kind = tma, arg = "k", box = [64, 1, 64, 1], swizzle = 128>, #flashattn.param<kind = tma, arg = "v", box = [64, 1, 64, 1], swizzle = 128>]>}>
// CHECK: llvm.func @fa_sm90_0(
// CHECK-SAME: nvvm.maxntid = array<i32: 128, 1, 1>
// CHECK-NOT: flashattn.warp_specialize
// CHECK: scf.for
// CHECK: nvvm.barrier0
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: %[[BEGIN:.*]], %[[END:.*]] = flashattn.key_blocks
// CHECK: scf.for %{{.*}} = %[[BEGIN]] to
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: flashattn.key_end
// CHECK: nvvm.shfl.sync bfly
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: flashattn.wgmma_rs
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: scf.yield
// CHECK: llvm.store %{{.*}}, %{{.*}} : vector<2xbf16>, !llvm.ptr<1>
// CHECK: llvm.return
func.func @gqa(%q: memref<2x256x8x128xbf16>, %k: memref<2x256x2x128xbf16>, %v: memref<2x256x2x128xbf16>,
               %o: memref<2x256x8x128xbf16>, %l: memref<2x8x256xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x256x8x128xbf16>, memref<2x256x2x128xbf16>, memref<2x256x2x128xbf16>)
      outs(%o, %l : memref<2x256x8x128xbf16>, memref<2x8x256xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}

// -----

// What the unpipelined kernel lacks is a diagnostic: pages smaller than
// its 64-key blocks.
func.func @paged16(%q: memref<2x1x8x128xbf16>, %k: memref<64x16x2x128xbf16>, %v: memref<64x16x2x128xbf16>,
                   %o: memref<2x1x8x128xbf16>, %bt: memref<2x32xi32>, %used: memref<2xi32>) {
  // expected-error @below {{convert-flashattn-to-nvgpu: the unpipelined kernel does not take pages of other than a multiple of 64 keys}}
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x128xbf16>, memref<64x16x2x128xbf16>, memref<64x16x2x128xbf16>)
      seqused_k(%used : memref<2xi32>) block_table(%bt : memref<2x32xi32>)
      outs(%o : memref<2x1x8x128xbf16>) {pack_gqa = false}
  return
}

// -----

// pack_gqa (asked by the op): Q through a 5-D map, 64 / 4 positions of the
// 4 query heads of a kv head per tile.
// CHECK-LABEL: func.func @packed
// CHECK: #flashattn.param<kind = tma, arg = "q", box = [64, 4, 1, 16, 1], swizzle = 128, group = 4>
func.func @packed(%q: memref<1x128x8x128xbf16>, %k: memref<1x128x2x128xbf16>, %v: memref<1x128x2x128xbf16>,
                  %o: memref<1x128x8x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x128x8x128xbf16>, memref<1x128x2x128xbf16>, memref<1x128x2x128xbf16>)
      outs(%o : memref<1x128x8x128xbf16>) {pack_gqa = true}
  return
}

// -----

// Paged K / V (pages of 64 keys) with seqused_k: the runtime's tile table
// (by pointer, or inline) and the page lists are parameters; each block
// reads its page from the list and V's rows past the sequence are zeroed
// (fenced for the async proxy) before P V.
// CHECK-LABEL: func.func @paged
// CHECK: #flashattn.param<kind = tile_table>, #flashattn.param<kind = tile_table_inline, bytes = 2048>, #flashattn.param<kind = page_table>]>}>
// CHECK: llvm.func @fa_sm90_0(
// CHECK: %[[PAGE:.*]] = llvm.load %{{.*}} invariant : !llvm.ptr<1> -> i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}, %[[PAGE]]]
// CHECK: llvm.store %{{.*}}, %{{.*}} : vector<4xi32>, !llvm.ptr<3>
// CHECK: nvvm.fence.proxy
// CHECK: nvvm.wgmma.fence.aligned
func.func @paged(%q: memref<2x1x8x128xbf16>, %k: memref<64x64x2x128xbf16>, %v: memref<64x64x2x128xbf16>,
                 %o: memref<2x1x8x128xbf16>, %bt: memref<2x32xi32>, %used: memref<2xi32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x128xbf16>, memref<64x64x2x128xbf16>, memref<64x64x2x128xbf16>)
      seqused_k(%used : memref<2xi32>) block_table(%bt : memref<2x32xi32>)
      outs(%o : memref<2x1x8x128xbf16>) {causal = #flashattn.causal<bottom_right>}
  return
}

// -----

// Varlen: 3-D tensor maps (no batch), the tile's sequence from the table.
// CHECK-LABEL: func.func @varlen
// CHECK: #flashattn.param<kind = tma, arg = "q", box = [64, 1, 64], swizzle = 128>
// CHECK-SAME: #flashattn.param<kind = tile_table>
// CHECK: llvm.func @fa_sm90_0(
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
func.func @varlen(%q: memref<?x8x128xbf16>, %k: memref<?x2x128xbf16>, %v: memref<?x2x128xbf16>,
                  %cq: memref<4xi32>, %ck: memref<4xi32>,
                  %o: memref<?x8x128xbf16>, %l: memref<8x?xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<?x8x128xbf16>, memref<?x2x128xbf16>, memref<?x2x128xbf16>)
      cu_seqlens_q(%cq : memref<4xi32>) cu_seqlens_k(%ck : memref<4xi32>)
      outs(%o, %l : memref<?x8x128xbf16>, memref<8x?xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}

// -----

// Split-KV: f32 partial results at the split's slice, the split a part of
// the tile index and of flashattn.key_blocks; no merge parameters (the
// combine kernel, a second entry, merges).
// CHECK-LABEL: func.func @split
// CHECK: flashattn.attention {{.*}}flashattn.sm90 = #flashattn.sm90_entries<kernel = @fa_sm90_0_module::@fa_sm90_0, combine = @fa_sm90_0_module::@fa_sm90_0_combine,
// CHECK-NOT: merge_out
// CHECK: llvm.func @fa_sm90_0(
// CHECK: flashattn.key_blocks {{.*}} split %{{.*}} of %{{.*}}
// CHECK: llvm.store %{{.*}}, %{{.*}} : vector<2xf32>, !llvm.ptr<1>
// CHECK: llvm.func @fa_sm90_0_combine(
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

// Score and mask regions: inlined at the kernel's stand-in calls (no call
// or stand-in left), on every score.
// CHECK-LABEL: func.func @regions
// CHECK: gpu.module @fa_sm90_0_module
// CHECK-NOT: func.func private
// CHECK: llvm.func @fa_sm90_0(
// CHECK-NOT: func.call
// CHECK: arith.divui %{{.*}}, %{{.*}} : index
// CHECK: arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK: arith.sitofp %{{.*}} : i64 to f32
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
