//===- GridKernels.cpp - flashattn-sm90-warpgroup's combine and append ----===//
//
// flashattn-tile's combine and append kernels (grid-stride loops of one
// thread per element or 16-byte chunk) become llvm.func kernels: each
// memref argument is a pointer and its dims in the ABI (#flashattn.param
// ptr / dims; the tile and page tables are the runtime's own parameters),
// index is i64 (element offsets past 2^31), memref and vector accesses are
// address arithmetic on the identity layouts, the gpu ids are NVVM's, and
// flashattn.merge_splits is the online merge of Sm90Merge.cpp (16 splits,
// 32 loads, a step). Other
// arith, math and scf ops are kept (the pipeline lowers them later).
//
//===----------------------------------------------------------------------===//

#include "GridKernels.h"

#include "Sm90Abi.h"
#include "Sm90Merge.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::flashattn;

namespace {

/// A memref argument: its pointer and its dims (i64; constants where its
/// type knows them); the tables are read-only (invariant loads).
struct Tensor {
  Value ptr;
  SmallVector<Value> dims;
  bool readOnly = false;
};

class GridKernel {
public:
  GridKernel(gpu::GPUFuncOp tiled, OpBuilder &b)
      : tiled(tiled), b(b), loc(tiled.getLoc()), w(b, loc) {}
  LogicalResult build();

private:
  LogicalResult block(Block &src);
  LogicalResult op(Operation &src);
  LogicalResult forLoop(scf::ForOp src);
  LogicalResult branch(scf::IfOp src);
  LogicalResult access(Operation &src);
  void merge(MergeSplitsOp src);
  /// The element offset (i64) of `indices` in `t`'s dims from `first` on.
  Value offset(const Tensor &t, ValueRange indices, size_t first = 0);
  Value i64(Value index) { return map.lookup(index); }

