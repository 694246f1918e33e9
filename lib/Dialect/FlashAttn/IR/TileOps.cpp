//===- TileOps.cpp - Verifiers of the flashattn tile-level ops ------------===//
//
// The tile ops work on static f32 scratch tiles; these verifiers check that
// the tile shapes agree (M, N, D, Dv) and lie in [1, 65536], that tiles and
// views have a unit inner stride, and that views hold f16, bf16 or f32.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace mlir::flashattn;

static bool isStaticShape(MemRefType t) { return t.hasStaticShape(); }

/// A view with a unit stride in its last dimension.
static LogicalResult verifyUnitInnerStride(Operation *op, StringRef name,
                                           Value view) {
  auto type = cast<MemRefType>(view.getType());
  if (!hasUnitInnerStride(type))
    return op->emitOpError() << "'" << name
                             << "' must have a unit stride in its last "
                                "dimension, got "
                             << type;
  return success();
}

static LogicalResult verifyTiles(Operation *op, ArrayRef<StringRef> names,
                                 ArrayRef<Value> tiles) {
  for (auto [name, tile] : llvm::zip(names, tiles)) {
    auto type = cast<MemRefType>(tile.getType());
    if (!isStaticShape(type))
      return op->emitOpError() << "tile '" << name
                               << "' must have a static shape, got " << type;
    if (llvm::any_of(type.getShape(),
                     [](int64_t n) { return n < 1 || n > kMaxTileDim; }))
      return op->emitOpError() << "tile '" << name << "' dimensions must be in [1, "
                               << kMaxTileDim << "], got " << type;
    if (failed(verifyUnitInnerStride(op, name, tile)))
      return failure();
  }
  return success();
}

/// f16, bf16 or f32: the element types of the attention op's operands,
/// which the tile lowerings convert to and from f32.
static bool isTileViewElement(Type t) {
  return t.isF16() || t.isBF16() || t.isF32();
}

/// A `rank`-D f16, bf16 or f32 view with a unit inner stride; `what` names
/// its dimensions in the message (e.g. "view [rows, D]").
static LogicalResult verifyView(Operation *op, StringRef name, Value view,
                                int64_t rank, StringRef what) {
  auto type = cast<MemRefType>(view.getType());
  if (type.getRank() != rank || !isTileViewElement(type.getElementType()))
    return op->emitOpError() << "'" << name << "' must be a " << rank
                             << "-D f16, bf16 or f32 " << what << ", got " << type;
  return verifyUnitInnerStride(op, name, view);
}

static int64_t dim(Value v, unsigned i) {
  return cast<MemRefType>(v.getType()).getDimSize(i);
}

LogicalResult TileInitOp::verify() {
  if (failed(verifyTiles(*this, {"m", "l", "acc"}, {getM(), getL(), getAcc()})))
    return failure();
  int64_t m = dim(getM(), 0);
  if (dim(getL(), 0) != m || dim(getAcc(), 0) != m)
    return emitOpError() << "expects m [M], l [M] and acc [M, Dv] with one M, got "
                         << getM().getType() << ", " << getL().getType() << " and "
                         << getAcc().getType();
  return success();
}

/// A view of rows, [rows, C] or packed [rows, G, C] (G static, >= 1); its
/// column count C (`cols` names it in the message).
static FailureOr<int64_t> verifyRowView(Operation *op, StringRef name, Value view,
                                        StringRef cols) {
  auto type = cast<MemRefType>(view.getType());
  bool packed = type.getRank() == 3;
  std::string what = (packed ? "packed view [rows, G, " : "view [rows, ") + cols.str() + "]";
  if (failed(verifyView(op, name, view, packed ? 3 : 2, what)))
    return failure();
  int64_t g = packed ? type.getDimSize(1) : 1;
  if (ShapedType::isDynamic(g) || g < 1)
    return op->emitOpError() << "'" << name << "' packs a static number of heads G >= 1 (its "
                             << "dimension 1), got " << type;
  return type.getDimSize(type.getRank() - 1);
}

