//===- Match.cpp - flashattn-raise's structural matchers ------------------===//

#include "Match.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

#include <cmath>

using namespace mlir;
using namespace mlir::flashattn;
using namespace mlir::flashattn::raise;

Value raise::yieldedValue(linalg::LinalgOp op) {
  Operation *term = op.getBlock()->getTerminator();
  return term->getNumOperands() == 1 ? term->getOperand(0) : Value();
}

Value raise::unwrapCast(Value v) {
  while (Operation *op = v.getDefiningOp()) {
    if (!isa<arith::ExtFOp, arith::TruncFOp>(op))
      break;
    v = op->getOperand(0);
  }
  return v;
}

static BlockArgument payloadArg(Value v, linalg::LinalgOp op) {
  auto arg = dyn_cast<BlockArgument>(unwrapCast(v));
  return arg && arg.getOwner() == op.getBlock() ? arg : BlockArgument();
}

bool raise::isInputArg(Value v, linalg::LinalgOp op, unsigned i) {
  BlockArgument arg = payloadArg(v, op);
  return arg && arg.getArgNumber() == i && i < op.getNumDpsInputs();
}

bool raise::isInitArg(Value v, linalg::LinalgOp op) {
  BlockArgument arg = payloadArg(v, op);
  return arg && op.getNumDpsInits() == 1 && arg.getArgNumber() == op.getNumDpsInputs() &&
         op.getBlock()->getNumArguments() == op.getNumDpsInputs() + 1;
}

linalg::LinalgOp raise::elementwiseOp(Value result, unsigned rank) {
  auto op = result.getDefiningOp<linalg::LinalgOp>();
  if (!op || op->getNumResults() != 1 || op.getNumDpsInits() != 1 || op.getNumLoops() != rank ||
      op.getNumParallelLoops() != rank || !op.getIndexingMapsArray().back().isIdentity() ||
      !yieldedValue(op))
    return {};
  return op;
}

bool raise::isDimsOrConstants(AffineMap map) {
  return llvm::all_of(map.getResults(),
                      [](AffineExpr e) { return isa<AffineDimExpr, AffineConstantExpr>(e); });
}

/// A structured op that only moves or repeats its one input (a broadcast,
/// a transpose, a copy): its payload yields the input's argument.
static linalg::LinalgOp movingOp(Value result) {
  auto op = result.getDefiningOp<linalg::LinalgOp>();
  if (!op || op->getNumResults() != 1 || op.getNumDpsInputs() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      !op.getIndexingMapsArray().back().isIdentity())
    return {};
  BlockArgument arg = dyn_cast_or_null<BlockArgument>(yieldedValue(op));
  if (!arg || arg.getOwner() != op.getBlock() || arg.getArgNumber() != 0 ||
      !isa<RankedTensorType>(op.getDpsInputs()[0].getType()) ||
      !isDimsOrConstants(op.getIndexingMapsArray()[0]))
    return {};
  return op;
}

std::pair<Value, AffineMap> raise::peelBroadcasts(Value tensor, AffineMap map) {
  while (true) {
    if (auto cast = tensor.getDefiningOp<tensor::CastOp>()) {
      tensor = cast.getSource();
    } else if (linalg::LinalgOp op = movingOp(tensor)) {
      // The op's loops are the dims of its result.
      map = op.getIndexingMapsArray()[0].compose(map);
      tensor = op.getDpsInputs()[0];
    } else if (auto expand = tensor.getDefiningOp<tensor::ExpandShapeOp>()) {
      // Each group keeps its one non-unit dim; a group of unit dims, its
      // first read by a loop (a unit dim of the source either way).
      auto type = expand.getResultType();
      SmallVector<AffineExpr> results;
      for (ReassociationIndices group : expand.getReassociationIndices()) {
        auto nonUnit = llvm::make_filter_range(group, [&](int64_t d) { return type.getDimSize(d) != 1; });
        auto byLoop = llvm::make_filter_range(group, [&](int64_t d) { return isa<AffineDimExpr>(map.getResult(d)); });
        if (llvm::range_size(nonUnit) > 1)
          return {tensor, map};
        int64_t kept = !nonUnit.empty() ? *nonUnit.begin() : !byLoop.empty() ? *byLoop.begin() : group[0];
        results.push_back(map.getResult(kept));
      }
      map = AffineMap::get(map.getNumDims(), map.getNumSymbols(), results, map.getContext());
      tensor = expand.getSrc();
    } else {
      return {tensor, map};
    }
  }
}

