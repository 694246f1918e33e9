//===- ConvertSm90ToNVVM.cpp - convert-flashattn-sm90-to-nvvm -------------===//
//
// The flashattn kernel ops that MLIR 22's NVVM dialect has no op for become
// inline PTX here, in place: flashattn.wgmma_rs (wgmma.mma_async with A in
// registers, PTX ISA 9.7.15.5.2; nvvm.wgmma.mma_async takes A only from
// shared memory).
//
//===----------------------------------------------------------------------===//

#include "flashattn/Conversion/Passes.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "flashattn/Utils/InPlaceRewrite.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/PatternMatch.h"

#include <string>

namespace mlir::flashattn {
#define GEN_PASS_DEF_CONVERTFLASHATTNSM90TONVVM
#include "flashattn/Conversion/Passes.h.inc"
} // namespace mlir::flashattn

using namespace mlir;
using namespace mlir::flashattn;

namespace {

/// The text of one .m64nNk16 RS wgmma: `nAcc` f32 outputs tied to the
/// inputs, four A registers, the B descriptor; scale-d by a predicate set
/// to 1 (accumulate), scale-a / scale-b 1, B transposed (MN-major).
std::string wgmmaRsText(int64_t n, int64_t nAcc, StringRef element) {
  std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n" +
                     std::to_string(n) + "k16.f32." + element.str() + "." + element.str() + " {";
  for (int64_t r = 0; r < nAcc; ++r)
    text += (r ? ", $" : "$") + std::to_string(r);
  // Operands are numbered outputs first, then inputs (the tied ones too):
  // the A registers are $(2 nAcc) .. $(2 nAcc + 3), the descriptor
  // $(2 nAcc + 4).
  text += "}, {$" + std::to_string(2 * nAcc) + ", $" + std::to_string(2 * nAcc + 1) + ", $" +
          std::to_string(2 * nAcc + 2) + ", $" + std::to_string(2 * nAcc + 3) + "}, $" +
          std::to_string(2 * nAcc + 4) + ", p, 1, 1, 1;\n}";
  return text;
}

/// "=f" per output, the outputs' indices for the tied inputs, then the A
/// registers and the descriptor.
std::string wgmmaRsConstraints(int64_t nAcc) {
  std::string c;
  for (int64_t r = 0; r < nAcc; ++r)
    c += (r ? ",=f" : "=f");
  for (int64_t r = 0; r < nAcc; ++r)
    c += "," + std::to_string(r);
  return c + ",r,r,r,r,l";
}

struct LowerWgmmaRs : OpRewritePattern<WgmmaRsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(WgmmaRsOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto accType = cast<LLVM::LLVMStructType>(op.getAcc().getType());
    int64_t nAcc = accType.getBody().size();
    SmallVector<Value> operands;
    for (int64_t r = 0; r < nAcc; ++r)
      operands.push_back(LLVM::ExtractValueOp::create(rewriter, loc, op.getAcc(), r));
    operands.append(op.getA().begin(), op.getA().end());
    operands.push_back(op.getB());
    StringRef element = op.getElement().isF16() ? "f16" : "bf16";
    auto asmOp = LLVM::InlineAsmOp::create(
        rewriter, loc, TypeRange{accType}, operands, wgmmaRsText(op.getN(), nAcc, element),
        wgmmaRsConstraints(nAcc), /*has_side_effects=*/true, /*is_align_stack=*/false,
        LLVM::tailcallkind::TailCallKind::None,
        LLVM::AsmDialectAttr::get(rewriter.getContext(), LLVM::AsmDialect::AD_ATT),
        /*operand_attrs=*/ArrayAttr());
    rewriter.replaceOp(op, asmOp.getResult(0));
    return success();
  }
};

struct ConvertFlashAttnSm90ToNVVMPass
    : public flashattn::impl::ConvertFlashAttnSm90ToNVVMBase<ConvertFlashAttnSm90ToNVVMPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFlashAttnSm90ToNVVMPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     inPlaceRewriteConfig())))
      return signalPassFailure();
  }
};
} // namespace

void mlir::flashattn::populateFlashAttnSm90ToNVVMPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerWgmmaRs>(patterns.getContext());
}
