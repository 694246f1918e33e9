/*===- fake_compiler.c - a compiler library that fails on purpose ---------===*
 *
 * Stands in for libflashattn_compiler.so in test_compile.c: by head_dim it
 * aborts (as LLVM's fatal errors do), dies of SIGSEGV, hangs, or returns an
 * error; any other head_dim gets a few bytes that are no artifact.
 *
 *===----------------------------------------------------------------------===*/

#include "flashattn/compiler_abi.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int flashattnCompileArtifact(const fa_attention_config *config, void **bytes, size_t *size,
                             char *error, size_t error_size) {
  switch (config->head_dim) {
  case 8:
    abort();
  case 16:
    for (;;)
      pause();
  case 24:
    raise(SIGSEGV);
    return FA_ERROR_COMPILE_FAILED;
  case 32:
    snprintf(error, error_size, "fake compiler: no kernel for head_dim %d", config->head_dim);
    return FA_ERROR_COMPILE_FAILED;
  default:
    *bytes = malloc(4);
    memcpy(*bytes, "nope", 4);
    *size = 4;
    return FA_OK;
  }
}
