//===- FlashAttnOps.td - FlashAttn operations --------------*- tablegen -*-===//
//
// flashattn.attention, flashattn.combine and flashattn.yield; the tile-level
// ops and the key-range ops between flashattn-tile and the target lowerings.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_OPS
#define FLASHATTN_OPS

include "flashattn/Dialect/FlashAttn/IR/FlashAttnDialect.td"
include "flashattn/Dialect/FlashAttn/IR/FlashAttnAttrs.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Dialect/LLVMIR/LLVMOpBase.td"

// Operands are ranked tensors (value semantics) or ranked memrefs (buffer
// semantics); one op uses one kind throughout. Element types and ranks are
// checked by the op verifiers, which name the offending value.
def FlashAttn_Shaped : AnyTypeOf<[AnyRankedTensor, AnyNon0RankedMemRef],
                                 "ranked tensor or memref">;

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

def FlashAttn_AttentionOp : FlashAttn_Op<"attention", [
    AttrSizedOperandSegments,
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<OpAsmOpInterface,
        ["getAsmBlockArgumentNames", "getAsmResultNames"]>]> {
  let summary = "Scaled dot-product attention (FlashAttention semantics)";
  let description = [{
    Computes `out = softmax(mask(score(scale * q k^T))) v` and optionally the
    row log-sum-exp `lse`, per query head, with the semantics of FlashAttention
    2/3 (Dao, arXiv 2307.08691; Shah et al., arXiv 2407.08608) restated in the
    dialect description and in docs/SEMANTICS.md.

    The op is in destination-passing style: `outs` holds `out` and, when
    present, `lse`. On tensors it returns one result per `outs` operand; on
    memrefs it writes them in place and returns nothing. All shaped operands
    are tensors, or all are memrefs.

    **Layout follows from the operands** (B batch, S sequence length, T total
    tokens of a packed batch, Hq/Hkv query/kv heads, D head_dim, Dv value
    head_dim):

    | form | q | k, v | out | lse (f32) |
    |---|---|---|---|---|
    | dense | `[B, Sq, Hq, D]` | `[B, Sk, Hkv, D/Dv]` | `[B, Sq, Hq, Dv]` | `[B, Hq, Sq]` |
    | varlen q (`cu_seqlens_q [B+1] i32`) | `[Tq, Hq, D]` | | `[Tq, Hq, Dv]` | `[Hq, Tq]` |
    | varlen k (`cu_seqlens_k [B+1] i32`) | | `[Tk, Hkv, D/Dv]` | | |
    | paged (`block_table [B, max_pages] i32`) | | `[num_pages, page_size, Hkv, D/Dv]` | | |

    q of rank 3 is packed (varlen) and needs `cu_seqlens_q`; k/v of rank 3
    are packed and need `cu_seqlens_k`; a `block_table` makes k/v paged and
    needs `seqused_k`. `seqused_k [B] i32` limits the keys used per sequence.
    `alibi_slopes` is `[Hq]` or `[B, Hq]` f32. Hq must be a multiple of Hkv
    (query head h reads kv head h / (Hq / Hkv)).

    **kv-cache append**: `k_new [B, S_new, Hkv, D]`, `v_new [B, S_new, Hkv, Dv]`
    and `cache_seqlens [B] i32` (valid keys in the cache before the append)
    write the new rows into k/v (through `block_table` when paged) at
    positions `cache_seqlens[b] .. cache_seqlens[b] + S_new - 1`, then attend
    over `cache_seqlens[b] + S_new` keys (a paged cache still names
    `seqused_k`, which the append does not use). This updates k/v in place,
    so it needs the memref form. S_new larger than the cache capacity is
    rejected.

    **Attributes**: `scale` (f32; absent = 1/sqrt(D)), `causal`
    (`none` | `top_left` | `bottom_right`), `window_size` (`[L, R]`, -1 =
    unbounded, bottom-right aligned), `softcap` (f32 >= 0, 0 = off),
    `num_splits` (0 = automatic, 1 = no split), `pack_gqa` (absent =
    automatic) and `plan` (the typed decisions of `flashattn-plan`).

    **Regions**: an optional `score` region
    `(%s: f32, %b: index, %h: index, %i: index, %j: index)` yields the new
    score (f32) and an optional `mask` region
    `(%b: index, %h: index, %i: index, %j: index)` yields an `i1` (true keeps
    the pair). `%i` and `%j` are positions inside the sequence, never packed
    offsets, and stay so after tiling and splitting. Regions may use values
    defined above the op (bias tables, document ids).

    Rows without any allowed key give `out = 0` and `lse = -inf`.

    **A tile of query rows**: `q_start(%s) seqlen_q(%n)` (index, together,
    dense q, no append): row r of q is query position `%s + r` of
    sequences of `%n` queries. The causal and window masks, ALiBi and the
    regions' `%i` see those positions, and the bottom-right offset is
    `Sk - %n`. This is how the op's TilingInterface tiles the rows of a
    causal op; the sm90 kernels do not take it.

    **Split-KV partial form**: when `out` has one more dimension than `q`,
    the op computes `num_splits` partial results over disjoint key ranges
    (split s covers key blocks `[s * ceil(n / num_splits), ...)` of the plan's
    `block_n`): `out` is f32 `[num_splits] ++ shape(out)` and `lse` (required)
    is `[num_splits] ++ shape(lse)`; `flashattn.combine` merges them. This is
    what `flashattn-split-kv` produces.

    Example (GQA, bottom-right causal, a relative-position bias, on tensors):

    ```mlir
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
    ```

    Example (paged decode with split-KV, on memrefs):

    ```mlir
    flashattn.attention
        ins(%q, %kc, %vc : memref<16x1x32x128xf16>, memref<4096x16x8x128xf16>,
                           memref<4096x16x8x128xf16>)
        seqused_k(%used : memref<16xi32>)
        block_table(%bt : memref<16x256xi32>)
        outs(%out : memref<16x1x32x128xf16>)
        {causal = #flashattn.causal<bottom_right>, num_splits = 4 : i64}
    ```
  }];

  let arguments = (ins
    FlashAttn_Shaped:$q,
    FlashAttn_Shaped:$k,
    FlashAttn_Shaped:$v,
    Optional<FlashAttn_Shaped>:$cu_seqlens_q,
    Optional<FlashAttn_Shaped>:$cu_seqlens_k,
    Optional<FlashAttn_Shaped>:$seqused_k,
    Optional<FlashAttn_Shaped>:$block_table,
    Optional<FlashAttn_Shaped>:$alibi_slopes,
    Optional<FlashAttn_Shaped>:$k_new,
    Optional<FlashAttn_Shaped>:$v_new,
    Optional<FlashAttn_Shaped>:$cache_seqlens,
    Optional<Index>:$q_start,
    Optional<Index>:$seqlen_q,
    Variadic<FlashAttn_Shaped>:$outs,
    OptionalAttr<F32Attr>:$scale,
    DefaultValuedAttr<FlashAttn_CausalAttr,
                      "::mlir::flashattn::CausalKind::none">:$causal,
    OptionalAttr<DenseI64ArrayAttr>:$window_size,
    OptionalAttr<F32Attr>:$softcap,
    DefaultValuedAttr<I64Attr, "0">:$num_splits,
    OptionalAttr<BoolAttr>:$pack_gqa,
    OptionalAttr<FlashAttn_PlanAttr>:$plan
  );
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region MaxSizedRegion<1>:$score, MaxSizedRegion<1>:$mask);

  let assemblyFormat = [{
    `ins` `(` $q `,` $k `,` $v `:` type($q) `,` type($k) `,` type($v) `)`
    (`cu_seqlens_q` `(` $cu_seqlens_q^ `:` type($cu_seqlens_q) `)`)?
    (`cu_seqlens_k` `(` $cu_seqlens_k^ `:` type($cu_seqlens_k) `)`)?
    (`seqused_k` `(` $seqused_k^ `:` type($seqused_k) `)`)?
    (`block_table` `(` $block_table^ `:` type($block_table) `)`)?
    (`alibi_slopes` `(` $alibi_slopes^ `:` type($alibi_slopes) `)`)?
    (`k_new` `(` $k_new^ `:` type($k_new) `)`)?
    (`v_new` `(` $v_new^ `:` type($v_new) `)`)?
    (`cache_seqlens` `(` $cache_seqlens^ `:` type($cache_seqlens) `)`)?
    (`q_start` `(` $q_start^ `)`)?
    (`seqlen_q` `(` $seqlen_q^ `)`)?
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict ``
    custom<AttentionRegions>($score, $mask)
    (`->` type($results)^)?
  }];

  let hasVerifier = 1;
  let hasRegionVerifier = 1;

  let builders = [
    // Dense or varlen attention without kv-cache append; every optional
    // operand may be null. `lse` may be null.
    OpBuilder<(ins "::mlir::Value":$q, "::mlir::Value":$k,
                   "::mlir::Value":$v, "::mlir::Value":$out,
                   "::mlir::Value":$lse,
                   CArg<"::mlir::flashattn::CausalKind",
                        "::mlir::flashattn::CausalKind::none">:$causal)>
  ];

  let extraClassDeclaration = [{
    /// The output `out` (first init).
    ::mlir::Value getOut() { return getOuts()[0]; }
    /// The row log-sum-exp output, or null.
    ::mlir::Value getLse() {
      return getOuts().size() > 1 ? getOuts()[1] : ::mlir::Value();
    }
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getOutsMutable();
    }
    /// True in the split-KV partial form written by flashattn-split-kv:
    /// out is f32 [num_splits] ++ shape(out), lse [num_splits] ++ shape(lse).
    bool isSplitPartial();
    /// True when q is packed [Tq, Hq, D] (varlen).
    bool isVarlenQ();
    /// True when k/v are packed [Tk, Hkv, D] (varlen, not paged).
    bool isVarlenK();
    /// True when k/v are paged through `block_table`.
    bool isPaged() { return static_cast<bool>(getBlockTable()); }
    /// True when the op appends k_new/v_new to the kv cache.
    bool hasAppend() { return static_cast<bool>(getKNew()); }
    /// True when `@kernels::@name` is one of the attention kernels its
    /// `flashattn.sm90` lists: the kernel, the dense entry or a twin.
    bool namesSm90Attention(::mlir::StringAttr kernels, ::mlir::StringAttr name);
    /// In the split-KV partial form on memrefs: the `flashattn.combine`
    /// that reads its partial out and lse (memref form), or null.
    CombineOp getPartialCombine();
    /// The softmax scale: the attribute, or 1/sqrt(head_dim) when absent
    /// (head_dim must then be static).
    double getEffectiveScale();
    /// Left and right window sizes; -1 means unbounded.
    std::pair<int64_t, int64_t> getWindow();
    /// What takes the op beyond the dense layout (varlen, paged or
    /// seqused_k, an append, the split-KV partial form), as a phrase for a
    /// diagnostic; empty when it is dense.
    ::llvm::StringRef getNonDenseFeature();
    /// q_start / seqlen_q's rules (part of the verifier).
    ::llvm::LogicalResult verifyRowTile(bool varlenQ);
    /// The verifier's parts (FlashAttnOps.cpp), each over the operands it
    /// names.
    ::llvm::LogicalResult verifyElementTypes();
    ::llvm::LogicalResult verifyLayouts(bool varlenQ, bool paged);
    ::llvm::LogicalResult verifyHeads();
    ::llvm::LogicalResult verifyOut(bool partial);
    ::llvm::FailureOr<int64_t> verifyBatch(bool varlenQ, bool paged);
    ::llvm::LogicalResult verifyLse(bool partial, bool varlenQ);
    ::llvm::LogicalResult verifyAlibi();
    ::llvm::LogicalResult verifyAppend(int64_t batch, bool paged);
    ::llvm::LogicalResult verifyAttributes();
    /// Dimension sizes (ShapedType::kDynamic when not static).
    int64_t getNumQHeads();
    int64_t getNumKVHeads();
    int64_t getHeadDim();
    int64_t getHeadDimV();
  }];
}

