//===- ConfigLowering.cpp - a runtime config lowered by a pipeline --------===//

#include "ConfigLowering.h"

#include "flashattn/Target/HostArtifact.h"
#include "flashattn/Target/HostJit.h"
#include "flashattn/version.h"

#include "mlir/Target/LLVMIR/Dialect/All.h"

using namespace mlir;
using namespace mlir::flashattn;

static DialectRegistry compilerRegistry() {
  DialectRegistry registry;
  registerHostJitDependencies(registry);
  registerAllToLLVMIRTranslations(registry);
  return registry;
}

ConfigLowering::ConfigLowering()
    : context_(compilerRegistry()),
      handler_(&context_, [this](Diagnostic &diag) {
        diagnosticStream_ << diag << "\n";
        return success();
      }) {}

LogicalResult ConfigLowering::run(const fa_attention_config &config,
                                  fa_target target,
                                  function_ref<void(OpPassManager &)> build,
                                  StringRef pipelineName, std::string &error) {
  if (config.struct_size != sizeof(fa_attention_config)) {
    error = "config struct_size does not match this compiler's ABI";
    return failure();
  }
  if (config.target != target) {
    error = target == FA_TARGET_HOST
                ? "not a host config (sm90 configs go to compileSm90Artifact)"
                : "not an sm90 config (host configs go to compileHostArtifact)";
    return failure();
  }
  char why[256];
  if (fa_config_canonical(&config, why, sizeof(why)) < 0) {
    error = "invalid config";
    return failure();
  }
  module_ = buildAttentionModule(&context_, config, argNames_, error);
  if (!module_) {
    error += ": " + diagnostics_;
    return failure();
  }
  PassManager pm(&context_);
  build(pm);
  if (failed(pm.run(*module_))) {
    error = ("the " + pipelineName + " failed: ").str() + diagnostics_;
    return failure();
  }
  return success();
}

LogicalResult mlir::flashattn::packageArtifact(
    const fa_attention_config &config, fa_artifact_kind kind,
    const llvm::json::Object &meta, StringRef payload,
    std::vector<char> &artifact, std::string &error) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(llvm::json::Object(meta));
  void *bytes = nullptr;
  size_t size = 0;
  fa_status st = fa_artifact_build(&config, FA_COMPILER_VERSION, kind,
                                   text.c_str(), payload.data(), payload.size(),
                                   &bytes, &size);
  if (st != FA_OK) {
    error = std::string("building the artifact failed: ") + fa_status_string(st);
    return failure();
  }
  artifact.assign(static_cast<char *>(bytes), static_cast<char *>(bytes) + size);
  fa_artifact_free(bytes);
  return success();
}
