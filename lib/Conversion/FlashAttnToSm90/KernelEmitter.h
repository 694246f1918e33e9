//===- KernelEmitter.h - builders for the sm_90a kernels' IR ----*- C++ -*-===//
//
// A thin layer over OpBuilder for what flashattn-sm90-warpgroup emits:
// typed constants, arith / LLVM / NVVM ops at one location, and structured
// control flow (scf.if / scf.for) whose bodies are C++ callbacks that
// return the values they yield. Every op is created at the builder's
// insertion point, in call order.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_LIB_CONVERSION_FLASHATTNTOSM90_KERNELEMITTER_H
#define FLASHATTN_LIB_CONVERSION_FLASHATTNTOSM90_KERNELEMITTER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::flashattn {

class KernelEmitter {
public:
  KernelEmitter(OpBuilder &b, Location loc);

  OpBuilder &b;
  Location loc;
  Type i1T, i8T, i16T, i32T, i64T, f32T, indexT;
  /// Pointers: generic, global (1), shared (3), shared::cluster (7).
  Type ptrT, gptrT, sptrT, cptrT;

  // Constants.
  Value i32(int64_t v);
  Value i64(int64_t v);
  /// An f32 constant: `v` rounded to the nearest f32.
  Value f32(double v);
  Value negInf();
  Value boolean(bool v);

  // arith.
  template <typename OpT>
  Value bin(Value a, Value c) {
    return OpT::create(b, loc, a, c);
  }
  Value addi(Value a, Value c) { return bin<arith::AddIOp>(a, c); }
  Value subi(Value a, Value c) { return bin<arith::SubIOp>(a, c); }
  Value muli(Value a, Value c) { return bin<arith::MulIOp>(a, c); }
  Value divui(Value a, Value c) { return bin<arith::DivUIOp>(a, c); }
  Value remui(Value a, Value c) { return bin<arith::RemUIOp>(a, c); }
  Value ceildivui(Value a, Value c) { return bin<arith::CeilDivUIOp>(a, c); }
  Value minsi(Value a, Value c) { return bin<arith::MinSIOp>(a, c); }
  Value maxsi(Value a, Value c) { return bin<arith::MaxSIOp>(a, c); }
  Value minui(Value a, Value c) { return bin<arith::MinUIOp>(a, c); }
  Value andi(Value a, Value c) { return bin<arith::AndIOp>(a, c); }
  Value ori(Value a, Value c) { return bin<arith::OrIOp>(a, c); }
  Value xori(Value a, Value c) { return bin<arith::XOrIOp>(a, c); }
  Value shrui(Value a, Value c) { return bin<arith::ShRUIOp>(a, c); }
  Value shli(Value a, Value c) { return bin<arith::ShLIOp>(a, c); }
  Value addf(Value a, Value c) { return bin<arith::AddFOp>(a, c); }
  Value subf(Value a, Value c) { return bin<arith::SubFOp>(a, c); }
  Value mulf(Value a, Value c) { return bin<arith::MulFOp>(a, c); }
  Value divf(Value a, Value c) { return bin<arith::DivFOp>(a, c); }
  Value maxnumf(Value a, Value c) { return bin<arith::MaxNumFOp>(a, c); }
  Value maximumf(Value a, Value c) { return bin<arith::MaximumFOp>(a, c); }
  Value cmpi(arith::CmpIPredicate p, Value a, Value c);
  Value cmpf(arith::CmpFPredicate p, Value a, Value c);
  Value select(Value cond, Value a, Value c);
  Value extui(Value v, Type t);
  Value extsi(Value v, Type t);
  Value trunci(Value v, Type t);
  Value truncf(Value v, Type t);

  // llvm.
  Value gep(Value base, Type ptr, Type elem, Value index);
  Value gep(Value base, Type ptr, Type elem, int32_t index);
  Value load(Type t, Value ptr, bool invariant = false, bool isVolatile = false,
             unsigned alignment = 0);
  void store(Value v, Value ptr, unsigned alignment = 0);
  Value addrspacecast(Value p, Type t);
  Value ptrtoint(Value p, Type t);
  Value bitcast(Value v, Type t);
  Value undef(Type t);
  Value zero(Type t);
  Value extractvalue(Value agg, int64_t i);
  Value insertvalue(Value v, Value agg, int64_t i);
  Value insertelement(Value v, Value vec, Value i);
  Value extractelement(Value vec, Value i);
  Value icmp(LLVM::ICmpPredicate p, Value a, Value c);
  Value llvmSelect(Value cond, Value a, Value c);
  Value fma(Value a, Value x, Value c);
  Value intrinsic(StringRef name, Value x);
  Type structOf(int n, Type elem);

  // nvvm.
  Value tid();
  Value ctaid();
  Value nctaid();
  void mbarrierInit(Value bar, Value count);
  void mbarrierArrive(Value bar);
  void mbarrierExpectTx(Value bar, Value bytes);
  void mbarrierWait(Value bar, Value parity, Value ticks);
  void tmaLoad(Value dst, Value map, Value bar, ValueRange coords, Value l2Hint);
  void tmaStore(Value map, Value src, ValueRange coords);
  void barrier(Value id, Value threads);
  /// barrier.sync without .aligned (PTX ISA 9.7.13.1): its threads may
  /// reach it from different instructions (nvvm.barrier is aligned).
  void barrierUnaligned(Value id, Value threads);
  void barrierArrive(Value id, Value threads);
  Value shfl(NVVM::ShflKind kind, Value mask, Value v, Value offset, Value clamp);
  void fenceProxyAsyncShared();

  // scf. Bodies create their ops at the insertion point inside the region
  // and return what they yield.
  using Values = SmallVector<Value>;
  void ifThen(Value cond, llvm::function_ref<void()> then);
  Values ifElse(Value cond, TypeRange types, llvm::function_ref<Values()> then,
                llvm::function_ref<Values()> otherwise);
  Value ifElse1(Value cond, Type type, llvm::function_ref<Value()> then,
                llvm::function_ref<Value()> otherwise);
  Values forLoop(Value lo, Value hi, Value step, ValueRange init,
                 llvm::function_ref<Values(Value iv, ValueRange args)> body);
  void forLoop(Value lo, Value hi, Value step, llvm::function_ref<void(Value iv)> body);
};

} // namespace mlir::flashattn

#endif
