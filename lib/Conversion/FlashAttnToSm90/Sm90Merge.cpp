//===- Sm90Merge.cpp - the split-KV merge of partial results --------------===//
//
// The split-KV merge (emitMerge) that the combine kernel
// (GridKernels.cpp's flashattn.merge_splits) and the partial kernels' fused
// merge (emitMergeUnit, 4 columns of a row; WarpgroupStore.cpp) emit with
// KernelEmitter.
//
//===----------------------------------------------------------------------===//

#include "Sm90Merge.h"

#include <cmath>
#include <vector>

using namespace mlir;
using namespace mlir::flashattn;

using CmpI = arith::CmpIPredicate;
using CmpF = arith::CmpFPredicate;
using Values = KernelEmitter::Values;

Value mlir::flashattn::splitElement(KernelEmitter &w, Value base, Value s, Value stride,
                                   Value off, Type type) {
  Value idx = w.addi(w.muli(s, stride), off);
  return w.gep(base, w.gptrT, type, idx);
}

/// The split-KV merge (docs/SEMANTICS.md, "Split-KV and flashattn.combine")
/// for `V` consecutive values of one output row, over the `S` (i64) splits: m = max_s lse_s,
/// w_s = exp(lse_s - m), out = sum w_s o_s / sum w_s, lse = m + log sum w_s;
/// splits with lse_s = -inf weigh 0, and a row whose splits are all -inf
/// is empty (out 0, lse -inf). One pass over the splits, U at a time,
/// merged online (the running max m, sum w and sum w o rescaled by
/// exp(m_old - m_new) when m grows, as the attention's own online softmax;
/// Milakov & Gimelshein 2018): the loads of a step are issued together, so
/// a decode merge (16 splits) waits one L2 round trip instead of one per
/// split and pass. Split s + j past S reads split S - 1 and weighs nothing.
/// `loadL(s)` and `loadO(s)` emit split s's lse and its V values (s: i64).
/// Emits the normalized values into `out` and returns (empty row, lse).
std::pair<Value, Value>
mlir::flashattn::emitMerge(KernelEmitter &w, Value S, int V,
                           const std::function<Value(Value)> &loadL,
                           const std::function<Values(Value)> &loadO, Values &out) {
  const int U = 16;
  Value z64 = w.i64(0), one64 = w.i64(1);
  Value negInf = w.negInf();
  Value zeroF = w.f32(0.0);
  Value log2e = w.f32(1.4426950408889634), ln2 = w.f32(M_LN2);
  Value cU = w.i64(U), last = w.subi(S, one64);
  // exp(x - m) as exp2((x - m) log2 e); a max of -inf (nothing seen yet, or
  // an empty row) is taken as 0 so that no -inf - -inf appears.
  auto ex2 = [&](Value x, Value m) {
    Value e = w.mulf(w.subf(x, m), log2e);
    return w.intrinsic("llvm.nvvm.ex2.approx.ftz.f", e);
  };
  Values init = {negInf, zeroF};
  for (int c = 0; c < V; ++c)
    init.push_back(zeroF);
  Values mg = w.forLoop(z64, S, cU, init, [&](Value s, ValueRange acc) {
    struct Part {
      Value l;
      Values o;
    };
    std::vector<Part> parts;
    for (int j = 0; j < U; ++j) {
      Value sj = w.addi(s, w.i64(j));
      Value ok = w.cmpi(CmpI::ult, sj, S);
      sj = w.minui(sj, last);
      Value loaded = loadL(sj);
      Value l = w.select(ok, loaded, negInf);
      parts.push_back({l, loadO(sj)});
    }
    Value m = acc[0];
    for (Part &p : parts)
      m = w.maximumf(m, p.l);
    Value isInf = w.cmpf(CmpF::OEQ, m, negInf);
    Value mSafe = w.select(isInf, zeroF, m);
    Value scale = ex2(acc[0], mSafe);
    Value sw = w.mulf(acc[1], scale);
    Values so;
    for (int c = 0; c < V; ++c)
      so.push_back(w.mulf(acc[2 + c], scale));
    for (Part &p : parts) {
      Value wt = ex2(p.l, mSafe);
      sw = w.addf(sw, wt);
      for (int c = 0; c < V; ++c)
        so[c] = w.fma(wt, p.o[c], so[c]);
    }
    Values next = {m, sw};
    next.append(so.begin(), so.end());
    return next;
  });
  Value empty = w.cmpf(CmpF::OEQ, mg[0], negInf);
  Value mSafe = w.select(empty, zeroF, mg[0]);
  out.clear();
  for (int c = 0; c < V; ++c) {
    Value val = w.divf(mg[c + 2], mg[1]);
    out.push_back(w.select(empty, zeroF, val));
  }
  Value lg = w.intrinsic("llvm.nvvm.lg2.approx.f", mg[1]);
  Value lv = w.addf(mSafe, w.mulf(lg, ln2));
  return {empty, w.select(empty, negInf, lv)};
}

void mlir::flashattn::emitMergeUnit(KernelEmitter &w, const MergeUnit &u) {
  VectorType v4 = VectorType::get({4}, w.f32T);
  auto lseAt = [&](Value s) {
    Value p = splitElement(w, u.partLse, s, u.lseSlice, u.lrow, w.f32T);
    return w.load(w.f32T, p, false, /*isVolatile=*/true);
  };
  auto outAt = [&](Value s) {
    Value p = splitElement(w, u.partOut, s, u.outSlice, u.el, w.f32T);
    Value vec = w.load(v4, p, false, /*isVolatile=*/true, 16);
    Values vals;
    for (int c = 0; c < 4; ++c)
      vals.push_back(w.extractelement(vec, w.i32(c)));
    return vals;
  };
  Values vals;
  Value lse = emitMerge(w, u.S, 4, lseAt, outAt, vals).second;
  Value vec = w.undef(v4);
  for (int c = 0; c < 4; ++c)
    vec = w.insertelement(vals[c], vec, w.i32(c));
  Value narrow = w.truncf(vec, VectorType::get({4}, u.outType));
  w.store(narrow, w.gep(u.out, w.gptrT, u.outType, u.el), 8);
  Value lseOn = w.icmp(LLVM::ICmpPredicate::ne, u.lse, w.zero(w.gptrT));
  w.ifThen(w.andi(lseOn, w.cmpi(CmpI::eq, u.col, w.i32(0))),
           [&] { w.store(lse, w.gep(u.lse, w.gptrT, w.f32T, u.lrow)); });
}
