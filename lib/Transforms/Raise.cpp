//===- Raise.cpp - flashattn-raise ----------------------------------------===//
//
// Attention written in upstream linalg on tensors (the SDPA layout
// [B, H, S, D], as torch-mlir's linalg-on-tensors lowering and
// StableHLO-to-linalg give it) becomes flashattn.attention:
//
//   S = linalg.generic contraction of Q [B, H, Sq, D] and K (rows of
//       [B, H, Sk, D], or its transpose [B, H, D, Sk]) over D
//   X = S, then elementwise generics: * c or / c (c a constant: the scale),
//       + M (a tensor: an additive mask, a score region adding it),
//       select(M, x, -inf) (an i1 tensor: a mask region reading it),
//       select(j <= i, x, -inf) from linalg.index (top-left causal)
//   P = linalg.softmax(X) over the keys, or its decomposition: m = max_j X,
//       E = exp(X - m), l = sum_j E, P = E / l (m, l kept as [B, H, Sq] or
//       [B, H, Sq, 1])
//   O = linalg.generic contraction of P and V [B, H, Sk, Dv] over the keys
//
// O is replaced by linalg.transpose(flashattn.attention(transposed Q, K,
// V)). Anything else, a near miss included (softmax over another
// dimension, a scale after the softmax, a non-constant factor, a mask
// neither boolean nor additive), leaves the IR unchanged. Rounding: the op
// computes in f32 with FlashAttention's online softmax; the unfused chain's
// intermediate roundings (S, P in the element type) are not kept.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir::flashattn {
#define GEN_PASS_DEF_FLASHATTNRAISE
#include "flashattn/Transforms/Passes.h.inc"
} // namespace mlir::flashattn

using namespace mlir;
using namespace mlir::flashattn;

