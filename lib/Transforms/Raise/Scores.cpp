//===- Scores.cpp - the steps between S = Q K^T and the softmax -----------===//

#include "Scores.h"
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
};

/// What a select's condition keeps.
struct Cond {
  enum Kind { None, Causal, Tensor } kind = None;
  bool inverted = false; ///< the condition true means masked
  Read read;
};
} // namespace

/// An index comparison of the key and query loops: +1 when true means
/// key <= query, -1 when true means key > query, 0 otherwise.
static int causalSense(arith::CmpIOp cmp, function_ref<std::optional<unsigned>(Value)> chainLoop,
                       ChainDims dims) {
  std::optional<unsigned> a = chainLoop(cmp.getLhs()), b = chainLoop(cmp.getRhs());
  unsigned key = dims.rank - 1, query = dims.queryDim;
  if (!a || !b || !((*a == key && *b == query) || (*a == query && *b == key)))
    return 0;
  using P = arith::CmpIPredicate;
  P p = cmp.getPredicate();
  if (*a == query) // as key <op> query
    p = p == P::sge ? P::sle : p == P::uge ? P::ule : p == P::slt ? P::sgt : p == P::ult ? P::ugt : P::eq;
  if (p == P::sle || p == P::ule)
    return 1;
  if (p == P::sgt || p == P::ugt)
    return -1;
  return 0;
}

/// Input `i` of `op` as a read at the chain's loops.
static Read readOf(linalg::LinalgOp op, unsigned i) {
  auto [tensor, map] = peelBroadcasts(op.getDpsInputs()[i], op.getIndexingMapsArray()[i]);
  return Read{tensor, map};
}

/// The condition of a select in step `op`: an index comparison in its
/// payload, or an i1 input (itself an index comparison or any tensor).
static Cond analyzeCond(Value cond, linalg::LinalgOp op, ChainDims dims) {
  if (auto cmp = cond.getDefiningOp<arith::CmpIOp>()) {
    int sense = causalSense(cmp, [&](Value v) { return loopOf(v, op); }, dims);
    return sense ? Cond{Cond::Causal, sense < 0, {}} : Cond{};
  }
  auto arg = dyn_cast<BlockArgument>(cond);
  if (!arg || arg.getOwner() != op.getBlock() || arg.getArgNumber() >= op.getNumDpsInputs())
    return {};
  Read read = readOf(op, arg.getArgNumber());
  auto rank = cast<ShapedType>(read.tensor.getType()).getRank();
  if (linalg::LinalgOp g = elementwiseOp(read.tensor, rank)) {
    if (auto cmp = yieldedValue(g).getDefiningOp<arith::CmpIOp>()) {
      auto chainLoop = [&](Value v) -> std::optional<unsigned> {
        std::optional<unsigned> l = loopOf(v, g);
        if (!l)
          return std::nullopt;
        auto d = dyn_cast<AffineDimExpr>(read.map.getResult(*l));
        return d ? std::optional<unsigned>(d.getPosition()) : std::nullopt;
      };
      if (int sense = causalSense(cmp, chainLoop, dims))
        return Cond{Cond::Causal, sense < 0, {}};
    }
  }
  return Cond{Cond::Tensor, false, read};
}

/// A select of x against a constant `c`, keeping x where `cond` holds
/// (negated by `xOnFalse`).
static bool absorbSelect(Cond cond, bool xOnFalse, double c, Walk &w) {
  bool inverted = cond.inverted != xOnFalse;
  // A finite constant this low is -inf for a causal row: every row keeps
  // key 0, so exp(c - max) is 0 in f32 (and in the op).
  bool negInf = std::isinf(c) || (cond.kind == Cond::Causal && c <= -1e30);
  if (negInf && w.finite)
    return false; // a finite select outside would give the masked keys c
  if (cond.kind == Cond::Causal) {
    if (!negInf || inverted)
      return false;
    w.scores.causal = true;
    return true;
  }
  if (negInf) {
    w.scores.masks.push_back(BoolMask{cond.read, inverted});
    return true;
  }
  if (w.scaled)
    return false; // the op scales before the score region
  w.scores.terms.push_back(ScoreTerm{ScoreTerm::SelectFinite, cond.read, inverted, c});
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
    if (!m || w.scaled)
      return false; // a mask inside a scale: the op cannot scale it
    w.scores.terms.push_back(ScoreTerm{ScoreTerm::Add, readOf(op, m.getArgNumber())});
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
    Cond cond = analyzeCond(sel.getCondition(), op, w.dims);
    if (cond.kind == Cond::None || !absorbSelect(cond, /*xOnFalse=*/!onFalse, c, w))
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
  std::reverse(w.scores.terms.begin(), w.scores.terms.end());
  scores = std::move(w.scores);
  return s;
}
