//===- Sm90Spec.cpp - which sm_90a kernel a planned attention gets --------===//
//
// The checks (what the kernel covers, each failure a reason naming the
// values) and the code-generation choices (measured on the H200,
// docs/BENCHMARKS.md) that turn a planned flashattn.attention into a
// Sm90KernelSpec.
//
//===----------------------------------------------------------------------===//

#include "Sm90Spec.h"

#include "flashattn/Conversion/FlashAttnToNVGPU/Sm90Layout.h"
#include "flashattn/Transforms/PlanSm90.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

#include <tuple>

using namespace mlir;
using namespace mlir::flashattn;

namespace {
/// Records a failure reason.
struct Fail {
  std::string &why;
  LogicalResult operator()(const Twine &reason) const {
    why = reason.str();
    return failure();
  }
};
} // namespace

/// Element types, head dims and features the kernel covers.
static LogicalResult checkOperands(AttentionOp op, const Fail &fail) {
  PlanAttr plan = op.getPlanAttr();
  if (!plan || plan.getTarget() != Target::sm90)
    return fail("not planned for sm90");
  if (!isa<MemRefType>(op.getQ().getType()))
    return fail("needs the memref form (bufferize first)");
  Type elem = cast<ShapedType>(op.getQ().getType()).getElementType();
  if (!elem.isBF16() && !elem.isF16())
    return fail("the sm90 kernel takes bf16 or f16 inputs");
  bool partial = op.isSplitPartial();
  Type outElem = cast<ShapedType>(op.getOut().getType()).getElementType();
  if (!partial && outElem != elem)
    return fail("the sm90 kernel writes out in the input type");
  int64_t d = op.getHeadDim();
  if (d != op.getHeadDimV() || (d != 64 && d != 128 && d != 256))
    return fail("the sm90 kernel takes head_dim 64, 128 or 256 (= head_dim_v)");
  if (op.getAlibiSlopes())
    return fail("ALiBi is not in the sm90 kernel yet");
  if (op.getQStart())
    return fail("a tile of query rows (q_start, seqlen_q) is not in the sm90 kernel");
  return success();
}

/// Score / mask regions the kernel can inline.
static LogicalResult checkRegions(AttentionOp op, const Fail &fail) {
  for (Region *region : {&op.getScore(), &op.getMask()}) {
    if (region->empty())
      continue;
    // Regions are inlined into the kernel: they may use their arguments,
    // constants and arith ops only (what the kernel's LLVM lowering covers),
    // nothing defined outside (a bias table would need a kernel argument).
    std::string bad;
    region->walk([&](Operation *inner) {
      if (!bad.empty())
        return;
      if (inner->getName().getDialectNamespace() != "arith" && !isa<YieldOp>(inner))
        bad = "score/mask regions on sm90 take arith ops only (found '" +
              inner->getName().getStringRef().str() + "')";
      // Scalars the NVPTX backend lowers inline: integers up to 64 bits
      // (wider ones need library calls it does not have), index, and f16,
      // bf16, f32, f64 (no f8 / f4 conversions in the kernel's lowering).
      auto scalar = [](Type t) {
        if (auto i = dyn_cast<IntegerType>(t))
          return i.getWidth() <= 64;
        return t.isIndex() || t.isF16() || t.isBF16() || t.isF32() || t.isF64();
      };
      for (TypeRange types : {TypeRange(inner->getOperandTypes()),
                              TypeRange(inner->getResultTypes())})
        for (Type t : types)
          if (bad.empty() && !scalar(t)) {
            std::string text;
            llvm::raw_string_ostream os(text);
            os << "score/mask regions on sm90 compute on integers of up to 64 "
                  "bits, index, f16, bf16, f32 or f64 only (found '"
               << t << "' in '" << inner->getName().getStringRef() << "')";
            bad = text;
          }
      // Constants hoisted out of the region by folding are fine when they
      // are arith.constant: they are cloned into the kernel with the region
      // (other constant-like ops, e.g. ub.poison, have no lowering there).
      // A use of an outside value is the reason reported, over the op's
      // own (a memref.load of a table says what the kernel lacks).
      for (Value v : inner->getOperands())
        if (!region->isAncestor(v.getParentRegion()) &&
            !(matchPattern(v, m_Constant()) && v.getDefiningOp() &&
              isa<arith::ConstantOp>(v.getDefiningOp())))
          bad = "score/mask regions on sm90 cannot use values defined outside "
                "them (a bias table or document ids need a kernel argument)";
    });
    if (!bad.empty())
      return fail(bad);
  }
  return success();
}

std::string mlir::flashattn::sm90OperandsUnsupported(AttentionOp op) {
  std::string why;
  Fail fail{why};
  if (failed(checkOperands(op, fail)) || failed(checkRegions(op, fail)))
    return why;
  return "";
}

