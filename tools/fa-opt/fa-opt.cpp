//===- fa-opt.cpp - flashattn optimizer driver ----------------------------===//
//
// mlir-opt with the flashattn dialect and passes registered: every upstream
// dialect, extension and pass that the host and sm90 pipelines use is there
// too, so a pipeline can be replayed pass by pass.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "flashattn/Dialect/FlashAttn/Transforms/BufferizableOpInterfaceImpl.h"
#include "flashattn/Dialect/FlashAttn/Transforms/DecompositionInterfaceImpl.h"
#include "flashattn/Dialect/FlashAttn/Transforms/TilingInterfaceImpl.h"
#include "flashattn/Pipelines/Pipelines.h"
#include "flashattn/Utils/ParserWorkarounds.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

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
  mlir::flashattn::registerDecompositionInterfaceExternalModels(registry);
  mlir::flashattn::registerTilingInterfaceExternalModels(registry);

  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "flashattn optimizer driver\n", registry);
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input = mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return 1;
  }
  // What crashes MLIR 22's parser is an error here instead.
  size_t crash = mlir::flashattn::findKnownParserCrash(input->getBuffer());
  if (crash != llvm::StringRef::npos) {
    llvm::SourceMgr sources;
    const char *at = input->getBufferStart() + crash;
    sources.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
    sources.PrintMessage(llvm::SMLoc::getFromPointer(at), llvm::SourceMgr::DK_Error,
                         mlir::flashattn::kIndexDenseArrayError);
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output = mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(input), registry,
                                     mlir::MlirOptMainConfig::createFromCLOptions())))
    return 1;
  output->keep();
  return 0;
}
