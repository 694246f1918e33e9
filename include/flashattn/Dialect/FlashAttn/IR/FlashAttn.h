//===- FlashAttn.h - FlashAttn dialect, attributes and ops ------*- C++ -*-===//
//
// The one header to include for the flashattn dialect: the dialect class,
// its enums, the #flashattn.plan attribute and the ops.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_DIALECT_FLASHATTN_IR_FLASHATTN_H
#define FLASHATTN_DIALECT_FLASHATTN_IR_FLASHATTN_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttnOpsDialect.h.inc"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "flashattn/Dialect/FlashAttn/IR/FlashAttnAttrs.h.inc"

#define GET_OP_CLASSES
#include "flashattn/Dialect/FlashAttn/IR/FlashAttnOps.h.inc"

#endif // FLASHATTN_DIALECT_FLASHATTN_IR_FLASHATTN_H
