//===- KernelOps.cpp - Verifiers of the flashattn kernel-structure ops ----===//
//
// warp_specialize: register budgets setmaxnreg can set (PTX ISA,
// miscellaneous instructions, setmaxnreg: a multiple of 8 in [24, 256]).
//
//===----------------------------------------------------------------------===//

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"

using namespace mlir;
using namespace mlir::flashattn;

static LogicalResult verifyRegisterBudget(Operation *op, StringRef name, int64_t regs) {
  if (regs == 0 || (regs >= 24 && regs <= 256 && regs % 8 == 0))
    return success();
  return op->emitOpError() << "'" << name
                           << "' must be 0 (keep the launch's registers) or a multiple of 8 "
                              "in [24, 256] (setmaxnreg), got "
                           << regs;
}

LogicalResult WarpSpecializeOp::verify() {
  if (failed(verifyRegisterBudget(*this, "producer_regs",
                                  static_cast<int32_t>(getProducerRegs()))))
    return failure();
  return verifyRegisterBudget(*this, "consumer_regs", static_cast<int32_t>(getConsumerRegs()));
}