Value raise::peelTransposes(Value tensor, SmallVectorImpl<int64_t> &labels) {
  while (linalg::LinalgOp op = movingOp(tensor)) {
    AffineMap map = op.getIndexingMapsArray()[0];
    if (!map.isPermutation())
      break;
    // Input dim j is read at the result's dim map(j).
    SmallVector<int64_t> permuted(labels.size());
    for (unsigned j = 0; j < map.getNumResults(); ++j)
      permuted[j] = labels[cast<AffineDimExpr>(map.getResult(j)).getPosition()];
    labels.assign(permuted.begin(), permuted.end());
    tensor = op.getDpsInputs()[0];
  }
  return tensor;
}

std::optional<double> raise::constantOf(Value v) {
  // Through arith.truncf / extf: the constant as the cast rounds it (to
  // inf when it overflows the narrower type).
  if (isa_and_nonnull<arith::TruncFOp, arith::ExtFOp>(v.getDefiningOp())) {
    std::optional<double> c = constantOf(v.getDefiningOp()->getOperand(0));
    auto type = dyn_cast<FloatType>(getElementTypeOrSelf(v.getType()));
    if (!c || !type)
      return std::nullopt;
    APFloat x(*c);
    bool lost;
    x.convert(type.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return x.convertToDouble();
  }
  FloatAttr attr;
  if (matchPattern(v, m_Constant(&attr)))
    return attr.getValueAsDouble();
  DenseFPElementsAttr dense;
  if (matchPattern(v, m_Constant(&dense)) && dense.isSplat())
    return dense.getSplatValue<APFloat>().convertToDouble();
  if (auto fill = v.getDefiningOp<linalg::FillOp>())
    return constantOf(fill.getInputs()[0]);
  if (linalg::LinalgOp op = movingOp(v))
    return constantOf(op.getDpsInputs()[0]);
  if (auto cast = v.getDefiningOp<tensor::CastOp>())
    return constantOf(cast.getSource());
  if (auto expand = v.getDefiningOp<tensor::ExpandShapeOp>())
    return constantOf(expand.getSrc());
  return std::nullopt;
}

std::optional<double> raise::payloadConstant(Value v, linalg::LinalgOp op) {
  BlockArgument arg = payloadArg(v, op);
  if (!arg)
    return constantOf(v);
  if (arg.getArgNumber() >= op.getNumDpsInputs())
    return std::nullopt;
  return constantOf(op.getDpsInputs()[arg.getArgNumber()]);
}

bool raise::sameSize(Value a, int64_t dimA, Value b, int64_t dimB) {
  int64_t sa = cast<ShapedType>(a.getType()).getDimSize(dimA);
  int64_t sb = cast<ShapedType>(b.getType()).getDimSize(dimB);
  if (!ShapedType::isDynamic(sa) || !ShapedType::isDynamic(sb))
    return sa == sb;
  FailureOr<bool> equal = ValueBoundsConstraintSet::areEqual({a, dimA}, {b, dimB});
  return succeeded(equal) && *equal;
}

static SmallVector<int64_t> loopsOf(AffineMap map) {
  SmallVector<int64_t> loops;
  for (AffineExpr e : map.getResults())
    loops.push_back(cast<AffineDimExpr>(e).getPosition());
  return loops;
}

/// The payload add(init, mul(a, b)) of a contraction.
static bool isMulAdd(linalg::LinalgOp op) {
  auto add = dyn_cast_or_null<arith::AddFOp>(yieldedValue(op).getDefiningOp());
  if (!add)
    return false;
  Value prod = isInitArg(add.getLhs(), op)   ? add.getRhs()
               : isInitArg(add.getRhs(), op) ? add.getLhs()
                                             : Value();
  auto mul = prod ? unwrapCast(prod).getDefiningOp<arith::MulFOp>() : arith::MulFOp();
  return mul && ((isInputArg(mul.getLhs(), op, 0) && isInputArg(mul.getRhs(), op, 1)) ||
                 (isInputArg(mul.getLhs(), op, 1) && isInputArg(mul.getRhs(), op, 0)));
}

Value raise::collapsedPair(Value v, unsigned pos) {
  auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse)
    return {};
  SmallVector<ReassociationIndices> groups = collapse.getReassociationIndices();
  for (auto [i, group] : llvm::enumerate(groups))
    if (group.size() != (i == pos ? 2u : 1u))
      return {};
  return collapse.getSrc();
}

