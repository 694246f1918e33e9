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

  // sm90: flashattn-tile's kernel in FlashAttention-3's forward shape
  // (arXiv 2407.08608): a TMA producer warpgroup and consumer warpgroups of
  // 64 query rows each, 2 K/V stages, key blocks within 227 KB of shared
  // memory and the consumers' 232 registers (O, S and P of a block live at
  // once). 2 consumers over 128-row tiles; 3 over 192-row tiles at head_dim
  // 64 (softmax-bound: the GEMMs are short) without splits (explicit or
  // automatic: the partial kernel's f32 epilogue and the packed twin spill
  // with 160 registers), paged KV, windows, softcap or regions (more
  // registers per score): unmasked 1.04-1.20x the 2-consumer kernel, causal
  // 1.00-1.01x at 512 and 1k keys and 1.13-1.21x from 2k. Key blocks of
  // 128 keys; 64 at head_dim 256 (a warpgroup's O takes 128 registers a
  // thread, and without a producer to give registers up, softcap with a
  // score region spills at 80: ptxas), and 64 with pages neither a multiple
  // of 128 keys nor dividing it (a block lies in one page or is whole
  // pages).
  int64_t consumers = 2, blockN = 128;
  int64_t d = op.getHeadDim();
  const bool paged = op.isPaged();
  int64_t ps = paged ? cast<ShapedType>(op.getK().getType()).getDimSize(1) : 0;
  if (d > 128 || (ps > 0 && !ShapedType::isDynamic(ps) && ps % 128 && 128 % ps))
    blockN = 64;
  if (d <= 64 && !paged && opSplits == 1 && !op.getSoftcap() && op.getScore().empty() &&
      op.getMask().empty() && op.getWindow() == std::make_pair<int64_t, int64_t>(-1, -1))
    consumers = 3;
  int64_t blockM = 64 * consumers;
  // The persistent schedule is static, or lpt (longest tiles first) under
  // a causal mask, where a tile's work grows with its m_block; but static
  // under a left window, which bounds a tile's keys rather than its
  // m_block (the dynamic order also spilled 4 bytes at head_dim 256 with 5
  // splits).
  Schedule schedule = op.getCausal() != CausalKind::none && op.getWindow().first < 0
                          ? Schedule::lpt
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

  /// `text` (option `flag`) parsed into `slot` by `parser`; false, with an
  /// error naming the values it takes, where it does not parse.
  template <typename T>
  bool parse(StringRef flag, StringRef text, std::optional<T> &slot,
             bool (*parser)(StringRef, std::optional<T> &), StringRef values) {
    if (parser(text, slot))
      return true;
    getOperation()->emitError() << "flashattn-plan: " << flag << " takes " << values
                                << ", got '" << text << "'";
    return false;
  }

  /// The code-generation overrides of the options (Sm90Tuning.def); false
  /// (reported) for a value they do not take.
  bool overrides(Sm90CodegenOverrides &o) {
    bool ok = true;
#define FA_SM90_SWITCH(NAME, FLAG, DESC)                                                      \
  ok = ok && parse(FLAG, NAME, o.NAME, parseSwitch, "auto, on or off");
#define FA_SM90_L2(NAME, FLAG, DESC)                                                          \
  ok = ok && parse(FLAG, NAME, o.NAME, parseL2, "auto, normal, first or last");
#include "flashattn/Transforms/Sm90Tuning.def"
    if (!ok)
      return false;
    if (kvHeadsPerBlock < 0) {
      getOperation()->emitError()
          << "flashattn-plan: kv-heads-per-block must be 0 (automatic) or positive, got "
          << static_cast<int64_t>(kvHeadsPerBlock);
      return false;
    }
    o.kvHeadsPerBlock = kvHeadsPerBlock;
    return true;
  }

  /// `op`'s plan: the computed one with the tile overrides, and on sm90 its
  /// code-generation choices.
  FailureOr<PlanAttr> planFor(AttentionOp op, Target t, const Sm90CodegenOverrides &o) {
    PlanAttr p = computePlan(op, t, numSMs);
    // On sm90 a consumer warpgroup takes 64 rows: block_m follows a
    // consumers override.
    int64_t c = consumers ? consumers : p.getConsumers();
    int64_t bm = blockM                             ? blockM
                 : consumers && t == Target::sm90 ? 64 * c
                                                  : p.getBlockM();
    // Checked: an override can break the plan's rules (a host block-n past
    // kMaxHostTileDim), reported on the op instead of an invalid attribute.
    p = PlanAttr::getChecked([&] { return op.emitError("flashattn-plan: "); }, op.getContext(),
                             p.getTarget(), bm, blockN ? blockN : p.getBlockN(),
                             stages ? stages : p.getStages(), c, p.getSchedule(),
                             p.getNumSplits(), p.getPackGqa(), Sm90CodegenAttr());
    if (!p)
      return failure();
    if (t != Target::sm90)
      return p;
    return withSm90Codegen(op, p, o);
  }

  /// The sm90 plan `p` with its code-generation choices (chooseSm90Codegen).
  /// A consumer warpgroup takes 64 rows and setmaxnreg splits the
  /// registers for a producer and at most 3 consumers.
  FailureOr<PlanAttr> withSm90Codegen(AttentionOp op, PlanAttr p, const Sm90CodegenOverrides &o) {
    if (p.getConsumers() < 1 || p.getConsumers() > 3) {
      op.emitError("flashattn-plan: the sm90 kernel takes 1 to 3 consumer warpgroups, got ")
          << p.getConsumers();
      return failure();
    }
    std::string why;
    FailureOr<Sm90CodegenAttr> cg = chooseSm90Codegen(op, p, o, why);
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
      PlanAttr given = op.getPlanAttr();
      // A given sm90 plan without its code-generation choices gets the
      // automatic ones (the kernel's passes read them from the plan).
      if (given && given.getTarget() == Target::sm90 && !given.getSm90()) {
        FailureOr<PlanAttr> p = withSm90Codegen(op, given, o);
        if (failed(p))
          return WalkResult::interrupt();
        op.setPlanAttr(*p);
        return WalkResult::advance();
      }
      if (given)
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
