//===- Raise.cpp - flashattn-raise ----------------------------------------===//
//
// Attention written in upstream linalg on tensors becomes
// flashattn.attention:
//
//   S = Q K^T    a contraction over the head dim (linalg.generic with any
//                transposing maps, linalg.matmul / batch_matmul /
//                contract; a batch_matmul over collapse_shape [[0, 1], ...]
//                of 4-D tensors is seen as the 4-D contraction)
//   X = f(S)     elementwise steps (Scores.h): the scale, additive masks,
//                boolean / causal selects, casts
//   P = softmax over the keys of X (Match.h)
//   O = P V      a contraction over the keys
//
// The score chain has 2 to 4 dims: up to two batch-like dims (batch and
// heads, in either order), the queries and the keys (last). Q, K, V and O
// may be in any layout; K and V may repeat kv heads (GQA: a broadcast over
// a new dim after the heads, collapsed into them), which the op reads
// unrepeated. O is replaced by the op's result moved back into O's layout.
// Anything else leaves the IR unchanged.
//
//===----------------------------------------------------------------------===//

#include "Match.h"
#include "Scores.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "flashattn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::flashattn {
#define GEN_PASS_DEF_FLASHATTNRAISE
#include "flashattn/Transforms/Passes.h.inc"
} // namespace mlir::flashattn

using namespace mlir;
using namespace mlir::flashattn;
using namespace mlir::flashattn::raise;

