//===- FlashAttnOps.cpp - FlashAttn operations ----------------------------===//
//
// Verifiers, custom assembly and interfaces of flashattn.attention,
// flashattn.combine and flashattn.yield. The rules enforced here are those of
// docs/SEMANTICS.md; every diagnostic names the values involved.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <optional>

using namespace mlir;
using namespace mlir::flashattn;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static bool isDyn(int64_t d) { return ShapedType::isDynamic(d); }

/// True when both sizes are static and differ.
static bool staticMismatch(int64_t a, int64_t b) {
  return !isDyn(a) && !isDyn(b) && a != b;
}

/// Prints a shape as [2, ?, 8, 64].
static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (isDyn(d))
      os << "?";
    else
      os << d;
  });
  os << "]";
  return s;
}

/// Prints types as "f32, index" (no quotes, unlike a diagnostic argument).
static std::string typesStr(TypeRange types) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(types, os, [&](Type t) { t.print(os); });
  return s;
}

static std::string dimStr(int64_t d) {
  return isDyn(d) ? std::string("?") : std::to_string(d);
}

/// Custom directive: ` score(%a: t, ...) { body }` then
/// ` mask(%a: t, ...) { body }`, each absent when its region is empty. The
/// directive prints its own leading spaces so that an op without regions
/// ends cleanly.
static ParseResult parseOneRegion(OpAsmParser &parser, StringRef keyword,
                                  Region &region) {
  if (failed(parser.parseOptionalKeyword(keyword)))
    return success();
  SmallVector<OpAsmParser::Argument> args;
  if (parser.parseArgumentList(args, OpAsmParser::Delimiter::Paren,
                               /*allowType=*/true))
    return failure();
  return parser.parseRegion(region, args);
}

static ParseResult parseAttentionRegions(OpAsmParser &parser, Region &score,
                                         Region &mask) {
  if (failed(parseOneRegion(parser, "score", score)))
    return failure();
  return parseOneRegion(parser, "mask", mask);
}

static void printOneRegion(OpAsmPrinter &p, StringRef keyword,
                           Region &region) {
  if (region.empty())
    return;
  p << " " << keyword << "(";
  llvm::interleaveComma(region.getArguments(), p,
                        [&](BlockArgument arg) { p.printRegionArgument(arg); });
  p << ") ";
  p.printRegion(region, /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/true);
}

static void printAttentionRegions(OpAsmPrinter &p, Operation *, Region &score,
                                  Region &mask) {
  printOneRegion(p, "score", score);
  printOneRegion(p, "mask", mask);
}

/// Memory effects of a destination-style op in buffer form: inputs are read,
/// inits are written; `alsoWritten` inputs (the kv cache of an append) are
/// written too. Nested region ops add their own effects; an op whose effects
/// are unknown makes the whole op conservatively read and write everything.
static void
getShapedEffects(Operation *op, ArrayRef<OpOperand *> inputs,
                 ArrayRef<OpOperand *> inits, ArrayRef<OpOperand *> alsoWritten,
                 SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
                     &effects) {
  for (OpOperand *operand : inputs) {
    if (!isa<MemRefType>(operand->get().getType()))
      continue;
    effects.emplace_back(MemoryEffects::Read::get(), operand, /*stage=*/0,
                         /*effectOnFullRegion=*/true,
                         SideEffects::DefaultResource::get());
  }
  for (OpOperand *operand : llvm::concat<OpOperand *const>(inits, alsoWritten)) {
    if (!isa<MemRefType>(operand->get().getType()))
      continue;
    effects.emplace_back(MemoryEffects::Write::get(), operand, /*stage=*/1,
                         /*effectOnFullRegion=*/true,
                         SideEffects::DefaultResource::get());
  }
  for (Region &region : op->getRegions()) {
    for (Operation &nested : region.getOps()) {
      std::optional<SmallVector<MemoryEffects::EffectInstance>> nestedEffects =
          getEffectsRecursively(&nested);
      if (!nestedEffects) {
        effects.emplace_back(MemoryEffects::Read::get());
        effects.emplace_back(MemoryEffects::Write::get());
        continue;
      }
      effects.append(nestedEffects->begin(), nestedEffects->end());
    }
  }
}

/// Checks that every shaped operand is of one kind (tensor or memref) and
/// that the memref form has no results.
static LogicalResult verifyOneKind(Operation *op,
                                   ArrayRef<std::pair<StringRef, Value>> named) {
  auto [firstName, first] = named.front();
  bool tensors = isa<RankedTensorType>(first.getType());
  for (auto [name, value] : named) {
    if (!value)
      continue;
    if (isa<RankedTensorType>(value.getType()) != tensors)
      return op->emitOpError()
             << "'" << name << "' is a "
             << (tensors ? "memref" : "tensor") << " but '" << firstName
             << "' is a " << (tensors ? "tensor" : "memref")
             << ": all shaped operands must be tensors or all memrefs";
  }
  if (!tensors && op->getNumResults() != 0)
    return op->emitOpError() << "on memrefs writes its outs in place and "
                                "returns no results, got "
                             << op->getNumResults();
  return success();
}

