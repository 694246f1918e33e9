//===- TileEmit.h - flashattn-tile's builder helpers ------------*- C++ -*-===//
//
// Index arithmetic, memref sizes, i32 table loads and rank-reduced views at
// one location: what flashattn-tile's loops (Tile.cpp) and its sm90 combine
// and append kernels (TileGridKernels.cpp) are built with.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_LIB_TRANSFORMS_TILEEMIT_H
#define FLASHATTN_LIB_TRANSFORMS_TILEEMIT_H

#include "flashattn/Utils/IntArith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir::flashattn {

/// Index arithmetic on an OpBuilder at one location, and the views,
/// loads and sizes of the memrefs flashattn-tile reads.
struct Emit : IntArith {
  Emit(OpBuilder &b, Location loc) : IntArith{b, loc, b.getIndexType()} {}

  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value dim(Value memref, int64_t i) {
    return memref::DimOp::create(b, loc, memref, i);
  }
  /// Loads an i32 element and casts it to index.
  Value loadIndex(Value memref, ValueRange indices) {
    Value v = memref::LoadOp::create(b, loc, memref, indices);
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  }
  /// A memref.dim, or the constant when the dimension is static.
  Value size(Value memref, int64_t i) {
    int64_t s = cast<MemRefType>(memref.getType()).getDimSize(i);
    return ShapedType::isDynamic(s) ? dim(memref, i) : c(s);
  }

  /// The rank-reduced view of `src` at `offsets` with `sizes`; dimensions
  /// listed in `dropped` (size 1) are removed.
  Value view(Value src, ArrayRef<OpFoldResult> offsets,
             ArrayRef<OpFoldResult> sizes, ArrayRef<int64_t> dropped) {
    auto srcType = cast<MemRefType>(src.getType());
    SmallVector<OpFoldResult> strides(srcType.getRank(), b.getIndexAttr(1));
    // Constants become static offsets and sizes.
    auto fold = [](ArrayRef<OpFoldResult> in) {
      SmallVector<OpFoldResult> outs;
      for (OpFoldResult ofr : in)
        outs.push_back(isa<Value>(ofr) ? getAsOpFoldResult(cast<Value>(ofr))
                                       : ofr);
      return outs;
    };
    SmallVector<OpFoldResult> offsetsF = fold(offsets), sizesF = fold(sizes);
    offsets = offsetsF;
    sizes = sizesF;
    // The full-rank view's layout, minus exactly the `dropped` dimensions
    // (inferring them from the reduced shape alone picks the wrong unit
    // dimensions when others have size 1 too, e.g. head_dim 1).
    MemRefType full =
        memref::SubViewOp::inferResultType(srcType, offsets, sizes, strides);
    auto [fullStrides, fullOffset] = full.getStridesAndOffset();
    SmallVector<int64_t> shape, keptStrides;
    for (int64_t i = 0, e = full.getRank(); i < e; ++i) {
      if (llvm::is_contained(dropped, i))
        continue;
      shape.push_back(full.getDimSize(i));
      keptStrides.push_back(fullStrides[i]);
    }
    auto type = MemRefType::get(
        shape, srcType.getElementType(),
        StridedLayoutAttr::get(b.getContext(), fullOffset, keptStrides),
        srcType.getMemorySpace());
    return memref::SubViewOp::create(b, loc, type, src, offsets, sizes,
                                     strides);
  }
};

} // namespace mlir::flashattn

#endif
