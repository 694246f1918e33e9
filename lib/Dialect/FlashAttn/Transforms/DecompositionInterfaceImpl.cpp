//===- DecompositionInterfaceImpl.cpp - flashattn.attention in linalg -----===//
//
// linalg::AggregatedOpInterface for flashattn.attention: the tensor form of
// a dense op decomposes into linalg.generic ops that compute the formula of
// docs/SEMANTICS.md unfused, in f32, for a compiler without flashattn's
// lowerings (upstream's linalg lowering runs the result):
//
//   S[b, h, i, j]   = sum_d q[b, i, h, d] k[b, j, h / G, d]
//   X[b, h, i, j]   = mask(b, h, i, j) ? score(softcap(scale S) + alibi) : -inf
//   m[b, h, i]      = max_j X                  (0 in the exponents while -inf)
//   P[b, h, i, j]   = exp(X - m),  l[b, h, i] = sum_j P
//   O[b, i, h, e]   = sum_j P[b, h, i, j] v[b, j, h / G, e]
//   out[b, i, h, e] = l > 0 ? O / l : 0,   lse[b, h, i] = l > 0 ? m + log l : -inf
//
// varlen, paged, seqused_k, kv-cache append and the split-KV partial form
// do not decompose (the op says which).
//
//===----------------------------------------------------------------------===//

#include "flashattn/Dialect/FlashAttn/Transforms/DecompositionInterfaceImpl.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace mlir::flashattn;

namespace {
using Body = llvm::function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// Builds the decomposition of one dense attention op on tensors.
class AttentionDecomposer {
public:
  AttentionDecomposer(AttentionOp op, OpBuilder &b) : op(op), b(b), loc(op.getLoc()) {}

  /// The op's replacement values (out, then lse when present), or failure
  /// after a diagnostic naming what does not decompose.
  FailureOr<SmallVector<Value>> build();

private:
  LogicalResult check();
  void sizes();
  AffineMap map(unsigned dims, ArrayRef<AffineExpr> results) {
    return AffineMap::get(dims, 0, results, b.getContext());
  }
  AffineExpr d(unsigned i) { return b.getAffineDimExpr(i); }
  AffineExpr kvHead() { return groups == 1 ? d(1) : d(1).floorDiv(groups); }
  Value filled(ArrayRef<OpFoldResult> shape, double value);
  Value generic(Value init, ValueRange ins, ArrayRef<AffineMap> maps, unsigned reductions,
                Body body);
  Value scores();
  Value masked(Value s);
  Value modify(OpBuilder &nb, Location l, Value s, Value slope, ValueRange idx);
  Value allowed(OpBuilder &nb, Location l, ValueRange idx);
  Value rowReduce(Value x, bool max);
  Value probabilities(Value x, Value m);
  Value weighted(Value p);
  Value normalize(Value o, Value l);
  Value logSumExp(Value m, Value l);

  AttentionOp op;
  OpBuilder &b;
  Location loc;
  Type f32;
  int64_t groups = 1;
  OpFoldResult batch, sq, sk, hq, dv;
  Value offset; ///< Sk - Sq (index)
};
} // namespace

LogicalResult AttentionDecomposer::check() {
  auto fail = [&](StringRef what) {
    return op.emitOpError() << "does not decompose into linalg: " << what;
  };
  if (!op.hasPureTensorSemantics())
    return fail("it is on memrefs (decompose the tensor form, then bufferize)");
  StringRef feature = op.getNonDenseFeature();
  if (op.isSplitPartial())
    return fail("the split-KV partial form (decompose before flashattn-split-kv)");
  if (!feature.empty())
    return fail(feature);
  int64_t hqs = op.getNumQHeads(), hkvs = op.getNumKVHeads();
  if (ShapedType::isDynamic(hqs) || ShapedType::isDynamic(hkvs))
    return fail("dynamic head counts (the kv head h / G needs a static G)");
  groups = hqs / hkvs;
  return success();
}

