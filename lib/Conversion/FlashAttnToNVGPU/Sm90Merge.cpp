//===- Sm90Merge.cpp - the split-KV merge, the combine and append kernels -===//
//
// The split-KV merge (emitMerge; emitMergeUnit, the partial kernels'
// fused merge of 4 columns), the combine kernel that applies it to a
// split-KV op's partial results, and the kv-cache append's copy kernel:
// grid-stride loops of one thread per output element / 16-byte chunk,
// built with KernelEmitter beside the attention kernels.
//
//===----------------------------------------------------------------------===//

#include "Sm90Merge.h"

#include "Sm90Abi.h"
#include "flashattn/Conversion/FlashAttnToNVGPU/Sm90Kernel.h"

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

//===----------------------------------------------------------------------===//
// The split-KV combine kernel.
//===----------------------------------------------------------------------===//

void mlir::flashattn::buildSm90CombineKernel(OpBuilder &builder, Location loc,
                                             const Sm90CombineSpec &k) {
  KernelEmitter w(builder, loc);
  const Type etT = k.f16 ? Type(builder.getF16Type()) : Type(builder.getBF16Type());
  AbiBuilder abi{builder.getContext(), {}};
  abi.ptr("partial_out", "po");
  abi.ptr("partial_lse", "pl");
  abi.ptr("out", "o");
  if (k.lse)
    abi.ptr("lse", "lse");
  abi.dims("partial_out", "po", 5);
  abi.dims("partial_lse", "pl", 4);
  abi.dims("out", "o", 4);
  if (k.lse)
    abi.dims("lse", "l", 3);
  OpBuilder::InsertionGuard guard(builder);
  KernelFunc P = buildKernelFunc(w, k.name, abi.params, 128, 0, /*minCtas=*/false);
  // One thread per output element e = ((b * Sq + i) * H + h) * D + d, a
  // grid-stride loop over all of them.
  auto [first, stride] = gridStride(w, 128);
  Value S = P["pod0"], B = P["pod1"], Sq = P["pod2"], H = P["pod3"], D = P["pod4"];
  Value total = w.muli(w.muli(w.muli(B, Sq), H), D);
  Value rowsBHS = w.muli(w.muli(B, H), Sq);
  Value z64 = w.i64(0);
  w.forLoop(first, total, stride, [&](Value e) {
    Value d = w.remui(e, D);
    Value r = w.divui(e, D);
    Value h = w.remui(r, H);
    Value bi = w.divui(r, H);
    Value i = w.remui(bi, Sq);
    Value b = w.divui(bi, Sq);
    // lse_s at partial_lse[s, b, h, i].
    Value lrow = lseIndex(w, b, h, i, H, Sq);
    auto lseAt = [&](Value s) {
      return w.load(w.f32T, splitElement(w, P["pl"], s, rowsBHS, lrow, w.f32T));
    };
    auto outAt = [&](Value s) {
      return Values{w.load(w.f32T, splitElement(w, P["po"], s, total, e, w.f32T))};
    };
    Values vals;
    Value lv = emitMerge(w, S, 1, lseAt, outAt, vals).second;
    Value tv = w.truncf(vals[0], etT);
    Value optr = w.gep(P["o"], w.gptrT, etT, e);
    w.store(tv, optr);
    if (k.lse) {
      Value d0 = w.cmpi(CmpI::eq, d, z64);
      w.ifThen(d0, [&] {
        // lse[b, h, i]: the same row index as partial_lse's within a split.
        Value lp = w.gep(P["lse"], w.gptrT, w.f32T, lrow);
        w.store(lv, lp);
      });
    }
  });
  LLVM::ReturnOp::create(builder, loc, ValueRange{});
}

//===----------------------------------------------------------------------===//
// The kv-cache append kernel.
//===----------------------------------------------------------------------===//

