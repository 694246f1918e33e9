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

/// The fields of a tma parameter: what the runtime can encode (a box of 1
/// to 5 dims of 1 to 256, a pack_gqa group of at most 256 heads over a 4-
/// or 5-D box, page panels as a 5-D box without group).
static LogicalResult verifyTma(function_ref<InFlightDiagnostic()> emitError, StringRef arg,
                               ArrayRef<int64_t> box, int64_t swizzle, int64_t group,
                               bool pagePanels) {
  auto error = [&]() { return emitError() << "kernel param tma of '" << arg << "': "; };
  if (box.size() < 1 || box.size() > 5)
    return error() << "box must have 1 to 5 dims, got " << box.size();
  for (int64_t b : box)
    if (b < 1 || b > 256)
      return error() << "box extents must be 1 to 256, got " << b;
  if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128)
    return error() << "swizzle must be 0, 32, 64 or 128 bytes, got " << swizzle;
  if (group < 0 || group > 256 || (group > 1 && box.size() < 4))
    return error() << "group must be 0 to 256 heads over a box of 4 or 5 dims, got group "
                   << group << " with " << box.size() << " dims";
  if (pagePanels && (box.size() != 5 || group > 1))
    return error() << "page_panels needs a 5-D box and no group, got " << box.size()
                   << " dims and group " << group;
  return success();
}

LogicalResult KernelParamAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                      ParamKind kind, StringRef arg, int64_t rank,
                                      DenseI64ArrayAttr boxAttr, int64_t swizzle, int64_t group,
                                      bool pagePanels, int64_t bytes) {
  ArrayRef<int64_t> box = boxAttr ? boxAttr.asArrayRef() : ArrayRef<int64_t>();
  StringRef name = stringifyParamKind(kind);
  bool named = kind == ParamKind::ptr || kind == ParamKind::dims || kind == ParamKind::tma;
  if (named != !arg.empty())
    return emitError() << "kernel param '" << name << "' "
                       << (named ? "needs an arg" : "takes no arg, got '" + arg.str() + "'");
  if (kind == ParamKind::dims && (rank < 1 || rank > 5))
    return emitError() << "kernel param dims of '" << arg << "' needs rank 1 to 5, got "
                       << rank;
  if (kind != ParamKind::dims && rank != 0)
    return emitError() << "kernel param '" << name << "' takes no rank, got " << rank;
  if (kind != ParamKind::tma && (!box.empty() || swizzle || group || pagePanels))
    return emitError() << "kernel param '" << name
                       << "': box, swizzle, group and page_panels are for tma only";
  if (kind == ParamKind::tma &&
      failed(verifyTma(emitError, arg, box, swizzle, group, pagePanels)))
    return failure();
  if (kind == ParamKind::tile_table_inline && (bytes < 32 || bytes > 3072 || bytes % 16))
    return emitError() << "kernel param tile_table_inline needs bytes in [32, 3072], a "
                          "multiple of 16, got "
                       << bytes;
  if (kind != ParamKind::tile_table_inline && bytes != 0)
    return emitError() << "kernel param '" << name << "' takes no bytes, got " << bytes;
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
  if (smem < 0 || smem > 232448)
    return emitError() << "kernel_abi smem must be in [0, 232448] bytes, got " << smem;
  int64_t maps = 0;
  for (auto [i, p] : llvm::enumerate(params)) {
    auto param = dyn_cast<KernelParamAttr>(p);
    if (!param)
      return emitError() << "kernel_abi params[" << i << "] is not a #flashattn.param: " << p;
    maps += param.getKind() == ParamKind::tma;
  }
  if (maps > 4)
    return emitError() << "kernel_abi has " << maps << " tensor maps; a launch takes at most 4";
  return success();
}

