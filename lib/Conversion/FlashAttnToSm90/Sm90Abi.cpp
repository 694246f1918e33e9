//===- Sm90Abi.cpp - the sm_90a kernels' parameter lists ------------------===//

#include "Sm90Abi.h"

using namespace mlir;
using namespace mlir::flashattn;

void AbiBuilder::add(ParamKind kind, StringRef arg, std::string stem, int64_t rank,
                     ArrayRef<int64_t> box, int64_t group, bool panels, int64_t bytes) {
  params.push_back({KernelParamAttr::get(ctx, kind, arg, rank,
                                         box.empty() ? DenseI64ArrayAttr()
                                                     : DenseI64ArrayAttr::get(ctx, box),
                                         box.empty() ? 0 : 128, group, panels, bytes),
                    std::move(stem)});
}

KernelFunc mlir::flashattn::buildKernelFunc(KernelEmitter &w, const std::string &name,
                           const std::vector<AbiParam> &abi, int64_t threads, int64_t smem,
                           bool minCtas) {
  MLIRContext *ctx = w.b.getContext();
  struct Llvm {
    std::string name;
    Type type;
    int64_t byvalBytes = 0, align = 0;
  };
  std::vector<Llvm> params;
  SmallVector<Attribute> abiAttrs;
  for (const AbiParam &p : abi) {
    abiAttrs.push_back(p.attr);
    switch (p.attr.getKind()) {
    case ParamKind::dims:
      for (int64_t i = 0; i < p.attr.getRank(); ++i)
        params.push_back({p.stem + "d" + std::to_string(i), w.i64T});
      break;
    case ParamKind::tma:
      params.push_back({p.stem + "map", w.ptrT, 128, 64});
      break;
    case ParamKind::tile_table_inline:
      params.push_back({p.stem, w.ptrT, p.attr.getBytes(), 16});
      break;
    default:
      params.push_back({p.stem, w.gptrT});
    }
  }
  SmallVector<Type> types;
  for (const Llvm &p : params)
    types.push_back(p.type);
  auto fnType = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), types);
  auto func = LLVM::LLVMFuncOp::create(w.b, w.loc, name, fnType);
  func->setAttr("nvvm.kernel", UnitAttr::get(ctx));
  func->setAttr("nvvm.maxntid", DenseI32ArrayAttr::get(ctx, {int32_t(threads), 1, 1}));
  if (minCtas)
    func->setAttr("nvvm.minctasm", w.b.getI32IntegerAttr(1));
  func->setAttr("flashattn.abi",
                KernelAbiAttr::get(ctx, threads, smem, ArrayAttr::get(ctx, abiAttrs)));
  KernelFunc kf{func, {}};
  Block *entry = func.addEntryBlock(w.b);
  for (auto [i, p] : llvm::enumerate(params)) {
    if (p.byvalBytes) {
      func.setArgAttr(i, "llvm.byval",
                      TypeAttr::get(LLVM::LLVMArrayType::get(w.i8T, p.byvalBytes)));
      func.setArgAttr(i, "llvm.align", w.b.getI64IntegerAttr(p.align));
      func.setArgAttr(i, "nvvm.grid_constant", UnitAttr::get(ctx));
    }
    kf.args[p.name] = entry->getArgument(i);
  }
  w.b.setInsertionPointToStart(entry);
  return kf;
}

void mlir::flashattn::declareKernelSmem(KernelEmitter &w, const std::string &name) {
  LLVM::GlobalOp::create(w.b, w.loc, LLVM::LLVMArrayType::get(w.i8T, 0), false,
                         LLVM::Linkage::External, name + "_smem", Attribute(), 1024, 3);
}

