// Gemma-2-9B local attention layer: 16 query heads over 8 kv heads,
// head_dim 256, attention logit softcapping at 50, sliding window of 4096,
// query_pre_attn_scalar 256 (scale = 1/16). Scaled to 1 sequence of 512
// tokens with the window scaled to 128. bf16.
func.func @gemma2_9b_local(%q: memref<1x512x16x256xbf16>,
                           %k: memref<1x512x8x256xbf16>,
                           %v: memref<1x512x8x256xbf16>,
                           %out: memref<1x512x16x256xbf16>) {
  flashattn.attention
      ins(%q, %k, %v : memref<1x512x16x256xbf16>, memref<1x512x8x256xbf16>,
                       memref<1x512x8x256xbf16>)
      outs(%out : memref<1x512x16x256xbf16>)
      {scale = 0.0625 : f32, softcap = 50.0 : f32,
       causal = #flashattn.causal<bottom_right>,
       window_size = array<i64: 127, 0>}
  return
}
