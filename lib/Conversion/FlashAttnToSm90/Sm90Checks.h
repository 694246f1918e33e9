//===- Sm90Checks.h - what the sm_90a kernels take of an op -----*- C++ -*-===//

#ifndef FLASHATTN_LIB_CONVERSION_FLASHATTNTOSM90_SM90CHECKS_H
#define FLASHATTN_LIB_CONVERSION_FLASHATTNTOSM90_SM90CHECKS_H

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"

#include <string>

namespace mlir::flashattn {

/// Why the sm90 kernels cannot take `op`'s operands, element types, head
/// dims or regions, or "".
std::string sm90OperandsUnsupported(AttentionOp op);

} // namespace mlir::flashattn

#endif