namespace {
/// One k16 step of acc (+)= A B by wgmma.mma_async (PTX ISA 9.7.15.5):
/// m64nNk16, A and B from shared memory by descriptors (A K-major, B
/// K-major: row / col), f32 accumulation; `first` zeroes the accumulator.
Value wgmmaSS(KernelEmitter &w, Type accType, Value acc, Value descA, Value descB, int64_t n,
              bool f16, bool first) {
  MLIRContext *ctx = w.b.getContext();
  const NVVM::WGMMATypes type = f16 ? NVVM::WGMMATypes::f16 : NVVM::WGMMATypes::bf16;
  return NVVM::WgmmaMmaAsyncOp::create(
      w.b, w.loc, accType, acc, descA, descB, NVVM::MMAShapeAttr::get(ctx, 64, n, 16),
      NVVM::WGMMATypesAttr::get(ctx, type), NVVM::WGMMATypesAttr::get(ctx, type),
      NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
      NVVM::WGMMAScaleOutAttr::get(ctx, first ? NVVM::WGMMAScaleOut::zero
                                              : NVVM::WGMMAScaleOut::one),
      NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
      NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
      NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
      NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::col), NVVM::MMAIntOverflowAttr());
}

/// A wgmma shared-memory descriptor (PTX ISA 9.7.15.5.1.2) kept for
/// stepping through a tile: its low word (start address >> 4, leading
/// byte offset >> 4) and its constant high word (stride byte offset >> 4,
/// 128-byte swizzle). A step of `bytes` adds bytes >> 4 to the low word, a
/// 32-bit add where the address field cannot carry (shared memory below
/// 256 KB): ptxas then keeps one uniform register a tile, not a 64-bit
/// address a step.
struct SmemDesc {
  Value lo;
  int64_t hi;
};

/// The descriptor of the byte at `offset` past `smem` (!llvm.ptr<3>).
SmemDesc smemDescBase(KernelEmitter &w, Value smem, int64_t offset, int64_t lbo, int64_t sbo) {
  Value addr = w.ptrtoint(w.gep(smem, w.sptrT, w.i8T, int32_t(offset)), w.i32T);
  Value start = w.shrui(w.andi(addr, w.i32(0x3FFFF)), w.i32(4));
  return SmemDesc{w.ori(start, w.i32((lbo >> 4) << 16)), (sbo >> 4) | (int64_t(1) << 30)};
}

/// `d`'s descriptor `bytes` further, as the i64 a wgmma takes.
Value descAt(KernelEmitter &w, const SmemDesc &d, int64_t bytes) {
  Value lo = bytes ? w.addi(d.lo, w.i32(bytes >> 4)) : d.lo;
  return w.ori(w.extui(lo, w.i64T), w.i64(d.hi << 32));
}
} // namespace

Value mlir::flashattn::quadReduce(KernelEmitter &w, Value v, bool max) {
  for (int64_t sh : {1, 2}) {
    Value o = w.shfl(NVVM::ShflKind::bfly, w.i32(-1), v, w.i32(sh), w.i32(31));
    v = max ? w.maxnumf(v, o) : w.addf(v, o);
  }
  return v;
}

Value mlir::flashattn::chainReduce(KernelEmitter &w, ArrayRef<Value> vals, int64_t chains,
                                   bool max) {
  assert(!vals.empty() && "a row holds at least one score per thread");
  auto combine = [&](Value a, Value c) { return max ? w.maxnumf(a, c) : w.addf(a, c); };
  size_t n = std::max<int64_t>(chains, 1);
  std::vector<Value> acc;
  for (size_t i = 0; i < vals.size(); ++i) {
    if (i < n)
      acc.push_back(vals[i]);
    else
      acc[i % n] = combine(acc[i % n], vals[i]);
  }
  while (acc.size() > 1) {
    std::vector<Value> next;
    for (size_t i = 0; i + 1 < acc.size(); i += 2)
      next.push_back(combine(acc[i], acc[i + 1]));
    if (acc.size() % 2)
      next.push_back(acc.back());
    acc.swap(next);
  }
  return acc.front();
}

