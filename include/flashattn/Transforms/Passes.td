//===- Passes.td - flashattn transformation passes ---------*- tablegen -*-===//

#ifndef FLASHATTN_TRANSFORMS_PASSES
#define FLASHATTN_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def FlashAttnPlan : Pass<"flashattn-plan"> {
  let summary = "Choose tile sizes, pipeline, schedule, num_splits and pack_gqa";
  let description = [{
    Attaches a `#flashattn.plan` to every `flashattn.attention` that has
    none, for the given target:

    - `host`: block_m = block_n = 64, 1 stage, 1 consumer, static schedule;
      num_splits = the op's, or 1 when automatic (0); pack_gqa = the op's,
      or false.
    - `sm90`: the tiles of flashattn-tile's kernel, in FlashAttention-3's
      forward shape (arXiv 2407.08608): consumer warpgroups of 64 query
      rows each, 2 over 128-row tiles, 3 over 192-row tiles at head_dim 64
      without splits (num_splits 1), paged KV, windows, softcap or regions;
      key blocks of 128 keys, 64 at head_dim 256 and with pages neither a
      multiple of 128 keys nor dividing it; 2 K/V stages; the persistent
      schedule lpt under a causal mask without a left window, else static;
      automatic num_splits = 1 (the runtime chooses the count at launch for
      artifacts compiled with num_splits 0); automatic pack_gqa when the
      query rows of one kv head (seqlen_q * Hq / Hkv) fit one tile and Hq >
      Hkv.

    `block-m`, `block-n`, `consumers` and `stages` override the choice
    (0 = automatic; with `consumers` alone, sm90's block_m follows as 64 x
    consumers): for tuning experiments, which the runtime's cache key does
    not record. An op whose plan is already set is left alone.

    On sm90 the plan also holds the kernel's code-generation choices
    (`sm90 = #flashattn.sm90_codegen<...>`: the consumers' scheduler
    barrier, the TMA-store epilogue, the early Q release and its predicated
    form, conditional rescaling, the rescale's place, the reduction chains,
    per-row KV copies, kv heads per key block, the L2 priorities of the TMA
    loads, the producer warpgroup, the P V / softmax overlap, the fused
    split-KV merge, the next tile's Q in a second buffer, the key blocks
    from the last down, idle consumers of a packed tile drained), each chosen as measured on the H200 or H100 and overridable by
    the option of the same name (`scheduler-barrier`, `tma-store`,
    `early-q-release`, `predicated-q-release`, `conditional-rescale`,
    `rescale-under-qk`,
    `kv-row-copies`, `warp-specialize`, `intra-wg-overlap`, `fused-merge`,
    `prefetch-next-q`, `descending-key-blocks`, `drain-idle-consumers`: auto, on,
    off;
    `kv-heads-per-block`: 0 automatic, 1 off; `l2-hint-q`,
    `l2-hint-kv`: auto, normal, first, last).
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"host\"",
           "code generation target: host or sm90">,
    Option<"numSMs", "num-sms", "int64_t", /*default=*/"132",
           "streaming multiprocessors of the sm90 target (H100/H200: 132; "
           "validated, not used by today's choices)">,
    Option<"blockM", "block-m", "int64_t", /*default=*/"0",
           "query rows per tile (0: automatic)">,
    Option<"blockN", "block-n", "int64_t", /*default=*/"0",
           "keys per block (0: automatic)">,
    Option<"consumers", "consumers", "int64_t", /*default=*/"0",
           "consumer warpgroups per CTA on sm90 (0: automatic)">,
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "K/V pipeline stages on sm90 (0: automatic)">,
    Option<"schedulerBarrier", "scheduler-barrier", "std::string",
           /*default=*/"\"auto\"", "sm90: consumers take turns issuing GEMMs: auto, on, off">,
    Option<"tmaStore", "tma-store", "std::string", /*default=*/"\"auto\"",
           "sm90: O through shared memory and a TMA store: auto, on, off">,
    Option<"earlyQRelease", "early-q-release", "std::string",
           /*default=*/"\"auto\"",
           "sm90: release Q after the tile's last S, not its last P V: auto (but at "
           "head_dim 256 with a mask, softcap, regions or paged KV), on, off">,
    Option<"predicatedQRelease", "predicated-q-release", "std::string",
           /*default=*/"\"auto\"",
           "sm90: with early_q_release and a key-block loop "
           "split at the mask's boundary, Q released in the masked loop only, by a "
           "predicated arrive: auto (at head_dim 128 under a causal mask or a right "
           "window with the key blocks ascending, and unmasked dense head_dim 256), "
           "on, off">,
    Option<"prefetchNextQ", "prefetch-next-q", "std::string", /*default=*/"\"auto\"",
           "sm90: with the counter's tiles, Q in two buffers, the next tile's loaded "
           "before this tile's is released: auto (at head_dim 64 and 128 under a causal "
           "mask), on, off">,
    Option<"descendingKeyBlocks", "descending-key-blocks", "std::string",
           /*default=*/"\"auto\"",
           "sm90: under a causal mask or a right window without a left window, the "
           "key blocks from the tile's last down, the masked ones first: auto (at "
           "head_dim 128 under a causal mask), on, off">,
    Option<"drainIdleConsumers", "drain-idle-consumers", "std::string",
           /*default=*/"\"auto\"",
           "sm90: with pack_gqa and two or more consumers, a consumer whose 64 rows "
           "all lie past its Q tile's (decode: G rows a query token) waits for and "
           "releases the key blocks and takes its scheduler turns, without computing "
           "them: auto (off), on, off">,
    Option<"conditionalRescale", "conditional-rescale", "std::string",
           /*default=*/"\"auto\"",
           "sm90: rescale O only where a row's max grew by more than 8 (exp2 units): "
           "auto (but with 3 consumers under a causal mask, and split-KV at head_dim "
           "256 over pages smaller than a key block), on, off">,
    Option<"rescaleUnderQK", "rescale-under-qk", "std::string", /*default=*/"\"auto\"",
           "sm90: in the overlapped key-block loop, O's rescale by the previous block's "
           "factor runs under the next Q K^T, before its P V is issued: auto (at "
           "head_dim 128, not in the split-KV form), on, off; only with the P V / "
           "softmax overlap">,
    Option<"kvRowCopies", "kv-row-copies", "std::string", /*default=*/"\"auto\"",
           "sm90: paged KV by per-row cp.async copies instead of a TMA box per page: "
           "auto, on, off">,
    Option<"warpSpecialize", "warp-specialize", "std::string", /*default=*/"\"auto\"",
           "sm90: a producer warpgroup (flashattn-sm90-warp-specialize): auto (but "
           "with softcap at head_dim 256), on, off">,
    Option<"intraWGOverlap", "intra-wg-overlap", "std::string", /*default=*/"\"auto\"",
           "sm90: in the warp-specialized kernel, P V under the next block's softmax: "
           "auto (but with softcap at head_dim 128 and 256), on, off">,
    Option<"fusedMerge", "fused-merge", "std::string", /*default=*/"\"auto\"",
           "sm90: the split-KV partial kernels merge the splits themselves "
           "(the last split of a tile): auto (on), on, off">,
    Option<"kvHeadsPerBlock", "kv-heads-per-block", "int64_t", /*default=*/"0",
           "sm90: pack_gqa with pages smaller than a key block: kv heads per key "
           "block, so that a TMA box holds as many heads of a page (0: "
           "automatic, 1: off)">,
    Option<"l2HintQ", "l2-hint-q", "std::string", /*default=*/"\"auto\"",
           "sm90: L2 eviction priority of Q's TMA loads: auto (evict_first), "
           "normal, first, last">,
    Option<"l2HintKV", "l2-hint-kv", "std::string", /*default=*/"\"auto\"",
           "sm90: L2 eviction priority of the K/V TMA loads: auto (normal), normal, "
           "first, last">
  ];
  let dependentDialects = ["::mlir::flashattn::FlashAttnDialect"];
}

