//===- Dialects.cpp - C API of the flashattn dialect ----------------------===//

#include "flashattn-c/Dialects.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "flashattn/Dialect/FlashAttn/Transforms/BufferizableOpInterfaceImpl.h"
#include "flashattn/Dialect/FlashAttn/Transforms/DecompositionInterfaceImpl.h"
#include "flashattn/Dialect/FlashAttn/Transforms/TilingInterfaceImpl.h"
#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(FlashAttn, flashattn,
                                      mlir::flashattn::FlashAttnDialect)

void mlirFlashAttnRegisterExternalModels(MlirDialectRegistry registry) {
  mlir::DialectRegistry &r = *unwrap(registry);
  mlir::flashattn::registerBufferizableOpInterfaceExternalModels(r);
  mlir::flashattn::registerTilingInterfaceExternalModels(r);
  mlir::flashattn::registerDecompositionInterfaceExternalModels(r);
}
