//===- FlashAttnToNVGPU.cpp - planned attention to sm_90a kernels ---------===//
//
// convert-flashattn-to-nvgpu: each flashattn.attention planned for sm90 gets
// sm_90a kernels (built by Sm90KernelBuilder.cpp) in a gpu.module of the enclosing module;
// the op is annotated with its kernels and their ABIs (flashattn.sm90) and
// stays as the host-side description of the launch.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Conversion/Passes.h"

#include "flashattn/Conversion/FlashAttnToNVGPU/Sm90Kernel.h"
#include "Sm90Spec.h"
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
#include "flashattn/Utils/InPlaceRewrite.h"
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
/// one's #flashattn.kernel_abi, read from the functions' flashattn.abi.
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
                              DictionaryAttr::get(ctx, abis));
}

namespace {
/// The gpu.module the kernels of one op go to, made before its first
/// kernel; kernels are added in module order.
class KernelSink {
public:
  KernelSink(PatternRewriter &rewriter, ModuleOp module, Location loc, StringRef name,
             bool unpipelined)
      : rewriter(rewriter), module(module), loc(loc), name(name), unpipelined(unpipelined) {}

  void attention(const Sm90KernelSpec &spec) {
    if (!built) {
      rewriter.setInsertionPointToEnd(module.getBody());
      built = gpu::GPUModuleOp::create(rewriter, loc, name + "_module");
      rewriter.setInsertionPointToEnd(built.getBody());
    }
    if (unpipelined)
      buildSm90UnpipelinedKernel(rewriter, loc, spec);
    else
      buildSm90AttentionKernel(rewriter, loc, spec);
  }
  void combine(const Sm90CombineSpec &spec) { buildSm90CombineKernel(rewriter, loc, spec); }
  void append(const Sm90AppendSpec &spec) { buildSm90AppendKernel(rewriter, loc, spec); }
  gpu::GPUModuleOp finish() const { return built; }

private:
  PatternRewriter &rewriter;
  ModuleOp module;
  Location loc;
  std::string name;
  bool unpipelined;
  gpu::GPUModuleOp built;
};

/// The entries beside the main kernel.
struct Entries {
  CombineOp combine; ///< split-KV: the merge kernel's op
  bool dense = false;
  int64_t packedGroups = 0;
};

/// Inlines `op`'s score / mask regions at the kernel's calls of their
/// stand-ins (region arguments -> call operands, yield -> call result;
/// constants that folding hoisted out of a region are cloned along) and
/// erases the stand-ins.
void inlineRegions(AttentionOp op, gpu::GPUModuleOp kernels, PatternRewriter &rewriter) {
  SmallVector<func::CallOp> calls;
  kernels.walk([&](func::CallOp call) { calls.push_back(call); });
  for (func::CallOp call : calls) {
    Region &region = call.getCallee().ends_with("_score") ? op.getScore() : op.getMask();
    Block &body = region.front();
    IRMapping map;
    map.map(body.getArguments(), call.getOperands());
    rewriter.setInsertionPoint(call);
    auto outside = [&](Value v) {
      if (!map.contains(v) && !region.isAncestor(v.getParentRegion()))
        map.map(v, rewriter.clone(*v.getDefiningOp())->getResult(0));
    };
    for (Operation &inner : body.without_terminator()) {
      for (Value v : inner.getOperands())
        outside(v);
      rewriter.clone(inner, map);
    }
    Value yielded = cast<YieldOp>(body.getTerminator()).getOperand(0);
    outside(yielded);
    rewriter.replaceOp(call, map.lookup(yielded));
  }
  for (func::FuncOp stub : llvm::make_early_inc_range(kernels.getOps<func::FuncOp>()))
    rewriter.eraseOp(stub);
}

/// The kernel spec of `op` under `options`, or why there is none.
FailureOr<Sm90KernelSpec> specFor(AttentionOp op, const Sm90CodegenOptions &options,
                                  std::string &why) {
  FailureOr<Sm90KernelSpec> spec = sm90SpecFor(op, why);
  if (succeeded(spec) && options.unpipelined) {
    // The unpipelined kernel packs GQA heads only when the op asks: an
    // automatic pack_gqa (the plan's choice) is dropped.
    if (!op.getPackGqa().has_value()) {
      spec->packGroups = 1;
      spec->kvHeadsPerBlock = 1;
    }
    std::string lacks = sm90UnpipelinedUnsupported(*spec);
    if (!lacks.empty()) {
      why = "the unpipelined kernel does not take " + lacks;
      return failure();
    }
  }
  return spec;
}

struct AttentionToSm90Kernel : OpRewritePattern<AttentionOp> {
  AttentionToSm90Kernel(MLIRContext *ctx, const Sm90CodegenOptions &options)
      : OpRewritePattern(ctx), options(options) {}
  Sm90CodegenOptions options;

