// Mistral-7B attention layer: 32 query heads over 8 kv heads, head_dim 128,
// causal with a sliding window of 4096 keys (window_size = [4095, 0]: a row
// sees itself and the 4095 keys before it). Scaled to 2 sequences of 1024
// tokens with the window scaled by the same factor (4096 -> 256), so that the
// window still cuts most rows. f16, on buffers, with lse.
func.func @mistral_7b_prefill(%q: memref<2x1024x32x128xf16>,
                              %k: memref<2x1024x8x128xf16>,
                              %v: memref<2x1024x8x128xf16>,
                              %out: memref<2x1024x32x128xf16>,
                              %lse: memref<2x32x1024xf32>) {
  flashattn.attention
      ins(%q, %k, %v : memref<2x1024x32x128xf16>, memref<2x1024x8x128xf16>,
                       memref<2x1024x8x128xf16>)
      outs(%out, %lse : memref<2x1024x32x128xf16>, memref<2x32x1024xf32>)
      {causal = #flashattn.causal<bottom_right>,
       window_size = array<i64: 255, 0>}
  return
}