/// A plan the kernel can hold.
static LogicalResult checkPlan(AttentionOp op, PlanAttr plan, const Fail &fail) {
  bool partial = op.isSplitPartial();
  if (plan.getNumSplits() > 1 && !partial)
    return fail("split-KV needs the partial form (run flashattn-split-kv first)");
  int64_t consumers = plan.getConsumers(), blockN = plan.getBlockN();
  if (consumers < 1 || consumers > 3 || plan.getBlockM() != 64 * consumers)
    return fail("the sm90 kernel takes 1 to 3 consumer warpgroups of 64 rows "
                "each (block_m = 64 x consumers); the plan has block_m = " +
                Twine(plan.getBlockM()) + ", consumers = " + Twine(consumers));
  if (blockN % 16 != 0 || blockN < 16 || blockN > 256)
    return fail("the sm90 kernel takes block_n a multiple of 16 in [16, 256] "
                "(wgmma N and k16 slices of P); the plan has " + Twine(blockN));
  if (plan.getStages() < 2 || plan.getStages() > 4)
    return fail("the sm90 kernel takes 2 to 4 K/V stages; the plan has " +
                Twine(plan.getStages()));
  return success();
}

/// The spec's sizes and the op's semantics.
static FailureOr<Sm90KernelSpec> baseSpec(AttentionOp op, PlanAttr plan, const Fail &fail) {
  int64_t d = op.getHeadDim(), consumers = plan.getConsumers(), blockN = plan.getBlockN();
  bool partial = op.isSplitPartial();
  Type elem = cast<ShapedType>(op.getQ().getType()).getElementType();
  Sm90KernelSpec spec;
  spec.headDim = d;
  spec.blockN = blockN;
  spec.consumers = consumers;
  spec.stages = plan.getStages();
  sm90DefaultRegisters(spec);
  // 227 KB of shared memory per block (sm_90, opt-in above 48 KB).
  if (int64_t bytes = sm90SharedMemoryBytes(spec); bytes > kSm90MaxSharedMemory)
    return fail("the plan needs " + Twine(bytes) +
                " bytes of shared memory (Q, stages x K/V, mbarriers); sm_90 "
                "has 232448 per block");
  spec.f16 = elem.isF16();
  spec.causal = static_cast<int>(op.getCausal());
  spec.lse = static_cast<bool>(op.getLse());
  spec.scale = op.getEffectiveScale();
  spec.softcap = op.getSoftcap() ? op.getSoftcap()->convertToDouble() : 0.0;
  std::tie(spec.windowLeft, spec.windowRight) = op.getWindow();
  // Sides of 2^30 keys or more are no bound (i32 positions).
  spec.windowLeft = sm90WindowSide(spec.windowLeft);
  spec.windowRight = sm90WindowSide(spec.windowRight);
  // The split-KV partial kernel keeps the static order: its work units
  // (tile, split) are about equal (splits cut the long tiles), and the
  // counter's memset is a stream operation a decode launch pays for
  // nothing. Its dense entry keeps the plan's order.
  spec.heavyFirst = plan.getSchedule() == Schedule::lpt && !partial;
  spec.scoreRegion = !op.getScore().empty();
  spec.maskRegion = !op.getMask().empty();
  spec.splitPartial = partial;
  // Varlen and seqused_k: tiles from the runtime's per-launch table.
  spec.varlenQ = op.isVarlenQ();
  spec.varlenK = op.isVarlenK();
  // kv-cache append: a copy kernel writes k_new / v_new into the cache
  // first; the attention sees cache_seqlens[b] + S_new keys (the table).
  spec.tileTable = sm90UsesTileTable(op);
  return spec;
}

/// Paged KV: TMA boxes per page or per-row copies.
static LogicalResult pagedSpec(AttentionOp op, Sm90CodegenAttr cg, Sm90KernelSpec &spec,
                               const Fail &fail) {
  int64_t d = spec.headDim, consumers = spec.consumers, blockN = spec.blockN;
  if (op.isPaged()) {
    int64_t ps = cast<ShapedType>(op.getK().getType()).getDimSize(1);
    if (ShapedType::isDynamic(ps) || ps < 1)
      return fail("paged KV on sm90 needs a static page size");
    // One TMA box per page where each lands 1024-byte aligned (the
    // 128-byte swizzle's atom): pages holding whole key blocks, or dividing
    // a block in multiples of 8 rows. Otherwise per-row copies.
    bool boxes = sm90PageBoxes(ps, blockN);
    spec.kvRowCopies = cg.getKvRowCopies();
    if (!spec.kvRowCopies && !boxes)
      return fail("paged KV by TMA boxes on sm90 takes page sizes that are a "
                  "multiple of block_n, or divide it and are a multiple of 8 "
                  "(each box 1024-byte aligned); page_size = " +
                  Twine(ps) + ", block_n = " + Twine(blockN) +
                  " (the plan's kv_row_copies: flashattn-plan's kv-row-copies=auto copies rows)");
    if (spec.kvRowCopies && (blockN * d / 8) % 128 != 0)
      return fail("per-row KV copies need block_n x head_dim / 8 to be a "
                  "multiple of 128 (16-byte chunks over 128 threads)");
    // Per-row copies keep the 40 / 232 split of 2 consumers; at head_dim
    // 256 the copying producer and the consumers fit only with key blocks
    // of 32 (with 64, ptxas spills at every split tried: 40 / 232, 48 /
    // 224, 56 / 216), which the plan picks for such pages.
    if (spec.kvRowCopies && (consumers != 2 || (d > 128 && blockN > 32)))
      return fail("per-row KV copies (pages below 8 keys) need 2 consumer "
                  "warpgroups, and key blocks of at most 32 at head_dim 256; "
                  "the plan has " +
                  Twine(consumers) + " consumers, head_dim " + Twine(d) + ", block_n " +
                  Twine(blockN));
    spec.pageSize = ps;
  }
  return success();
}

