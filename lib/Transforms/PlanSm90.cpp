//===- PlanSm90.cpp - the sm_90a kernel's code-generation choices ---------===//
//
// What flashattn-plan{target=sm90} decides beyond the tile sizes: the
// #flashattn.sm90_codegen of one attention, each choice measured on the
// H200 or the H100 (docs/BENCHMARKS.md) and overridable. The passes that build the
// kernel (flashattn-tile, flashattn-sm90-pipeline-kv,
// flashattn-sm90-warp-specialize, flashattn-sm90-warpgroup) implement what
// the plan says.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Transforms/PlanSm90.h"

#include "flashattn/Conversion/FlashAttnToSm90/Sm90Kernel.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::flashattn;

namespace {
/// The facts of an op and its plan the choices depend on.
struct Facts {
  int64_t d, consumers, blockM, blockN, stages, pageSize, hkv, groups, numSplits;
  int causal;
  int64_t windowLeft, windowRight;
  bool partial, tileTable, paged, softcap, scoreRegion, maskRegion, lpt;
  /// A causal mask or a window side.
  bool masked() const { return causal || windowLeft >= 0 || windowRight >= 0; }
};

Facts factsOf(AttentionOp op, PlanAttr plan) {
  Facts f;
  f.d = op.getHeadDim();
  f.consumers = plan.getConsumers();
  f.blockM = plan.getBlockM();
  f.blockN = plan.getBlockN();
  f.stages = plan.getStages();
  f.pageSize = 0;
  if (op.isPaged()) {
    int64_t ps = cast<ShapedType>(op.getK().getType()).getDimSize(1);
    f.pageSize = ShapedType::isDynamic(ps) ? 0 : ps;
  }
  f.hkv = op.getNumKVHeads();
  int64_t hq = op.getNumQHeads();
  f.groups = plan.getPackGqa() && !ShapedType::isDynamic(hq) && !ShapedType::isDynamic(f.hkv)
                 ? std::max<int64_t>(hq / f.hkv, 1)
                 : 1;
  f.causal = static_cast<int>(op.getCausal());
  std::tie(f.windowLeft, f.windowRight) = op.getWindow();
  f.windowLeft = sm90WindowSide(f.windowLeft);
  f.windowRight = sm90WindowSide(f.windowRight);
  f.numSplits = plan.getNumSplits();
  f.partial = op.isSplitPartial() || f.numSplits > 1;
  f.tileTable = sm90UsesTileTable(op);
  f.paged = op.isPaged();
  f.softcap = static_cast<bool>(op.getSoftcap());
  f.scoreRegion = !op.getScore().empty();
  f.maskRegion = !op.getMask().empty();
  f.lpt = plan.getSchedule() == Schedule::lpt;
  return f;
}

/// Paged KV by per-row copies where TMA boxes cannot take the pages.
bool needsRowCopies(const Facts &f) {
  return f.pageSize && !sm90PageBoxes(f.pageSize, f.blockN);
}

/// The O tile of the TMA-store epilogue fits beside Q, the K/V stages,
/// the mbarriers of a warp-specialized kernel and the 8-byte tile index.
bool storeFits(const Facts &f) {
  return sm90SharedMemoryBytes(f.d, 64 * f.consumers, f.blockN, 1, f.stages, f.stages,
                               /*stagedO=*/true, /*fullAndEmpty=*/true) +
             8 <=
         kSm90MaxSharedMemory;
}

/// pack_gqa over pages smaller than a key block: HP kv heads per block, so
/// that a TMA box holds HP heads of a page. Automatic, for pages below 64
/// keys (boxes below 8 KB of 64 columns): the fewest heads (2, 4, 8) that
/// make boxes of 64 rows, or the most that fit. Measured on the H200: 16-key
/// pages lost 5-7% to dense decode in 2 KB boxes, 64-key pages (8 KB boxes)
/// 1-2%; with the one-head kernels in the page panel layout, the 4-head
/// kernels still win at batch 128 and tie at 64.
FailureOr<int64_t> kvHeadsPerBlock(const Facts &f, bool rowCopies, int64_t forced,
                                   std::string &why) {
  if (forced < 0) {
    why = "kv-heads-per-block must be 0 (automatic) or positive, got " + std::to_string(forced);
    return failure();
  }
  bool packable = f.groups > 1 && f.pageSize && !rowCopies && f.pageSize < f.blockN;
  if (!packable) {
    if (forced <= 1)
      return 1;
    why = "kv-heads-per-block applies to pack_gqa kernels over paged KV whose pages are "
          "smaller than block_n and go by TMA boxes";
    return failure();
  }
  int64_t ps = f.pageSize, g = f.groups;
  auto fits = [&](int64_t hp) {
    return 8 % hp == 0 && f.hkv % hp == 0 && f.blockN % (hp * ps) == 0 &&
           f.blockM % (g * hp) == 0 && g * hp <= 256;
  };
  if (forced > 1 && !fits(forced)) {
    why = "kv-heads-per-block = " + std::to_string(forced) + " needs to divide 8 and Hkv (" +
          std::to_string(f.hkv) + "), hp x page_size to divide block_n (" +
          std::to_string(ps) + ", " + std::to_string(f.blockN) + ") and hp x Hq / Hkv (" +
          std::to_string(g) + ") to divide block_m (" + std::to_string(f.blockM) + ")";
    return failure();
  }
  if (forced)
    return forced;
  int64_t hp = 1;
  for (int64_t c : {2, 4, 8}) {
    if (ps >= 64 || !fits(c))
      break;
    hp = c;
    if (c * ps >= 64)
      break;
  }
  return hp;
}

/// Row max and sum in 4 chains (Nsight Compute on head_dim 128: a
/// fixed-latency dependency was the consumers' largest stall, twice
/// cuDNN's). Measured: head_dim 128 +0.1-0.5% non-causal and +0.7-1.6%
/// causal, head_dim 256 unmasked +0.3-1.3%; 1-5% slower at head_dim 64
/// causal and 256 causal (their registers are at the limit).
int64_t reduceChains(const Facts &f) {
  return f.d == 128 || (f.d == 256 && !f.masked()) ? 4 : 1;
}

/// A producer warpgroup (flashattn-sm90-warp-specialize): but with softcap
/// at head_dim 256, where a consumer's O takes 128 of the 232 registers
/// setmaxnreg leaves it and ptxas spills (without a producer each of 256
/// threads has 255).
bool warpSpecialize(const Facts &f) { return f.d <= 128 || !f.softcap; }

/// P V under the next block's softmax: not with softcap at head_dim 128 and
/// 256, where the in-flight O and P push ptxas past the consumers' 232
/// registers (4-8 bytes of spills with a mask).
bool intraWGOverlap(const Facts &f) { return !(f.softcap && f.d >= 128); }

/// Conditional rescaling (FlashAttention-4) at every head_dim: +3-10% at
/// head_dim 256 (O is 128 registers a thread); in the overlapped loops the
/// wait for the previous P V then sits after the exponentials, right
/// before the rescale's branch, unless O's rescale runs under Q K^T (a
/// wait right after the row maxima was 6-14% slower at head_dim 64
/// unmasked; docs/BENCHMARKS.md). Not with 3 consumers under a causal
/// mask (0.95-0.97x), nor at head_dim 256 with pages smaller than the key
/// block in the split-KV form, where ptxas spills 8 bytes.
bool conditionalRescale(const Facts &f) {
  if (f.consumers == 3 && f.causal)
    return false;
  bool smallPages = f.pageSize > 0 && f.pageSize < f.blockN;
  return !(f.d == 256 && smallPages && f.numSplits != 1);
}

/// In the overlapped loop, O's rescale by block n - 1's factor under block
/// n's Q K^T, before the deferred P V is issued (FlashAttention-3's order),
/// at head_dim 128: the wait for that P V then precedes the exponentials
/// (wgmma.wait_group is .aligned, PTX ISA 9.7.15.7.3: it cannot sit in the
/// rescale's per-warp branch). Against the rescale after the exponentials:
/// 2.0-3.7% faster from 2k keys, unmasked and causal, -0.4% to +1.3% at
/// 512 and 1k (H100, medians of 3 runs); docs/BENCHMARKS.md has the other
/// places tried. Not in the split-KV (partial) form, where it was not
/// measured (decode's kernels), nor then in a kernel compiled with the
/// automatic num_splits that runs with one split.
bool rescaleUnderQK(const Facts &f) { return f.d == 128 && !f.partial; }

/// Head_dim 256 prefill over dense K/V with no mask, no softcap and no
/// regions (where the predicated early release was measured).
bool unmaskedHd256(const Facts &f) {
  return f.d == 256 && !f.paged && !f.masked() && !f.softcap && !f.scoreRegion &&
         !f.maskRegion;
}

/// Q released in a tile's last block (after its Q K^T): 1.02-1.10x at 512
/// and 1k keys unmasked at head_dim 64 and 128, and under a causal mask at
/// head_dim 64 1.05-1.13x to 2k keys (1.00x at 8k). At head_dim 256 only
/// unmasked, as the predicated arrive (1.002-1.017x); the branch there was
/// 0.96-0.97x causal and 0.97-0.99x unmasked from 2k keys.
bool earlyQRelease(const Facts &f) { return f.d < 256 || unmaskedHd256(f); }

/// That release, where the key-block loop is split at the mask's boundary,
/// as a predicated arrive in the masked loop only: at head_dim 128 under a
/// causal mask or a right window with the key blocks ascending, where a
/// branch around the arrive in either loop made ptxas spill 32-40 bytes
/// (1.02-1.07x at 512 to 2k keys causal against the release after the
/// loop); elsewhere a branch (the predicated arrive was 5-17% slower at
/// head_dim 64, with 3 consumers). With the key blocks descending the
/// masked loop runs first and the tile's last block is unmasked: there the
/// branch was 0.996-1.007x at 512 keys and 0.999-1.013x from 1k (two
/// calls, medians of 3 runs, H100).
bool predicatedQRelease(const Facts &f, bool descending) {
  return (f.d == 128 && (f.causal || f.windowRight >= 0) && !descending) ||
         unmaskedHd256(f);
}

/// Q in two buffers, the next tile's loaded before this one's is released
/// (ahead of tiles of at most 16 key blocks: flashattn-sm90-warpgroup), in
/// the kernel taking its tiles from the launch's counter (the lpt schedule
/// without the tile table): at head_dim 128 causal 1.5-3.7% faster from
/// 512 to 2k keys, within 0.5% from 4k (H100); at head_dim 64 causal
/// 0.7-4.5% faster to 4k keys, within 0.3% from 8k; at head_dim 256 two
/// buffers do not fit.
bool prefetchNextQ(const Facts &f) {
  return f.d <= 128 && f.causal && f.lpt && !f.tileTable;
}

/// The key blocks from the tile's last down (the masked ones first,
/// FlashAttention-3's order), at head_dim 128 under a causal mask without
/// a left window: 1.8-7.5% faster at 512 to 2k keys, within 0.3% from 4k
/// and in decode (H100, 3 runs). Not at head_dim 64 (1.4-2.9% slower
/// from 4k keys) nor 256 (3.5% faster at 512, 0.8-2.1% slower from 1k).
bool descendingKeyBlocks(const Facts &f) {
  return f.d == 128 && f.causal && f.windowLeft < 0;
}
} // namespace