  gpu::GPUFuncOp tiled;
  OpBuilder &b;
  Location loc;
  KernelEmitter w;
  IRMapping map;
  DenseMap<Value, Tensor> tensors;
};

LogicalResult GridKernel::build() {
  AbiBuilder abi{b.getContext(), {}};
  // The tensors' pointers, then their dims, then the tables.
  for (int pass = 0; pass < 3; ++pass)
    for (unsigned i = 0; i < tiled.getNumArguments(); ++i) {
      StringRef name = tiled.getArgAttrOfType<StringAttr>(i, "flashattn.arg").getValue();
      bool table = name == "tile_table" || name == "page_table";
      std::string stem = "t" + std::to_string(i);
      if (pass == 0 && !table)
        abi.ptr(name, stem);
      if (pass == 1 && !table)
        abi.dims(name, stem, cast<MemRefType>(tiled.getArgument(i).getType()).getRank());
      if (pass == 2 && table)
        abi.scalar(name == "tile_table" ? ParamKind::tile_table : ParamKind::page_table, stem);
    }
  DenseI32ArrayAttr known = tiled.getKnownBlockSizeAttr();
  int64_t threads = known ? known[0] : 128;
  KernelFunc P = buildKernelFunc(w, tiled.getName().str() + "_wg", abi.params, threads, 0,
                                 /*minCtas=*/false);
  for (unsigned i = 0; i < tiled.getNumArguments(); ++i) {
    Value arg = tiled.getArgument(i);
    StringRef name = tiled.getArgAttrOfType<StringAttr>(i, "flashattn.arg").getValue();
    std::string stem = "t" + std::to_string(i);
    Tensor t{P[stem], {}, name == "tile_table" || name == "page_table"};
    auto type = cast<MemRefType>(arg.getType());
    // (The tables' extents are the runtime's: no dims.)
    for (int64_t d = 0; !t.readOnly && d < type.getRank(); ++d)
      t.dims.push_back(type.isDynamicDim(d) ? P[stem + "d" + std::to_string(d)]
                                            : w.i64(type.getDimSize(d)));
    tensors[arg] = t;
  }
  return block(tiled.getBody().front());
}

LogicalResult GridKernel::block(Block &src) {
  for (Operation &o : src)
    if (failed(op(o)))
      return failure();
  return success();
}

/// `v`'s type with index as i64.
static Type asI64(Type t, OpBuilder &b) { return t.isIndex() ? b.getI64Type() : t; }

LogicalResult GridKernel::op(Operation &src) {
  if (auto c = dyn_cast<arith::ConstantIndexOp>(src)) {
    map.map(c.getResult(), w.i64(c.value()));
    return success();
  }
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(src)) {
    Value in = map.lookup(src.getOperand(0));
    Type to = asI64(src.getResult(0).getType(), b);
    unsigned from = in.getType().getIntOrFloatBitWidth(), bits = to.getIntOrFloatBitWidth();
    if (from < bits)
      in = isa<arith::IndexCastOp>(src) ? w.extsi(in, to) : w.extui(in, to);
    else if (from > bits)
      in = w.trunci(in, to);
    map.map(src.getResult(0), in);
    return success();
  }
  if (isa<arith::ArithDialect, math::MathDialect>(src.getDialect()) && !src.getNumRegions()) {
    Operation *clone = b.clone(src, map);
    for (Value r : clone->getResults())
      r.setType(asI64(r.getType(), b));
    return success();
  }
  if (auto loop = dyn_cast<scf::ForOp>(src))
    return forLoop(loop);
  if (auto ifOp = dyn_cast<scf::IfOp>(src))
    return branch(ifOp);
  if (auto yield = dyn_cast<scf::YieldOp>(src)) {
    SmallVector<Value> values;
    for (Value v : yield.getOperands())
      values.push_back(map.lookup(v));
    scf::YieldOp::create(b, loc, values);
    return success();
  }
  if (auto dim = dyn_cast<memref::DimOp>(src)) {
    std::optional<int64_t> d = dim.getConstantIndex();
    if (!d || !tensors.count(dim.getSource()) || tensors[dim.getSource()].readOnly)
      return dim.emitOpError("flashattn-sm90-warpgroup: constant dims of the kernel's "
                             "tensors only (not of the tables)");
    map.map(dim.getResult(), tensors[dim.getSource()].dims[*d]);
    return success();
  }
  if (isa<memref::LoadOp, memref::StoreOp, vector::LoadOp, vector::StoreOp>(src))
    return access(src);
  if (auto merged = dyn_cast<MergeSplitsOp>(src)) {
    if (!tensors.count(merged.getPartialOut()) || !tensors.count(merged.getPartialLse()))
      return merged.emitOpError("flashattn-sm90-warpgroup: merges the kernel's arguments only");
    merge(merged);
    return success();
  }
  if (auto id = dyn_cast<gpu::ThreadIdOp>(src); id && id.getDimension() == gpu::Dimension::x) {
    map.map(id.getResult(), w.extui(w.tid(), w.i64T));
    return success();
  }
  if (auto id = dyn_cast<gpu::BlockIdOp>(src); id && id.getDimension() == gpu::Dimension::x) {
    map.map(id.getResult(), w.extui(w.ctaid(), w.i64T));
    return success();
  }
  if (auto id = dyn_cast<gpu::GridDimOp>(src); id && id.getDimension() == gpu::Dimension::x) {
    map.map(id.getResult(), w.extui(w.nctaid(), w.i64T));
    return success();
  }
  if (isa<gpu::ReturnOp>(src)) {
    LLVM::ReturnOp::create(b, loc, ValueRange{});
    return success();
  }
  return src.emitOpError("flashattn-sm90-warpgroup: a combine or append kernel takes arith, "
                         "math, scf, memref and vector accesses, x ids and "
                         "flashattn.merge_splits only");
}

LogicalResult GridKernel::forLoop(scf::ForOp src) {
  SmallVector<Value> inits;
  for (Value v : src.getInitArgs())
    inits.push_back(map.lookup(v));
  auto loop = scf::ForOp::create(b, loc, i64(src.getLowerBound()), i64(src.getUpperBound()),
                                 i64(src.getStep()), inits);
  if (!loop.getBody()->empty())
    loop.getBody()->getTerminator()->erase();
  map.map(src.getInductionVar(), loop.getInductionVar());
  map.map(src.getRegionIterArgs(), loop.getRegionIterArgs());
  map.map(src.getResults(), loop.getResults());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(loop.getBody());
  return block(*src.getBody());
}

LogicalResult GridKernel::branch(scf::IfOp src) {
  SmallVector<Type> types;
  for (Type t : src.getResultTypes())
    types.push_back(asI64(t, b));
  bool otherwise = !src.getElseRegion().empty();
  auto ifOp = scf::IfOp::create(b, loc, types, map.lookup(src.getCondition()), otherwise);
  map.map(src.getResults(), ifOp.getResults());
  OpBuilder::InsertionGuard guard(b);
  for (auto [from, to] : {std::pair(&src.getThenRegion(), &ifOp.getThenRegion()),
                          std::pair(&src.getElseRegion(), &ifOp.getElseRegion())}) {
    if (from->empty())
      continue;
    Block &dest = to->front();
    if (!dest.empty())
      dest.getTerminator()->erase();
    b.setInsertionPointToEnd(&dest);
    if (failed(block(from->front())))
      return failure();
  }
  return success();
}

