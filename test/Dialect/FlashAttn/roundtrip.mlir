// RUN: fa-opt %s | fa-opt | FileCheck %s
// RUN: fa-opt %s --mlir-print-op-generic | fa-opt | FileCheck %s

// Every operand, attribute and region combination of flashattn.attention and
// flashattn.combine prints, parses again and prints the same.

// CHECK-LABEL: func.func @dense_mha
// CHECK: %{{.*}} = flashattn.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<2x128x8x64xf16>, tensor<2x256x8x64xf16>, tensor<2x256x8x64xf16>) outs(%{{.*}} : tensor<2x128x8x64xf16>) -> tensor<2x128x8x64xf16>
func.func @dense_mha(%q: tensor<2x128x8x64xf16>, %k: tensor<2x256x8x64xf16>,
                     %v: tensor<2x256x8x64xf16>, %o: tensor<2x128x8x64xf16>)
    -> tensor<2x128x8x64xf16> {
  %r = flashattn.attention ins(%q, %k, %v : tensor<2x128x8x64xf16>,
                               tensor<2x256x8x64xf16>, tensor<2x256x8x64xf16>)
       outs(%o : tensor<2x128x8x64xf16>) -> tensor<2x128x8x64xf16>
  return %r : tensor<2x128x8x64xf16>
}

// GQA 32/8 with lse, every scalar attribute and a plan.
// CHECK-LABEL: func.func @gqa_lse_attrs
// CHECK: %[[OUT:.*]], %[[LSE:.*]] = flashattn.attention
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<1x100x32x128xbf16>, tensor<1x32x100xf32>)
// CHECK-SAME: causal = #flashattn.causal<top_left>
// CHECK-SAME: num_splits = 2 : i64
// CHECK-SAME: pack_gqa = true
// CHECK-SAME: plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 176, stages = 2, consumers = 2, schedule = lpt, num_splits = 2, pack_gqa = true>
// CHECK-SAME: scale = 1.250000e-01 : f32
// CHECK-SAME: softcap = 5.000000e+01 : f32
// CHECK-SAME: window_size = array<i64: 4096, -1>
// CHECK-SAME: -> tensor<1x100x32x128xbf16>, tensor<1x32x100xf32>
// CHECK: return %[[OUT]], %[[LSE]]
func.func @gqa_lse_attrs(%q: tensor<1x100x32x128xbf16>,
                         %k: tensor<1x300x8x128xbf16>,
                         %v: tensor<1x300x8x128xbf16>,
                         %o: tensor<1x100x32x128xbf16>,
                         %l: tensor<1x32x100xf32>)
    -> (tensor<1x100x32x128xbf16>, tensor<1x32x100xf32>) {
  %r:2 = flashattn.attention
      ins(%q, %k, %v : tensor<1x100x32x128xbf16>, tensor<1x300x8x128xbf16>,
                       tensor<1x300x8x128xbf16>)
      outs(%o, %l : tensor<1x100x32x128xbf16>, tensor<1x32x100xf32>)
      {scale = 0.125 : f32, causal = #flashattn.causal<top_left>,
       window_size = array<i64: 4096, -1>, softcap = 50.0 : f32,
       num_splits = 2, pack_gqa = true,
       plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 176,
                              stages = 2, consumers = 2, schedule = lpt,
                              num_splits = 2, pack_gqa = true>}
      -> tensor<1x100x32x128xbf16>, tensor<1x32x100xf32>
  return %r#0, %r#1 : tensor<1x100x32x128xbf16>, tensor<1x32x100xf32>
}

// MQA on memrefs, bottom-right causal, f32 output from bf16 inputs, host plan.
// CHECK-LABEL: func.func @mqa_memref
// CHECK: flashattn.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<4x1x16x64xbf16>, memref<4x512x1x64xbf16>, memref<4x512x1x64xbf16>) outs(%{{.*}} : memref<4x1x16x64xf32>) {causal = #flashattn.causal<bottom_right>, plan = #flashattn.plan<target = host, block_m = 64, block_n = 64, stages = 1, consumers = 1, schedule = static, num_splits = 1, pack_gqa = false>}
// CHECK-NOT: ->
// CHECK: return
func.func @mqa_memref(%q: memref<4x1x16x64xbf16>, %k: memref<4x512x1x64xbf16>,
                      %v: memref<4x512x1x64xbf16>, %o: memref<4x1x16x64xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<4x1x16x64xbf16>,
                          memref<4x512x1x64xbf16>, memref<4x512x1x64xbf16>)
      outs(%o : memref<4x1x16x64xf32>)
      {causal = #flashattn.causal<bottom_right>,
       plan = #flashattn.plan<target = host, block_m = 64, block_n = 64,
                              stages = 1, consumers = 1, schedule = static,
                              num_splits = 1, pack_gqa = false>}
  return
}

