//===- Pipelines.cpp - registered flashattn pipelines ---------------------===//

#include "flashattn/Pipelines/Pipelines.h"

#include "flashattn/artifact.h"

#include "flashattn/Conversion/Passes.h"
#include "flashattn/Transforms/Passes.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <string_view>

using namespace mlir;

void mlir::flashattn::buildFlashAttnHostPipeline(
    OpPassManager &pm, const HostPipelineOptions &options) {
  flashattn::FlashAttnPlanOptions plan;
  plan.target = "host";
  pm.addPass(flashattn::createFlashAttnPlan(plan));
  pm.addPass(flashattn::createFlashAttnSplitKV());
  pm.addPass(flashattn::createFlashAttnTile());
  pm.addPass(flashattn::createFlashAttnLowerKeyRanges());
  pm.addPass(flashattn::createFlashAttnFloorDivToShift());
  flashattn::ConvertFlashAttnToVectorOptions toVector;
  toVector.vectorBits = options.vectorBits;
  pm.addPass(flashattn::createConvertFlashAttnToVector(toVector));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // bf16 has no native x86 conversions: expand extf/truncf to integer ops.
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.reassociateFPReductions = true;
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::flashattn::buildFlashAttnSm90Pipeline(
    OpPassManager &pm, const Sm90PipelineOptions &options) {
  flashattn::FlashAttnPlanOptions plan;
  plan.target = "sm90";
  // The warpgroup form (unpipelined): one warpgroup over 64 x 64 tiles,
  // without a producer.
  plan.blockM = options.unpipelined ? 64 : options.blockM;
  plan.blockN = options.unpipelined ? 64 : options.blockN;
  plan.consumers = options.unpipelined ? 1 : options.consumers;
  plan.stages = options.stages;
#define FA_SM90_TUNING(NAME, FLAG, DESC, VALUES) plan.NAME = options.NAME;
#include "flashattn/Transforms/Sm90Tuning.def"
  if (options.unpipelined)
    plan.warpSpecialize = "off";
  plan.kvHeadsPerBlock = options.kvHeadsPerBlock;
  pm.addPass(flashattn::createFlashAttnPlan(plan));
  pm.addPass(flashattn::createFlashAttnSplitKV());
  flashattn::FlashAttnTileOptions tile;
  tile.denseEntry = options.denseEntry;
  tile.packedEntry = options.packedEntry;
  pm.addPass(flashattn::createFlashAttnTile(tile));
  if (!options.unpipelined) {
    pm.addPass(flashattn::createFlashAttnSm90PipelineKV());
    pm.addPass(flashattn::createFlashAttnSm90WarpSpecialize());
  }
  pm.addPass(flashattn::createFlashAttnSm90Warpgroup());
  pm.addPass(flashattn::createFlashAttnLowerWarpSpecialize());
  pm.addPass(flashattn::createFlashAttnLowerKeyRanges());
  pm.addPass(flashattn::createFlashAttnFloorDivToShift());
  pm.addPass(flashattn::createConvertFlashAttnSm90ToNVVM());
  GpuNVVMAttachTargetOptions target;
  target.triple = "nvptx64-nvidia-cuda";
  target.chip = "sm_90a";
  target.features = "+ptx80";
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  // The kernels' index arithmetic (tiles, rows, key blocks) in 32 bits,
  // the registers of a thread; element offsets are i64 already.
  const int indexBits = 32;
  ArithToLLVMConversionPassOptions arithToLLVM;
  arithToLLVM.indexBitwidth = indexBits;
  ConvertIndexToLLVMPassOptions indexToLLVM;
  indexToLLVM.indexBitwidth = indexBits;
  ConvertControlFlowToLLVMPassOptions cfToLLVM;
  cfToLLVM.indexBitwidth = indexBits;
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertMathToLLVMPass());
  kernels.addPass(createArithToLLVMConversionPass(arithToLLVM));
  kernels.addPass(createConvertIndexToLLVMPass(indexToLLVM));
  // (A module pass: the host side has no cf ops by then.)
  pm.addPass(createConvertControlFlowToLLVMPass(cfToLLVM));
  OpPassManager &kernels2 = pm.nest<gpu::GPUModuleOp>();
  kernels2.addPass(createConvertNVVMToLLVMPass());
  kernels2.addPass(createCanonicalizerPass());
  kernels2.addPass(createCSEPass());
  kernels2.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

int64_t mlir::flashattn::hostVectorBits() {
  return std::string_view(fa_host_cpu_level()) == "x86-64-v4" ? 512 : 256;
}

void mlir::flashattn::registerFlashAttnPassesAndPipelines() {
  flashattn::registerFlashAttnTransformsPasses();
  flashattn::registerFlashAttnConversionPasses();
  PassPipelineRegistration<HostPipelineOptions>(
      "flashattn-host-pipeline",
      "Lower flashattn.attention (memref form) to the LLVM dialect for the "
      "host: plan, split-kv, tile, convert-flashattn-to-vector, LLVM",
      buildFlashAttnHostPipeline);
  PassPipelineRegistration<Sm90PipelineOptions>(
      "flashattn-sm90-pipeline",
      "Lower flashattn.attention (memref form) for sm_90a: plan, split-kv, "
      "tile, sm90-pipeline-kv, sm90-warp-specialize, sm90-warpgroup, NVVM "
      "lowering of the kernels, gpu-module-to-binary (format=bin|isa)",
      buildFlashAttnSm90Pipeline);
}
