/*===- flashattn-c/Compiler.h - one-call compile (C API) -----------*- C -*-===*
 *
 * The compiler's C entry point for the runtime (libflashattn_compiler.so) and
 * for any C caller: compile one attention config (flashattn/runtime.h) into
 * an artifact (flashattn/artifact.h). Same contract as
 * flashattn/compiler_abi.h: returns an fa_status, *bytes is malloc'd.
 *
 *===----------------------------------------------------------------------===*/

#ifndef FLASHATTN_C_COMPILER_H
#define FLASHATTN_C_COMPILER_H

#include "flashattn/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

int flashattnCompileArtifact(const fa_attention_config *config, void **bytes,
                             size_t *size, char *error, size_t error_size);

/* The version string that keys the artifact cache. */
const char *flashattnCompilerVersion(void);

#ifdef __cplusplus
}
#endif

#endif /* FLASHATTN_C_COMPILER_H */
