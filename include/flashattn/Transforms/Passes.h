//===- Passes.h - flashattn transformation passes ---------------*- C++ -*-===//
//
// flashattn-plan, flashattn-split-kv, flashattn-tile,
// flashattn-lower-key-ranges, flashattn-floordiv-to-shift,
// flashattn-decompose-to-linalg and
// flashattn-raise (declared in Passes.td), and the pattern sets and helpers
// behind them, for compilers that run them inside their own pass pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_TRANSFORMS_PASSES_H
#define FLASHATTN_TRANSFORMS_PASSES_H

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
namespace flashattn {

#define GEN_PASS_DECL
#include "flashattn/Transforms/Passes.h.inc"

/// The plan flashattn-plan attaches to `op` for `target` on a device with
/// `numSMs` multiprocessors (no choice depends on it yet: automatic
/// num_splits is the runtime's, at launch).
PlanAttr computePlan(AttentionOp op, Target target, int64_t numSMs);

/// flashattn-split-kv: attention with plan num_splits > 1 -> partial
/// attention + flashattn.combine.
void populateFlashAttnSplitKVPatterns(RewritePatternSet &patterns);

/// flashattn-tile: planned attention on memrefs -> tiled online-softmax
/// loops over the tile-level ops (on sm90 a kernel an op; with
/// `denseEntry` / `packedEntry` also its dense and pack_gqa twins).
void populateFlashAttnTilePatterns(RewritePatternSet &patterns, bool denseEntry = false,
                                   bool packedEntry = false);

/// flashattn-raise: attention in linalg on tensors (SDPA layout) ->
/// flashattn.attention (opt-in; exact matches only).
void populateFlashAttnRaisePatterns(RewritePatternSet &patterns);

/// flashattn-lower-key-ranges: key_end, key_begin and key_blocks -> arith.
void populateFlashAttnLowerKeyRangesPatterns(RewritePatternSet &patterns);

/// flashattn-floordiv-to-shift: arith.floordivsi by a constant 2^k ->
/// arith.shrsi by k.
void populateFlashAttnFloorDivToShiftPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "flashattn/Transforms/Passes.h.inc"

} // namespace flashattn
} // namespace mlir

#endif // FLASHATTN_TRANSFORMS_PASSES_H
