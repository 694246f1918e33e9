/*===- dialect.c - C API test of the flashattn dialect -------------------===*
 *
 * Creates a context, registers and loads the dialect through its handle,
 * parses an attention op, verifies it and checks its printed form; then
 * checks that an inconsistent op is rejected with the verifier's message.
 * Exits 0 on success, 1 with a message on the first failed check.
 *
 *===----------------------------------------------------------------------===*/

#include "flashattn-c/Dialects.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/Dialect/Func.h"
#include "mlir-c/IR.h"

#include <stdio.h>
#include <string.h>

#include "capi_test.h"

static const char *kValid =
    "func.func @gqa(%q: tensor<2x64x8x128xbf16>, %k: tensor<2x96x2x128xbf16>,\n"
    "               %v: tensor<2x96x2x128xbf16>, %o: tensor<2x64x8x128xbf16>,\n"
    "               %l: tensor<2x8x64xf32>)\n"
    "    -> (tensor<2x64x8x128xbf16>, tensor<2x8x64xf32>) {\n"
    "  %out, %lse = flashattn.attention\n"
    "      ins(%q, %k, %v : tensor<2x64x8x128xbf16>, tensor<2x96x2x128xbf16>,\n"
    "                       tensor<2x96x2x128xbf16>)\n"
    "      outs(%o, %l : tensor<2x64x8x128xbf16>, tensor<2x8x64xf32>)\n"
    "      {causal = #flashattn.causal<bottom_right>}\n"
    "      -> tensor<2x64x8x128xbf16>, tensor<2x8x64xf32>\n"
    "  return %out, %lse : tensor<2x64x8x128xbf16>, tensor<2x8x64xf32>\n"
    "}\n";

/* 6 query heads over 4 kv heads: not a multiple. */
static const char *kInvalid =
    "func.func @bad(%q: tensor<1x16x6x64xf16>, %k: tensor<1x16x4x64xf16>,\n"
    "               %v: tensor<1x16x4x64xf16>, %o: tensor<1x16x6x64xf16>)\n"
    "    -> tensor<1x16x6x64xf16> {\n"
    "  %out = flashattn.attention\n"
    "      ins(%q, %k, %v : tensor<1x16x6x64xf16>, tensor<1x16x4x64xf16>,\n"
    "                       tensor<1x16x4x64xf16>)\n"
    "      outs(%o : tensor<1x16x6x64xf16>) -> tensor<1x16x6x64xf16>\n"
    "  return %out : tensor<1x16x6x64xf16>\n"
    "}\n";

int main(void) {
  MlirContext ctx = mlirContextCreate();
  MlirDialectHandle flashattn = mlirGetDialectHandle__flashattn__();
  MlirDialectHandle func = mlirGetDialectHandle__func__();
  mlirDialectHandleRegisterDialect(flashattn, ctx);
  mlirDialectHandleRegisterDialect(func, ctx);
  MlirDialect dialect = mlirDialectHandleLoadDialect(flashattn, ctx);
  mlirDialectHandleLoadDialect(func, ctx);
  CHECK(!mlirDialectIsNull(dialect), "flashattn dialect did not load");
  MlirStringRef ns = mlirDialectGetNamespace(dialect);
  CHECK(ns.length == 9 && memcmp(ns.data, "flashattn", 9) == 0,
        "dialect namespace is '%.*s', expected 'flashattn'", (int)ns.length,
        ns.data);

  Buffer diags = {{0}, 0};
  MlirDiagnosticHandlerID handler = mlirContextAttachDiagnosticHandler(
      ctx, captureDiagnostic, &diags, NULL);

  /* A valid GQA attention parses, verifies and prints back. */
  MlirModule module =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kValid));
  CHECK(!mlirModuleIsNull(module), "valid module failed to parse: %s",
        diags.text);
  MlirOperation moduleOp = mlirModuleGetOperation(module);
  CHECK(mlirOperationVerify(moduleOp), "valid module failed to verify: %s",
        diags.text);
  Buffer printed = {{0}, 0};
  mlirOperationPrint(moduleOp, appendToBuffer, &printed);
  CHECK(strstr(printed.text, "flashattn.attention ins(") != NULL &&
            strstr(printed.text, "#flashattn.causal<bottom_right>") != NULL,
        "printed module lacks the attention op:\n%s", printed.text);

  /* Walk to the attention op: func.func -> body -> first op. */
  MlirBlock body = mlirModuleGetBody(module);
  MlirOperation fn = mlirBlockGetFirstOperation(body);
  MlirOperation attn = mlirBlockGetFirstOperation(
      mlirRegionGetFirstBlock(mlirOperationGetRegion(fn, 0)));
  MlirIdentifier name = mlirOperationGetName(attn);
  MlirStringRef nameStr = mlirIdentifierStr(name);
  CHECK(nameStr.length == strlen("flashattn.attention") &&
            memcmp(nameStr.data, "flashattn.attention", nameStr.length) == 0,
        "first op is '%.*s'", (int)nameStr.length, nameStr.data);
  CHECK(mlirOperationGetNumResults(attn) == 2,
        "attention has %d results, expected 2",
        (int)mlirOperationGetNumResults(attn));
  mlirModuleDestroy(module);

  /* An inconsistent op is rejected with a message naming the heads. */
  diags.len = 0;
  diags.text[0] = '\0';
  MlirModule bad =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kInvalid));
  CHECK(mlirModuleIsNull(bad), "invalid module was accepted");
  CHECK(strstr(diags.text, "number of query heads (6) must be a multiple of "
                           "the number of kv heads (4)") != NULL,
        "unexpected diagnostic: '%s'", diags.text);

  mlirContextDetachDiagnosticHandler(ctx, handler);
  mlirContextDestroy(ctx);
  printf("capi.dialect: all checks passed\n");
  return 0;
}
