//===- HostJit.cpp - compile flashattn modules for the host in-process ----===//

#include "flashattn/Target/HostJit.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "flashattn/Dialect/FlashAttn/Transforms/BufferizableOpInterfaceImpl.h"
#include "flashattn/Dialect/FlashAttn/Transforms/DecompositionInterfaceImpl.h"
#include "flashattn/Dialect/FlashAttn/Transforms/TilingInterfaceImpl.h"
#include "flashattn/Pipelines/Pipelines.h"
#include "flashattn/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/TargetSelect.h"

using namespace mlir;

void mlir::flashattn::registerHostJitDependencies(DialectRegistry &registry) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registry.insert<FlashAttnDialect>();
  registerBufferizableOpInterfaceExternalModels(registry);
  registerDecompositionInterfaceExternalModels(registry);
  registerTilingInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

/// Tiles every flashattn.attention of `module` by `sizes` (scf.for loops).
static LogicalResult tileAttention(ModuleOp module, ArrayRef<int64_t> sizes) {
  using flashattn::AttentionOp;
  SmallVector<AttentionOp> ops;
  module.walk([&](AttentionOp op) { ops.push_back(op); });
  IRRewriter rewriter(module.getContext());
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(module.getContext(), sizes));
  for (AttentionOp op : ops) {
    rewriter.setInsertionPoint(op);
    FailureOr<scf::SCFTilingResult> tiled =
        scf::tileUsingSCF(rewriter, cast<TilingInterface>(op.getOperation()), options);
    if (failed(tiled))
      return op.emitOpError() << "could not be tiled by the given sizes";
    rewriter.replaceOp(op, tiled->replacements);
  }
  return success();
}

FailureOr<std::unique_ptr<ExecutionEngine>>
mlir::flashattn::compileForHost(ModuleOp module,
                                const HostCompileOptions &compileOptions) {
  MLIRContext *ctx = module.getContext();
  bool hasTensors = false;
  module.walk([&](func::FuncOp fn) {
    hasTensors |= llvm::any_of(fn.getArgumentTypes(), [](Type t) {
      return isa<TensorType>(t);
    });
  });
  bool tiles = !compileOptions.tileSizes.empty();
  if ((compileOptions.decompose || tiles) && !hasTensors) {
    emitError(module.getLoc()) << "tiling and the decomposition into linalg take the tensor form";
    return failure();
  }
  if (tiles && compileOptions.tileSizes.size() != 3) {
    emitError(module.getLoc()) << "tile sizes are (batch, kv head, query row): 3 of them, got "
                               << compileOptions.tileSizes.size();
    return failure();
  }
  if (tiles && failed(tileAttention(module, compileOptions.tileSizes)))
    return failure();
  if (hasTensors) {
    PassManager pm(ctx);
    if (compileOptions.decompose)
      pm.addPass(createFlashAttnDecomposeToLinalg());
    bufferization::OneShotBufferizePassOptions bufferize;
    bufferize.bufferizeFunctionBoundaries = true;
    bufferize.functionBoundaryTypeConversion =
        bufferization::LayoutMapOption::IdentityLayoutMap;
    pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
    // Tiling loops copy each tile onto itself and yield their out buffers
    // unchanged: CSE makes the copies self-copies, which canonicalization
    // erases with the loops' results (back to the out arguments).
    if (!compileOptions.tileSizes.empty()) {
      pm.addPass(createCSEPass());
      pm.addPass(createCanonicalizerPass());
    }
    if (failed(pm.run(module)))
      return failure();
    // DPS results alias the out arguments: drop them from the signatures.
    for (func::FuncOp fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal() || fn.getNumResults() == 0)
        continue;
      auto ret = cast<func::ReturnOp>(fn.getBody().back().getTerminator());
      if (!llvm::all_of(ret.getOperands(),
                        [](Value v) { return isa<BlockArgument>(v); }))
        continue; // a function with real results keeps them
      ret->setOperands({});
      fn.setType(FunctionType::get(ctx, fn.getArgumentTypes(), {}));
    }
  }
  PassManager host(ctx);
  if (compileOptions.decompose)
    host.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  flashattn::HostPipelineOptions pipelineOptions;
  pipelineOptions.vectorBits = hostVectorBits();
  flashattn::buildFlashAttnHostPipeline(host, pipelineOptions);
  if (failed(host.run(module)))
    return failure();
  ExecutionEngineOptions options;
  options.transformer = makeOptimizingTransformer(/*optLevel=*/3,
                                                  /*sizeLevel=*/0, nullptr);
  auto engine = ExecutionEngine::create(module, options);
  if (!engine) {
    emitError(module.getLoc())
        << "JIT compilation failed: " << llvm::toString(engine.takeError());
    return failure();
  }
  return std::move(*engine);
}