FailureOr<SmallVector<Value>> AttentionDecomposer::build() {
  if (failed(check()))
    return failure();
  f32 = b.getF32Type();
  sizes();
  Value x = masked(scores());
  Value m = rowReduce(x, /*max=*/true);
  Value p = probabilities(x, m);
  Value l = rowReduce(p, /*max=*/false);
  SmallVector<Value> results{normalize(weighted(p), l)};
  if (op.getLse())
    results.push_back(logSumExp(m, l));
  return results;
}

void AttentionDecomposer::sizes() {
  auto dim = [&](Value t, int64_t i) { return tensor::getMixedSize(b, loc, t, i); };
  batch = dim(op.getQ(), 0);
  sq = dim(op.getQ(), 1);
  hq = dim(op.getQ(), 2);
  sk = dim(op.getK(), 1);
  dv = dim(op.getV(), 3);
  // A tile of query rows aligns to seqlen_q queries (docs/SEMANTICS.md).
  Value sqV = op.getSeqlenQ() ? op.getSeqlenQ() : getValueOrCreateConstantIndexOp(b, loc, sq);
  Value skV = getValueOrCreateConstantIndexOp(b, loc, sk);
  offset = arith::SubIOp::create(b, loc, skV, sqV);
}

Value AttentionDecomposer::filled(ArrayRef<OpFoldResult> shape, double value) {
  Value empty = tensor::EmptyOp::create(b, loc, shape, f32);
  Value c = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  return linalg::FillOp::create(b, loc, c, empty).getResult(0);
}

/// A linalg.generic over the init's loops (parallel, then `reductions`
/// reduction loops last), `maps` for ins then init.
Value AttentionDecomposer::generic(Value init, ValueRange ins, ArrayRef<AffineMap> maps,
                                   unsigned reductions, Body body) {
  unsigned loops = maps.back().getNumDims();
  SmallVector<utils::IteratorType> iterators(loops - reductions, utils::IteratorType::parallel);
  iterators.append(reductions, utils::IteratorType::reduction);
  auto g = linalg::GenericOp::create(
      b, loc, init.getType(), ins, init, maps, iterators,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(nb, l, body(nb, l, args));
      });
  return g.getResult(0);
}

/// An f16 / bf16 element widened to f32 (f32 as it is).
static Value toF32(OpBuilder &nb, Location l, Value x) {
  Type f32 = nb.getF32Type();
  return x.getType() == f32 ? x : arith::ExtFOp::create(nb, l, f32, x).getResult();
}

/// S [B, Hq, Sq, Sk] f32 over loops (b, h, i, j, d).
Value AttentionDecomposer::scores() {
  Value init = filled({batch, hq, sq, sk}, 0.0);
  SmallVector<AffineMap> maps = {map(5, {d(0), d(2), d(1), d(4)}),
                                 map(5, {d(0), d(3), kvHead(), d(4)}),
                                 map(5, {d(0), d(1), d(2), d(3)})};
  return generic(init, {op.getQ(), op.getK()}, maps, 1,
                 [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                   Value prod = arith::MulFOp::create(nb, l, toF32(nb, l, a[0]),
                                                      toF32(nb, l, a[1]));
                   return arith::AddFOp::create(nb, l, a[2], prod);
                 });
}

/// The score modifiers and masks, elementwise over (b, h, i, j).
Value AttentionDecomposer::masked(Value s) {
  Value init = tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{batch, hq, sq, sk}, f32);
  SmallVector<Value> ins{s};
  SmallVector<AffineMap> maps{map(4, {d(0), d(1), d(2), d(3)})};
  if (Value slopes = op.getAlibiSlopes()) {
    ins.push_back(slopes);
    auto rank = cast<ShapedType>(slopes.getType()).getRank();
    maps.push_back(rank == 1 ? map(4, {d(1)}) : map(4, {d(0), d(1)}));
  }
  maps.push_back(map(4, {d(0), d(1), d(2), d(3)}));
  bool alibi = static_cast<bool>(op.getAlibiSlopes());
  return generic(init, ins, maps, 0, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
    SmallVector<Value> idx;
    for (int64_t i = 0; i < 4; ++i)
      idx.push_back(linalg::IndexOp::create(nb, l, i));
    if (Value start = op.getQStart()) // row r is query position q_start + r
      idx[2] = arith::AddIOp::create(nb, l, idx[2], start);
    Value x = modify(nb, l, a[0], alibi ? a[1] : Value(), idx);
    Value negInf = arith::ConstantOp::create(
        nb, l, nb.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
    Value ok = allowed(nb, l, idx);
    return ok ? arith::SelectOp::create(nb, l, ok, x, negInf) : x;
  });
}

