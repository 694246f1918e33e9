//===- TileGridKernels.cpp - flashattn-tile's sm90 combine and append ----===//
//
// The split-KV combine and the kv-cache append of an sm90 attention, as
// kernels in the attention's gpu.module: a grid-stride loop, one thread
// per element of out (the combine) or per 16-byte chunk of k_new and
// v_new (the append), over index arithmetic, memref and vector loads and
// stores and flashattn.merge_splits. Their arguments are the runtime's
// views of the launch's tensors (named by flashattn.arg);
// flashattn-sm90-warpgroup lowers them with index as i64 (element offsets
// past 2^31).
//
//===----------------------------------------------------------------------===//

#include "TileGridKernels.h"

#include "TileEmit.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::flashattn;

namespace {

/// flashattn-tile's index arithmetic, with unsigned division (every value
/// is a size or an index).
struct Index : Emit {
  Index(OpBuilder &b, Location loc) : Emit(b, loc) {}
  Value div(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
  Value rem(Value x, Value y) { return arith::RemUIOp::create(b, loc, x, y); }
  /// `e` split into its coordinates over `sizes` (outermost first).
  SmallVector<Value> delinearize(Value e, ArrayRef<Value> sizes) {
    SmallVector<Value> coords(sizes.size());
    for (size_t d = sizes.size(); d-- > 1;) {
      coords[d] = rem(e, sizes[d]);
      e = div(e, sizes[d]);
    }
    coords[0] = e;
    return coords;
  }
};

/// `gpu.func @name(types...) kernel` with the flashattn.arg `names` and
/// `threads` a block, at the end of `kernels`; the builder at its start.
gpu::GPUFuncOp kernelFunc(OpBuilder &b, Location loc, gpu::GPUModuleOp kernels, StringRef name,
                          ArrayRef<Type> types, ArrayRef<StringRef> names, int32_t threads) {
  b.setInsertionPointToEnd(kernels.getBody());
  auto func = gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(types, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({threads, 1, 1}));
  for (auto [i, argName] : llvm::enumerate(names))
    func.setArgAttr(i, "flashattn.arg", b.getStringAttr(argName));
  b.setInsertionPointToStart(&func.getBody().front());
  return func;
}

/// scf.for over [block_id x threads + thread_id, total) by grid_dim x
/// threads, `body` given the element; then gpu.return.
void gridStrideLoop(OpBuilder &b, Location loc, int64_t threads, Value total,
                    function_ref<void(Value)> body) {
  Index x(b, loc);
  Value t = x.c(threads);
  Value first = x.add(x.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), t),
                      gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
  Value stride = x.mul(gpu::GridDimOp::create(b, loc, gpu::Dimension::x), t);
  auto loop = scf::ForOp::create(b, loc, first, total, stride);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }
  gpu::ReturnOp::create(b, loc);
}

} // namespace

void mlir::flashattn::buildCombineKernel(CombineOp combine, OpBuilder &b,
                                         gpu::GPUModuleOp kernels, StringRef name) {
  OpBuilder::InsertionGuard guard(b);
  Location loc = combine.getLoc();
  // The combine's out and lse; varlen's [T, H, D] and [H, T] as a batch
  // of one, as the runtime launches it.
  auto outType = cast<MemRefType>(combine.getOut().getType());
  SmallVector<int64_t> outShape(outType.getShape());
  if (outShape.size() == 3)
    outShape.insert(outShape.begin(), 1);
  SmallVector<int64_t> lseShape = {outShape[0], outShape[2], outShape[1]};
  auto splits = [](ArrayRef<int64_t> shape) {
    SmallVector<int64_t> s = {ShapedType::kDynamic};
    llvm::append_range(s, shape);
    return s;
  };
  Type f32 = b.getF32Type();
  SmallVector<Type> types = {MemRefType::get(splits(outShape), f32),
                             MemRefType::get(splits(lseShape), f32),
                             MemRefType::get(outShape, outType.getElementType())};
  SmallVector<StringRef> names = {"partial_out", "partial_lse", "out"};
  if (combine.getLse()) {
    types.push_back(MemRefType::get(lseShape, f32));
    names.push_back("lse");
  }
  gpu::GPUFuncOp func = kernelFunc(b, loc, kernels, name, types, names, kCombineThreads);
  Value po = func.getArgument(0), pl = func.getArgument(1), out = func.getArgument(2);
  Value lse = combine.getLse() ? func.getArgument(3) : Value();
  Index x(b, loc);
  SmallVector<Value> sizes = {x.size(out, 0), x.size(out, 1), x.size(out, 2), x.size(out, 3)};
  Value total = x.mul(x.mul(x.mul(sizes[0], sizes[1]), sizes[2]), sizes[3]);
  // Element e = ((b * Sq + i) * H + h) * D + d of out.
  gridStrideLoop(b, loc, kCombineThreads, total, [&](Value e) {
    SmallVector<Value> at = x.delinearize(e, sizes);
    Value bi = at[0], i = at[1], h = at[2], d = at[3];
    auto merged = MergeSplitsOp::create(b, loc, f32, f32, po, at, pl, ValueRange{bi, h, i});
    Value value = merged.getValue();
    if (value.getType() != outType.getElementType())
      value = arith::TruncFOp::create(b, loc, outType.getElementType(), value);
    memref::StoreOp::create(b, loc, value, out, at);
    if (!lse)
      return;
    // A row's lse once, by its column 0.
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, d, x.c(0));
    auto ifOp = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    memref::StoreOp::create(b, loc, merged.getLse(), lse, ValueRange{bi, h, i});
  });
}