//===----------------------------------------------------------------------===//
// CombineOp
//===----------------------------------------------------------------------===//

def FlashAttn_CombineOp : FlashAttn_Op<"combine", [
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Merge split-KV partial attention results";
  let description = [{
    Merges `num_splits` partial results of one attention, each computed over a
    disjoint key range, into the final output (FlashAttention's split-KV
    "flash-decoding" combine; Dao et al., 2023):

    ```
    lse = log(sum_s exp(lse_s))
    out = sum_s exp(lse_s - lse) * out_s
    ```

    Splits with `lse_s = -inf` (no allowed key) weigh 0; when every split is
    empty, `out = 0` and `lse = -inf`, never NaN.

    `partial_out` is f32 `[num_splits] ++ shape(out)`; `partial_lse` is f32
    `[num_splits] ++ shape(lse)`. `out` (f16, bf16 or f32) is `[B, Sq, Hq, Dv]`
    with lse `[B, Hq, Sq]`, or packed `[Tq, Hq, Dv]` with lse `[Hq, Tq]`; the
    `lse` output is optional. Destination-passing style like
    `flashattn.attention`.

    Example:

    ```mlir
    %o, %l = flashattn.combine
        ins(%os, %ls : tensor<4x16x1x32x128xf32>, tensor<4x16x32x1xf32>)
        outs(%out, %lse : tensor<16x1x32x128xbf16>, tensor<16x32x1xf32>)
        -> tensor<16x1x32x128xbf16>, tensor<16x32x1xf32>
    ```
  }];

  let arguments = (ins
    FlashAttn_Shaped:$partial_out,
    FlashAttn_Shaped:$partial_lse,
    Variadic<FlashAttn_Shaped>:$outs
  );
  let results = (outs Variadic<AnyRankedTensor>:$results);

  let assemblyFormat = [{
    `ins` `(` $partial_out `,` $partial_lse `:` type($partial_out) `,`
          type($partial_lse) `)`
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
    (`->` type($results)^)?
  }];

  let hasVerifier = 1;

  let extraClassDeclaration = [{
    ::mlir::Value getOut() { return getOuts()[0]; }
    ::mlir::Value getLse() {
      return getOuts().size() > 1 ? getOuts()[1] : ::mlir::Value();
    }
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getOutsMutable();
    }
  }];
}