namespace {
/// What the chain between S and P added to the scores.
struct Scores {
  Value q, k, v;
  bool kTransposed = false;
  double scale = 1.0;
  bool causal = false;
  SmallVector<Value> additive; ///< f32-compatible [B, H, Sq, Sk] tensors added
  Value boolMask;              ///< i1 [B, H, Sq, Sk]: true keeps
};

Value yielded(linalg::GenericOp g) {
  return cast<linalg::YieldOp>(g.getBody()->getTerminator()).getValues()[0];
}

/// Strips arith.extf / truncf.
Value unwrapCast(Value v) {
  while (Operation *op = v.getDefiningOp()) {
    if (!isa<arith::ExtFOp, arith::TruncFOp>(op))
      break;
    v = op->getOperand(0);
  }
  return v;
}

bool isBlockArg(Value v, linalg::GenericOp g, unsigned i) {
  auto arg = dyn_cast<BlockArgument>(unwrapCast(v));
  return arg && arg.getOwner() == g.getBody() && arg.getArgNumber() == i;
}

bool allParallel(linalg::GenericOp g) {
  return g.getNumReductionLoops() == 0;
}

/// An elementwise generic over 4 loops with identity maps for its 4-D
/// operands (its result [B, H, Sq, Sk]).
bool isElementwise4d(linalg::GenericOp g) {
  if (g.getNumLoops() != 4 || !allParallel(g) || g.getNumDpsInits() != 1)
    return false;
  return g.getIndexingMapsArray().back().isIdentity();
}

/// A row statistic broadcast over the keys: map (b, h, i, j) -> (b, h, i)
/// or (b, h, i, 0).
bool isRowBroadcast(AffineMap map) {
  MLIRContext *ctx = map.getContext();
  AffineMap rows = AffineMap::getMultiDimIdentityMap(4, ctx).getMajorSubMap(3);
  if (map.getNumResults() == 3)
    return map == rows;
  return map.getNumResults() == 4 && map.getResult(3).isSymbolicOrConstant() &&
         map.getSubMap({0, 1, 2}) == rows;
}

/// A reduction over the last of 4 loops whose result is [B, H, Sq] or
/// [B, H, Sq, 1] (keepdim), with `combine` its payload and a fill of
/// `init` as its init.
bool isRowReduction(linalg::GenericOp g, function_ref<bool(Operation *)> combine) {
  if (g.getNumLoops() != 4 || g.getNumReductionLoops() != 1 || g.getNumDpsInputs() != 1 ||
      g.getIteratorTypesArray()[3] != utils::IteratorType::reduction)
    return false;
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  Operation *op = yielded(g).getDefiningOp();
  return maps[0].isIdentity() && isRowBroadcast(maps[1]) && op && combine(op) &&
         isBlockArg(op->getOperand(0), g, 0) != isBlockArg(op->getOperand(1), g, 0);
}

/// g = op(x, r) elementwise, r a row statistic broadcast over the keys,
/// `op` (of g's body) taking g's block arguments 0 and 1 in this order.
bool isRowBinary(linalg::GenericOp g, Operation *op) {
  if (!op || !isElementwise4d(g) || g.getNumDpsInputs() != 2)
    return false;
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  return isBlockArg(op->getOperand(0), g, 0) && isBlockArg(op->getOperand(1), g, 1) &&
         maps[0].isIdentity() && isRowBroadcast(maps[1]);
}

/// P = softmax over the keys of X: linalg.softmax dimension(3) or its
/// decomposition. Returns X.
Value matchSoftmax(Value p) {
  if (auto sm = p.getDefiningOp<linalg::SoftmaxOp>())
    return sm.getDimension() == 3 ? sm.getInput() : Value();
  auto div = p.getDefiningOp<linalg::GenericOp>();
  if (!div || !isRowBinary(div, yielded(div).getDefiningOp<arith::DivFOp>()))
    return {};
  Value e = div.getDpsInputs()[0], l = div.getDpsInputs()[1];
  auto sum = l.getDefiningOp<linalg::GenericOp>();
  if (!sum || sum.getDpsInputs()[0] != e ||
      !isRowReduction(sum, [](Operation *op) { return isa<arith::AddFOp>(op); }))
    return {};
  auto exp = e.getDefiningOp<linalg::GenericOp>();
  auto expOp = exp ? yielded(exp).getDefiningOp<math::ExpOp>() : math::ExpOp();
  if (!expOp || !isRowBinary(exp, expOp.getOperand().getDefiningOp<arith::SubFOp>()))
    return {};
  Value x = exp.getDpsInputs()[0], m = exp.getDpsInputs()[1];
  auto max = m.getDefiningOp<linalg::GenericOp>();
  if (!max || max.getDpsInputs()[0] != x ||
      !isRowReduction(max, [](Operation *op) {
        return isa<arith::MaximumFOp, arith::MaxNumFOp>(op);
      }))
    return {};
  return x;
}

/// The f32 constant `v` is, if it is one.
std::optional<double> constantOf(Value v) {
  FloatAttr attr;
  if (matchPattern(v, m_Constant(&attr)))
    return attr.getValueAsDouble();
  return std::nullopt;
}

bool isNegInf(Value v) {
  std::optional<double> c = constantOf(v);
  return c && std::isinf(*c) && *c < 0;
}

/// select(j <= i, x, -inf) with i, j the generic's loop indices 2 and 3.
bool isTopLeftCausal(Value cond) {
  auto cmp = cond.getDefiningOp<arith::CmpIOp>();
  if (!cmp)
    return false;
  auto index = [](Value v) -> int64_t {
    auto idx = v.getDefiningOp<linalg::IndexOp>();
    return idx ? int64_t(idx.getDim()) : -1;
  };
  int64_t a = index(cmp.getLhs()), c = index(cmp.getRhs());
  using P = arith::CmpIPredicate;
  P pred = cmp.getPredicate();
  bool jLeI = a == 3 && c == 2 && (pred == P::sle || pred == P::ule);
  bool iGeJ = a == 2 && c == 3 && (pred == P::sge || pred == P::uge);
  return jLeI || iGeJ;
}

/// One elementwise step x -> f(x) between S and X; false when it is none
/// of the recognized ones.
bool absorbStep(linalg::GenericOp g, Scores &s, Value &x) {
  if (!g.getIndexingMapsArray()[0].isIdentity())
    return false;
  Value out = yielded(g);
  Operation *op = out.getDefiningOp();
  if (!op)
    return false;
  auto other = [&](Value a, Value b) -> Value {
    return isBlockArg(a, g, 0) ? b : isBlockArg(b, g, 0) ? a : Value();
  };
  if (isa<arith::MulFOp, arith::DivFOp>(op) && g.getNumDpsInputs() == 1) {
    bool div = isa<arith::DivFOp>(op);
    Value c = div ? op->getOperand(1) : other(op->getOperand(0), op->getOperand(1));
    std::optional<double> value = c ? constantOf(unwrapCast(c)) : std::nullopt;
    if (!value || (div && !isBlockArg(op->getOperand(0), g, 0)) || *value <= 0)
      return false;
    s.scale *= div ? 1.0 / *value : *value;
  } else if (isa<arith::AddFOp>(op) && g.getNumDpsInputs() == 2 &&
             g.getIndexingMapsArray()[1].isIdentity() &&
             other(op->getOperand(0), op->getOperand(1)) &&
             isBlockArg(other(op->getOperand(0), op->getOperand(1)), g, 1)) {
    if (s.scale != 1.0)
      return false; // scaled after it: the op cannot scale a mask
    s.additive.push_back(g.getDpsInputs()[1]);
  } else if (auto sel = dyn_cast<arith::SelectOp>(op)) {
    if (!isBlockArg(sel.getTrueValue(), g, 0) || !isNegInf(sel.getFalseValue()))
      return false;
    if (g.getNumDpsInputs() == 1 && isTopLeftCausal(sel.getCondition())) {
      s.causal = true;
    } else if (g.getNumDpsInputs() == 2 && isBlockArg(sel.getCondition(), g, 1) &&
               g.getIndexingMapsArray()[1].isIdentity() && !s.boolMask) {
      s.boolMask = g.getDpsInputs()[1];
    } else {
      return false;
    }
  } else {
    return false;
  }
  x = g.getDpsInputs()[0];
  return true;
}

/// The contraction roles of a 5-loop generic out[...] += a[...] * b[...]:
/// for each of the out's 4 dims and the reduction, the loop it is.
struct Contraction {
  Value a, b;
  AffineMap mapA, mapB, mapOut;
  unsigned red;
};

std::optional<Contraction> matchContraction(Value result) {
  auto g = result.getDefiningOp<linalg::GenericOp>();
  if (!g || g.getNumLoops() != 5 || g.getNumReductionLoops() != 1 || g.getNumDpsInputs() != 2)
    return std::nullopt;
  auto add = yielded(g).getDefiningOp<arith::AddFOp>();
  if (!add)
    return std::nullopt;
  Value prod = isBlockArg(add.getLhs(), g, 2) ? add.getRhs()
               : isBlockArg(add.getRhs(), g, 2) ? add.getLhs()
                                                : Value();
  auto mul = prod ? prod.getDefiningOp<arith::MulFOp>() : arith::MulFOp();
  if (!mul || !((isBlockArg(mul.getLhs(), g, 0) && isBlockArg(mul.getRhs(), g, 1)) ||
                (isBlockArg(mul.getLhs(), g, 1) && isBlockArg(mul.getRhs(), g, 0))))
    return std::nullopt;
  // The init: a fill of zero.
  auto fill = g.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  std::optional<double> zero = fill ? constantOf(fill.getInputs()[0]) : std::nullopt;
  if (!zero || *zero != 0.0)
    return std::nullopt;
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  for (AffineMap m : maps)
    if (!m.isProjectedPermutation() || m.getNumResults() != 4)
      return std::nullopt;
  unsigned red = 0;
  for (unsigned i = 0; i < 5; ++i)
    if (g.getIteratorTypesArray()[i] == utils::IteratorType::reduction)
      red = i;
  return Contraction{g.getDpsInputs()[0], g.getDpsInputs()[1], maps[0], maps[1], maps[2], red};
}

unsigned dimOf(AffineMap m, unsigned pos) {
  return cast<AffineDimExpr>(m.getResult(pos)).getPosition();
}

/// out[b, h, i, j] = sum_r a[b, h, i, r] * c[b, h, j, r] (or c[b, h, r, j],
/// transposed): the loops of out's dims 0..3 and the tensors' roles.
bool isBatchedRowContraction(const Contraction &c, bool &bTransposed) {
  unsigned b0 = dimOf(c.mapOut, 0), h = dimOf(c.mapOut, 1), i = dimOf(c.mapOut, 2),
           j = dimOf(c.mapOut, 3);
  auto is = [&](AffineMap m, std::array<unsigned, 4> loops) {
    for (unsigned k = 0; k < 4; ++k)
      if (dimOf(m, k) != loops[k])
        return false;
    return true;
  };
  if (!is(c.mapA, {b0, h, i, c.red}))
    return false;
  bTransposed = is(c.mapB, {b0, h, c.red, j});
  return bTransposed || is(c.mapB, {b0, h, j, c.red});
}

/// Tensors of [B, H, S, D] as [B, S, H, D] (or back).
Value transposeBHSD(PatternRewriter &rewriter, Location loc, Value t) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, t);
  std::swap(sizes[1], sizes[2]);
  Value init = tensor::EmptyOp::create(rewriter, loc, sizes,
                                       cast<ShapedType>(t.getType()).getElementType());
  return linalg::TransposeOp::create(rewriter, loc, t, init, ArrayRef<int64_t>{0, 2, 1, 3})
      .getResult()[0];
}