/// `v` = tensor.collapse_shape [[0, 1], [2], ...] of a tensor: that tensor.
static Value collapsedLeading(Value v) { return collapsedPair(v, 0); }

/// Splits the batch loop (dim 0 of a, b and out) of a 3-D contraction over
/// collapsed operands into two: the new loop is numbered last.
static bool liftBatch(Contraction &c) {
  Value a4 = collapsedLeading(c.a), b4 = collapsedLeading(c.b);
  if (!a4 || !b4 || c.aLoops[0] != c.bLoops[0] || c.aLoops[0] != c.outLoops[0] ||
      !sameSize(a4, 0, b4, 0) || !sameSize(a4, 1, b4, 1))
    return false;
  int64_t inner = c.op.getNumLoops();
  for (SmallVector<int64_t> *loops : {&c.aLoops, &c.bLoops, &c.outLoops})
    loops->insert(loops->begin() + 1, inner);
  c.a = a4;
  c.b = b4;
  c.lifted = true;
  return true;
}

static Value skipCastOps(Value v, unsigned rank);

std::optional<Contraction> raise::matchContraction(Value result, bool liftRoot) {
  auto expand = result.getDefiningOp<tensor::ExpandShapeOp>();
  if (expand) {
    SmallVector<ReassociationIndices> groups = expand.getReassociationIndices();
    if (groups.empty() || groups[0].size() != 2 ||
        llvm::any_of(ArrayRef(groups).drop_front(), [](auto &g) { return g.size() != 1; }))
      return std::nullopt;
    result = expand.getSrc();
  }
  // The accumulator rounded to the element type (torch-mlir's bf16 / f16
  // matmuls): not kept by the op.
  result = skipCastOps(result, cast<ShapedType>(result.getType()).getRank());
  auto op = result.getDefiningOp<linalg::LinalgOp>();
  if (!op || op->getNumResults() != 1 || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 1 || !isMulAdd(op))
    return std::nullopt;
  std::optional<double> zero = constantOf(op.getDpsInits()[0]);
  if (!zero || *zero != 0.0)
    return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!llvm::all_of(maps, [](AffineMap m) { return m.isProjectedPermutation(/*allowZeroInResults=*/false); }))
    return std::nullopt;
  Contraction c{op, op.getDpsInputs()[0], op.getDpsInputs()[1], loopsOf(maps[0]),
                loopsOf(maps[1]), loopsOf(maps[2])};
  for (unsigned i = 0; i < op.getNumLoops(); ++i)
    if (op.getIteratorTypesArray()[i] == utils::IteratorType::reduction)
      c.reduction = i;
  // out[every parallel loop] += a[.., r, ..] * b[.., r, ..]: nothing else
  // summed over.
  if (c.outLoops.size() + 1 != op.getNumLoops() || !llvm::is_contained(c.aLoops, c.reduction) ||
      !llvm::is_contained(c.bLoops, c.reduction))
    return std::nullopt;
  if (expand || (liftRoot && collapsedLeading(c.a) && collapsedLeading(c.b))) {
    // The expanded result splits its batch as the operands do.
    if (!liftBatch(c) ||
        (expand && !(sameSize(expand, 0, c.a, 0) && sameSize(expand, 1, c.a, 1))))
      return std::nullopt;
  }
  return c;
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