// Varlen q and k (packed), seqused_k, dynamic token counts, packed lse,
// head_dim_v != head_dim (192/128).
// CHECK-LABEL: func.func @varlen
// CHECK: flashattn.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<?x16x192xf16>, memref<?x4x192xf16>, memref<?x4x128xf16>)
// CHECK-SAME: cu_seqlens_q(%{{.*}} : memref<4xi32>) cu_seqlens_k(%{{.*}} : memref<4xi32>) seqused_k(%{{.*}} : memref<3xi32>)
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : memref<?x16x128xf16>, memref<16x?xf32>)
func.func @varlen(%q: memref<?x16x192xf16>, %k: memref<?x4x192xf16>,
                  %v: memref<?x4x128xf16>, %cq: memref<4xi32>,
                  %ck: memref<4xi32>, %used: memref<3xi32>,
                  %o: memref<?x16x128xf16>, %l: memref<16x?xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<?x16x192xf16>,
                          memref<?x4x192xf16>, memref<?x4x128xf16>)
      cu_seqlens_q(%cq : memref<4xi32>) cu_seqlens_k(%ck : memref<4xi32>)
      seqused_k(%used : memref<3xi32>)
      outs(%o, %l : memref<?x16x128xf16>, memref<16x?xf32>)
      {causal = #flashattn.causal<bottom_right>}
  return
}

// Varlen q over a dense (batched) kv cache, on tensors.
// CHECK-LABEL: func.func @varlen_q_dense_k
// CHECK: cu_seqlens_q(%{{.*}} : tensor<3xi32>) outs
func.func @varlen_q_dense_k(%q: tensor<10x8x64xf16>, %k: tensor<2x32x8x64xf16>,
                            %v: tensor<2x32x8x64xf16>, %cq: tensor<3xi32>,
                            %o: tensor<10x8x64xf16>) -> tensor<10x8x64xf16> {
  %r = flashattn.attention ins(%q, %k, %v : tensor<10x8x64xf16>,
                               tensor<2x32x8x64xf16>, tensor<2x32x8x64xf16>)
       cu_seqlens_q(%cq : tensor<3xi32>)
       outs(%o : tensor<10x8x64xf16>) -> tensor<10x8x64xf16>
  return %r : tensor<10x8x64xf16>
}

