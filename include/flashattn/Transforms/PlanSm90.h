//===- PlanSm90.h - the sm_90a kernel's code-generation choices -*- C++ -*-===//
//
// The #flashattn.sm90_codegen flashattn-plan{target=sm90} puts in a plan,
// and its overrides (the pass options of the same names).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_TRANSFORMS_PLANSM90_H
#define FLASHATTN_TRANSFORMS_PLANSM90_H

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"

#include <optional>
#include <string>

namespace mlir::flashattn {

/// Whether the sm90 kernel of `op` takes the runtime's per-launch tile
/// table: varlen, seqused_k, paged KV or kv-cache append (the tiles and key
/// counts come from the call's lengths).
inline bool sm90UsesTileTable(AttentionOp op) {
  return op.isVarlenQ() || op.isVarlenK() || op.getSequsedK() || op.isPaged() ||
         op.hasAppend();
}

/// Whether flashattn-tile's key-block loop runs from the tile's last block
/// down under the plan's `descending_key_blocks` (`planned`): only under a
/// causal mask or a right window, without a left window (windows as
/// sm90WindowSide gives them: -1 none); elsewhere it ascends.
inline bool keyBlocksDescend(bool planned, bool causal, int64_t windowLeft,
                             int64_t windowRight) {
  return planned && windowLeft < 0 && (causal || windowRight >= 0);
}

/// Forced code-generation choices (nullopt, and kvHeadsPerBlock 0:
/// automatic), one per line of Sm90Tuning.def.
struct Sm90CodegenOverrides {
#define FA_SM90_SWITCH(NAME, FLAG, DESC) std::optional<bool> NAME;
#define FA_SM90_L2(NAME, FLAG, DESC) std::optional<L2Priority> NAME;
#include "flashattn/Transforms/Sm90Tuning.def"
  int64_t kvHeadsPerBlock = 0;
};

/// The code-generation choices for `op` under the sm90 `plan` (its tiles,
/// stages, consumers, num_splits and pack_gqa) with `overrides`. A forced
/// choice the kernel cannot make is dropped (the scheduler barrier with one
/// consumer; the TMA store in the partial form, with pack_gqa or the tile
/// table, or where its tile does not fit), except kv_heads_per_block: a
/// count the op cannot take is a failure, with the reason in `why`.
FailureOr<Sm90CodegenAttr> chooseSm90Codegen(AttentionOp op, PlanAttr plan,
                                             const Sm90CodegenOverrides &overrides,
                                             std::string &why);

} // namespace mlir::flashattn

#endif
