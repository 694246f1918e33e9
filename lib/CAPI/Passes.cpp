//===- Passes.cpp - C API of the flashattn passes and pipelines -----------===//

#include "flashattn-c/Passes.h"

#include "flashattn/Conversion/Passes.h"
#include "flashattn/Pipelines/Pipelines.h"
#include "flashattn/Transforms/Passes.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/Support/raw_ostream.h"

#include <mutex>
#include <string>

using namespace mlir;

namespace {
// The names mlirRegisterFlashAttnPipelines registers (Pipelines.cpp).
constexpr const char *kHostPipeline = "flashattn-host-pipeline";
constexpr const char *kSm90Pipeline = "flashattn-sm90-pipeline";
} // namespace

extern "C" void mlirRegisterFlashAttnPasses(void) {
  // Registering a pass twice is harmless in MLIR (same TypeID); once is
  // enough.
  static std::once_flag once;
  std::call_once(once, [] {
    flashattn::registerFlashAttnTransformsPasses();
    flashattn::registerFlashAttnConversionPasses();
  });
}

extern "C" void mlirRegisterFlashAttnPipelines(void) {
  static std::once_flag once;
  std::call_once(once, [] {
    // A C++ caller may have registered everything already; a pipeline name
    // registered twice trips MLIR's assertion, so look first.
    if (PassPipelineInfo::lookup(kHostPipeline) ||
        PassPipelineInfo::lookup(kSm90Pipeline)) {
      mlirRegisterFlashAttnPasses();
      return;
    }
    flashattn::registerFlashAttnPassesAndPipelines();
  });
}

namespace {
// Prints an error diagnostic and its notes, one per line:
// "<loc>: error: <message>", then "<loc>: note: <message>". The note MLIR
// attaches with the generic form of the whole operation ("see current
// operation: ...") is left out: on a model it is the whole model.
void printDiagnostic(Diagnostic &diag, llvm::raw_ostream &os) {
  auto one = [&](Diagnostic &d, StringRef severity) {
    os << d.getLocation() << ": " << severity << ": " << d << "\n";
  };
  one(diag, "error");
  for (Diagnostic &note : diag.getNotes())
    if (!StringRef(note.str()).starts_with("see current operation"))
      one(note, "note");
}
} // namespace

extern "C" MlirLogicalResult
flashattnRunPipeline(MlirModule module, MlirStringRef pipeline,
                     MlirStringCallback errorCallback, void *userData) {
  mlirRegisterFlashAttnPipelines();
  std::string message;
  llvm::raw_string_ostream os(message);
  auto fail = [&](StringRef fallback) {
    if (message.empty())
      os << fallback;
    if (errorCallback)
      errorCallback(wrap(StringRef(message)), userData);
    return wrap(failure());
  };
  if (mlirModuleIsNull(module))
    return fail("flashattnRunPipeline: null module");
  ModuleOp moduleOp = unwrap(module);
  MLIRContext *ctx = moduleOp->getContext();

  FailureOr<OpPassManager> parsed = parsePassPipeline(unwrap(pipeline), os);
  if (failed(parsed))
    return fail("flashattnRunPipeline: the pipeline does not parse");

  PassManager pm(ctx, parsed->getOpAnchorName());
  static_cast<OpPassManager &>(pm) = std::move(*parsed);

  LogicalResult ran = failure();
  if (errorCallback) {
    // Errors go to the message; other severities on to the context's
    // handlers.
    ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &diag) {
      if (diag.getSeverity() != DiagnosticSeverity::Error)
        return failure();
      printDiagnostic(diag, os);
      return success();
    });
    ran = pm.run(moduleOp);
  } else {
    ran = pm.run(moduleOp);
  }
  if (failed(ran))
    return fail("flashattnRunPipeline: a pass failed without a diagnostic");
  return wrap(success());
}
