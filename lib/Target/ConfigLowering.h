//===- ConfigLowering.h - a runtime config lowered by a pipeline -*- C++ -*-===//
//
// Internal to lib/Target: the common front of compileHostArtifact and
// compileSm90Ptx. A config is checked, becomes buildAttentionModule's MLIR,
// is parsed in a context with the compiler's dialects and lowered by a
// pipeline; the context's diagnostics are collected for error messages and
// stay collected while the caller goes on (LLVM IR translation).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_LIB_TARGET_CONFIGLOWERING_H
#define FLASHATTN_LIB_TARGET_CONFIGLOWERING_H

#include "flashattn/runtime.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"

#include "flashattn/artifact.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir {
namespace flashattn {

class ConfigLowering {
public:
  ConfigLowering();

  /// Checks that `config` is of this ABI, for `target` and valid, builds
  /// its module and runs the pipeline `build` adds on it. On failure
  /// `error` names the step (`pipelineName` for the pipeline) and carries
  /// the diagnostics.
  LogicalResult run(const fa_attention_config &config, fa_target target,
                    function_ref<void(OpPassManager &)> build,
                    StringRef pipelineName, std::string &error);

  ModuleOp module() { return *module_; }
  MLIRContext &context() { return context_; }
  /// The kernel's arguments in order (buildAttentionModule's names).
  const std::vector<std::string> &argNames() const { return argNames_; }
  /// What the context reported so far.
  const std::string &diagnostics() const { return diagnostics_; }

private:
  MLIRContext context_;
  std::string diagnostics_;
  llvm::raw_string_ostream diagnosticStream_{diagnostics_};
  ScopedDiagnosticHandler handler_;
  OwningOpRef<ModuleOp> module_;
  std::vector<std::string> argNames_;
};

/// Wraps a compiled payload (a host shared object or a cubin) and its
/// launch metadata (a JSON object; fa_artifact_build adds the config and
/// the compiler version) into the runtime's artifact container.
LogicalResult packageArtifact(const fa_attention_config &config,
                              fa_artifact_kind kind, const llvm::json::Object &meta,
                              StringRef payload, std::vector<char> &artifact,
                              std::string &error);

} // namespace flashattn
} // namespace mlir

#endif // FLASHATTN_LIB_TARGET_CONFIGLOWERING_H