LogicalResult TileLoadOp::verify() {
  if (failed(verifyTiles(*this, {"tile"}, {getTile()})))
    return failure();
  FailureOr<int64_t> cols = verifyRowView(*this, "source", getSource(), "D");
  if (failed(cols))
    return failure();
  int64_t d = *cols;
  if (!ShapedType::isDynamic(d) && d != dim(getTile(), 1))
    return emitOpError() << "'source' has " << d << " columns but 'tile' has "
                         << dim(getTile(), 1);
  return success();
}

LogicalResult TileWaitOp::verify() {
  if (failed(verifyTiles(*this, {"tile"}, {getTile()})))
    return failure();
  std::optional<int64_t> rows = getConstantIntValue(getRows());
  if (rows && (*rows < 0 || *rows > dim(getTile(), 0)))
    return emitOpError() << "'rows' is " << *rows << " but 'tile' has "
                         << dim(getTile(), 0) << " rows";
  return success();
}

LogicalResult TileLoadPagedOp::verify() {
  if (failed(verifyTiles(*this, {"tile"}, {getTile()})))
    return failure();
  if (failed(verifyView(*this, "pool", getPool(), 4,
                        "paged cache [num_pages, page_size, kv_heads, D]")))
    return failure();
  auto poolType = cast<MemRefType>(getPool().getType());
  int64_t d = poolType.getDimSize(3);
  if (!ShapedType::isDynamic(d) && d != dim(getTile(), 1))
    return emitOpError() << "'pool' head_dim is " << d << " but 'tile' has "
                         << dim(getTile(), 1) << " columns";
  int64_t heads = getHeads();
  if (heads < 1 || dim(getTile(), 0) % heads)
    return emitOpError() << "'heads' must be positive and divide the tile's "
                         << dim(getTile(), 0) << " rows, got " << heads;
  return success();
}

LogicalResult TileQKOp::verify() {
  if (failed(verifyTiles(*this, {"q", "k", "s"}, {getQ(), getK(), getS()})))
    return failure();
  if (dim(getQ(), 1) != dim(getK(), 1) || dim(getS(), 0) != dim(getQ(), 0) ||
      dim(getS(), 1) != dim(getK(), 0))
    return emitOpError() << "expects q [M, D], k [N, D] and s [M, N], got "
                         << getQ().getType() << ", " << getK().getType()
                         << " and " << getS().getType();
  return success();
}

LogicalResult TileSoftmaxOp::verify() {
  if (failed(verifyTiles(*this, {"s", "m", "l", "acc"},
                         {getS(), getM(), getL(), getAcc()})))
    return failure();
  int64_t m = dim(getS(), 0);
  if (dim(getM(), 0) != m || dim(getL(), 0) != m || dim(getAcc(), 0) != m)
    return emitOpError() << "expects s [M, N], m [M], l [M] and acc [M, Dv] "
                            "with one M, got "
                         << getS().getType() << ", " << getM().getType()
                         << ", " << getL().getType() << " and "
                         << getAcc().getType();
  return success();
}

LogicalResult TilePVOp::verify() {
  if (failed(verifyTiles(*this, {"p", "v", "acc"}, {getP(), getV(), getAcc()})))
    return failure();
  if (dim(getP(), 1) != dim(getV(), 0) || dim(getAcc(), 0) != dim(getP(), 0) ||
      dim(getAcc(), 1) != dim(getV(), 1))
    return emitOpError() << "expects p [M, N], v [N, Dv] and acc [M, Dv], got "
                         << getP().getType() << ", " << getV().getType()
                         << " and " << getAcc().getType();
  return success();
}