/// The fused split-KV merge is the artifact's (the runtime launches the
/// combine kernel or not for all of its calls): the kernel and its packed
/// and one-head twins all merge or none does.
static LogicalResult verifyFusedMerge(function_ref<InFlightDiagnostic()> emitError,
                                      SymbolRefAttr kernel, int64_t packedGroups,
                                      int64_t kvHeadsPerBlock, DictionaryAttr abi) {
  auto merges = [&](StringRef name) {
    return llvm::any_of(cast<KernelAbiAttr>(abi.get(name)).getParams(), [](Attribute a) {
      return cast<KernelParamAttr>(a).getKind() == ParamKind::merge_out;
    });
  };
  StringRef main = kernel.getLeafReference().getValue();
  for (const std::string &name :
       Sm90EntriesAttr::entryNames(kernel, {}, {}, {}, packedGroups, kvHeadsPerBlock)) {
    if (merges(name) == merges(main))
      continue;
    StringRef with = merges(main) ? main : StringRef(name);
    StringRef without = merges(main) ? StringRef(name) : main;
    return emitError() << "sm90_entries: '" << with
                       << "' merges split-KV partials (merge_out) but '" << without
                       << "' does not; the kernel and its twins merge alike";
  }
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
      return emitError() << "sm90_entries abi of '" << entry.getName().getValue()
                         << "' is not a #flashattn.kernel_abi";
  SmallVector<std::string> names =
      entryNames(kernel, dense, append, combine, packedGroups, kvHeadsPerBlock);
  for (const std::string &name : names)
    if (!abi.get(name))
      return emitError() << "sm90_entries abi has no entry for '" << name << "'";
  for (NamedAttribute entry : abi)
    if (!llvm::is_contained(names, entry.getName().str()))
      return emitError() << "sm90_entries abi has '" << entry.getName().getValue()
                         << "', which is not one of its entries";
  return verifyFusedMerge(emitError, kernel, packedGroups, kvHeadsPerBlock, abi);
}

SmallVector<std::string> Sm90EntriesAttr::entryNames(SymbolRefAttr kernel, SymbolRefAttr dense,
                                                     SymbolRefAttr append, SymbolRefAttr combine,
                                                     int64_t packedGroups,
                                                     int64_t kvHeadsPerBlock) {
  SmallVector<std::string> names;
  auto leaf = [](SymbolRefAttr ref) { return ref.getLeafReference().str(); };
  SmallVector<std::string> attention = {leaf(kernel)};
  if (dense)
    attention.push_back(leaf(dense));
  names.append(attention);
  for (const std::string &a : attention) {
    if (packedGroups > 0)
      names.push_back(a + "_packed");
    if (kvHeadsPerBlock > 1)
      names.push_back(a + "_kv1");
  }
  for (SymbolRefAttr ref : {append, combine})
    if (ref)
      names.push_back(leaf(ref));
  return names;
}

/// What parameter `at` of `fn` must be for `p`, or "" when it is.
static std::string paramMismatch(FunctionOpInterface fn, unsigned at, KernelParamAttr p) {
  Type type = fn.getArgumentTypes()[at];
  auto ptr = dyn_cast<LLVM::LLVMPointerType>(type);
  switch (p.getKind()) {
  case ParamKind::dims:
    return type.isInteger(64) ? "" : "i64";
  case ParamKind::tma:
  case ParamKind::tile_table_inline: {
    int64_t bytes = p.getKind() == ParamKind::tma ? 128 : p.getBytes();
    auto byval = fn.getArgAttrOfType<TypeAttr>(at, "llvm.byval");
    auto array = byval ? dyn_cast<LLVM::LLVMArrayType>(byval.getValue()) : nullptr;
    bool ok = ptr && ptr.getAddressSpace() == 0 && array &&
              array.getNumElements() == static_cast<unsigned>(bytes) &&
              array.getElementType().isInteger(8) && fn.getArgAttr(at, "nvvm.grid_constant");
    return ok ? "" : "a byval !llvm.array<" + std::to_string(bytes) +
                         " x i8> !llvm.ptr marked nvvm.grid_constant";
  }
  default:
    return ptr && ptr.getAddressSpace() == 1 ? "" : "!llvm.ptr<1>";
  }
}