// Paged KV decode with split-KV.
// CHECK-LABEL: func.func @paged_decode
// CHECK: flashattn.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<16x1x32x128xf16>, memref<4096x16x8x128xf16>, memref<4096x16x8x128xf16>) seqused_k(%{{.*}} : memref<16xi32>) block_table(%{{.*}} : memref<16x256xi32>) outs(%{{.*}} : memref<16x1x32x128xf16>) {causal = #flashattn.causal<bottom_right>, num_splits = 4 : i64}
func.func @paged_decode(%q: memref<16x1x32x128xf16>,
                        %kc: memref<4096x16x8x128xf16>,
                        %vc: memref<4096x16x8x128xf16>,
                        %used: memref<16xi32>, %bt: memref<16x256xi32>,
                        %o: memref<16x1x32x128xf16>) {
  flashattn.attention ins(%q, %kc, %vc : memref<16x1x32x128xf16>,
                          memref<4096x16x8x128xf16>, memref<4096x16x8x128xf16>)
      seqused_k(%used : memref<16xi32>) block_table(%bt : memref<16x256xi32>)
      outs(%o : memref<16x1x32x128xf16>)
      {causal = #flashattn.causal<bottom_right>, num_splits = 4}
  return
}

// kv-cache append into a dense cache, then attend.
// CHECK-LABEL: func.func @append_dense
// CHECK: k_new(%{{.*}} : memref<2x3x4x64xbf16>) v_new(%{{.*}} : memref<2x3x4x64xbf16>) cache_seqlens(%{{.*}} : memref<2xi32>) outs
func.func @append_dense(%q: memref<2x3x8x64xbf16>, %kc: memref<2x1024x4x64xbf16>,
                        %vc: memref<2x1024x4x64xbf16>,
                        %kn: memref<2x3x4x64xbf16>, %vn: memref<2x3x4x64xbf16>,
                        %cs: memref<2xi32>, %o: memref<2x3x8x64xbf16>) {
  flashattn.attention ins(%q, %kc, %vc : memref<2x3x8x64xbf16>,
                          memref<2x1024x4x64xbf16>, memref<2x1024x4x64xbf16>)
      k_new(%kn : memref<2x3x4x64xbf16>) v_new(%vn : memref<2x3x4x64xbf16>)
      cache_seqlens(%cs : memref<2xi32>)
      outs(%o : memref<2x3x8x64xbf16>) {causal = #flashattn.causal<bottom_right>}
  return
}

// kv-cache append into a paged cache.
// CHECK-LABEL: func.func @append_paged
// CHECK: seqused_k(%{{.*}} : memref<2xi32>) block_table(%{{.*}} : memref<2x8xi32>) k_new(%{{.*}} : memref<2x1x4x64xf16>) v_new(%{{.*}} : memref<2x1x4x64xf16>) cache_seqlens(%{{.*}} : memref<2xi32>)
func.func @append_paged(%q: memref<2x1x4x64xf16>, %kc: memref<64x16x4x64xf16>,
                        %vc: memref<64x16x4x64xf16>, %used: memref<2xi32>,
                        %bt: memref<2x8xi32>, %kn: memref<2x1x4x64xf16>,
                        %vn: memref<2x1x4x64xf16>, %cs: memref<2xi32>,
                        %o: memref<2x1x4x64xf16>) {
  flashattn.attention ins(%q, %kc, %vc : memref<2x1x4x64xf16>,
                          memref<64x16x4x64xf16>, memref<64x16x4x64xf16>)
      seqused_k(%used : memref<2xi32>) block_table(%bt : memref<2x8xi32>)
      k_new(%kn : memref<2x1x4x64xf16>) v_new(%vn : memref<2x1x4x64xf16>)
      cache_seqlens(%cs : memref<2xi32>)
      outs(%o : memref<2x1x4x64xf16>)
  return
}

// ALiBi slopes per head and per (batch, head).
// CHECK-LABEL: func.func @alibi
// CHECK: alibi_slopes(%{{.*}} : tensor<8xf32>)
// CHECK: alibi_slopes(%{{.*}} : tensor<2x8xf32>)
func.func @alibi(%q: tensor<2x64x8x64xf32>, %k: tensor<2x64x8x64xf32>,
                 %v: tensor<2x64x8x64xf32>, %s1: tensor<8xf32>,
                 %s2: tensor<2x8xf32>, %o: tensor<2x64x8x64xf32>)
    -> (tensor<2x64x8x64xf32>, tensor<2x64x8x64xf32>) {
  %r1 = flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf32>,
                                tensor<2x64x8x64xf32>, tensor<2x64x8x64xf32>)
        alibi_slopes(%s1 : tensor<8xf32>)
        outs(%o : tensor<2x64x8x64xf32>) -> tensor<2x64x8x64xf32>
  %r2 = flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf32>,
                                tensor<2x64x8x64xf32>, tensor<2x64x8x64xf32>)
        alibi_slopes(%s2 : tensor<2x8xf32>)
        outs(%o : tensor<2x64x8x64xf32>) -> tensor<2x64x8x64xf32>
  return %r1, %r2 : tensor<2x64x8x64xf32>, tensor<2x64x8x64xf32>
}

