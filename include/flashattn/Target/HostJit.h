//===- HostJit.h - compile flashattn modules for the host in-process -*- C++ -*-===//
//
// The in-process path of the host backend: a module holding functions with
// flashattn.attention (tensor or memref form) is bufferized (tensor form:
// one-shot-bufferize with identity-layout function boundaries, results
// written in place into the out arguments and dropped from the signatures),
// lowered by flashattn-host-pipeline and JIT-compiled at -O3 by MLIR's
// ExecutionEngine. Every function is then callable through its packed
// interface: `fn(void **args)`, one pointer per LLVM argument (a memref
// argument of rank r is 3 + 2r of them: allocated, aligned, offset, sizes,
// strides) and, for functions with results, one pointer per result.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_TARGET_HOSTJIT_H
#define FLASHATTN_TARGET_HOSTJIT_H

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"

#include <memory>

namespace mlir {
class DialectRegistry;
namespace flashattn {

/// Registers what compileForHost needs in a context: every upstream dialect
/// and extension, flashattn with its bufferization models, and the LLVM IR
/// translations. Also initializes the native target (idempotent).
void registerHostJitDependencies(DialectRegistry &registry);

struct HostCompileOptions {
  /// Decompose the tensor form into linalg (flashattn-decompose-to-linalg)
  /// and lower that with upstream's linalg-to-loops instead of flashattn's
  /// tiling: the unfused reference path for a compiler without our
  /// lowerings.
  bool decompose = false;
  /// Tile every flashattn.attention over (batch, kv head, query row) by
  /// these sizes first (its TilingInterface, scf::tileUsingSCF; 0 = whole
  /// dimension); empty = no tiling.
  SmallVector<int64_t> tileSizes;
};

/// Bufferizes (when needed), lowers and JIT-compiles `module` in place.
/// Functions whose tensor results are not their out arguments are rejected.
/// Errors are emitted as diagnostics on the module's context.
FailureOr<std::unique_ptr<ExecutionEngine>>
compileForHost(ModuleOp module, const HostCompileOptions &options = {});

} // namespace flashattn
} // namespace mlir

#endif // FLASHATTN_TARGET_HOSTJIT_H