namespace {
/// The op's roles of a dim, in the op's [B, S, H, D] order.
enum Role : unsigned { Batch = 0, Seq = 1, Head = 2, Dim = 3 };

/// A tensor and the chain dim of each of its dims (-1: its head dim).
struct Operand {
  Value tensor;
  SmallVector<int64_t> chain;
};

/// Everything the rewrite needs.
struct Match {
  Operand q, k, v, out;
  unsigned rank = 0, queryDim = 0;
  std::optional<unsigned> batchDim, headDim;
  Scores scores;
  bool outLifted = false;
};

/// The dim of `o` holding chain dim `chain` (-1: its head dim).
int64_t dimOf(const Operand &o, int64_t chain) {
  return llvm::find(o.chain, chain) - o.chain.begin();
}

/// The chain dims of the tensor dims read by `loops`, given the chain dim
/// of each loop (-1 for none).
SmallVector<int64_t> chainOf(ArrayRef<int64_t> loops, const DenseMap<int64_t, int64_t> &chainOfLoop) {
  SmallVector<int64_t> dims;
  for (int64_t l : loops)
    dims.push_back(chainOfLoop.lookup_or(l, -1));
  return dims;
}

/// Whether `dims` holds every chain dim but `except` once and one -1.
bool coversChainBut(ArrayRef<int64_t> dims, unsigned rank, unsigned except) {
  if (dims.size() != rank || llvm::count(dims, -1) != 1)
    return false;
  for (unsigned c = 0; c < rank; ++c)
    if (llvm::count(dims, c) != (c == except ? 0 : 1))
      return false;
  return true;
}

/// GQA: `t` = collapse_shape of a broadcast of a tensor over a new dim
/// right after dim `pos` (the kv heads), possibly through expand_shape.
/// Returns that tensor (kv heads at `pos`), or null.
Value unrepeated(Value t, unsigned pos) {
  Value t5 = collapsedPair(t, pos);
  if (!t5)
    return {};
  unsigned rank5 = cast<ShapedType>(t5.getType()).getRank();
  auto [src, map] = peelBroadcasts(t5, AffineMap::getMultiDimIdentityMap(rank5, t.getContext()));
  auto srcType = cast<ShapedType>(src.getType());
  if (src == t5 || srcType.getRank() != rank5 - 1)
    return {};
  for (unsigned d = 0; d < rank5 - 1; ++d) {
    unsigned expected = d <= pos ? d : d + 1;
    AffineExpr e = map.getResult(d);
    // Only the new dim is broadcast: every other dim read as itself.
    auto dim = dyn_cast<AffineDimExpr>(e);
    if (!dim || dim.getPosition() != expected)
      return {};
  }
  return src;
}

/// The P V contraction at the root, with P the softmax of the chain.
std::optional<Match> matchPV(linalg::LinalgOp root, Value &x) {
  std::optional<Contraction> pv = matchContraction(root->getResult(0), /*liftRoot=*/true);
  if (!pv)
    return std::nullopt;
  for (bool pFirst : {true, false}) {
    Value p = pFirst ? pv->a : pv->b, v = pFirst ? pv->b : pv->a;
    ArrayRef<int64_t> pLoops = pFirst ? pv->aLoops : pv->bLoops;
    ArrayRef<int64_t> vLoops = pFirst ? pv->bLoops : pv->aLoops;
    unsigned rank = pLoops.size();
    if (rank < 2 || rank > 4 || pLoops.back() != pv->reduction || !(x = matchSoftmax(p, rank)))
      continue;
    DenseMap<int64_t, int64_t> chainOfLoop;
    for (auto [c, l] : llvm::enumerate(pLoops))
      chainOfLoop[l] = c;
    Match m;
    m.rank = rank;
    m.v = Operand{v, chainOf(vLoops, chainOfLoop)};
    m.out = Operand{root->getResult(0), chainOf(pv->outLoops, chainOfLoop)};
    m.outLifted = pv->lifted;
    // The query: the chain dim V does not read.
    for (unsigned c = 0; c + 1 < rank; ++c)
      if (!llvm::is_contained(m.v.chain, c))
        m.queryDim = c;
    if (!coversChainBut(m.v.chain, rank, m.queryDim) ||
        !coversChainBut(m.out.chain, rank, rank - 1))
      return std::nullopt;
    // V's and O's head dims are one loop.
    int64_t dv = vLoops[dimOf(m.v, -1)];
    if (pv->outLoops[dimOf(m.out, -1)] != dv)
      return std::nullopt;
    return m;
  }
  return std::nullopt;
}

/// The Q K^T contraction producing S, in the chain's dims.
bool matchQK(Value s, Match &m) {
  std::optional<Contraction> qk = matchContraction(s, /*liftRoot=*/false);
  if (!qk || qk->outLoops.size() != m.rank)
    return false;
  DenseMap<int64_t, int64_t> chainOfLoop;
  for (auto [c, l] : llvm::enumerate(qk->outLoops))
    chainOfLoop[l] = c;
  Operand a{qk->a, chainOf(qk->aLoops, chainOfLoop)}, b{qk->b, chainOf(qk->bLoops, chainOfLoop)};
  if (!llvm::is_contained(a.chain, m.queryDim))
    std::swap(a, b);
  m.q = a;
  m.k = b;
  return coversChainBut(m.q.chain, m.rank, m.rank - 1) &&
         coversChainBut(m.k.chain, m.rank, m.queryDim);
}

/// Q, K and V seen through transposes.
void peelOperandTransposes(Match &m) {
  for (Operand *o : {&m.q, &m.k, &m.v})
    o->tensor = peelTransposes(o->tensor, o->chain);
}

/// Names the batch-like chain dims and reads K / V unrepeated under GQA.
void assignHeads(Match &m) {
  SmallVector<unsigned> batchLike;
  for (unsigned c = 0; c + 1 < m.rank; ++c)
    if (c != m.queryDim)
      batchLike.push_back(c);
  for (unsigned c : batchLike) {
    Value k = unrepeated(m.k.tensor, dimOf(m.k, c)), v = unrepeated(m.v.tensor, dimOf(m.v, c));
    // K and V with as many kv heads, repeated over one dim.
    if (k && v && sameSize(k, dimOf(m.k, c), v, dimOf(m.v, c))) {
      m.k.tensor = k;
      m.v.tensor = v;
      m.headDim = c;
      break;
    }
  }
  for (unsigned c : batchLike) {
    if (m.headDim == c)
      continue;
    if (!m.batchDim)
      m.batchDim = c;
    else if (!m.headDim)
      m.headDim = c;
  }
}

/// The kept keys as the op says them: right = 0 alone is top-left causal;
/// any other range is a window, bottom-right aligned in the op, so only
/// when Sq = Sk. Every row must keep its diagonal key.
bool isTopLeftCausal(const KeyRange &keys) { return keys.right == 0 && !keys.left; }

bool keyRangeRepresentable(const Match &m) {
  const KeyRange &keys = m.scores.keys;
  if (!keys.any() || isTopLeftCausal(keys))
    return true;
  if (keys.left.value_or(0) < 0 || keys.right.value_or(0) < 0)
    return false;
  auto sq = cast<ShapedType>(m.q.tensor.getType()).getDimSize(dimOf(m.q, m.queryDim));
  auto sk = cast<ShapedType>(m.k.tensor.getType()).getDimSize(dimOf(m.k, m.rank - 1));
  return !ShapedType::isDynamic(sq) && sq == sk;
}

std::optional<Match> matchAttention(linalg::LinalgOp root) {
  Value x;
  std::optional<Match> m = matchPV(root, x);
  if (!m)
    return std::nullopt;
  ChainDims dims{m->rank, m->queryDim};
  auto isQK = [&](Value s) { return matchContraction(s, false).has_value(); };
  Value s = matchScoreSteps(x, dims, m->scores, isQK);
  if (!s || !matchQK(s, *m))
    return std::nullopt;
  peelOperandTransposes(*m);
  assignHeads(*m);
  auto elem = [](Value t) { return cast<ShapedType>(t.getType()).getElementType(); };
  Type e = elem(m->q.tensor);
  if (e != elem(m->k.tensor) || e != elem(m->v.tensor) || !(e.isF16() || e.isBF16() || e.isF32()))
    return std::nullopt;
  Type outElem = elem(m->out.tensor);
  if (outElem != e && !outElem.isF32())
    return std::nullopt;
  if (!keyRangeRepresentable(*m))
    return std::nullopt;
  return m;
}

//===----------------------------------------------------------------------===//
// Rewrite
//===----------------------------------------------------------------------===//

/// The op's role of each dim of `o` (the sequence dim is the query or the
/// keys, whichever `o` has).
SmallVector<Role> rolesOf(const Operand &o, const Match &m) {
  SmallVector<Role> roles;
  for (int64_t c : o.chain)
    roles.push_back(c < 0                 ? Dim
                    : c == m.batchDim     ? Batch
                    : c == m.headDim      ? Head
                                          : Seq);
  return roles;
}

/// The reassociation of a 4-D [B, S, H, D] tensor onto its dims in
/// `present` (unit dims for the others join a neighbour).
SmallVector<ReassociationIndices> unitGroups(ArrayRef<bool> present) {
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices pending;
  for (unsigned d = 0; d < 4; ++d) {
    pending.push_back(d);
    if (present[d]) {
      groups.push_back(pending);
      pending.clear();
    }
  }
  if (!pending.empty())
    groups.back().append(pending.begin(), pending.end());
  return groups;
}

Value transposeIfNeeded(OpBuilder &b, Location loc, Value t, ArrayRef<int64_t> perm) {
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return t;
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, t), permuted;
  for (int64_t p : perm)
    permuted.push_back(sizes[p]);
  Value init = tensor::EmptyOp::create(b, loc, permuted,
                                       cast<ShapedType>(t.getType()).getElementType());
  return linalg::TransposeOp::create(b, loc, t, init, perm).getResult()[0];
}