/// `v` without structured ops that only cast it elementwise.
static Value skipCastOps(Value v, unsigned rank) {
  while (linalg::LinalgOp op = elementwiseOp(v, rank)) {
    if (op.getNumDpsInputs() != 1 || !op.getIndexingMapsArray()[0].isIdentity() ||
        !isInputArg(yieldedValue(op), op, 0))
      break;
    v = op.getDpsInputs()[0];
  }
  return v;
}

/// A reduction over the last of `rank` loops of an identity-read input,
/// with `combine(input, init)` as its payload. Returns its input.
static Value rowReductionInput(Value result, unsigned rank,
                               function_ref<bool(Operation *)> combine) {
  auto op = result.getDefiningOp<linalg::LinalgOp>();
  if (!op || op->getNumResults() != 1 || op.getNumLoops() != rank || op.getNumDpsInputs() != 1 ||
      op.getNumReductionLoops() != 1 ||
      op.getIteratorTypesArray()[rank - 1] != utils::IteratorType::reduction ||
      !op.getIndexingMapsArray()[0].isIdentity())
    return {};
  Operation *payload = yieldedValue(op).getDefiningOp();
  if (!payload || !combine(payload) || payload->getNumOperands() != 2)
    return {};
  bool inFirst = isInputArg(payload->getOperand(0), op, 0) && isInitArg(payload->getOperand(1), op);
  bool inSecond = isInputArg(payload->getOperand(1), op, 0) && isInitArg(payload->getOperand(0), op);
  return inFirst || inSecond ? op.getDpsInputs()[0] : Value();
}

/// The row statistic an elementwise op's input `i` reads (broadcast over
/// the keys, by its map or by ops before it): the reduction's result whose
/// own result map it is read with.
static Value rowStatistic(linalg::LinalgOp op, unsigned i) {
  auto [src, map] = peelBroadcasts(op.getDpsInputs()[i], op.getIndexingMapsArray()[i]);
  auto red = src.getDefiningOp<linalg::LinalgOp>();
  if (!red || red->getNumResults() != 1 || red.getNumLoops() != op.getNumLoops())
    return {};
  AffineMap resultMap = red.getIndexingMapsArray().back();
  unsigned rank = op.getNumLoops();
  // Read at (d0 .. d_{rank-2}) [+ constants]: the reduction's own map.
  if (map != resultMap)
    return {};
  // Read at every loop but the keys' (plus unit constants): one value a row.
  SmallVector<unsigned> loops;
  for (AffineExpr e : map.getResults())
    if (auto d = dyn_cast<AffineDimExpr>(e))
      loops.push_back(d.getPosition());
  llvm::sort(loops);
  return llvm::equal(loops, llvm::seq<unsigned>(0, rank - 1)) ? src : Value();
}

/// op = f(x, r) elementwise, x read as the identity (input 0), r a row
/// statistic (input 1), f `payload` on the two arguments in this order.
static bool isRowBinary(linalg::LinalgOp op, Operation *payload) {
  return payload && op.getNumDpsInputs() == 2 && payload->getNumOperands() == 2 &&
         isInputArg(payload->getOperand(0), op, 0) && isInputArg(payload->getOperand(1), op, 1) &&
         op.getIndexingMapsArray()[0].isIdentity();
}

/// E = exp(X - m): fused, or an exp of a separate subtraction. Returns X;
/// `m` the row statistic.
static Value matchExpSub(Value e, unsigned rank, Value &m) {
  linalg::LinalgOp expOp = elementwiseOp(e, rank);
  auto exp = expOp ? yieldedValue(expOp).getDefiningOp<math::ExpOp>() : math::ExpOp();
  if (!exp)
    return {};
  linalg::LinalgOp subOp = expOp;
  Operation *sub = exp.getOperand().getDefiningOp<arith::SubFOp>();
  if (!sub) {
    if (expOp.getNumDpsInputs() != 1 || !isInputArg(exp.getOperand(), expOp, 0) ||
        !expOp.getIndexingMapsArray()[0].isIdentity())
      return {};
    subOp = elementwiseOp(expOp.getDpsInputs()[0], rank);
    sub = subOp ? yieldedValue(subOp).getDefiningOp<arith::SubFOp>() : nullptr;
  }
  if (!subOp || !isRowBinary(subOp, sub))
    return {};
  m = rowStatistic(subOp, 1);
  return m ? subOp.getDpsInputs()[0] : Value();
}