/// scale, softcap, ALiBi, then the score region (docs/SEMANTICS.md).
Value AttentionDecomposer::modify(OpBuilder &nb, Location l, Value s, Value slope,
                                  ValueRange idx) {
  auto cst = [&](double v) { return arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(v)); };
  Value x = arith::MulFOp::create(nb, l, s, cst(op.getEffectiveScale()));
  double cap = op.getSoftcap() ? op.getSoftcap()->convertToDouble() : 0.0;
  if (cap > 0) {
    Value t = math::TanhOp::create(nb, l, arith::DivFOp::create(nb, l, x, cst(cap)));
    x = arith::MulFOp::create(nb, l, t, cst(cap));
  }
  if (slope) {
    // -slope |i + Sk - Sq - j|
    Value rel = arith::SubIOp::create(nb, l, arith::AddIOp::create(nb, l, idx[2], offset),
                                      idx[3]);
    Value dist = math::AbsIOp::create(nb, l, rel);
    Value distF = arith::SIToFPOp::create(
        nb, l, f32, arith::IndexCastOp::create(nb, l, nb.getI64Type(), dist));
    x = arith::SubFOp::create(nb, l, x, arith::MulFOp::create(nb, l, slope, distF));
  }
  if (!op.getScore().empty()) {
    SmallVector<Value> args{x};
    args.append(idx.begin(), idx.end());
    x = inlineRegion(nb, op.getScore(), args);
  }
  return x;
}

/// causal, window and the mask region and-ed; null when every key is allowed.
Value AttentionDecomposer::allowed(OpBuilder &nb, Location l, ValueRange idx) {
  Value ok;
  auto both = [&](Value c) { ok = ok ? arith::AndIOp::create(nb, l, ok, c).getResult() : c; };
  Value i = idx[2], j = idx[3];
  Value diag = arith::AddIOp::create(nb, l, i, offset); // i + Sk - Sq
  auto le = [&](Value a, Value c) {
    return arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sle, a, c).getResult();
  };
  auto plus = [&](Value a, int64_t n) {
    return arith::AddIOp::create(nb, l, a, arith::ConstantIndexOp::create(nb, l, n))
        .getResult();
  };
  if (op.getCausal() == CausalKind::top_left)
    both(le(j, i));
  if (op.getCausal() == CausalKind::bottom_right)
    both(le(j, diag));
  auto [left, right] = op.getWindow();
  // A side of 2^62 keys or more excludes no key (docs/SEMANTICS.md; as
  // flashattn-tile): positions and Sk - Sq stay below 2^62 in magnitude.
  constexpr int64_t kUnbounded = int64_t(1) << 62;
  if (left >= kUnbounded)
    left = -1;
  if (right >= kUnbounded)
    right = -1;
  if (left >= 0)
    both(le(plus(diag, -left), j));
  if (right >= 0)
    both(le(j, plus(diag, right)));
  if (!op.getMask().empty())
    both(inlineRegion(nb, op.getMask(), idx));
  return ok;
}

/// m = max_j x (init -inf) or l = sum_j x (init 0), [B, Hq, Sq].
Value AttentionDecomposer::rowReduce(Value x, bool max) {
  Value init = filled({batch, hq, sq}, max ? -std::numeric_limits<double>::infinity() : 0.0);
  SmallVector<AffineMap> maps = {map(4, {d(0), d(1), d(2), d(3)}),
                                 map(4, {d(0), d(1), d(2)})};
  return generic(init, x, maps, 1, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
    if (max)
      return arith::MaximumFOp::create(nb, l, a[0], a[1]);
    return arith::AddFOp::create(nb, l, a[0], a[1]);
  });
}