/// The score region adding the additive masks (captured tensors) and the
/// mask region reading the boolean one, at (b, h, i, j).
void addRegions(PatternRewriter &rewriter, AttentionOp op, const Scores &s) {
  Location loc = op.getLoc();
  Type index = rewriter.getIndexType(), f32 = rewriter.getF32Type();
  auto makeBlock = [&](Region &region, bool score) {
    SmallVector<Type> types;
    if (score)
      types.push_back(f32);
    types.append(4, index);
    Block *block = rewriter.createBlock(&region, {}, types,
                                        SmallVector<Location>(types.size(), loc));
    return block;
  };
  OpBuilder::InsertionGuard guard(rewriter);
  if (!s.additive.empty()) {
    Block *block = makeBlock(op.getScore(), true);
    Value x = block->getArgument(0);
    ValueRange idx = block->getArguments().drop_front();
    for (Value m : s.additive) {
      Value e = tensor::ExtractOp::create(rewriter, loc, m, idx);
      if (e.getType() != f32)
        e = arith::ExtFOp::create(rewriter, loc, f32, e);
      x = arith::AddFOp::create(rewriter, loc, x, e);
    }
    YieldOp::create(rewriter, loc, x);
  }
  if (s.boolMask) {
    Block *block = makeBlock(op.getMask(), false);
    Value keep = tensor::ExtractOp::create(rewriter, loc, s.boolMask, block->getArguments());
    YieldOp::create(rewriter, loc, keep);
  }
}

