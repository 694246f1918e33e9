//===- HostArtifact.cpp - emit host artifacts for the runtime -------------===//
//
// A runtime config (fa_attention_config) becomes one flashattn.attention on
// memrefs with dynamic batch and sequence dimensions (heads, head_dim and
// page size static), goes through flashattn-host-pipeline, is translated to
// LLVM IR with a packed entry `void fa_entry(void **args)` (the ABI of
// flashattn/artifact.h), compiled into a position-independent object for the machine's x86-64 level (fa_host_cpu_level),
// linked into a shared object with the system C compiler
// driver (`cc -shared`, or $FLASHATTN_CC) and wrapped into the artifact
// container by libflashattn_rt.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Target/HostArtifact.h"

#include "ConfigLowering.h"

#include "flashattn/Pipelines/Pipelines.h"


#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include <cstdlib>

using namespace mlir;

/// Adds `void fa_entry(ptr args)` calling `fn` with each argument loaded
/// from args[i] (the packed calling convention).
static void addPackedEntry(llvm::Module &module, llvm::Function *fn) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::IRBuilder<> b(ctx);
  auto *ptrTy = llvm::PointerType::getUnqual(ctx);
  auto *entryTy =
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptrTy}, false);
  auto *entry = llvm::Function::Create(entryTy, llvm::Function::ExternalLinkage,
                                       "fa_entry", module);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", entry));
  llvm::SmallVector<llvm::Value *> callArgs;
  for (auto [i, arg] : llvm::enumerate(fn->args())) {
    llvm::Value *slot = b.CreateConstGEP1_64(ptrTy, entry->getArg(0), i);
    llvm::Value *ptr = b.CreateLoad(ptrTy, slot);
    callArgs.push_back(b.CreateLoad(arg.getType(), ptr));
  }
  b.CreateCall(fn, callArgs);
  b.CreateRetVoid();
}

static FailureOr<std::string> tempPath(const char *suffix, std::string &error) {
  llvm::SmallString<128> path;
  if (llvm::sys::fs::createTemporaryFile("flashattn", suffix, path)) {
    error = "cannot create a temporary file";
    return failure();
  }
  return std::string(path);
}

LogicalResult mlir::flashattn::compileHostArtifact(
    const fa_attention_config &config, std::vector<char> &artifact,
    std::string &error) {
  ConfigLowering lowering;
  if (failed(lowering.run(
          config, FA_TARGET_HOST,
          [](OpPassManager &pm) {
            HostPipelineOptions options;
            options.vectorBits = hostVectorBits();
            buildFlashAttnHostPipeline(pm, options);
          },
          "flashattn-host-pipeline", error)))
    return failure();

  llvm::LLVMContext llvmCtx;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(lowering.module(), llvmCtx, "flashattn");
  if (!llvmModule) {
    error = "translation to LLVM IR failed: " + lowering.diagnostics();
    return failure();
  }
  std::string triple = llvm::sys::getProcessTriple();
  std::string lookupError;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(llvm::Triple(triple), lookupError);
  if (!target) {
    error = "no LLVM target for " + triple + ": " + lookupError;
    return failure();
  }
  // The micro-architecture level the runtime puts in the cache key (x86-64,
  // -v3, -v4), not the exact host CPU: artifacts stay valid on every machine
  // of that level.
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      llvm::Triple(triple), fa_host_cpu_level(), "", options,
      llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  llvmModule->setTargetTriple(llvm::Triple(triple));
  llvmModule->setDataLayout(machine->createDataLayout());
  llvm::Function *fn = llvmModule->getFunction("fa_attention");
  if (!fn) {
    error = "the lowered module lacks fa_attention";
    return failure();
  }
  addPackedEntry(*llvmModule, fn);
  if (llvm::Error err =
          makeOptimizingTransformer(3, 0, machine.get())(llvmModule.get())) {
    error = "LLVM optimization failed: " + llvm::toString(std::move(err));
    return failure();
  }

  llvm::SmallVector<char, 0> object;
  {
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager codegen;
    if (machine->addPassesToEmitFile(codegen, os, nullptr,
                                     llvm::CodeGenFileType::ObjectFile)) {
      error = "the target cannot emit object files";
      return failure();
    }
    codegen.run(*llvmModule);
  }

  // Link into a shared object with the system compiler driver.
  FailureOr<std::string> objPath = tempPath("o", error);
  FailureOr<std::string> soPath = tempPath("so", error);
  if (failed(objPath) || failed(soPath))
    return failure();
  llvm::scope_exit cleanup([&] {
    llvm::sys::fs::remove(*objPath);
    llvm::sys::fs::remove(*soPath);
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(*objPath, ec);
    if (ec) {
      error = "cannot write " + *objPath;
      return failure();
    }
    os.write(object.data(), object.size());
  }
  const char *ccEnv = std::getenv("FLASHATTN_CC");
  llvm::ErrorOr<std::string> cc =
      llvm::sys::findProgramByName(ccEnv && *ccEnv ? ccEnv : "cc");
  if (!cc) {
    error = "no C compiler driver to link the shared object (cc; set "
            "FLASHATTN_CC)";
    return failure();
  }
  std::string linkError;
  llvm::SmallVector<llvm::StringRef> linkArgs = {*cc, "-shared", "-o", *soPath,
                                                 *objPath, "-lm"};
  if (llvm::sys::ExecuteAndWait(*cc, linkArgs, std::nullopt, {}, 0, 0,
                                &linkError) != 0) {
    error = "linking the shared object failed: " + linkError;
    return failure();
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> so =
      llvm::MemoryBuffer::getFile(*soPath);
  if (!so) {
    error = "cannot read the linked shared object";
    return failure();
  }

  llvm::json::Array args;
  for (const std::string &name : lowering.argNames())
    args.push_back(name);
  llvm::json::Object meta{
      {"entry", "fa_entry"}, {"target", "host"}, {"args", std::move(args)}};
  return packageArtifact(config, FA_ARTIFACT_HOST_SO, meta, (*so)->getBuffer(),
                         artifact, error);
}