/// Checks a 1-D i32 metadata operand of `expectedLen` elements (dynamic =
/// any).
static LogicalResult verifyI32Vector(Operation *op, StringRef name, Value v,
                                     int64_t expectedLen, StringRef lenDesc) {
  auto type = cast<ShapedType>(v.getType());
  if (type.getRank() != 1 || !type.getElementType().isInteger(32))
    return op->emitOpError() << "'" << name << "' must be a 1-D i32 " << lenDesc
                             << ", got " << type;
  if (staticMismatch(type.getDimSize(0), expectedLen))
    return op->emitOpError() << "'" << name << "' has " << type.getDimSize(0)
                             << " elements but must have " << expectedLen
                             << " (" << lenDesc << ")";
  return success();
}

namespace {
/// Tracks one dimension size (batch, heads) seen through several operands and
/// reports the first pair that disagrees.
struct DimTracker {
  StringRef what;
  int64_t size = ShapedType::kDynamic;
  std::string source;

  LogicalResult see(Operation *op, int64_t value, const Twine &from) {
    if (isDyn(value))
      return success();
    if (isDyn(size)) {
      size = value;
      source = from.str();
      return success();
    }
    if (size != value)
      return op->emitOpError()
             << what << " mismatch: " << from << " gives " << value
             << " but " << source << " gives " << size;
    return success();
  }
};
} // namespace

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

void AttentionOp::build(OpBuilder &builder, OperationState &state, Value q,
                        Value k, Value v, Value out, Value lse,
                        CausalKind causal) {
  SmallVector<Value> outs{out};
  if (lse)
    outs.push_back(lse);
  SmallVector<Type> resultTypes;
  for (Value init : outs)
    if (isa<RankedTensorType>(init.getType()))
      resultTypes.push_back(init.getType());
  build(builder, state, resultTypes, q, k, v, /*cu_seqlens_q=*/nullptr,
        /*cu_seqlens_k=*/nullptr, /*seqused_k=*/nullptr,
        /*block_table=*/nullptr, /*alibi_slopes=*/nullptr, /*k_new=*/nullptr,
        /*v_new=*/nullptr, /*cache_seqlens=*/nullptr, /*q_start=*/nullptr,
        /*seqlen_q=*/nullptr, outs,
        /*scale=*/nullptr, causal, /*window_size=*/nullptr,
        /*softcap=*/nullptr, /*num_splits=*/0, /*pack_gqa=*/nullptr,
        /*plan=*/nullptr);
}

Value mlir::flashattn::inlineRegion(OpBuilder &b, Region &region, ValueRange args,
                                   const IRMapping *outside) {
  Block &block = region.front();
  IRMapping mapping = outside ? *outside : IRMapping();
  mapping.map(block.getArguments(), args);
  for (Operation &op : block.without_terminator())
    b.clone(op, mapping);
  return mapping.lookupOrDefault(cast<YieldOp>(block.getTerminator()).getValues()[0]);
}

StringRef AttentionOp::getNonDenseFeature() {
  if (isVarlenQ() || isVarlenK())
    return "varlen (cu_seqlens) layouts";
  if (isPaged() || getSequsedK())
    return "paged kv or seqused_k";
  if (hasAppend())
    return "kv-cache append";
  if (isSplitPartial())
    return "the split-KV partial form";
  return "";
}

bool AttentionOp::isSplitPartial() {
  return cast<ShapedType>(getOut().getType()).getRank() ==
         cast<ShapedType>(getQ().getType()).getRank() + 1;
}

bool AttentionOp::namesSm90Attention(StringAttr kernels, StringAttr name) {
  auto e = (*this)->getAttrOfType<Sm90EntriesAttr>("flashattn.sm90");
  if (!e || e.getKernel().getRootReference() != kernels)
    return false;
  SmallVector<std::string> attention = Sm90EntriesAttr::entryNames(
      e.getKernel(), e.getDense(), nullptr, nullptr, e.getPackedGroups(),
      e.getKvHeadsPerBlock());
  return llvm::is_contained(attention, name.getValue().str());
}

CombineOp AttentionOp::getPartialCombine() {
  if (!isSplitPartial())
    return {};
  for (Operation *user : getOut().getUsers())
    if (auto c = dyn_cast<CombineOp>(user);
        c && c.getPartialOut() == getOut() && c.getPartialLse() == getLse() &&
        isa<MemRefType>(c.getOut().getType()))
      return c;
  return {};
}

PlanAttr mlir::flashattn::planOfSm90Kernel(Operation *root, StringAttr kernels,
                                           StringAttr name) {
  PlanAttr plan;
  root->walk([&](AttentionOp op) {
    if (!op.getPlanAttr() || !op.namesSm90Attention(kernels, name))
      return WalkResult::advance();
    plan = op.getPlanAttr();
    return WalkResult::interrupt();
  });
  return plan;
}

bool AttentionOp::isVarlenQ() {
  return cast<ShapedType>(getQ().getType()).getRank() == 3;
}

bool AttentionOp::isVarlenK() {
  return !isPaged() && cast<ShapedType>(getK().getType()).getRank() == 3;
}

