//===- Plan.cpp - flashattn-plan ------------------------------------------===//
//
// Chooses the tile sizes, pipeline depth, schedule, num_splits and pack_gqa
// of each flashattn.attention and records them in #flashattn.plan.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Transforms/Passes.h"
#include "flashattn/Transforms/PlanSm90.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <tuple>

namespace mlir::flashattn {
#define GEN_PASS_DEF_FLASHATTNPLAN
#include "flashattn/Transforms/Passes.h.inc"
} // namespace mlir::flashattn

using namespace mlir;
using namespace mlir::flashattn;

PlanAttr mlir::flashattn::computePlan(AttentionOp op, Target target,
                                      int64_t numSMs) {
  MLIRContext *ctx = op.getContext();
  int64_t opSplits = op.getNumSplitsAttr().getValue().getSExtValue();
  std::optional<bool> opPack = op.getPackGqa();
  if (op.isSplitPartial())
    opSplits = cast<ShapedType>(op.getOut().getType()).getDimSize(0);

  if (target == Target::host) {
    // Query blocks of 64 rows, fewer for short static query lengths (decode:
    // one row per tile instead of 63 padded ones).
    auto qType = cast<ShapedType>(op.getQ().getType());
    int64_t blockM = 64;
    if (!op.isVarlenQ() && !ShapedType::isDynamic(qType.getDimSize(1)))
      blockM = std::min<int64_t>(
          64, llvm::PowerOf2Ceil(std::max<int64_t>(1, qType.getDimSize(1))));
    return PlanAttr::get(ctx, Target::host, blockM, /*block_n=*/64,
                         /*stages=*/1, /*consumers=*/1, Schedule::static_,
                         opSplits > 0 ? opSplits : 1, opPack.value_or(false),
                         Sm90CodegenAttr());
  }

  // sm90: FlashAttention-3's forward shape (arXiv 2407.08608): a TMA
  // producer warpgroup and 2 consumer warpgroups over 128-row query tiles,
  // 2 K/V stages, key blocks by head_dim and mask within 227 KB of shared
  // memory and the consumers' 232 registers (O, S and P of a block live at
  // once): 128 at head_dim 64 and 128 (FlashAttention-3's 176 for
  // non-causal head_dim 128 measured 0-10% slower here than 128, which
  // leaves room for the TMA-store epilogue), 80 at head_dim 256. The persistent schedule is static, or lpt (longest
  // tiles first) under a causal mask, where a tile's work grows with its
  // m_block.
  int64_t blockM = 128, blockN = 128, consumers = 2;
  int64_t d = op.getHeadDim();
  // Paged KV: a key block is whole pages or lies in one page (one TMA box
  // per page): blocks of 128 keys, 64 at head_dim 256, and 2 consumers at
  // head_dim 64 (the producer threads may copy rows: 48 registers). At
  // head_dim 256, pages TMA boxes cannot take (fewer than 8 keys, or not a
  // multiple of 8 dividing 64) are copied row by row, and then 32-key
  // blocks: with 64 the copying kernel spills (ptxas, 4-12 bytes).
  const bool paged = op.isPaged();
  if (d > 128) {
    blockN = paged ? 64 : 80;
    int64_t ps = paged ? cast<ShapedType>(op.getK().getType()).getDimSize(1) : 0;
    if (paged && !ShapedType::isDynamic(ps) && ps > 0 && ps % 64 != 0 &&
        (64 % ps != 0 || ps % 8 != 0))
      blockN = 32;
  }
  // Split-KV (explicit or automatic) at head_dim 64 keeps 2 consumers too:
  // with 3 (160 registers each) the partial kernel's f32 epilogue and the
  // packed twin spill (ptxas, checked per kernel).
  else if (d <= 64 && !paged && opSplits == 1 && !op.getSoftcap() && op.getScore().empty() &&
           op.getMask().empty() && op.getWindow() == std::make_pair<int64_t, int64_t>(-1, -1)) {
    // head_dim 64 is softmax-bound (the GEMMs are short): a third consumer
    // warpgroup (192-row tiles, 160 registers each) keeps the tensor cores
    // fed. Windows, softcap and regions need more registers per score: 2.
    blockM = 192;
    consumers = 3;
    // Key blocks of 128 under a causal mask too: 112 kept the masked and
    // unmasked softmax copies within the 160 registers until the wgmma
    // descriptors became warp-uniform; since then 128 runs 3-7% faster
    // (docs/BENCHMARKS.md) without spilling.
  }
  Schedule schedule = op.getCausal() != CausalKind::none ? Schedule::lpt
                                                        : Schedule::static_;

  auto qType = cast<ShapedType>(op.getQ().getType());
  int64_t hq = op.getNumQHeads(), hkv = op.getNumKVHeads();
  int64_t sq = op.isVarlenQ() ? ShapedType::kDynamic : qType.getDimSize(1);
  int64_t groups =
      ShapedType::isDynamic(hq) || ShapedType::isDynamic(hkv) ? 1 : hq / hkv;
  bool pack = opPack.value_or(groups > 1 && !ShapedType::isDynamic(sq) &&
                              sq * groups <= blockM);

  // Automatic num_splits resolves to 1 here: sizes are known only at launch,
  // where the runtime makes the choice (fa_num_splits_heuristic in
  // runtime/src/cuda_variant.c, for artifacts compiled with num_splits 0).
  int64_t splits = opSplits > 0 ? opSplits : 1;
  return PlanAttr::get(ctx, Target::sm90, blockM, blockN, /*stages=*/2,
                       consumers, schedule, splits, pack, Sm90CodegenAttr());
}