// A score region (relative-position bias from a table defined above the op)
// and a mask region (document mask over a packed batch, also from above).
// CHECK-LABEL: func.func @regions
// CHECK: flashattn.attention
// CHECK-SAME: score(%[[S:.*]]: f32, %[[B:.*]]: index, %[[H:.*]]: index, %[[I:.*]]: index, %[[J:.*]]: index) {
// CHECK-NEXT:   %[[D:.*]] = arith.subi %[[I]], %[[J]] : index
// CHECK-NEXT:   %[[BIAS:.*]] = memref.load %{{.*}}[%[[H]], %[[D]]] : memref<8x512xf32>
// CHECK-NEXT:   %[[R:.*]] = arith.addf %[[S]], %[[BIAS]] : f32
// CHECK-NEXT:   flashattn.yield %[[R]] : f32
// CHECK-NEXT: } mask(%[[MB:.*]]: index, %[[MH:.*]]: index, %[[MI:.*]]: index, %[[MJ:.*]]: index) {
// CHECK-NEXT:   %[[DI:.*]] = memref.load %{{.*}}[%[[MB]], %[[MI]]] : memref<2x256xi32>
// CHECK-NEXT:   %[[DJ:.*]] = memref.load %{{.*}}[%[[MB]], %[[MJ]]] : memref<2x256xi32>
// CHECK-NEXT:   %[[KEEP:.*]] = arith.cmpi eq, %[[DI]], %[[DJ]] : i32
// CHECK-NEXT:   flashattn.yield %[[KEEP]] : i1
// CHECK-NEXT: }
func.func @regions(%q: memref<2x256x8x64xf16>, %k: memref<2x256x8x64xf16>,
                   %v: memref<2x256x8x64xf16>, %o: memref<2x256x8x64xf16>,
                   %bias: memref<8x512xf32>, %doc: memref<2x256xi32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x256x8x64xf16>,
                          memref<2x256x8x64xf16>, memref<2x256x8x64xf16>)
      outs(%o : memref<2x256x8x64xf16>)
      score(%s: f32, %b: index, %h: index, %i: index, %j: index) {
        %d = arith.subi %i, %j : index
        %x = memref.load %bias[%h, %d] : memref<8x512xf32>
        %r = arith.addf %s, %x : f32
        flashattn.yield %r : f32
      } mask(%b: index, %h: index, %i: index, %j: index) {
        %di = memref.load %doc[%b, %i] : memref<2x256xi32>
        %dj = memref.load %doc[%b, %j] : memref<2x256xi32>
        %keep = arith.cmpi eq, %di, %dj : i32
        flashattn.yield %keep : i1
      }
  return
}

// Mask region alone, on tensors (sliding window written as a mask).
// CHECK-LABEL: func.func @mask_only
// CHECK: outs(%{{.*}} : tensor<1x64x4x32xf16>) mask(
// CHECK: flashattn.yield %{{.*}} : i1
// CHECK: } -> tensor<1x64x4x32xf16>
func.func @mask_only(%q: tensor<1x64x4x32xf16>, %k: tensor<1x64x4x32xf16>,
                     %v: tensor<1x64x4x32xf16>, %o: tensor<1x64x4x32xf16>)
    -> tensor<1x64x4x32xf16> {
  %r = flashattn.attention ins(%q, %k, %v : tensor<1x64x4x32xf16>,
                               tensor<1x64x4x32xf16>, tensor<1x64x4x32xf16>)
       outs(%o : tensor<1x64x4x32xf16>)
       mask(%b: index, %h: index, %i: index, %j: index) {
         %c16 = arith.constant 16 : index
         %lo = arith.subi %i, %c16 : index
         %keep = arith.cmpi sge, %j, %lo : index
         flashattn.yield %keep : i1
       } -> tensor<1x64x4x32xf16>
  return %r : tensor<1x64x4x32xf16>
}

// Dynamic batch and lengths with an explicit scale (head_dim static).
// CHECK-LABEL: func.func @dynamic
// CHECK: flashattn.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<?x?x8x64xf16>, tensor<?x?x2x64xf16>, tensor<?x?x2x64xf16>) outs(%{{.*}}, %{{.*}} : tensor<?x?x8x64xf16>, tensor<?x8x?xf32>)
func.func @dynamic(%q: tensor<?x?x8x64xf16>, %k: tensor<?x?x2x64xf16>,
                   %v: tensor<?x?x2x64xf16>, %o: tensor<?x?x8x64xf16>,
                   %l: tensor<?x8x?xf32>)
    -> (tensor<?x?x8x64xf16>, tensor<?x8x?xf32>) {
  %r:2 = flashattn.attention ins(%q, %k, %v : tensor<?x?x8x64xf16>,
                                 tensor<?x?x2x64xf16>, tensor<?x?x2x64xf16>)
         outs(%o, %l : tensor<?x?x8x64xf16>, tensor<?x8x?xf32>)
         -> tensor<?x?x8x64xf16>, tensor<?x8x?xf32>
  return %r#0, %r#1 : tensor<?x?x8x64xf16>, tensor<?x8x?xf32>
}