/// `o` as the op reads it: [B, S, H, D] (unit dims for absent roles).
Value toOpLayout(OpBuilder &b, Location loc, const Operand &o, const Match &m) {
  SmallVector<Role> roles = rolesOf(o, m);
  SmallVector<int64_t> perm;
  SmallVector<bool> present(4, false);
  for (unsigned r = 0; r < 4; ++r)
    if (auto it = llvm::find(roles, Role(r)); it != roles.end()) {
      perm.push_back(it - roles.begin());
      present[r] = true;
    }
  Value t = transposeIfNeeded(b, loc, o.tensor, perm);
  if (perm.size() == 4)
    return t;
  auto type = cast<RankedTensorType>(t.getType());
  SmallVector<int64_t> shape;
  for (unsigned r = 0, d = 0; r < 4; ++r)
    shape.push_back(present[r] ? type.getDimSize(d++) : 1);
  return tensor::ExpandShapeOp::create(b, loc, type.clone(shape), t, unitGroups(present));
}

/// The op's result [B, Sq, H, Dv] in the root's layout.
Value fromOpLayout(OpBuilder &b, Location loc, Value result, const Match &m, Type rootType) {
  SmallVector<Role> roles = rolesOf(m.out, m);
  SmallVector<bool> present(4, false);
  for (Role r : roles)
    present[r] = true;
  Value t = result;
  if (roles.size() < 4)
    t = tensor::CollapseShapeOp::create(b, loc, t, unitGroups(present));
  // t's dims are the present roles in order; O's dim d has roles[d].
  SmallVector<int64_t> perm;
  for (Role r : roles)
    perm.push_back(llvm::count_if(roles, [&](Role o) { return o < r; }));
  t = transposeIfNeeded(b, loc, t, perm);
  if (m.outLifted)
    t = tensor::CollapseShapeOp::create(b, loc, t,
                                        SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}});
  if (t.getType() != rootType)
    t = tensor::CastOp::create(b, loc, rootType, t);
  return t;
}

/// The region's index values for a read at the chain's loops.
SmallVector<Value> indicesOf(OpBuilder &b, Location loc, const Read &read, ValueRange bhij,
                             const Match &m) {
  SmallVector<Value> indices;
  for (AffineExpr e : read.map.getResults()) {
    if (auto c = dyn_cast<AffineConstantExpr>(e)) {
      indices.push_back(arith::ConstantIndexOp::create(b, loc, c.getValue()));
      continue;
    }
    unsigned chain = cast<AffineDimExpr>(e).getPosition();
    unsigned arg = chain == m.batchDim ? 0 : chain == m.headDim ? 1 : chain == m.queryDim ? 2 : 3;
    indices.push_back(bhij[arg]);
  }
  return indices;
}

