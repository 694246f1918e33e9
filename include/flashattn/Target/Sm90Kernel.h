//===- Sm90Kernel.h - sm_90a attention kernels ------------------*- C++ -*-===//
//
// The generator of the sm_90a attention kernel (TMA + WGMMA + mbarriers) and
// its compilation into a cubin artifact for the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_TARGET_SM90KERNEL_H
#define FLASHATTN_TARGET_SM90KERNEL_H

#include "flashattn/runtime.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
namespace flashattn {

/// What one generated kernel computes: dense [B, S, H, D] bf16/f16 inputs,
/// head_dim 64, 128 or 256 (= head_dim_v), key blocks of `blockN`, causal
/// 0 (none), 1 (top_left) or 2 (bottom_right), optional lse.
struct Sm90KernelSpec {
  std::string name = "fa_sm90";
  int64_t headDim = 128;
  int64_t blockN = 64;
  bool f16 = false;
  int causal = 0;
  bool lse = false;
  double scale = 0.0;
};

/// The gpu.module (MLIR text) holding the kernel `spec.name`.
std::string emitSm90AttentionKernel(const Sm90KernelSpec &spec);

/// Dynamic shared memory the kernel needs, in bytes.
int64_t sm90SharedMemoryBytes(const Sm90KernelSpec &spec);

/// The spec of a runtime config, or failure with `error` when the config is
/// outside what the sm90 kernel supports yet.
FailureOr<Sm90KernelSpec> sm90SpecForConfig(const fa_attention_config &config,
                                             std::string &error);

/// Compiles `config` into an sm90 cubin artifact (needs ptxas: the CUDA
/// toolkit's, found by MLIR's gpu-module-to-binary).
LogicalResult compileSm90Artifact(const fa_attention_config &config,
                                  std::vector<char> &artifact,
                                  std::string &error);

} // namespace flashattn
} // namespace mlir

#endif // FLASHATTN_TARGET_SM90KERNEL_H