// Split-KV combine: dense with lse on tensors, packed without lse on memrefs.
// CHECK-LABEL: func.func @combine
// CHECK: %{{.*}}:2 = flashattn.combine ins(%{{.*}}, %{{.*}} : tensor<4x16x1x32x128xf32>, tensor<4x16x32x1xf32>) outs(%{{.*}}, %{{.*}} : tensor<16x1x32x128xbf16>, tensor<16x32x1xf32>) -> tensor<16x1x32x128xbf16>, tensor<16x32x1xf32>
// CHECK: flashattn.combine ins(%{{.*}}, %{{.*}} : memref<3x?x8x64xf32>, memref<3x8x?xf32>) outs(%{{.*}} : memref<?x8x64xf16>)
func.func @combine(%os: tensor<4x16x1x32x128xf32>, %ls: tensor<4x16x32x1xf32>,
                   %o: tensor<16x1x32x128xbf16>, %l: tensor<16x32x1xf32>,
                   %vos: memref<3x?x8x64xf32>, %vls: memref<3x8x?xf32>,
                   %vo: memref<?x8x64xf16>)
    -> (tensor<16x1x32x128xbf16>, tensor<16x32x1xf32>) {
  %r:2 = flashattn.combine ins(%os, %ls : tensor<4x16x1x32x128xf32>,
                                tensor<4x16x32x1xf32>)
         outs(%o, %l : tensor<16x1x32x128xbf16>, tensor<16x32x1xf32>)
         -> tensor<16x1x32x128xbf16>, tensor<16x32x1xf32>
  flashattn.combine ins(%vos, %vls : memref<3x?x8x64xf32>, memref<3x8x?xf32>)
      outs(%vo : memref<?x8x64xf16>)
  return %r#0, %r#1 : tensor<16x1x32x128xbf16>, tensor<16x32x1xf32>
}

