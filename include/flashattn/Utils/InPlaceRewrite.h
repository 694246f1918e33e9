//===- InPlaceRewrite.h - a greedy driver that only rewrites ----*- C++ -*-===//
//
// The configuration of the passes that expand ops inside the sm90 kernels
// (convert-flashattn-sm90-to-nvvm, flashattn-lower-warp-specialize,
// flashattn-lower-key-ranges, flashattn-floordiv-to-shift): the existing
// ops only, no folding, no constant hoisting, no region simplification. The kernels' op order is
// their schedule, and the regions inlined into them keep their constants.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_UTILS_INPLACEREWRITE_H
#define FLASHATTN_UTILS_INPLACEREWRITE_H

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::flashattn {

inline GreedyRewriteConfig inPlaceRewriteConfig() {
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingOps);
  config.enableFolding(false);
  config.enableConstantCSE(false);
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  return config;
}

} // namespace mlir::flashattn

#endif
