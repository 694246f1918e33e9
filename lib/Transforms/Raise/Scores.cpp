//===- Scores.cpp - the steps between S = Q K^T and the softmax -----------===//

#include "Scores.h"
#include "KeyRange.h"
#include "Match.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <cmath>

using namespace mlir;
using namespace mlir::flashattn;
using namespace mlir::flashattn::raise;

namespace {
/// The walk's state: the steps outside the current one.
struct Walk {
  ChainDims dims;
  Scores scores;        ///< terms outer-first until the end
  bool scaled = false;  ///< a scale step outside
  bool finite = false;  ///< a finite select outside
  /// A key range selected to a finite c <= -1e30: -inf only while nothing
  /// inside it can empty a row (checked at the end).
  bool finiteRange = false;
};

/// What a select's condition keeps.
struct Cond {
  enum Kind { None, Range, Tensor } kind = None;
  KeyRange range;        ///< Range: the keys kept
  Read read;             ///< Tensor: the i1 tensor read
  bool inverted = false; ///< Tensor: its true means masked
};
} // namespace

/// Input `i` of `op` as a read at the chain's loops: a ranked tensor at
/// loops or constant indices, or nothing.
static std::optional<Read> readOf(linalg::LinalgOp op, unsigned i) {
  auto [tensor, map] = peelBroadcasts(op.getDpsInputs()[i], op.getIndexingMapsArray()[i]);
  if (!isa<RankedTensorType>(tensor.getType()) || !isDimsOrConstants(map))
    return std::nullopt;
  return Read{tensor, map};
}

/// The condition keeping x in a select of step `op` (negated when
/// `negate`): index comparisons in its payload, or an i1 input (itself
/// index comparisons, or any tensor).
static Cond analyzeCond(Value cond, linalg::LinalgOp op, ChainDims dims, bool negate) {
  unsigned key = dims.rank - 1, query = dims.queryDim;
  auto arg = dyn_cast<BlockArgument>(cond);
  if (!arg || arg.getOwner() != op.getBlock()) {
    auto chainLoop = [&](Value v) { return loopOf(v, op); };
    std::optional<KeyRange> range = keyRangeOf(cond, negate, chainLoop, key, query);
    return range ? Cond{Cond::Range, *range} : Cond{};
  }
  if (arg.getArgNumber() >= op.getNumDpsInputs())
    return {};
  std::optional<Read> maybeRead = readOf(op, arg.getArgNumber());
  if (!maybeRead)
    return {};
  Read read = *maybeRead;
  auto rank = cast<ShapedType>(read.tensor.getType()).getRank();
  if (linalg::LinalgOp g = elementwiseOp(read.tensor, rank)) {
    // g's loop l is the read's dim l: the chain dim of its map's result l.
    auto chainLoop = [&](Value v) -> std::optional<unsigned> {
      std::optional<unsigned> l = loopOf(v, g);
      if (!l)
        return std::nullopt;
      auto d = dyn_cast<AffineDimExpr>(read.map.getResult(*l));
      return d ? std::optional<unsigned>(d.getPosition()) : std::nullopt;
    };
    if (std::optional<KeyRange> range = keyRangeOf(yieldedValue(g), negate, chainLoop, key, query))
      return Cond{Cond::Range, *range};
  }
  return Cond{Cond::Tensor, {}, read, negate};
}

/// A select of x against a constant `c`, keeping x where `cond` holds.
static bool absorbSelect(const Cond &cond, double c, Walk &w) {
  // A finite constant this low is -inf for a key range keeping the
  // diagonal (checked when raising): no row is empty, so exp(c - max) is 0
  // in f32, in the op as in the unfused chain.
  bool finiteRange = cond.kind == Cond::Range && !std::isinf(c);
  if (finiteRange && (c > -1e30 || w.scaled))
    return false; // a scale outside would move c
  bool negInf = std::isinf(c) || finiteRange;
  if (negInf && w.finite)
    return false; // a finite select outside would give the masked keys c
  if (cond.kind == Cond::Range) {
    w.scores.keys.intersect(cond.range);
    w.finiteRange |= finiteRange;
    return true;
  }
  if (negInf) {
    w.scores.masks.push_back(BoolMask{cond.read, cond.inverted});
    return true;
  }
  if (w.scaled)
    return false; // the op scales before the score region
  w.scores.terms.push_back(ScoreTerm{ScoreTerm::SelectFinite, cond.read, cond.inverted, c});
  w.finite = true;
  return true;
}

