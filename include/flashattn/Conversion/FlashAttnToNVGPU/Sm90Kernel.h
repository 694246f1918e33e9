//===- Sm90Kernel.h - the sm_90a attention kernel generator -----*- C++ -*-===//
//
// What convert-flashattn-to-nvgpu emits for one planned attention: a
// gpu.module holding an sm_90a kernel (TMA + WGMMA + mbarriers) in the LLVM,
// NVVM, arith and scf dialects.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_CONVERSION_FLASHATTNTONVGPU_SM90KERNEL_H
#define FLASHATTN_CONVERSION_FLASHATTNTONVGPU_SM90KERNEL_H

#include <cstdint>
#include <string>

namespace mlir {
class Location;
class OpBuilder;

namespace flashattn {

/// L2 eviction priority of a TMA load (PTX ISA 9.7.9.25, cp.async.bulk.
/// tensor's .L2::cache_hint operand, with a policy from
/// createpolicy.fractional, PTX ISA "createpolicy"): none (evict_normal),
/// evictFirst (data read once: later lines of the same stream replace it,
/// not the other lines of L2, e.g. the dirty lines a previous kernel left),
/// evictLast (data other CTAs read again).
enum class L2Hint { none, evictFirst, evictLast };

/// What one kernel computes: dense [B, S, H, D] bf16/f16 q/k/v, head_dim 64,
/// 128 or 256 (= head_dim_v), query tiles of 64 x `consumers` rows, key
/// blocks of `blockN` (a multiple of 16, at most 256), K/V in `stages`
/// pipeline stages, causal 0 (none), 1 (top_left) or 2 (bottom_right), a
/// sliding window (left, right; -1 unbounded), softcap, optional lse, and
/// the order of the persistent loop over tiles.
struct Sm90KernelSpec {
  std::string name = "fa_sm90";
  int64_t headDim = 128;
  int64_t blockN = 128;
  /// Consumer warpgroups (1 to 3), each owning 64 query rows of a tile; one
  /// more warpgroup is the TMA producer.
  int64_t consumers = 2;
  int64_t stages = 2;
  /// setmaxnreg targets (multiples of 8) with 2 or 3 consumers: producer x
  /// 128 + consumer x 128 x consumers must not exceed the launch allocation
  /// sm90LaunchRegisters x threads, or setmaxnreg.inc waits forever
  /// (PTX ISA, setmaxnreg). 0 = no setmaxnreg. sm90DefaultRegisters fills
  /// them in.
  int64_t producerRegs = 0;
  int64_t consumerRegs = 0;
  /// Consumers take turns issuing their GEMMs (named barriers; 2 or more
  /// consumers): FlashAttention-3's warp-scheduler barrier.
  bool schedulerBarrier = false;
  /// The epilogue writes O through shared memory and a TMA store (a fourth
  /// tensor map, of out, box 64 x 1 x 64 x 1); not in the partial form.
  bool tmaStore = false;
  /// Consumers release Q as soon as the tile's last S is computed (a
  /// predicated arrive in the key-block loop), so the producer loads the
  /// next tile's Q under the last softmax, P V and epilogue; otherwise after
  /// the last P V.
  bool earlyQRelease = false;
  /// FlashAttention-4's conditional rescaling: the running max moves only
  /// when it grows by more than 8 (exp2 units), and O *= alpha runs only in
  /// warps where some row moved it.
  bool conditionalRescale = false;
  /// O *= alpha of block n - 1 runs after S_n's wgmma is issued and before
  /// P V's (FlashAttention-3's order), not right after block n - 1's P V.
  bool rescaleUnderQK = false;
  /// pack_gqa: > 1 folds the packGroups = Hq / Hkv query heads of a kv head
  /// into the rows of one tile (packed row i G + g = position i of head
  /// kvh G + g); Q then comes through a 5-D tensor map (box 64 x G x 1 x
  /// BM / G x 1, G divides BM), K/V are read once per kv head. 1 = off.
  int64_t packGroups = 1;
  /// With pack_gqa over pages smaller than a key block: a tile serves HP =
  /// kvHeadsPerBlock consecutive kv heads (HP divides 8 and Hkv), so that
  /// each TMA box holds HP heads of a page (box 64 x HP x pageSize x 1 per
  /// 64 columns, landing as row n = key n / HP, head n % HP): HP x 64 /
  /// headDim times fewer boxes than the one-head kernels' page panels
  /// (sm90PagePanels: one box a page). A key block then holds blockN / HP keys of the
  /// HP heads; packed rows are i HP G + hp G + g, Q's map groups HP G
  /// heads, and a score is masked where its key's head is not its row's.
  /// 1 = off.
  int64_t kvHeadsPerBlock = 1;
  /// Varlen (docs/SEMANTICS.md): q and out packed [Tq, Hq, D] with lse
  /// [Hq, Tq] (varlenQ); k and v packed [Tk, Hkv, D] (varlenK). Their TMA
  /// maps are 3-D (4-D for q with pack_gqa).
  bool varlenQ = false;
  bool varlenK = false;
  /// Sequence-aware tiles (required by varlenQ / varlenK, and used for
  /// seqused_k): the kernel takes a device table (after the counter) the
  /// runtime builds per launch from cu_seqlens_q / cu_seqlens_k /
  /// seqused_k, i32: entry 0 = {E (number of tiles per head), append pairs,
  /// hg (heads per L2 group)}, then E entries of 8 (q position, q batch, q
  /// length, k position, k batch, k length, m_block, sequence), in the
  /// order the tiles run (runtime/src/schedule.c puts the longest first).
  /// Tiles go in groups of hg heads, entry by entry in a group, head
  /// fastest, so tiles exist only for real rows. Rows past a sequence's end are loaded
  /// (they belong to the next sequence) but never written; keys past it are
  /// masked; the V rows of a block past its sequence are zeroed before its
  /// P V (they may hold NaN, and 0 x NaN is NaN): warp 0 of the producer
  /// runs the loop, a V block reaching past its sequence lands on an extra
  /// mbarrier, the warp zeroes those rows and completes full_V itself (per-
  /// row copies zero-fill them instead). Not with tmaStore (a TMA store
  /// would write those rows).
  bool tileTable = false;
  /// Paged KV (with tileTable): k and v are [num_pages, pageSize, Hkv, D];
  /// the kernel's last parameter holds the page lists (the device
  /// block_table itself, or the tile table with the runtime's copies of
  /// block_table[b, 0 : ceil(k_len / pageSize)]), and an entry's k position
  /// is where its sequence's list starts there. pageSize a multiple of
  /// blockN (a block in one page: one TMA box per 64 columns), or blockN a
  /// multiple of pageSize and pageSize a multiple of 8 (one box per page in
  /// the page panel layout, sm90PagePanels; with kvHeadsPerBlock > 1 one
  /// box of pageSize x HP rows per page and 64 columns). 0 = not paged.
  int64_t pageSize = 0;
  /// Paged KV by per-row copies instead of TMA: the 128 producer threads
  /// copy K and V 16 bytes at a time (cp.async) into the swizzled layout;
  /// any page size (required below 8).
  bool kvRowCopies = false;
  /// The softmax reduces a row's max and sum (the thread's share of the
  /// row) in this many interleaved chains joined by a tree, not one chain
  /// of dependent ops: shorter dependency paths for a few more registers.
  int64_t reduceChains = 1;
  /// L2 eviction priority of the TMA loads of Q and of K/V (L2Hint).
  L2Hint l2HintQ = L2Hint::none;
  L2Hint l2HintKV = L2Hint::none;
  bool f16 = false;
  int causal = 0;
  bool lse = false;
  double scale = 0.0;
  double softcap = 0.0;      // 0 = off
  int64_t windowLeft = -1;   // -1 = unbounded
  int64_t windowRight = -1;
  /// Tile order: longest tiles first (plan schedule lpt), in L2-sized
  /// groups of heads, handed out by an atomic counter (a parameter after
  /// the tensor maps, a u32 zero at launch; not read when there are no more
  /// tiles than CTAs), instead of m_block fastest with a static stride
  /// (static).
  bool heavyFirst = false;
  /// Split-KV partial form: the kernel takes out as f32 [S, B, Sq, H, D]
  /// and lse as f32 [S, B, H, Sq] (lse required), and the work loop runs
  /// over (tile, split) with split s taking key blocks [s * ceil(nblk / S),
  /// (s + 1) * ceil(nblk / S)). S is read from out's leading dimension at
  /// run time, so a runtime may pick it per launch.
  bool splitPartial = false;
  /// With splitPartial: the combine fused into the partial kernel. The
  /// kernel takes three more pointers after the others: the final out
  /// [B, Sq, H, D] (bf16, or f16 with mergeF16), the final lse f32 [B, H,
  /// Sq] (null: none) and u32 merge counters, one per tile (zero at launch;
  /// null: no merge, the runtime launches the combine kernel). The work unit
  /// that finishes a tile's last split (an atomic count per tile, after a
  /// gpu-scope fence; the CUDA programming guide's last-block pattern, as
  /// its threadFenceReduction sample) merges the tile's rows by the
  /// combine's formula and sets the counter back to 0, so that a counter
  /// array is zero again after every launch and serves the next one on the
  /// same stream.
  bool fusedCombine = false;
  bool mergeF16 = false;
  /// Score / mask regions: the kernel calls @<name>_score(s, b, h, i, j) and
  /// @<name>_mask(b, h, i, j) (declared func.func private in the module) on
  /// every score; the conversion inlines the op's regions there.
  bool scoreRegion = false;
  bool maskRegion = false;
};

/// The split-KV combine (`flashattn.combine`) for one output layout:
/// partial_out f32 [S, B, Sq, H, D] and partial_lse f32 [S, B, H, Sq] to out
/// [B, Sq, H, D] in bf16/f16 and optionally lse f32 [B, H, Sq], by
/// docs/SEMANTICS.md (m = max_s lse_s, w_s = exp(lse_s - m), out = sum w_s o_s /
/// sum w_s, lse = m + log sum w_s; splits with lse_s = -inf weigh 0; a row
/// whose splits are all empty gets out 0 and lse -inf).
struct Sm90CombineSpec {
  std::string name = "fa_sm90_combine";
  bool f16 = false;
  bool lse = false;
};

/// The kv-cache append (docs/SEMANTICS.md) before an attention kernel
/// with the tile table: k_new and v_new [B, S_new, Hkv, D] (bf16/f16, D a
/// multiple of 8) written into the cache k and v at positions
/// cache_seqlens[b] + r, through the sequence's page list when paged.
struct Sm90AppendSpec {
  std::string name = "fa_sm90_append";
  bool paged = false;
};

/// Bytes of the tile table a tileTable kernel also takes by value (a
/// grid-constant kernel parameter): a launch whose table fits, with no
/// dynamic-scheduler counter to zero, no append and the page lists (if
/// any) in the caller's device block_table, passes a null table pointer
/// and the table inline, so that no host-to-device copy precedes the
/// kernel on the stream. 2048 bytes: 63 entries after the 32-byte header,
/// and with the rest of the parameters (under 1 KB) inside the 4 KB that
/// every CUDA driver accepts.
constexpr int64_t kSm90InlineTableBytes = 2048;

/// The kernels' builders (Sm90KernelBuilder.cpp), at the builder's
/// insertion point inside a gpu.module. Each llvm.func carries its
/// parameter list as a #flashattn.kernel_abi (attribute flashattn.abi),
/// which the artifact writer serializes and the runtime packs launches from.
///
/// The attention kernel: its region stand-ins (func.func private
/// @<name>_score / _mask, inlined by the conversion), its shared-memory
/// global @<name>_smem and its llvm.func @<name>. Parameters: q, k, v,
/// out[, lse] as !llvm.ptr<1>; their dims as i64; the CUtensorMaps of q, k,
/// v [and out with tmaStore] as 128-byte grid-constant byval parameters;
/// with heavyFirst the tile counter; with tileTable the tile table (null:
/// read the inline copy, a kSm90InlineTableBytes grid-constant byval
/// parameter); with pageSize the page lists (the i32 block_table, or the
/// tile table holding copies of them); with splitPartial and fusedCombine
/// the merge's out, lse and counters. Launch: sm90Threads threads,
/// sm90SharedMemoryBytes of dynamic shared memory, any grid (a persistent
/// loop over the tiles).
void buildSm90AttentionKernel(OpBuilder &builder, Location loc, const Sm90KernelSpec &spec);
/// The unpipelined form of the attention kernel (Sm90UnpipelinedKernel.cpp):
/// one warpgroup per CTA (128 threads), 64-row tiles and 64-key blocks, no
/// overlap, the parameters of buildSm90AttentionKernel's kernels without
/// the scheduler's counter and the merge's (q, k, v, out[, lse], their
/// dims, the tensor maps of q, k, v; the tile table and the page lists when
/// the spec has them). Pages must hold a multiple of 64 keys. The reference
/// the pipelined kernel is debugged against.
void buildSm90UnpipelinedKernel(OpBuilder &builder, Location loc, const Sm90KernelSpec &spec);

/// What `spec` asks that the unpipelined kernel lacks ("" when nothing).
std::string sm90UnpipelinedUnsupported(const Sm90KernelSpec &spec);

/// The combine kernel: partial_out, partial_lse, out[, lse] and their dims;
/// 128 threads, no shared memory, any grid (a grid-stride loop over the
/// B * Sq * H * D output elements).
void buildSm90CombineKernel(OpBuilder &builder, Location loc, const Sm90CombineSpec &spec);
/// The append kernel: k_new, v_new, k, v and their dims, the tile table
/// (word 1: the index of B (start = cache_seqlens[b], page list index)
/// pairs, runtime/src/schedule.c), when paged the page lists; 256 threads,
/// no shared memory, any grid (a grid-stride loop over the 16-byte chunks of
/// the new rows), on the stream before the attention kernel.
void buildSm90AppendKernel(OpBuilder &builder, Location loc, const Sm90AppendSpec &spec);

/// sm90SharedMemoryBytes (the kernel's dynamic shared memory) is in
/// Sm90Layout.h.

/// Whether a kernel reads K and V in the page panel layout: paged KV by TMA
/// boxes (not kvRowCopies) with pages of `pageSize` keys smaller than its key
/// block of `blockRows` shared-memory rows, one kv head a box
/// (`kvHeadsPerBox` 1). Each page is then ONE box through a 5-D view of the
/// pool [P, S, H, D]: {64 columns, 8 rows, H D / 64 column panels, S / 8
/// row groups, P} innermost first, strides (a row, 128 bytes, 8 rows, a
/// page), box {64, 8, D / 64, S / 8, 1} (the metadata's "page_panels"
/// maps). The page lands as its 8-row groups, each of D / 64 swizzled
/// 1 KB panels: in a key block, panel h of keys [8 g, 8 g + 8) lies at
/// g D / 64 KB + h KB. The wgmma descriptors step by those strides (K:
/// stride byte offset D / 64 KB; V: leading byte offset 1 KB, stride byte
/// offset D / 64 KB; PTX ISA 9.7.15.5.1), so a block of 16-key pages at
/// head_dim 128 is 8 boxes of 4 KB instead of 16 of 2 KB.
inline bool sm90PagePanels(int64_t pageSize, int64_t blockRows, int64_t kvHeadsPerBox,
                           bool kvRowCopies) {
  return pageSize > 0 && pageSize < blockRows && kvHeadsPerBox == 1 && !kvRowCopies;
}

/// Dynamic shared memory one sm_90 block may take (227 KB, opt-in above
/// 48 KB).
constexpr int64_t kSm90MaxSharedMemory = 227 * 1024;

/// Whether paged K/V of `pageSize`-key pages can go by TMA boxes into key
/// blocks of `blockN` rows: each box must land 1024-byte aligned (the
/// 128-byte swizzle's atom), so pages hold whole key blocks or divide a
/// block in multiples of 8 rows. Otherwise per-row copies.
inline bool sm90PageBoxes(int64_t pageSize, int64_t blockN) {
  return pageSize % blockN == 0 || (blockN % pageSize == 0 && pageSize % 8 == 0);
}

/// A window side as the kernel takes it: its positions are i32 sums (i +
/// Sk - Sq + right), and a side of 2^30 keys or more excludes no key of any
/// sequence an sm90 GPU holds (Sk and Sq stay below 2^30: K and V of 2^30
/// keys at head_dim 64 take 256 GiB), exactly as no bound (-1) does, so it
/// becomes -1 (FlashAttention likewise takes a side >= seqlen_k as -1).
inline int64_t sm90WindowSide(int64_t side) {
  return side >= (int64_t(1) << 30) ? -1 : side;
}

/// Threads per CTA: 128 x (1 + consumers).
inline int64_t sm90Threads(const Sm90KernelSpec &spec) {
  return 128 * (1 + spec.consumers);
}

/// Registers per thread at launch with one CTA per SM: 65536 / threads,
/// rounded down to a multiple of 8 (168 at 384 threads, 128 at 512).
inline int64_t sm90LaunchRegisters(int64_t threads) {
  int64_t r = (65536 / threads) & ~int64_t(7);
  return r > 255 ? 255 : r;
}

/// FlashAttention-3's setmaxnreg split: 40 / 232 with 2 consumers
/// (40 x 128 + 232 x 256 = 168 x 384), 32 / 160 with 3 (32 x 128 + 160 x
/// 384 = 128 x 512); none with 1 (256 threads have 255 registers each).
inline void sm90DefaultRegisters(Sm90KernelSpec &spec) {
  spec.producerRegs = spec.consumers == 2 ? 40 : spec.consumers == 3 ? 32 : 0;
  spec.consumerRegs = spec.consumers == 2 ? 232 : spec.consumers == 3 ? 160 : 0;
}

} // namespace flashattn
} // namespace mlir

#endif
