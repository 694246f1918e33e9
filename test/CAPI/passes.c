/*===- passes.c - C API test of the flashattn passes and pipelines -------===*
 *
 * Registers the passes and pipelines, then: runs flashattn-plan{target=sm90}
 * on a parsed module and checks the attention op got a `plan` attribute;
 * names the host pipeline through MLIR's own pass-manager C API; runs the
 * host pipeline to the LLVM dialect; and checks that an unknown pass name,
 * a bad option and a failing pass (flashattn-plan{target=tpu}) each give
 * failure with a message while the process goes on; with the interface
 * models in a registry, decomposes a tensor-form op into linalg. Exits 0
 * on success, 1
 * with a message on the first failed check.
 *
 *===----------------------------------------------------------------------===*/

#include "flashattn-c/Dialects.h"
#include "flashattn-c/Passes.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/Dialect/Func.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <stdio.h>
#include <string.h>

#include "capi_test.h"

static int equals(MlirStringRef s, const char *c) {
  return s.length == strlen(c) && memcmp(s.data, c, s.length) == 0;
}

/* GQA prefill on memrefs (the form the pipelines take). */
static const char *kModule =
    "func.func @prefill(%q: memref<1x64x4x64xbf16>, %k: memref<1x64x2x64xbf16>,\n"
    "                   %v: memref<1x64x2x64xbf16>, %o: memref<1x64x4x64xbf16>) {\n"
    "  flashattn.attention ins(%q, %k, %v : memref<1x64x4x64xbf16>,\n"
    "      memref<1x64x2x64xbf16>, memref<1x64x2x64xbf16>)\n"
    "      outs(%o : memref<1x64x4x64xbf16>) {causal = #flashattn.causal<bottom_right>}\n"
    "  return\n"
    "}\n";

/* The tensor form (what an ML compiler emits). */
static const char *kTensorModule =
    "func.func @f(%q: tensor<1x8x4x16xf16>, %k: tensor<1x8x2x16xf16>,\n"
    "             %v: tensor<1x8x2x16xf16>, %o: tensor<1x8x4x16xf16>) -> tensor<1x8x4x16xf16> {\n"
    "  %r = flashattn.attention ins(%q, %k, %v : tensor<1x8x4x16xf16>,\n"
    "      tensor<1x8x2x16xf16>, tensor<1x8x2x16xf16>)\n"
    "      outs(%o : tensor<1x8x4x16xf16>) -> tensor<1x8x4x16xf16>\n"
    "  return %r : tensor<1x8x4x16xf16>\n"
    "}\n";

/* Counts the operations whose name starts with `prefix`; remembers the
 * first flashattn.attention. */
typedef struct {
  const char *prefix;
  int count;
  MlirOperation attention;
} WalkState;

static MlirWalkResult visit(MlirOperation op, void *userData) {
  WalkState *w = (WalkState *)userData;
  MlirStringRef name = mlirIdentifierStr(mlirOperationGetName(op));
  size_t n = strlen(w->prefix);
  if (name.length >= n && memcmp(name.data, w->prefix, n) == 0)
    w->count++;
  if (equals(name, "flashattn.attention") &&
      mlirOperationIsNull(w->attention))
    w->attention = op;
  return MlirWalkResultAdvance;
}

static WalkState walk(MlirModule module, const char *prefix) {
  WalkState w = {prefix, 0, {NULL}};
  mlirOperationWalk(mlirModuleGetOperation(module), visit, &w,
                    MlirWalkPreOrder);
  return w;
}

static MlirModule parse(MlirContext ctx) {
  return mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kModule));
}

static MlirLogicalResult run(MlirModule module, const char *pipeline,
                             Buffer *errors) {
  resetBuffer(errors);
  return flashattnRunPipeline(module, mlirStringRefCreateFromCString(pipeline),
                              appendToBuffer, errors);
}

