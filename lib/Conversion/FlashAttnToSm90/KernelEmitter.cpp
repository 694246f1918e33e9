//===- KernelEmitter.cpp - builders for the sm_90a kernels' IR ------------===//

#include "KernelEmitter.h"

#include <cmath>

using namespace mlir;
using namespace mlir::flashattn;

KernelEmitter::KernelEmitter(OpBuilder &b, Location loc) : b(b), loc(loc) {
  MLIRContext *ctx = b.getContext();
  i1T = b.getI1Type();
  i8T = b.getI8Type();
  i16T = b.getI16Type();
  i32T = b.getI32Type();
  i64T = b.getI64Type();
  f32T = b.getF32Type();
  indexT = b.getIndexType();
  ptrT = LLVM::LLVMPointerType::get(ctx);
  gptrT = LLVM::LLVMPointerType::get(ctx, 1);
  sptrT = LLVM::LLVMPointerType::get(ctx, 3);
  cptrT = LLVM::LLVMPointerType::get(ctx, 7);
}

Value KernelEmitter::i32(int64_t v) { return arith::ConstantIntOp::create(b, loc, i32T, v); }
Value KernelEmitter::i64(int64_t v) { return arith::ConstantIntOp::create(b, loc, i64T, v); }

Value KernelEmitter::f32(double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(static_cast<float>(v)));
}

Value KernelEmitter::negInf() {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(-INFINITY));
}

Value KernelEmitter::boolean(bool v) { return arith::ConstantIntOp::create(b, loc, i1T, v); }

Value KernelEmitter::cmpi(arith::CmpIPredicate p, Value a, Value c) {
  return arith::CmpIOp::create(b, loc, p, a, c);
}
Value KernelEmitter::cmpf(arith::CmpFPredicate p, Value a, Value c) {
  return arith::CmpFOp::create(b, loc, p, a, c);
}
Value KernelEmitter::select(Value cond, Value a, Value c) {
  return arith::SelectOp::create(b, loc, cond, a, c);
}
Value KernelEmitter::extui(Value v, Type t) { return arith::ExtUIOp::create(b, loc, t, v); }
Value KernelEmitter::extsi(Value v, Type t) { return arith::ExtSIOp::create(b, loc, t, v); }
Value KernelEmitter::trunci(Value v, Type t) { return arith::TruncIOp::create(b, loc, t, v); }
Value KernelEmitter::truncf(Value v, Type t) { return arith::TruncFOp::create(b, loc, t, v); }

Value KernelEmitter::gep(Value base, Type ptr, Type elem, Value index) {
  return LLVM::GEPOp::create(b, loc, ptr, elem, base, ArrayRef<LLVM::GEPArg>{index});
}
Value KernelEmitter::gep(Value base, Type ptr, Type elem, int32_t index) {
  return LLVM::GEPOp::create(b, loc, ptr, elem, base, ArrayRef<LLVM::GEPArg>{index});
}
Value KernelEmitter::load(Type t, Value ptr, bool invariant, bool isVolatile,
                          unsigned alignment) {
  return LLVM::LoadOp::create(b, loc, t, ptr, alignment, isVolatile, /*isNonTemporal=*/false,
                              invariant);
}
void KernelEmitter::store(Value v, Value ptr, unsigned alignment) {
  LLVM::StoreOp::create(b, loc, v, ptr, alignment);
}
Value KernelEmitter::addrspacecast(Value p, Type t) {
  return LLVM::AddrSpaceCastOp::create(b, loc, t, p);
}
Value KernelEmitter::ptrtoint(Value p, Type t) { return LLVM::PtrToIntOp::create(b, loc, t, p); }
Value KernelEmitter::bitcast(Value v, Type t) { return LLVM::BitcastOp::create(b, loc, t, v); }
Value KernelEmitter::undef(Type t) { return LLVM::UndefOp::create(b, loc, t); }
Value KernelEmitter::zero(Type t) { return LLVM::ZeroOp::create(b, loc, t); }
Value KernelEmitter::extractvalue(Value agg, int64_t i) {
  return LLVM::ExtractValueOp::create(b, loc, agg, ArrayRef<int64_t>{i});
}
Value KernelEmitter::insertvalue(Value v, Value agg, int64_t i) {
  return LLVM::InsertValueOp::create(b, loc, agg, v, ArrayRef<int64_t>{i});
}
Value KernelEmitter::insertelement(Value v, Value vec, Value i) {
  return LLVM::InsertElementOp::create(b, loc, vec, v, i);
}
Value KernelEmitter::extractelement(Value vec, Value i) {
  return LLVM::ExtractElementOp::create(b, loc, vec, i);
}
Value KernelEmitter::icmp(LLVM::ICmpPredicate p, Value a, Value c) {
  return LLVM::ICmpOp::create(b, loc, p, a, c);
}
Value KernelEmitter::llvmSelect(Value cond, Value a, Value c) {
  return LLVM::SelectOp::create(b, loc, cond, a, c);
}
Value KernelEmitter::fma(Value a, Value x, Value c) {
  return LLVM::FMAOp::create(b, loc, a, x, c);
}
Value KernelEmitter::intrinsic(StringRef name, Value x) {
  return LLVM::CallIntrinsicOp::create(b, loc, x.getType(), b.getStringAttr(name),
                                       ValueRange{x})
      .getResult(0);
}
Type KernelEmitter::structOf(int n, Type elem) {
  return LLVM::LLVMStructType::getLiteral(b.getContext(), SmallVector<Type>(n, elem));
}

