//===- FlashAttnDialect.cpp - FlashAttn dialect and attributes ------------===//
//
// Registration of the flashattn dialect, its enums and #flashattn.plan.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::flashattn;

#include "flashattn/Dialect/FlashAttn/IR/FlashAttnOpsDialect.cpp.inc"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "flashattn/Dialect/FlashAttn/IR/FlashAttnAttrs.cpp.inc"

void FlashAttnDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "flashattn/Dialect/FlashAttn/IR/FlashAttnAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "flashattn/Dialect/FlashAttn/IR/FlashAttnOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// PlanAttr
//===----------------------------------------------------------------------===//

LogicalResult PlanAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               Target target, int64_t blockM, int64_t blockN,
                               int64_t stages, int64_t consumers,
                               Schedule schedule, int64_t numSplits,
                               bool packGqa) {
  if (blockM <= 0 || blockN <= 0 || blockM > kMaxTileDim || blockN > kMaxTileDim)
    return emitError() << "plan tile sizes must be in [1, " << kMaxTileDim
                       << "], got block_m = "
                       << blockM << ", block_n = " << blockN;
  if (stages < 1)
    return emitError() << "plan stages must be >= 1, got " << stages;
  if (consumers < 1)
    return emitError() << "plan consumers must be >= 1, got " << consumers;
  if (numSplits < 1)
    return emitError() << "plan num_splits must be >= 1 (resolved), got "
                       << numSplits;
  if (target == Target::sm90 && blockM % (64 * consumers) != 0)
    return emitError() << "sm90 plan block_m (" << blockM
                       << ") must be a multiple of 64 rows per consumer "
                          "warpgroup ("
                       << consumers << " consumers)";
  if (target == Target::sm90 && (blockN % 8 != 0 || blockN > 256))
    return emitError() << "sm90 plan block_n (" << blockN
                       << ") must be a multiple of 8 and at most 256 (wgmma N)";
  return success();
}
