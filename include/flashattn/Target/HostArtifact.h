//===- HostArtifact.h - emit host artifacts for the runtime -----*- C++ -*-===//
//
// The compiler side of the runtime contract (runtime/include/flashattn/
// artifact.h): a runtime config becomes a host shared object wrapped into the
// artifact container, keyed like the runtime keys it.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_TARGET_HOSTARTIFACT_H
#define FLASHATTN_TARGET_HOSTARTIFACT_H

#include "flashattn/runtime.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace mlir {
namespace flashattn {

/// A module with one function `@fa_attention` holding the
/// flashattn.attention that `config` describes (memref form; batch, sequence
/// and page-count dimensions dynamic), built with OpBuilder; the config's
/// regions (user text) are parsed into the op. `argNames` receives the
/// argument names in order ("q", "k", "v", optional operands, "out",
/// "lse"). Null when the regions do not parse or the op does not verify
/// (`error` says which; the diagnostics go to the context's handler).
OwningOpRef<ModuleOp> buildAttentionModule(MLIRContext *context,
                                           const fa_attention_config &config,
                                           std::vector<std::string> &argNames,
                                           std::string &error);

/// Compiles `config` into a host artifact (container bytes). On failure
/// `error` says why.
LogicalResult compileHostArtifact(const fa_attention_config &config,
                                  std::vector<char> &artifact,
                                  std::string &error);

/// The PTX of an sm90 config's kernel, its name, its dynamic shared memory
/// in bytes, threads per CTA and tile sizes (the TMA boxes' row counts).
struct Sm90Ptx {
  std::string ptx, kernel;
  std::string combine; ///< the split-KV combine kernel (num_splits > 1)
  std::string append;  ///< the kv-cache append kernel (k_new, v_new)
  std::string dense;   ///< automatic splits: the kernel for one split
  /// Automatic pack_gqa: G of the `<kernel>_packed` (and
  /// `<dense>_packed`) entries, 0 when there are none.
  int64_t packedGroups = 0;
  int64_t smem = 0;
  int64_t threads = 128;
  int64_t blockM = 64, blockN = 64;
  bool tileCounter = false; ///< takes the dynamic scheduler's counter
  bool fusedCombine = false; ///< the split-KV kernel merges (takes merge_out ...)
  bool denseTileCounter = false; ///< the dense entry takes one
  int64_t packGroups = 1;   ///< pack_gqa: q's map is 5-D, heads split by G
  /// kv heads per key block (k/v boxes of as many heads; block_n / HP keys
  /// a block; packGroups then counts HP x Hq / Hkv heads)
  int64_t kvHeadsPerBlock = 1;
  bool autoSplits = false;  ///< num_splits 0: the runtime picks the count
  /// Each entry's parameters (metadata "abi"), from the kernels'
  /// #flashattn.kernel_abi; hasAbi false when the main kernel has none (an
  /// artifact cannot be written).
  bool hasAbi = false;
  llvm::json::Object abi;
  bool tileTable = false;   ///< takes the runtime's tile table (varlen)
  int64_t tileTableInline = 0; ///< bytes of the table copy taken by value
  bool pageTable = false;   ///< paged: takes the page lists after the table
  bool kvRowCopies = false; ///< paged KV by per-row copies (40-register producer)
};

/// Tile overrides for flashattn-plan (0 = automatic) and code-generation
/// overrides of the plan's #flashattn.sm90_codegen ("auto", "on", "off"):
/// tuning experiments only, since the config's cache key does not record
/// them.
struct Sm90PlanOverrides {
  int64_t blockM = 0, blockN = 0, consumers = 0, stages = 0;
#define FA_SM90_TUNING(NAME, FLAG, DESC, VALUES) std::string NAME = "auto";
#include "flashattn/Transforms/Sm90Tuning.def"
  int64_t kvHeadsPerBlock = 0;
  /// The warpgroup form (flashattn-sm90-pipeline's `unpipelined`:
  /// flashattn-tile's kernel distributed by flashattn-sm90-warpgroup alone).
  bool unpipelined = false;
};

/// Lowers an sm90 `config` to PTX through flashattn-sm90-pipeline.
LogicalResult compileSm90Ptx(const fa_attention_config &config, Sm90Ptx &result,
                             std::string &error,
                             const Sm90PlanOverrides &overrides = {});

/// Compiles an sm90 `config` into a cubin artifact through
/// flashattn-sm90-pipeline and ptxas (found on the PATH, in $CUDA_HOME/bin or
/// /usr/local/cuda/bin, or named by $FLASHATTN_PTXAS).
/// With an automatic fusedMerge, an artifact whose split-KV partial kernel
/// spills registers with the fused merge is compiled again without it (its
/// combine kernel merges).
LogicalResult compileSm90Artifact(const fa_attention_config &config,
                                  std::vector<char> &artifact,
                                  std::string &error,
                                  const Sm90PlanOverrides &overrides = {});

} // namespace flashattn
} // namespace mlir

#endif // FLASHATTN_TARGET_HOSTARTIFACT_H
