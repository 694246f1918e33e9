//===- FloorDivToShift.cpp - flashattn-floordiv-to-shift ------------------===//
//
// arith.floordivsi by a constant 2^k as arith.shrsi by k (by 0: the
// dividend itself), on scalars and vectors. The arithmetic shift rounds
// toward negative infinity, so it is the floor division for every dividend,
// negative ones included, and cannot overflow. arith's own
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
#include "mlir/IR/TypeUtilities.h"

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
    // A scalar or splat constant; positive as a signed value (1 : i1 and
    // the signed minimum are powers of two as unsigned bits only).
    APInt divisor;
    if (!matchPattern(op.getRhs(), m_ConstantInt(&divisor)) || !divisor.isStrictlyPositive() ||
        !divisor.isPowerOf2())
      return rewriter.notifyMatchFailure(op, "divisor is not a constant power of two");
    // index may be lowered to 32 bits (the sm90 kernels'), where 2^31 and
    // above are no longer positive.
    if (isa<IndexType>(getElementTypeOrSelf(op.getType())) && divisor.getActiveBits() > 31)
      return rewriter.notifyMatchFailure(op, "index divisor of 2^31 or more");
    if (divisor.isOne()) {
      rewriter.replaceOp(op, op.getLhs());
      return success();
    }
    // (Not createScalarOrSplatConstant: it takes no index.)
    TypedAttr amount = rewriter.getIntegerAttr(getElementTypeOrSelf(op.getType()),
                                               divisor.logBase2());
    if (auto shaped = dyn_cast<ShapedType>(op.getType()))
      amount = DenseElementsAttr::get(shaped, ArrayRef<Attribute>(amount));
    rewriter.replaceOpWithNewOp<arith::ShRSIOp>(
        op, op.getLhs(), arith::ConstantOp::create(rewriter, op.getLoc(), amount));
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