/// pack_gqa, and kv heads per key block over small pages.
static LogicalResult packSpec(AttentionOp op, PlanAttr plan, Sm90CodegenAttr cg,
                              Sm90KernelSpec &spec, const Fail &fail) {
  // pack_gqa (the plan's choice): the query heads of a kv head share tiles.
  if (plan.getPackGqa()) {
    int64_t hq = op.getNumQHeads(), hkv = op.getNumKVHeads();
    if (ShapedType::isDynamic(hq) || ShapedType::isDynamic(hkv))
      return fail("pack_gqa on sm90 needs static head counts");
    int64_t g = hq / hkv;
    if (g > 1 && (plan.getBlockM() % g != 0 || g > 256))
      return fail("pack_gqa on sm90 needs Hq / Hkv dividing block_m (the Q "
                  "tensor map's box is G heads x block_m / G positions); Hq / "
                  "Hkv = " + Twine(g) + ", block_m = " + Twine(plan.getBlockM()));
    spec.packGroups = std::max<int64_t>(g, 1);
  }
  // pack_gqa over pages smaller than a key block: HP kv heads per block
  // (the plan's choice, checked there), so that a TMA box holds HP heads
  // of a page.
  spec.kvHeadsPerBlock = cg.getKvHeadsPerBlock();
  return success();
}

static L2Hint l2Hint(L2Priority p) {
  return p == L2Priority::evict_first  ? L2Hint::evictFirst
         : p == L2Priority::evict_last ? L2Hint::evictLast
                                       : L2Hint::none;
}

/// The plan's code-generation choices.
static void codegenChoices(Sm90CodegenAttr cg, Sm90KernelSpec &spec) {
  spec.schedulerBarrier = cg.getSchedulerBarrier();
  spec.tmaStore = cg.getTmaStore();
  spec.earlyQRelease = cg.getEarlyQRelease();
  spec.conditionalRescale = cg.getConditionalRescale();
  spec.rescaleUnderQK = cg.getRescaleUnderQk();
  spec.reduceChains = cg.getReduceChains();
  spec.l2HintQ = l2Hint(cg.getL2HintQ());
  spec.l2HintKV = l2Hint(cg.getL2HintKv());
}

FailureOr<Sm90KernelSpec> mlir::flashattn::sm90SpecFor(AttentionOp op, std::string &why) {
  Fail fail{why};
  PlanAttr plan = op.getPlanAttr();
  if (failed(checkOperands(op, fail)) || failed(checkRegions(op, fail)) ||
      failed(checkPlan(op, plan, fail)))
    return failure();
  // The plan's code-generation choices (flashattn-plan's automatic ones for
  // a plan without them), checked against the op.
  FailureOr<Sm90CodegenAttr> cg = chooseSm90Codegen(
      op, plan,
      plan.getSm90() ? Sm90CodegenOverrides::forced(plan.getSm90()) : Sm90CodegenOverrides(),
      why);
  if (failed(cg))
    return failure();
  if (plan.getSm90() && *cg != plan.getSm90()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "the plan's sm90 code-generation choices " << plan.getSm90()
       << " are not all possible for this op; it can take " << *cg;
    return fail(text);
  }
  FailureOr<Sm90KernelSpec> spec = baseSpec(op, plan, fail);
  if (failed(spec) || failed(pagedSpec(op, *cg, *spec, fail)))
    return failure();
  bool partial = op.isSplitPartial();
  if (partial && (cast<ShapedType>(op.getOut().getType()).isDynamicDim(0) ||
                  !op.getLse()))
    return fail("the partial form needs a static number of splits and lse");
  if (failed(packSpec(op, plan, *cg, *spec, fail)))
    return failure();
  codegenChoices(*cg, *spec);
  if (partial) {
    CombineOp combine = op.getPartialCombine();
    if (!combine)
      return fail("the partial form needs the flashattn.combine that reads its "
                  "out and lse directly (memref form)");
    Type combineElem =
        cast<ShapedType>(combine.getOut().getType()).getElementType();
    if (!combineElem.isBF16() && !combineElem.isF16())
      return fail("the sm90 combine writes bf16 or f16");
  }
  return spec;
}
