//===- FlashAttnToNVGPU.cpp - planned attention to sm_90a kernels ---------===//
//
// convert-flashattn-to-nvgpu: each flashattn.attention planned for sm90 gets
// an sm_90a kernel (Sm90Kernel.cpp) in a gpu.module of the enclosing module;
// the op is annotated with its kernels and their ABIs (flashattn.sm90) and
// stays as the host-side description of the launch.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Conversion/Passes.h"

#include "flashattn/Conversion/FlashAttnToNVGPU/Sm90Kernel.h"
#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>
#include <tuple>

namespace mlir::flashattn {
#define GEN_PASS_DEF_CONVERTFLASHATTNTONVGPU
#include "flashattn/Conversion/Passes.h.inc"
} // namespace mlir::flashattn

using namespace mlir;
using namespace mlir::flashattn;

/// The op's kernels: a #flashattn.sm90_entries.
static constexpr StringLiteral kEntriesAttr = "flashattn.sm90";

/// @<name>_module::@<name><suffix>.
static SymbolRefAttr entryRef(MLIRContext *ctx, StringRef name, StringRef suffix = "") {
  return SymbolRefAttr::get(StringAttr::get(ctx, name + "_module"),
                            {FlatSymbolRefAttr::get(StringAttr::get(ctx, name + suffix))});
}

/// The op's #flashattn.sm90_entries: its kernels in `module` (`name`,
/// `<name>_dense`, `<name>_append`, `<name>_combine`, the twins) and each
/// one's #flashattn.kernel_abi, read from the functions' flashattn.abi
/// (none with the text generator).
static Sm90EntriesAttr entriesAttr(gpu::GPUModuleOp module, StringRef name,
                                   const Sm90KernelSpec &spec, bool dense, bool append,
                                   bool combine, int64_t packedGroups) {
  MLIRContext *ctx = module.getContext();
  SmallVector<NamedAttribute> abis;
  for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
    if (auto abi = fn->getAttrOfType<KernelAbiAttr>("flashattn.abi"))
      abis.push_back(NamedAttribute(fn.getSymNameAttr(), abi));
  auto ref = [&](bool present, StringRef suffix) {
    return present ? entryRef(ctx, name, suffix) : SymbolRefAttr();
  };
  return Sm90EntriesAttr::get(ctx, entryRef(ctx, name), ref(dense, "_dense"),
                              ref(append, "_append"), ref(combine, "_combine"), packedGroups,
                              spec.kvHeadsPerBlock, spec.kvRowCopies,
                              abis.empty() ? DictionaryAttr() : DictionaryAttr::get(ctx, abis));
}

/// The flashattn.combine that reads the partial results of `op` (split-KV
/// partial form, memref form), or null.
static CombineOp findCombine(AttentionOp op) {
  for (Operation *user : op.getOut().getUsers())
    if (auto c = dyn_cast<CombineOp>(user);
        c && c.getPartialOut() == op.getOut() && c.getPartialLse() == op.getLse() &&
        isa<MemRefType>(c.getOut().getType()))
      return c;
  return {};
}

