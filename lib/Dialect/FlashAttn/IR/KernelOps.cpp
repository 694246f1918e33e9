//===- KernelOps.cpp - Verifiers of the flashattn kernel-structure ops ----===//
//
// warp_specialize: register budgets setmaxnreg can set (PTX ISA,
// miscellaneous instructions, setmaxnreg: a multiple of 8 in [24, 256]);
// wgmma_rs: the shapes of the register-A wgmma (PTX ISA 9.7.15.5.2);
// l2_policy: a priority createpolicy can give (PTX ISA, createpolicy).
//
//===----------------------------------------------------------------------===//

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"

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

// wgmma_rs: .m64nNk16 with N a multiple of 8 in [8, 256] (PTX ISA
// 9.7.15.5.2), f16 / bf16 operands, N / 2 f32 accumulators a thread, 4 A
// registers, the result of the accumulator's type.
LogicalResult WgmmaRsOp::verify() {
  int64_t n = getN();
  if (n < 8 || n > 256 || n % 8 != 0)
    return emitOpError() << "'n' must be a multiple of 8 in [8, 256], got " << n;
  Type element = getElement();
  if (!element.isF16() && !element.isBF16())
    return emitOpError() << "'element' must be f16 or bf16, got " << element;
  if (getA().size() != 4)
    return emitOpError() << "takes 4 A registers (i32), got " << getA().size();
  auto acc = dyn_cast<LLVM::LLVMStructType>(getAcc().getType());
  bool f32s = acc && llvm::all_of(acc.getBody(), [](Type t) { return t.isF32(); });
  if (!f32s || static_cast<int64_t>(acc.getBody().size()) != n / 2)
    return emitOpError() << "'acc' must be an !llvm.struct of n / 2 = " << n / 2
                         << " f32, got " << getAcc().getType();
  return success();
}

// l2_policy: createpolicy.fractional takes L2::evict_first / evict_last
// (and evict_unchanged / evict_normal, which the kernels never ask for);
// a normal priority is no policy at all.
LogicalResult L2PolicyOp::verify() {
  if (getPriority() == L2Priority::normal)
    return emitOpError() << "'priority' must be evict_first or evict_last (a load with normal "
                            "priority takes no policy), got normal";
  return success();
}