FailureOr<Sm90CodegenAttr> mlir::flashattn::chooseSm90Codegen(AttentionOp op, PlanAttr plan,
                                                              const Sm90CodegenOverrides &o,
                                                              std::string &why) {
  Facts f = factsOf(op, plan);
  // 3 consumers have 160 registers each: with a mask (the softmax in a
  // masked and an unmasked copy) the scheduler barrier makes ptxas spill,
  // so that case goes without it. FlashAttention-3 orders the consumers'
  // GEMMs at head_dim <= 128 (bf16), where the softmax is a large share of
  // a block's time; at head_dim 256, -0.3% to +0.6% non-causal and -0.9%
  // (512) to +1.7% causal.
  bool tight = f.consumers == 3 && f.masked();
  bool schedulerBarrier =
      o.schedulerBarrier.value_or(f.consumers >= 2 && !tight) && f.consumers >= 2;
  // O through shared memory and a TMA store where its tile fits beside the
  // K/V stages: +1-13% at head_dim 64 and 128, -0.3% (causal 512) to +3.9%
  // at 256; 3-8% slower with 3 consumers, which keep the direct stores. Not
  // in the f32 partial form, not with pack_gqa (a tile's rows are spread
  // over heads), not with the tile table (a tile's last rows would land
  // in the next sequence) and not with a score region (ptxas spilled 116
  // bytes at head_dim 128, causal).
  bool tmaStore = !f.partial && f.groups == 1 && !f.tileTable &&
                  o.tmaStore.value_or(f.consumers <= 2 && !f.scoreRegion) && storeFits(f);
  bool rowCopies = f.pageSize && o.kvRowCopies.value_or(needsRowCopies(f));
  FailureOr<int64_t> hp = kvHeadsPerBlock(f, rowCopies, o.kvHeadsPerBlock, why);
  if (failed(hp))
    return failure();
  bool specialize = o.warpSpecialize.value_or(warpSpecialize(f));
  // L2: a tile reads its Q once, evict_first (FlashAttention-3's
  // choice); K/V evict_normal (evict_last changed prefill by under 0.5%;
  // evict_first gained 6-10% in decode at batch 1 / 32k but lost 2-5% at
  // every larger shape).
  bool overlap = o.intraWGOverlap.value_or(specialize && intraWGOverlap(f));
  bool descending = o.descendingKeyBlocks.value_or(descendingKeyBlocks(f));
  // (A forced descending_key_blocks ascends where flashattn-tile cannot
  // descend.)
  bool descends = keyBlocksDescend(descending, f.causal, f.windowLeft, f.windowRight);
  MLIRContext *ctx = op.getContext();
  return Sm90CodegenAttr::get(
      ctx, schedulerBarrier, tmaStore, o.earlyQRelease.value_or(earlyQRelease(f)),
      o.conditionalRescale.value_or(conditionalRescale(f)),
      overlap && o.rescaleUnderQK.value_or(rescaleUnderQK(f)),
      reduceChains(f), rowCopies, *hp,
      o.l2HintQ.value_or(L2Priority::evict_first), o.l2HintKV.value_or(L2Priority::normal),
      specialize, overlap,
      f.partial && o.fusedMerge.value_or(true),
      o.predicatedQRelease.value_or(predicatedQRelease(f, descends)),
      o.prefetchNextQ.value_or(prefetchNextQ(f)), descending,
      o.drainIdleConsumers.value_or(false));
}
