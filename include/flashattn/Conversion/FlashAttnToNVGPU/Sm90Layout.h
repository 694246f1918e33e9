//===- Sm90Layout.h - shared memory of the sm_90a attention kernel -*- C++ -*-===//

#ifndef FLASHATTN_CONVERSION_FLASHATTNTONVGPU_SM90LAYOUT_H
#define FLASHATTN_CONVERSION_FLASHATTNTONVGPU_SM90LAYOUT_H

#include "flashattn/Conversion/FlashAttnToNVGPU/Sm90Kernel.h"

/// Shared-memory layout (bytes from the 1024-aligned dynamic buffer): Q,
/// then K stages, V stages, [the O tile of the TMA-store epilogue,] then
/// the mbarriers: full_Q, empty_Q, full_K[s],
/// empty_K[s], full_V[s], empty_V[s], then the current tile index.
namespace mlir::flashattn {
struct Sm90Layout {
  int64_t qBytes, kvBytes, kOff, vOff, oOff, barOff, stages;
  bool table, fused;
  explicit Sm90Layout(const Sm90KernelSpec &k) {
    stages = k.stages;
    table = k.tileTable;
    fused = k.splitPartial && k.fusedCombine;
    qBytes = 64 * k.consumers * k.headDim * 2;
    kvBytes = k.blockN * k.headDim * 2;
    kOff = qBytes;
    vOff = kOff + stages * kvBytes;
    oOff = vOff + stages * kvBytes;
    // The epilogue's O tile, laid out as Q (TMA store source).
    barOff = oOff + (k.tmaStore ? qBytes : 0);
  }
  int64_t fullQ() const { return barOff; }
  int64_t emptyQ() const { return barOff + 8; }
  int64_t fullK() const { return barOff + 16; }
  int64_t emptyK() const { return barOff + 16 + 8 * stages; }
  int64_t fullV() const { return barOff + 16 + 16 * stages; }
  int64_t emptyV() const { return barOff + 16 + 24 * stages; }
  /// The tile index the producer hands to the consumers (i32).
  int64_t tileSlot() const { return barOff + 16 + 32 * stages; }
  /// Table mode: the barrier a V block reaching past its sequence lands on
  /// before the producer warp zeroes those rows.
  int64_t auxV() const { return barOff + 24 + 32 * stages; }
  /// Fused combine: whether this CTA's work unit finished its tile (i32).
  int64_t mergeSlot() const { return auxV() + (table ? 8 : 0); }
  int64_t total() const { return mergeSlot() + (fused ? 8 : 0); }
};

/// Dynamic shared memory the kernel needs, in bytes (Sm90Layout::total).
inline int64_t sm90SharedMemoryBytes(const Sm90KernelSpec &spec) {
  return Sm90Layout(spec).total();
}
} // namespace mlir::flashattn


#endif
