// Llama-3-8B attention layer, causal prefill: 32 query heads share 8 kv heads
// (GQA 4:1), head_dim 128, bf16. Scaled to 1 sequence of 512 tokens.
func.func @llama3_8b_prefill(%q: tensor<1x512x32x128xbf16>,
                             %k: tensor<1x512x8x128xbf16>,
                             %v: tensor<1x512x8x128xbf16>,
                             %out: tensor<1x512x32x128xbf16>,
                             %lse: tensor<1x32x512xf32>)
    -> (tensor<1x512x32x128xbf16>, tensor<1x32x512xf32>) {
  %o, %l = flashattn.attention
      ins(%q, %k, %v : tensor<1x512x32x128xbf16>, tensor<1x512x8x128xbf16>,
                       tensor<1x512x8x128xbf16>)
      outs(%out, %lse : tensor<1x512x32x128xbf16>, tensor<1x32x512xf32>)
      {causal = #flashattn.causal<bottom_right>}
      -> tensor<1x512x32x128xbf16>, tensor<1x32x512xf32>
  return %o, %l : tensor<1x512x32x128xbf16>, tensor<1x32x512xf32>
}
