// A packed training batch (Llama-3-8B heads: 32 query / 8 kv, head_dim 128)
// of uneven sequences, no padding: cu_seqlens_q = cu_seqlens_k hold the
// batch + 1 prefix offsets into 1536 tokens (e.g. lengths 700, 1, 0, 835).
// Causal; the lse is packed as [heads, total_q].
func.func @packed_varlen(%q: memref<1536x32x128xbf16>,
                         %k: memref<1536x8x128xbf16>,
                         %v: memref<1536x8x128xbf16>,
                         %cu_seqlens_q: memref<5xi32>,
                         %cu_seqlens_k: memref<5xi32>,
                         %out: memref<1536x32x128xbf16>,
                         %lse: memref<32x1536xf32>) {
  flashattn.attention
      ins(%q, %k, %v : memref<1536x32x128xbf16>, memref<1536x8x128xbf16>,
                       memref<1536x8x128xbf16>)
      cu_seqlens_q(%cu_seqlens_q : memref<5xi32>)
      cu_seqlens_k(%cu_seqlens_k : memref<5xi32>)
      outs(%out, %lse : memref<1536x32x128xbf16>, memref<32x1536xf32>)
      {causal = #flashattn.causal<bottom_right>}
  return
}
