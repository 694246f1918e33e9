//===- ConvertSm90ToNVVM.cpp - convert-flashattn-sm90-to-nvvm -------------===//
//
// The flashattn kernel ops that MLIR 22's NVVM dialect has no op for become
// inline PTX here, in place, the only place the kernels get PTX text:
// flashattn.wgmma_rs (wgmma.mma_async with A in registers, PTX ISA
// 9.7.15.5.2; nvvm.wgmma.mma_async takes A only from shared memory),
// l2_policy (createpolicy), opaque (an opaque mov), mbarrier_arrive_if (a
// predicated mbarrier.arrive) and atomic_add_acq_rel (atom.acq_rel.gpu,
// whose ordering LLVM 22's NVPTX back end drops). Before that it refuses a
// wgmma instruction under a branch on a per-warp vote.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Conversion/Passes.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "flashattn/Utils/InPlaceRewrite.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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

/// `text` as inline PTX with `constraints`, side effects as given.
LLVM::InlineAsmOp inlinePtx(PatternRewriter &rewriter, Location loc, TypeRange results,
                            ValueRange operands, StringRef text, StringRef constraints,
                            bool sideEffects) {
  return LLVM::InlineAsmOp::create(
      rewriter, loc, results, operands, text, constraints, sideEffects,
      /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(rewriter.getContext(), LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
}

/// createpolicy.fractional.L2::<priority>.b64 over the whole access (PTX
/// ISA, data movement instructions, createpolicy).
struct LowerL2Policy : OpRewritePattern<L2PolicyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(L2PolicyOp op, PatternRewriter &rewriter) const override {
    std::string text = "createpolicy.fractional.L2::" +
                       stringifyL2Priority(op.getPriority()).str() + ".b64 $0, 1.0;";
    rewriter.replaceOp(op, inlinePtx(rewriter, op.getLoc(), rewriter.getI64Type(), {}, text,
                                     "=l", /*sideEffects=*/true));
    return success();
  }
};

/// An opaque mov.b32 (PTX ISA, data movement instructions, mov).
struct LowerOpaque : OpRewritePattern<OpaqueOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(OpaqueOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, inlinePtx(rewriter, op.getLoc(), op.getType(), op.getInput(),
                                     "mov.b32 $0, $1;", "=r,r", /*sideEffects=*/true));
    return success();
  }
};

/// @p mbarrier.arrive.shared.b64 (PTX ISA, parallel synchronization
/// instructions, mbarrier.arrive), p set from the predicate as a u32.
struct LowerMBarrierArriveIf : OpRewritePattern<MBarrierArriveIfOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MBarrierArriveIfOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value flag = LLVM::ZExtOp::create(rewriter, loc, rewriter.getI32Type(), op.getPred());
    Value address = LLVM::PtrToIntOp::create(rewriter, loc, rewriter.getI64Type(), op.getBarrier());
    inlinePtx(rewriter, loc, {}, {flag, address},
              "{\n.reg .pred p;\n.reg .b64 st;\nsetp.ne.u32 p, $0, 0;\n@p "
              "mbarrier.arrive.shared.b64 st, [$1];\n}",
              "r,l", /*sideEffects=*/true);
    rewriter.eraseOp(op);
    return success();
  }
};

/// atom.acq_rel.gpu.global.add.u32 (PTX ISA, parallel synchronization
/// instructions, atom).
struct LowerAtomicAddAcqRel : OpRewritePattern<AtomicAddAcqRelOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AtomicAddAcqRelOp op, PatternRewriter &rewriter) const override {
    std::string text =
        "atom.acq_rel.gpu.global.add.u32 $0, [$1], " + std::to_string(op.getValue()) + ";";
    rewriter.replaceOp(op, inlinePtx(rewriter, op.getLoc(), rewriter.getI32Type(),
                                     op.getAddress(), text, "=r,l", /*sideEffects=*/true));
    return success();
  }
};

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
    auto asmOp = inlinePtx(rewriter, loc, accType, operands, wgmmaRsText(op.getN(), nAcc, element),
                           wgmmaRsConstraints(nAcc), /*sideEffects=*/true);
    rewriter.replaceOp(op, asmOp.getResult(0));
    return success();
  }
};

/// The nvvm.vote.sync that `cond` (an i1, through and / or / xor /
/// select) comes from, if any: a per-warp value.
Operation *voteOf(Value cond, int depth = 0) {
  Operation *def = cond.getDefiningOp();
  if (!def || depth > 8)
    return nullptr;
  if (isa<NVVM::VoteSyncOp>(def))
    return def;
  if (!isa<arith::AndIOp, arith::OrIOp, arith::XOrIOp, arith::SelectOp>(def))
    return nullptr;
  for (Value operand : def->getOperands())
    if (Operation *vote = voteOf(operand, depth + 1))
      return vote;
  return nullptr;
}

/// wgmma.fence, commit_group, wait_group and mma_async are .aligned: all
/// threads of the warpgroup execute the same instruction (PTX ISA
/// 9.7.15.5.2, 9.7.15.7). A branch on a warp's vote may send the four warps
/// of a warpgroup different ways, so none may sit under one.
LogicalResult checkAlignedWgmma(Operation *root) {
  WalkResult result = root->walk([](Operation *op) {
    if (!isa<NVVM::WgmmaFenceAlignedOp, NVVM::WgmmaGroupSyncAlignedOp,
             NVVM::WgmmaWaitGroupSyncOp, NVVM::WgmmaMmaAsyncOp, WgmmaRsOp>(op))
      return WalkResult::advance();
    for (auto branch = op->getParentOfType<scf::IfOp>(); branch;
         branch = branch->getParentOfType<scf::IfOp>())
      if (Operation *vote = voteOf(branch.getCondition())) {
        InFlightDiagnostic diag = op->emitOpError(
            "under a branch on a per-warp vote: wgmma instructions are .aligned, the same "
            "instruction for all four warps of a warpgroup (PTX ISA 9.7.15)");
        diag.attachNote(vote->getLoc()) << "the vote";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

struct ConvertFlashAttnSm90ToNVVMPass
    : public flashattn::impl::ConvertFlashAttnSm90ToNVVMBase<ConvertFlashAttnSm90ToNVVMPass> {
  void runOnOperation() override {
    if (failed(checkAlignedWgmma(getOperation())))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateFlashAttnSm90ToNVVMPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     inPlaceRewriteConfig())))
      return signalPassFailure();
  }
};
} // namespace

void mlir::flashattn::populateFlashAttnSm90ToNVVMPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerWgmmaRs, LowerL2Policy, LowerOpaque, LowerMBarrierArriveIf,
               LowerAtomicAddAcqRel>(patterns.getContext());
}
