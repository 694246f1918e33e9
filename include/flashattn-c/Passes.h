/*===- flashattn-c/Passes.h - passes and pipelines (C API) --------*- C -*-===*
 *
 * The flashattn passes and pipelines in MLIR's C API style: register them
 * with MLIR's global pass registry, so that mlirParsePassPipeline and
 * mlirOpPassManagerAddPipeline (mlir-c/Pass.h) can name them, or run a
 * textual pipeline on a module in one call. Link FlashAttnCAPI as for
 * flashattn-c/Dialects.h.
 *
 * Registration is process-wide (MLIR's registry is global, not per context).
 * Each mlirRegister* function below is idempotent and thread-safe, and skips
 * what is already registered (e.g. by a C++ caller of
 * mlir::flashattn::registerFlashAttnPassesAndPipelines(), which must then
 * run first: the C++ function registers unconditionally).
 *
 *===----------------------------------------------------------------------===*/

#ifndef FLASHATTN_C_PASSES_H
#define FLASHATTN_C_PASSES_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Registers the flashattn passes: flashattn-plan, flashattn-split-kv,
 * flashattn-tile, flashattn-sm90-pipeline-kv, flashattn-sm90-warp-specialize,
 * flashattn-lower-key-ranges, flashattn-floordiv-to-shift,
 * flashattn-decompose-to-linalg, flashattn-raise
 * (flashattn/Transforms/Passes.td), convert-flashattn-to-vector,
 * flashattn-sm90-warpgroup, flashattn-lower-warp-specialize and
 * convert-flashattn-sm90-to-nvvm (flashattn/Conversion/Passes.td). */
MLIR_CAPI_EXPORTED void mlirRegisterFlashAttnPasses(void);

/* Registers the pipelines flashattn-host-pipeline (options: vector-bits) and
 * flashattn-sm90-pipeline (options: format, block-m, ...; see
 * flashattn/Pipelines/Pipelines.h). Also registers the passes, which a
 * pipeline's textual form names. Upstream passes the pipelines use
 * internally need no registration; to name upstream passes in a textual
 * pipeline, register them too (e.g. mlirRegisterTransformsPasses,
 * mlir-c/Transforms.h). */
MLIR_CAPI_EXPORTED void mlirRegisterFlashAttnPipelines(void);

/* Parses `pipeline`, the anchored textual form that mlirParsePassPipeline
 * and mlir-opt --pass-pipeline take (e.g.
 * "builtin.module(flashattn-plan{target=sm90})" or
 * "builtin.module(flashattn-host-pipeline{vector-bits=512})"), and runs it on
 * `module` in place, with the verifier on. Registers the passes and pipelines
 * first (mlirRegisterFlashAttnPipelines).
 *
 * Returns success, or failure when the pipeline does not parse (unknown
 * pass, bad option, missing anchor) or a pass fails; the module may then be
 * partly transformed. On failure, when `errorCallback` is not NULL, it is
 * called one or more times with pieces of the message (the parser's error,
 * or each error diagnostic the run emitted with its location and notes,
 * one per line, less MLIR's "see current operation" dump) and `userData`. The string pieces are owned by the callee and
 * valid only during the call: copy them to keep them. While the pipeline
 * runs with a callback, error diagnostics go to it instead of the context's
 * diagnostic handlers; other severities, and everything when
 * `errorCallback` is NULL, go to the context's handlers as usual (MLIR's
 * default handler prints errors to stderr). */
MLIR_CAPI_EXPORTED MlirLogicalResult
flashattnRunPipeline(MlirModule module, MlirStringRef pipeline,
                     MlirStringCallback errorCallback, void *userData);

#ifdef __cplusplus
}
#endif

#endif /* FLASHATTN_C_PASSES_H */