int64_t AttentionOp::getNumQHeads() {
  auto t = cast<ShapedType>(getQ().getType());
  return t.getDimSize(t.getRank() - 2);
}
int64_t AttentionOp::getNumKVHeads() {
  auto t = cast<ShapedType>(getK().getType());
  return t.getDimSize(t.getRank() - 2);
}
int64_t AttentionOp::getHeadDim() {
  auto t = cast<ShapedType>(getQ().getType());
  return t.getDimSize(t.getRank() - 1);
}
int64_t AttentionOp::getHeadDimV() {
  auto t = cast<ShapedType>(getV().getType());
  return t.getDimSize(t.getRank() - 1);
}

double AttentionOp::getEffectiveScale() {
  if (std::optional<APFloat> s = getScale())
    return s->convertToDouble();
  int64_t d = getHeadDim();
  assert(!isDyn(d) && "default scale needs a static head_dim");
  return 1.0 / std::sqrt(static_cast<double>(d));
}

std::pair<int64_t, int64_t> AttentionOp::getWindow() {
  if (std::optional<ArrayRef<int64_t>> w = getWindowSize())
    if (w->size() == 2)
      return {(*w)[0], (*w)[1]};
  return {-1, -1};
}

void AttentionOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  static const char *names[] = {"out", "lse"};
  for (auto [i, result] : llvm::enumerate(getResults()))
    if (i < 2)
      setNameFn(result, names[i]);
}

void AttentionOp::getAsmBlockArgumentNames(Region &region,
                                           OpAsmSetValueNameFn setNameFn) {
  static const char *scoreNames[] = {"score", "b", "h", "q_idx", "kv_idx"};
  static const char *maskNames[] = {"b", "h", "q_idx", "kv_idx"};
  ArrayRef<const char *> names =
      &region == &getScore() ? ArrayRef(scoreNames) : ArrayRef(maskNames);
  if (region.empty())
    return;
  for (auto [arg, name] : llvm::zip(region.getArguments(), names))
    setNameFn(arg, name);
}

void AttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  SmallVector<OpOperand *> inputs, inits, written;
  for (OpOperand &operand : getOperation()->getOpOperands()) {
    if (isDpsInit(&operand))
      inits.push_back(&operand);
    else
      inputs.push_back(&operand);
  }
  if (hasAppend()) {
    written.push_back(&getKMutable());
    written.push_back(&getVMutable());
  }
  getShapedEffects(getOperation(), inputs, inits, written, effects);
}

// q_start and seqlen_q: together, on dense q, without an append; a static
// seqlen_q covers the tile's rows.
LogicalResult AttentionOp::verifyRowTile(bool varlenQ) {
  if (!getQStart() && !getSeqlenQ())
    return success();
  if (!getQStart() || !getSeqlenQ())
    return emitOpError() << "'q_start' and 'seqlen_q' go together (a tile of query rows "
                            "names where it starts and the length it aligns to)";
  if (varlenQ)
    return emitOpError() << "'q_start' / 'seqlen_q' need dense q (rank 4), got packed q";
  if (hasAppend())
    return emitOpError() << "'q_start' / 'seqlen_q' cannot be combined with a kv-cache append";
  std::optional<int64_t> start = getConstantIntValue(getQStart());
  std::optional<int64_t> len = getConstantIntValue(getSeqlenQ());
  int64_t sq = cast<ShapedType>(getQ().getType()).getDimSize(1);
  if (start && *start < 0)
    return emitOpError() << "'q_start' must be >= 0, got " << *start;
  if (len && *len < 0)
    return emitOpError() << "'seqlen_q' must be >= 0, got " << *len;
  if (len && !isDyn(sq) && sq > *len)
    return emitOpError() << "the tile's " << sq << " query rows exceed seqlen_q " << *len;
  if (start && len && !isDyn(sq) && *start + sq > *len)
    return emitOpError() << "rows [" << *start << ", " << *start + sq
                         << ") of the tile must lie in the seqlen_q " << *len << " queries";
  return success();
}

// q, k, v in one of f16, bf16, f32; out in q's type or f32.
LogicalResult AttentionOp::verifyElementTypes() {
  auto qType = cast<ShapedType>(getQ().getType());
  auto outType = cast<ShapedType>(getOut().getType());
  Type elemType = qType.getElementType();
  if (!elemType.isF16() && !elemType.isBF16() && !elemType.isF32())
    return emitOpError() << "'q' element type must be f16, bf16 or f32, got "
                         << elemType;
  for (auto [name, value] :
       {std::pair(StringRef("k"), getK()), std::pair(StringRef("v"), getV())})
    if (cast<ShapedType>(value.getType()).getElementType() != elemType)
      return emitOpError() << "'" << name << "' element type "
                           << cast<ShapedType>(value.getType()).getElementType()
                           << " differs from 'q' element type " << elemType;
  if (outType.getElementType() != elemType && !outType.getElementType().isF32())
    return emitOpError() << "'out' element type must be " << elemType
                         << " (as 'q') or f32, got "
                         << outType.getElementType();
  return success();
}

