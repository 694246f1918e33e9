/*===- capi_test.h - helpers of the C API tests --------------------------===*
 *
 * CHECK (fail the test: print the condition's place and a message, return
 * 1) and a Buffer that collects MLIR's printed strings and diagnostics.
 *
 *===----------------------------------------------------------------------===*/

#ifndef FLASHATTN_TEST_CAPI_CAPI_TEST_H
#define FLASHATTN_TEST_CAPI_CAPI_TEST_H

#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"

#include <stdio.h>
#include <string.h>

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__);                  \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      return 1;                                                                \
    }                                                                          \
  } while (0)

/* Printed text (truncated past its capacity) and the number of pieces. */
typedef struct {
  char text[16384];
  size_t len;
  int calls;
} Buffer;

static inline void resetBuffer(Buffer *b) {
  b->text[0] = '\0';
  b->len = 0;
  b->calls = 0;
}

/* An MlirStringCallback appending to the Buffer at `userData`. */
static inline void appendToBuffer(MlirStringRef s, void *userData) {
  Buffer *b = (Buffer *)userData;
  size_t n = s.length;
  if (b->len + n >= sizeof(b->text))
    n = sizeof(b->text) - 1 - b->len;
  memcpy(b->text + b->len, s.data, n);
  b->len += n;
  b->text[b->len] = '\0';
  b->calls++;
}

/* A diagnostic handler printing into the Buffer at `userData`. */
static inline MlirLogicalResult captureDiagnostic(MlirDiagnostic diag, void *userData) {
  mlirDiagnosticPrint(diag, appendToBuffer, userData);
  return mlirLogicalResultSuccess();
}

#endif
