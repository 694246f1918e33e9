//===- Pipelines.h - registered flashattn pipelines -------------*- C++ -*-===//
//
// flashattn-host-pipeline: planned, split, tiled and converted attention down
// to the LLVM dialect, ready for mlir-translate or the ExecutionEngine.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_PIPELINES_PIPELINES_H
#define FLASHATTN_PIPELINES_PIPELINES_H

namespace mlir {
class OpPassManager;
namespace flashattn {

/// Appends the host pipeline to `pm` (anchored on builtin.module):
/// flashattn-plan{target=host}, flashattn-split-kv, flashattn-tile,
/// convert-flashattn-to-vector, then the upstream lowering to LLVM
/// (bf16 expansion, vector/math/scf/memref/arith/func to LLVM).
void buildFlashAttnHostPipeline(OpPassManager &pm);

/// Registers every flashattn pass and pipeline with the global registry
/// (what fa-opt exposes).
void registerFlashAttnPassesAndPipelines();

} // namespace flashattn
} // namespace mlir

#endif // FLASHATTN_PIPELINES_PIPELINES_H