// The ranks of q, k, v and the layouts they imply (dense, varlen, paged).
LogicalResult AttentionOp::verifyLayouts(bool varlenQ, bool paged) {
  auto qType = cast<ShapedType>(getQ().getType());
  auto kType = cast<ShapedType>(getK().getType());
  auto vType = cast<ShapedType>(getV().getType());
  if (qType.getRank() != 3 && qType.getRank() != 4)
    return emitOpError() << "'q' must have rank 4 [batch, seqlen_q, heads, "
                            "head_dim] or rank 3 [total_q, heads, head_dim] "
                            "(varlen), got "
                         << qType;
  if (varlenQ && !getCuSeqlensQ())
    return emitOpError() << "'q' of rank 3 is packed (varlen) and needs "
                            "'cu_seqlens_q'";
  if (!varlenQ && getCuSeqlensQ())
    return emitOpError() << "'cu_seqlens_q' is given but 'q' has rank 4 "
                            "(dense); packed q is [total_q, heads, head_dim]";
  if (failed(verifyRowTile(varlenQ)))
    return failure();
  if (paged) {
    if (kType.getRank() != 4)
      return emitOpError() << "paged 'k' must be [num_pages, page_size, "
                              "kv_heads, head_dim], got "
                           << kType;
    if (getCuSeqlensK())
      return emitOpError() << "'cu_seqlens_k' cannot be combined with "
                              "'block_table': paged sequence lengths come "
                              "from 'seqused_k'";
    if (!getSequsedK())
      return emitOpError() << "'block_table' needs 'seqused_k' (the number of "
                              "keys of each sequence)";
  } else {
    if (kType.getRank() != 3 && kType.getRank() != 4)
      return emitOpError() << "'k' must have rank 4 [batch, seqlen_k, "
                              "kv_heads, head_dim] or rank 3 [total_k, "
                              "kv_heads, head_dim] (varlen), got "
                           << kType;
    if (kType.getRank() == 3 && !getCuSeqlensK())
      return emitOpError() << "'k' of rank 3 is packed (varlen) and needs "
                              "'cu_seqlens_k'";
    if (kType.getRank() == 4 && getCuSeqlensK())
      return emitOpError() << "'cu_seqlens_k' is given but 'k' has rank 4 "
                              "(dense); packed k is [total_k, kv_heads, "
                              "head_dim]";
  }
  if (vType.getRank() != kType.getRank())
    return emitOpError() << "'v' rank " << vType.getRank()
                         << " differs from 'k' rank " << kType.getRank();
  for (int64_t i = 0, e = kType.getRank() - 1; i < e; ++i)
    if (staticMismatch(kType.getDimSize(i), vType.getDimSize(i)))
      return emitOpError() << "'v' shape " << shapeStr(vType.getShape())
                           << " must match 'k' shape "
                           << shapeStr(kType.getShape())
                           << " in every dimension but head_dim (dim " << i
                           << " differs)";
  return success();
}

// Head counts (Hq a multiple of Hkv) and head dims.
LogicalResult AttentionOp::verifyHeads() {
  auto kType = cast<ShapedType>(getK().getType());
  int64_t hq = getNumQHeads(), hkv = getNumKVHeads();
  int64_t d = getHeadDim(), dv = getHeadDimV();
  if (staticMismatch(kType.getDimSize(kType.getRank() - 1), d))
    return emitOpError() << "'k' head_dim "
                         << kType.getDimSize(kType.getRank() - 1)
                         << " differs from 'q' head_dim " << d;
  if ((!isDyn(hq) && hq < 1) || (!isDyn(hkv) && hkv < 1))
    return emitOpError() << "needs at least one query head and one kv head, got "
                         << hq << " and " << hkv;
  if ((!isDyn(d) && d < 1) || (!isDyn(dv) && dv < 1))
    return emitOpError() << "head_dim and head_dim_v must be positive, got " << d
                         << " and " << dv;
  if (!isDyn(hq) && !isDyn(hkv) && hq % hkv != 0)
    return emitOpError() << "number of query heads (" << hq
                         << ") must be a multiple of the number of kv heads ("
                         << hkv << ")";
  if (isDyn(d) && !getScale())
    return emitOpError() << "needs an explicit 'scale' when head_dim is "
                            "dynamic (the default is 1/sqrt(head_dim))";
  return success();
}

// out: q's shape with head_dim_v; in the split-KV partial form (out of
// rank q + 1) [num_splits] followed by that, f32, with lse required.
LogicalResult AttentionOp::verifyOut(bool partial) {
  auto qType = cast<ShapedType>(getQ().getType());
  auto outType = cast<ShapedType>(getOut().getType());
  int64_t dv = getHeadDimV();
  int64_t splitDim = partial ? outType.getDimSize(0) : 0;
  SmallVector<int64_t> expectedOut;
  if (partial)
    expectedOut.push_back(splitDim);
  llvm::append_range(expectedOut, qType.getShape());
  expectedOut.back() = dv;
  if (partial) {
    if (!outType.getElementType().isF32() || !getLse())
      return emitOpError() << "the split-KV partial form (out of rank "
                           << outType.getRank()
                           << ") needs an f32 'out' [num_splits, ...] and an "
                              "'lse' [num_splits, ...]";
    int64_t ns = getNumSplitsAttr().getValue().getSExtValue();
    if (!isDyn(splitDim) && ns > 0 && splitDim != ns)
      return emitOpError() << "'out' holds " << splitDim
                           << " splits but num_splits is " << ns;
  }
  if (outType.getRank() != static_cast<int64_t>(expectedOut.size()) ||
      llvm::any_of(llvm::zip(outType.getShape(), expectedOut), [](auto p) {
        return staticMismatch(std::get<0>(p), std::get<1>(p));
      }))
    return emitOpError() << "'out' shape " << shapeStr(outType.getShape())
                         << " must be "
                         << (partial ? "[num_splits] followed by " : "")
                         << "'q' shape with head_dim_v, i.e. "
                         << shapeStr(expectedOut);
  return success();
}

