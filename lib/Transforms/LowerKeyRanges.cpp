//===- LowerKeyRanges.cpp - flashattn-lower-key-ranges --------------------===//
//
// Expands flashattn.key_end, key_begin and key_blocks into arith on their
// integer type, in place: the one definition of which keys a query row sees
// (docs/SEMANTICS.md, "Masks"), shared by the host loops and the sm90
// kernels. Signed arithmetic throughout (positions can be negative before
// the clamps).
//
//===----------------------------------------------------------------------===//

#include "flashattn/Transforms/Passes.h"

#include "flashattn/Utils/IntArith.h"
#include "mlir/IR/PatternMatch.h"
#include "flashattn/Utils/InPlaceRewrite.h"

namespace mlir::flashattn {
#define GEN_PASS_DEF_FLASHATTNLOWERKEYRANGES
#include "flashattn/Transforms/Passes.h.inc"
} // namespace mlir::flashattn

using namespace mlir;
using namespace mlir::flashattn;

namespace {

struct LowerKeyEnd : OpRewritePattern<KeyEndOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(KeyEndOp op, PatternRewriter &rewriter) const override {
    IntArith a{rewriter, op.getLoc(), op.getType()};
    Value row = op.getRow(), off = op.getOffset();
    Value lim = op.getSeqlenK();
    if (op.getCausal() != CausalKind::none) {
      Value last = op.getCausal() == CausalKind::bottom_right ? a.add(row, off) : row;
      lim = a.min(lim, a.add(last, a.c(1)));
    }
    if (int64_t right = op.getWindowRight(); right >= 0)
      lim = a.min(lim, a.add(a.add(row, off), a.c(right + 1)));
    rewriter.replaceOp(op, lim);
    return success();
  }
};

struct LowerKeyBegin : OpRewritePattern<KeyBeginOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(KeyBeginOp op, PatternRewriter &rewriter) const override {
    IntArith a{rewriter, op.getLoc(), op.getType()};
    Value shifted = a.add(op.getRow(), op.getOffset());
    rewriter.replaceOp(op, a.sub(shifted, a.c(op.getWindowLeft())));
    return success();
  }
};

struct LowerKeyBlocks : OpRewritePattern<KeyBlocksOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(KeyBlocksOp op, PatternRewriter &rewriter) const override {
    IntArith a{rewriter, op.getLoc(), op.getBegin().getType()};
    Value end = op.getRowEnd(), off = op.getOffset(), sk = op.getSeqlenK();
    Value zero = a.c(0), blockN = a.c(op.getBlockN());
    // n_max: the last row's limit, without its + 1 (row_end is one past).
    Value nHi = sk;
    if (op.getCausal() == CausalKind::top_left)
      nHi = a.min(nHi, end);
    if (op.getCausal() == CausalKind::bottom_right)
      nHi = a.min(nHi, a.add(end, off));
    if (int64_t right = op.getWindowRight(); right >= 0)
      nHi = a.min(nHi, a.add(a.add(end, off), a.c(right)));
    nHi = a.max(nHi, zero);
    // n_min: the first row's window start.
    Value nbLo = zero;
    if (int64_t left = op.getWindowLeft(); left >= 0) {
      Value nLo = a.sub(a.add(op.getRowBegin(), off), a.c(left));
      nbLo = a.div(a.max(nLo, zero), blockN);
    }
    Value nbHi = a.ceilDiv(nHi, blockN);
    if (Value split = op.getSplit()) {
      Value per = a.ceilDiv(a.ceilDiv(sk, blockN), op.getNumSplits());
      Value splitLo = a.mul(split, per);
      nbLo = a.max(nbLo, splitLo);
      nbHi = a.min(nbHi, a.add(splitLo, per));
    }
    rewriter.replaceOp(op, {nbLo, nbHi});
    return success();
  }
};

struct FlashAttnLowerKeyRangesPass
    : public flashattn::impl::FlashAttnLowerKeyRangesBase<FlashAttnLowerKeyRangesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFlashAttnLowerKeyRangesPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     inPlaceRewriteConfig())))
      return signalPassFailure();
  }
};
} // namespace

void mlir::flashattn::populateFlashAttnLowerKeyRangesPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerKeyEnd, LowerKeyBegin, LowerKeyBlocks>(patterns.getContext());
}