def FlashAttnSplitKV : Pass<"flashattn-split-kv"> {
  let summary = "Rewrite split-KV attention into partials plus flashattn.combine";
  let description = [{
    A `flashattn.attention` whose plan has num_splits > 1 becomes ONE
    attention in the split-KV partial form, writing f32 partial outputs
    `[num_splits] ++ shape(out)` and partial lse `[num_splits] ++ shape(lse)`
    into new buffers (memref.alloc, or tensor.empty on tensors), followed by
    `flashattn.combine` into the original outs. Buffers are freed after the
    combine. Runs after `flashattn-plan`.
  }];
  let dependentDialects = ["::mlir::flashattn::FlashAttnDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def FlashAttnTile : Pass<"flashattn-tile"> {
  let summary = "Lower flashattn.attention to tiled online-softmax loops";
  let description = [{
    Rewrites every planned `flashattn.attention` on memrefs into the loops of
    FlashAttention-2 (arXiv 2307.08691, algorithm 1): a loop over sequences,
    a work loop over tiles (head, m_block, split), and a loop over the key
    blocks [n_min, n_max) that causal, window, sequence ends and the split
    leave (docs/ARCHITECTURE.md), whose bodies use the tile-level ops
    (tile_load, tile_load_paged, tile_qk, tile_softmax, tile_pv,
    tile_store). Softcap, ALiBi and the score region act on the scores in
    an elementwise loop with in-sequence indices; causal, window and
    sequence-end masks run only on boundary blocks (scf.if on the block index
    against bounds computed above the loop); the mask region
    runs on every block. log2(e) is folded into the scale of tile_qk when
    nothing acts on the scores. The kv-cache append is a copy loop before
    the attention that never writes past the cache. `flashattn.combine` is
    left for the conversion.

    On an op planned for sm90 the same loops form a kernel instead: `gpu.func
    @fa_sm90_N(q, k, v, out[, lse][, tile_table][, page_table]) kernel` in
    `gpu.module @fa_sm90_N_module` (arguments named by `flashattn.arg`),
    written for one CTA: a persistent work loop from `gpu.block_id x` by
    `gpu.grid_dim x` over (batch, head, m_block, split), split fastest, or
    with varlen, seqused_k, paged KV or append over the runtime's tile table
    (each tile's sequence from its entry, in groups of the table's heads per
    group), with the same tile bodies (scratch tiles as allocas, constants
    hoisted out of the regions cloned in). Paged: the page lists are an
    argument; split-KV: the partial out's leading dimension is dynamic (the
    launch's count), and the op's `flashattn.combine` gets its merge kernel,
    `@fa_sm90_N_combine(partial_out, partial_lse, out[, lse])`, one element
    of out a thread (`flashattn.merge_splits`) in a grid-stride loop, which
    the combine's `flashattn.sm90` names; append: the copy is a kernel of
    its own, `@fa_sm90_N_append(k_new, v_new, k, v, tile_table[,
    page_table])`, one 16-byte chunk of k_new and of v_new a thread. The
    combine and append kernels take the views the runtime launches them
    with (partial_out [S, B, Sq, H, D], partial_lse [S, B, H, Sq], out [B,
    Sq, H, D], lse [B, H, Sq]; varlen as a batch of one). The op stays,
    with `flashattn.sm90` naming the kernel (no ABI yet:
    `flashattn-sm90-warpgroup` distributes the kernel over a warpgroup and
    describes it). pack_gqa (the plan's): the tiles go over kv heads, their
    rows over the G = Hq / Hkv query heads of each position (packed views of
    q, out and lse). Twins the runtime may launch instead, in the same
    gpu.module: with `dense-entry` `@fa_sm90_N_dense`, the split-KV partial
    op's attention without splits writing the combine's out and lse (a
    launch of one split); with `packed-entry`, where the op leaves pack_gqa
    to the plan and the plan did not pack, `@fa_sm90_N_packed` (and
    `@fa_sm90_N_dense_packed`). The plan's kv_heads_per_block H (pack_gqa
    over small pages): a tile serves H kv heads, a key block holds
    block_n / H keys of each, heads fastest (`tile_load_paged` heads), a
    row sees its kv head's columns only, and `@fa_sm90_N_kv1` (and
    `@fa_sm90_N_dense_kv1`) keep one kv head a block. ALiBi, q_start and
    regions using outside values other than constants get a diagnostic.
  }];
  let options = [
    Option<"denseEntry", "dense-entry", "bool", /*default=*/"false",
           "sm90, split-KV partial form: also the kernel without splits">,
    Option<"packedEntry", "packed-entry", "bool", /*default=*/"false",
           "sm90, GQA the plan did not pack: also the pack_gqa kernels">
  ];
  let dependentDialects = ["::mlir::flashattn::FlashAttnDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def FlashAttnSm90PipelineKV : Pass<"flashattn-sm90-pipeline-kv", "::mlir::ModuleOp"> {
  let summary = "Software-pipeline the K and V loads of the tiled sm90 kernels";
  let description = [{
    In every tiled sm90 kernel (`gpu.func ... kernel` from `flashattn-tile`),
    each key-block loop (`scf.for` of step 1) whose body loads K and V tiles
    (`tile_load` / `tile_load_paged` into scratch tiles used only in the
    loop) loads them `stages - 1` key blocks ahead into rings of `stages`
    tiles: before the loop the first `stages - 1` blocks start (`async`), each
    iteration n starts block n + stages - 1 into the slot block n - 1 used,
    and waits (`flashattn.tile_wait`) for block n's tiles where their loads
    stood, so the copies run under the previous blocks' wgmma and softmax.
    Block j lives in slot (j - begin) mod stages; a load starts only for a
    block below the loop's end. The load operands computed in the loop
    (the row, the rows left) are recomputed for the block ahead, so they
    must come from pure ops. `stages` is the plan's (`#flashattn.plan`'s
    stages, of the ops naming the kernel) unless the option sets it; with 1
    nothing changes.

    V's loads may lag K's by `v-lag` blocks (V then `stages - 1 - v-lag`
    blocks ahead; at 0 ahead, block n's V starts at the top of iteration n).
    Under the plan's `intra_wg_overlap` with `warp_specialize`, block n's
    P V runs in iteration n + 1, so the plan's lag is 1: each iteration
    starts K of block n + 1, then V of block n, FlashAttention-3's producer
    order (arXiv 2407.08608, section 3.2), and the next Q K^T's K does not
    queue behind a V read a block later (not with `kv_row_copies`, whose
    128-thread producer would spill). A loop whose key block gathers more
    than 8 pages (`tile_load_paged` of more than 8 x page_size x heads
    rows) keeps V with K: a lagging V there keeps twice the page boxes in
    flight. Within an iteration the loads furthest ahead start first.
    Runs after `flashattn-tile`, before
    `flashattn-sm90-warpgroup`, which gives each slot its mbarrier.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "Tiles in each ring (0: the plan's stages)">,
    Option<"vLag", "v-lag", "int64_t", /*default=*/"-1",
           "Blocks V's loads start after K's, at most stages - 1 (-1: the "
           "plan's, 1 under intra_wg_overlap with warp_specialize and without "
           "kv_row_copies, else 0)">
  ];
  let dependentDialects = ["::mlir::flashattn::FlashAttnDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def FlashAttnSm90WarpSpecialize
    : Pass<"flashattn-sm90-warp-specialize", "::mlir::ModuleOp"> {
  let summary = "Split the tiled sm90 kernels into a producer and consumers";
  let description = [{
    Warp specialization (FlashAttention-3, arXiv 2407.08608, section 3.1):
    the body of every tiled sm90 kernel (`gpu.func ... kernel` from
    `flashattn-tile`, after `flashattn-sm90-pipeline-kv`) whose ops' plan has
    `warp_specialize` (`#flashattn.sm90_codegen`) becomes a
    `flashattn.warp_specialize` of two copies of it. The producer keeps the
    loads (every `tile_load` / `tile_load_paged`, made `async`) and the
    control flow and index arithmetic they need; the consumers keep the
    rest, wait (`flashattn.tile_wait`) where a load that did not wait
    stood (Q), and release (`flashattn.tile_release`) each tile they waited
    for after its last read in the wait's block: K after `tile_qk`, V after
    `tile_pv`, Q after the key-block loop. Both copies run the same work and
    key-block loops, so they load and wait for the same tiles in the same
    order. The register budgets are the options', or FlashAttention-3's for
    the kernel's consumers (64 score rows each): 40 / 232 with 2, 32 / 160
    with 3, none otherwise; budgets past the launch's allocation (128 x
    producer + 128 x consumers x consumer registers, setmaxnreg.inc would
    wait forever) and a waited tile read outside the wait's block are
    errors. Runs before `flashattn-sm90-warpgroup`, which gives each tile a
    full and an empty mbarrier.
  }];
  let options = [
    Option<"producerRegs", "producer-regs", "int64_t", /*default=*/"-1",
           "The producer's setmaxnreg budget (-1: by the consumers; 0: none)">,
    Option<"consumerRegs", "consumer-regs", "int64_t", /*default=*/"-1",
           "The consumers' setmaxnreg budget (-1: by the consumers; 0: none)">
  ];
  let dependentDialects = ["::mlir::flashattn::FlashAttnDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect"];
}

def FlashAttnLowerKeyRanges : Pass<"flashattn-lower-key-ranges"> {
  let summary = "Expand the key-range ops into arith";
  let description = [{
    Rewrites `flashattn.key_end`, `flashattn.key_begin` and
    `flashattn.key_blocks` into signed `arith` ops on their operands' type
    (index in what flashattn-tile emits; the sm90 pipeline lowers the
    kernels' index to i32 afterwards), in place and without folding, so
    that the expansion sits where the op stood. flashattn-tile emits these
    ops (in the host loops and in the sm90 kernels); both pipelines run this
    pass after the kernels are built. The formulas are the ops' (docs/SEMANTICS.md,
    "Masks").
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def FlashAttnFloorDivToShift : Pass<"flashattn-floordiv-to-shift"> {
  let summary = "Rewrite floor divisions by a constant power of two into arithmetic shifts";
  let description = [{
    Rewrites `arith.floordivsi %x, %c`, where `%c` is a scalar or splat
    constant 2^k that is positive as a signed value, into `arith.shrsi %x,
    k` (k = 0: `%x` itself), in place. The arithmetic shift right rounds
    toward negative infinity, so the result equals the floor division for
    every `%x`, negative values included, and never overflows; k is below
    the bit width, where `arith.shrsi` is defined. On `index`, divisors of
    2^31 and above stay divisions (the sm90 kernels lower index to 32
    bits). arith's expansion of `floordivsi` (a truncating division with a
    sign fix-up) is not folded back by LLVM; flashattn-tile's first masked
    key block, `floor(key_end / block_n)`, is one such division, on the
    kernels' per-tile path. Both pipelines run this pass after
    flashattn-lower-key-ranges.

    ```mlir
    %b = arith.floordivsi %end, %c128 : i32
    // becomes
    %c7 = arith.constant 7 : i32
    %b = arith.shrsi %end, %c7 : i32
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def FlashAttnDecomposeToLinalg : Pass<"flashattn-decompose-to-linalg"> {
  let summary = "Decompose flashattn.attention on tensors into linalg";
  let description = [{
    Rewrites every `flashattn.attention` in tensor form into `linalg.generic`
    ops that compute docs/SEMANTICS.md's formula unfused, in f32, through the
    op's `linalg::AggregatedOpInterface` (its `decomposeOperation`): S = Q
    K^T over head_dim, then scale, softcap, ALiBi, the score region, the
    causal / window / mask-region mask as a select to -inf, the row max m,
    P = exp(S - m) (0 in place of m while it is -inf), the row sum l, O = P
    V, out = O / l (0 where l is 0) and lse = m + log l (-inf where l is 0).
    GQA reads kv head h / G. For a compiler without flashattn's lowerings:
    upstream's linalg lowering runs the result. It uses O(Sq Sk) memory and
    keeps no FlashAttention rounding (P is f32).

    Dense ops only: varlen, paged, seqused_k, kv-cache append, the split-KV
    partial form and dynamic head counts are errors naming the feature.

    ```mlir
    %o = flashattn.attention ins(%q, %k, %v : ...) outs(%out : ...) -> tensor<...>
    // becomes linalg.fill / linalg.generic ops ending in
    %o = linalg.generic {...} ins(%O, %l : ...) outs(%out : ...) -> tensor<...>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect"];
}

def FlashAttnRaise : Pass<"flashattn-raise"> {
  let summary = "Raise attention written in linalg on tensors to flashattn.attention";
  let description = [{
    Opt-in. Finds scaled dot-product attention as upstream structured ops
    write it (torch-mlir's linalg-on-tensors output, StableHLO-to-linalg
    with or without primitive ops, hand-written generics) and replaces it
    with `flashattn.attention`:

    - S = Q K^T: a contraction over head_dim from a zero fill, by
      `linalg.generic` (any transposing maps), `linalg.matmul`,
      `linalg.batch_matmul` or `linalg.contract`; a batch_matmul between
      `tensor.collapse_shape [[0, 1], ...]` of 4-D tensors and
      `tensor.expand_shape` of its result is the 4-D contraction.
    - Elementwise steps on S (separate ops or one fused payload): a multiply
      or divide by a positive constant (a captured scalar, a splat tensor, a
      fill; the scale, before any mask is added); the addition of a tensor
      (an additive mask, as Hugging Face's, read through any broadcast: a
      score region adding it); a select of x against -inf from an i1 tensor
      (a mask region reading it; `masked_fill` form negated) or from
      index comparisons of `linalg.index` or iotas (key - query + c
      compared, with `arith.andi` / negated `arith.ori`): the keys
      query - left <= key <= query + right, which is `causal = top_left`
      for right = 0 alone and `window_size = [left, right]` when Sq = Sk
      statically (the op's window is bottom-right aligned); a select against a finite constant (JAX's
      padding: kept in the score region, so a fully masked row keeps its
      values); casts.
    - P = softmax over the keys: `linalg.softmax`, or max / sub / exp / sum /
      div in fused or separate ops, the row statistics kept ([.., Sq, 1]),
      expanded or broadcast.
    - O = P V: a contraction over the keys.

    The score chain has 2 to 4 dims: up to two batch-like dims (batch and
    heads, in either order), the queries, the keys last. Q, K, V and O may
    be in any layout (transposes are seen through, and the op's
    [B, S, H, D] operands are made with `linalg.transpose` and unit-dim
    `tensor.expand_shape` only where needed). GQA: K and V repeated by a
    broadcast over a new dim right after the kv heads, collapsed into them
    (torch's `repeat_interleave`, `expand` + `reshape`), are read
    unrepeated; other repeats are read as they are.

    Only exact matches are raised: a softmax over another dimension, a
    scale after the softmax or around a mask, a non-constant factor, a mask
    that is neither added nor selected, a key >= query comparison, a
    window over Sq != Sk, a batch_matmul whose operands collapse different
    [B, H] leave the IR unchanged.

    Rounding: the op accumulates in f32 with the online softmax and keeps
    neither S nor P in the element type, so results move within
    FlashAttention's tolerance of the unfused chain (docs/SEMANTICS.md). A
    fully masked row of an additive or finite-select mask gets the mean of
    V, as in the unfused form; a row masked by -inf everywhere gives 0 where
    the unfused form divides 0 by 0.
  }];
  let dependentDialects = ["::mlir::flashattn::FlashAttnDialect",
                           "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"];
}

#endif // FLASHATTN_TRANSFORMS_PASSES
