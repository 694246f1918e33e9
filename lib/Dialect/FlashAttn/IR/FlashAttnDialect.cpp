//===- FlashAttnDialect.cpp - FlashAttn dialect and attributes ------------===//
//
// Registration of the flashattn dialect, its enums and #flashattn.plan.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"

#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
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
                               bool packGqa, Sm90CodegenAttr sm90) {
  if (sm90 && target != Target::sm90)
    return emitError() << "plan sm90 code generation choices need target sm90";
  if (blockM <= 0 || blockN <= 0 || blockM > kMaxTileDim || blockN > kMaxTileDim)
    return emitError() << "plan tile sizes must be in [1, " << kMaxTileDim
                       << "], got block_m = "
                       << blockM << ", block_n = " << blockN;
  if (target == Target::host && (blockM > kMaxHostTileDim || blockN > kMaxHostTileDim))
    return emitError() << "host plan tile sizes must be at most " << kMaxHostTileDim
                       << " (what LLVM compiles in reasonable time), got block_m = " << blockM
                       << ", block_n = " << blockN;
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

//===----------------------------------------------------------------------===//
// Kernel ABI
//===----------------------------------------------------------------------===//

LogicalResult KernelParamAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                      ParamKind kind, StringRef arg, int64_t rank,
                                      DenseI64ArrayAttr boxAttr, int64_t swizzle, int64_t group,
                                      bool pagePanels, int64_t bytes) {
  ArrayRef<int64_t> box = boxAttr ? boxAttr.asArrayRef() : ArrayRef<int64_t>();
  bool named = kind == ParamKind::ptr || kind == ParamKind::dims || kind == ParamKind::tma;
  if (named != !arg.empty())
    return emitError() << "kernel param '" << stringifyParamKind(kind) << "' "
                       << (named ? "needs an arg" : "takes no arg, got '" + arg.str() + "'");
  if ((kind == ParamKind::dims) != (rank != 0))
    return emitError() << "kernel param '" << stringifyParamKind(kind)
                       << "': rank is for dims only (1 to 5), got " << rank;
  if (kind == ParamKind::dims && (rank < 1 || rank > 5))
    return emitError() << "kernel param dims of '" << arg << "': rank must be 1 to 5, got "
                       << rank;
  if (kind != ParamKind::tma && (!box.empty() || swizzle || group || pagePanels))
    return emitError() << "kernel param '" << stringifyParamKind(kind)
                       << "': box, swizzle, group and page_panels are for tma only";
  if (kind == ParamKind::tma) {
    if (box.size() < 1 || box.size() > 5)
      return emitError() << "kernel param tma of '" << arg << "': box must have 1 to 5 dims, got "
                         << box.size();
    for (int64_t b : box)
      if (b < 1 || b > 256)
        return emitError() << "kernel param tma of '" << arg
                           << "': box extents must be 1 to 256, got " << b;
    if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128)
      return emitError() << "kernel param tma of '" << arg
                         << "': swizzle must be 0, 32, 64 or 128 bytes, got " << swizzle;
    if (group < 0)
      return emitError() << "kernel param tma of '" << arg << "': group must be >= 0, got "
                         << group;
  }
  if ((kind == ParamKind::tile_table_inline) != (bytes != 0) || bytes < 0 || bytes % 16)
    return emitError() << "kernel param '" << stringifyParamKind(kind)
                       << "': bytes is for tile_table_inline only (a positive multiple of "
                          "16), got "
                       << bytes;
  return success();
}

int64_t KernelParamAttr::getNumLLVMParams() const {
  return getKind() == ParamKind::dims ? getRank() : 1;
}

LogicalResult KernelAbiAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                    int64_t threads, int64_t smem, ArrayAttr params) {
  if (threads < 32 || threads > 1024 || threads % 32)
    return emitError() << "kernel_abi threads must be a multiple of 32 in [32, 1024], got "
                       << threads;
  if (smem < 0 || smem > 227 * 1024)
    return emitError() << "kernel_abi smem must be in [0, 232448] bytes, got " << smem;
  for (auto [i, p] : llvm::enumerate(params))
    if (!isa<KernelParamAttr>(p))
      return emitError() << "kernel_abi params[" << i << "] is not a #flashattn.param: " << p;
  return success();
}