LogicalResult TileStoreOp::verify() {
  if (failed(verifyTiles(*this, {"acc", "m", "l"}, {getAcc(), getM(), getL()})))
    return failure();
  int64_t m = dim(getAcc(), 0);
  if (dim(getM(), 0) != m || dim(getL(), 0) != m)
    return emitOpError() << "expects acc [M, Dv], m [M] and l [M], got "
                         << getAcc().getType() << ", " << getM().getType()
                         << " and " << getL().getType();
  FailureOr<int64_t> cols = verifyRowView(*this, "out", getOut(), "Dv");
  if (failed(cols))
    return failure();
  auto outType = cast<MemRefType>(getOut().getType());
  bool packed = outType.getRank() == 3;
  int64_t dv = *cols;
  if (!ShapedType::isDynamic(dv) && dv != dim(getAcc(), 1))
    return emitOpError() << "'out' has " << dv << " columns but 'acc' has "
                         << dim(getAcc(), 1);
  if (Value lse = getLse()) {
    auto lseType = cast<MemRefType>(lse.getType());
    bool f32 = lseType.getElementType().isF32();
    if (!packed && (lseType.getRank() != 1 || !f32))
      return emitOpError() << "'lse' must be a 1-D f32 view [rows], got " << lseType;
    if (packed && (lseType.getRank() != 2 || !f32 ||
                   lseType.getDimSize(0) != outType.getDimSize(1)))
      return emitOpError() << "'lse' must be a 2-D f32 view [G, rows] with out's G = "
                           << outType.getDimSize(1) << " heads, got " << lseType;
  }
  return success();
}

LogicalResult TileMapOp::verify() {
  if (failed(verifyTiles(*this, {"s"}, {getS()})))
    return failure();
  if (getBody().empty() || getBody().front().empty())
    return emitOpError() << "body must be one block ending in a flashattn.yield";
  auto bound = [&](Value v, int64_t dimSize, StringRef what) -> LogicalResult {
    std::optional<int64_t> n = getConstantIntValue(v);
    if (n && (*n < 0 || *n > dimSize))
      return emitOpError() << "'" << what << "' must be in [0, " << dimSize << "], got " << *n;
    return success();
  };
  auto tileType = cast<MemRefType>(getS().getType());
  if (failed(bound(getRows(), tileType.getDimSize(0), "rows")) ||
      failed(bound(getCols(), tileType.getDimSize(1), "cols")))
    return failure();
  Block &body = getBody().front();
  Builder b(getContext());
  SmallVector<Type> expected{b.getF32Type(), b.getIndexType(), b.getIndexType()};
  if (TypeRange(body.getArgumentTypes()) != TypeRange(expected)) {
    std::string got;
    llvm::raw_string_ostream os(got);
    llvm::interleaveComma(body.getArgumentTypes(), os);
    return emitOpError() << "body must take (f32, index, index): the score and its row and "
                            "column in the tile, got ("
                         << got << ")";
  }
  auto yield = dyn_cast<YieldOp>(&body.back());
  if (!yield || yield.getValues().size() != 1 || !yield.getValues()[0].getType().isF32())
    return emitOpError() << "body must end in a flashattn.yield of one f32 (the new score)";
  return success();
}

void TileMapOp::splitRowOps(SmallVectorImpl<Operation *> &rowOps,
                            SmallVectorImpl<Operation *> &elementOps) {
  Block &body = getBody().front();
  // Values that vary along a row: the score, j, and what uses either. Only
  // pure ops (no effects, speculatable: no division by a value that may be
  // 0) move to the row, where they run even for a row with no column.
  llvm::SmallPtrSet<Value, 16> perElement{body.getArgument(0), body.getArgument(2)};
  for (Operation &op : body.without_terminator()) {
    bool varies = op.getNumRegions() || !isPure(&op) ||
                  llvm::any_of(op.getOperands(),
                               [&](Value v) { return perElement.contains(v); });
    if (varies)
      perElement.insert(op.result_begin(), op.result_end());
    (varies ? elementOps : rowOps).push_back(&op);
  }
}

Value mlir::flashattn::loadedTile(Operation *load) {
  if (auto l = dyn_cast<TileLoadOp>(load))
    return l.getTile();
  return cast<TileLoadPagedOp>(load).getTile();
}

Value mlir::flashattn::loadedRows(Operation *load) {
  if (auto l = dyn_cast<TileLoadOp>(load))
    return l.getRows();
  return cast<TileLoadPagedOp>(load).getRows();
}

bool mlir::flashattn::isAsyncLoad(Operation *load) {
  if (auto l = dyn_cast<TileLoadOp>(load))
    return l.getAsync();
  return cast<TileLoadPagedOp>(load).getAsync();
}