  /// Adds every kernel of `op` to `sink`: the attention kernel, the
  /// combine, the dense entry, the twins, the append.
  Entries addKernels(AttentionOp op, Sm90KernelSpec &spec, KernelSink &sink) const {
    Entries e;
    // Split-KV: the flashattn.combine reading this op's partial results
    // becomes a second kernel of the same module (one cubin, two entries),
    // and is fused into the partial kernel too (the runtime launches it
    // only where the fused merge cannot run).
    e.combine = spec.splitPartial ? op.getPartialCombine() : CombineOp();
    if (e.combine) {
      // The unpipelined kernel leaves the merge to the combine kernel.
      spec.fusedCombine = !options.unpipelined;
      spec.mergeF16 = cast<ShapedType>(e.combine.getOut().getType()).getElementType().isF16();
    }
    sink.attention(spec);
    if (e.combine) {
      Sm90CombineSpec cspec;
      cspec.name = spec.name + "_combine";
      cspec.f16 = spec.mergeF16;
      cspec.lse = static_cast<bool>(e.combine.getLse());
      sink.combine(cspec);
    }
    // Automatic splits: the same attention without splits, for launches
    // whose count comes out 1 (no partial results, no combine).
    e.dense = e.combine && options.denseEntry;
    Sm90KernelSpec dspec = spec;
    if (e.dense) {
      dspec.name = spec.name + "_dense";
      dspec.splitPartial = false;
      dspec.fusedCombine = false;
      dspec.heavyFirst = op.getPlanAttr().getSchedule() == Schedule::lpt;
      dspec.lse = static_cast<bool>(e.combine.getLse());
      sink.attention(dspec);
    }
    // Twins of the main kernel (and of the dense one): `<name>_<suffix>`
    // and `<name>_dense_<suffix>`, each changed by `change`.
    auto addTwins = [&](const char *suffix, llvm::function_ref<void(Sm90KernelSpec &)> change) {
      SmallVector<Sm90KernelSpec, 2> twins = {spec};
      if (e.dense)
        twins.push_back(dspec);
      for (Sm90KernelSpec twin : twins) {
        twin.name += std::string("_") + suffix;
        change(twin);
        sink.attention(twin);
      }
    };
    // Automatic pack_gqa with dynamic sequence lengths: the same kernels
    // with the G query heads of a kv head packed into a tile's rows, for
    // launches whose queries of a kv head fit one tile (decode); the
    // runtime picks per launch.
    int64_t groups = 1;
    if (options.packedEntry && !options.unpipelined && spec.packGroups == 1 &&
        !op.getPackGqa().has_value() &&
        !ShapedType::isDynamic(op.getNumQHeads()) && !ShapedType::isDynamic(op.getNumKVHeads()))
      groups = op.getNumQHeads() / op.getNumKVHeads();
    if (groups > 1 && (64 * spec.consumers) % groups == 0) {
      e.packedGroups = groups;
      addTwins("packed", [&](Sm90KernelSpec &packed) {
        packed.packGroups = groups;
        packed.tmaStore = false;
      });
    }
    // Several kv heads per key block: the same kernels with one
    // (`<name>_kv1`, `<name>_dense_kv1`), which the runtime launches when a
    // call has too few tiles to fill the SMs without splitting (a split
    // adds the combine).
    if (spec.kvHeadsPerBlock > 1)
      addTwins("kv1", [](Sm90KernelSpec &one) { one.kvHeadsPerBlock = 1; });
    // kv-cache append: the copy kernel is the module's last entry.
    if (op.hasAppend()) {
      Sm90AppendSpec aspec;
      aspec.name = spec.name + "_append";
      aspec.paged = op.isPaged();
      sink.append(aspec);
    }
    return e;
  }

  LogicalResult matchAndRewrite(AttentionOp op, PatternRewriter &rewriter) const override {
    if (op->hasAttr(kEntriesAttr))
      return rewriter.notifyMatchFailure(op, "kernel already generated");
    std::string why;
    FailureOr<Sm90KernelSpec> spec = specFor(op, options, why);
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
    KernelSink sink(rewriter, module, op.getLoc(), name, options.unpipelined);
    Entries e = addKernels(op, *spec, sink);
    gpu::GPUModuleOp kernels = sink.finish();
    inlineRegions(op, kernels, rewriter);
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), rewriter.getUnitAttr());
    rewriter.modifyOpInPlace(op, [&] {
      op->setAttr(kEntriesAttr, entriesAttr(kernels, name, *spec, e.dense, op.hasAppend(),
                                            static_cast<bool>(e.combine), e.packedGroups));
    });
    if (e.combine)
      rewriter.modifyOpInPlace(e.combine, [&] {
        e.combine->setAttr(kEntriesAttr,
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
    options.unpipelined = unpipelined;
    RewritePatternSet patterns(&getContext());
    populateFlashAttnToNVGPUConversionPatterns(patterns, options);
    // No folding or constant hoisting: constants inside score / mask regions
    // must stay there (the regions are inlined into the kernel as they are).
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     inPlaceRewriteConfig())))
      return signalPassFailure();
    // Planned sm90 attention that did not get a kernel: say why.
    WalkResult result = getOperation()->walk([&](AttentionOp op) {
      PlanAttr plan = op.getPlanAttr();
      if (!plan || plan.getTarget() != Target::sm90 || op->hasAttr(kEntriesAttr))
        return WalkResult::advance();
      std::string why;
      (void)specFor(op, options, why);
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
