// RUN: fa-opt %s | FileCheck %s
// The `mlir` examples of the op documentation (FlashAttnOps.td), verbatim
// inside functions, parse and verify.

// CHECK-LABEL: func.func @attention_gqa_score
// CHECK: flashattn.attention {{.*}} score(
func.func @attention_gqa_score(%q: tensor<2x128x32x128xbf16>,
    %k: tensor<2x512x8x128xbf16>, %v: tensor<2x512x8x128xbf16>,
    %out: tensor<2x128x32x128xbf16>, %l: tensor<2x32x128xf32>)
    -> (tensor<2x128x32x128xbf16>, tensor<2x32x128xf32>) {
    %o, %lse = flashattn.attention
        ins(%q, %k, %v : tensor<2x128x32x128xbf16>, tensor<2x512x8x128xbf16>,
                         tensor<2x512x8x128xbf16>)
        outs(%out, %l : tensor<2x128x32x128xbf16>, tensor<2x32x128xf32>)
        {causal = #flashattn.causal<bottom_right>}
        score(%s: f32, %b: index, %h: index, %i: index, %j: index) {
          %d = arith.subi %i, %j : index
          %di = arith.index_cast %d : index to i64
          %df = arith.sitofp %di : i64 to f32
          %c = arith.constant -0.01 : f32
          %bias = arith.mulf %df, %c : f32
          %r = arith.addf %s, %bias : f32
          flashattn.yield %r : f32
        }
        -> tensor<2x128x32x128xbf16>, tensor<2x32x128xf32>
  return %o, %lse : tensor<2x128x32x128xbf16>, tensor<2x32x128xf32>
}

// CHECK-LABEL: func.func @attention_paged
// CHECK: flashattn.attention {{.*}} block_table(
func.func @attention_paged(%q: memref<16x1x32x128xf16>,
    %kc: memref<4096x16x8x128xf16>, %vc: memref<4096x16x8x128xf16>,
    %used: memref<16xi32>, %bt: memref<16x256xi32>,
    %out: memref<16x1x32x128xf16>) {
    flashattn.attention
        ins(%q, %kc, %vc : memref<16x1x32x128xf16>, memref<4096x16x8x128xf16>,
                           memref<4096x16x8x128xf16>)
        seqused_k(%used : memref<16xi32>)
        block_table(%bt : memref<16x256xi32>)
        outs(%out : memref<16x1x32x128xf16>)
        {causal = #flashattn.causal<bottom_right>, num_splits = 4 : i64}
  return
}

// CHECK-LABEL: func.func @combine
// CHECK: flashattn.combine
func.func @combine(%os: tensor<4x16x1x32x128xf32>, %ls: tensor<4x16x32x1xf32>,
    %out: tensor<16x1x32x128xbf16>, %lse: tensor<16x32x1xf32>)
    -> (tensor<16x1x32x128xbf16>, tensor<16x32x1xf32>) {
    %o, %l = flashattn.combine
        ins(%os, %ls : tensor<4x16x1x32x128xf32>, tensor<4x16x32x1xf32>)
        outs(%out, %lse : tensor<16x1x32x128xbf16>, tensor<16x32x1xf32>)
        -> tensor<16x1x32x128xbf16>, tensor<16x32x1xf32>
  return %o, %l : tensor<16x1x32x128xbf16>, tensor<16x32x1xf32>
}

// CHECK-LABEL: func.func @plan
// CHECK: #flashattn.plan<target = sm90, block_m = 128, block_n = 176, stages = 2, consumers = 2, schedule = static, num_splits = 1, pack_gqa = false>
func.func @plan() attributes {plan =
    #flashattn.plan<target = sm90, block_m = 128, block_n = 176, stages = 2,
                    consumers = 2, schedule = static, num_splits = 1,
                    pack_gqa = false>} {
  return
}

// CHECK-LABEL: func.func @kernel_abi
// CHECK-SAME: #flashattn.kernel_abi<threads = 128, smem = 0, params = [#flashattn.param<kind = ptr, arg = "partial_out">, #flashattn.param<kind = dims, arg = "partial_out", rank = 5>]>
// CHECK-SAME: #flashattn.param<kind = tma, arg = "q", box = [64, 1, 128, 1], swizzle = 128>
func.func @kernel_abi() attributes {param =
    #flashattn.param<kind = tma, arg = "q", box = [64, 1, 128, 1], swizzle = 128>,
    abi = #flashattn.kernel_abi<threads = 128, smem = 0, params = [
        #flashattn.param<kind = ptr, arg = "partial_out">,
        #flashattn.param<kind = dims, arg = "partial_out", rank = 5>]>} {
  return
}

// CHECK-LABEL: func.func @key_ranges
// CHECK: flashattn.key_end
// CHECK: flashattn.key_begin
// CHECK: flashattn.key_blocks
func.func @key_ranges(%i: index, %sk: index, %c: index, %i32: i32, %c32: i32,
                      %m0: index, %m1: index, %s: index, %ns: index) {
    %lim = flashattn.key_end row %i keys %sk offset %c
        {causal = #flashattn.causal<bottom_right>} : index
    %lo = flashattn.key_begin row %i32 offset %c32 {window_left = 128} : i32
    %nb0, %nb1 = flashattn.key_blocks rows [%m0, %m1) keys %sk offset %c
        split %s of %ns {block_n = 128, causal = #flashattn.causal<bottom_right>}
        : index
  return
}

// CHECK-LABEL: llvm.func @warp_specialize
// CHECK: flashattn.warp_specialize
llvm.func @warp_specialize(%tid: i32) {
    flashattn.warp_specialize %tid {consumer_regs = 232 : i32, producer_regs = 40 : i32} producer {
      nvvm.barrier0
    } consumers {
      nvvm.barrier0
    }
  llvm.return
}

// CHECK-LABEL: llvm.func @wgmma_rs
// CHECK: flashattn.wgmma_rs
llvm.func @wgmma_rs(%o0: !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>, %a0: i32, %a1: i32, %a2: i32, %a3: i32, %b: i64) {
    %o1 = flashattn.wgmma_rs %o0, [%a0, %a1, %a2, %a3], %b {element = bf16, n = 64 : i64}
        : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>
  llvm.return
}

// CHECK-LABEL: func.func @tile_map
// CHECK: flashattn.tile_map
func.func @tile_map(%s: memref<64x64xf32>, %m0: index, %n0: index, %sk: index, %c: index) {
  %c64 = arith.constant 64 : index
  %ninf = arith.constant 0xFF800000 : f32
    flashattn.tile_map %s rows %c64 cols %c64 {
    ^bb0(%x: f32, %i: index, %j: index):
      %row = arith.addi %m0, %i : index
      %end = flashattn.key_end row %row keys %sk offset %c {causal = #flashattn.causal<bottom_right>} : index
      %key = arith.addi %n0, %j : index
      %ok = arith.cmpi slt, %key, %end : index
      %y = arith.select %ok, %x, %ninf : f32
      flashattn.yield %y : f32
    } : memref<64x64xf32>
  return
}

// CHECK-LABEL: func.func @tile_wait
// CHECK: flashattn.tile_load async
// CHECK: flashattn.tile_wait
func.func @tile_wait(%kv: memref<?x128xbf16, strided<[1024, 1], offset: ?>>,
                     %slot0: memref<64x128xf32, strided<[128, 1], offset: ?>>,
                     %slot1: memref<64x128xf32, strided<[128, 1], offset: ?>>,
                     %n1: index, %r0: index, %r1: index) {
    flashattn.tile_load async %kv[%n1] rows %r1 into %slot1
        : memref<?x128xbf16, strided<[1024, 1], offset: ?>>
          into memref<64x128xf32, strided<[128, 1], offset: ?>>
    flashattn.tile_wait %slot0 rows %r0 : memref<64x128xf32, strided<[128, 1], offset: ?>>
  return
}

// CHECK-LABEL: func.func @tile_release
// CHECK: flashattn.tile_wait
// CHECK: flashattn.tile_qk
// CHECK: flashattn.tile_release
func.func @tile_release(%qt: memref<64x128xf32>, %st: memref<64x64xf32>,
                        %kslot: memref<64x128xf32, strided<[128, 1], offset: ?>>, %r: index) {
    flashattn.tile_wait %kslot rows %r : memref<64x128xf32, strided<[128, 1], offset: ?>>
    flashattn.tile_qk %qt, %kslot into %st {scale = 0.125 : f32}
        : memref<64x128xf32>, memref<64x128xf32, strided<[128, 1], offset: ?>>
          into memref<64x64xf32>
    flashattn.tile_release %kslot : memref<64x128xf32, strided<[128, 1], offset: ?>>
  return
}

// CHECK-LABEL: func.func @merge_splits
// CHECK: flashattn.merge_splits
func.func @merge_splits(%partial_out: memref<?x?x?x8x64xf32>, %partial_lse: memref<?x?x8x?xf32>,
    %b: index, %i: index, %h: index, %d: index) -> (f32, f32) {
    %value, %lse = flashattn.merge_splits %partial_out[%b, %i, %h, %d],
        %partial_lse[%b, %h, %i] : memref<?x?x?x8x64xf32>, memref<?x?x8x?xf32>
  return %value, %lse : f32, f32
}