/// 0 where m is -inf (a row with nothing allowed so far), else m.
static Value safeMax(OpBuilder &nb, Location l, Value m) {
  Type f32 = nb.getF32Type();
  Value negInf = arith::ConstantOp::create(
      nb, l, nb.getFloatAttr(f32, -std::numeric_limits<float>::infinity()));
  Value zero = arith::ConstantOp::create(nb, l, nb.getFloatAttr(f32, 0.0));
  Value empty = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, m, negInf);
  return arith::SelectOp::create(nb, l, empty, zero, m);
}

Value AttentionDecomposer::probabilities(Value x, Value m) {
  Value init = tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{batch, hq, sq, sk}, f32);
  SmallVector<AffineMap> maps = {map(4, {d(0), d(1), d(2), d(3)}), map(4, {d(0), d(1), d(2)}),
                                 map(4, {d(0), d(1), d(2), d(3)})};
  return generic(init, {x, m}, maps, 0, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
    Value shifted = arith::SubFOp::create(nb, l, a[0], safeMax(nb, l, a[1]));
    return math::ExpOp::create(nb, l, shifted);
  });
}

/// O [B, Sq, Hq, Dv] f32 over loops (b, h, i, e, j).
Value AttentionDecomposer::weighted(Value p) {
  Value init = filled({batch, sq, hq, dv}, 0.0);
  SmallVector<AffineMap> maps = {map(5, {d(0), d(1), d(2), d(4)}),
                                 map(5, {d(0), d(4), kvHead(), d(3)}),
                                 map(5, {d(0), d(2), d(1), d(3)})};
  return generic(init, {p, op.getV()}, maps, 1,
                 [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                   Value prod = arith::MulFOp::create(nb, l, a[0], toF32(nb, l, a[1]));
                   return arith::AddFOp::create(nb, l, a[2], prod);
                 });
}

/// out = l > 0 ? O / l : 0, in out's element type, into the op's out.
Value AttentionDecomposer::normalize(Value o, Value l) {
  Value out = op.getOut();
  Type element = cast<ShapedType>(out.getType()).getElementType();
  SmallVector<AffineMap> maps = {map(4, {d(0), d(1), d(2), d(3)}), map(4, {d(0), d(2), d(1)}),
                                 map(4, {d(0), d(1), d(2), d(3)})};
  return generic(out, {o, l}, maps, 0, [&](OpBuilder &nb, Location lc, ValueRange a) -> Value {
    Value zero = arith::ConstantOp::create(nb, lc, nb.getF32FloatAttr(0.0));
    Value some = arith::CmpFOp::create(nb, lc, arith::CmpFPredicate::OGT, a[1], zero);
    Value r = arith::SelectOp::create(nb, lc, some, arith::DivFOp::create(nb, lc, a[0], a[1]),
                                      zero);
    return element == f32 ? r : arith::TruncFOp::create(nb, lc, element, r).getResult();
  });
}

/// lse = l > 0 ? m + log l : -inf, into the op's lse.
Value AttentionDecomposer::logSumExp(Value m, Value l) {
  SmallVector<AffineMap> maps(3, map(3, {d(0), d(1), d(2)}));
  return generic(op.getLse(), {m, l}, maps, 0,
                 [&](OpBuilder &nb, Location lc, ValueRange a) -> Value {
                   Value zero = arith::ConstantOp::create(nb, lc, nb.getF32FloatAttr(0.0));
                   Value negInf = arith::ConstantOp::create(
                       nb, lc, nb.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
                   Value some =
                       arith::CmpFOp::create(nb, lc, arith::CmpFPredicate::OGT, a[1], zero);
                   Value lse = arith::AddFOp::create(nb, lc, safeMax(nb, lc, a[0]),
                                                     math::LogOp::create(nb, lc, a[1]));
                   return arith::SelectOp::create(nb, lc, some, lse, negInf);
                 });
}

namespace {
struct AttentionDecomposition
    : linalg::AggregatedOpInterface::ExternalModel<AttentionDecomposition, AttentionOp> {
  FailureOr<SmallVector<Value>> decomposeOperation(Operation *op, OpBuilder &b) const {
    return AttentionDecomposer(cast<AttentionOp>(op), b).build();
  }
};
} // namespace

void mlir::flashattn::registerDecompositionInterfaceExternalModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, FlashAttnDialect *) {
    AttentionOp::attachInterface<AttentionDecomposition>(*ctx);
  });
}