// The batch size, seen through every operand that carries it, and the
// sequence metadata of that batch; the size (or dynamic).
FailureOr<int64_t> AttentionOp::verifyBatch(bool varlenQ, bool paged) {
  Operation *op = getOperation();
  auto qType = cast<ShapedType>(getQ().getType());
  auto kType = cast<ShapedType>(getK().getType());
  DimTracker batch{"batch size"};
  if (!varlenQ && failed(batch.see(op, qType.getDimSize(0), "'q' (dim 0)")))
    return failure();
  if (!paged && !isVarlenK() &&
      failed(batch.see(op, kType.getDimSize(0), "'k' (dim 0)")))
    return failure();
  auto seeLen = [&](Value v, StringRef name, int64_t minus) -> LogicalResult {
    if (!v)
      return success();
    auto t = cast<ShapedType>(v.getType());
    if (t.getRank() < 1)
      return success();
    int64_t n = t.getDimSize(0);
    return batch.see(op, isDyn(n) ? n : n - minus,
                     Twine("'") + name + "' (dim 0" + (minus ? " - 1" : "") +
                         ")");
  };
  if (failed(seeLen(getCuSeqlensQ(), "cu_seqlens_q", 1)) ||
      failed(seeLen(getCuSeqlensK(), "cu_seqlens_k", 1)) ||
      failed(seeLen(getSequsedK(), "seqused_k", 0)) ||
      failed(seeLen(getBlockTable(), "block_table", 0)) ||
      failed(seeLen(getKNew(), "k_new", 0)) ||
      failed(seeLen(getCacheSeqlens(), "cache_seqlens", 0)))
    return failure();
  if (getAlibiSlopes() &&
      cast<ShapedType>(getAlibiSlopes().getType()).getRank() == 2 &&
      failed(seeLen(getAlibiSlopes(), "alibi_slopes", 0)))
    return failure();

  int64_t b = batch.size;
  // Sequence metadata.
  if (getCuSeqlensQ() &&
      failed(verifyI32Vector(op, "cu_seqlens_q", getCuSeqlensQ(),
                             isDyn(b) ? b : b + 1, "tensor of batch + 1 offsets")))
    return failure();
  if (getCuSeqlensK() &&
      failed(verifyI32Vector(op, "cu_seqlens_k", getCuSeqlensK(),
                             isDyn(b) ? b : b + 1, "tensor of batch + 1 offsets")))
    return failure();
  if (getSequsedK() &&
      failed(verifyI32Vector(op, "seqused_k", getSequsedK(), b,
                             "tensor of batch key counts")))
    return failure();
  if (paged) {
    auto btType = cast<ShapedType>(getBlockTable().getType());
    if (btType.getRank() != 2 || !btType.getElementType().isInteger(32))
      return emitOpError() << "'block_table' must be a 2-D i32 [batch, "
                              "max_pages] page index table, got "
                           << btType;
  }
  return b;
}

// lse: f32 [batch, heads, seqlen_q] or [heads, total_q], after
// [num_splits] in the partial form.
LogicalResult AttentionOp::verifyLse(bool partial, bool varlenQ) {
  auto qType = cast<ShapedType>(getQ().getType());
  auto outType = cast<ShapedType>(getOut().getType());
  int64_t hq = getNumQHeads();
  int64_t splitDim = partial ? outType.getDimSize(0) : 0;
  if (Value lse = getLse()) {
    auto lseType = cast<ShapedType>(lse.getType());
    SmallVector<int64_t> expected;
    if (partial)
      expected.push_back(splitDim);
    if (varlenQ)
      expected.append({hq, qType.getDimSize(0)});
    else
      expected.append({qType.getDimSize(0), hq, qType.getDimSize(1)});
    if (!lseType.getElementType().isF32())
      return emitOpError() << "'lse' element type must be f32, got "
                           << lseType.getElementType();
    if (lseType.getRank() != static_cast<int64_t>(expected.size()) ||
        llvm::any_of(llvm::zip(lseType.getShape(), expected), [](auto p) {
          return staticMismatch(std::get<0>(p), std::get<1>(p));
        }))
      return emitOpError() << "'lse' shape " << shapeStr(lseType.getShape())
                           << " must be " << (partial ? "[num_splits] ++ " : "")
                           << (varlenQ ? "[heads, total_q] = "
                                       : "[batch, heads, seqlen_q] = ")
                           << shapeStr(expected);
  }
  return success();
}