LogicalResult Sm90EntriesAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                      SymbolRefAttr kernel, SymbolRefAttr dense,
                                      SymbolRefAttr append, SymbolRefAttr combine,
                                      int64_t packedGroups, int64_t kvHeadsPerBlock,
                                      bool kvRowCopies, DictionaryAttr abi) {
  if (!kernel)
    return emitError() << "sm90_entries needs a kernel";
  if (packedGroups < 0 || packedGroups == 1)
    return emitError() << "sm90_entries packed_groups must be 0 (none) or > 1, got "
                       << packedGroups;
  if (kvHeadsPerBlock < 1)
    return emitError() << "sm90_entries kv_heads_per_block must be >= 1, got "
                       << kvHeadsPerBlock;
  if (!abi)
    return success();
  for (NamedAttribute entry : abi)
    if (!isa<KernelAbiAttr>(entry.getValue()))
      return emitError() << "sm90_entries abi of '" << entry.getName()
                         << "' is not a #flashattn.kernel_abi";
  for (SymbolRefAttr ref : {kernel, dense, append, combine})
    if (ref && !abi.get(ref.getLeafReference()))
      return emitError() << "sm90_entries abi has no entry for " << ref;
  return success();
}

/// The LLVM-level signature `abi` describes, checked against `fn`'s.
static LogicalResult verifySignature(FunctionOpInterface fn, KernelAbiAttr abi) {
  ArrayRef<Type> types = fn.getArgumentTypes();
  size_t at = 0;
  for (Attribute a : abi.getParams()) {
    auto p = cast<KernelParamAttr>(a);
    for (int64_t j = 0; j < p.getNumLLVMParams(); ++j, ++at) {
      if (at >= types.size())
        return fn->emitOpError("has ") << types.size()
                                       << " parameters; its flashattn.abi describes more";
      bool byval = p.getKind() == ParamKind::tma || p.getKind() == ParamKind::tile_table_inline;
      auto ptr = dyn_cast<LLVM::LLVMPointerType>(types[at]);
      bool ok = p.getKind() == ParamKind::dims ? types[at].isInteger(64)
                : byval ? ptr && ptr.getAddressSpace() == 0 &&
                              fn.getArgAttr(at, "llvm.byval")
                        : ptr && ptr.getAddressSpace() == 1;
      if (!ok)
        return fn->emitOpError("parameter ")
               << at << " has type " << types[at] << ", but its flashattn.abi entry " << p
               << " needs "
               << (p.getKind() == ParamKind::dims ? "i64"
                   : byval ? "a byval !llvm.ptr"
                           : "!llvm.ptr<1>");
    }
  }
  if (at != types.size())
    return fn->emitOpError("has ") << types.size() << " parameters; its flashattn.abi describes "
                                   << at;
  return success();
}

LogicalResult FlashAttnDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  if (attr.getName() == "flashattn.abi") {
    auto abi = dyn_cast<KernelAbiAttr>(attr.getValue());
    auto fn = dyn_cast<FunctionOpInterface>(op);
    if (!abi || !fn)
      return op->emitError("flashattn.abi must be a #flashattn.kernel_abi on a function");
    return verifySignature(fn, abi);
  }
  if (attr.getName() == "flashattn.sm90") {
    if (!isa<Sm90EntriesAttr>(attr.getValue()) || !isa<AttentionOp, CombineOp>(op))
      return op->emitError(
          "flashattn.sm90 must be a #flashattn.sm90_entries on flashattn.attention or "
          "flashattn.combine");
    return success();
  }
  return success();
}

LogicalResult Sm90CodegenAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                      bool, bool, bool, bool, bool, int64_t reduceChains,
                                      bool, int64_t kvHeadsPerBlock, L2Priority, L2Priority) {
  if (reduceChains < 1 || reduceChains > 64)
    return emitError() << "sm90_codegen reduce_chains must be in [1, 64], got " << reduceChains;
  if (kvHeadsPerBlock != 1 && kvHeadsPerBlock != 2 && kvHeadsPerBlock != 4 &&
      kvHeadsPerBlock != 8)
    return emitError() << "sm90_codegen kv_heads_per_block must be 1, 2, 4 or 8, got "
                       << kvHeadsPerBlock;
  return success();
}
