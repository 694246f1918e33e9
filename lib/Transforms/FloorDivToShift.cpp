//===- FloorDivToShift.cpp - flashattn-floordiv-to-shift ------------------===//
//
// arith.floordivsi by a constant 2^k as arith.shrsi by k. The arithmetic
// shift rounds toward negative infinity, so it is the floor division for
// every dividend, negative ones included, and cannot overflow. arith's own
// expansion (a signed division with a sign fix-up) stays about ten
// instructions after LLVM, on the sm90 kernels' per-tile path (the first
// masked key block, floor(key_end / block_n)).
//
//===----------------------------------------------------------------------===//

#include "flashattn/Transforms/Passes.h"

#include "flashattn/Utils/InPlaceRewrite.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::flashattn {
#define GEN_PASS_DEF_FLASHATTNFLOORDIVTOSHIFT
#include "flashattn/Transforms/Passes.h.inc"
} // namespace mlir::flashattn

using namespace mlir;
using namespace mlir::flashattn;

namespace {

struct FloorDivToShift : OpRewritePattern<arith::FloorDivSIOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::FloorDivSIOp op, PatternRewriter &rewriter) const override {
    APInt divisor;
    if (!matchPattern(op.getRhs(), m_ConstantInt(&divisor)) || !divisor.isStrictlyPositive() ||
        !divisor.isPowerOf2())
      return rewriter.notifyMatchFailure(op, "divisor is not a constant power of two");
    Type type = op.getType();
    auto amount = arith::ConstantOp::create(
        rewriter, op.getLoc(), rewriter.getIntegerAttr(type, divisor.logBase2()));
    rewriter.replaceOpWithNewOp<arith::ShRSIOp>(op, op.getLhs(), amount);
    return success();
  }
};

struct FlashAttnFloorDivToShiftPass
    : public flashattn::impl::FlashAttnFloorDivToShiftBase<FlashAttnFloorDivToShiftPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFlashAttnFloorDivToShiftPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     inPlaceRewriteConfig())))
      return signalPassFailure();
  }
};
} // namespace

void mlir::flashattn::populateFlashAttnFloorDivToShiftPatterns(RewritePatternSet &patterns) {
  patterns.add<FloorDivToShift>(patterns.getContext());
}
