// The sm90 steps one at a time, on dense, causal, varlen, paged, split-KV
// and region attention: the kernels as flashattn-sm90-warpgroup leaves them
// (after flashattn-tile, flashattn-sm90-pipeline-kv and
// flashattn-sm90-warp-specialize: the partition into a producer and the
// consumers and the key ranges as flashattn ops), after
// flashattn-lower-warp-specialize (the warpgroup branch with its register
// budgets; key ranges still ops), and after flashattn-lower-key-ranges
// (arith only), flashattn-floordiv-to-shift and
// convert-flashattn-sm90-to-nvvm (the instructions NVVM lacks, the RS
// wgmma, the L2 policy, the opaque mov, as inline PTX: no flashattn op
// left in the kernels).
// RUN: fa-opt %s --flashattn-plan=target=sm90 --flashattn-split-kv --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup --split-input-file | FileCheck %s --check-prefix=BUILT
// RUN: fa-opt %s --flashattn-plan=target=sm90 --flashattn-split-kv --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup --flashattn-lower-warp-specialize --split-input-file | FileCheck %s --check-prefix=WS
// RUN: fa-opt %s --flashattn-plan=target=sm90 --flashattn-split-kv --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup --flashattn-lower-warp-specialize --flashattn-lower-key-ranges --flashattn-floordiv-to-shift --convert-flashattn-sm90-to-nvvm --split-input-file | FileCheck %s --check-prefix=LOWERED

// The producer runs the key-block loop of each tile for its loads (with
// the plan's L2 priority for Q), the consumers the same loop with the
// row's key end, the opaque Q descriptor and the RS wgmma of P V.
// BUILT-LABEL: func.func @dense
// BUILT: llvm.func @fa_sm90_0(
// BUILT: flashattn.warp_specialize %{{.*}} {consumer_regs = 232 : i32, producer_regs = 40 : i32} producer {
// BUILT: flashattn.key_blocks rows[{{.*}}) keys {{.*}} {block_n = 128 : i64} : index
// BUILT: flashattn.l2_policy evict_first
// BUILT: } consumers {
// BUILT: flashattn.key_blocks rows[{{.*}}) keys {{.*}} {block_n = 128 : i64} : index
// BUILT: flashattn.key_end row
// BUILT: flashattn.opaque
// BUILT: flashattn.wgmma_rs
// WS-LABEL: func.func @dense
// WS-NOT: flashattn.warp_specialize
// WS: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// WS: %[[WG:.*]] = arith.divui %[[TID]], %c128_i32{{.*}} : i32
// WS: %[[PRODUCER:.*]] = arith.cmpi eq, %[[WG]], %c0_i32{{.*}} : i32
// WS: scf.if %[[PRODUCER]] {
// WS-NEXT: nvvm.setmaxregister  decrease 40
// WS: flashattn.key_blocks
// The consumers' arm of the producer's branch:
// WS: } else {{{[[:space:]]*}}nvvm.setmaxregister increase 232
// LOWERED-LABEL: func.func @dense
// LOWERED-NOT: flashattn.key_
// LOWERED-NOT: flashattn.warp_specialize
// LOWERED: llvm.func @fa_sm90_0(
// LOWERED-NOT: {{(= |^ *)flashattn\.[a-z]}}
// LOWERED: createpolicy.fractional.L2::evict_first.b64
// LOWERED-NOT: {{(= |^ *)flashattn\.[a-z]}}
// LOWERED: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// LOWERED-NOT: {{(= |^ *)flashattn\.[a-z]}}
// LOWERED: llvm.return

func.func @dense(%q: memref<2x256x8x128xbf16>, %k: memref<2x256x2x128xbf16>, %v: memref<2x256x2x128xbf16>,
                 %o: memref<2x256x8x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x256x8x128xbf16>, memref<2x256x2x128xbf16>, memref<2x256x2x128xbf16>)
      outs(%o : memref<2x256x8x128xbf16>)
  return
}

// -----