/// The payload value `y` of step `op` as steps applied to x, its input
/// `xi`, outermost first (a fused payload is several steps); false when
/// one is none of the recognized ones.
static bool absorbValue(Value y, linalg::LinalgOp op, unsigned xi, Walk &w) {
  if (isInputArg(y, op, xi))
    return true; // x itself, maybe cast
  Operation *def = unwrapCast(y).getDefiningOp();
  if (!def || def->getBlock() != op.getBlock())
    return false;
  if (isa<arith::MulFOp, arith::DivFOp>(def)) {
    bool div = isa<arith::DivFOp>(def);
    Value l = def->getOperand(0), r = def->getOperand(1);
    std::optional<double> c = payloadConstant(r, op);
    Value inner = l;
    if (!c && !div && (c = payloadConstant(l, op)))
      inner = r;
    if (!c || !(*c > 0) || !std::isfinite(*c))
      return false;
    w.scores.scale *= div ? 1.0 / *c : *c;
    w.scaled = true;
    return absorbValue(inner, op, xi, w);
  }
  if (auto add = dyn_cast<arith::AddFOp>(def)) {
    auto tensorArg = [&](Value v) {
      auto arg = dyn_cast<BlockArgument>(unwrapCast(v));
      return arg && arg.getOwner() == op.getBlock() && arg.getArgNumber() < op.getNumDpsInputs() &&
                     arg.getArgNumber() != xi
                 ? arg
                 : BlockArgument();
    };
    BlockArgument m = tensorArg(add.getRhs());
    Value inner = add.getLhs();
    if (!m && (m = tensorArg(add.getLhs())))
      inner = add.getRhs();
    std::optional<Read> read = m ? readOf(op, m.getArgNumber()) : std::nullopt;
    if (!read || w.scaled)
      return false; // a mask inside a scale: the op cannot scale it
    w.scores.terms.push_back(ScoreTerm{ScoreTerm::Add, *read});
    return absorbValue(inner, op, xi, w);
  }
  if (auto sel = dyn_cast<arith::SelectOp>(def)) {
    std::optional<double> onFalse = payloadConstant(sel.getFalseValue(), op);
    std::optional<double> onTrue = payloadConstant(sel.getTrueValue(), op);
    if (onFalse.has_value() == onTrue.has_value())
      return false;
    double c = onFalse ? *onFalse : *onTrue;
    if (std::isnan(c) || (c > 0 && std::isinf(c)))
      return false;
    Cond cond = analyzeCond(sel.getCondition(), op, w.dims, /*negate=*/!onFalse);
    if (cond.kind == Cond::None || !absorbSelect(cond, c, w))
      return false;
    return absorbValue(onFalse ? sel.getTrueValue() : sel.getFalseValue(), op, xi, w);
  }
  return false;
}

static Value walk(Value x, Walk &w, function_ref<bool(Value)> isContraction, unsigned depth) {
  if (isContraction(x))
    return x;
  linalg::LinalgOp op = depth < 32 ? elementwiseOp(x, w.dims.rank) : linalg::LinalgOp();
  if (!op)
    return {};
  for (unsigned i = 0; i < op.getNumDpsInputs(); ++i) {
    if (!op.getIndexingMapsArray()[i].isIdentity())
      continue;
    Walk next = w;
    if (!absorbValue(yieldedValue(op), op, i, next))
      continue;
    if (Value s = walk(op.getDpsInputs()[i], next, isContraction, depth + 1)) {
      w = std::move(next);
      return s;
    }
  }
  return {};
}

Value raise::matchScoreSteps(Value x, ChainDims dims, Scores &scores,
                             function_ref<bool(Value)> isContraction) {
  Walk w{dims, {}};
  Value s = walk(x, w, isContraction, 0);
  if (!s)
    return {};
  // Another mask or a term could leave a row none of the range's keys, so
  // that its c would weigh them all; then it is not -inf.
  if (w.finiteRange && (!w.scores.masks.empty() || !w.scores.terms.empty()))
    return {};
  // The op's scale is an f32.
  auto scale32 = static_cast<float>(w.scores.scale);
  if (!std::isfinite(scale32) || !(scale32 > 0))
    return {};
  std::reverse(w.scores.terms.begin(), w.scores.terms.end());
  scores = std::move(w.scores);
  return s;
}
