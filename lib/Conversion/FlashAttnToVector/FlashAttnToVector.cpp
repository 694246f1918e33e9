//===- FlashAttnToVector.cpp - tile ops and combine to scf/vector ---------===//
//
// The host conversion of the tile-level ops: loops over rows whose bodies use
// vector ops along the contiguous dimension (head_dim for loads, Q K^T and
// P V; the key block for the softmax). flashattn.combine becomes a loop over
// output rows implementing the merge of docs/SEMANTICS.md.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Conversion/Passes.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "flashattn/Utils/LoopBuilders.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/DialectConversion.h"

#include <algorithm>
#include <cmath>

namespace mlir::flashattn {
#define GEN_PASS_DEF_CONVERTFLASHATTNTOVECTOR
#include "flashattn/Conversion/Passes.h.inc"
} // namespace mlir::flashattn

using namespace mlir;
using namespace mlir::flashattn;

namespace {

struct Emit {
  OpBuilder &b;
  Location loc;

  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value splat(VectorType t, double v) {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(t, b.getFloatAttr(t.getElementType(), v)));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value size(Value memref, int64_t i) {
    int64_t s = cast<MemRefType>(memref.getType()).getDimSize(i);
    return ShapedType::isDynamic(s) ? memref::DimOp::create(b, loc, memref, i)
                                    : c(s);
  }
  /// Loads a row of `n` elements at `indices` as f32.
  Value loadRow(Value memref, ValueRange indices, int64_t n) {
    Type elem = cast<MemRefType>(memref.getType()).getElementType();
    Value v = vector::LoadOp::create(b, loc, VectorType::get({n}, elem), memref,
                                     indices);
    if (!elem.isF32())
      v = arith::ExtFOp::create(b, loc, VectorType::get({n}, b.getF32Type()), v);
    return v;
  }
  /// Stores an f32 row, converted to the memref's element type.
  void storeRow(Value row, Value memref, ValueRange indices) {
    Type elem = cast<MemRefType>(memref.getType()).getElementType();
    auto vt = cast<VectorType>(row.getType());
    if (!elem.isF32())
      row = arith::TruncFOp::create(b, loc, VectorType::get(vt.getShape(), elem),
                                    row);
    vector::StoreOp::create(b, loc, row, memref, indices);
  }
};

static int64_t dimOf(Value v, unsigned i) {
  return cast<MemRefType>(v.getType()).getDimSize(i);
}

/// The indices of row `r`'s first element in a tile op's view of rows:
/// [r, 0], or in a packed [R, G, D] view [r / G, r % G, 0]; and of row r's
/// lse: [r], or in a packed [G, R] lse [r % G, r / G].
static SmallVector<Value> rowIndices(Emit &e, Value view, Value r) {
  if (cast<MemRefType>(view.getType()).getRank() == 2)
    return {r, e.c(0)};
  Value g = e.c(dimOf(view, 1));
  Value pos = arith::DivUIOp::create(e.b, e.loc, r, g);
  Value head = arith::RemUIOp::create(e.b, e.loc, r, g);
  return {pos, head, e.c(0)};
}

static SmallVector<Value> lseIndices(Emit &e, Value lse, Value r) {
  if (cast<MemRefType>(lse.getType()).getRank() == 1)
    return {r};
  Value g = e.c(dimOf(lse, 0));
  Value pos = arith::DivUIOp::create(e.b, e.loc, r, g);
  Value head = arith::RemUIOp::create(e.b, e.loc, r, g);
  return {head, pos};
}

struct LowerTileInit : OpRewritePattern<TileInitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileInitOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Emit e{rewriter, loc};
    int64_t dv = dimOf(op.getAcc(), 1);
    Value zeros = e.splat(VectorType::get({dv}, rewriter.getF32Type()), 0.0);
    Value negInf = e.f32(-INFINITY), zero = e.f32(0.0);
    buildFor(rewriter, loc, e.c(0), e.c(dimOf(op.getM(), 0)), [&](Value i) {
      memref::StoreOp::create(rewriter, loc, negInf, op.getM(), i);
      memref::StoreOp::create(rewriter, loc, zero, op.getL(), i);
      vector::StoreOp::create(rewriter, loc, zeros, op.getAcc(),
                              ValueRange{i, e.c(0)});
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// Zeroes rows [rows, T) of a tile.
static void zeroTail(Emit &e, Value tile, Value rows) {
  int64_t d = dimOf(tile, 1);
  Value zeros = e.splat(VectorType::get({d}, e.b.getF32Type()), 0.0);
  buildFor(e.b, e.loc, rows, e.c(dimOf(tile, 0)), [&](Value r) {
    vector::StoreOp::create(e.b, e.loc, zeros, tile, ValueRange{r, e.c(0)});
  });
}

struct LowerTileLoad : OpRewritePattern<TileLoadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileLoadOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Emit e{rewriter, loc};
    int64_t d = dimOf(op.getTile(), 1);
    buildFor(rewriter, loc, e.c(0), op.getRows(), [&](Value r) {
      Value row = e.loadRow(op.getSource(), rowIndices(e, op.getSource(), e.add(op.getRow0(), r)),
                            d);
      vector::StoreOp::create(rewriter, loc, row, op.getTile(),
                              ValueRange{r, e.c(0)});
    });
    zeroTail(e, op.getTile(), op.getRows());
    rewriter.eraseOp(op);
    return success();
  }
};

// The host's loads (async or not) copy at once: nothing to wait for, no
// copy to hand the tile back to.
template <typename WaitOrRelease>
struct EraseTileSync : OpRewritePattern<WaitOrRelease> {
  using OpRewritePattern<WaitOrRelease>::OpRewritePattern;
  LogicalResult matchAndRewrite(WaitOrRelease op,
                                PatternRewriter &rewriter) const override {
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerTileLoadPaged : OpRewritePattern<TileLoadPagedOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileLoadPagedOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Emit e{rewriter, loc};
    int64_t d = dimOf(op.getTile(), 1);
    Value pageSize = e.size(op.getPool(), 1);
    buildFor(rewriter, loc, e.c(0), op.getRows(), [&](Value r) {
      Value pos = e.add(op.getRow0(), r);
      Value slot = arith::DivSIOp::create(rewriter, loc, pos, pageSize);
      Value pageI32 = memref::LoadOp::create(rewriter, loc, op.getPages(), slot);
      Value page = arith::IndexCastOp::create(rewriter, loc,
                                              rewriter.getIndexType(), pageI32);
      Value within = arith::RemSIOp::create(rewriter, loc, pos, pageSize);
      // `heads` kv heads a row, heads fastest in the tile.
      int64_t heads = op.getHeads();
      Value first = heads > 1 ? arith::MulIOp::create(rewriter, loc, r, e.c(heads)) : r;
      for (int64_t h = 0; h < heads; ++h) {
        Value head = h ? e.add(op.getHead(), e.c(h)) : op.getHead();
        Value row = e.loadRow(op.getPool(), {page, within, head, e.c(0)}, d);
        Value at = h ? e.add(first, e.c(h)) : first;
        vector::StoreOp::create(rewriter, loc, row, op.getTile(), ValueRange{at, e.c(0)});
      }
    });
    Value rows = op.getRows();
    if (op.getHeads() > 1)
      rows = arith::MulIOp::create(rewriter, loc, rows, e.c(op.getHeads()));
    zeroTail(e, op.getTile(), rows);
    rewriter.eraseOp(op);
    return success();
  }
};

/// C[i, :] (+)= sum_x A[i, x] * B[x, :], times `scale` when given, for f32
/// A [M, K], B [K, N], C [M, N]: a register-blocked micro-kernel. Blocks of
/// MR rows x NR columns keep MR accumulators of NR lanes in registers over
/// the K loop, so each NR-wide chunk of a B row is loaded once per MR rows
/// (B stays in L1 instead of being streamed once per row).
static void emitGemm(PatternRewriter &rw, Location loc, Value a, Value b,
                     Value c, bool accumulate, std::optional<double> scale,
                     int64_t vectorBits) {
  Emit e{rw, loc};
  int64_t m = dimOf(a, 0), k = dimOf(a, 1), n = dimOf(b, 1);
  // 8 accumulators of one register each, plus the B chunk and a broadcast:
  // within the 16 registers of AVX2 and the 32 of AVX-512.
  int64_t mr = m % 8 == 0 ? 8 : m % 4 == 0 ? 4 : m % 2 == 0 ? 2 : 1;
  int64_t lanes = std::max<int64_t>(vectorBits / 32, 1);
  int64_t nr = n % lanes == 0 ? lanes : n % 8 == 0 ? 8 : n;
  auto vt = VectorType::get({nr}, rw.getF32Type());
  Value scaleVec;
  if (scale)
    scaleVec = vector::BroadcastOp::create(rw, loc, vt, e.f32(*scale));
  auto rows = scf::ForOp::create(rw, loc, e.c(0), e.c(m), e.c(mr));
  OpBuilder::InsertionGuard guard(rw);
  rw.setInsertionPointToStart(rows.getBody());
  Value i0 = rows.getInductionVar();
  auto cols = scf::ForOp::create(rw, loc, e.c(0), e.c(n), e.c(nr));
  rw.setInsertionPointToStart(cols.getBody());
  Value j0 = cols.getInductionVar();
  SmallVector<Value> rowIdx, inits;
  for (int64_t r = 0; r < mr; ++r) {
    rowIdx.push_back(r ? e.add(i0, e.c(r)) : i0);
    inits.push_back(accumulate ? vector::LoadOp::create(rw, loc, vt, c,
                                                        ValueRange{rowIdx[r], j0})
                                     .getResult()
                               : e.splat(vt, 0.0));
  }
  auto red = scf::ForOp::create(
      rw, loc, e.c(0), e.c(k), e.c(1), inits,
      [&](OpBuilder &nb, Location nloc, Value x, ValueRange accs) {
        Value brow = vector::LoadOp::create(nb, nloc, vt, b, ValueRange{x, j0});
        SmallVector<Value> next;
        for (int64_t r = 0; r < mr; ++r) {
          Value av = memref::LoadOp::create(nb, nloc, a, ValueRange{rowIdx[r], x});
          Value ab = vector::BroadcastOp::create(nb, nloc, vt, av);
          next.push_back(vector::FMAOp::create(nb, nloc, ab, brow, accs[r]));
        }
        scf::YieldOp::create(nb, nloc, next);
      });
  for (int64_t r = 0; r < mr; ++r) {
    Value res = red.getResult(r);
    if (scaleVec)
      res = arith::MulFOp::create(rw, loc, res, scaleVec);
    vector::StoreOp::create(rw, loc, res, c, ValueRange{rowIdx[r], j0});
  }
}

/// The largest transposed-K scratch kept on the stack (256 KiB: head_dim
/// 1024 at block_n 64).
static constexpr int64_t kMaxStackScratchBytes = 256 * 1024;

/// S = scale * Q K^T: K is transposed once into a [D, N] scratch (an alloca
/// at function entry, or a heap buffer past kMaxStackScratchBytes), then S = Q Kt with the micro-kernel of emitGemm; with
/// fewer than 8 query rows, one dot product per score instead.
struct LowerTileQK : OpRewritePattern<TileQKOp> {
  LowerTileQK(MLIRContext *ctx, int64_t vectorBits)
      : OpRewritePattern(ctx), vectorBits(vectorBits) {}
  int64_t vectorBits;
  LogicalResult matchAndRewrite(TileQKOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Emit e{rewriter, loc};
    int64_t m = dimOf(op.getQ(), 0), n = dimOf(op.getK(), 0),
            d = dimOf(op.getQ(), 1);
    if (m < 8) {
      // Few query rows (decode): transposing K would cost more than it
      // saves; one dot product (vector multiply + add reduction over
      // head_dim) per score.
      auto rowType = VectorType::get({d}, rewriter.getF32Type());
      Value scale = e.f32(op.getScale().convertToDouble());
      buildFor(rewriter, loc, e.c(0), e.c(m), [&](Value i) {
        Value qrow = vector::LoadOp::create(rewriter, loc, rowType, op.getQ(),
                                            ValueRange{i, e.c(0)});
        buildFor(rewriter, loc, e.c(0), e.c(n), [&](Value j) {
          Value krow = vector::LoadOp::create(rewriter, loc, rowType, op.getK(),
                                              ValueRange{j, e.c(0)});
          Value prod = arith::MulFOp::create(rewriter, loc, qrow, krow);
          Value dot = vector::ReductionOp::create(
              rewriter, loc, vector::CombiningKind::ADD, prod);
          memref::StoreOp::create(rewriter, loc,
                                  arith::MulFOp::create(rewriter, loc, dot, scale),
                                  op.getS(), ValueRange{i, j});
        });
      });
      rewriter.eraseOp(op);
      return success();
    }
    Value kt;
    {
      OpBuilder::InsertionGuard guard(rewriter);
      Region *top = op->getParentRegion();
      while (top->getParentOp()->getParentRegion() &&
             !isa<FunctionOpInterface>(top->getParentOp()))
        top = top->getParentOp()->getParentRegion();
      rewriter.setInsertionPointToStart(&top->front());
      auto type = MemRefType::get({d, n}, rewriter.getF32Type());
      // Up to kMaxStackScratchBytes on the stack; a larger tile (a big
      // head_dim or a block_n override) on the heap, freed before each
      // return: 8 MiB of alloca overflowed the caller's default stack.
      if (d * n * 4 <= kMaxStackScratchBytes) {
        kt = memref::AllocaOp::create(rewriter, loc, type);
      } else {
        kt = memref::AllocOp::create(rewriter, loc, type);
        for (Block &block : *top)
          if (block.mightHaveTerminator() &&
              block.getTerminator()->hasTrait<OpTrait::ReturnLike>()) {
            rewriter.setInsertionPoint(block.getTerminator());
            memref::DeallocOp::create(rewriter, loc, kt);
          }
      }
    }
    buildFor(rewriter, loc, e.c(0), e.c(n), [&](Value j) {
      buildFor(rewriter, loc, e.c(0), e.c(d), [&](Value x) {
        Value val = memref::LoadOp::create(rewriter, loc, op.getK(), ValueRange{j, x});
        memref::StoreOp::create(rewriter, loc, val, kt, ValueRange{x, j});
      });
    });
    emitGemm(rewriter, loc, op.getQ(), kt, op.getS(), /*accumulate=*/false,
             op.getScale().convertToDouble(), vectorBits);
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerTileSoftmax : OpRewritePattern<TileSoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileSoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Emit e{rewriter, loc};
    int64_t m = dimOf(op.getS(), 0), n = dimOf(op.getS(), 1),
            dv = dimOf(op.getAcc(), 1);
    Type f32 = rewriter.getF32Type();
    auto rowType = VectorType::get({n}, f32);
    buildFor(rewriter, loc, e.c(0), e.c(m), [&](Value i) {
      Value row = vector::LoadOp::create(rewriter, loc, rowType, op.getS(),
                                         ValueRange{i, e.c(0)});
      Value rowMax = vector::ReductionOp::create(
          rewriter, loc, vector::CombiningKind::MAXNUMF, row);
      Value mOld = memref::LoadOp::create(rewriter, loc, op.getM(), i);
      Value mNew = arith::MaxNumFOp::create(rewriter, loc, mOld, rowMax);
      // Guard: a row that has seen only -inf uses 0 in the exponents.
      Value isEmpty = arith::CmpFOp::create(
          rewriter, loc, arith::CmpFPredicate::OEQ, mNew, e.f32(-INFINITY));
      Value mUse = arith::SelectOp::create(rewriter, loc, isEmpty, e.f32(0.0),
                                           mNew);
      Value mUseVec = vector::BroadcastOp::create(rewriter, loc, rowType, mUse);
      Value p = math::Exp2Op::create(
          rewriter, loc, arith::SubFOp::create(rewriter, loc, row, mUseVec));
      vector::StoreOp::create(rewriter, loc, p, op.getS(),
                              ValueRange{i, e.c(0)});
      Value alpha = math::Exp2Op::create(
          rewriter, loc, arith::SubFOp::create(rewriter, loc, mOld, mUse));
      Value rowSum = vector::ReductionOp::create(
          rewriter, loc, vector::CombiningKind::ADD, p);
      Value lOld = memref::LoadOp::create(rewriter, loc, op.getL(), i);
      Value lNew = arith::AddFOp::create(
          rewriter, loc, arith::MulFOp::create(rewriter, loc, lOld, alpha),
          rowSum);
      memref::StoreOp::create(rewriter, loc, lNew, op.getL(), i);
      memref::StoreOp::create(rewriter, loc, mNew, op.getM(), i);
      auto accType = VectorType::get({dv}, f32);
      Value accRow = vector::LoadOp::create(rewriter, loc, accType, op.getAcc(),
                                            ValueRange{i, e.c(0)});
      Value alphaVec =
          vector::BroadcastOp::create(rewriter, loc, accType, alpha);
      accRow = arith::MulFOp::create(rewriter, loc, accRow, alphaVec);
      vector::StoreOp::create(rewriter, loc, accRow, op.getAcc(),
                              ValueRange{i, e.c(0)});
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// acc += P V with the micro-kernel of emitGemm.
struct LowerTilePV : OpRewritePattern<TilePVOp> {
  LowerTilePV(MLIRContext *ctx, int64_t vectorBits)
      : OpRewritePattern(ctx), vectorBits(vectorBits) {}
  int64_t vectorBits;
  LogicalResult matchAndRewrite(TilePVOp op,
                                PatternRewriter &rewriter) const override {
    emitGemm(rewriter, op.getLoc(), op.getP(), op.getV(), op.getAcc(),
             /*accumulate=*/true, std::nullopt, vectorBits);
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerTileStore : OpRewritePattern<TileStoreOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileStoreOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Emit e{rewriter, loc};
    int64_t dv = dimOf(op.getAcc(), 1);
    auto accType = VectorType::get({dv}, rewriter.getF32Type());
    buildFor(rewriter, loc, e.c(0), op.getRows(), [&](Value r) {
      Value l = memref::LoadOp::create(rewriter, loc, op.getL(), r);
      Value empty = arith::CmpFOp::create(rewriter, loc,
                                          arith::CmpFPredicate::OEQ, l,
                                          e.f32(0.0));
      Value inv = arith::SelectOp::create(
          rewriter, loc, empty, e.f32(0.0),
          arith::DivFOp::create(rewriter, loc, e.f32(1.0), l));
      Value row = vector::LoadOp::create(rewriter, loc, accType, op.getAcc(),
                                         ValueRange{r, e.c(0)});
      row = arith::MulFOp::create(
          rewriter, loc, row,
          vector::BroadcastOp::create(rewriter, loc, accType, inv));
      e.storeRow(row, op.getOut(), rowIndices(e, op.getOut(), r));
      if (Value lse = op.getLse()) {
        Value m = memref::LoadOp::create(rewriter, loc, op.getM(), r);
        Value logL = math::LogOp::create(rewriter, loc, l);
        Value value = arith::AddFOp::create(
            rewriter, loc,
            arith::MulFOp::create(rewriter, loc, m, e.f32(M_LN2)), logL);
        value = arith::SelectOp::create(rewriter, loc, empty,
                                        e.f32(-INFINITY), value);
        memref::StoreOp::create(rewriter, loc, value, lse, lseIndices(e, lse, r));
      }
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// A tile_map as loops over its rows and columns: the body's row ops
/// (TileMapOp::splitRowOps) once per row, the rest per element, between a
/// load and a store of the score.
struct LowerTileMap : OpRewritePattern<TileMapOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TileMapOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Emit e{rewriter, loc};
    SmallVector<Operation *> rowOps, elementOps;
    op.splitRowOps(rowOps, elementOps);
    Block &body = op.getBody().front();
    Value yielded = cast<YieldOp>(body.getTerminator()).getValues()[0];
    Value s = op.getS();
    buildFor(rewriter, loc, e.c(0), op.getRows(), [&](Value i) {
      IRMapping map;
      map.map(body.getArgument(1), i);
      for (Operation *rowOp : rowOps)
        rewriter.clone(*rowOp, map);
      buildFor(rewriter, loc, e.c(0), op.getCols(), [&](Value j) {
        IRMapping elementMap = map;
        elementMap.map(body.getArgument(2), j);
        elementMap.map(body.getArgument(0),
                       memref::LoadOp::create(rewriter, loc, s, ValueRange{i, j}));
        for (Operation *elementOp : elementOps)
          rewriter.clone(*elementOp, elementMap);
        memref::StoreOp::create(rewriter, loc, elementMap.lookupOrDefault(yielded), s,
                                ValueRange{i, j});
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// flashattn.combine on memrefs: per output row, lse = log sum_s exp(lse_s)
/// (max-shifted), out = sum_s exp(lse_s - lse) O_s; empty splits weigh 0, all
/// empty gives out 0 and lse -inf.
struct LowerCombine : OpRewritePattern<CombineOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CombineOp op,
                                PatternRewriter &rewriter) const override {
    if (!isa<MemRefType>(op.getOut().getType()))
      return rewriter.notifyMatchFailure(op, "tensor form: bufferize first");
    int64_t rank = cast<MemRefType>(op.getOut().getType()).getRank();
    int64_t dv = dimOf(op.getOut(), rank - 1);
    if (ShapedType::isDynamic(dv))
      return rewriter.notifyMatchFailure(op, "needs a static head_dim_v");
    Location loc = op.getLoc();
    Emit e{rewriter, loc};
    Value out = op.getOut(), lse = op.getLse();
    Value po = op.getPartialOut(), pl = op.getPartialLse();
    bool varlen = cast<MemRefType>(out.getType()).getRank() == 3;
    Type f32 = rewriter.getF32Type();
    auto rowType = VectorType::get({dv}, f32);
    Value splits = e.size(po, 0);

    auto body = [&](ValueRange rowIdx) {
      // rowIdx: (b, s, h) dense or (t, h) varlen; lse index (b, h, s) / (h, t).
      SmallVector<Value> lseIdx =
          varlen ? SmallVector<Value>{rowIdx[1], rowIdx[0]}
                 : SmallVector<Value>{rowIdx[0], rowIdx[2], rowIdx[1]};
      auto partialLse = [&](Value s) {
        SmallVector<Value> idx{s};
        idx.append(lseIdx);
        return memref::LoadOp::create(rewriter, loc, pl, idx).getResult();
      };
      Value mx = buildForCarry(rewriter, loc, e.c(0), splits, e.f32(-INFINITY),
                              [&](Value s, Value acc) {
                                return arith::MaxNumFOp::create(
                                           rewriter, loc, acc, partialLse(s))
                                    .getResult();
                              });
      Value allEmpty = arith::CmpFOp::create(
          rewriter, loc, arith::CmpFPredicate::OEQ, mx, e.f32(-INFINITY));
      Value mUse = arith::SelectOp::create(rewriter, loc, allEmpty, e.f32(0.0),
                                           mx);
      Value sum = buildForCarry(
          rewriter, loc, e.c(0), splits, e.f32(0.0), [&](Value s, Value acc) {
            Value w = math::ExpOp::create(
                rewriter, loc,
                arith::SubFOp::create(rewriter, loc, partialLse(s), mUse));
            return arith::AddFOp::create(rewriter, loc, acc, w).getResult();
          });
      Value inv = arith::SelectOp::create(
          rewriter, loc, allEmpty, e.f32(0.0),
          arith::DivFOp::create(rewriter, loc, e.f32(1.0), sum));
      Value zeros = e.splat(rowType, 0.0);
      Value acc = buildForCarry(
          rewriter, loc, e.c(0), splits, zeros, [&](Value s, Value a) {
            Value ls = partialLse(s);
            Value w = math::ExpOp::create(
                rewriter, loc, arith::SubFOp::create(rewriter, loc, ls, mUse));
            w = arith::MulFOp::create(rewriter, loc, w, inv);
            SmallVector<Value> idx{s};
            idx.append(rowIdx.begin(), rowIdx.end());
            idx.push_back(e.c(0));
            Value orow = vector::LoadOp::create(rewriter, loc, rowType, po, idx);
            Value wv = vector::BroadcastOp::create(rewriter, loc, rowType, w);
            Value next = vector::FMAOp::create(rewriter, loc, wv, orow, a);
            // An empty split weighs exactly 0, whatever its out_s holds
            // (0 * NaN would be NaN).
            Value empty = arith::CmpFOp::create(
                rewriter, loc, arith::CmpFPredicate::OEQ, ls, e.f32(-INFINITY));
            return arith::SelectOp::create(rewriter, loc, empty, a, next)
                .getResult();
          });
      SmallVector<Value> outIdx(rowIdx.begin(), rowIdx.end());
      outIdx.push_back(e.c(0));
      e.storeRow(acc, out, outIdx);
      if (lse) {
        Value value = arith::AddFOp::create(
            rewriter, loc, mUse, math::LogOp::create(rewriter, loc, sum));
        value = arith::SelectOp::create(rewriter, loc, allEmpty,
                                        e.f32(-INFINITY), value);
        memref::StoreOp::create(rewriter, loc, value, lse, lseIdx);
      }
    };

    // Nested loops over every index of out but the last.
    std::function<void(int64_t, SmallVector<Value>)> nest =
        [&](int64_t dim, SmallVector<Value> idx) {
          if (dim == rank - 1)
            return body(idx);
          buildFor(rewriter, loc, e.c(0), e.size(out, dim), [&](Value iv) {
            SmallVector<Value> next = idx;
            next.push_back(iv);
            nest(dim + 1, next);
          });
        };
    nest(0, {});
    rewriter.eraseOp(op);
    return success();
  }
};

struct ConvertFlashAttnToVectorPass
    : public flashattn::impl::ConvertFlashAttnToVectorBase<
          ConvertFlashAttnToVectorPass> {
  using Base::Base;
  void runOnOperation() override {
    if (vectorBits < 32 || vectorBits % 32 != 0 || vectorBits > 4096) {
      getOperation()->emitError()
          << "convert-flashattn-to-vector: vector-bits must be a multiple of 32 "
             "in [32, 4096] (one f32 lane or more), got "
          << static_cast<int64_t>(vectorBits);
      return signalPassFailure();
    }
    // Q K^T takes its transposed-K scratch from a memref.alloca at the
    // entry of its function: the op must sit in one.
    WalkResult scoped = getOperation()->walk([&](TileQKOp op) {
      if (op->getParentOfType<FunctionOpInterface>())
        return WalkResult::advance();
      op->emitOpError("convert-flashattn-to-vector: needs to be inside a "
                      "function (its scratch is an alloca at the function's "
                      "entry)");
      return WalkResult::interrupt();
    });
    if (scoped.wasInterrupted())
      return signalPassFailure();
    // What the combine's lowering needs, said plainly (a failed pattern
    // would only show as "failed to legalize"): memrefs, a static
    // head_dim_v that fits a vector, and unit inner strides.
    WalkResult checked = getOperation()->walk([&](CombineOp op) {
      if (!isa<MemRefType>(op.getOut().getType())) {
        op.emitOpError("convert-flashattn-to-vector: needs the memref form "
                       "(bufferize first)");
        return WalkResult::interrupt();
      }
      auto outType = cast<MemRefType>(op.getOut().getType());
      int64_t dv = outType.getDimSize(outType.getRank() - 1);
      if (ShapedType::isDynamic(dv) || dv > kMaxTileDim) {
        op.emitOpError() << "convert-flashattn-to-vector: needs a static "
                            "head_dim_v of at most "
                         << kMaxTileDim << ", got " << outType;
        return WalkResult::interrupt();
      }
      for (Value view : {op.getPartialOut(), op.getOut()}) {
        if (!hasUnitInnerStride(cast<MemRefType>(view.getType()))) {
          op.emitOpError() << "convert-flashattn-to-vector: 'partial_out' and "
                              "'out' need a unit stride in their last "
                              "dimension, got "
                           << view.getType();
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
    if (checked.wasInterrupted())
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateFlashAttnToVectorConversionPatterns(patterns, vectorBits);
    ConversionTarget target(getContext());
    target.addIllegalOp<TileInitOp, TileLoadOp, TileLoadPagedOp, TileWaitOp, TileReleaseOp,
                        TileQKOp, TileSoftmaxOp, TilePVOp, TileStoreOp, TileMapOp,
                        CombineOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace

void mlir::flashattn::populateFlashAttnToVectorConversionPatterns(
    RewritePatternSet &patterns, int64_t vectorBits) {
  patterns.add<LowerTileInit, LowerTileLoad, LowerTileLoadPaged, EraseTileSync<TileWaitOp>,
               EraseTileSync<TileReleaseOp>, LowerTileSoftmax, LowerTileStore, LowerTileMap,
               LowerCombine>(
      patterns.getContext());
  patterns.add<LowerTileQK, LowerTilePV>(patterns.getContext(), vectorBits);
}
