//===- KeyRangeOps.cpp - Verifiers of the flashattn key-range ops ---------===//
//
// key_end, key_begin and key_blocks: window sides are -1 (no bound) or a
// number of keys, a block holds at least one key, and split-KV gives both
// the split and the split count.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"

using namespace mlir;
using namespace mlir::flashattn;

static LogicalResult verifyWindowSide(Operation *op, StringRef name, int64_t side) {
  if (side < -1)
    return op->emitOpError() << "'" << name << "' must be -1 (no bound) or a number of keys "
                             << ">= 0, got " << side;
  return success();
}

LogicalResult KeyEndOp::verify() {
  return verifyWindowSide(*this, "window_right", getWindowRight());
}

// The I64Attr getters return uint64_t: the checks read the values signed.
LogicalResult KeyBeginOp::verify() {
  int64_t left = getWindowLeft();
  if (left < 0)
    return emitOpError() << "'window_left' must be a number of keys >= 0 (key_begin is only "
                            "built under a left window), got "
                         << left;
  return success();
}

LogicalResult KeyBlocksOp::verify() {
  int64_t blockN = getBlockN();
  if (blockN < 1)
    return emitOpError() << "'block_n' must be at least 1, got " << blockN;
  if (static_cast<bool>(getSplit()) != static_cast<bool>(getNumSplits()))
    return emitOpError("'split' and 'num_splits' go together (split-KV) or not at all");
  if (failed(verifyWindowSide(*this, "window_left", getWindowLeft())))
    return failure();
  return verifyWindowSide(*this, "window_right", getWindowRight());
}