Value readAt(OpBuilder &b, Location loc, const Read &read, ValueRange bhij, const Match &m) {
  return tensor::ExtractOp::create(b, loc, read.tensor, indicesOf(b, loc, read, bhij, m));
}

Value keepAt(OpBuilder &b, Location loc, const Read &read, bool inverted, ValueRange bhij,
             const Match &m) {
  Value keep = readAt(b, loc, read, bhij, m);
  if (inverted)
    keep = arith::XOrIOp::create(b, loc, keep, arith::ConstantIntOp::create(b, loc, 1, 1));
  return keep;
}

Value toF32(OpBuilder &b, Location loc, Value x) {
  auto type = cast<FloatType>(x.getType());
  Type f32 = b.getF32Type();
  if (type.getWidth() < 32)
    return arith::ExtFOp::create(b, loc, f32, x);
  if (type.getWidth() > 32)
    return arith::TruncFOp::create(b, loc, f32, x);
  return x;
}

/// The score region (the terms in order) and the mask region (the boolean
/// masks' conjunction).
void addRegions(PatternRewriter &rewriter, AttentionOp op, const Match &m) {
  Location loc = op.getLoc();
  Type index = rewriter.getIndexType(), f32 = rewriter.getF32Type();
  OpBuilder::InsertionGuard guard(rewriter);
  const Scores &s = m.scores;
  if (!s.terms.empty()) {
    SmallVector<Type> types{f32, index, index, index, index};
    Block *block = rewriter.createBlock(&op.getScore(), {}, types,
                                        SmallVector<Location>(types.size(), loc));
    Value x = block->getArgument(0);
    ValueRange bhij = block->getArguments().drop_front();
    for (const ScoreTerm &t : s.terms) {
      if (t.kind == ScoreTerm::Add) {
        x = arith::AddFOp::create(rewriter, loc, x, toF32(rewriter, loc, readAt(rewriter, loc, t.read, bhij, m)));
        continue;
      }
      Value keep = keepAt(rewriter, loc, t.read, t.inverted, bhij, m);
      Value c = arith::ConstantOp::create(rewriter, loc, rewriter.getF32FloatAttr(t.value));
      x = arith::SelectOp::create(rewriter, loc, keep, x, c);
    }
    YieldOp::create(rewriter, loc, x);
  }
  if (!s.masks.empty()) {
    SmallVector<Type> types(4, index);
    Block *block = rewriter.createBlock(&op.getMask(), {}, types,
                                        SmallVector<Location>(types.size(), loc));
    Value keep;
    for (const BoolMask &mask : s.masks) {
      Value k = keepAt(rewriter, loc, mask.read, mask.inverted, block->getArguments(), m);
      keep = keep ? arith::AndIOp::create(rewriter, loc, keep, k) : k;
    }
    YieldOp::create(rewriter, loc, keep);
  }
}

struct RaiseAttention : OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(linalg::LinalgOp root, PatternRewriter &rewriter) const override {
    if (root->getNumResults() != 1 || !root.hasPureTensorSemantics())
      return failure();
    std::optional<Match> m = matchAttention(root);
    if (!m)
      return failure();
    Location loc = root.getLoc();
    Value q = toOpLayout(rewriter, loc, m->q, *m), k = toOpLayout(rewriter, loc, m->k, *m);
    Value v = toOpLayout(rewriter, loc, m->v, *m);
    SmallVector<OpFoldResult> outSizes = tensor::getMixedSizes(rewriter, loc, q);
    outSizes[3] = tensor::getMixedSize(rewriter, loc, v, 3);
    Type outElem = cast<ShapedType>(root->getResult(0).getType()).getElementType();
    Value outInit = tensor::EmptyOp::create(rewriter, loc, outSizes, outElem);
    const KeyRange &keys = m->scores.keys;
    auto op = AttentionOp::create(rewriter, loc, q, k, v, outInit, Value(),
                                  isTopLeftCausal(keys) ? CausalKind::top_left : CausalKind::none);
    op.setScaleAttr(rewriter.getF32FloatAttr(m->scores.scale));
    if (keys.any() && !isTopLeftCausal(keys))
      op.setWindowSizeAttr(
          rewriter.getDenseI64ArrayAttr({keys.left.value_or(-1), keys.right.value_or(-1)}));
    addRegions(rewriter, op, *m);
    rewriter.replaceOp(root, fromOpLayout(rewriter, loc, op.getResult(0), *m,
                                          root->getResult(0).getType()));
    return success();
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
