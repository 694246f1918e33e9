/*===- flashattn/compiler_abi.h - what the runtime asks of the compiler -*- C -*-===*
 *
 * The compiler library (libflashattn_compiler.so, C++ with MLIR inside)
 * exports one C function that the runtime finds with dlsym when it compiles
 * on a cache miss:
 *
 *   int flashattnCompileArtifact(const fa_attention_config *config,
 *                                void **bytes, size_t *size,
 *                                char *error, size_t error_size);
 *
 * It returns an fa_status; on FA_OK *bytes holds *size bytes of an artifact
 * (flashattn/artifact.h) allocated with malloc, which the caller frees with
 * free(). On failure it writes a NUL-terminated message into error.
 *
 *===----------------------------------------------------------------------===*/

#ifndef FLASHATTN_COMPILER_ABI_H
#define FLASHATTN_COMPILER_ABI_H

#include "flashattn/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FA_COMPILER_COMPILE_SYMBOL "flashattnCompileArtifact"
typedef int (*fa_compiler_compile_fn)(const fa_attention_config *config,
                                      void **bytes, size_t *size, char *error,
                                      size_t error_size);

#ifdef __cplusplus
}
#endif

#endif /* FLASHATTN_COMPILER_ABI_H */
