//===- FlashAttnDialect.td - FlashAttn dialect definition --*- tablegen -*-===//
//
// The `flashattn` dialect: attention written once as one op, lowered into
// FlashAttention-class kernels.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_DIALECT
#define FLASHATTN_DIALECT

include "mlir/IR/OpBase.td"

def FlashAttn_Dialect : Dialect {
  let name = "flashattn";
  let cppNamespace = "::mlir::flashattn";
  let summary = "Attention as one op, lowered to FlashAttention-class kernels";
  let description = [{
    The `flashattn` dialect models scaled dot-product attention as a single
    destination-passing-style op, `flashattn.attention`, whose operands and
    attributes carry every feature of the FlashAttention 2/3 interfaces:
    grouped-query heads, causal and sliding-window masks, softcapping, ALiBi,
    packed variable-length batches (`cu_seqlens_q`, `cu_seqlens_k`,
    `seqused_k`), paged KV caches (`block_table`), kv-cache append
    (`k_new`, `v_new`, `cache_seqlens`) and split-KV (`num_splits`), plus two
    optional regions that customise the score (`score`) and the mask
    (`mask`) in the manner of FlexAttention.

    The semantics, shared by every lowering (host and sm_90a), are those of
    FlashAttention (Dao et al., arXiv 2205.14135, 2307.08691, 2407.08608):
    for query row i and key j of sequence b and query head h, with
    kv head g = h / (Hq / Hkv),

    ```
    s_ij  = scale * <q_i, k_j>
    s_ij  = softcap * tanh(s_ij / softcap)        if softcap > 0
    s_ij += -alibi_slope[h] * |i + Sk - Sq - j|    if alibi_slopes is given
    s_ij  = score(s_ij, b, h, i, j)                if the op has a score region
    w_ij  = exp(s_ij) for the keys j < Sk that causal, window and the mask
            region allow, 0 elsewhere
    lse_i = log(sum_j w_ij)                        (natural log, f32)
    out_i = sum_j w_ij v_j / sum_j w_ij
    ```

    A row with no allowed key (an "empty row") has `out_i = 0` and
    `lse_i = -inf`, never NaN. Split-KV partials are merged by
    `flashattn.combine`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasConstantMaterializer = 0;
}

class FlashAttn_Op<string mnemonic, list<Trait> traits = []>
    : Op<FlashAttn_Dialect, mnemonic, traits>;

#endif // FLASHATTN_DIALECT
