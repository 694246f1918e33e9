//===- DecomposeToLinalg.cpp - flashattn-decompose-to-linalg --------------===//
//
// Every flashattn.attention is replaced by its linalg::AggregatedOpInterface
// decomposition (DecompositionInterfaceImpl.cpp, whose external model the
// pass registers); one that does not decompose (the memref form included)
// fails the pass with the op's diagnostic.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Transforms/Passes.h"

#include "flashattn/Dialect/FlashAttn/Transforms/DecompositionInterfaceImpl.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::flashattn {
#define GEN_PASS_DEF_FLASHATTNDECOMPOSETOLINALG
#include "flashattn/Transforms/Passes.h.inc"
} // namespace mlir::flashattn

using namespace mlir;
using namespace mlir::flashattn;

namespace {
struct DecomposeToLinalgPass
    : public flashattn::impl::FlashAttnDecomposeToLinalgBase<DecomposeToLinalgPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    FlashAttnDecomposeToLinalgBase::getDependentDialects(registry);
    registerDecompositionInterfaceExternalModels(registry);
  }

  void runOnOperation() override {
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (AttentionOp op : ops) {
      auto aggregate = cast<linalg::AggregatedOpInterface>(op.getOperation());
      rewriter.setInsertionPoint(op);
      FailureOr<SmallVector<Value>> values = aggregate.decomposeOperation(rewriter);
      if (failed(values))
        return signalPassFailure();
      rewriter.replaceOp(op, *values);
    }
  }
};
} // namespace