// The key-range ops on index and on i32, with and without causal, windows
// and the split.
// CHECK-LABEL: func.func @key_ranges
// CHECK: flashattn.key_end row %{{.*}} keys %{{.*}} offset %{{.*}} : index
// CHECK: flashattn.key_end row %{{.*}} keys %{{.*}} offset %{{.*}} {causal = #flashattn.causal<top_left>, window_right = 4 : i64} : i32
// CHECK: flashattn.key_begin row %{{.*}} offset %{{.*}} {window_left = 0 : i64} : i32
// CHECK: %{{.*}}, %{{.*}} = flashattn.key_blocks rows[%{{.*}}, %{{.*}}) keys %{{.*}} offset %{{.*}} {block_n = 64 : i64} : index
// CHECK: %{{.*}}, %{{.*}} = flashattn.key_blocks rows[%{{.*}}, %{{.*}}) keys %{{.*}} offset %{{.*}} split %{{.*}} of %{{.*}} {block_n = 128 : i64, causal = #flashattn.causal<bottom_right>, window_left = 256 : i64, window_right = 0 : i64} : i32
func.func @key_ranges(%i: index, %sk: index, %c: index, %j: i32, %skj: i32, %cj: i32) {
  %0 = flashattn.key_end row %i keys %sk offset %c : index
  %1 = flashattn.key_end row %j keys %skj offset %cj {causal = #flashattn.causal<top_left>, window_right = 4} : i32
  %2 = flashattn.key_begin row %j offset %cj {window_left = 0} : i32
  %3:2 = flashattn.key_blocks rows [%i, %sk) keys %sk offset %c {block_n = 64} : index
  %4:2 = flashattn.key_blocks rows [%j, %skj) keys %skj offset %cj split %j of %cj
      {block_n = 128, causal = #flashattn.causal<bottom_right>, window_left = 256, window_right = 0} : i32
  return
}

// warp_specialize with and without register budgets.
// CHECK-LABEL: llvm.func @warp_specialize
// CHECK: flashattn.warp_specialize %{{.*}} {consumer_regs = 240 : i32, producer_regs = 24 : i32} producer {
// CHECK-NEXT: nvvm.barrier0
// CHECK-NEXT: } consumers {
// CHECK-NEXT: nvvm.barrier0
// CHECK-NEXT: }
// CHECK: flashattn.warp_specialize %{{.*}} producer {
llvm.func @warp_specialize(%tid: i32) {
  flashattn.warp_specialize %tid {consumer_regs = 240 : i32, producer_regs = 24 : i32} producer {
    nvvm.barrier0
  } consumers {
    nvvm.barrier0
  }
  flashattn.warp_specialize %tid producer {
  } consumers {
  }
  llvm.return
}

// wgmma_rs, bf16 and f16.
// CHECK-LABEL: llvm.func @wgmma_rs
// CHECK: flashattn.wgmma_rs %{{.*}}, [%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}], %{{.*}} {element = bf16, n = 8 : i64} : !llvm.struct<(f32, f32, f32, f32)>
// CHECK: flashattn.wgmma_rs %{{.*}}, [%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}], %{{.*}} {element = f16, n = 8 : i64} : !llvm.struct<(f32, f32, f32, f32)>
llvm.func @wgmma_rs(%acc: !llvm.struct<(f32, f32, f32, f32)>, %a: i32, %b: i64) {
  %0 = flashattn.wgmma_rs %acc, [%a, %a, %a, %a], %b {element = bf16, n = 8 : i64} : !llvm.struct<(f32, f32, f32, f32)>
  %1 = flashattn.wgmma_rs %0, [%a, %a, %a, %a], %b {element = f16, n = 8 : i64} : !llvm.struct<(f32, f32, f32, f32)>
  llvm.return
}

// The kernel instructions NVVM lacks.
// CHECK-LABEL: llvm.func @instructions
// CHECK: flashattn.l2_policy evict_first
// CHECK: flashattn.l2_policy evict_last
// CHECK: flashattn.opaque %{{.*}} : i32
// CHECK: flashattn.mbarrier_arrive_if %{{.*}}, %{{.*}} : !llvm.ptr<3>
// CHECK: flashattn.atomic_add_acq_rel %{{.*}}, 1 : !llvm.ptr<1>
llvm.func @instructions(%x: i32, %p: i1, %bar: !llvm.ptr<3>, %counter: !llvm.ptr<1>) {
  %0 = flashattn.l2_policy evict_first
  %1 = flashattn.l2_policy evict_last
  %2 = flashattn.opaque %x : i32
  flashattn.mbarrier_arrive_if %p, %bar : !llvm.ptr<3>
  %3 = flashattn.atomic_add_acq_rel %counter, 1 : !llvm.ptr<1>
  llvm.return
}

// A tile of query rows: q_start and seqlen_q.
// CHECK-LABEL: func.func @row_tile
// CHECK: flashattn.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<1x16x4x64xbf16>, tensor<1x90x2x64xbf16>, tensor<1x90x2x64xbf16>) q_start(%arg4) seqlen_q(%arg5) outs(%{{.*}} : tensor<1x16x4x64xbf16>) {causal = #flashattn.causal<bottom_right>}
func.func @row_tile(%q: tensor<1x16x4x64xbf16>, %k: tensor<1x90x2x64xbf16>, %v: tensor<1x90x2x64xbf16>,
                    %o: tensor<1x16x4x64xbf16>, %start: index, %n: index) -> tensor<1x16x4x64xbf16> {
  %r = flashattn.attention ins(%q, %k, %v : tensor<1x16x4x64xbf16>, tensor<1x90x2x64xbf16>, tensor<1x90x2x64xbf16>)
      q_start(%start) seqlen_q(%n) outs(%o : tensor<1x16x4x64xbf16>) {causal = #flashattn.causal<bottom_right>} -> tensor<1x16x4x64xbf16>
  return %r : tensor<1x16x4x64xbf16>
}

// -----

// tile_map: the body's block arguments (score, row, column) and a value
// from above.
// CHECK-LABEL: func.func @tile_map
// CHECK: flashattn.tile_map %arg0 rows %arg1 cols %arg2 {
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[I:.*]]: index, %[[J:.*]]: index):
// CHECK-NEXT:   %[[Y:.*]] = arith.mulf %[[X]], %arg3 : f32
// CHECK-NEXT:   flashattn.yield %[[Y]] : f32
// CHECK-NEXT: } : memref<16x32xf32>
func.func @tile_map(%s: memref<16x32xf32>, %rows: index, %cols: index, %f: f32) {
  flashattn.tile_map %s rows %rows cols %cols {
  ^bb0(%x: f32, %i: index, %j: index):
    %y = arith.mulf %x, %f : f32
    flashattn.yield %y : f32
  } : memref<16x32xf32>
  return
}

// -----

// Packed views (pack_gqa): q and out [R, G, D], lse [G, R].
// CHECK-LABEL: func.func @tile_packed
// CHECK: flashattn.tile_load %arg0[%arg5] rows %arg6 into %arg1 : memref<?x4x64xbf16> into memref<64x64xf32>
// CHECK: flashattn.tile_store %arg2, %arg3, %arg4 into %arg0 rows %arg6 lse %arg7 : memref<64x64xf32>, memref<64xf32>, memref<64xf32> into memref<?x4x64xbf16>, memref<4x?xf32>
func.func @tile_packed(%q: memref<?x4x64xbf16>, %t: memref<64x64xf32>, %acc: memref<64x64xf32>,
                       %m: memref<64xf32>, %l: memref<64xf32>, %row0: index, %rows: index,
                       %lse: memref<4x?xf32>) {
  flashattn.tile_load %q[%row0] rows %rows into %t : memref<?x4x64xbf16> into memref<64x64xf32>
  flashattn.tile_store %acc, %m, %l into %q rows %rows lse %lse : memref<64x64xf32>, memref<64xf32>, memref<64xf32> into memref<?x4x64xbf16>, memref<4x?xf32>
  return
}

// -----

// Async loads (plain and paged) into slots of a ring and the wait.
// CHECK-LABEL: func.func @tile_load_async
// CHECK: flashattn.tile_load async %arg0[%arg4] rows %arg5 into %[[S0:.*]] :
// CHECK: flashattn.tile_load_paged async %arg1[%arg2, %arg3, %arg4] rows %arg5 into %[[S1:.*]] :
// CHECK: flashattn.tile_wait %[[S0]] rows %arg5 : memref<64x64xf32, strided<[64, 1], offset: ?>>
// CHECK: flashattn.tile_release %[[S0]] : memref<64x64xf32, strided<[64, 1], offset: ?>>
func.func @tile_load_async(%kv: memref<?x64xbf16>, %pool: memref<8x16x2x64xbf16>, %pages: memref<4xi32>,
                           %h: index, %n0: index, %rows: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ring = memref.alloca() : memref<2x64x64xf32>
  %s0 = memref.subview %ring[%c0, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
  %s1 = memref.subview %ring[%c1, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
  flashattn.tile_load async %kv[%n0] rows %rows into %s0 : memref<?x64xbf16> into memref<64x64xf32, strided<[64, 1], offset: ?>>
  flashattn.tile_load_paged async %pool[%pages, %h, %n0] rows %rows into %s1 : memref<8x16x2x64xbf16>, memref<4xi32> into memref<64x64xf32, strided<[64, 1], offset: ?>>
  flashattn.tile_wait %s0 rows %rows : memref<64x64xf32, strided<[64, 1], offset: ?>>
  flashattn.tile_release %s0 : memref<64x64xf32, strided<[64, 1], offset: ?>>
  return
}

// -----

// The split-KV merge of one element (the sm90 combine kernel's body).
// CHECK-LABEL: func.func @merge_splits
// CHECK: %[[V:.*]], %[[L:.*]] = flashattn.merge_splits %arg0[%arg2, %arg3, %arg4, %arg5], %arg1[%arg2, %arg4, %arg3] : memref<?x?x?x8x64xf32>, memref<?x?x8x?xf32>
// CHECK: return %[[V]], %[[L]]
func.func @merge_splits(%po: memref<?x?x?x8x64xf32>, %pl: memref<?x?x8x?xf32>, %b: index,
                        %i: index, %h: index, %d: index) -> (f32, f32) {
  %v, %l = flashattn.merge_splits %po[%b, %i, %h, %d], %pl[%b, %h, %i] : memref<?x?x?x8x64xf32>, memref<?x?x8x?xf32>
  return %v, %l : f32, f32
}
