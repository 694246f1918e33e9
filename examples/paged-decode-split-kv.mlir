// Paged decode batch (Llama-3-8B heads: 32 query / 8 kv, head_dim 128): 8
// sequences of one new query token each over a paged KV cache of 16-key
// pages; seqused_k gives each sequence's key count and block_table its pages
// (up to 64 pages = 1024 keys). Split-KV over 4 key ranges, merged by
// flashattn.combine after the flashattn-split-kv pass. f16.
func.func @paged_decode(%q: memref<8x1x32x128xf16>,
                        %k_cache: memref<512x16x8x128xf16>,
                        %v_cache: memref<512x16x8x128xf16>,
                        %seqused_k: memref<8xi32>,
                        %block_table: memref<8x64xi32>,
                        %out: memref<8x1x32x128xf16>,
                        %lse: memref<8x32x1xf32>) {
  flashattn.attention
      ins(%q, %k_cache, %v_cache : memref<8x1x32x128xf16>,
                                   memref<512x16x8x128xf16>,
                                   memref<512x16x8x128xf16>)
      seqused_k(%seqused_k : memref<8xi32>)
      block_table(%block_table : memref<8x64xi32>)
      outs(%out, %lse : memref<8x1x32x128xf16>, memref<8x32x1xf32>)
      {causal = #flashattn.causal<bottom_right>, num_splits = 4}
  return
}