int main(void) {
  /* Registration is idempotent. */
  mlirRegisterFlashAttnPasses();
  mlirRegisterFlashAttnPipelines();
  mlirRegisterFlashAttnPipelines();

  MlirContext ctx = mlirContextCreate();
  mlirDialectHandleRegisterDialect(mlirGetDialectHandle__flashattn__(), ctx);
  mlirDialectHandleRegisterDialect(mlirGetDialectHandle__func__(), ctx);
  mlirDialectHandleLoadDialect(mlirGetDialectHandle__flashattn__(), ctx);
  mlirDialectHandleLoadDialect(mlirGetDialectHandle__func__(), ctx);
  Buffer errors;
  resetBuffer(&errors);

  /* flashattn-plan{target=sm90}: the op gets its plan. */
  MlirModule module = parse(ctx);
  CHECK(!mlirModuleIsNull(module), "module failed to parse");
  WalkState w = walk(module, "flashattn.");
  CHECK(!mlirOperationIsNull(w.attention), "no flashattn.attention");
  CHECK(mlirAttributeIsNull(mlirOperationGetInherentAttributeByName(
            w.attention, mlirStringRefCreateFromCString("plan"))),
        "the parsed op already has a plan");
  CHECK(mlirLogicalResultIsSuccess(run(
            module, "builtin.module(flashattn-plan{target=sm90})", &errors)),
        "flashattn-plan{target=sm90} failed: %s", errors.text);
  CHECK(errors.calls == 0, "error callback called on success: %s",
        errors.text);
  w = walk(module, "flashattn.");
  MlirAttribute plan = mlirOperationGetInherentAttributeByName(
      w.attention, mlirStringRefCreateFromCString("plan"));
  CHECK(!mlirAttributeIsNull(plan), "no plan attribute after flashattn-plan");
  Buffer printed;
  resetBuffer(&printed);
  mlirAttributePrint(plan, appendToBuffer, &printed);
  CHECK(strstr(printed.text, "#flashattn.plan<target = sm90") != NULL,
        "unexpected plan: %s", printed.text);
  mlirModuleDestroy(module);

  /* MLIR's own pass manager names the registered host pipeline. */
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
  resetBuffer(&errors);
  CHECK(mlirLogicalResultIsSuccess(mlirOpPassManagerAddPipeline(
            opm, mlirStringRefCreateFromCString("flashattn-host-pipeline"),
            appendToBuffer, &errors)),
        "mlirOpPassManagerAddPipeline(flashattn-host-pipeline): %s",
        errors.text);
  resetBuffer(&printed);
  mlirPrintPassPipeline(opm, appendToBuffer, &printed);
  CHECK(strstr(printed.text, "flashattn-plan") != NULL &&
            strstr(printed.text, "convert-flashattn-to-vector") != NULL,
        "host pipeline prints as: %s", printed.text);
  mlirPassManagerDestroy(pm);

  /* The host pipeline lowers the module to the LLVM dialect. */
  module = parse(ctx);
  CHECK(mlirLogicalResultIsSuccess(run(
            module, "builtin.module(flashattn-host-pipeline{vector-bits=256})",
            &errors)),
        "host pipeline failed: %s", errors.text);
  w = walk(module, "llvm.");
  CHECK(w.count > 0, "no llvm op after the host pipeline");
  CHECK(walk(module, "flashattn.").count == 0 &&
            walk(module, "func.").count == 0 &&
            walk(module, "memref.").count == 0,
        "ops other than LLVM left after the host pipeline");
  CHECK(mlirOperationVerify(mlirModuleGetOperation(module)),
        "lowered module does not verify");
  mlirModuleDestroy(module);

  /* Failures leave the process alive, with a message. */
  module = parse(ctx);
  CHECK(mlirLogicalResultIsFailure(
            run(module, "builtin.module(flashattn-no-such-pass)", &errors)),
        "an unknown pass name succeeded");
  CHECK(strstr(errors.text, "flashattn-no-such-pass") != NULL,
        "unknown pass: message does not name it: '%s'", errors.text);

  CHECK(mlirLogicalResultIsFailure(run(module, "flashattn-plan", &errors)),
        "a pipeline without its anchor succeeded");
  CHECK(errors.len > 0, "missing anchor: no message");

  CHECK(mlirLogicalResultIsFailure(run(
            module, "builtin.module(flashattn-plan{no-such-option=1})",
            &errors)),
        "an unknown option succeeded");
  CHECK(errors.len > 0, "unknown option: no message");

  CHECK(mlirLogicalResultIsFailure(run(
            module, "builtin.module(flashattn-plan{target=tpu})", &errors)),
        "flashattn-plan{target=tpu} succeeded");
  CHECK(strstr(errors.text, "error: flashattn-plan: unknown target 'tpu' "
                            "(expected host or sm90)") != NULL,
        "failing pass: unexpected message '%s'", errors.text);
  CHECK(strstr(errors.text, "see current operation") == NULL,
        "failing pass: the message dumps the module: '%s'", errors.text);

  /* Without a callback, failure is still reported and the message goes to
   * the context's diagnostic handlers. */
  Buffer diags;
  resetBuffer(&diags);
  MlirDiagnosticHandlerID handler = mlirContextAttachDiagnosticHandler(
      ctx, captureDiagnostic, &diags, NULL);
  CHECK(mlirLogicalResultIsFailure(flashattnRunPipeline(
            module,
            mlirStringRefCreateFromCString(
                "builtin.module(flashattn-plan{target=tpu})"),
            NULL, NULL)),
        "flashattn-plan{target=tpu} without a callback succeeded");
  mlirContextDetachDiagnosticHandler(ctx, handler);
  CHECK(strstr(diags.text, "flashattn-plan: unknown target 'tpu'") != NULL,
        "no callback: the context's handler got '%s'", diags.text);

  /* The module is still usable afterwards. */
  CHECK(mlirLogicalResultIsSuccess(
            run(module, "builtin.module(flashattn-plan)", &errors)),
        "flashattn-plan after the failures: %s", errors.text);
  mlirModuleDestroy(module);

  mlirContextDestroy(ctx);

  /* The interface models (bufferization, tiling, decomposition) in a
   * registry; the decomposition into linalg of a tensor-form op. */
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirDialectHandleInsertDialect(mlirGetDialectHandle__flashattn__(), registry);
  mlirDialectHandleInsertDialect(mlirGetDialectHandle__func__(), registry);
  mlirFlashAttnRegisterExternalModels(registry);
  ctx = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  module = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kTensorModule));
  CHECK(!mlirModuleIsNull(module), "tensor module failed to parse");
  CHECK(mlirLogicalResultIsSuccess(
            run(module, "builtin.module(flashattn-decompose-to-linalg)", &errors)),
        "flashattn-decompose-to-linalg failed: %s", errors.text);
  CHECK(walk(module, "flashattn.").count == 0 && walk(module, "linalg.generic").count >= 7,
        "the decomposition left flashattn ops or made too few linalg.generic");
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  printf("capi.passes: all checks passed\n");
  return 0;
}