/// The LLVM-level signature `abi` describes, and its threads, checked
/// against `fn`'s.
static LogicalResult verifySignature(FunctionOpInterface fn, KernelAbiAttr abi) {
  size_t described = 0;
  for (Attribute a : abi.getParams())
    described += cast<KernelParamAttr>(a).getNumLLVMParams();
  if (described != fn.getNumArguments())
    return fn->emitOpError("has ") << fn.getNumArguments()
                                   << " parameters; its flashattn.abi describes " << described;
  unsigned at = 0;
  for (Attribute a : abi.getParams()) {
    auto p = cast<KernelParamAttr>(a);
    for (int64_t j = 0; j < p.getNumLLVMParams(); ++j, ++at)
      if (std::string want = paramMismatch(fn, at, p); !want.empty())
        return fn->emitOpError("parameter ")
               << at << " has type " << fn.getArgumentTypes()[at]
               << ", but its flashattn.abi entry " << p << " needs " << want;
  }
  if (auto maxntid = fn->getAttrOfType<DenseI32ArrayAttr>("nvvm.maxntid");
      maxntid && !maxntid.empty() && maxntid[0] != abi.getThreads())
    return fn->emitOpError("has nvvm.maxntid ")
           << maxntid[0] << " threads, but its flashattn.abi launches " << abi.getThreads();
  return success();
}

/// Runs the attribute verifiers on `entries` and its ABIs (attributes made
/// with get() are verified only in builds with assertions).
static LogicalResult verifyEntries(Operation *op, Sm90EntriesAttr e) {
  auto emit = [&] { return op->emitError(); };
  if (failed(Sm90EntriesAttr::verify(emit, e.getKernel(), e.getDense(), e.getAppend(),
                                     e.getCombine(), e.getPackedGroups(),
                                     e.getKvHeadsPerBlock(), e.getKvRowCopies(), e.getAbi())))
    return failure();
  for (NamedAttribute entry : e.getAbi() ? e.getAbi().getValue() : ArrayRef<NamedAttribute>()) {
    auto abi = cast<KernelAbiAttr>(entry.getValue());
    if (failed(KernelAbiAttr::verify(emit, abi.getThreads(), abi.getSmem(), abi.getParams())))
      return failure();
    for (Attribute a : abi.getParams()) {
      auto p = cast<KernelParamAttr>(a);
      if (failed(KernelParamAttr::verify(emit, p.getKind(), p.getArg(), p.getRank(), p.getBox(),
                                         p.getSwizzle(), p.getGroup(), p.getPagePanels(),
                                         p.getBytes())))
        return failure();
    }
  }
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
    auto entries = dyn_cast<Sm90EntriesAttr>(attr.getValue());
    if (!entries || !isa<AttentionOp, CombineOp>(op))
      return op->emitError(
          "flashattn.sm90 must be a #flashattn.sm90_entries on flashattn.attention or "
          "flashattn.combine");
    return verifyEntries(op, entries);
  }
  return success();
}

LogicalResult Sm90CodegenAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                      bool, bool, bool, bool, bool, int64_t reduceChains,
                                      bool, int64_t kvHeadsPerBlock, L2Priority, L2Priority, bool,
                                      bool, bool, bool, bool, bool, bool) {
  if (reduceChains < 1 || reduceChains > 64)
    return emitError() << "sm90_codegen reduce_chains must be in [1, 64], got " << reduceChains;
  if (kvHeadsPerBlock != 1 && kvHeadsPerBlock != 2 && kvHeadsPerBlock != 4 &&
      kvHeadsPerBlock != 8)
    return emitError() << "sm90_codegen kv_heads_per_block must be 1, 2, 4 or 8, got "
                       << kvHeadsPerBlock;
  return success();
}
