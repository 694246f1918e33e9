//===- LowerWarpSpecialize.cpp - flashattn-lower-warp-specialize ----------===//
//
// flashattn.warp_specialize -> scf.if (tid / 128 == 0) { setmaxnreg.dec;
// producer } else { setmaxnreg.inc; consumers }, in place.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Conversion/Passes.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "flashattn/Utils/InPlaceRewrite.h"

namespace mlir::flashattn {
#define GEN_PASS_DEF_FLASHATTNLOWERWARPSPECIALIZE
#include "flashattn/Conversion/Passes.h.inc"
} // namespace mlir::flashattn

using namespace mlir;
using namespace mlir::flashattn;

namespace {

/// Moves `region`'s ops to the start of `block` (before its scf.yield),
/// after a setmaxnreg to `regs` registers when `regs` is not 0.
void inlinePartition(PatternRewriter &rewriter, Region &region, Block *block, int32_t regs,
                     NVVM::SetMaxRegisterAction action, Location loc) {
  rewriter.setInsertionPoint(block->getTerminator());
  if (regs)
    NVVM::SetMaxRegisterOp::create(rewriter, loc, regs, action);
  rewriter.inlineBlockBefore(&region.front(), block->getTerminator());
}

struct LowerWarpSpecialize : OpRewritePattern<WarpSpecializeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(WarpSpecializeOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type i32 = rewriter.getI32Type();
    Value threads = arith::ConstantOp::create(rewriter, loc, rewriter.getIntegerAttr(i32, 128));
    Value warpgroup = arith::DivUIOp::create(rewriter, loc, op.getTid(), threads);
    Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getIntegerAttr(i32, 0));
    Value isProducer =
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, warpgroup, zero);
    auto branch = scf::IfOp::create(rewriter, loc, isProducer, /*withElseRegion=*/true);
    inlinePartition(rewriter, op.getProducer(), branch.thenBlock(),
                    static_cast<int32_t>(op.getProducerRegs()),
                    NVVM::SetMaxRegisterAction::decrease, loc);
    inlinePartition(rewriter, op.getConsumers(), branch.elseBlock(),
                    static_cast<int32_t>(op.getConsumerRegs()),
                    NVVM::SetMaxRegisterAction::increase, loc);
    rewriter.eraseOp(op);
    return success();
  }
};

struct FlashAttnLowerWarpSpecializePass
    : public flashattn::impl::FlashAttnLowerWarpSpecializeBase<
          FlashAttnLowerWarpSpecializePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFlashAttnLowerWarpSpecializePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     inPlaceRewriteConfig())))
      return signalPassFailure();
  }
};
} // namespace

void mlir::flashattn::populateFlashAttnLowerWarpSpecializePatterns(RewritePatternSet &patterns) {
  patterns.add<LowerWarpSpecialize>(patterns.getContext());
}