// alibi_slopes: f32 [heads] or [batch, heads].
LogicalResult AttentionOp::verifyAlibi() {
  int64_t hq = getNumQHeads();
  if (Value alibi = getAlibiSlopes()) {
    auto t = cast<ShapedType>(alibi.getType());
    if (!t.getElementType().isF32() || t.getRank() < 1 || t.getRank() > 2)
      return emitOpError() << "'alibi_slopes' must be f32 [heads] or [batch, "
                              "heads], got "
                           << t;
    if (staticMismatch(t.getDimSize(t.getRank() - 1), hq))
      return emitOpError() << "'alibi_slopes' has "
                           << t.getDimSize(t.getRank() - 1)
                           << " slopes per row but 'q' has " << hq << " heads";
  }
  return success();
}

// The kv-cache append: k_new, v_new and cache_seqlens together, on a
// dense or paged cache in the memref form, within its capacity.
LogicalResult AttentionOp::verifyAppend(int64_t b, bool paged) {
  Operation *op = getOperation();
  auto kType = cast<ShapedType>(getK().getType());
  Type elemType = cast<ShapedType>(getQ().getType()).getElementType();
  int64_t hkv = getNumKVHeads(), d = getHeadDim(), dv = getHeadDimV();
  Value kNew = getKNew(), vNew = getVNew(), cacheSeqlens = getCacheSeqlens();
  if (kNew || vNew || cacheSeqlens) {
    if (!kNew || !vNew || !cacheSeqlens)
      return emitOpError() << "kv-cache append needs 'k_new', 'v_new' and "
                              "'cache_seqlens' together; missing "
                           << (!kNew ? "'k_new'" : !vNew ? "'v_new'"
                                                         : "'cache_seqlens'");
    if (isa<RankedTensorType>(getK().getType()))
      return emitOpError() << "kv-cache append updates 'k' and 'v' in place "
                              "and needs the memref form";
    if (isVarlenK())
      return emitOpError() << "kv-cache append needs a dense [batch, "
                              "capacity, kv_heads, head_dim] or paged cache, "
                              "not packed varlen 'k'";
    auto knType = cast<ShapedType>(kNew.getType());
    auto vnType = cast<ShapedType>(vNew.getType());
    for (auto [name, t, dim] :
         {std::make_tuple(StringRef("k_new"), knType, d),
          std::make_tuple(StringRef("v_new"), vnType, dv)}) {
      if (t.getRank() != 4 || t.getElementType() != elemType)
        return emitOpError() << "'" << name << "' must be " << elemType
                             << " [batch, seqlen_new, kv_heads, head_dim], got "
                             << t;
      if (staticMismatch(t.getDimSize(2), hkv) ||
          staticMismatch(t.getDimSize(3), dim))
        return emitOpError()
               << "'" << name << "' shape " << shapeStr(t.getShape())
               << " must have " << dimStr(hkv) << " kv heads and head_dim "
               << dimStr(dim) << " as the cache";
    }
    if (staticMismatch(knType.getDimSize(1), vnType.getDimSize(1)) ||
        staticMismatch(knType.getDimSize(0), vnType.getDimSize(0)))
      return emitOpError() << "'v_new' shape " << shapeStr(vnType.getShape())
                           << " must match 'k_new' shape "
                           << shapeStr(knType.getShape())
                           << " but for head_dim";
    if (failed(verifyI32Vector(op, "cache_seqlens", cacheSeqlens, b,
                               "tensor of batch key counts")))
      return failure();
    int64_t capacity = kType.getDimSize(1);
    if (paged) {
      auto btType = cast<ShapedType>(getBlockTable().getType());
      int64_t pages = btType.getDimSize(1), pageSize = kType.getDimSize(1);
      capacity = isDyn(pages) || isDyn(pageSize) ? ShapedType::kDynamic
                                                 : pages * pageSize;
    }
    int64_t sNew = knType.getDimSize(1);
    if (!isDyn(capacity) && !isDyn(sNew) && sNew > capacity)
      return emitOpError() << "'k_new' appends " << sNew
                           << " rows per sequence but the cache holds at most "
                           << capacity << " keys per sequence";
  }
  return success();
}

// scale, softcap, window_size, num_splits and the plan's agreement.
LogicalResult AttentionOp::verifyAttributes() {
  if (std::optional<APFloat> s = getScale())
    if (!s->isFinite())
      return emitOpError() << "'scale' must be finite, got "
                           << s->convertToDouble();
  if (std::optional<APFloat> c = getSoftcap())
    if (!c->isFinite() || c->isNegative())
      return emitOpError() << "'softcap' must be >= 0 (0 = off), got "
                           << c->convertToDouble();
  if (std::optional<ArrayRef<int64_t>> w = getWindowSize()) {
    if (w->size() != 2)
      return emitOpError() << "'window_size' must hold two values (left, "
                              "right), got "
                           << w->size();
    if ((*w)[0] < -1 || (*w)[1] < -1)
      return emitOpError() << "'window_size' values must be >= -1 (-1 = "
                              "unbounded), got ["
                           << (*w)[0] << ", " << (*w)[1] << "]";
  }
  int64_t numSplits = getNumSplitsAttr().getValue().getSExtValue();
  if (numSplits < 0)
    return emitOpError() << "'num_splits' must be >= 0 (0 = automatic), got "
                         << numSplits;
  if (PlanAttr plan = getPlanAttr()) {
    if (numSplits > 0 && plan.getNumSplits() != numSplits)
      return emitOpError() << "'plan' num_splits (" << plan.getNumSplits()
                           << ") differs from the op's num_splits ("
                           << numSplits << ")";
    if (std::optional<bool> pack = getPackGqa())
      if (*pack != plan.getPackGqa())
        return emitOpError() << "'plan' pack_gqa ("
                             << (plan.getPackGqa() ? "true" : "false")
                             << ") differs from the op's pack_gqa ("
                             << (*pack ? "true" : "false") << ")";
  }
  return success();
}