Value GridKernel::offset(const Tensor &t, ValueRange indices, size_t first) {
  Value off = i64(indices[0]);
  for (size_t d = 1; d < indices.size(); ++d)
    off = w.addi(w.muli(off, t.dims[first + d]), i64(indices[d]));
  return off;
}

// memref.load / store and vector.load / store of a kernel argument: the
// address of the first element, the load or store of its type (16-byte
// chunks with the alignment the op says).
LogicalResult GridKernel::access(Operation &src) {
  bool store = isa<memref::StoreOp, vector::StoreOp>(src);
  Value memref = src.getOperand(store ? 1 : 0);
  ValueRange indices = src.getOperands().drop_front(store ? 2 : 1);
  if (!tensors.count(memref))
    return src.emitOpError("flashattn-sm90-warpgroup: accesses of the kernel's arguments only");
  const Tensor &t = tensors[memref];
  Type elem = cast<MemRefType>(memref.getType()).getElementType();
  Value ptr = w.gep(t.ptr, w.gptrT, elem, offset(t, indices));
  unsigned align = 0;
  if (auto a = src.getAttrOfType<IntegerAttr>("alignment"))
    align = a.getInt();
  if (store) {
    w.store(map.lookup(src.getOperand(0)), ptr, align);
    return success();
  }
  Type type = src.getResult(0).getType();
  map.map(src.getResult(0), w.load(type, ptr, t.readOnly, false, align));
  return success();
}

// The split s of partial_out[s, out_indices] and partial_lse[s,
// lse_indices], s * (the product of the other dims) past the element.
void GridKernel::merge(MergeSplitsOp src) {
  auto split = [&](Value memref, ValueRange indices) {
    const Tensor &t = tensors[memref];
    Value stride = t.dims[1];
    for (size_t d = 2; d < t.dims.size(); ++d)
      stride = w.muli(stride, t.dims[d]);
    return std::make_tuple(t.ptr, stride, offset(t, indices, 1));
  };
  auto [lPtr, lStride, lOff] = split(src.getPartialLse(), src.getLseIndices());
  auto [oPtr, oStride, oOff] = split(src.getPartialOut(), src.getOutIndices());
  auto lseAt = [&, lPtr = lPtr, lStride = lStride, lOff = lOff](Value s) {
    return w.load(w.f32T, splitElement(w, lPtr, s, lStride, lOff, w.f32T));
  };
  auto outAt = [&, oPtr = oPtr, oStride = oStride, oOff = oOff](Value s) {
    return KernelEmitter::Values{w.load(w.f32T, splitElement(w, oPtr, s, oStride, oOff, w.f32T))};
  };
  KernelEmitter::Values value;
  Value S = tensors[src.getPartialLse()].dims[0];
  Value lse = emitMerge(w, S, 1, lseAt, outAt, value).second;
  map.map(src.getValue(), value[0]);
  map.map(src.getLse(), lse);
}

} // namespace

bool mlir::flashattn::isGridKernel(gpu::GPUFuncOp tiled) {
  if (!tiled.getNumArguments())
    return false;
  auto name = tiled.getArgAttrOfType<StringAttr>(0, "flashattn.arg");
  return name && (name.getValue() == "partial_out" || name.getValue() == "k_new");
}

LogicalResult mlir::flashattn::lowerGridKernel(gpu::GPUFuncOp tiled, OpBuilder &b) {
  for (unsigned i = 0; i < tiled.getNumArguments(); ++i) {
    auto type = dyn_cast<MemRefType>(tiled.getArgument(i).getType());
    if (!tiled.getArgAttrOfType<StringAttr>(i, "flashattn.arg") || !type ||
        !type.getLayout().isIdentity())
      return tiled.emitError("flashattn-sm90-warpgroup: argument ")
             << i << " of a combine or append kernel is a named memref with an identity layout";
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(tiled);
  if (succeeded(GridKernel(tiled, b).build()))
    return success();
  // (No half-built function left behind.)
  auto kernels = tiled->getParentOfType<gpu::GPUModuleOp>();
  if (auto built = kernels.lookupSymbol<LLVM::LLVMFuncOp>(tiled.getName().str() + "_wg"))
    built.erase();
  return failure();
}