/// The kernel spec of `op`, or a failure reason.
static FailureOr<Sm90KernelSpec> specFor(AttentionOp op, std::string &why,
                                         const Sm90CodegenOptions &options) {
  PlanAttr plan = op.getPlanAttr();
  auto fail = [&](const Twine &reason) {
    why = reason.str();
    return failure();
  };
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
  Sm90KernelSpec spec;
  spec.headDim = d;
  spec.blockN = blockN;
  spec.consumers = consumers;
  spec.stages = plan.getStages();
  sm90DefaultRegisters(spec);
  // 227 KB of shared memory per block (sm_90, opt-in above 48 KB).
  if (int64_t bytes = sm90SharedMemoryBytes(spec); bytes > 227 * 1024)
    return fail("the plan needs " + Twine(bytes) +
                " bytes of shared memory (Q, stages x K/V, mbarriers); sm_90 "
                "has 232448 per block");
  spec.f16 = elem.isF16();
  spec.causal = static_cast<int>(op.getCausal());
  spec.lse = static_cast<bool>(op.getLse());
  spec.scale = op.getEffectiveScale();
  spec.softcap = op.getSoftcap() ? op.getSoftcap()->convertToDouble() : 0.0;
  std::tie(spec.windowLeft, spec.windowRight) = op.getWindow();
  // The kernel computes positions in i32 (i + Sk - Sq + right, i + Sk - Sq
  // - left). A window side of 2^30 keys or more excludes no key of any
  // sequence an sm90 GPU holds (Sk and Sq stay below 2^30: K and V of 2^30
  // keys at head_dim 64 take 256 GiB), exactly as no bound (-1) does, and
  // could overflow those sums: it becomes -1. (FlashAttention likewise
  // takes a side of at least seqlen_k as -1.)
  for (int64_t *side : {&spec.windowLeft, &spec.windowRight})
    if (*side >= (int64_t(1) << 30))
      *side = -1;
  // 3 consumers have 160 registers each: with a mask (the softmax in a
  // masked and an unmasked copy) the scheduler barrier makes ptxas spill,
  // so that case goes without it.
  bool tight = consumers == 3 && (spec.causal || spec.windowLeft >= 0 ||
                                  spec.windowRight >= 0);
  // FlashAttention-3 orders the consumers' GEMMs at head_dim <= 128 (bf16),
  // where the softmax is a large share of a block's time. At head_dim 256
  // it was 0-7% slower until the descriptors became warp-uniform; since
  // then -0.3% to +0.6% non-causal and -0.9% (512) to +1.7% causal
  // (docs/BENCHMARKS.md).
  spec.schedulerBarrier =
      options.schedulerBarrier.value_or(consumers >= 2 && !tight) && consumers >= 2;
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
  spec.tileTable = spec.varlenQ || spec.varlenK || op.getSequsedK() || op.isPaged() ||
                   op.hasAppend();
  if (op.isPaged()) {
    int64_t ps = cast<ShapedType>(op.getK().getType()).getDimSize(1);
    if (ShapedType::isDynamic(ps) || ps < 1)
      return fail("paged KV on sm90 needs a static page size");
    // One TMA box per page where each lands 1024-byte aligned (the
    // 128-byte swizzle's atom): pages holding whole key blocks, or dividing
    // a block in multiples of 8 rows. Otherwise per-row copies.
    bool boxes = ps % blockN == 0 || (blockN % ps == 0 && ps % 8 == 0);
    spec.kvRowCopies = options.kvRowCopies.value_or(!boxes);
    if (!spec.kvRowCopies && !boxes)
      return fail("paged KV by TMA boxes on sm90 takes page sizes that are a "
                  "multiple of block_n, or divide it and are a multiple of 8 "
                  "(each box 1024-byte aligned); page_size = " +
                  Twine(ps) + ", block_n = " + Twine(blockN) +
                  " (kv-row-copies=auto copies rows instead)");
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
  if (partial && (cast<ShapedType>(op.getOut().getType()).isDynamicDim(0) ||
                  !op.getLse()))
    return fail("the partial form needs a static number of splits and lse");
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
  // pack_gqa over pages smaller than a key block: HP kv heads per block, so
  // that a TMA box holds HP heads of a page (Sm90KernelSpec::
  // kvHeadsPerBlock). Automatic, for pages below 64 keys (boxes below 8 KB
  // of 64 columns): the fewest heads (2, 4, 8) that make boxes of 64 rows,
  // or the most that fit. Measured on the H200 (docs/BENCHMARKS.md): 16-key
  // pages lost 5-7% to dense decode in 2 KB boxes, 64-key pages (8 KB
  // boxes) 1-2%. (The one-head twins now read a page in one box, the page
  // panel layout; re-measured in session 12, the 4-head kernels still win
  // at batch 128 and tie at 64.)
  bool packable = spec.packGroups > 1 && spec.pageSize && !spec.kvRowCopies &&
                  spec.pageSize < blockN;
  if (packable) {
    int64_t ps = spec.pageSize, hkv = op.getNumKVHeads(), g = spec.packGroups;
    auto fits = [&](int64_t hp) {
      return 8 % hp == 0 && hkv % hp == 0 && blockN % (hp * ps) == 0 &&
             plan.getBlockM() % (g * hp) == 0 && g * hp <= 256;
    };
    int64_t hp = options.kvHeadsPerBlock;
    if (hp == 0) {
      hp = 1;
      for (int64_t c : {2, 4, 8}) {
        if (ps >= 64 || !fits(c))
          break;
        hp = c;
        if (c * ps >= 64)
          break;
      }
    } else if (hp > 1 && !fits(hp)) {
      return fail("kv-heads-per-block = " + Twine(hp) +
                  " needs to divide 8 and Hkv (" + Twine(hkv) +
                  "), hp x page_size to divide block_n (" + Twine(ps) + ", " +
                  Twine(blockN) + ") and hp x Hq / Hkv (" + Twine(g) +
                  ") to divide block_m (" + Twine(plan.getBlockM()) + ")");
    }
    spec.kvHeadsPerBlock = std::max<int64_t>(hp, 1);
  } else if (options.kvHeadsPerBlock > 1) {
    return fail("kv-heads-per-block applies to pack_gqa kernels over paged KV "
                "whose pages are smaller than block_n and go by TMA boxes");
  }
  // O through shared memory and a TMA store where its tile fits beside the
  // K/V stages (not in the f32 partial form). Measured on the H200: +1-6%
  // at head_dim 128 causal, but 3-8% slower with 3 consumers (head_dim 64),
  // which keep the direct stores.
  // Measured on the H200 (docs/BENCHMARKS.md): +1-13% at head_dim 64 and
  // 128 (+0-10% non-causal once its blocks were 128). At head_dim 256 it
  // was 8% slower for short causal sequences until the descriptors became
  // warp-uniform; since then -0.3% (causal 512) to +3.9% (most at 512 and
  // 1k non-causal).
  spec.earlyQRelease = options.earlyQRelease.value_or(true);
  // Measured: +3-10% at head_dim 256 (O is 128 registers a thread), +1% at
  // 128, 0-3% slower at 64 (the vote and branch cost more than 32 FMULs).
  spec.conditionalRescale = d >= 128;
  // Measured: +1-2% at head_dim 128, 0-2% slower at 64 and 256.
  spec.rescaleUnderQK = d == 128;
  // Row max and sum in 4 chains (Nsight Compute on hd128: a fixed-latency
  // dependency was the consumers' largest stall, twice cuDNN's). Measured:
  // head_dim 128 +0.1-0.5% non-causal and +0.7-1.6% causal, head_dim 256
  // unmasked +0.3-1.3%; 1-5% slower at head_dim 64 causal and 256 causal
  // (their registers are at the limit).
  spec.reduceChains =
      d == 128 || (d == 256 && spec.causal == 0 && spec.windowLeft < 0 && spec.windowRight < 0)
          ? 4
          : 1;
  // Not with the tile table: a TMA store of a tile's last rows would write
  // into the next sequence.
  if (!partial && spec.packGroups == 1 && !spec.tileTable &&
      options.tmaStore.value_or(consumers <= 2)) {
    Sm90KernelSpec withStore = spec;
    withStore.tmaStore = true;
    spec.tmaStore = sm90SharedMemoryBytes(withStore) <= 227 * 1024;
  }
  // L2 policies of the TMA loads. A tile reads its Q once: evict_first
  // (FlashAttention-3's choice). K/V stay evict_normal: measured on the H200
  // (docs/BENCHMARKS.md), evict_last changed prefill by under 0.5%, and
  // evict_first in decode (where one CTA reads each K/V block) gained 6-10%
  // at batch 1 / 32k keys but lost 2-5% at every larger shape.
  spec.l2HintQ = options.l2HintQ.value_or(L2Hint::evictFirst);
  spec.l2HintKV = options.l2HintKV.value_or(L2Hint::none);
  if (partial) {
    CombineOp combine = findCombine(op);
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

namespace {
struct AttentionToSm90Kernel : OpRewritePattern<AttentionOp> {
  AttentionToSm90Kernel(MLIRContext *ctx, const Sm90CodegenOptions &options)
      : OpRewritePattern(ctx), options(options) {}
  Sm90CodegenOptions options;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (op->hasAttr(kEntriesAttr))
      return rewriter.notifyMatchFailure(op, "kernel already generated");
    std::string why;
    FailureOr<Sm90KernelSpec> spec = specFor(op, why, options);
    if (failed(spec))
      return rewriter.notifyMatchFailure(op, why);
    auto module = op->getParentOfType<ModuleOp>();
    // A fresh kernel name per op.
    int n = 0;
    std::string name;
    do
      name = "fa_sm90_" + std::to_string(n++);
    while (module.lookupSymbol(name + "_module"));
    spec->name = name;
    // Split-KV: the flashattn.combine reading this op's partial results
    // becomes a second kernel of the same module (one cubin, two entries),
    // and is fused into the partial kernel too (the runtime launches it
    // only where the fused merge cannot run).
    CombineOp combine = spec->splitPartial ? findCombine(op) : CombineOp();
    if (combine) {
      spec->fusedCombine = true;
      spec->mergeF16 =
          cast<ShapedType>(combine.getOut().getType()).getElementType().isF16();
    }
    // The kernels of the module, in order: the attention kernel, the
    // combine, the other attention entries, the append.
    rewriter.setInsertionPointToEnd(module.getBody());
    Location loc = op.getLoc();
    gpu::GPUModuleOp built;
    std::string text;
    if (options.textGenerator) {
      text = emitSm90AttentionKernel(*spec);
    } else {
      built = gpu::GPUModuleOp::create(rewriter, loc, name + "_module");
      rewriter.setInsertionPointToEnd(built.getBody());
      buildSm90AttentionKernel(rewriter, loc, *spec);
    }
    // More entries of the same module go before its closing brace.
    auto splice = [&](const std::string &entries) {
      text = text.substr(0, text.rfind("}\n")) + entries + "}\n";
    };
    if (combine) {
      Type outElem = cast<ShapedType>(combine.getOut().getType()).getElementType();
      Sm90CombineSpec cspec;
      cspec.name = name + "_combine";
      cspec.f16 = outElem.isF16();
      cspec.lse = static_cast<bool>(combine.getLse());
      if (options.textGenerator)
        splice(emitSm90CombineKernel(cspec));
      else
        buildSm90CombineKernel(rewriter, loc, cspec);
    }
    // More attention kernels: their llvm.func and shared-memory global,
    // without the gpu.module around them.
    auto addKernel = [&](const Sm90KernelSpec &extra) {
      if (!options.textGenerator) {
        buildSm90AttentionKernel(rewriter, loc, extra);
        return;
      }
      std::string body = emitSm90AttentionKernel(extra);
      body = body.substr(body.find("{\n") + 2);
      splice(body.substr(0, body.rfind("}\n")));
    };
    // Automatic splits: the same attention without splits, for launches
    // whose count comes out 1 (no partial results, no combine).
    bool dense = combine && options.denseEntry;
    Sm90KernelSpec dspec = *spec;
    if (dense) {
      dspec.name = name + "_dense";
      dspec.splitPartial = false;
      dspec.fusedCombine = false;
      dspec.heavyFirst = op.getPlanAttr().getSchedule() == Schedule::lpt;
      dspec.lse = static_cast<bool>(combine.getLse());
      addKernel(dspec);
    }
    // Automatic pack_gqa with dynamic sequence lengths: the same kernels
    // with the G query heads of a kv head packed into a tile's rows, for
    // launches whose queries of a kv head fit one tile (decode); the
    // runtime picks per launch.
    int64_t groups = 1;
    if (options.packedEntry && spec->packGroups == 1 && !op.getPackGqa().has_value() &&
        !ShapedType::isDynamic(op.getNumQHeads()) &&
        !ShapedType::isDynamic(op.getNumKVHeads()))
      groups = op.getNumQHeads() / op.getNumKVHeads();
    // Twins of the main kernel (and of the dense one): `<name>_<suffix>`
    // and `<name>_dense_<suffix>`, each changed by `change`.
    auto addTwins = [&](const char *suffix,
                        llvm::function_ref<void(Sm90KernelSpec &)> change) {
      SmallVector<Sm90KernelSpec, 2> twins = {*spec};
      if (dense)
        twins.push_back(dspec);
      for (Sm90KernelSpec twin : twins) {
        twin.name += std::string("_") + suffix;
        change(twin);
        addKernel(twin);
      }
    };
    bool packedEntry = groups > 1 && (64 * spec->consumers) % groups == 0;
    if (packedEntry)
      addTwins("packed", [&](Sm90KernelSpec &packed) {
        packed.packGroups = groups;
        packed.tmaStore = false;
      });
    // Several kv heads per key block: the same kernels with one
    // (`<name>_kv1`, `<name>_dense_kv1`), which the runtime launches when a
    // call has too few tiles to fill the SMs without splitting (a split
    // adds the combine).
    if (spec->kvHeadsPerBlock > 1)
      addTwins("kv1", [](Sm90KernelSpec &one) { one.kvHeadsPerBlock = 1; });
    // kv-cache append: the copy kernel is a third entry of the module.
    if (op.hasAppend()) {
      Sm90AppendSpec aspec;
      aspec.name = name + "_append";
      aspec.paged = op.isPaged();
      if (options.textGenerator)
        splice(emitSm90AppendKernel(aspec));
      else
        buildSm90AppendKernel(rewriter, loc, aspec);
    }

    gpu::GPUModuleOp cloned = built;
    if (options.textGenerator) {
      OwningOpRef<ModuleOp> parsed = parseSourceString<ModuleOp>(text, op.getContext());
      if (!parsed)
        return op.emitOpError("the generated sm90 kernel does not parse");
      auto gpuModule = *parsed->getOps<gpu::GPUModuleOp>().begin();
      rewriter.setInsertionPointToEnd(module.getBody());
      cloned = cast<gpu::GPUModuleOp>(rewriter.clone(*gpuModule.getOperation()));
    }
    // Inline the score / mask regions at the kernel's calls of their
    // stand-ins (region arguments -> call operands, yield -> call result).
    SmallVector<func::CallOp> calls;
    cloned.walk([&](func::CallOp call) { calls.push_back(call); });
    for (func::CallOp call : calls) {
      Region &region = call.getCallee().ends_with("_score") ? op.getScore()
                                                           : op.getMask();
      Block &body = region.front();
      IRMapping map;
      map.map(body.getArguments(), call.getOperands());
      rewriter.setInsertionPoint(call);
      for (Operation &inner : body.without_terminator()) {
        for (Value v : inner.getOperands())
          if (!map.contains(v) && !region.isAncestor(v.getParentRegion()))
            map.map(v, rewriter.clone(*v.getDefiningOp())->getResult(0));
        rewriter.clone(inner, map);
      }
      Value yielded = cast<YieldOp>(body.getTerminator()).getOperand(0);
      if (!map.contains(yielded) && !region.isAncestor(yielded.getParentRegion()))
        map.map(yielded, rewriter.clone(*yielded.getDefiningOp())->getResult(0));
      Value result = map.lookup(yielded);
      rewriter.replaceOp(call, result);
    }
    for (func::FuncOp stub : llvm::make_early_inc_range(cloned.getOps<func::FuncOp>()))
      rewriter.eraseOp(stub);
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    rewriter.getUnitAttr());
    rewriter.modifyOpInPlace(op, [&] {
      op->setAttr(kEntriesAttr,
                  entriesAttr(cloned, name, *spec, dense, op.hasAppend(),
                              static_cast<bool>(combine), packedEntry ? groups : 0));
    });
    if (combine)
      rewriter.modifyOpInPlace(combine, [&] {
        combine->setAttr(kEntriesAttr,
                         Sm90EntriesAttr::get(op.getContext(),
                                              entryRef(op.getContext(), name, "_combine"),
                                              nullptr, nullptr, nullptr, 0, 1, false,
                                              nullptr));
      });
    return success();
  }
};

struct ConvertFlashAttnToNVGPUPass
    : public flashattn::impl::ConvertFlashAttnToNVGPUBase<
          ConvertFlashAttnToNVGPUPass> {
  using ConvertFlashAttnToNVGPUBase::ConvertFlashAttnToNVGPUBase;

  void runOnOperation() override {
    Sm90CodegenOptions options;
    options.denseEntry = denseEntry;
    options.packedEntry = packedEntry;
    options.kvHeadsPerBlock = kvHeadsPerBlock;
    options.textGenerator = textGenerator;
    for (auto [text, slot] : {std::pair{&schedulerBarrier, &options.schedulerBarrier},
                              std::pair{&tmaStore, &options.tmaStore},
                              std::pair{&earlyQRelease, &options.earlyQRelease},
                              std::pair{&kvRowCopies, &options.kvRowCopies}}) {
      std::string value = *text;
      if (value == "on" || value == "off")
        *slot = value == "on";
      else if (value != "auto") {
        getOperation()->emitError()
            << "convert-flashattn-to-nvgpu: scheduler-barrier, tma-store, "
               "early-q-release and kv-row-copies take auto, on or off, got '"
            << value << "'";
        return signalPassFailure();
      }
    }
    for (auto [name, text, slot] :
         {std::tuple{"l2-hint-q", &l2HintQ, &options.l2HintQ},
          std::tuple{"l2-hint-kv", &l2HintKV, &options.l2HintKV}}) {
      std::string value = *text;
      if (value == "normal")
        *slot = L2Hint::none;
      else if (value == "first")
        *slot = L2Hint::evictFirst;
      else if (value == "last")
        *slot = L2Hint::evictLast;
      else if (value != "auto") {
        getOperation()->emitError()
            << "convert-flashattn-to-nvgpu: " << name
            << " takes auto, normal, first or last, got '" << value << "'";
        return signalPassFailure();
      }
    }
    RewritePatternSet patterns(&getContext());
    populateFlashAttnToNVGPUConversionPatterns(patterns, options);
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingOps);
    // No folding or constant hoisting: constants inside score / mask regions
    // must stay there (the regions are inlined into the kernel as they are).
    config.enableFolding(false);
    config.enableConstantCSE(false);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      return signalPassFailure();
    // Planned sm90 attention that did not get a kernel: say why.
    WalkResult result = getOperation()->walk([&](AttentionOp op) {
      PlanAttr plan = op.getPlanAttr();
      if (!plan || plan.getTarget() != Target::sm90 || op->hasAttr(kEntriesAttr))
        return WalkResult::advance();
      std::string why;
      (void)specFor(op, why, options);
      op.emitError("convert-flashattn-to-nvgpu: ") << why;
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace

void mlir::flashattn::populateFlashAttnToNVGPUConversionPatterns(
    RewritePatternSet &patterns, const Sm90CodegenOptions &options) {
  patterns.add<AttentionToSm90Kernel>(patterns.getContext(), options);
}