LogicalResult AttentionOp::verify() {
  Operation *op = getOperation();
  SmallVector<std::pair<StringRef, Value>> named = {
      {"q", getQ()},
      {"k", getK()},
      {"v", getV()},
      {"cu_seqlens_q", getCuSeqlensQ()},
      {"cu_seqlens_k", getCuSeqlensK()},
      {"seqused_k", getSequsedK()},
      {"block_table", getBlockTable()},
      {"alibi_slopes", getAlibiSlopes()},
      {"k_new", getKNew()},
      {"v_new", getVNew()},
      {"cache_seqlens", getCacheSeqlens()}};
  if (getOuts().empty() || getOuts().size() > 2)
    return emitOpError() << "'outs' must hold out and optionally lse, got "
                         << getOuts().size() << " values";
  named.push_back({"out", getOut()});
  if (getLse())
    named.push_back({"lse", getLse()});
  if (failed(verifyOneKind(op, named)))
    return failure();

  bool varlenQ = cast<ShapedType>(getQ().getType()).getRank() == 3;
  bool paged = static_cast<bool>(getBlockTable());
  bool partial = cast<ShapedType>(getOut().getType()).getRank() ==
                 cast<ShapedType>(getQ().getType()).getRank() + 1;
  if (failed(verifyElementTypes()) || failed(verifyLayouts(varlenQ, paged)) ||
      failed(verifyHeads()) || failed(verifyOut(partial)))
    return failure();
  FailureOr<int64_t> batch = verifyBatch(varlenQ, paged);
  if (failed(batch) || failed(verifyLse(partial, varlenQ)) || failed(verifyAlibi()) ||
      failed(verifyAppend(*batch, paged)))
    return failure();
  return verifyAttributes();
}

/// Checks a region's single block: argument types and the yielded type.
static LogicalResult verifyRegionSignature(Operation *op, Region &region,
                                           StringRef name,
                                           ArrayRef<Type> argTypes,
                                           StringRef argDesc, Type yieldType) {
  if (region.empty())
    return success();
  if (!region.hasOneBlock())
    return op->emitOpError() << "'" << name << "' region must have one block";
  Block &block = region.front();
  if (block.getNumArguments() != argTypes.size() ||
      llvm::any_of(llvm::zip(block.getArgumentTypes(), argTypes),
                   [](auto p) { return std::get<0>(p) != std::get<1>(p); })) {
    return op->emitOpError() << "'" << name << "' region must take "
                             << argDesc << ", got ("
                             << typesStr(block.getArgumentTypes()) << ")";
  }
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield)
    return op->emitOpError() << "'" << name
                             << "' region must end with flashattn.yield";
  if (yield.getValues().size() != 1 ||
      yield.getValues()[0].getType() != yieldType) {
    return op->emitOpError() << "'" << name << "' region must yield one "
                             << typesStr(yieldType) << ", got ("
                             << typesStr(yield.getValues().getTypes()) << ")";
  }
  return success();
}

LogicalResult AttentionOp::verifyRegions() {
  MLIRContext *ctx = getContext();
  Type f32 = Float32Type::get(ctx), index = IndexType::get(ctx);
  Type i1 = IntegerType::get(ctx, 1);
  if (failed(verifyRegionSignature(
          *this, getScore(), "score", {f32, index, index, index, index},
          "(f32 score, index batch, index head, index q_idx, index kv_idx)",
          f32)))
    return failure();
  return verifyRegionSignature(
      *this, getMask(), "mask", {index, index, index, index},
      "(index batch, index head, index q_idx, index kv_idx)", i1);
}

//===----------------------------------------------------------------------===//
// CombineOp
//===----------------------------------------------------------------------===//

void CombineOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  SmallVector<OpOperand *> inputs{&getPartialOutMutable(),
                                  &getPartialLseMutable()};
  SmallVector<OpOperand *> inits;
  for (OpOperand &operand : getOutsMutable())
    inits.push_back(&operand);
  getShapedEffects(getOperation(), inputs, inits, {}, effects);
}