void mlir::flashattn::buildSm90AppendKernel(OpBuilder &builder, Location loc,
                                            const Sm90AppendSpec &k) {
  KernelEmitter w(builder, loc);
  AbiBuilder abi{builder.getContext(), {}};
  const std::pair<const char *, const char *> tensors[] = {
      {"k_new", "kn"}, {"v_new", "vn"}, {"k", "kc"}, {"v", "vc"}};
  for (auto [arg, stem] : tensors)
    abi.ptr(arg, stem);
  for (auto [arg, stem] : tensors)
    abi.dims(arg, stem, 4);
  abi.scalar(ParamKind::tile_table, "table");
  // Paged: the page lists (the attention kernel's %page_table).
  if (k.paged)
    abi.scalar(ParamKind::page_table, "pages");
  OpBuilder::InsertionGuard guard(builder);
  KernelFunc P = buildKernelFunc(w, k.name, abi.params, 256, 0, /*minCtas=*/false);
  // One thread per 16-byte chunk e = ((b * S_new + r) * Hkv + g) * (D / 8)
  // + c of k_new and of v_new, a grid-stride loop over all of them.
  auto sext = [&](Value v) { return w.extsi(v, w.i64T); };
  auto [first, stride] = gridStride(w, 256);
  Value B = P["knd0"], S = P["knd1"], H = P["knd2"], D = P["knd3"];
  Value c8 = w.i64(8), c2 = w.i64(2), c1 = w.i64(1);
  Value chunks = w.divui(D, c8);
  Value total = w.muli(w.muli(w.muli(B, S), H), chunks);
  auto tableAt = [&](Value index, Value table) {
    Value p = w.gep(table, w.gptrT, w.i32T, index);
    return sext(w.load(w.i32T, p, /*invariant=*/true));
  };
  // Word 1 of the table: where the per-sequence (start, page list) pairs
  // are.
  Value appendAt = tableAt(c1, P["table"]);
  w.forLoop(first, total, stride, [&](Value e) {
    Value c = w.remui(e, chunks);
    Value rest = w.divui(e, chunks);
    Value g = w.remui(rest, H);
    rest = w.divui(rest, H);
    Value r = w.remui(rest, S);
    Value b = w.divui(rest, S);
    Value pair = w.addi(appendAt, w.muli(b, c2));
    // Position cache_seqlens[b] + r; the runtime checked it is inside the
    // cache (never written otherwise).
    Value pos = w.addi(tableAt(pair, P["table"]), r);
    // The cache row: b x capacity + pos (dense), or page x page_size + pos
    // % page_size with page = the sequence's page list [pos / page_size].
    Value row, inPool;
    if (k.paged) {
      Value ps = P["kcd1"];
      Value list = tableAt(w.addi(pair, c1), P["table"]);
      Value page = tableAt(w.addi(list, w.divui(pos, ps)), P["pages"]);
      // A page outside the pool (an unchecked device block_table): the row
      // is not written.
      inPool = w.cmpi(CmpI::ult, page, P["kcd0"]);
      Value inPage = w.remui(pos, ps);
      row = w.addi(w.muli(page, ps), inPage);
    } else {
      row = w.addi(w.muli(b, P["kcd1"]), pos);
    }
    Value elem = w.muli(c, c8);
    Value src = w.addi(w.muli(w.addi(w.muli(w.addi(w.muli(b, S), r), H), g), D), elem);
    Value dst = w.addi(w.muli(w.addi(w.muli(row, H), g), D), elem);
    auto copy = [&] {
      for (auto [from, to] : {std::pair("kn", "kc"), std::pair("vn", "vc")}) {
        Value sp = w.gep(P[from], w.gptrT, w.i16T, src);
        Value dp = w.gep(P[to], w.gptrT, w.i16T, dst);
        Value val = w.load(VectorType::get({4}, w.i32T), sp, false, false, 16);
        w.store(val, dp, 16);
      }
    };
    if (k.paged)
      w.ifThen(inPool, copy);
    else
      copy();
  });
  LLVM::ReturnOp::create(builder, loc, ValueRange{});
}