namespace {
/// "auto", "on" or "off" as an override; false when the text is none of
/// them (reported by the caller).
bool parseSwitch(StringRef text, std::optional<bool> &out) {
  if (text == "auto")
    return true;
  if (text != "on" && text != "off")
    return false;
  out = text == "on";
  return true;
}

/// "auto", "normal", "first" or "last" as an L2 priority override.
bool parseL2(StringRef text, std::optional<L2Priority> &out) {
  if (text == "auto")
    return true;
  std::optional<L2Priority> p = llvm::StringSwitch<std::optional<L2Priority>>(text)
                                    .Case("normal", L2Priority::normal)
                                    .Case("first", L2Priority::evict_first)
                                    .Case("last", L2Priority::evict_last)
                                    .Default(std::nullopt);
  out = p;
  return p.has_value();
}

struct FlashAttnPlanPass
    : public flashattn::impl::FlashAttnPlanBase<FlashAttnPlanPass> {
  using Base::Base;

  /// The code-generation overrides of the options; false (reported) for a
  /// value they do not take.
  bool overrides(Sm90CodegenOverrides &o) {
    for (auto [name, text, slot] :
         {std::tuple{"scheduler-barrier", &schedulerBarrier, &o.schedulerBarrier},
          std::tuple{"tma-store", &tmaStore, &o.tmaStore},
          std::tuple{"early-q-release", &earlyQRelease, &o.earlyQRelease},
          std::tuple{"predicated-q-release", &predicatedQRelease, &o.predicatedQRelease},
          std::tuple{"prefetch-next-q", &prefetchNextQ, &o.prefetchNextQ},
          std::tuple{"conditional-rescale", &conditionalRescale, &o.conditionalRescale},
          std::tuple{"kv-row-copies", &kvRowCopies, &o.kvRowCopies},
          std::tuple{"warp-specialize", &warpSpecialize, &o.warpSpecialize},
          std::tuple{"intra-wg-overlap", &intraWGOverlap, &o.intraWGOverlap},
          std::tuple{"fused-merge", &fusedMerge, &o.fusedMerge}})
      if (!parseSwitch(*text, *slot)) {
        getOperation()->emitError() << "flashattn-plan: " << name
                                    << " takes auto, on or off, got '" << *text << "'";
        return false;
      }
    for (auto [name, text, slot] : {std::tuple{"l2-hint-q", &l2HintQ, &o.l2HintQ},
                                    std::tuple{"l2-hint-kv", &l2HintKV, &o.l2HintKV}})
      if (!parseL2(*text, *slot)) {
        getOperation()->emitError() << "flashattn-plan: " << name
                                    << " takes auto, normal, first or last, got '" << *text
                                    << "'";
        return false;
      }
    if (kvHeadsPerBlock < 0) {
      getOperation()->emitError()
          << "flashattn-plan: kv-heads-per-block must be 0 (automatic) or positive, got "
          << static_cast<int64_t>(kvHeadsPerBlock);
      return false;
    }
    o.kvHeadsPerBlock = kvHeadsPerBlock;
    return true;
  }

  /// The paged K's page size (0 unpaged).
  static int64_t pageSize(AttentionOp op) {
    return op.isPaged() ? cast<ShapedType>(op.getK().getType()).getDimSize(1) : 0;
  }

  /// The key block of flashattn-tile's sm90 kernel: 128 keys; at head_dim
  /// 256 64 (a warpgroup's O takes 128 registers a thread, and without a
  /// producer to give registers up, softcap with a score region spills at
  /// 80: ptxas); 64 with pages neither a multiple of 128 nor dividing it
  /// (192 keys: a block lies in one page or is whole pages).
  static int64_t tiledBlockN(AttentionOp op) {
    if (op.getHeadDim() > 128)
      return 64;
    int64_t ps = pageSize(op);
    if (ps > 0 && !ShapedType::isDynamic(ps) && ps % 128 && 128 % ps)
      return 64;
    return 128;
  }

  /// Whether flashattn-tile's sm90 kernel gets a producer warpgroup: but
  /// with softcap at head_dim 256, where a consumer's O takes 128 of the
  /// 232 registers setmaxnreg leaves it and ptxas spills (without a
  /// producer each of 256 threads has 255).
  static bool tiledWarpSpecialize(AttentionOp op) {
    return op.getHeadDim() <= 128 || !op.getSoftcap();
  }

  /// That kernel's consumer warpgroups: 3 where the builder's plan takes
  /// them (head_dim 64 without splits, windows, softcap or regions: the
  /// softmax-bound case), else 2. Unmasked 1.04-1.20x; causal (no turns,
  /// each consumer on its own rows' key blocks, no conditional rescale)
  /// 1.00-1.01x at 512 and 1k keys and 1.13-1.21x from 2k.
  static int64_t tiledConsumers(PlanAttr p) {
    return p.getConsumers() == 3 ? 3 : 2;
  }

  /// Whether that kernel overlaps P V with the next block's softmax: not
  /// with softcap at head_dim 128, where the in-flight O and P push ptxas
  /// past the consumers' 232 registers (4-8 bytes of spills with a mask).
  static bool tiledIntraWGOverlap(AttentionOp op) {
    return !(op.getSoftcap() && op.getHeadDim() >= 128);
  }

  /// Whether that kernel rescales conditionally: at every head_dim (the
  /// builder's from 128 only), since the rescale's branch also keeps the
  /// wait for the previous P V below the row maxima (1.015-1.04x at
  /// head_dim 64, causal and not); not at head_dim 256 with pages smaller
  /// than the key block in the split-KV form, where ptxas spills 8 bytes.
  static bool tiledConditionalRescale(AttentionOp op, PlanAttr p) {
    // Not with 3 consumers under a causal mask: 0.95-0.97x there.
    if (p.getConsumers() == 3 && op.getCausal() != CausalKind::none)
      return false;
    int64_t ps = pageSize(op);
    bool smallPages = ps > 0 && ps < tiledBlockN(op);
    return !(op.getHeadDim() == 256 && smallPages && p.getNumSplits() != 1);
  }

  /// Whether `op` is head_dim 256 prefill over dense K/V with no mask, no
  /// softcap and no regions (where the predicated early release was measured).
  static bool unmaskedHd256(AttentionOp op) {
    return op.getHeadDim() == 256 && !op.isPaged() && op.getCausal() == CausalKind::none &&
           op.getWindow().first < 0 && op.getWindow().second < 0 && !op.getSoftcap() &&
           op.getScore().empty() && op.getMask().empty();
  }

  /// Whether that kernel releases Q in a tile's last block (after its Q
  /// K^T): 1.02-1.10x at 512 and 1k keys unmasked at head_dim 64 and 128,
  /// and under a causal mask at head_dim 64 1.05-1.13x to 2k keys (1.00x
  /// at 8k). At head_dim 256 only unmasked, as the predicated arrive
  /// (1.002-1.017x); the branch there was 0.96-0.97x causal and 0.97-0.99x
  /// unmasked from 2k keys.
  static bool tiledEarlyQRelease(AttentionOp op) {
    return op.getHeadDim() < 256 || unmaskedHd256(op);
  }

  /// Whether that release, where the key-block loop is split at the mask's
  /// boundary, is a predicated arrive in the masked loop only: at head_dim
  /// 128 under a causal mask or a right window, where a branch around the
  /// arrive in either loop made ptxas spill 32-40 bytes (1.02-1.07x at 512
  /// to 2k keys causal against the release after the loop); elsewhere a
  /// branch (the predicated arrive was 5-17% slower at head_dim 64, with 3
  /// consumers), in the masked loop only under a causal mask or a right
  /// window (flashattn-sm90-warpgroup), else in both loops.
  static bool tiledPredicatedQRelease(AttentionOp op) {
    return (op.getHeadDim() == 128 &&
            (op.getCausal() != CausalKind::none || op.getWindow().second >= 0)) ||
           unmaskedHd256(op);
  }

  /// Whether that kernel, taking its tiles from the launch's counter (the
  /// lpt schedule of a causal mask), gives Q two buffers and loads the next
  /// tile's Q before this one's is released (ahead of tiles of at most 16
  /// key blocks: flashattn-sm90-warpgroup): at head_dim 128 causal
  /// 1.5-3.7% faster from 512 to 2k keys, within 0.5% from 4k (H100); at
  /// head_dim 64 causal 1.3-5.7% faster to 2k keys; at head_dim 256 two
  /// buffers do not fit.
  static bool tiledPrefetchNextQ(AttentionOp op, PlanAttr p) {
    return op.getHeadDim() <= 128 && op.getCausal() != CausalKind::none &&
           p.getSchedule() == Schedule::lpt && !sm90UsesTileTable(op);
  }

  /// `op`'s plan: the computed one with the tile overrides, and on sm90 its
  /// code-generation choices.
  FailureOr<PlanAttr> planFor(AttentionOp op, Target t, const Sm90CodegenOverrides &o) {
    PlanAttr p = computePlan(op, t, numSMs);
    // flashattn-tile's sm90 kernel: warpgroups of 64 rows (tiledConsumers).
    bool tiledSm90 = tiled && t == Target::sm90;
    int64_t c = consumers ? consumers : tiledSm90 ? tiledConsumers(p) : p.getConsumers();
    int64_t bm = blockM                                        ? blockM
                 : (consumers || tiledSm90) && t == Target::sm90 ? 64 * c
                                                                 : p.getBlockM();
    int64_t bn = blockN ? blockN : tiledSm90 ? tiledBlockN(op) : p.getBlockN();
    // Under a left window a tile's keys are bounded by it, not by its
    // m_block: that kernel keeps the static order (the dynamic one spilled 4
    // bytes at head_dim 256 with 5 splits).
    Schedule schedule =
        tiledSm90 && op.getWindow().first >= 0 ? Schedule::static_ : p.getSchedule();
    // Checked: an override can break the plan's rules (a host block-n past
    // kMaxHostTileDim), reported on the op instead of an invalid attribute.
    p = PlanAttr::getChecked([&] { return op.emitError("flashattn-plan: "); }, op.getContext(),
                             p.getTarget(), bm, bn,
                             stages ? stages : p.getStages(), c, schedule,
                             p.getNumSplits(), p.getPackGqa(), Sm90CodegenAttr());
    if (!p)
      return failure();
    if (t != Target::sm90)
      return p;
    std::string why;
    Sm90CodegenOverrides chosen = o;
    if (tiledSm90 && !chosen.warpSpecialize)
      chosen.warpSpecialize = tiledWarpSpecialize(op);
    if (tiledSm90 && !chosen.intraWGOverlap)
      chosen.intraWGOverlap = *chosen.warpSpecialize && tiledIntraWGOverlap(op);
    if (tiledSm90 && !chosen.conditionalRescale)
      chosen.conditionalRescale = tiledConditionalRescale(op, p);
    if (tiledSm90 && !chosen.earlyQRelease)
      chosen.earlyQRelease = tiledEarlyQRelease(op);
    if (tiledSm90 && !chosen.predicatedQRelease)
      chosen.predicatedQRelease = tiledPredicatedQRelease(op);
    if (tiledSm90 && !chosen.prefetchNextQ)
      chosen.prefetchNextQ = tiledPrefetchNextQ(op, p);
    // O's TMA store: not with a score region, where ptxas spilled 116 bytes
    // (head_dim 128, causal).
    if (tiledSm90 && !chosen.tmaStore.has_value() && !op.getScore().empty())
      chosen.tmaStore = false;
    // O's rescale under the next Q K^T measured 0.5-1.2% slower in that
    // kernel at head_dim 128 (the builder's gains 1-2%): not taken there.
    if (tiledSm90 && !chosen.rescaleUnderQK.has_value())
      chosen.rescaleUnderQK = false;
    FailureOr<Sm90CodegenAttr> cg = chooseSm90Codegen(op, p, chosen, why);
    if (failed(cg)) {
      op.emitError("flashattn-plan: ") << why;
      return failure();
    }
    return PlanAttr::get(op.getContext(), p.getTarget(), p.getBlockM(), p.getBlockN(),
                         p.getStages(), p.getConsumers(), p.getSchedule(), p.getNumSplits(),
                         p.getPackGqa(), *cg);
  }

  void runOnOperation() override {
    std::optional<Target> t = llvm::StringSwitch<std::optional<Target>>(target)
                                  .Case("host", Target::host)
                                  .Case("sm90", Target::sm90)
                                  .Default(std::nullopt);
    if (!t) {
      getOperation()->emitError()
          << "flashattn-plan: unknown target '" << target
          << "' (expected host or sm90)";
      return signalPassFailure();
    }
    // The options are printed through their int64_t values: a pass option
    // itself converts to char in a diagnostic ("got \xff" for -1).
    if (numSMs <= 0) {
      getOperation()->emitError() << "flashattn-plan: num-sms must be positive, got "
                                  << static_cast<int64_t>(numSMs);
      return signalPassFailure();
    }
    if (blockM < 0 || blockN < 0 || consumers < 0 || stages < 0) {
      getOperation()->emitError()
          << "flashattn-plan: block-m, block-n, consumers and stages must be "
             "0 (automatic) or positive, got block-m="
          << static_cast<int64_t>(blockM) << " block-n=" << static_cast<int64_t>(blockN)
          << " consumers=" << static_cast<int64_t>(consumers)
          << " stages=" << static_cast<int64_t>(stages);
      return signalPassFailure();
    }
    Sm90CodegenOverrides o;
    if (!overrides(o))
      return signalPassFailure();
    WalkResult result = getOperation()->walk([&](AttentionOp op) {
      if (op.getPlanAttr())
        return WalkResult::advance();
      FailureOr<PlanAttr> p = planFor(op, *t, o);
      if (failed(p))
        return WalkResult::interrupt();
      op.setPlanAttr(*p);
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