LogicalResult CombineOp::verify() {
  if (getOuts().empty() || getOuts().size() > 2)
    return emitOpError() << "'outs' must hold out and optionally lse, got "
                         << getOuts().size() << " values";
  SmallVector<std::pair<StringRef, Value>> named = {
      {"partial_out", getPartialOut()},
      {"partial_lse", getPartialLse()},
      {"out", getOut()}};
  if (getLse())
    named.push_back({"lse", getLse()});
  if (failed(verifyOneKind(getOperation(), named)))
    return failure();

  auto poType = cast<ShapedType>(getPartialOut().getType());
  auto plType = cast<ShapedType>(getPartialLse().getType());
  auto outType = cast<ShapedType>(getOut().getType());
  if (!poType.getElementType().isF32() || !plType.getElementType().isF32())
    return emitOpError() << "'partial_out' and 'partial_lse' must be f32, got "
                         << poType.getElementType() << " and "
                         << plType.getElementType();
  Type outElem = outType.getElementType();
  if (!outElem.isF16() && !outElem.isBF16() && !outElem.isF32())
    return emitOpError() << "'out' element type must be f16, bf16 or f32, got "
                         << outElem;
  if (outType.getRank() != 3 && outType.getRank() != 4)
    return emitOpError() << "'out' must be [batch, seqlen_q, heads, "
                            "head_dim_v] or [total_q, heads, head_dim_v], got "
                         << outType;
  bool varlen = outType.getRank() == 3;
  if (outType.getDimSize(outType.getRank() - 1) == 0)
    return emitOpError() << "'out' head_dim_v must be positive, got " << outType;

  // partial_out = [num_splits] ++ shape(out).
  SmallVector<int64_t> expectedPo{poType.getRank() > 0 ? poType.getDimSize(0)
                                                       : ShapedType::kDynamic};
  llvm::append_range(expectedPo, outType.getShape());
  if (poType.getRank() != static_cast<int64_t>(expectedPo.size()) ||
      llvm::any_of(llvm::zip(poType.getShape(), expectedPo), [](auto p) {
        return staticMismatch(std::get<0>(p), std::get<1>(p));
      }))
    return emitOpError() << "'partial_out' shape "
                         << shapeStr(poType.getShape())
                         << " must be [num_splits] followed by 'out' shape "
                         << shapeStr(outType.getShape());
  int64_t numSplits = poType.getDimSize(0);
  if (numSplits == 0)
    return emitOpError() << "'partial_out' must hold at least one split";

  // lse shape of the output, from out's layout.
  int64_t hq = outType.getDimSize(outType.getRank() - 2);
  SmallVector<int64_t> lseShape =
      varlen ? SmallVector<int64_t>{hq, outType.getDimSize(0)}
             : SmallVector<int64_t>{outType.getDimSize(0), hq,
                                    outType.getDimSize(1)};
  SmallVector<int64_t> expectedPl{numSplits};
  llvm::append_range(expectedPl, lseShape);
  if (plType.getRank() != static_cast<int64_t>(expectedPl.size()) ||
      llvm::any_of(llvm::zip(plType.getShape(), expectedPl), [](auto p) {
        return staticMismatch(std::get<0>(p), std::get<1>(p));
      }))
    return emitOpError() << "'partial_lse' shape "
                         << shapeStr(plType.getShape()) << " must be "
                         << shapeStr(expectedPl)
                         << " ([num_splits] followed by the lse shape of "
                            "'out')";
  if (Value lse = getLse()) {
    auto lseType = cast<ShapedType>(lse.getType());
    if (!lseType.getElementType().isF32() ||
        lseType.getRank() != static_cast<int64_t>(lseShape.size()) ||
        llvm::any_of(llvm::zip(lseType.getShape(), lseShape), [](auto p) {
          return staticMismatch(std::get<0>(p), std::get<1>(p));
        }))
      return emitOpError() << "'lse' must be f32 " << shapeStr(lseShape)
                           << ", got " << lseType;
  }
  return success();
}

// merge_splits: one index per dimension after the split, identity layouts,
// the same split count in both (where known) and at least one split.
LogicalResult MergeSplitsOp::verify() {
  auto po = cast<MemRefType>(getPartialOut().getType());
  auto pl = cast<MemRefType>(getPartialLse().getType());
  if (getOutIndices().size() + 1 != static_cast<size_t>(po.getRank()))
    return emitOpError() << "takes an index per dimension of 'partial_out' after the split ("
                         << po.getRank() - 1 << "), got " << getOutIndices().size();
  if (getLseIndices().size() + 1 != static_cast<size_t>(pl.getRank()))
    return emitOpError() << "takes an index per dimension of 'partial_lse' after the split ("
                         << pl.getRank() - 1 << "), got " << getLseIndices().size();
  if (!po.getLayout().isIdentity() || !pl.getLayout().isIdentity())
    return emitOpError() << "needs identity layouts (contiguous partial results), got " << po
                         << " and " << pl;
  if (staticMismatch(po.getDimSize(0), pl.getDimSize(0)))
    return emitOpError() << "'partial_out' and 'partial_lse' must hold the same number of "
                            "splits, got "
                         << po.getDimSize(0) << " and " << pl.getDimSize(0);
  if (pl.getDimSize(0) == 0 || po.getDimSize(0) == 0)
    return emitOpError() << "needs at least one split, got " << po << " and " << pl;
  return success();
}

#define GET_OP_CLASSES
#include "flashattn/Dialect/FlashAttn/IR/FlashAttnOps.cpp.inc"
