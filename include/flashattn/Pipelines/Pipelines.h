//===- Pipelines.h - registered flashattn pipelines -------------*- C++ -*-===//
//
// flashattn-host-pipeline: planned, split, tiled and converted attention down
// to the LLVM dialect, ready for mlir-translate or the ExecutionEngine.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_PIPELINES_PIPELINES_H
#define FLASHATTN_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace flashattn {

/// Options of flashattn-host-pipeline.
struct HostPipelineOptions : public PassPipelineOptions<HostPipelineOptions> {
  Option<int64_t> vectorBits{
      *this, "vector-bits",
      llvm::cl::desc("vector register width of the target CPU in bits (256: "
                     "AVX2, 512: AVX-512)"),
      llvm::cl::init(256)};
};

/// Appends the host pipeline to `pm` (anchored on builtin.module):
/// flashattn-plan{target=host}, flashattn-split-kv, flashattn-tile,
/// flashattn-lower-key-ranges, flashattn-floordiv-to-shift, convert-flashattn-to-vector, then
/// the upstream lowering to LLVM
/// (bf16 expansion, vector/math/scf/memref/arith/func to LLVM).
void buildFlashAttnHostPipeline(OpPassManager &pm,
                                const HostPipelineOptions &options = {});

/// Options of flashattn-sm90-pipeline.
struct Sm90PipelineOptions : public PassPipelineOptions<Sm90PipelineOptions> {
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("gpu-module-to-binary output: bin (cubin, needs ptxas) "
                     "or isa (PTX text)"),
      llvm::cl::init("bin")};
  // Tile overrides handed to flashattn-plan (0 = automatic).
  Option<int64_t> blockM{*this, "block-m", llvm::cl::desc("query rows per tile"),
                         llvm::cl::init(0)};
  Option<int64_t> blockN{*this, "block-n", llvm::cl::desc("keys per block"),
                         llvm::cl::init(0)};
  Option<int64_t> consumers{*this, "consumers",
                            llvm::cl::desc("consumer warpgroups"), llvm::cl::init(0)};
  Option<int64_t> stages{*this, "stages", llvm::cl::desc("K/V pipeline stages"),
                         llvm::cl::init(0)};
  // Code-generation overrides handed to flashattn-plan (the plan's
  // #flashattn.sm90_codegen), one option per line of Sm90Tuning.def.
#define FA_SM90_TUNING(NAME, FLAG, DESC, VALUES)                                              \
  Option<std::string> NAME{*this, FLAG, llvm::cl::desc(DESC ": " VALUES),                     \
                           llvm::cl::init("auto")};
#include "flashattn/Transforms/Sm90Tuning.def"
  Option<int64_t> kvHeadsPerBlock{
      *this, "kv-heads-per-block",
      llvm::cl::desc("pack_gqa over small pages: kv heads per key block (0: auto, 1: off)"),
      llvm::cl::init(0)};
  Option<bool> denseEntry{
      *this, "dense-entry",
      llvm::cl::desc("split-KV: also a dense kernel for one-split launches"),
      llvm::cl::init(false)};
  Option<bool> packedEntry{
      *this, "packed-entry",
      llvm::cl::desc("GQA the plan did not pack: also the kernels with pack_gqa"),
      llvm::cl::init(false)};
  Option<bool> unpipelined{
      *this, "unpipelined",
      llvm::cl::desc("the warpgroup form: flashattn-tile's kernel distributed by "
                     "flashattn-sm90-warpgroup alone (no K / V pipelining, no producer "
                     "warpgroup), one warpgroup over 64 x 64 tiles (the tile overrides "
                     "do not apply); not over pages that need row copies (fewer "
                     "than 8 keys, or neither a multiple of 64 keys nor a multiple "
                     "of 8 dividing it), which need the producer"),
      llvm::cl::init(false)};
};

/// Appends the sm90 pipeline to `pm` (anchored on builtin.module):
/// flashattn-plan{target=sm90}, flashattn-split-kv, flashattn-tile (the
/// kernel for one CTA over the tile ops), flashattn-sm90-pipeline-kv,
/// flashattn-sm90-warp-specialize, flashattn-sm90-warpgroup (the warpgroup
/// form: those two skipped with `unpipelined`),
/// flashattn-lower-warp-specialize, flashattn-lower-key-ranges,
/// flashattn-floordiv-to-shift, convert-flashattn-sm90-to-nvvm, then the
/// NVVM lowering of the kernels (nvvm-attach-target sm_90a +ptx80,
/// scf/arith/cf/nvvm to LLVM with 32-bit index arithmetic) and
/// gpu-module-to-binary.
void buildFlashAttnSm90Pipeline(OpPassManager &pm,
                                const Sm90PipelineOptions &options = {});

/// The vector width the host pipeline should use on this machine: 512 on an
/// x86-64-v4 CPU (AVX-512), else 256.
int64_t hostVectorBits();

/// Registers every flashattn pass and pipeline with the global registry
/// (what fa-opt exposes).
void registerFlashAttnPassesAndPipelines();

} // namespace flashattn
} // namespace mlir

#endif // FLASHATTN_PIPELINES_PIPELINES_H
