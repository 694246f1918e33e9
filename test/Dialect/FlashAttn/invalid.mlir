// RUN: fa-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule of flashattn.attention, flashattn.combine and
// #flashattn.plan (docs/SEMANTICS.md, bad input); each message names the values involved.

func.func @q_element_type(%q: tensor<2x64x8x64xi8>, %k: tensor<2x128x2x64xi8>, %v: tensor<2x128x2x64xi8>, %o: tensor<2x64x8x64xi8>) {
  // expected-error @+1 {{'q' element type must be f16, bf16 or f32, got 'i8'}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xi8>, tensor<2x128x2x64xi8>, tensor<2x128x2x64xi8>)
      outs(%o : tensor<2x64x8x64xi8>) -> tensor<2x64x8x64xi8>
  return
}

// -----

func.func @k_element_type(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xbf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+1 {{'k' element type 'bf16' differs from 'q' element type 'f16'}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xbf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>) -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @out_element_type(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xbf16>) {
  // expected-error @+1 {{'out' element type must be 'f16' (as 'q') or f32, got 'bf16'}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<2x64x8x64xbf16>) -> tensor<2x64x8x64xbf16>
  return
}

// -----

func.func @mixed_kinds(%q: tensor<2x64x8x64xf16>, %k: memref<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+1 {{'k' is a memref but 'q' is a tensor: all shaped operands must be tensors or all memrefs}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, memref<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>) -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @memref_with_result(%q: memref<2x64x8x64xf16>, %k: memref<2x128x2x64xf16>, %v: memref<2x128x2x64xf16>, %o: memref<2x64x8x64xf16>) {
  // expected-error @+1 {{on memrefs writes its outs in place and returns no results, got 1}}
  %r = "flashattn.attention"(%q, %k, %v, %o) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1>}> ({}, {}) : (memref<2x64x8x64xf16>, memref<2x128x2x64xf16>, memref<2x128x2x64xf16>, memref<2x64x8x64xf16>) -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @too_many_outs(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>, %l: tensor<2x8x64xf32>) {
  // expected-error @+1 {{'outs' must hold out and optionally lse, got 3 values}}
  %r:3 = "flashattn.attention"(%q, %k, %v, %o, %l, %l) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3>}> ({}, {}) : (tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>, tensor<2x64x8x64xf16>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> (tensor<2x64x8x64xf16>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
  return
}

// -----

func.func @v_shape(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x100x2x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+1 {{'v' shape [2, 100, 2, 64] must match 'k' shape [2, 128, 2, 64] in every dimension but head_dim (dim 1 differs)}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x100x2x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>) -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @head_dim(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x128xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+1 {{'k' head_dim 128 differs from 'q' head_dim 64}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x128xf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>) -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @heads_not_multiple(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x3x64xf16>, %v: tensor<2x128x3x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+1 {{number of query heads (8) must be a multiple of the number of kv heads (3)}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x3x64xf16>, tensor<2x128x3x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>) -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @out_shape(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x32xf16>) {
  // expected-error @+1 {{'out' shape [2, 64, 8, 32] must be 'q' shape with head_dim_v, i.e. [2, 64, 8, 64]}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<2x64x8x32xf16>) -> tensor<2x64x8x32xf16>
  return
}

// -----

func.func @batch_mismatch(%q: tensor<2x64x8x64xf16>, %k: tensor<3x128x2x64xf16>, %v: tensor<3x128x2x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+1 {{batch size mismatch: 'k' (dim 0) gives 3 but 'q' (dim 0) gives 2}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<3x128x2x64xf16>, tensor<3x128x2x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>) -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @lse_shape_dense(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>, %l: tensor<2x64x8xf32>) {
  // expected-error @+1 {{'lse' shape [2, 64, 8] must be [batch, heads, seqlen_q] = [2, 8, 64]}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o, %l : tensor<2x64x8x64xf16>, tensor<2x64x8xf32>) -> tensor<2x64x8x64xf16>, tensor<2x64x8xf32>
  return
}

// -----

func.func @lse_element_type(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>, %l: tensor<2x8x64xf16>) {
  // expected-error @+1 {{'lse' element type must be f32, got 'f16'}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o, %l : tensor<2x64x8x64xf16>, tensor<2x8x64xf16>) -> tensor<2x64x8x64xf16>, tensor<2x8x64xf16>
  return
}

// -----

func.func @lse_shape_varlen(%q: memref<100x8x64xf16>, %k: memref<?x2x64xf16>, %v: memref<?x2x64xf16>, %cq: memref<3xi32>, %ck: memref<3xi32>, %o: memref<100x8x64xf16>, %l: memref<100x8xf32>) {
  // expected-error @+1 {{'lse' shape [100, 8] must be [heads, total_q] = [8, 100]}}
  flashattn.attention ins(%q, %k, %v : memref<100x8x64xf16>, memref<?x2x64xf16>, memref<?x2x64xf16>)
      cu_seqlens_q(%cq : memref<3xi32>) cu_seqlens_k(%ck : memref<3xi32>)
      outs(%o, %l : memref<100x8x64xf16>, memref<100x8xf32>)
  return
}

// -----

func.func @q_rank(%q: tensor<64x8x2x64x1xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<64x8x2x64x1xf16>) {
  // expected-error @+1 {{'q' must have rank 4 [batch, seqlen_q, heads, head_dim] or rank 3 [total_q, heads, head_dim] (varlen)}}
  flashattn.attention ins(%q, %k, %v : tensor<64x8x2x64x1xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<64x8x2x64x1xf16>) -> tensor<64x8x2x64x1xf16>
  return
}

// -----

func.func @varlen_q_without_cu_seqlens(%q: tensor<100x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<100x8x64xf16>) {
  // expected-error @+1 {{'q' of rank 3 is packed (varlen) and needs 'cu_seqlens_q'}}
  flashattn.attention ins(%q, %k, %v : tensor<100x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<100x8x64xf16>) -> tensor<100x8x64xf16>
  return
}

// -----

func.func @cu_seqlens_q_with_dense_q(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>, %cq: tensor<3xi32>) {
  // expected-error @+1 {{'cu_seqlens_q' is given but 'q' has rank 4 (dense)}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      cu_seqlens_q(%cq : tensor<3xi32>)
      outs(%o : tensor<2x64x8x64xf16>) -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @varlen_k_without_cu_seqlens(%q: tensor<2x64x8x64xf16>, %k: tensor<200x2x64xf16>, %v: tensor<200x2x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+1 {{'k' of rank 3 is packed (varlen) and needs 'cu_seqlens_k'}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<200x2x64xf16>, tensor<200x2x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>) -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @cu_seqlens_k_with_dense_k(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>, %ck: tensor<3xi32>) {
  // expected-error @+1 {{'cu_seqlens_k' is given but 'k' has rank 4 (dense)}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      cu_seqlens_k(%ck : tensor<3xi32>)
      outs(%o : tensor<2x64x8x64xf16>) -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @cu_seqlens_length(%q: tensor<100x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %cq: tensor<4xi32>, %o: tensor<100x8x64xf16>) {
  // expected-error @+1 {{batch size mismatch: 'cu_seqlens_q' (dim 0 - 1) gives 3 but 'k' (dim 0) gives 2}}
  flashattn.attention ins(%q, %k, %v : tensor<100x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      cu_seqlens_q(%cq : tensor<4xi32>)
      outs(%o : tensor<100x8x64xf16>) -> tensor<100x8x64xf16>
  return
}

// -----

func.func @cu_seqlens_type(%q: tensor<100x8x64xf16>, %k: tensor<200x2x64xf16>, %v: tensor<200x2x64xf16>, %cq: tensor<3xi32>, %ck: tensor<3xi64>, %o: tensor<100x8x64xf16>) {
  // expected-error @+1 {{'cu_seqlens_k' must be a 1-D i32 tensor of batch + 1 offsets, got 'tensor<3xi64>'}}
  flashattn.attention ins(%q, %k, %v : tensor<100x8x64xf16>, tensor<200x2x64xf16>, tensor<200x2x64xf16>)
      cu_seqlens_q(%cq : tensor<3xi32>) cu_seqlens_k(%ck : tensor<3xi64>)
      outs(%o : tensor<100x8x64xf16>) -> tensor<100x8x64xf16>
  return
}

// -----

func.func @seqused_k_type(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>, %u: tensor<2xf32>) {
  // expected-error @+1 {{'seqused_k' must be a 1-D i32 tensor of batch key counts, got 'tensor<2xf32>'}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      seqused_k(%u : tensor<2xf32>)
      outs(%o : tensor<2x64x8x64xf16>) -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @block_table_without_seqused_k(%q: memref<2x1x8x64xf16>, %k: memref<32x16x2x64xf16>, %v: memref<32x16x2x64xf16>, %bt: memref<2x4xi32>, %o: memref<2x1x8x64xf16>) {
  // expected-error @+1 {{'block_table' needs 'seqused_k' (the number of keys of each sequence)}}
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x64xf16>, memref<32x16x2x64xf16>, memref<32x16x2x64xf16>)
      block_table(%bt : memref<2x4xi32>)
      outs(%o : memref<2x1x8x64xf16>)
  return
}

// -----

func.func @block_table_rank(%q: memref<2x1x8x64xf16>, %k: memref<32x16x2x64xf16>, %v: memref<32x16x2x64xf16>, %u: memref<2xi32>, %bt: memref<2x4x1xi32>, %o: memref<2x1x8x64xf16>) {
  // expected-error @+1 {{'block_table' must be a 2-D i32 [batch, max_pages] page index table, got 'memref<2x4x1xi32>'}}
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x64xf16>, memref<32x16x2x64xf16>, memref<32x16x2x64xf16>)
      seqused_k(%u : memref<2xi32>) block_table(%bt : memref<2x4x1xi32>)
      outs(%o : memref<2x1x8x64xf16>)
  return
}

// -----

func.func @block_table_batch(%q: memref<2x1x8x64xf16>, %k: memref<32x16x2x64xf16>, %v: memref<32x16x2x64xf16>, %u: memref<2xi32>, %bt: memref<3x4xi32>, %o: memref<2x1x8x64xf16>) {
  // expected-error @+1 {{batch size mismatch: 'block_table' (dim 0) gives 3 but 'q' (dim 0) gives 2}}
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x64xf16>, memref<32x16x2x64xf16>, memref<32x16x2x64xf16>)
      seqused_k(%u : memref<2xi32>) block_table(%bt : memref<3x4xi32>)
      outs(%o : memref<2x1x8x64xf16>)
  return
}

// -----

func.func @paged_k_rank(%q: memref<2x1x8x64xf16>, %k: memref<512x2x64xf16>, %v: memref<512x2x64xf16>, %u: memref<2xi32>, %bt: memref<2x4xi32>, %o: memref<2x1x8x64xf16>) {
  // expected-error @+1 {{paged 'k' must be [num_pages, page_size, kv_heads, head_dim], got 'memref<512x2x64xf16>'}}
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x64xf16>, memref<512x2x64xf16>, memref<512x2x64xf16>)
      seqused_k(%u : memref<2xi32>) block_table(%bt : memref<2x4xi32>)
      outs(%o : memref<2x1x8x64xf16>)
  return
}

// -----

func.func @paged_with_cu_seqlens_k(%q: memref<2x1x8x64xf16>, %k: memref<32x16x2x64xf16>, %v: memref<32x16x2x64xf16>, %ck: memref<3xi32>, %u: memref<2xi32>, %bt: memref<2x4xi32>, %o: memref<2x1x8x64xf16>) {
  // expected-error @+1 {{'cu_seqlens_k' cannot be combined with 'block_table'}}
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x64xf16>, memref<32x16x2x64xf16>, memref<32x16x2x64xf16>)
      cu_seqlens_k(%ck : memref<3xi32>) seqused_k(%u : memref<2xi32>) block_table(%bt : memref<2x4xi32>)
      outs(%o : memref<2x1x8x64xf16>)
  return
}

// -----

func.func @alibi_shape(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'alibi_slopes' has 4 slopes per row but 'q' has 8 heads}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      alibi_slopes(%a : tensor<4xf32>)
      outs(%o : tensor<2x64x8x64xf16>) -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @alibi_type(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>, %a: tensor<8xf16>) {
  // expected-error @+1 {{'alibi_slopes' must be f32 [heads] or [batch, heads], got 'tensor<8xf16>'}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      alibi_slopes(%a : tensor<8xf16>)
      outs(%o : tensor<2x64x8x64xf16>) -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @append_without_v_new(%q: memref<2x1x8x64xf16>, %k: memref<2x128x2x64xf16>, %v: memref<2x128x2x64xf16>, %kn: memref<2x1x2x64xf16>, %cs: memref<2xi32>, %o: memref<2x1x8x64xf16>) {
  // expected-error @+1 {{kv-cache append needs 'k_new', 'v_new' and 'cache_seqlens' together; missing 'v_new'}}
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x64xf16>, memref<2x128x2x64xf16>, memref<2x128x2x64xf16>)
      k_new(%kn : memref<2x1x2x64xf16>) cache_seqlens(%cs : memref<2xi32>)
      outs(%o : memref<2x1x8x64xf16>)
  return
}

// -----

func.func @append_without_cache_seqlens(%q: memref<2x1x8x64xf16>, %k: memref<2x128x2x64xf16>, %v: memref<2x128x2x64xf16>, %kn: memref<2x1x2x64xf16>, %vn: memref<2x1x2x64xf16>, %o: memref<2x1x8x64xf16>) {
  // expected-error @+1 {{kv-cache append needs 'k_new', 'v_new' and 'cache_seqlens' together; missing 'cache_seqlens'}}
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x64xf16>, memref<2x128x2x64xf16>, memref<2x128x2x64xf16>)
      k_new(%kn : memref<2x1x2x64xf16>) v_new(%vn : memref<2x1x2x64xf16>)
      outs(%o : memref<2x1x8x64xf16>)
  return
}

// -----

func.func @append_on_tensors(%q: tensor<2x1x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %kn: tensor<2x1x2x64xf16>, %vn: tensor<2x1x2x64xf16>, %cs: tensor<2xi32>, %o: tensor<2x1x8x64xf16>) {
  // expected-error @+1 {{kv-cache append updates 'k' and 'v' in place and needs the memref form}}
  flashattn.attention ins(%q, %k, %v : tensor<2x1x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      k_new(%kn : tensor<2x1x2x64xf16>) v_new(%vn : tensor<2x1x2x64xf16>) cache_seqlens(%cs : tensor<2xi32>)
      outs(%o : tensor<2x1x8x64xf16>) -> tensor<2x1x8x64xf16>
  return
}

// -----

func.func @append_past_capacity(%q: memref<2x1x8x64xf16>, %k: memref<2x128x2x64xf16>, %v: memref<2x128x2x64xf16>, %kn: memref<2x200x2x64xf16>, %vn: memref<2x200x2x64xf16>, %cs: memref<2xi32>, %o: memref<2x1x8x64xf16>) {
  // expected-error @+1 {{'k_new' appends 200 rows per sequence but the cache holds at most 128 keys per sequence}}
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x64xf16>, memref<2x128x2x64xf16>, memref<2x128x2x64xf16>)
      k_new(%kn : memref<2x200x2x64xf16>) v_new(%vn : memref<2x200x2x64xf16>) cache_seqlens(%cs : memref<2xi32>)
      outs(%o : memref<2x1x8x64xf16>)
  return
}

// -----

func.func @append_paged_past_capacity(%q: memref<2x1x8x64xf16>, %k: memref<32x16x2x64xf16>, %v: memref<32x16x2x64xf16>, %u: memref<2xi32>, %bt: memref<2x4xi32>, %kn: memref<2x65x2x64xf16>, %vn: memref<2x65x2x64xf16>, %cs: memref<2xi32>, %o: memref<2x1x8x64xf16>) {
  // expected-error @+1 {{'k_new' appends 65 rows per sequence but the cache holds at most 64 keys per sequence}}
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x64xf16>, memref<32x16x2x64xf16>, memref<32x16x2x64xf16>)
      seqused_k(%u : memref<2xi32>) block_table(%bt : memref<2x4xi32>) k_new(%kn : memref<2x65x2x64xf16>) v_new(%vn : memref<2x65x2x64xf16>) cache_seqlens(%cs : memref<2xi32>)
      outs(%o : memref<2x1x8x64xf16>)
  return
}

// -----

func.func @append_heads(%q: memref<2x1x8x64xf16>, %k: memref<2x128x2x64xf16>, %v: memref<2x128x2x64xf16>, %kn: memref<2x1x4x64xf16>, %vn: memref<2x1x4x64xf16>, %cs: memref<2xi32>, %o: memref<2x1x8x64xf16>) {
  // expected-error @+1 {{'k_new' shape [2, 1, 4, 64] must have 2 kv heads and head_dim 64 as the cache}}
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x64xf16>, memref<2x128x2x64xf16>, memref<2x128x2x64xf16>)
      k_new(%kn : memref<2x1x4x64xf16>) v_new(%vn : memref<2x1x4x64xf16>) cache_seqlens(%cs : memref<2xi32>)
      outs(%o : memref<2x1x8x64xf16>)
  return
}

// -----

func.func @window_below_minus_one(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+1 {{'window_size' values must be >= -1 (-1 = unbounded), got [-2, 0]}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>) {window_size = array<i64: -2, 0>} -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @window_count(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+1 {{'window_size' must hold two values (left, right), got 1}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>) {window_size = array<i64: 16>} -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @softcap_negative(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+1 {{'softcap' must be >= 0 (0 = off), got -1}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>) {softcap = -1.0 : f32} -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @num_splits_negative(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+1 {{'num_splits' must be >= 0 (0 = automatic), got -1}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>) {num_splits = -1} -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @scale_not_finite(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+1 {{'scale' must be finite, got}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>) {scale = 0x7F800000 : f32} -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @dynamic_head_dim_needs_scale(%q: tensor<2x64x8x?xf16>, %k: tensor<2x128x2x?xf16>, %v: tensor<2x128x2x?xf16>, %o: tensor<2x64x8x?xf16>) {
  // expected-error @+1 {{needs an explicit 'scale' when head_dim is dynamic (the default is 1/sqrt(head_dim))}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x?xf16>, tensor<2x128x2x?xf16>, tensor<2x128x2x?xf16>)
      outs(%o : tensor<2x64x8x?xf16>) -> tensor<2x64x8x?xf16>
  return
}

// -----

func.func @plan_num_splits(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+1 {{'plan' num_splits (2) differs from the op's num_splits (3)}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>) {num_splits = 3, plan = #flashattn.plan<target = host, block_m = 64, block_n = 64, stages = 1, consumers = 1, schedule = static, num_splits = 2, pack_gqa = false>} -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @plan_pack_gqa(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+1 {{'plan' pack_gqa (false) differs from the op's pack_gqa (true)}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>) {pack_gqa = true, plan = #flashattn.plan<target = host, block_m = 64, block_n = 64, stages = 1, consumers = 1, schedule = static, num_splits = 2, pack_gqa = false>} -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @score_region_args(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+1 {{'score' region must take (f32 score, index batch, index head, index q_idx, index kv_idx), got (f32, index, index, index)}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>)
      score(%s: f32, %b: index, %h: index, %i: index) {
        flashattn.yield %s : f32
      } -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @score_region_yield(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+1 {{'score' region must yield one f32, got (f16)}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>)
      score(%s: f32, %b: index, %h: index, %i: index, %j: index) {
        %t = arith.truncf %s : f32 to f16
        flashattn.yield %t : f16
      } -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @mask_region_args(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+1 {{'mask' region must take (index batch, index head, index q_idx, index kv_idx), got (index, index, i32, i32)}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>)
      mask(%b: index, %h: index, %i: i32, %j: i32) {
        %t = arith.cmpi eq, %i, %j : i32
        flashattn.yield %t : i1
      } -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @mask_region_yield(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+1 {{'mask' region must yield one i1, got (f32)}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>)
      mask(%b: index, %h: index, %i: index, %j: index) {
        %c = arith.constant 0.0 : f32
        flashattn.yield %c : f32
      } -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @combine_partial_type(%po: tensor<4x2x1x8x64xf16>, %pl: tensor<4x2x8x1xf32>, %o: tensor<2x1x8x64xf16>) {
  // expected-error @+1 {{'partial_out' and 'partial_lse' must be f32, got 'f16' and 'f32'}}
  flashattn.combine ins(%po, %pl : tensor<4x2x1x8x64xf16>, tensor<4x2x8x1xf32>) outs(%o : tensor<2x1x8x64xf16>) -> tensor<2x1x8x64xf16>
  return
}

// -----

func.func @combine_partial_out_shape(%po: tensor<4x2x1x8x32xf32>, %pl: tensor<4x2x8x1xf32>, %o: tensor<2x1x8x64xf16>) {
  // expected-error @+1 {{'partial_out' shape [4, 2, 1, 8, 32] must be [num_splits] followed by 'out' shape [2, 1, 8, 64]}}
  flashattn.combine ins(%po, %pl : tensor<4x2x1x8x32xf32>, tensor<4x2x8x1xf32>) outs(%o : tensor<2x1x8x64xf16>) -> tensor<2x1x8x64xf16>
  return
}

// -----

func.func @combine_partial_lse_shape(%po: tensor<4x2x1x8x64xf32>, %pl: tensor<3x2x8x1xf32>, %o: tensor<2x1x8x64xf16>) {
  // expected-error @+1 {{'partial_lse' shape [3, 2, 8, 1] must be [4, 2, 8, 1] ([num_splits] followed by the lse shape of 'out')}}
  flashattn.combine ins(%po, %pl : tensor<4x2x1x8x64xf32>, tensor<3x2x8x1xf32>) outs(%o : tensor<2x1x8x64xf16>) -> tensor<2x1x8x64xf16>
  return
}

// -----

func.func @combine_lse_shape(%po: tensor<4x9x8x64xf32>, %pl: tensor<4x8x9xf32>, %o: tensor<9x8x64xf16>, %l: tensor<9x8xf32>) {
  // expected-error @+1 {{'lse' must be f32 [8, 9], got 'tensor<9x8xf32>'}}
  flashattn.combine ins(%po, %pl : tensor<4x9x8x64xf32>, tensor<4x8x9xf32>) outs(%o, %l : tensor<9x8x64xf16>, tensor<9x8xf32>) -> tensor<9x8x64xf16>, tensor<9x8xf32>
  return
}

// -----

func.func @combine_mixed_kinds(%po: tensor<4x9x8x64xf32>, %pl: tensor<4x8x9xf32>, %o: memref<9x8x64xf16>) {
  // expected-error @+1 {{'out' is a memref but 'partial_out' is a tensor: all shaped operands must be tensors or all memrefs}}
  flashattn.combine ins(%po, %pl : tensor<4x9x8x64xf32>, tensor<4x8x9xf32>) outs(%o : memref<9x8x64xf16>)
  return
}

// -----

func.func @plan_invalid(%q: tensor<2x64x8x64xf16>, %k: tensor<2x128x2x64xf16>, %v: tensor<2x128x2x64xf16>, %o: tensor<2x64x8x64xf16>) {
  // expected-error @+2 {{sm90 plan block_m (96) must be a multiple of 64 rows per consumer warpgroup (2 consumers)}}
  flashattn.attention ins(%q, %k, %v : tensor<2x64x8x64xf16>, tensor<2x128x2x64xf16>, tensor<2x128x2x64xf16>)
      outs(%o : tensor<2x64x8x64xf16>) {plan = #flashattn.plan<target = sm90, block_m = 96, block_n = 128, stages = 2, consumers = 2, schedule = static, num_splits = 1, pack_gqa = false>} -> tensor<2x64x8x64xf16>
  return
}

// -----

func.func @plan_tile_too_large(%q: memref<1x8x2x64xf16>, %o: memref<1x8x2x64xf16>) {
  // expected-error @+2 {{plan tile sizes must be in [1, 65536], got block_m = 64, block_n = 4294967296}}
  flashattn.attention ins(%q, %q, %q : memref<1x8x2x64xf16>, memref<1x8x2x64xf16>, memref<1x8x2x64xf16>) outs(%o : memref<1x8x2x64xf16>)
      {plan = #flashattn.plan<target = host, block_m = 64, block_n = 4294967296, stages = 1, consumers = 1, schedule = static, num_splits = 1, pack_gqa = false>}
  return
}

// -----

// Host tiles past what LLVM compiles in reasonable time (block_n 32769 once
// crashed the X86 backend after passing the verifier).
func.func @host_plan_block_n_too_large(%q: memref<1x8x2x64xf16>, %o: memref<1x8x2x64xf16>) {
  // expected-error @+2 {{host plan tile sizes must be at most 4096 (what LLVM compiles in reasonable time), got block_m = 64, block_n = 32769}}
  flashattn.attention ins(%q, %q, %q : memref<1x8x2x64xf16>, memref<1x8x2x64xf16>, memref<1x8x2x64xf16>) outs(%o : memref<1x8x2x64xf16>)
      {plan = #flashattn.plan<target = host, block_m = 64, block_n = 32769, stages = 1, consumers = 1, schedule = static, num_splits = 1, pack_gqa = false>}
  return
}

// -----

func.func @host_plan_block_m_too_large(%q: memref<1x8x2x64xf16>, %o: memref<1x8x2x64xf16>) {
  // expected-error @+2 {{host plan tile sizes must be at most 4096 (what LLVM compiles in reasonable time), got block_m = 4097, block_n = 64}}
  flashattn.attention ins(%q, %q, %q : memref<1x8x2x64xf16>, memref<1x8x2x64xf16>, memref<1x8x2x64xf16>) outs(%o : memref<1x8x2x64xf16>)
      {plan = #flashattn.plan<target = host, block_m = 4097, block_n = 64, stages = 1, consumers = 1, schedule = static, num_splits = 1, pack_gqa = false>}
  return
}

// -----

// The bound itself is a valid host plan (no diagnostic).
func.func @host_plan_at_the_bound() attributes {x = #flashattn.plan<target = host, block_m = 4096, block_n = 4096, stages = 1, consumers = 1, schedule = static, num_splits = 1, pack_gqa = false>} {
  return
}

// -----

func.func @no_query_heads(%q: memref<1x8x0x64xf16>, %k: memref<1x8x2x64xf16>, %o: memref<1x8x0x64xf16>) {
  // expected-error @+1 {{needs at least one query head and one kv head, got 0 and 2}}
  flashattn.attention ins(%q, %k, %k : memref<1x8x0x64xf16>, memref<1x8x2x64xf16>, memref<1x8x2x64xf16>) outs(%o : memref<1x8x0x64xf16>)
  return
}

// -----

func.func @zero_head_dim(%q: memref<1x8x2x0xf16>, %o: memref<1x8x2x0xf16>) {
  // expected-error @+1 {{head_dim and head_dim_v must be positive, got 0 and 0}}
  flashattn.attention ins(%q, %q, %q : memref<1x8x2x0xf16>, memref<1x8x2x0xf16>, memref<1x8x2x0xf16>) outs(%o : memref<1x8x2x0xf16>) {scale = 1.0 : f32}
  return
}

// -----

func.func @combine_zero_head_dim(%po: memref<5x2x3x4x0xf32>, %pl: memref<5x2x4x3xf32>, %o: memref<2x3x4x0xf16>) {
  // expected-error @+1 {{'out' head_dim_v must be positive, got 'memref<2x3x4x0xf16>'}}
  flashattn.combine ins(%po, %pl : memref<5x2x3x4x0xf32>, memref<5x2x4x3xf32>) outs(%o : memref<2x3x4x0xf16>)
  return
}

// -----

func.func @tile_init_rows(%m: memref<4xf32>, %l: memref<8xf32>, %acc: memref<16x8xf32>) {
  // expected-error @+1 {{expects m [M], l [M] and acc [M, Dv] with one M, got 'memref<4xf32>', 'memref<8xf32>' and 'memref<16x8xf32>'}}
  flashattn.tile_init %m, %l, %acc : memref<4xf32>, memref<8xf32>, memref<16x8xf32>
  return
}

// -----

func.func @tile_load_f64(%src: memref<?x64xf64>, %t: memref<64x64xf32>, %i: index) {
  // expected-error @+1 {{'source' must be a 2-D f16, bf16 or f32 view [rows, D], got 'memref<?x64xf64>'}}
  flashattn.tile_load %src[%i] rows %i into %t : memref<?x64xf64> into memref<64x64xf32>
  return
}

// -----

func.func @tile_load_packed_dynamic(%src: memref<?x?x64xf16>, %t: memref<64x64xf32>, %i: index) {
  // expected-error @+1 {{'source' packs a static number of heads G >= 1 (its dimension 1), got 'memref<?x?x64xf16>'}}
  flashattn.tile_load %src[%i] rows %i into %t : memref<?x?x64xf16> into memref<64x64xf32>
  return
}

// -----

func.func @tile_store_packed_lse(%acc: memref<64x64xf32>, %m: memref<64xf32>, %l: memref<64xf32>,
                                 %o: memref<?x4x64xf16>, %lse: memref<8x?xf32>, %i: index) {
  // expected-error @+1 {{'lse' must be a 2-D f32 view [G, rows] with out's G = 4 heads, got 'memref<8x?xf32>'}}
  flashattn.tile_store %acc, %m, %l into %o rows %i lse %lse : memref<64x64xf32>, memref<64xf32>, memref<64xf32> into memref<?x4x64xf16>, memref<8x?xf32>
  return
}

// -----

func.func @tile_load_paged_heads(%pool: memref<8x16x4x64xf16>, %pages: memref<4xi32>, %t: memref<64x64xf32>, %i: index) {
  // expected-error @+1 {{'heads' must be positive and divide the tile's 64 rows, got 3}}
  flashattn.tile_load_paged %pool[%pages, %i, %i] rows %i into %t {heads = 3 : i64} : memref<8x16x4x64xf16>, memref<4xi32> into memref<64x64xf32>
  return
}

// -----

func.func @tile_empty(%src: memref<?x64xf16>, %t: memref<0x64xf32>, %i: index) {
  // expected-error @+1 {{tile 'tile' dimensions must be in [1, 65536], got 'memref<0x64xf32>'}}
  flashattn.tile_load %src[%i] rows %i into %t : memref<?x64xf16> into memref<0x64xf32>
  return
}

// -----

func.func @tile_strided(%s: memref<64x64xf32, strided<[1, 64]>>, %m: memref<64xf32>, %l: memref<64xf32>, %acc: memref<64x64xf32>) {
  // expected-error @+1 {{'s' must have a unit stride in its last dimension, got 'memref<64x64xf32, strided<[1, 64]>>'}}
  flashattn.tile_softmax %s, %m, %l, %acc : memref<64x64xf32, strided<[1, 64]>>, memref<64xf32>, memref<64xf32>, memref<64x64xf32>
  return
}

// -----

// expected-error @+1 {{sm90_codegen kv_heads_per_block must be 1, 2, 4 or 8, got 3}}
func.func @codegen_heads() attributes {x = #flashattn.sm90_codegen<kv_heads_per_block = 3>} {
  return
}

// -----

// expected-error @+1 {{plan sm90 code generation choices need target sm90}}
func.func @codegen_host() attributes {x = #flashattn.plan<target = host, block_m = 64, block_n = 64, stages = 1, consumers = 1, schedule = static, num_splits = 1, pack_gqa = false, sm90 = <tma_store = true>>} {
  return
}

// -----

func.func @key_end_window(%i: index, %sk: index, %c: index) {
  // expected-error @+1 {{'window_right' must be -1 (no bound) or a number of keys >= 0, got -2}}
  %0 = flashattn.key_end row %i keys %sk offset %c {window_right = -2} : index
  return
}

// -----

func.func @key_begin_no_window(%i: i32, %c: i32) {
  // expected-error @+1 {{'window_left' must be a number of keys >= 0 (key_begin is only built under a left window), got -1}}
  %0 = flashattn.key_begin row %i offset %c {window_left = -1} : i32
  return
}

// -----

func.func @key_blocks_block_n(%i: index, %sk: index, %c: index) {
  // expected-error @+1 {{'block_n' must be at least 1, got -64}}
  %0:2 = flashattn.key_blocks rows [%i, %i) keys %sk offset %c {block_n = -64} : index
  return
}

// -----

func.func @key_blocks_window(%i: index, %sk: index, %c: index) {
  // expected-error @+1 {{'window_left' must be -1 (no bound) or a number of keys >= 0, got -3}}
  %0:2 = flashattn.key_blocks rows [%i, %i) keys %sk offset %c {block_n = 64, window_left = -3} : index
  return
}

// -----

func.func @key_blocks_types(%i: index, %sk: i32, %c: index) {
  // expected-error @+1 {{all of {row_begin, row_end, seqlen_k, offset, begin, end} have same type}}
  %0:2 = "flashattn.key_blocks"(%i, %i, %sk, %c) {block_n = 64 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>} : (index, index, i32, index) -> (index, index)
  return
}

// -----

func.func @key_blocks_split_alone(%i: index, %sk: index, %c: index) {
  // expected-error @+1 {{'split' and 'num_splits' go together (split-KV) or not at all}}
  %0:2 = "flashattn.key_blocks"(%i, %i, %sk, %c, %i) {block_n = 64 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0>} : (index, index, index, index, index) -> (index, index)
  return
}

// -----

func.func @key_blocks_split_type(%i: index, %sk: index, %c: index, %s: i32) {
  // expected-error @+1 {{split has the positions' type}}
  %0:2 = "flashattn.key_blocks"(%i, %i, %sk, %c, %s, %s) {block_n = 64 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>} : (index, index, index, index, i32, i32) -> (index, index)
  return
}

// -----

llvm.func @warp_specialize_regs(%tid: i32) {
  // expected-error @+1 {{'consumer_regs' must be 0 (keep the launch's registers) or a multiple of 8 in [24, 256] (setmaxnreg), got 260}}
  flashattn.warp_specialize %tid {consumer_regs = 260 : i32} producer {
  } consumers {
  }
  llvm.return
}

// -----

llvm.func @warp_specialize_regs_multiple(%tid: i32) {
  // expected-error @+1 {{'producer_regs' must be 0 (keep the launch's registers) or a multiple of 8 in [24, 256] (setmaxnreg), got 30}}
  flashattn.warp_specialize %tid {producer_regs = 30 : i32} producer {
  } consumers {
  }
  llvm.return
}

// -----

llvm.func @wgmma_rs_n(%acc: !llvm.struct<(f32, f32, f32, f32)>, %a: i32, %b: i64) {
  // expected-error @+1 {{'n' must be a multiple of 8 in [8, 256], got 12}}
  %0 = flashattn.wgmma_rs %acc, [%a, %a, %a, %a], %b {element = bf16, n = 12 : i64} : !llvm.struct<(f32, f32, f32, f32)>
  llvm.return
}

// -----

llvm.func @wgmma_rs_element(%acc: !llvm.struct<(f32, f32, f32, f32)>, %a: i32, %b: i64) {
  // expected-error @+1 {{'element' must be f16 or bf16, got 'f32'}}
  %0 = flashattn.wgmma_rs %acc, [%a, %a, %a, %a], %b {element = f32, n = 8 : i64} : !llvm.struct<(f32, f32, f32, f32)>
  llvm.return
}

// -----

llvm.func @wgmma_rs_registers(%acc: !llvm.struct<(f32, f32, f32, f32)>, %a: i32, %b: i64) {
  // expected-error @+1 {{takes 4 A registers (i32), got 2}}
  %0 = flashattn.wgmma_rs %acc, [%a, %a], %b {element = bf16, n = 8 : i64} : !llvm.struct<(f32, f32, f32, f32)>
  llvm.return
}

// -----

llvm.func @wgmma_rs_acc(%acc: !llvm.struct<(f32, f32)>, %a: i32, %b: i64) {
  // expected-error @+1 {{'acc' must be an !llvm.struct of n / 2 = 4 f32, got '!llvm.struct<(f32, f32)>'}}
  %0 = flashattn.wgmma_rs %acc, [%a, %a, %a, %a], %b {element = bf16, n = 8 : i64} : !llvm.struct<(f32, f32)>
  llvm.return
}

// -----

llvm.func @l2_policy_normal() {
  // expected-error @+1 {{'priority' must be evict_first or evict_last (a load with normal priority takes no policy), got normal}}
  %0 = flashattn.l2_policy normal
  llvm.return
}

// -----

llvm.func @arrive_if_global(%p: i1, %bar: !llvm.ptr<1>) {
  // expected-error @+1 {{operand #1 must be LLVM pointer in address space 3}}
  flashattn.mbarrier_arrive_if %p, %bar : !llvm.ptr<1>
  llvm.return
}

// -----

func.func @q_start_alone(%q: memref<1x16x2x64xf16>, %k: memref<1x32x2x64xf16>, %v: memref<1x32x2x64xf16>,
                         %o: memref<1x16x2x64xf16>, %start: index) {
  // expected-error @+1 {{'q_start' and 'seqlen_q' go together (a tile of query rows names where it starts and the length it aligns to)}}
  flashattn.attention ins(%q, %k, %v : memref<1x16x2x64xf16>, memref<1x32x2x64xf16>, memref<1x32x2x64xf16>)
      q_start(%start) outs(%o : memref<1x16x2x64xf16>)
  return
}

// -----

func.func @q_start_varlen(%q: memref<16x2x64xf16>, %k: memref<32x2x64xf16>, %v: memref<32x2x64xf16>,
                          %cq: memref<2xi32>, %ck: memref<2xi32>, %o: memref<16x2x64xf16>, %s: index) {
  // expected-error @+1 {{'q_start' / 'seqlen_q' need dense q (rank 4), got packed q}}
  flashattn.attention ins(%q, %k, %v : memref<16x2x64xf16>, memref<32x2x64xf16>, memref<32x2x64xf16>)
      cu_seqlens_q(%cq : memref<2xi32>) cu_seqlens_k(%ck : memref<2xi32>)
      q_start(%s) seqlen_q(%s) outs(%o : memref<16x2x64xf16>)
  return
}

// -----

func.func @q_start_past_seqlen(%q: memref<1x16x2x64xf16>, %k: memref<1x32x2x64xf16>, %v: memref<1x32x2x64xf16>,
                               %o: memref<1x16x2x64xf16>) {
  %c8 = arith.constant 8 : index
  %c20 = arith.constant 20 : index
  // expected-error @+1 {{rows [8, 24) of the tile must lie in the seqlen_q 20 queries}}
  flashattn.attention ins(%q, %k, %v : memref<1x16x2x64xf16>, memref<1x32x2x64xf16>, memref<1x32x2x64xf16>)
      q_start(%c8) seqlen_q(%c20) outs(%o : memref<1x16x2x64xf16>)
  return
}

// -----

func.func @q_start_negative(%q: memref<1x?x2x64xf16>, %k: memref<1x32x2x64xf16>, %v: memref<1x32x2x64xf16>,
                            %o: memref<1x?x2x64xf16>, %n: index) {
  %c-5 = arith.constant -5 : index
  // expected-error @+1 {{'q_start' must be >= 0, got -5}}
  flashattn.attention ins(%q, %k, %v : memref<1x?x2x64xf16>, memref<1x32x2x64xf16>, memref<1x32x2x64xf16>)
      q_start(%c-5) seqlen_q(%n) outs(%o : memref<1x?x2x64xf16>)
  return
}

// -----

func.func @tile_longer_than_seqlen(%q: memref<1x8x2x64xf16>, %k: memref<1x32x2x64xf16>, %v: memref<1x32x2x64xf16>,
                                   %o: memref<1x8x2x64xf16>, %s: index) {
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{the tile's 8 query rows exceed seqlen_q 4}}
  flashattn.attention ins(%q, %k, %v : memref<1x8x2x64xf16>, memref<1x32x2x64xf16>, memref<1x32x2x64xf16>)
      q_start(%s) seqlen_q(%c4) outs(%o : memref<1x8x2x64xf16>)
  return
}

// -----

func.func @tile_map_args(%s: memref<16x32xf32>, %n: index) {
  // expected-error @+1 {{body must take (f32, index, index): the score and its row and column in the tile, got (f32, index)}}
  flashattn.tile_map %s rows %n cols %n {
  ^bb0(%x: f32, %i: index):
    flashattn.yield %x : f32
  } : memref<16x32xf32>
  return
}

// -----

func.func @tile_map_yield(%s: memref<16x32xf32>, %n: index) {
  // expected-error @+1 {{body must end in a flashattn.yield of one f32 (the new score)}}
  flashattn.tile_map %s rows %n cols %n {
  ^bb0(%x: f32, %i: index, %j: index):
    %t = arith.constant true
    flashattn.yield %t : i1
  } : memref<16x32xf32>
  return
}

// -----

func.func @tile_map_dynamic(%s: memref<?x32xf32>, %n: index) {
  // expected-error @+1 {{tile 's' must have a static shape, got 'memref<?x32xf32>'}}
  flashattn.tile_map %s rows %n cols %n {
  ^bb0(%x: f32, %i: index, %j: index):
    flashattn.yield %x : f32
  } : memref<?x32xf32>
  return
}

// -----

func.func @tile_map_rows(%s: memref<64x64xf32>, %n: index) {
  %c100 = arith.constant 100 : index
  // expected-error @+1 {{'rows' must be in [0, 64], got 100}}
  flashattn.tile_map %s rows %c100 cols %n {
  ^bb0(%x: f32, %i: index, %j: index):
    flashattn.yield %x : f32
  } : memref<64x64xf32>
  return
}

// -----

func.func @tile_wait_rows(%t: memref<64x64xf32>) {
  %c65 = arith.constant 65 : index
  // expected-error @+1 {{'rows' is 65 but 'tile' has 64 rows}}
  flashattn.tile_wait %t rows %c65 : memref<64x64xf32>
  return
}

// -----

func.func @merge_splits_indices(%po: memref<4x2x8x64xf32>, %pl: memref<4x2x8xf32>, %i: index) {
  // expected-error @+1 {{takes an index per dimension of 'partial_out' after the split (3), got 2}}
  %v, %l = flashattn.merge_splits %po[%i, %i], %pl[%i, %i] : memref<4x2x8x64xf32>, memref<4x2x8xf32>
  return
}

// -----

func.func @merge_splits_count(%po: memref<4x8x64xf32>, %pl: memref<3x8xf32>, %i: index) {
  // expected-error @+1 {{'partial_out' and 'partial_lse' must hold the same number of splits, got 4 and 3}}
  %v, %l = flashattn.merge_splits %po[%i, %i], %pl[%i] : memref<4x8x64xf32>, memref<3x8xf32>
  return
}

// -----

func.func @merge_splits_layout(%po: memref<4x8x64xf32, strided<[1024, 128, 1]>>, %pl: memref<4x8xf32>, %i: index) {
  // expected-error @+1 {{needs identity layouts (contiguous partial results)}}
  %v, %l = flashattn.merge_splits %po[%i, %i], %pl[%i] : memref<4x8x64xf32, strided<[1024, 128, 1]>>, memref<4x8xf32>
  return
}

// -----

func.func @merge_splits_empty(%po: memref<0x8x64xf32>, %pl: memref<0x8xf32>, %i: index) {
  // expected-error @+1 {{needs at least one split, got 'memref<0x8x64xf32>' and 'memref<0x8xf32>'}}
  %v, %l = flashattn.merge_splits %po[%i, %i], %pl[%i] : memref<0x8x64xf32>, memref<0x8xf32>
  return
}