/// The max reduction `m` starts from -inf or its type's lowest finite
/// value (anything larger would change the statistic).
static bool isMaxIdentity(Value m) {
  Value init = m.getDefiningOp<linalg::LinalgOp>().getDpsInits()[0];
  auto type = dyn_cast<FloatType>(getElementTypeOrSelf(init.getType()));
  std::optional<double> c = constantOf(init);
  if (!c || !type)
    return false;
  double lowest = APFloat::getLargest(type.getFloatSemantics(), /*Negative=*/true).convertToDouble();
  return (std::isinf(*c) && *c < 0) || *c == lowest;
}

Value raise::matchSoftmax(Value p, unsigned rank) {
  p = skipCastOps(p, rank);
  if (auto sm = p.getDefiningOp<linalg::SoftmaxOp>())
    return sm.getDimension() == rank - 1 ? sm.getInput() : Value();
  linalg::LinalgOp div = elementwiseOp(p, rank);
  if (!div || !isRowBinary(div, yieldedValue(div).getDefiningOp<arith::DivFOp>()))
    return {};
  Value e = div.getDpsInputs()[0], l = rowStatistic(div, 1);
  auto isAdd = [](Operation *op) { return isa<arith::AddFOp>(op); };
  if (!l || rowReductionInput(l, rank, isAdd) != e)
    return {};
  std::optional<double> zero =
      constantOf(l.getDefiningOp<linalg::LinalgOp>().getDpsInits()[0]);
  if (!zero || *zero != 0.0)
    return {};
  Value m;
  Value x = matchExpSub(e, rank, m);
  auto isMax = [](Operation *op) { return isa<arith::MaximumFOp, arith::MaxNumFOp>(op); };
  if (!x || rowReductionInput(m, rank, isMax) != x || !isMaxIdentity(m))
    return {};
  return x;
}

//===----------------------------------------------------------------------===//
// Index comparisons
//===----------------------------------------------------------------------===//

/// An iota: a structured op with no inputs yielding (a cast of)
/// linalg.index k. Returns k.
static std::optional<unsigned> iotaDim(Value tensor) {
  auto op = tensor.getDefiningOp<linalg::LinalgOp>();
  if (!op || op.getNumDpsInputs() != 0 || op->getNumResults() != 1)
    return std::nullopt;
  Value v = yieldedValue(op);
  while (v && v.getDefiningOp<arith::IndexCastOp>())
    v = v.getDefiningOp()->getOperand(0);
  auto index = v ? v.getDefiningOp<linalg::IndexOp>() : linalg::IndexOp();
  if (!index || !op.getIndexingMapsArray().back().isIdentity())
    return std::nullopt;
  return index.getDim();
}

std::optional<unsigned> raise::loopOf(Value v, linalg::LinalgOp op) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp, arith::ExtUIOp>(def))
      break;
    v = def->getOperand(0);
  }
  if (auto index = v.getDefiningOp<linalg::IndexOp>())
    return index.getDim();
  BlockArgument arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != op.getBlock() || arg.getArgNumber() >= op.getNumDpsInputs())
    return std::nullopt;
  unsigned i = arg.getArgNumber();
  auto [src, map] = peelBroadcasts(op.getDpsInputs()[i], op.getIndexingMapsArray()[i]);
  std::optional<unsigned> dim = iotaDim(src);
  if (!dim)
    return std::nullopt;
  auto loop = dyn_cast<AffineDimExpr>(map.getResult(*dim));
  return loop ? std::optional<unsigned>(loop.getPosition()) : std::nullopt;
}
