//===- TilingInterfaceImpl.cpp - flashattn.attention as a tileable op -----===//
//
// TilingInterface for the tensor form of a dense flashattn.attention: the
// iteration domain is (batch, kv head, query row), all parallel. A tile
// (b0 + [0, bs), g0 + [0, gs), i0 + [0, is)) is the same op on the slices
// q[b0:bs, i0:is, G g0 : G gs, :], k / v[b0:bs, :, g0:gs, :], alibi_slopes'
// heads (and batch) and out / lse likewise: the G query heads of each kv
// head stay together, so GQA needs no kv head twice. A row tile of an op
// whose result depends on query positions (causal, window, ALiBi, a region
// reading %i) carries q_start = i0 and seqlen_q = Sq, so that its rows keep
// their positions; a tile's op numbers its batch and heads from 0, so those
// do not tile under a region reading %b or %h.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Dialect/FlashAttn/Transforms/TilingInterfaceImpl.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

using namespace mlir;
using namespace mlir::flashattn;

namespace {
/// The slices of one iteration-domain tile.
struct Tile {
  OpFoldResult b0, bs, g0, gs, i0, is;
};

/// G: query heads per kv head (static: the verifier and check() want it).
int64_t groups(AttentionOp op) { return op.getNumQHeads() / op.getNumKVHeads(); }

/// Whether `x` is provably a multiple of `n`: a constant, or the
/// induction variable of an scf.for whose lower bound and constant step
/// are (the offsets a consumer's tiling loops give).
bool isMultipleOf(OpFoldResult x, int64_t n) {
  if (std::optional<int64_t> c = getConstantIntValue(x))
    return *c % n == 0;
  auto value = dyn_cast<Value>(x);
  scf::ForOp loop = value ? scf::getForInductionVarOwner(value) : scf::ForOp();
  std::optional<int64_t> step = loop ? getConstantIntValue(loop.getStep()) : std::nullopt;
  return step && *step % n == 0 && isMultipleOf(loop.getLowerBound(), n);
}

OpFoldResult times(OpBuilder &b, Location loc, OpFoldResult x, int64_t n) {
  AffineExpr d0 = b.getAffineDimExpr(0);
  return affine::makeComposedFoldedAffineApply(b, loc, d0 * n, {x});
}

OpFoldResult size(OpBuilder &b, Location loc, Value t, int64_t dim) {
  return tensor::getMixedSize(b, loc, t, dim);
}

/// What a tile of `op` cannot take, or success. Remarks, not errors:
/// tile-and-fuse asks and moves on when an op does not tile; the tiling
/// driver reports a failure itself.
LogicalResult check(AttentionOp op) {
  auto fail = [&](StringRef what) {
    return op.emitRemark() << "does not tile: " << what;
  };
  if (!op.hasPureTensorSemantics())
    return fail("it is on memrefs (tile the tensor form)");
  if (StringRef feature = op.getNonDenseFeature(); !feature.empty())
    return fail(feature);
  if (ShapedType::isDynamic(op.getNumQHeads()) || ShapedType::isDynamic(op.getNumKVHeads()))
    return fail("dynamic head counts");
  return success();
}

/// Whether a score or mask region reads its argument `name` (b, h or i).
bool regionReads(AttentionOp op, StringRef name) {
  // score(%s, %b, %h, %i, %j), mask(%b, %h, %i, %j)
  unsigned at = name == "b" ? 0 : name == "h" ? 1 : 2;
  if (!op.getScore().empty() && !op.getScore().getArgument(at + 1).use_empty())
    return true;
  return !op.getMask().empty() && !op.getMask().getArgument(at).use_empty();
}

/// Whether the result depends on the query rows' positions.
bool rowPositional(AttentionOp op) {
  auto [left, right] = op.getWindow();
  return op.getCausal() != CausalKind::none || left >= 0 || right >= 0 ||
         op.getAlibiSlopes() || regionReads(op, "i");
}

/// Whether [offset, offset + size) is all of dimension `dim` of `t`
/// (a dynamic extent through value bounds: the tiling loop's bound is a
/// tensor.dim of its own).
bool isFull(OpFoldResult offset, OpFoldResult size, Value t, int64_t dim) {
  if (!isZeroInteger(offset))
    return false;
  FailureOr<bool> equal = ValueBoundsConstraintSet::areEqual(
      ValueBoundsConstraintSet::Variable(size), ValueBoundsConstraintSet::Variable(t, dim));
  return succeeded(equal) && *equal;
}

Value slice(OpBuilder &b, Location loc, Value src, ArrayRef<OpFoldResult> offsets,
            ArrayRef<OpFoldResult> sizes, SmallVector<Operation *> &slices) {
  SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
  auto s = tensor::ExtractSliceOp::create(b, loc, src, offsets, sizes, strides);
  slices.push_back(s);
  return s;
}

/// `op` on the operands `map` gives, with `qStart` / `seqlenQ`, typed as
/// its out slices, with its regions.
AttentionOp rebuild(OpBuilder &b, AttentionOp op, IRMapping &map, Value qStart,
                    Value seqlenQ) {
  auto m = [&](Value v) { return v ? map.lookupOrDefault(v) : Value(); };
  SmallVector<Value> outs;
  SmallVector<Type> types;
  for (Value init : op.getOuts()) {
    outs.push_back(map.lookup(init));
    types.push_back(outs.back().getType());
  }
  auto tiled = AttentionOp::create(
      b, op.getLoc(), types, m(op.getQ()), m(op.getK()), m(op.getV()), m(op.getCuSeqlensQ()),
      m(op.getCuSeqlensK()), m(op.getSequsedK()), m(op.getBlockTable()),
      m(op.getAlibiSlopes()), m(op.getKNew()), m(op.getVNew()), m(op.getCacheSeqlens()), qStart,
      seqlenQ, outs, op.getScaleAttr(), op.getCausalAttr(), op.getWindowSizeAttr(),
      op.getSoftcapAttr(), op.getNumSplitsAttr(), op.getPackGqaAttr(), op.getPlanAttr());
  IRMapping regions;
  op.getScore().cloneInto(&tiled.getScore(), regions);
  op.getMask().cloneInto(&tiled.getMask(), regions);
  return tiled;
}

struct AttentionTiling : TilingInterface::ExternalModel<AttentionTiling, AttentionOp> {
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *) const {
    return SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel);
  }

  SmallVector<Range> getIterationDomain(Operation *o, OpBuilder &b) const {
    auto op = cast<AttentionOp>(o);
    Location loc = op.getLoc();
    OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
    return {Range{zero, size(b, loc, op.getQ(), 0), one},
            Range{zero, size(b, loc, op.getK(), 2), one},
            Range{zero, size(b, loc, op.getQ(), 1), one}};
  }

  FailureOr<TilingResult> getTiledImplementation(Operation *o, OpBuilder &b,
                                                 ArrayRef<OpFoldResult> offsets,
                                                 ArrayRef<OpFoldResult> sizes) const {
    auto op = cast<AttentionOp>(o);
    Location loc = op.getLoc();
    if (failed(check(op)))
      return failure();
    // A tile's op numbers its batch and heads from 0: a region reading
    // them does not tile along them. Rows keep their positions through
    // q_start / seqlen_q.
    if (regionReads(op, "b") && !isFull(offsets[0], sizes[0], op.getQ(), 0))
      return op.emitRemark() << "does not tile the batch: a region reads %b";
    if (regionReads(op, "h") && !isFull(offsets[1], sizes[1], op.getK(), 2))
      return op.emitRemark() << "does not tile the heads: a region reads %h";
    Tile t{offsets[0], sizes[0], offsets[1], sizes[1], offsets[2], sizes[2]};
    int64_t g = groups(op);
    OpFoldResult h0 = times(b, loc, t.g0, g), hs = times(b, loc, t.gs, g);
    OpFoldResult zero = b.getIndexAttr(0);
    SmallVector<Operation *> slices;
    IRMapping map;
    auto sliceOf = [&](Value v, ArrayRef<OpFoldResult> offs, ArrayRef<OpFoldResult> szs) {
      map.map(v, slice(b, loc, v, offs, szs, slices));
    };
    sliceOf(op.getQ(), {t.b0, t.i0, h0, zero}, {t.bs, t.is, hs, size(b, loc, op.getQ(), 3)});
    for (Value kv : {op.getK(), op.getV()}) {
      SmallVector<OpFoldResult> kvSizes{t.bs, size(b, loc, kv, 1), t.gs, size(b, loc, kv, 3)};
      // No key at all: nothing to read, and extract_slice takes no offset
      // into a static extent of 0.
      if (isZeroInteger(kvSizes[1])) {
        Type element = cast<ShapedType>(kv.getType()).getElementType();
        map.map(kv, tensor::EmptyOp::create(b, loc, kvSizes, element));
        continue;
      }
      sliceOf(kv, {t.b0, zero, t.g0, zero}, kvSizes);
    }
    if (Value slopes = op.getAlibiSlopes()) {
      if (cast<ShapedType>(slopes.getType()).getRank() == 1)
        sliceOf(slopes, {h0}, {hs});
      else
        sliceOf(slopes, {t.b0, h0}, {t.bs, hs});
    }
    sliceOf(op.getOut(), {t.b0, t.i0, h0, zero},
            {t.bs, t.is, hs, size(b, loc, op.getOut(), 3)});
    if (Value lse = op.getLse())
      sliceOf(lse, {t.b0, h0, t.i0}, {t.bs, hs, t.is});
    // Row tiles keep their positions: q_start moves by the tile's first
    // row (always, once the op has one), seqlen_q stays the whole op's.
    Value qStart = op.getQStart(), seqlenQ = op.getSeqlenQ();
    bool rowTile = !isFull(t.i0, t.is, op.getQ(), 1);
    if (rowTile && (qStart || rowPositional(op))) {
      Value i0 = getValueOrCreateConstantIndexOp(b, loc, t.i0);
      qStart = qStart ? arith::AddIOp::create(b, loc, qStart, i0).getResult() : i0;
      if (!seqlenQ)
        seqlenQ = getValueOrCreateConstantIndexOp(b, loc, size(b, loc, op.getQ(), 1));
    }
    AttentionOp tiled = rebuild(b, op, map, qStart, seqlenQ);
    return TilingResult{{tiled}, SmallVector<Value>(tiled->getResults()), slices};
  }

  LogicalResult getResultTilePosition(Operation *o, OpBuilder &b, unsigned resultNumber,
                                      ArrayRef<OpFoldResult> offsets,
                                      ArrayRef<OpFoldResult> sizes,
                                      SmallVector<OpFoldResult> &resultOffsets,
                                      SmallVector<OpFoldResult> &resultSizes) const {
    auto op = cast<AttentionOp>(o);
    Location loc = op.getLoc();
    int64_t g = groups(op);
    OpFoldResult h0 = times(b, loc, offsets[1], g), hs = times(b, loc, sizes[1], g);
    if (resultNumber == 0) {
      resultOffsets = {offsets[0], offsets[2], h0, b.getIndexAttr(0)};
      resultSizes = {sizes[0], sizes[2], hs, size(b, loc, op.getOut(), 3)};
    } else {
      resultOffsets = {offsets[0], h0, offsets[2]};
      resultSizes = {sizes[0], hs, sizes[2]};
    }
    return success();
  }

  /// out [b, i, h, e] / lse [b, h, i] tiles back to (b, g, i): every e,
  /// whole groups of G heads.
  LogicalResult getIterationDomainTileFromResultTile(
      Operation *o, OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
      ArrayRef<OpFoldResult> sizes, SmallVectorImpl<OpFoldResult> &iterOffsets,
      SmallVectorImpl<OpFoldResult> &iterSizes) const {
    auto op = cast<AttentionOp>(o);
    int64_t g = groups(op);
    unsigned hDim = resultNumber == 0 ? 2 : 1, iDim = resultNumber == 0 ? 1 : 2;
    if (resultNumber == 0 && !isFull(offsets[3], sizes[3], op.getOut(), 3))
      return failure();
    auto perGroup = [&](OpFoldResult x) -> FailureOr<OpFoldResult> {
      if (g == 1)
        return x;
      if (!isMultipleOf(x, g))
        return failure();
      AffineExpr d0 = b.getAffineDimExpr(0);
      return affine::makeComposedFoldedAffineApply(b, o->getLoc(), d0.floorDiv(g), {x});
    };
    FailureOr<OpFoldResult> g0 = perGroup(offsets[hDim]), gs = perGroup(sizes[hDim]);
    if (failed(g0) || failed(gs))
      return failure();
    iterOffsets.assign({offsets[0], *g0, offsets[iDim]});
    iterSizes.assign({sizes[0], *gs, sizes[iDim]});
    return success();
  }

  FailureOr<TilingResult> generateResultTileValue(Operation *o, OpBuilder &b,
                                                  unsigned resultNumber,
                                                  ArrayRef<OpFoldResult> offsets,
                                                  ArrayRef<OpFoldResult> sizes) const {
    SmallVector<OpFoldResult> iterOffsets, iterSizes;
    if (failed(getIterationDomainTileFromResultTile(o, b, resultNumber, offsets, sizes,
                                                    iterOffsets, iterSizes)))
      return failure();
    FailureOr<TilingResult> tiled = getTiledImplementation(o, b, iterOffsets, iterSizes);
    if (failed(tiled))
      return failure();
    return TilingResult{tiled->tiledOps, {tiled->tiledValues[resultNumber]},
                        tiled->generatedSlices};
  }
};
} // namespace

void mlir::flashattn::registerTilingInterfaceExternalModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, FlashAttnDialect *) {
    ctx->loadDialect<affine::AffineDialect, arith::ArithDialect, tensor::TensorDialect>();
    AttentionOp::attachInterface<AttentionTiling>(*ctx);
  });
}