// BUILT-LABEL: func.func @causal_window
// BUILT: flashattn.key_blocks rows[{{.*}}) keys {{.*}} {block_n = {{.*}}, causal = #flashattn.causal<bottom_right>, window_left = 100 : i64} : index
// BUILT: } consumers {
// BUILT: flashattn.key_end row {{.*}} {causal = #flashattn.causal<bottom_right>} : index
// BUILT: flashattn.key_begin row {{.*}} {window_left = 100 : i64} : index
// WS-LABEL: func.func @causal_window
// WS: scf.if
// WS: flashattn.key_begin
// LOWERED-LABEL: func.func @causal_window
// LOWERED-NOT: flashattn.key_
// LOWERED-NOT: arith.floordivsi
// The first masked block, floor(key_end / 128), as a shift:
// LOWERED: arith.shrsi %{{.*}}, %c7{{.*}} : index
// LOWERED-NOT: flashattn.key_
// LOWERED-NOT: arith.floordivsi
// LOWERED: llvm.return
func.func @causal_window(%q: memref<1x512x4x64xf16>, %k: memref<1x512x4x64xf16>, %v: memref<1x512x4x64xf16>,
                         %o: memref<1x512x4x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x512x4x64xf16>, memref<1x512x4x64xf16>, memref<1x512x4x64xf16>)
      outs(%o : memref<1x512x4x64xf16>) {causal = #flashattn.causal<bottom_right>, window_size = array<i64: 100, -1>}
  return
}

// -----

// BUILT-LABEL: func.func @varlen
// BUILT: flashattn.warp_specialize
// BUILT: flashattn.key_blocks
// LOWERED-LABEL: func.func @varlen
// LOWERED-NOT: flashattn.key_
// LOWERED-NOT: flashattn.warp_specialize
// LOWERED: llvm.return
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

// BUILT-LABEL: func.func @paged
// BUILT: flashattn.warp_specialize
// BUILT: flashattn.key_blocks
// LOWERED-LABEL: func.func @paged
// LOWERED-NOT: flashattn.key_
// LOWERED: llvm.return
func.func @paged(%q: memref<2x1x8x64xbf16>, %k: memref<64x16x2x64xbf16>, %v: memref<64x16x2x64xbf16>,
                 %su: memref<2xi32>, %bt: memref<2x16xi32>, %o: memref<2x1x8x64xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x64xbf16>, memref<64x16x2x64xbf16>, memref<64x16x2x64xbf16>)
      seqused_k(%su : memref<2xi32>) block_table(%bt : memref<2x16xi32>)
      outs(%o : memref<2x1x8x64xbf16>)
  return
}

// -----

// Split-KV: the partial kernel's key blocks take the split and the split
// count (the partial out's leading dimension, read at run time).
// BUILT-LABEL: func.func @split
// BUILT: flashattn.key_blocks rows[{{.*}}) keys {{.*}} offset {{.*}} split %{{.*}} of %{{.*}} {block_n = {{.*}}, causal = #flashattn.causal<bottom_right>} : index
// BUILT: llvm.func @fa_sm90_0_combine(
// LOWERED-LABEL: func.func @split
// LOWERED-NOT: flashattn.key_
// LOWERED: llvm.func @fa_sm90_0_combine(
func.func @split(%q: memref<2x113x8x128xbf16>, %k: memref<2x1025x2x128xbf16>, %v: memref<2x1025x2x128xbf16>,
                 %o: memref<2x113x8x128xbf16>, %l: memref<2x8x113xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x113x8x128xbf16>, memref<2x1025x2x128xbf16>, memref<2x1025x2x128xbf16>)
      outs(%o, %l : memref<2x113x8x128xbf16>, memref<2x8x113xf32>) {causal = #flashattn.causal<bottom_right>, num_splits = 3}
  return
}

// -----

// BUILT-LABEL: func.func @regions
// BUILT: flashattn.warp_specialize
// BUILT: } consumers {
// BUILT: arith.cmpi eq, %{{.*}}, %{{.*}} : index
// LOWERED-LABEL: func.func @regions
// LOWERED-NOT: flashattn.key_
// LOWERED: arith.cmpi eq, %{{.*}}, %{{.*}} : index
// LOWERED: llvm.return
func.func @regions(%q: memref<1x64x2x64xf16>, %k: memref<1x64x2x64xf16>, %v: memref<1x64x2x64xf16>,
                   %o: memref<1x64x2x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xf16>, memref<1x64x2x64xf16>, memref<1x64x2x64xf16>)
      outs(%o : memref<1x64x2x64xf16>)
      mask(%b: index, %h: index, %i: index, %j: index) {
        %c16 = arith.constant 16 : index
        %di = arith.divui %i, %c16 : index
        %dj = arith.divui %j, %c16 : index
        %keep = arith.cmpi eq, %di, %dj : index
        flashattn.yield %keep : i1
      }
  return
}