//===----------------------------------------------------------------------===//
// YieldOp
//===----------------------------------------------------------------------===//

def FlashAttn_YieldOp : FlashAttn_Op<"yield", [
    Pure, Terminator, ReturnLike,
    ParentOneOf<["AttentionOp", "TileMapOp"]>]> {
  let summary = "Yield the value of a score, mask or tile_map region";
  let description = [{
    Terminates the `score` region (one f32) and the `mask` region (one i1) of
    `flashattn.attention`, and the body of `flashattn.tile_map` (one f32).

    ```mlir
    flashattn.yield %keep : i1
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}


//===----------------------------------------------------------------------===//
// Tile-level ops
//
// The contract between flashattn-tile and the target conversions: the loop
// bodies of the tiled online softmax (docs/ARCHITECTURE.md) operate on f32
// scratch tiles with static shapes (M = block_m query rows, N = block_n keys,
// D = head_dim, Dv = head_dim_v) and on 2-D [rows, D] views of q/k/v/out.
// Scores are kept in the base-2 domain (s * log2(e)) so that the softmax uses
// exp2 (FlashAttention-2, arXiv 2307.08691, section 3.1).
//===----------------------------------------------------------------------===//

def FlashAttn_F32Tile2D : MemRefRankOf<[F32], [2]>;
def FlashAttn_F32Tile1D : MemRefRankOf<[F32], [1]>;

def FlashAttn_TileInitOp : FlashAttn_Op<"tile_init"> {
  let summary = "Reset the online-softmax state of a tile";
  let description = [{
    Sets the row maxima `m` [M] to -inf, the row sums `l` [M] to 0 and the
    accumulator `acc` [M, Dv] to 0.

    ```mlir
    flashattn.tile_init %m, %l, %acc : memref<64xf32>, memref<64xf32>, memref<64x128xf32>
    ```
  }];
  let arguments = (ins Arg<FlashAttn_F32Tile1D, "", [MemWrite]>:$m,
                       Arg<FlashAttn_F32Tile1D, "", [MemWrite]>:$l,
                       Arg<FlashAttn_F32Tile2D, "", [MemWrite]>:$acc);
  let assemblyFormat = [{
    $m `,` $l `,` $acc attr-dict `:` type($m) `,` type($l) `,` type($acc)
  }];
  let hasVerifier = 1;
}

def FlashAttn_TileLoadOp : FlashAttn_Op<"tile_load"> {
  let summary = "Load rows of a 2-D view into an f32 tile";
  let description = [{
    Copies rows `row0 .. row0 + rows - 1` of `source` ([R, D], f16, bf16
    or f32, unit inner stride) into rows `0 .. rows - 1` of `tile`
    ([T, D] f32), converting to f32, and writes zeros into rows
    `rows .. T - 1`. `rows` must be at most T; rows past the view are never
    read.

    A 3-D `source` [R, G, D] is packed (pack_gqa: the G query heads of a kv
    head share the tile's rows): its row `r` is `source[r / G, r % G, :]`,
    the rows running over R x G (FlashAttention-3's packed order).

    With `async` the op only starts the copy: `tile` holds the rows (and
    the zeros) once a `flashattn.tile_wait` on it returns, and until then
    its contents are undefined. A target may copy at once (the host does).

    ```mlir
    flashattn.tile_load %kv[%n0] rows %n into %kt
        : memref<?x128xbf16, strided<[1024, 1], offset: ?>> into memref<64x128xf32>
    ```
  }];
  let arguments = (ins Arg<AnyStridedMemRef, "", [MemRead]>:$source,
                       Index:$row0, Index:$rows,
                       Arg<FlashAttn_F32Tile2D, "", [MemWrite]>:$tile,
                       UnitAttr:$async);
  let assemblyFormat = [{
    (`async` $async^)? $source `[` $row0 `]` `rows` $rows `into` $tile attr-dict `:`
    type($source) `into` type($tile)
  }];
  let hasVerifier = 1;
}

def FlashAttn_TileLoadPagedOp : FlashAttn_Op<"tile_load_paged"> {
  let summary = "Gather rows of a paged KV cache into an f32 tile";
  let description = [{
    `pool` is a paged cache [num_pages, page_size, Hkv, D]; `pages` the 1-D
    row of `block_table` of one sequence. Row r of the sequence lives in page
    `pages[r / page_size]`, slot `r % page_size`. Copies rows
    `row0 .. row0 + rows - 1` of kv head `head` into rows `0 .. rows - 1` of
    `tile` ([T, D] f32) and zeros the rest. `async` as for
    `flashattn.tile_load`.

    With `heads` = H > 1 (pack_gqa's kv heads per key block over small
    pages) the tile holds kv heads `head .. head + H - 1` of each row,
    heads fastest: row r of kv head `head + h` is tile row `r H + h`, the
    rows from `rows H` on zeros (T a multiple of H, `rows` at most T / H).

    ```mlir
    flashattn.tile_load_paged %kcache[%pages, %g, %n0] rows %n into %kt
        : memref<512x16x8x128xf16>, memref<64xi32, strided<[1], offset: ?>>
          into memref<64x128xf32>
    ```
  }];
  let arguments = (ins Arg<AnyStridedMemRef, "", [MemRead]>:$pool,
                       Arg<MemRefRankOf<[I32], [1]>, "", [MemRead]>:$pages,
                       Index:$head, Index:$row0, Index:$rows,
                       Arg<FlashAttn_F32Tile2D, "", [MemWrite]>:$tile,
                       UnitAttr:$async,
                       DefaultValuedAttr<I64Attr, "1">:$heads);
  let assemblyFormat = [{
    (`async` $async^)? $pool `[` $pages `,` $head `,` $row0 `]` `rows` $rows `into` $tile
    attr-dict `:` type($pool) `,` type($pages) `into` type($tile)
  }];
  let hasVerifier = 1;
}

def FlashAttn_TileWaitOp : FlashAttn_Op<"tile_wait"> {
  let summary = "Wait for the async load into a tile";
  let description = [{
    Returns once the last `async` `flashattn.tile_load` or
    `flashattn.tile_load_paged` into `tile` ([T, D] f32) has landed: the
    load's rows hold the copied rows and the rest are zero, `rows` being
    the load's (`rows heads` tile rows for a tile_load_paged of several
    heads). Every async load into a tile is waited for
    once, in the order of the loads into it. On sm_90a the wait is on the
    tile's mbarrier (`mbarrier.try_wait.parity`, PTX ISA 9.7.13.15.16);
    a target that loads at once has nothing to wait for.

    `flashattn-sm90-pipeline-kv` builds it: the load of key block n + 1
    starts before the key block n is computed and is waited for where the
    load stood.

    ```mlir
    flashattn.tile_load async %kv[%n1] rows %r1 into %slot1
        : memref<?x128xbf16, strided<[1024, 1], offset: ?>>
          into memref<64x128xf32, strided<[128, 1], offset: ?>>
    flashattn.tile_wait %slot0 rows %r0 : memref<64x128xf32, strided<[128, 1], offset: ?>>
    ```
  }];
  let arguments = (ins Arg<FlashAttn_F32Tile2D, "", [MemRead, MemWrite]>:$tile,
                       Index:$rows);
  let assemblyFormat = [{
    $tile `rows` $rows attr-dict `:` type($tile)
  }];
  let hasVerifier = 1;
}

def FlashAttn_TileReleaseOp : FlashAttn_Op<"tile_release"> {
  let summary = "Hand a loaded tile back to its loads";
  let description = [{
    The reads of `tile` ([T, D] f32) since its last `flashattn.tile_wait`
    are over: the next `async` load into it may overwrite it. In a
    warp-specialized kernel (`flashattn.warp_specialize`) the consumers
    release each tile they waited for, once, in the order of their waits,
    and the producer's next load into the tile starts after the release.
    On sm_90a it is an arrive on the tile's empty mbarrier
    (`mbarrier.arrive`, PTX ISA 9.7.13.15.13), which the producer waits on
    before its copy; a target whose loads copy at once has nothing to do.

    `flashattn-sm90-warp-specialize` builds it: K after its block's
    `tile_qk`, V after its `tile_pv`, Q after the key-block loop.

    ```mlir
    flashattn.tile_wait %kslot rows %r : memref<64x128xf32, strided<[128, 1], offset: ?>>
    flashattn.tile_qk %qt, %kslot into %st {scale = 0.125 : f32}
        : memref<64x128xf32>, memref<64x128xf32, strided<[128, 1], offset: ?>>
          into memref<64x64xf32>
    flashattn.tile_release %kslot : memref<64x128xf32, strided<[128, 1], offset: ?>>
    ```
  }];
  let arguments = (ins Arg<FlashAttn_F32Tile2D, "", [MemRead, MemWrite]>:$tile);
  let assemblyFormat = [{
    $tile attr-dict `:` type($tile)
  }];
}

def FlashAttn_TileQKOp : FlashAttn_Op<"tile_qk"> {
  let summary = "S = scale * Q K^T on tiles";
  let description = [{
    `s[i, j] = scale * sum_d q[i, d] * k[j, d]` for q [M, D], k [N, D],
    s [M, N], all f32. On sm_90a this is the first wgmma (SS, K-major B).

    ```mlir
    flashattn.tile_qk %qt, %kt into %s {scale = 0.127 : f32}
        : memref<64x128xf32>, memref<64x128xf32> into memref<64x64xf32>
    ```
  }];
  let arguments = (ins Arg<FlashAttn_F32Tile2D, "", [MemRead]>:$q,
                       Arg<FlashAttn_F32Tile2D, "", [MemRead]>:$k,
                       Arg<FlashAttn_F32Tile2D, "", [MemWrite]>:$s,
                       F32Attr:$scale);
  let assemblyFormat = [{
    $q `,` $k `into` $s attr-dict `:` type($q) `,` type($k) `into` type($s)
  }];
  let hasVerifier = 1;
}

def FlashAttn_TileMapOp : FlashAttn_Op<"tile_map", [RecursiveMemoryEffects]> {
  let summary = "Rewrite each score of a tile by a region";
  let description = [{
    For every row `i` in [0, `rows`) and column `j` in [0, `cols`) of the
    f32 tile `s` [M, N]: `s[i, j] = body(s[i, j], i, j)`; the other
    elements keep their values. `i` and `j` are positions inside the tile
    (the tiler adds the tile's first query and key positions). The body is
    one block with arguments (f32, index, index) ending in one
    `flashattn.yield` of f32; it may use values defined above the op.
    flashattn-tile builds the score modifiers (softcap, ALiBi, the score
    region), the causal / window / sequence-end mask and the mask region
    as tile_maps, so each target distributes them its own way: the host
    as loops over rows and columns, sm_90a over the accumulator fragment
    each thread holds. Ops of the body that depend on neither the score
    nor `j` and are pure are evaluated once per row (`splitRowOps`).
    Constant `rows` and `cols` must lie in the tile.

    ```mlir
    flashattn.tile_map %s rows %c64 cols %c64 {
    ^bb0(%x: f32, %i: index, %j: index):
      %row = arith.addi %m0, %i : index
      %end = flashattn.key_end row %row keys %sk offset %c {causal = #flashattn.causal<bottom_right>} : index
      %key = arith.addi %n0, %j : index
      %ok = arith.cmpi slt, %key, %end : index
      %y = arith.select %ok, %x, %ninf : f32
      flashattn.yield %y : f32
    } : memref<64x64xf32>
    ```
  }];
  let arguments = (ins Arg<FlashAttn_F32Tile2D, "", [MemRead, MemWrite]>:$s,
                       Index:$rows, Index:$cols);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $s `rows` $rows `cols` $cols $body attr-dict `:` type($s)
  }];
  let extraClassDeclaration = [{
    /// The body's ops in order, split into those evaluated once per row
    /// (pure, no region, depending on neither the score nor j) and those
    /// evaluated per element.
    void splitRowOps(::llvm::SmallVectorImpl<::mlir::Operation *> &rowOps,
                     ::llvm::SmallVectorImpl<::mlir::Operation *> &elementOps);
  }];
  let hasVerifier = 1;
}

def FlashAttn_TileSoftmaxOp : FlashAttn_Op<"tile_softmax"> {
  let summary = "Online-softmax update of one key block (base 2)";
  let description = [{
    For each row i of the scores `s` [M, N] (base-2 domain, -inf = masked),
    with running max `m` [M], running sum `l` [M] and accumulator `acc`
    [M, Dv]:

    ```
    m_new  = max(m[i], max_j s[i, j])
    m_use  = m_new == -inf ? 0 : m_new        (no -inf - -inf = NaN)
    p[i,j] = exp2(s[i, j] - m_use)            (written back into s)
    alpha  = exp2(m[i] - m_use)
    l[i]   = l[i] * alpha + sum_j p[i, j];  acc[i, :] *= alpha;  m[i] = m_new
    ```

    (Milakov & Gimelshein 2018; FlashAttention-2, arXiv 2307.08691, alg. 1.)

    ```mlir
    flashattn.tile_softmax %s, %m, %l, %acc
        : memref<64x64xf32>, memref<64xf32>, memref<64xf32>, memref<64x128xf32>
    ```
  }];
  let arguments = (ins Arg<FlashAttn_F32Tile2D, "", [MemRead, MemWrite]>:$s,
                       Arg<FlashAttn_F32Tile1D, "", [MemRead, MemWrite]>:$m,
                       Arg<FlashAttn_F32Tile1D, "", [MemRead, MemWrite]>:$l,
                       Arg<FlashAttn_F32Tile2D, "", [MemRead, MemWrite]>:$acc);
  let assemblyFormat = [{
    $s `,` $m `,` $l `,` $acc attr-dict `:` type($s) `,` type($m) `,`
    type($l) `,` type($acc)
  }];
  let hasVerifier = 1;
}

def FlashAttn_TilePVOp : FlashAttn_Op<"tile_pv"> {
  let summary = "acc += P V on tiles";
  let description = [{
    `acc[i, d] += sum_j p[i, j] * v[j, d]` for p [M, N], v [N, Dv],
    acc [M, Dv], all f32. On sm_90a this is the second wgmma (P in
    registers, V MN-major).

    ```mlir
    flashattn.tile_pv %p, %vt into %acc
        : memref<64x64xf32>, memref<64x128xf32> into memref<64x128xf32>
    ```
  }];
  let arguments = (ins Arg<FlashAttn_F32Tile2D, "", [MemRead]>:$p,
                       Arg<FlashAttn_F32Tile2D, "", [MemRead]>:$v,
                       Arg<FlashAttn_F32Tile2D, "", [MemRead, MemWrite]>:$acc);
  let assemblyFormat = [{
    $p `,` $v `into` $acc attr-dict `:` type($p) `,` type($v) `into`
    type($acc)
  }];
  let hasVerifier = 1;
}

def FlashAttn_TileStoreOp : FlashAttn_Op<"tile_store"> {
  let summary = "Normalize a tile and store out (and lse)";
  let description = [{
    For rows r < `rows`: `out[r, :] = acc[r, :] / l[r]` converted to out's
    element type, and `lse[r] = m[r] * ln(2) + ln(l[r])` (m in the base-2
    domain); a row with `l[r] == 0` (no allowed key) gets `out = 0` and
    `lse = -inf`. `out` is a 2-D view [R, Dv] with unit inner stride, `lse`
    an optional 1-D f32 view [R]. Packed (pack_gqa, as
    for `flashattn.tile_load`): `out` [R, G, Dv] and `lse` [G, R], row `r`
    being `out[r / G, r % G, :]` and `lse[r % G, r / G]`.

    ```mlir
    flashattn.tile_store %acc, %m, %l into %ov rows %n lse %lv
        : memref<64x128xf32>, memref<64xf32>, memref<64xf32>
          into memref<?x128xbf16, strided<[4096, 1], offset: ?>>,
               memref<?xf32, strided<[1], offset: ?>>
    ```
  }];
  let arguments = (ins Arg<FlashAttn_F32Tile2D, "", [MemRead]>:$acc,
                       Arg<FlashAttn_F32Tile1D, "", [MemRead]>:$m,
                       Arg<FlashAttn_F32Tile1D, "", [MemRead]>:$l,
                       Arg<AnyStridedMemRef, "", [MemWrite]>:$out,
                       Index:$rows,
                       Arg<Optional<AnyStridedMemRef>, "", [MemWrite]>:$lse);
  let assemblyFormat = [{
    $acc `,` $m `,` $l `into` $out `rows` $rows (`lse` $lse^)? attr-dict `:`
    type($acc) `,` type($m) `,` type($l) `into` type($out)
    (`,` type($lse)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Key ranges
//
// Which keys a query row sees (docs/SEMANTICS.md, "Masks"), stated once for
// every target: flashattn-tile builds its key-block loops and boundary masks
// from these ops, the sm90 kernels their tile ranges, per-consumer ranges
// and fragment masks; flashattn-lower-key-ranges expands them into arith.
// Operands are query and key positions inside a sequence, all of one
// integer type (index on the host, i32 in the sm90 kernels); `offset` is
// seqlen_k - seqlen_q, the shift of bottom-right alignment.
//===----------------------------------------------------------------------===//

def FlashAttn_KeyEndOp : FlashAttn_Op<"key_end",
    [Pure, AllTypesMatch<["row", "seqlen_k", "offset", "result"]>]> {
  let summary = "One past the last key a query row sees";
  let description = [{
    For query row `row` (a position in its sequence), the key limit `lim`:
    the row sees keys `j < lim` (and `j >= key_begin` with a left window).

    ```
    lim = min(seqlen_k,
              row + 1            (causal = top_left),
              row + offset + 1   (causal = bottom_right),
              row + offset + window_right + 1   (window_right >= 0))
    ```

    Nothing clamps `lim` at 0: a row before every key has `lim <= 0`.

    ```mlir
    %lim = flashattn.key_end row %i keys %sk offset %c
        {causal = #flashattn.causal<bottom_right>} : index
    ```
  }];
  let arguments = (ins AnySignlessIntegerOrIndex:$row,
                       AnySignlessIntegerOrIndex:$seqlen_k,
                       AnySignlessIntegerOrIndex:$offset,
                       DefaultValuedAttr<FlashAttn_CausalAttr,
                                         "CausalKind::none">:$causal,
                       DefaultValuedAttr<I64Attr, "-1">:$window_right);
  let results = (outs AnySignlessIntegerOrIndex:$result);
  let assemblyFormat = [{
    `row` $row `keys` $seqlen_k `offset` $offset attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def FlashAttn_KeyBeginOp : FlashAttn_Op<"key_begin",
    [Pure, AllTypesMatch<["row", "offset", "result"]>]> {
  let summary = "The first key a query row sees under a left window";
  let description = [{
    `row + offset - window_left`: with a left window of `window_left >= 0`
    keys, query row `row` sees keys `j >= key_begin`. Not clamped at 0.

    ```mlir
    %lo = flashattn.key_begin row %i offset %c {window_left = 128} : i32
    ```
  }];
  let arguments = (ins AnySignlessIntegerOrIndex:$row,
                       AnySignlessIntegerOrIndex:$offset,
                       I64Attr:$window_left);
  let results = (outs AnySignlessIntegerOrIndex:$result);
  let assemblyFormat = [{
    `row` $row `offset` $offset attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def FlashAttn_KeyBlocksOp : FlashAttn_Op<"key_blocks",
    [Pure, AttrSizedOperandSegments,
     AllTypesMatch<["row_begin", "row_end", "seqlen_k", "offset", "begin",
                    "end"]>,
     OptionalTypesMatchWith<"split has the positions' type", "begin",
                            "split", "$_self">,
     OptionalTypesMatchWith<"num_splits has the positions' type", "begin",
                            "num_splits", "$_self">]> {
  let summary = "The key blocks a tile of query rows sees";
  let description = [{
    For the query rows `[row_begin, row_end)` of a tile, the key blocks of
    `block_n` keys that hold a key one of them sees: `[begin, end)`, empty
    when `end <= begin` (nothing clamps `end` above `begin`).

    ```
    n_max = max(0, min(seqlen_k,
                       row_end            (causal = top_left),
                       row_end + offset   (causal = bottom_right),
                       row_end + offset + window_right   (window_right >= 0)))
    n_min = max(0, row_begin + offset - window_left)   (window_left >= 0; else 0)
    begin = n_min / block_n,  end = ceil(n_max / block_n)
    ```

    With `split` and `num_splits` (split-KV), the range is intersected with
    the split's blocks `[split * per, (split + 1) * per)`, `per =
    ceil(ceil(seqlen_k / block_n) / num_splits)`.

    ```mlir
    %nb0, %nb1 = flashattn.key_blocks rows [%m0, %m1) keys %sk offset %c
        split %s of %ns {block_n = 128, causal = #flashattn.causal<bottom_right>}
        : index
    ```
  }];
  let arguments = (ins AnySignlessIntegerOrIndex:$row_begin,
                       AnySignlessIntegerOrIndex:$row_end,
                       AnySignlessIntegerOrIndex:$seqlen_k,
                       AnySignlessIntegerOrIndex:$offset,
                       Optional<AnySignlessIntegerOrIndex>:$split,
                       Optional<AnySignlessIntegerOrIndex>:$num_splits,
                       I64Attr:$block_n,
                       DefaultValuedAttr<FlashAttn_CausalAttr,
                                         "CausalKind::none">:$causal,
                       DefaultValuedAttr<I64Attr, "-1">:$window_left,
                       DefaultValuedAttr<I64Attr, "-1">:$window_right);
  let results = (outs AnySignlessIntegerOrIndex:$begin,
                      AnySignlessIntegerOrIndex:$end);
  let assemblyFormat = [{
    `rows` `[` $row_begin `,` $row_end `)` `keys` $seqlen_k `offset` $offset
    (`split` $split^ `of` $num_splits)? attr-dict `:` type($begin)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Kernel structure
//===----------------------------------------------------------------------===//

def FlashAttn_WarpSpecializeOp : FlashAttn_Op<"warp_specialize",
    [RecursiveMemoryEffects, SingleBlock, NoTerminator]> {
  let summary = "Split a CTA into a producer warpgroup and consumer warpgroups";
  let description = [{
    Warp specialization (FlashAttention-3, arXiv 2407.08608, section 3.1):
    the threads of warpgroup 0 (`tid / 128 == 0`, `tid` the thread index in
    the CTA) run the `producer` region, every other warpgroup the
    `consumers` region. Each side first sets its register budget with
    `setmaxnreg` (PTX ISA, miscellaneous instructions, `setmaxnreg`; sm_90a):
    the producer lowers its own to
    `producer_regs`, the consumers raise theirs to `consumer_regs`; 0
    keeps the launch's allocation. A budget is a multiple of 8 in [24,
    256]. The regions use values from above and yield nothing;
    `flashattn-lower-warp-specialize` turns the op into an `scf.if` on the
    warpgroup index.

    ```mlir
    flashattn.warp_specialize %tid {consumer_regs = 232 : i32, producer_regs = 40 : i32} producer {
      nvvm.barrier0
    } consumers {
      nvvm.barrier0
    }
    ```
  }];
  let arguments = (ins I32:$tid,
                       DefaultValuedAttr<I32Attr, "0">:$producer_regs,
                       DefaultValuedAttr<I32Attr, "0">:$consumer_regs);
  let regions = (region SizedRegion<1>:$producer, SizedRegion<1>:$consumers);
  let assemblyFormat = [{
    $tid attr-dict `producer` $producer `consumers` $consumers
  }];
  let hasVerifier = 1;
}

def FlashAttn_WgmmaRsOp : FlashAttn_Op<"wgmma_rs", [AllTypesMatch<["acc", "result"]>]> {
  let summary = "One k16 step of a warpgroup MMA with A in registers";
  let description = [{
    `acc += A B` for one warpgroup (PTX ISA 9.7.15.5.2, `wgmma.mma_async`
    with A in registers, `.m64nNk16.f32`): `acc` is this thread's fragment
    of the 64 x N f32 accumulator (an `!llvm.struct` of N / 2 f32), `a`
    its four 32-bit registers of A (pairs of f16 / bf16), `b` the shared
    memory descriptor of B (K x N, transposed: MN-major), `element` the
    type of A and B. Issued asynchronously like the other wgmma ops: it
    goes between `nvvm.wgmma.fence.aligned` and
    `nvvm.wgmma.commit.group.sync.aligned`. MLIR's
    `nvvm.wgmma.mma_async` takes A only from shared memory;
    `convert-flashattn-sm90-to-nvvm` lowers this op to inline PTX.

    ```mlir
    %o1 = flashattn.wgmma_rs %o0, [%a0, %a1, %a2, %a3], %b {element = bf16, n = 64 : i64}
        : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>
    ```
  }];
  let arguments = (ins AnyType:$acc, Variadic<I32>:$a, I64:$b, I64Attr:$n,
                       TypeAttr:$element);
  let results = (outs AnyType:$result);
  let assemblyFormat = [{
    $acc `,` `[` $a `]` `,` $b attr-dict `:` type($acc)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Kernel instructions MLIR 22's NVVM dialect lacks
//===----------------------------------------------------------------------===//

def FlashAttn_L2PolicyOp : FlashAttn_Op<"l2_policy"> {
  let summary = "An L2 cache eviction policy for the loads that follow";
  let description = [{
    A 64-bit cache policy giving every access it is passed to (a TMA
    load's `l2_cache_hint`) the L2 eviction priority `priority`
    (`evict_first` or `evict_last`) over the whole access (fraction 1.0):
    `createpolicy.fractional.L2::<priority>.b64` (PTX ISA, data movement
    instructions, `createpolicy`; sm_80+). NVVM has no op for it;
    `convert-flashattn-sm90-to-nvvm` lowers it to inline PTX. The op has
    unknown side effects on purpose: it is made again where each load is
    issued, as a 64-bit value kept across a loop costs the producer's few
    registers.

    ```mlir
    %policy = flashattn.l2_policy evict_first
    ```
  }];
  let arguments = (ins FlashAttn_L2PriorityAttr:$priority);
  let results = (outs I64:$policy);
  let assemblyFormat = "$priority attr-dict";
  let hasVerifier = 1;
}

def FlashAttn_OpaqueOp : FlashAttn_Op<"opaque", [AllTypesMatch<["input", "result"]>]> {
  let summary = "A value the optimizers cannot see through";
  let description = [{
    `result` is `input`, copied by a `mov.b32` (PTX ISA, data movement
    instructions, `mov`) that LLVM neither hoists, merges nor folds: an
    optimization barrier that survives to PTX, which MLIR lacks. The
    kernels use it where recomputing a value in place is cheaper than the
    register a hoisted copy would hold (the low half of a wgmma
    descriptor). `convert-flashattn-sm90-to-nvvm` lowers it to inline PTX.

    ```mlir
    %lo = flashattn.opaque %desc_lo : i32
    ```
  }];
  let arguments = (ins I32:$input);
  let results = (outs I32:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def FlashAttn_MBarrierArriveIfOp : FlashAttn_Op<"mbarrier_arrive_if"> {
  let summary = "An mbarrier arrive by the threads whose predicate is set";
  let description = [{
    The threads with `pred` true arrive once on the mbarrier at `barrier`
    (shared memory), the others do nothing:
    `@p mbarrier.arrive.shared.b64` (PTX ISA, parallel synchronization
    instructions, `mbarrier.arrive`), a predicated instruction instead of a
    branch around `nvvm.mbarrier.arrive`, which takes no predicate.
    `convert-flashattn-sm90-to-nvvm` lowers it to inline PTX.

    ```mlir
    flashattn.mbarrier_arrive_if %last_use, %q_empty : !llvm.ptr<3>
    ```
  }];
  let arguments = (ins I1:$pred, LLVM_PointerInAddressSpace<3>:$barrier);
  let assemblyFormat = "$pred `,` $barrier attr-dict `:` qualified(type($barrier))";
}

def FlashAttn_AtomicAddAcqRelOp : FlashAttn_Op<"atomic_add_acq_rel"> {
  let summary = "A device-scope acquire-release atomic add on global memory";
  let description = [{
    Adds `value` to the u32 at `address` (global memory) and returns the
    old value, as one acquire-release operation at GPU scope:
    `atom.acq_rel.gpu.global.add.u32` (PTX ISA, parallel synchronization
    instructions, `atom`; the memory consistency model's release and
    acquire patterns). The work unit that finishes a tile's last split
    reads the other units' partials after it: the release publishes this
    unit's, the acquire makes the others' visible. LLVM 22's NVPTX back
    end prints an `atomicrmw ... syncscope("device") acq_rel` as a plain
    `atom.global.add`, dropping the ordering;
    `convert-flashattn-sm90-to-nvvm` lowers the op to inline PTX.

    ```mlir
    %old = flashattn.atomic_add_acq_rel %counter, 1 : !llvm.ptr<1>
    ```
  }];
  let arguments = (ins LLVM_PointerInAddressSpace<1>:$address, I32Attr:$value);
  let results = (outs I32:$old);
  let assemblyFormat = "$address `,` $value attr-dict `:` qualified(type($address))";
}

def FlashAttn_MergeSplitsOp : FlashAttn_Op<"merge_splits", [AttrSizedOperandSegments]> {
  let summary = "The split-KV merge of one output element";
  let description = [{
    Merges element `partial_out[s, out_indices...]` of the `S` splits (`S` =
    dimension 0 of `partial_lse`: at least 1 where static, and with none
    at run time the element is empty, as below), weighted by their
    `partial_lse[s, lse_indices...]`, into one element of the final out
    and its row's lse (the formula of `flashattn.combine`):

    ```
    m = max_s lse_s,  w_s = exp(lse_s - m)
    value = sum_s w_s out_s / sum_s w_s,  lse = m + log(sum_s w_s)
    ```

    A split with `lse_s = -inf` weighs 0; when every split is empty, value
    is 0 and lse is -inf, never NaN. The sm_90a lowering
    (`flashattn-sm90-warpgroup`) reads the splits 16 at a time and merges
    them online, rescaling the running sums by `exp(m_old - m_new)` when
    the maximum grows (Milakov & Gimelshein 2018, "Online normalizer
    calculation for softmax"), so that a merge waits one memory round trip
    per 16 splits. Both memrefs are f32 with identity layouts; the
    partial results' first dimension is the split.

    `flashattn-tile` builds the sm90 combine kernel from it, one element a
    thread:

    ```mlir
    %value, %lse = flashattn.merge_splits %partial_out[%b, %i, %h, %d],
        %partial_lse[%b, %h, %i] : memref<?x?x?x8x64xf32>, memref<?x?x8x?xf32>
    ```
  }];
  let arguments = (ins
    Arg<MemRefRankOf<[F32], [2, 3, 4, 5]>, "", [MemRead]>:$partial_out,
    Variadic<Index>:$out_indices,
    Arg<MemRefRankOf<[F32], [2, 3, 4, 5]>, "", [MemRead]>:$partial_lse,
    Variadic<Index>:$lse_indices
  );
  let results = (outs F32:$value, F32:$lse);
  let assemblyFormat = [{
    $partial_out `[` $out_indices `]` `,` $partial_lse `[` $lse_indices `]` attr-dict `:`
    type($partial_out) `,` type($partial_lse)
  }];
  let hasVerifier = 1;
}

#endif // FLASHATTN_OPS