void mlir::flashattn::buildAppendKernel(AttentionOp op, OpBuilder &b, gpu::GPUModuleOp kernels,
                                        StringRef name) {
  OpBuilder::InsertionGuard guard(b);
  Location loc = op.getLoc();
  // k_new / v_new [B, S_new, Hkv, D]; the cache [B, capacity, Hkv, D], or
  // paged [pages, page_size, Hkv, D] (sm90: head_dim_v = head_dim).
  auto newType = cast<MemRefType>(op.getKNew().getType());
  Type et = newType.getElementType();
  auto words = MemRefType::get({ShapedType::kDynamic}, b.getI32Type());
  SmallVector<Type> types = {op.getKNew().getType(), op.getVNew().getType(), op.getK().getType(),
                             op.getV().getType(), words};
  SmallVector<StringRef> names = {"k_new", "v_new", "k", "v", "tile_table"};
  if (op.isPaged()) {
    types.push_back(words);
    names.push_back("page_table");
  }
  gpu::GPUFuncOp func = kernelFunc(b, loc, kernels, name, types, names, kAppendThreads);
  ValueRange args = func.getArguments();
  Index x(b, loc);
  // 16-byte chunks of 16-bit elements.
  int64_t perChunk = 16 / (et.getIntOrFloatBitWidth() / 8);
  SmallVector<Value> sizes = {x.size(args[0], 0), x.size(args[0], 1), x.size(args[0], 2),
                             x.div(x.size(args[0], 3), x.c(perChunk))};
  Value total = x.mul(x.mul(x.mul(sizes[0], sizes[1]), sizes[2]), sizes[3]);
  // Word 1 of the tile table: where the sequences' (cache_seqlens[b], page
  // list) pairs start.
  Value pairs = x.loadIndex(args[4], x.c(1));
  gridStrideLoop(b, loc, kAppendThreads, total, [&](Value e) {
    SmallVector<Value> at = x.delinearize(e, sizes);
    Value bi = at[0], r = at[1], g = at[2], col = x.mul(at[3], x.c(perChunk));
    Value pair = x.add(pairs, x.mul(bi, x.c(2)));
    // Position cache_seqlens[b] + r, inside the cache (the runtime checked).
    Value pos = x.add(x.loadIndex(args[4], pair), r);
    auto vec = VectorType::get({perChunk}, et);
    auto copy = [&](ValueRange to) {
      for (int t = 0; t < 2; ++t) {
        Value chunk = vector::LoadOp::create(b, loc, vec, args[t], ValueRange{bi, r, g, col},
                                             false, llvm::Align(16));
        vector::StoreOp::create(b, loc, chunk, args[2 + t], to, false, llvm::Align(16));
      }
    };
    if (!op.isPaged())
      return copy({bi, pos, g, col});
    // The sequence's page list [pos / page_size]; a page outside the pool
    // (an unchecked device block_table) is not written.
    Value ps = x.size(args[2], 1);
    Value list = x.loadIndex(args[4], x.add(pair, x.c(1)));
    Value page = x.loadIndex(args[5], x.add(list, x.div(pos, ps)));
    Value inPool = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, page, x.size(args[2], 0));
    auto ifOp = scf::IfOp::create(b, loc, inPool, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    copy({page, x.rem(pos, ps), g, col});
  });
}
