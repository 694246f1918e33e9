//===- FlashAttnAttrs.td - FlashAttn attributes ------------*- tablegen -*-===//
//
// Enumerations and the typed plan attribute of the flashattn dialect.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_ATTRS
#define FLASHATTN_ATTRS

include "flashattn/Dialect/FlashAttn/IR/FlashAttnDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enumerations
//===----------------------------------------------------------------------===//

def FlashAttn_CausalNone : I32EnumAttrCase<"none", 0>;
def FlashAttn_CausalTopLeft : I32EnumAttrCase<"top_left", 1>;
def FlashAttn_CausalBottomRight : I32EnumAttrCase<"bottom_right", 2>;

def FlashAttn_CausalKind : I32EnumAttr<"CausalKind",
    "causal mask alignment",
    [FlashAttn_CausalNone, FlashAttn_CausalTopLeft,
     FlashAttn_CausalBottomRight]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::flashattn";
}

def FlashAttn_CausalAttr : EnumAttr<FlashAttn_Dialect, FlashAttn_CausalKind,
                                    "causal"> {
  let summary = "causal mask alignment: none, top_left or bottom_right";
  let description = [{
    `top_left` keeps key j for query row i when j <= i; `bottom_right` when
    j <= i + Sk - Sq (FlashAttention 2.1+ convention: the last query row sees
    the last key). `none` applies no causal limit.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def FlashAttn_TargetHost : I32EnumAttrCase<"host", 0>;
def FlashAttn_TargetSm90 : I32EnumAttrCase<"sm90", 1>;

def FlashAttn_Target : I32EnumAttr<"Target", "code generation target",
    [FlashAttn_TargetHost, FlashAttn_TargetSm90]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::flashattn";
}

def FlashAttn_TargetAttr : EnumAttr<FlashAttn_Dialect, FlashAttn_Target,
                                    "target"> {
  let summary = "code generation target: host or sm90";
  let assemblyFormat = "`<` $value `>`";
}

def FlashAttn_ScheduleStatic : I32EnumAttrCase<"static_", 0, "static">;
def FlashAttn_ScheduleLpt : I32EnumAttrCase<"lpt", 1>;

def FlashAttn_Schedule : I32EnumAttr<"Schedule", "tile schedule",
    [FlashAttn_ScheduleStatic, FlashAttn_ScheduleLpt]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::flashattn";
}

def FlashAttn_ScheduleAttr : EnumAttr<FlashAttn_Dialect, FlashAttn_Schedule,
                                      "schedule"> {
  let summary = "tile schedule: static striding or longest-processing-time-first";
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// sm90 code generation
//===----------------------------------------------------------------------===//

def FlashAttn_L2Normal : I32EnumAttrCase<"normal", 0>;
def FlashAttn_L2EvictFirst : I32EnumAttrCase<"evict_first", 1>;
def FlashAttn_L2EvictLast : I32EnumAttrCase<"evict_last", 2>;

def FlashAttn_L2Hint : I32EnumAttr<"L2Priority", "L2 eviction priority of a TMA load",
    [FlashAttn_L2Normal, FlashAttn_L2EvictFirst, FlashAttn_L2EvictLast]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::flashattn";
}

def FlashAttn_L2PriorityAttr : EnumAttr<FlashAttn_Dialect, FlashAttn_L2Hint,
                                       "l2_priority">;

def FlashAttn_Sm90CodegenAttr : AttrDef<FlashAttn_Dialect, "Sm90Codegen"> {
  let mnemonic = "sm90_codegen";
  let summary = "the code-generation choices of one sm_90a attention kernel";
  let description = [{
    Chosen by `flashattn-plan{target=sm90}` (each but
    `reduce_chains` overridable by a pass option of the same name) and implemented by the passes that build the
    sm90 kernels (`flashattn-tile`, `flashattn-sm90-pipeline-kv`,
    `flashattn-sm90-warp-specialize`, `flashattn-sm90-warpgroup`):

    - `scheduler_barrier`: the consumer warpgroups take turns issuing their
      GEMMs (FlashAttention-3's ping-pong, arXiv 2407.08608 section 3.1);
    - `tma_store`: O leaves through shared memory and a TMA store;
    - `early_q_release`: Q's buffer is released after a tile's last S, not
      its last P V (in flashattn-tile's kernel: within the last key block,
      before its softmax; without it, after the key-block loop, before the
      last P V);
    - `conditional_rescale`: the running max moves only when it grows by
      more than 8 (exp2 units), and O is rescaled only in warps where a row
      moved it (FlashAttention-4);
    - `rescale_under_qk`: in the overlapped key-block loop, O's rescale by
      block n - 1's factor runs after S_n is issued, before P_{n-1} V
      (FlashAttention-3's order); the softmax then waits for that P V
      before its exponentials (flashattn-plan's at head_dim 128 with the
      overlap, not in the split-KV form);
    - `reduce_chains`: interleaved chains of a row's max and sum (>= 1);
    - `kv_row_copies`: paged K/V copied row by row with cp.async instead of
      one TMA box per page;
    - `kv_heads_per_block`: kv heads a key block holds (pack_gqa over pages
      smaller than a key block; 1, 2, 4 or 8);
    - `l2_hint_q`, `l2_hint_kv`: the L2 eviction priority of the TMA loads
      (PTX ISA, createpolicy);
    - `warp_specialize`: flashattn-tile's kernel is split into a producer
      warpgroup and the consumers (`flashattn-sm90-warp-specialize`);
    - `intra_wg_overlap`: in flashattn-tile's warp-specialized kernel, key
      block n - 1's P V is issued after block n's Q K^T and runs under
      block n's softmax (FlashAttention-3's intra-warpgroup overlap,
      arXiv 2407.08608 section 3.2);
    - `fused_merge`: in flashattn-tile's split-KV partial kernels, the
      work unit that finishes a tile's last split merges the tile's rows
      from every split's partial results into the final out and lse (a
      counter per tile; the combine kernel is not launched);
    - `predicated_q_release`: with `early_q_release`, in flashattn-tile's
      kernel whose key-block loop is split at the mask's boundary (blocks
      without the mask, then blocks with it), Q's release is in the masked
      loop's last block only, as a predicated arrive (`@p mbarrier.arrive`)
      instead of a branch around one, and after both loops when the
      unmasked one had the tile's last block;
    - `prefetch_next_q`: in flashattn-tile's warp-specialized kernel taking
      its tiles from the launch's counter, Q has two buffers, a tile's in
      the other one than the tile's before: the producer loads the next
      tile's Q as soon as it has issued this tile's last K and V, not after
      the consumers release this tile's Q, but ahead of a tile of more than
      16 key blocks (where it does not fit in shared memory, one buffer);
    - `descending_key_blocks`: flashattn-tile's key-block loop under a
      causal mask or a right window (without a left window) runs from the
      tile's last block down, the masked blocks first (FlashAttention-3's
      order): iteration j computes block begin + end - 1 - j, and a
      warp-specialized consumer releases the blocks past its own rows
      before its first one;
    - `drain_idle_consumers`: in a warp-specialized pack_gqa kernel with
      two or more consumers, a consumer whose 64 rows all lie past its Q
      tile's (decode: a tile holds G rows a query token) computes no key
      block: it waits for and releases every block and takes its scheduler
      turns (FlashAttention-3 and cuDNN run such tiles on one consumer's
      rows).

    Example:

    ```mlir
    #flashattn.sm90_codegen<scheduler_barrier = true, tma_store = true,
                            early_q_release = true, reduce_chains = 4,
                            l2_hint_q = evict_first>
    ```
  }];
  let parameters = (ins
    DefaultValuedParameter<"bool", "false">:$scheduler_barrier,
    DefaultValuedParameter<"bool", "false">:$tma_store,
    DefaultValuedParameter<"bool", "false">:$early_q_release,
    DefaultValuedParameter<"bool", "false">:$conditional_rescale,
    DefaultValuedParameter<"bool", "false">:$rescale_under_qk,
    DefaultValuedParameter<"int64_t", "1">:$reduce_chains,
    DefaultValuedParameter<"bool", "false">:$kv_row_copies,
    DefaultValuedParameter<"int64_t", "1">:$kv_heads_per_block,
    DefaultValuedParameter<"::mlir::flashattn::L2Priority",
                           "::mlir::flashattn::L2Priority::normal">:$l2_hint_q,
    DefaultValuedParameter<"::mlir::flashattn::L2Priority",
                           "::mlir::flashattn::L2Priority::normal">:$l2_hint_kv,
    DefaultValuedParameter<"bool", "false">:$warp_specialize,
    DefaultValuedParameter<"bool", "false">:$intra_wg_overlap,
    DefaultValuedParameter<"bool", "false">:$fused_merge,
    DefaultValuedParameter<"bool", "false">:$predicated_q_release,
    DefaultValuedParameter<"bool", "false">:$prefetch_next_q,
    DefaultValuedParameter<"bool", "false">:$descending_key_blocks,
    DefaultValuedParameter<"bool", "false">:$drain_idle_consumers
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Plan
//===----------------------------------------------------------------------===//

def FlashAttn_PlanAttr : AttrDef<FlashAttn_Dialect, "Plan"> {
  let mnemonic = "plan";
  let summary = "tile sizes, pipeline and schedule chosen for one attention";
  let description = [{
    The decisions of `flashattn-plan{target=...}`, consumed by the tiling and
    the target conversions. Fields:

    - `target`: `host` or `sm90`.
    - `block_m`, `block_n`: query rows per tile and keys per key block
      (positive; at most 4096 on the host, what LLVM compiles in
      reasonable time).
    - `stages`: shared-memory pipeline stages for K/V (>= 1; 1 on the host).
    - `consumers`: consumer warpgroups per CTA on sm90 (1 on the host).
    - `schedule`: `static` (strided persistent loop) or `lpt`
      (longest-processing-time-first, FlashAttention-3's causal/varlen
      scheduler).
    - `num_splits`: resolved split-KV factor (>= 1).
    - `pack_gqa`: whether the query heads sharing a kv head are folded into
      the M dimension of one tile.
    - `sm90` (sm90 plans): the kernel's code-generation choices
      (`#flashattn.sm90_codegen`).

    Example:

    ```mlir
    #flashattn.plan<target = sm90, block_m = 128, block_n = 176, stages = 2,
                    consumers = 2, schedule = static, num_splits = 1,
                    pack_gqa = false>
    ```
  }];
  let parameters = (ins
    EnumParameter<FlashAttn_Target>:$target,
    "int64_t":$block_m,
    "int64_t":$block_n,
    "int64_t":$stages,
    "int64_t":$consumers,
    EnumParameter<FlashAttn_Schedule>:$schedule,
    "int64_t":$num_splits,
    "bool":$pack_gqa,
    OptionalParameter<"::mlir::flashattn::Sm90CodegenAttr">:$sm90
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}


//===----------------------------------------------------------------------===//
// Kernel ABI (the compiler-to-runtime contract of a generated kernel)
//===----------------------------------------------------------------------===//

def FlashAttn_ParamPtr : I32EnumAttrCase<"ptr", 0>;
def FlashAttn_ParamDims : I32EnumAttrCase<"dims", 1>;
def FlashAttn_ParamTma : I32EnumAttrCase<"tma", 2>;
def FlashAttn_ParamTileCounter : I32EnumAttrCase<"tile_counter", 3>;
def FlashAttn_ParamTileTable : I32EnumAttrCase<"tile_table", 4>;
def FlashAttn_ParamTileTableInline : I32EnumAttrCase<"tile_table_inline", 5>;
def FlashAttn_ParamPageTable : I32EnumAttrCase<"page_table", 6>;
def FlashAttn_ParamMergeOut : I32EnumAttrCase<"merge_out", 7>;
def FlashAttn_ParamMergeLse : I32EnumAttrCase<"merge_lse", 8>;
def FlashAttn_ParamMergeCounters : I32EnumAttrCase<"merge_counters", 9>;

def FlashAttn_ParamKind : I32EnumAttr<"ParamKind", "kind of a kernel parameter",
    [FlashAttn_ParamPtr, FlashAttn_ParamDims, FlashAttn_ParamTma,
     FlashAttn_ParamTileCounter, FlashAttn_ParamTileTable,
     FlashAttn_ParamTileTableInline, FlashAttn_ParamPageTable,
     FlashAttn_ParamMergeOut, FlashAttn_ParamMergeLse,
     FlashAttn_ParamMergeCounters]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::flashattn";
}

def FlashAttn_KernelParamAttr : AttrDef<FlashAttn_Dialect, "KernelParam"> {
  let mnemonic = "param";
  let summary = "one parameter (or group of parameters) of a generated kernel";
  let description = [{
    What a launch passes at this position of a kernel's parameter list:

    - `ptr`, `arg = "q"`: the device address of argument `arg` (8 bytes);
    - `dims`, `arg`, `rank`: `rank` int64 values, `arg`'s shape (row-major);
    - `tma`, `arg`, `box`, `swizzle` (bytes: 0, 32, 64 or 128), optional
      `group` (pack_gqa: the head dimension split into heads / group x
      group) and `page_panels` (paged KV, one box a page): one 128-byte
      CUtensorMap of `arg` passed by value (a grid-constant parameter; PTX
      ISA 5.5.8, "Tensor-map"; CUDA driver API cuTensorMapEncodeTiled), box
      innermost first;
    - `tile_counter`: the dynamic scheduler's u32 counter (zero at launch
      when the kernel has more tiles than CTAs);
    - `tile_table`: the device tile table, or null with the table passed
      inline; `tile_table_inline`, `bytes`: the table by value;
    - `page_table`: the page lists (a device block_table or the tile table);
    - `merge_out`, `merge_lse`, `merge_counters`: the fused split-KV merge's
      final out, lse and per-tile counters.

    Example:

    ```mlir
    #flashattn.param<kind = tma, arg = "q", box = [64, 1, 128, 1], swizzle = 128>
    ```
  }];
  let parameters = (ins
    EnumParameter<FlashAttn_ParamKind>:$kind,
    StringRefParameter<"the argument's name", "\"\"">:$arg,
    DefaultValuedParameter<"int64_t", "0">:$rank,
    OptionalParameter<"::mlir::DenseI64ArrayAttr">:$box,
    DefaultValuedParameter<"int64_t", "0">:$swizzle,
    DefaultValuedParameter<"int64_t", "0">:$group,
    DefaultValuedParameter<"bool", "false">:$page_panels,
    DefaultValuedParameter<"int64_t", "0">:$bytes
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// LLVM-level parameters this entry stands for (`rank` for dims, else 1).
    int64_t getNumLLVMParams() const;
  }];
}

