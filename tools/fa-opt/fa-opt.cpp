//===- fa-opt.cpp - flashattn optimizer driver ----------------------------===//
//
// mlir-opt with the flashattn dialect and passes registered: every upstream
// dialect, extension and pass that the host and sm90 pipelines use is there
// too, so a pipeline can be replayed pass by pass.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "flashattn/Dialect/FlashAttn/Transforms/BufferizableOpInterfaceImpl.h"
#include "flashattn/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::flashattn::registerFlashAttnPassesAndPipelines();

  mlir::DialectRegistry registry;
  registry.insert<mlir::flashattn::FlashAttnDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // gpu-module-to-binary translates the kernels to LLVM IR.
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::flashattn::registerBufferizableOpInterfaceExternalModels(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "flashattn optimizer driver\n", registry));
}
