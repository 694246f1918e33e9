//===- Passes.td - flashattn conversion passes -------------*- tablegen -*-===//

#ifndef FLASHATTN_CONVERSION_PASSES
#define FLASHATTN_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def ConvertFlashAttnToVector : Pass<"convert-flashattn-to-vector"> {
  let summary = "Lower the flashattn tile ops and combine to scf/vector/memref";
  let description = [{
    The host conversion: each tile-level op becomes scf.for loops over rows
    whose bodies use vector ops along the contiguous dimension (head_dim or
    the key block), arith and math.exp2 / math.log; the two tile GEMMs become
    a register-blocked micro-kernel (8 rows x `vector-bits` / 32 columns of
    accumulators, K transposed once for Q K^T); `flashattn.combine`
    becomes a loop over output rows (docs/SEMANTICS.md: empty splits weigh
    0, all empty gives 0 and -inf). The result lowers to LLVM with upstream
    passes (see `flashattn-host-pipeline`).
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "int64_t", /*default=*/"256",
           "width of the target's vector registers in bits (256: AVX2, 512: "
           "AVX-512): the tile GEMMs keep 8 rows x one register of columns "
           "in registers">
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def FlashAttnSm90Warpgroup : Pass<"flashattn-sm90-warpgroup", "::mlir::ModuleOp"> {
  let summary = "Distribute flashattn-tile's sm90 kernels over warpgroups";
  let description = [{
    Rewrites every tiled sm90 kernel (`gpu.func ... kernel` that
    `flashattn-tile` built for one CTA over the tile ops) into the
    warpgroup form: an `llvm.func` of one warpgroup (128 threads) per 64
    rows of the score tile, each computing its rows, every step in program
    order. `tile_load` becomes a CTA barrier (one for loads issued back to
    back), a TMA load by thread 0 onto the slot's mbarrier
    (cp.async.bulk.tensor, PTX ISA 9.7.9.25) and, unless `async`, every
    thread's wait (mbarrier.try_wait.parity, PTX ISA 9.7.13.15.16), the
    phases carried as values; `tile_wait` that wait. K and V tiles may be
    rings `[slots, N, D]` (`flashattn-sm90-pipeline-kv`): a slot is a
    `memref.subview` of the ring, each slot has its tile of shared memory
    and its mbarrier, and slot s's phase is bit s of the ring's carried
    phase value. `tile_qk` becomes wgmma.mma_async over shared-memory
    descriptors (PTX ISA 9.7.15.5) with S as the accumulator fragment
    (each warpgroup in its own branch, its Q descriptors constant offsets,
    but in an overlapped loop);
    `tile_map` its body cloned at each fragment register's row and column
    (row ops once per row); `tile_softmax` the online softmax on the
    fragment (the row max on the raw scores in the plan's `reduce_chains`
    chains, quad shuffles, P = exp2 of one fma with tile_qk's scale a
    score, which stays out of S while tile_maps only mask it); `tile_pv`
    `flashattn.wgmma_rs` with P in registers; `tile_store` stores through
    the view's place in out and lse.
    A `flashattn.warp_specialize` (`flashattn-sm90-warp-specialize`) stays
    one, with a producer warpgroup before the consumers: each slot gets an
    empty mbarrier beside its full one, the producer's thread 0 waits on a
    slot's empty mbarrier before its TMA (no CTA barrier), `tile_release`
    is every consumer thread's arrive on it, and with two or three
    consumers and the plan's `scheduler_barrier` the consumers take turns
    at the tensor cores (named barriers 2 + g, bar.sync / bar.arrive, PTX
    ISA 9.7.13.1: a block's P V with the next block's Q K^T a turn); V's
    rows past the sequence are zeroed under named barrier 1 of the
    consumers. Under the plan's lpt schedule without a tile table the work
    loop takes its tiles from the launch's `tile_counter` (FlashAttention-
    3's dynamic scheduler: the producer's atomic add, the tile's index
    handed to the consumers in shared memory before Q's arrive). With the
    plan's `tma_store`, where O's tile fits, each consumer stages its rows
    of O in shared memory and stores them with cp.async.bulk.tensor (PTX
    ISA 9.7.9.25.5.2). With the plan's `rescale_under_qk` O's rescale runs
    under the next Q K^T in an overlapped loop. With the
    plan's `intra_wg_overlap` a consumer's key-block loop of one `tile_qk`,
    `tile_softmax`, V wait, `tile_pv` and V release runs its first block
    before the loop and issues each block's P V after the next block's
    Q K^T (wgmma groups: wait_group 1 for Q K^T, 0 before O's rescale),
    the last after the loop; where the loop's body masks under a branch on
    `block >= from` (`from` defined above the loop: flashattn-tile's
    boundary bound), the blocks before `from` run in a loop without the
    mask (with a left window the branch stays there) and those from it in
    one with the mask and no branch. Under a
    causal mask or a right window without the turns and pack_gqa, a
    consumer computes only the key blocks its own 64 rows see (the
    `flashattn.key_blocks` of its rows) and waits for and releases the
    tile's later blocks without computing. Index arithmetic in the kernels is 32-bit
    (flashattn-sm90-pipeline): a score or mask region's index
    arithmetic must stay below 2^31.
    The state (phases, row max and sum, O, S) is carried through `scf.for`
    and `scf.if` as values. The function gets the kernel ABI
    (`flashattn.abi`: q, k, v, out[, lse], their dims, the tensor maps of
    q, k and v[, out][, the tile counter]) and the ops naming the kernel get it in their
    `flashattn.sm90`, as do its combine and append kernels. Those
    (`flashattn-tile`'s grid-stride kernels, whose first argument is
    `partial_out` or `k_new`) become `llvm.func`s too: each memref argument
    a pointer and its dims in the ABI (pointers first, then dims, then the
    tile and page tables), index as i64 (element offsets past 2^31), memref
    and vector loads and stores as address arithmetic on the identity
    layouts (the tables' loads invariant, the alignment the ops give), the
    x ids NVVM's, `flashattn.merge_splits` the online merge of the splits,
    16 a step (32 loads); their arith, math and scf ops stay. Takes
    what the sm90 kernels take (bf16 / f16, head_dim 64, 128 or 256 =
    head_dim_v, regions of arith ops), score tiles of a multiple of 64 rows
    and of 16 keys (up to 256 each), dense or packed layouts with the tile
    table, and pages of a multiple of the key block or of 8 keys dividing
    it (one TMA box a page when a key block spans several); shared memory
    past 227 KiB and anything else is reported.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def FlashAttnLowerWarpSpecialize : Pass<"flashattn-lower-warp-specialize"> {
  let summary = "Lower flashattn.warp_specialize to a warpgroup branch";
  let description = [{
    Rewrites each `flashattn.warp_specialize` (the partition of an sm_90a
    kernel's CTA into a producer warpgroup and consumer warpgroups) into
    `scf.if (tid / 128 == 0)` whose then-branch is the producer region and
    whose else-branch the consumers region, each starting with its
    `nvvm.setmaxregister` (decrease to `producer_regs`, increase to
    `consumer_regs`; none for a budget of 0). The sm90 pipeline runs it
    after `flashattn-sm90-warpgroup`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::scf::SCFDialect"];
}

def ConvertFlashAttnSm90ToNVVM : Pass<"convert-flashattn-sm90-to-nvvm"> {
  let summary = "Lower the flashattn kernel ops NVVM lacks to inline PTX";
  let description = [{
    Rewrites, in place, the flashattn ops of the sm_90a kernels that MLIR
    22's NVVM dialect has no op for into `llvm.inline_asm`, each after the
    PTX ISA section it implements: `flashattn.wgmma_rs` (one k16 step of
    `wgmma.mma_async` with A in registers, PTX ISA 9.7.15.5.2: the
    accumulator's registers tied to the outputs, B by descriptor). The sm90
    pipeline runs it after the kernels are built.

    It first refuses, with an error on the op, any wgmma instruction
    (`nvvm.wgmma.*`, `flashattn.wgmma_rs`) nested in an `scf.if` whose
    condition comes from `nvvm.vote.sync`: wgmma instructions are
    `.aligned`, the same instruction for all four warps of a warpgroup
    (PTX ISA 9.7.15), and a warp's vote may differ from its neighbours'.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // FLASHATTN_CONVERSION_PASSES
