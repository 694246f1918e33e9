//===- BufferizableOpInterfaceImpl.cpp - bufferization of flashattn ------===//

#include "flashattn/Dialect/FlashAttn/Transforms/BufferizableOpInterfaceImpl.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/IR/DstBufferizableOpInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::flashattn;

namespace {
/// Replaces every tensor operand by its buffer, builds the op again on
/// memrefs (no results), moves the regions, and ties the results to the out
/// buffers.
template <typename OpTy>
static LogicalResult bufferizeDstOp(OpTy op, RewriterBase &rewriter,
                                    const BufferizationOptions &options,
                                    BufferizationState &state) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  SmallVector<Value> operands;
  for (Value operand : op->getOperands()) {
    if (!isa<TensorType>(operand.getType())) {
      operands.push_back(operand);
      continue;
    }
    FailureOr<Value> buffer = getBuffer(rewriter, operand, options, state);
    if (failed(buffer))
      return failure();
    operands.push_back(*buffer);
  }
  OperationState newState(op.getLoc(), op->getName());
  newState.addOperands(operands);
  newState.addAttributes(op->getAttrs());
  newState.propertiesAttr = op->getPropertiesAsAttribute();
  for (unsigned i = 0, e = op->getNumRegions(); i < e; ++i)
    newState.addRegion();
  Operation *newOp = rewriter.create(newState);
  for (unsigned i = 0, e = op->getNumRegions(); i < e; ++i)
    rewriter.inlineRegionBefore(op->getRegion(i), newOp->getRegion(i),
                                newOp->getRegion(i).end());
  auto dst = cast<DestinationStyleOpInterface>(newOp);
  SmallVector<Value> replacements(dst.getDpsInits());
  replaceOpWithBufferizedValues(rewriter, op, replacements);
  return success();
}

/// Both ops: inputs are read, out (and lse) are written in place, not read.
template <typename OpTy>
struct DstOpInterface
    : public DstBufferizableOpInterfaceExternalModel<DstOpInterface<OpTy>,
                                                     OpTy> {
  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand,
                              const AnalysisState &) const {
    return !cast<DestinationStyleOpInterface>(op).isDpsInit(&operand);
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    return bufferizeDstOp(cast<OpTy>(op), rewriter, options, state);
  }
};
} // namespace

void mlir::flashattn::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, FlashAttnDialect *) {
    AttentionOp::attachInterface<DstOpInterface<AttentionOp>>(*ctx);
    CombineOp::attachInterface<DstOpInterface<CombineOp>>(*ctx);
  });
}