Value mlir::flashattn::wgmmaQK(KernelEmitter &w, Value qSmem, Value kSmem, Type accType,
                               int64_t qOff, int64_t kOff, int64_t rows, int64_t keys, int64_t d,
                               bool f16, std::optional<KVTileLayout> kLayout) {
  KVTileLayout kl = kLayout.value_or(KVTileLayout::dense(keys));
  SmemDesc q = smemDescBase(w, qSmem, qOff, 16, 1024),
           k = smemDescBase(w, kSmem, kOff, 16, kl.group);
  q.lo = OpaqueOp::create(w.b, w.loc, w.i32T, q.lo);
  Value s = w.undef(accType);
  for (int64_t kk = 0; kk < d / 16; ++kk) {
    int64_t box = kk / 4, inBox = (kk % 4) * 32;
    Value dA = descAt(w, q, box * rows * 128 + inBox);
    Value dB = descAt(w, k, box * kl.panel + inBox);
    s = wgmmaSS(w, accType, s, dA, dB, keys, f16, kk == 0);
  }
  return s;
}

Value mlir::flashattn::wgmmaPV(KernelEmitter &w, Value smem, Type accType, Value acc,
                               ArrayRef<Value> pk, int64_t vOff, int64_t keys, int64_t d,
                               Type elem, std::optional<KVTileLayout> vLayout) {
  KVTileLayout vl = vLayout.value_or(KVTileLayout::dense(keys));
  SmemDesc v = smemDescBase(w, smem, vOff, vl.panel, vl.group);
  for (int64_t kk = 0; kk < keys / 16; ++kk) {
    SmallVector<Value> a(pk.begin() + kk * 4, pk.begin() + kk * 4 + 4);
    acc = WgmmaRsOp::create(w.b, w.loc, accType, acc, a, descAt(w, v, kk * 2 * vl.group), d,
                            elem);
  }
  return acc;
}

void mlir::flashattn::zeroTileRows(KernelEmitter &w, Value smem, Value tid, int64_t offset,
                                   Value from, int64_t rows, int64_t d, int64_t threads,
                                   int32_t barrierId, std::optional<KVTileLayout> layout,
                                   bool aligned) {
  KVTileLayout l = layout.value_or(KVTileLayout::dense(rows));
  auto sync = [&] {
    if (barrierId && aligned)
      w.barrier(w.i32(barrierId), w.i32(threads));
    else if (barrierId)
      w.barrierUnaligned(w.i32(barrierId), w.i32(threads));
    else
      NVVM::Barrier0Op::create(w.b, w.loc);
  };
  w.ifThen(w.cmpi(arith::CmpIPredicate::slt, from, w.i32(rows)), [&] {
    Value perRow = w.i32(d / 64 * 8);
    Value total = w.muli(w.subi(w.i32(rows), from), perRow);
    Value zeros = w.zero(VectorType::get({4}, w.i32T));
    w.forLoop(tid, total, w.i32(threads), [&](Value c) {
      Value row = w.addi(from, w.divui(c, perRow));
      Value rest = w.remui(c, perRow);
      Value chunk = w.muli(w.remui(rest, w.i32(8)), w.i32(16));
      // (Atoms of 1 KB apart: row r at r x 128.)
      Value atom = l.group == 1024 ? w.muli(row, w.i32(128))
                                   : w.addi(w.muli(w.divui(row, w.i32(8)), w.i32(l.group)),
                                            w.muli(w.remui(row, w.i32(8)), w.i32(128)));
      Value inPanel = w.addi(atom, chunk);
      Value at = w.addi(w.muli(w.divui(rest, w.i32(8)), w.i32(l.panel)), inPanel);
      w.store(zeros, w.gep(smem, w.sptrT, w.i8T, w.addi(at, w.i32(offset))));
    });
    w.fenceProxyAsyncShared();
    if (barrierId)
      sync();
  });
  if (!barrierId)
    sync();
}

Value mlir::flashattn::softcapTanh(KernelEmitter &w, Value x) {
  return LLVM::TanhOp::create(
      w.b, w.loc, x, LLVM::FastmathFlagsAttr::get(w.b.getContext(), LLVM::FastmathFlags::afn));
}

Value mlir::flashattn::tileTableAt(KernelEmitter &w, const KernelFunc &P) {
  Value global = w.addrspacecast(P["tile_table"], w.ptrT);
  Value isNull = w.icmp(LLVM::ICmpPredicate::eq, P["tile_table"], w.zero(w.gptrT));
  return w.llvmSelect(isNull, P["tile_table_inline"], global);
}
