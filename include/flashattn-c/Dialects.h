/*===- flashattn-c/Dialects.h - C API of the flashattn dialect ----*- C -*-===*
 *
 * The dialect handle in MLIR's C API style. Register and load the dialect
 * into an MlirContext with mlirDialectHandleRegisterDialect /
 * mlirDialectHandleLoadDialect (mlir-c/IR.h). Link FlashAttnCAPI, the
 * flashattn dialect library and MLIR (libMLIR.so plus MLIR's static
 * libMLIRCAPI*.a archives, which hold the mlir* C functions).
 *
 *===----------------------------------------------------------------------===*/

#ifndef FLASHATTN_C_DIALECTS_H
#define FLASHATTN_C_DIALECTS_H

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/* mlirGetDialectHandle__flashattn__(): the handle of the `flashattn`
 * dialect (namespace "flashattn"). Never null. */
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(FlashAttn, flashattn);

/* Adds the op interfaces flashattn.attention implements as external
 * models to `registry`: BufferizableOpInterface (one-shot-bufferize),
 * TilingInterface (upstream tiling and fusion over batch, kv heads and
 * query rows) and linalg::AggregatedOpInterface (the decomposition into
 * linalg). Call it before creating the context from the registry. */
MLIR_CAPI_EXPORTED void mlirFlashAttnRegisterExternalModels(MlirDialectRegistry registry);

#ifdef __cplusplus
}
#endif

#endif /* FLASHATTN_C_DIALECTS_H */
