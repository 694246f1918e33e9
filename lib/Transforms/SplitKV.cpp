//===- SplitKV.cpp - flashattn-split-kv -----------------------------------===//
//
// Split-KV ("flash-decoding", Dao et al. 2023): an attention whose plan has
// num_splits > 1 becomes one attention in the partial form, writing f32
// partial outputs and lse over a leading split dimension, followed by
// flashattn.combine into the original outs.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Transforms/Passes.h"

#include "flashattn/Utils/LoopBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <functional>
#include <limits>

namespace mlir::flashattn {
#define GEN_PASS_DEF_FLASHATTNSPLITKV
#include "flashattn/Transforms/Passes.h.inc"
} // namespace mlir::flashattn

using namespace mlir;
using namespace mlir::flashattn;

namespace {
/// One dimension of a new buffer: static, or read from `source` dim `index`.
struct DimRef {
  int64_t size;
  Value source;
  int64_t index;
};

static Value dimValue(OpBuilder &b, Location loc, Value source, int64_t i) {
  if (isa<MemRefType>(source.getType()))
    return memref::DimOp::create(b, loc, source, i);
  return tensor::DimOp::create(b, loc, source, i);
}

/// Stores `value` into every element of a memref (nested scf.for).
static void fillMemRef(OpBuilder &b, Location loc, Value buffer, Value value) {
  int64_t rank = cast<MemRefType>(buffer.getType()).getRank();
  std::function<void(int64_t, SmallVector<Value>)> nest =
      [&](int64_t dim, SmallVector<Value> idx) {
        if (dim == rank) {
          memref::StoreOp::create(b, loc, value, buffer, idx);
          return;
        }
        buildFor(b, loc, arith::ConstantIndexOp::create(b, loc, 0),
                 dimValue(b, loc, buffer, dim), [&](Value iv) {
                   SmallVector<Value> next = idx;
                   next.push_back(iv);
                   nest(dim + 1, next);
                 });
      };
  nest(0, {});
}

/// Allocates an f32 buffer (memref.alloc or tensor.empty) of `dims`, filled
/// with `fill` when given (stores on a memref, tensor.splat on a tensor).
static Value createBuffer(OpBuilder &b, Location loc, bool tensors,
                          ArrayRef<DimRef> dims,
                          std::optional<float> fill = std::nullopt) {
  SmallVector<int64_t> shape;
  SmallVector<Value> dynamic;
  for (const DimRef &d : dims) {
    shape.push_back(d.size);
    if (ShapedType::isDynamic(d.size))
      dynamic.push_back(dimValue(b, loc, d.source, d.index));
  }
  Type f32 = b.getF32Type();
  Value value =
      fill ? arith::ConstantOp::create(b, loc, b.getF32FloatAttr(*fill)).getResult()
           : Value();
  if (tensors) {
    auto type = RankedTensorType::get(shape, f32);
    if (fill)
      return tensor::SplatOp::create(b, loc, value, type, dynamic);
    return tensor::EmptyOp::create(b, loc, shape, f32, dynamic);
  }
  Value buffer =
      memref::AllocOp::create(b, loc, MemRefType::get(shape, f32), dynamic);
  if (fill)
    fillMemRef(b, loc, buffer, value);
  return buffer;
}

struct SplitAttention : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    PlanAttr plan = op.getPlanAttr();
    if (!plan || plan.getNumSplits() <= 1 || op.isSplitPartial())
      return rewriter.notifyMatchFailure(op, "not a planned split-KV attention");
    Location loc = op.getLoc();
    int64_t splits = plan.getNumSplits();
    bool tensors = isa<RankedTensorType>(op.getQ().getType());
    Value q = op.getQ(), out = op.getOut();
    auto qType = cast<ShapedType>(q.getType());
    auto outType = cast<ShapedType>(out.getType());

    // Partial out: [S] ++ shape(out); partial lse: [S] ++ lse shape.
    SmallVector<DimRef> poDims{{splits, nullptr, 0}};
    for (int64_t i = 0; i < outType.getRank(); ++i)
      poDims.push_back({outType.getDimSize(i), out, i});
    int64_t hqIndex = qType.getRank() - 2;
    SmallVector<DimRef> plDims{{splits, nullptr, 0}};
    if (op.isVarlenQ()) {
      plDims.push_back({qType.getDimSize(hqIndex), q, hqIndex});
      plDims.push_back({qType.getDimSize(0), q, 0});
    } else {
      plDims.push_back({qType.getDimSize(0), q, 0});
      plDims.push_back({qType.getDimSize(hqIndex), q, hqIndex});
      plDims.push_back({qType.getDimSize(1), q, 1});
    }
    Value partialOut = createBuffer(rewriter, loc, tensors, poDims);
    // lse_s starts at -inf (an empty split): rows no tile writes (a packed q
    // longer than its sequences) then combine to out 0, lse -inf, and the
    // combine never weighs memory nothing wrote.
    Value partialLse = createBuffer(rewriter, loc, tensors, plDims,
                                    -std::numeric_limits<float>::infinity());

    SmallVector<Type> partialTypes;
    if (tensors)
      partialTypes = {partialOut.getType(), partialLse.getType()};
    auto partial = AttentionOp::create(
        rewriter, loc, partialTypes, q, op.getK(), op.getV(),
        op.getCuSeqlensQ(), op.getCuSeqlensK(), op.getSequsedK(),
        op.getBlockTable(), op.getAlibiSlopes(), op.getKNew(), op.getVNew(),
        op.getCacheSeqlens(), op.getQStart(), op.getSeqlenQ(), ValueRange{partialOut, partialLse},
        op.getScaleAttr(), op.getCausalAttr(), op.getWindowSizeAttr(),
        op.getSoftcapAttr(), rewriter.getI64IntegerAttr(splits),
        op.getPackGqaAttr(), plan);
    rewriter.inlineRegionBefore(op.getScore(), partial.getScore(),
                                partial.getScore().end());
    rewriter.inlineRegionBefore(op.getMask(), partial.getMask(),
                                partial.getMask().end());

    Value pOut = tensors ? partial.getResult(0) : partialOut;
    Value pLse = tensors ? partial.getResult(1) : partialLse;
    auto combine = CombineOp::create(rewriter, loc, op.getResultTypes(), pOut,
                                     pLse, op.getOuts());
    if (!tensors) {
      memref::DeallocOp::create(rewriter, loc, partialOut);
      memref::DeallocOp::create(rewriter, loc, partialLse);
    }
    rewriter.replaceOp(op, combine.getResults());
    return success();
  }
};

struct FlashAttnSplitKVPass
    : public flashattn::impl::FlashAttnSplitKVBase<FlashAttnSplitKVPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFlashAttnSplitKVPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace

void mlir::flashattn::populateFlashAttnSplitKVPatterns(
    RewritePatternSet &patterns) {
  patterns.add<SplitAttention>(patterns.getContext());
}