Value KernelEmitter::tid() { return NVVM::ThreadIdXOp::create(b, loc, i32T); }
Value KernelEmitter::ctaid() { return NVVM::BlockIdXOp::create(b, loc, i32T); }
Value KernelEmitter::nctaid() { return NVVM::GridDimXOp::create(b, loc, i32T); }
void KernelEmitter::mbarrierInit(Value bar, Value count) {
  NVVM::MBarrierInitOp::create(b, loc, bar, count, Value());
}
void KernelEmitter::mbarrierArrive(Value bar) {
  NVVM::MBarrierArriveOp::create(b, loc, Type(), bar, Value());
}
void KernelEmitter::mbarrierExpectTx(Value bar, Value bytes) {
  NVVM::MBarrierArriveExpectTxOp::create(b, loc, Type(), bar, bytes, NVVM::MemScopeKind::CTA,
                                         false, Value());
}
void KernelEmitter::mbarrierWait(Value bar, Value parity, Value ticks) {
  NVVM::MBarrierTryWaitParityOp::create(b, loc, bar, parity, ticks);
}
void KernelEmitter::tmaLoad(Value dst, Value map, Value bar, ValueRange coords, Value l2Hint) {
  NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
      b, loc, dst, map, coords, bar, /*im2colOffsets=*/ValueRange{}, /*multicastMask=*/Value(),
      l2Hint, NVVM::TMALoadMode::TILE, /*isCTAOnly=*/false, NVVM::CTAGroupKindAttr(),
      /*predicate=*/Value());
}
void KernelEmitter::tmaStore(Value map, Value src, ValueRange coords) {
  NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp::create(b, loc, map, src, coords, Value(),
                                                     NVVM::TMAStoreMode::TILE, Value());
}
void KernelEmitter::barrier(Value id, Value threads) {
  NVVM::BarrierOp::create(b, loc, Type(), id, threads, NVVM::BarrierReductionAttr(), Value());
}
void KernelEmitter::barrierUnaligned(Value id, Value threads) {
  LLVM::CallIntrinsicOp::create(b, loc,
                                b.getStringAttr("llvm.nvvm.barrier.cta.sync.count"),
                                ValueRange{id, threads});
}
void KernelEmitter::barrierArrive(Value id, Value threads) {
  NVVM::BarrierArriveOp::create(b, loc, id, threads);
}
Value KernelEmitter::shfl(NVVM::ShflKind kind, Value mask, Value v, Value offset, Value clamp) {
  return NVVM::ShflOp::create(b, loc, v.getType(), mask, v, offset, clamp, kind, UnitAttr());
}
void KernelEmitter::fenceProxyAsyncShared() {
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(), NVVM::SharedSpace::shared_cta));
}

void KernelEmitter::ifThen(Value cond, llvm::function_ref<void()> then) {
  scf::IfOp::create(b, loc, cond, [&](OpBuilder &, Location) {
    then();
    scf::YieldOp::create(b, loc);
  });
}

KernelEmitter::Values KernelEmitter::ifElse(Value cond, TypeRange types,
                                            llvm::function_ref<Values()> then,
                                            llvm::function_ref<Values()> otherwise) {
  auto op = scf::IfOp::create(b, loc, types, cond, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&op.getThenRegion().front());
  scf::YieldOp::create(b, loc, then());
  b.setInsertionPointToStart(&op.getElseRegion().front());
  scf::YieldOp::create(b, loc, otherwise());
  return Values(op.getResults());
}

Value KernelEmitter::ifElse1(Value cond, Type type, llvm::function_ref<Value()> then,
                             llvm::function_ref<Value()> otherwise) {
  return ifElse(
      cond, TypeRange{type}, [&] { return Values{then()}; },
      [&] { return Values{otherwise()}; })[0];
}

KernelEmitter::Values
KernelEmitter::forLoop(Value lo, Value hi, Value step, ValueRange init,
                       llvm::function_ref<Values(Value, ValueRange)> body) {
  auto op = scf::ForOp::create(b, loc, lo, hi, step, init,
                               [&](OpBuilder &, Location, Value iv, ValueRange args) {
                                 scf::YieldOp::create(b, loc, body(iv, args));
                               });
  return Values(op.getResults());
}

void KernelEmitter::forLoop(Value lo, Value hi, Value step,
                            llvm::function_ref<void(Value)> body) {
  scf::ForOp::create(b, loc, lo, hi, step, ValueRange{},
                     [&](OpBuilder &, Location, Value iv, ValueRange) {
                       body(iv);
                       scf::YieldOp::create(b, loc);
                     });
}
