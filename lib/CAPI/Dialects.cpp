//===- Dialects.cpp - C API of the flashattn dialect ----------------------===//

#include "flashattn-c/Dialects.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "mlir/CAPI/Registration.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(FlashAttn, flashattn,
                                      mlir::flashattn::FlashAttnDialect)