def FlashAttn_KernelAbiAttr : AttrDef<FlashAttn_Dialect, "KernelAbi"> {
  let mnemonic = "kernel_abi";
  let summary = "the launch contract of one generated kernel";
  let description = [{
    Set by `flashattn-sm90-warpgroup` on every kernel it emits (the
    discardable attribute `flashattn.abi` of the `llvm.func`) and, keyed by
    entry name, in the op's `#flashattn.sm90_entries`: `threads` per CTA,
    `smem` bytes of dynamic shared memory, and `params`, the kernel's
    parameters in order (`#flashattn.param`). The verifier checks the
    function's signature against it (pointers `!llvm.ptr<1>`, dims `i64`,
    tensor maps and an inline table as byval `!llvm.ptr`). The artifact
    writer serializes it (metadata "abi"); the runtime packs the launch's
    arguments from it.

    Example:

    ```mlir
    #flashattn.kernel_abi<threads = 128, smem = 0, params = [
        #flashattn.param<kind = ptr, arg = "partial_out">,
        #flashattn.param<kind = dims, arg = "partial_out", rank = 5>]>
    ```
  }];
  let parameters = (ins
    "int64_t":$threads,
    "int64_t":$smem,
    "::mlir::ArrayAttr":$params
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def FlashAttn_Sm90EntriesAttr : AttrDef<FlashAttn_Dialect, "Sm90Entries"> {
  let mnemonic = "sm90_entries";
  let summary = "the sm90 kernels generated for one op";
  let description = [{
    Set by `flashattn-tile` on a `flashattn.attention` (and on the
    `flashattn.combine` that reads its partial results) as the attribute
    `flashattn.sm90`, with `abi` added by `flashattn-sm90-warpgroup`: `kernel`, the entry (`@module::@name`); optional
    `dense` (automatic num_splits: the entry without splits), `append` (the
    kv-cache copy kernel launched first), `combine` (the split-KV merge
    kernel); `packed_groups` > 0 when the module also holds the pack_gqa
    twins `<entry>_packed` (Hq / Hkv heads a group), `kv_heads_per_block`
    > 1 when a key block holds that many kv heads (twins `<entry>_kv1` hold
    one); `kv_row_copies` when paged K/V are copied row by row; and `abi`,
    each entry's `#flashattn.kernel_abi` by name.
  }];
  let parameters = (ins
    "::mlir::SymbolRefAttr":$kernel,
    OptionalParameter<"::mlir::SymbolRefAttr">:$dense,
    OptionalParameter<"::mlir::SymbolRefAttr">:$append,
    OptionalParameter<"::mlir::SymbolRefAttr">:$combine,
    DefaultValuedParameter<"int64_t", "0">:$packed_groups,
    DefaultValuedParameter<"int64_t", "1">:$kv_heads_per_block,
    DefaultValuedParameter<"bool", "false">:$kv_row_copies,
    OptionalParameter<"::mlir::DictionaryAttr">:$abi
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The names of every entry: kernel, dense, append, combine and the
    /// twins (`<kernel>_packed`, `<dense>_packed` with packed_groups;
    /// `<kernel>_kv1`, `<dense>_kv1` with kv_heads_per_block > 1).
    static ::llvm::SmallVector<std::string> entryNames(
        ::mlir::SymbolRefAttr kernel, ::mlir::SymbolRefAttr dense,
        ::mlir::SymbolRefAttr append, ::mlir::SymbolRefAttr combine,
        int64_t packedGroups, int64_t kvHeadsPerBlock);
    ::llvm::SmallVector<std::string> getEntryNames() const {
      return entryNames(getKernel(), getDense(), getAppend(), getCombine(),
                        getPackedGroups(), getKvHeadsPerBlock());
    }
  }];
}

#endif // FLASHATTN_ATTRS