struct RaiseAttention : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp root, PatternRewriter &rewriter) const override {
    std::optional<Scores> s = match(root);
    if (!s)
      return failure();
    Location loc = root.getLoc();
    Value q = transposeBHSD(rewriter, loc, s->q), v = transposeBHSD(rewriter, loc, s->v);
    Value k = s->kTransposed
                  ? transposeKT(rewriter, loc, s->k)
                  : transposeBHSD(rewriter, loc, s->k);
    auto rootType = cast<RankedTensorType>(root.getResult(0).getType());
    Type outElem = rootType.getElementType();
    Type inElem = cast<ShapedType>(q.getType()).getElementType();
    if (outElem != inElem && !outElem.isF32())
      return failure();
    SmallVector<OpFoldResult> outSizes = tensor::getMixedSizes(rewriter, loc, root.getResult(0));
    std::swap(outSizes[1], outSizes[2]);
    Value outInit = tensor::EmptyOp::create(rewriter, loc, outSizes, outElem);
    auto op = AttentionOp::create(rewriter, loc, q, k, v, outInit, Value(),
                                  s->causal ? CausalKind::top_left : CausalKind::none);
    op.setScaleAttr(rewriter.getF32FloatAttr(s->scale));
    addRegions(rewriter, op, *s);
    rewriter.replaceOp(root, transposeBHSD(rewriter, loc, op.getResult(0)));
    return success();
  }

private:
  /// K^T [B, H, D, Sk] as [B, Sk, H, D].
  static Value transposeKT(PatternRewriter &rewriter, Location loc, Value t) {
    SmallVector<OpFoldResult> s = tensor::getMixedSizes(rewriter, loc, t);
    SmallVector<OpFoldResult> sizes{s[0], s[3], s[1], s[2]};
    Value init = tensor::EmptyOp::create(rewriter, loc, sizes,
                                         cast<ShapedType>(t.getType()).getElementType());
    return linalg::TransposeOp::create(rewriter, loc, t, init, ArrayRef<int64_t>{0, 3, 1, 2})
        .getResult()[0];
  }

  static std::optional<Scores> match(linalg::GenericOp root) {
    std::optional<Contraction> pv = matchContraction(root.getResult(0));
    bool vTransposed = false;
    if (!pv || !isBatchedRowContraction(*pv, vTransposed) || !vTransposed)
      return std::nullopt;
    Value x = matchSoftmax(pv->a);
    if (!x)
      return std::nullopt;
    Scores s;
    s.v = pv->b;
    // The steps between S and X, innermost last.
    while (true) {
      auto g = x.getDefiningOp<linalg::GenericOp>();
      if (!g || !isElementwise4d(g))
        break;
      Value before = x;
      if (!absorbStep(g, s, x))
        return std::nullopt;
      if (x == before)
        return std::nullopt;
    }
    std::optional<Contraction> qk = matchContraction(x);
    if (!qk || !isBatchedRowContraction(*qk, s.kTransposed) || !std::isfinite(s.scale))
      return std::nullopt;
    s.q = qk->a;
    s.k = qk->b;
    auto elem = [](Value t) { return cast<ShapedType>(t.getType()).getElementType(); };
    if (elem(s.q) != elem(s.k) || elem(s.q) != elem(s.v) ||
        !(elem(s.q).isF16() || elem(s.q).isBF16() || elem(s.q).isF32()))
      return std::nullopt;
    return s;
  }
};

struct FlashAttnRaisePass : public flashattn::impl::FlashAttnRaiseBase<FlashAttnRaisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFlashAttnRaisePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace

void mlir::flashattn::populateFlashAttnRaisePatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseAttention>(patterns.getContext());
}
