//===- WarpgroupCompute.cpp - the warpgroup form's GEMMs and softmax --------===//
//
// flashattn-sm90-warpgroup's tile_qk, tile_map, tile_softmax and tile_pv on
// the accumulator fragments, and the consumers' turns at the tensor cores.
//
//===----------------------------------------------------------------------===//

#include "WarpgroupKernel.h"

#include "flashattn/Conversion/FlashAttnToSm90/Sm90Kernel.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <cmath>

using namespace mlir;
using namespace mlir::flashattn;

namespace mlir::flashattn::warpgroup {

// S = scale Q K^T (wgmmaQK), committed and waited for.
// With several warpgroups each takes its branch (warpgroup-uniform), whose
// Q descriptors are then constants past the shared memory's address, as
// with one: a dynamic row offset would keep D / 16 descriptors live.
// In an overlapped loop's steady state the previous block's P V issues
// right after Q K^T, in the same branch, and only Q K^T is waited for
// (wait_group 1): P V runs under this block's softmax.
void WarpgroupKernel::tileQK(TileQKOp op, State &st) {
  Value kAt = tileAt(K, slotOf(op.getK()));
  int64_t groups = rowsM / kRows;
  bool steady = overlap == Overlap::steady;
  SmallVector<Type> types{sT};
  if (steady)
    types.push_back(oT); // O in flight from the deferred P V
  // In an overlapped loop O is in flight past Q K^T, so no branch: Q's
  // rows at warpgroup g start g x 64 rows of 128 bytes into each box.
  bool branches = overlap == Overlap::none;
  Value qBase = qSlot ? tileAt(Q, slotOf(op.getQ())) : smem;
  Value qAt =
      branches ? qBase : w.gep(qBase, w.sptrT, w.i8T, w.muli(warpgroup, w.i32(kRows * 128)));
  std::function<Values(int64_t)> from = [&](int64_t g) -> Values {
    auto qk = [&]() -> Values {
      NVVM::WgmmaFenceAlignedOp::create(b, loc);
      Value s = wgmmaQK(w, qAt, kAt, sT, branches ? g * kRows * 128 : 0, 0, rowsM, kKeys, D, f16,
                        kvLayout);
      NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
      if (!steady) {
        NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
        return {s};
      }
      Value o = st.o;
      if (rescaleUnderQK) { // under Q K^T; the rescale wrote O: fence (PTX ISA 9.7.15.7.1)
        o = rescaleO(o, deferredAlpha[0], deferredAlpha[1]);
        NVVM::WgmmaFenceAlignedOp::create(b, loc);
      }
      o = wgmmaPV(w, tileAt(V, deferredSlot), oT, o, deferredPk, 0, kKeys, D, etT, kvLayout);
      NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
      if (scheduler)
        passTurn(Value());
      NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 1);
      return {s, o};
    };
    if (g + 1 == groups || !branches)
      return qk();
    return w.ifElse(w.cmpi(CmpI::eq, warpgroup, w.i32(g)), types, qk,
                    [&] { return from(g + 1); });
  };
  if (scheduler)
    awaitTurn(overlap != Overlap::none ? Value() : inFirstIteration(op));
  Values so = from(0);
  Value s = so[0];
  if (overlap == Overlap::first) // Q K^T is over, nothing in flight
    releaseQEarly();
  if (steady)
    st.o = so[1];
  if (scheduler && !steady)
    passTurn(Value());
  st.s = s;
  st.sScale = op.getScale().convertToDouble();
  if (!(st.sScale > 0) || std::isinf(st.sScale))
    applyScale(st);
}

void WarpgroupKernel::applyScale(State &st) {
  if (st.sScale == 1.0)
    return;
  Value scale = w.f32(st.sScale);
  for (int64_t r = 0; r < nS; ++r)
    st.s = w.insertvalue(w.mulf(w.extractvalue(st.s, r), scale), st.s, r);
  st.sScale = 1.0;
}

Values WarpgroupKernel::carried(State &st) {
  applyScale(st);
  return st.values();
}

// Whether a tile_map's body commutes with a positive scale of its score:
// it only masks it, a chain of selects between it and a constant -inf
// whose conditions do not read it (the causal, window and sequence-end
// masks and a mask region).
static bool onlyMasks(TileMapOp op) {
  Block &body = op.getBody().front();
  Value x = cast<YieldOp>(body.getTerminator()).getValues()[0];
  while (x != body.getArgument(0)) {
    auto select = x.getDefiningOp<arith::SelectOp>();
    if (!select)
      return false;
    auto isNegInf = [](Value v) {
      auto c = v.getDefiningOp<arith::ConstantFloatOp>();
      return c && c.value().isInfinity() && c.value().isNegative();
    };
    if (isNegInf(select.getFalseValue()))
      x = select.getTrueValue();
    else if (isNegInf(select.getTrueValue()))
      x = select.getFalseValue();
    else
      return false;
    if (!x.hasOneUse())
      return false;
  }
  return true;
}

// The body at each of the thread's scores: row ops once per row, the rest
// per register; scores outside [rows) x [cols) keep their value (their
// body runs under an scf.if when it has an op that may not run on any
// input, e.g. a division).
void WarpgroupKernel::tileMap(TileMapOp op, State &st) {
  SmallVector<Operation *> rowOps, elementOps;
  op.splitRowOps(rowOps, elementOps);
  Block &body = op.getBody().front();
  Value yielded = cast<YieldOp>(body.getTerminator()).getValues()[0];
  auto full = [](Value v, int64_t n) {
    auto c = v.getDefiningOp<arith::ConstantIndexOp>();
    return c && c.value() >= n;
  };
  bool allRows = full(op.getRows(), rowsM), allCols = full(op.getCols(), kKeys);
  bool guarded = llvm::any_of(elementOps, [](Operation *o) { return !isPure(o); });
  if (!onlyMasks(op))
    applyScale(st);
  Value rows = map.lookup(op.getRows()), cols = map.lookup(op.getCols());
  Value s = st.s;
  for (int half = 0; half < 2; ++half) {
    Value i = index(row[half]);
    map.map(body.getArgument(1), i);
    for (Operation *rowOp : rowOps)
      clone(*rowOp);
    columnBounds(body, elementOps);
    Value rowIn = allRows ? Value() : w.cmpi(CmpI::slt, i, rows);
    for (int64_t r = 0; r < nS; ++r) {
      if ((r / 2) % 2 != half)
        continue;
      Value j = index(w.addi(col0, w.i32(8 * (r / 4) + r % 2)));
      Value x = w.extractvalue(s, r);
      Value inside = rowIn;
      if (!allCols) {
        Value colIn = w.cmpi(CmpI::slt, j, cols);
        inside = inside ? w.andi(inside, colIn) : colIn;
      }
      auto apply = [&] {
        map.map(body.getArgument(0), x);
        map.map(body.getArgument(2), j);
        for (Operation *elementOp : elementOps)
          if (!foldColumnRem(elementOp, body.getArgument(2), r) &&
              !foldColumnCmp(elementOp, r))
            clone(*elementOp);
        return map.lookup(yielded);
      };
      Value y;
      if (!inside)
        y = apply();
      else if (guarded)
        y = w.ifElse1(inside, w.f32T, apply, [&] { return x; });
      else
        y = w.select(inside, apply(), x);
      s = w.insertvalue(y, s, r);
    }
  }
  st.s = s;
}

// j mod c of fragment register r's column j = col0 + 8 (r / 4) + r % 2,
// with c dividing 8: (col0 + r % 2) mod c, the same value for every r of
// one parity (the kv head of a column under the plan's kv_heads_per_block).
// Written per column, ptxas kept one register per column across the
// key-block loop (32 bytes of spills at pages of 16 keys with 4 kv heads a
// block and the fused merge).
bool WarpgroupKernel::foldColumnRem(Operation *op, Value col, int64_t r) {
  auto rem = dyn_cast<arith::RemUIOp>(op);
  std::optional<int64_t> c = rem ? getConstantIntValue(rem.getRhs()) : std::nullopt;
  if (!rem || rem.getLhs() != col || !c || *c <= 0 || 8 % *c != 0)
    return false;
  map.map(rem.getResult(), index(w.remui(w.addi(col0, w.i32(r % 2)), w.i32(*c))));
  return true;
}

// The compares `n + j OP bound` of a tile_map's body, with j its column,
// n defined outside the body and bound a row's key_end or key_begin (all
// within the sequence lengths: no sum wraps), OP signed or (in)equality:
// for the row, lim = bound - n - col0; per register (foldColumnCmp),
// `c OP lim` with c its column's constant offset from col0. ptxas then
// compares with an immediate; with a column index a register, the
// boundary mask kept up to 32 of them live, into the registers of the
// P V in flight, which made ptxas move that P V's wait above the mask
// (FlashAttention-3's mask compares constant columns with a per-row limit
// the same way).
void WarpgroupKernel::columnBounds(Block &body, ArrayRef<Operation *> elementOps) {
  colBounds.clear();
  Value col = body.getArgument(2);
  for (Operation *op : elementOps) {
    auto cmp = dyn_cast<arith::CmpIOp>(op);
    using P = arith::CmpIPredicate;
    if (!cmp || !llvm::is_contained({P::slt, P::sle, P::sgt, P::sge, P::eq, P::ne},
                                    cmp.getPredicate()))
      continue;
    for (int side = 0; side < 2; ++side) {
      Value key = cmp->getOperand(side), bound = cmp->getOperand(1 - side);
      auto add = key.getDefiningOp<arith::AddIOp>();
      if (!add || (!bound.getDefiningOp<KeyEndOp>() && !bound.getDefiningOp<KeyBeginOp>()))
        continue;
      Value n = add.getLhs() == col ? add.getRhs() : add.getRhs() == col ? add.getLhs() : Value();
      if (!n || n.getParentBlock() == &body)
        continue;
      Value lim = w.subi(w.subi(map.lookupOrDefault(bound), map.lookupOrDefault(n)), index(col0));
      colBounds[op] = {lim, side == 0};
      break;
    }
  }
}

bool WarpgroupKernel::foldColumnCmp(Operation *op, int64_t r) {
  auto it = colBounds.find(op);
  if (it == colBounds.end())
    return false;
  auto [lim, keyFirst] = it->second;
  Value c = arith::ConstantIndexOp::create(b, loc, 8 * (r / 4) + r % 2);
  arith::CmpIPredicate pred = cast<arith::CmpIOp>(op).getPredicate();
  map.map(op->getResult(0), keyFirst ? w.cmpi(pred, c, lim) : w.cmpi(pred, lim, c));
  return true;
}

// The online softmax of one key block on the thread's fragment: the new
// row max (a max of -inf shifts by 0, so a row without keys stays 0),
// alpha = exp2(m_old - m_new), P = exp2(s - m_new) packed into pairs, l =
// l alpha + sum P, O *= alpha. With S's scale c pending, the max is taken
// on the raw scores (c > 0 keeps their order) and P = exp2(x c - m_new)
// is one fma a score (FlashAttention-2's). A row's max and sum run in the
// plan's reduce_chains chains. Both rows' maxima come first. In an
// overlapped loop without the conditional rescale the wait for the
// previous block's P V comes next, then the exponentials (ptxas hoists a
// later wait above the max: S, O, both Ps and the reductions would not
// fit 168 registers); so with the plan's rescale_under_qk (O's rescale
// ran under Q K^T). With the conditional rescale alone the wait comes
// after the exponentials, ahead of the rescale's branch (below).
void WarpgroupKernel::tileSoftmax(State &st) {
  Values x(nS), rowX[2];
  for (int64_t r = 0; r < nS; ++r) {
    x[r] = w.extractvalue(st.s, r);
    rowX[(r / 2) % 2].push_back(x[r]);
  }
  Value scale = st.sScale == 1.0 ? Value() : w.f32(st.sScale);
  Value alpha[2], shift[2];
  for (int half = 0; half < 2; ++half) {
    Value mx = quadReduce(chainReduce(w, rowX[half], reduceChains, true), true);
    if (scale)
      mx = w.mulf(mx, scale);
    Value mNew = w.maxnumf(st.m[half], mx);
    // FlashAttention-4's conditional rescale (the plan's): the max moves
    // only when it grows by more than 8 (exp2 units), so P <= 2^8 and
    // most blocks leave alpha = 1 (the first block moves it from -inf; a
    // row still without keys compares NaN and stays).
    if (conditionalRescale)
      mNew = w.select(w.cmpf(CmpF::OGT, w.subf(mNew, st.m[half]), w.f32(8.0)), mNew,
                      st.m[half]);
    shift[half] = w.select(w.cmpf(CmpF::OEQ, mNew, negInf), zeroF, mNew);
    alpha[half] = w.intrinsic("llvm.nvvm.ex2.approx.ftz.f", w.subf(st.m[half], shift[half]));
    st.m[half] = mNew;
  }
  // The previous block's P V (overlapped) is over before O moves: then
  // its V slot goes back to the producer. With the conditional rescale
  // (and O's rescale here, not under Q K^T) the wait comes after this
  // block's P, right before the rescale's branch, which keeps the P V
  // under the exponentials. It stays out of the
  // branch: wgmma.wait_group is .aligned, one instruction for all of the
  // warpgroup's threads (PTX ISA 9.7.15.7.3), and the branch's condition
  // is a vote of each warp.
  std::function<void()> waitPV;
  if (overlap == Overlap::steady) {
    waitPV = [&] {
      NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
      w.mbarrierArrive(barrierAt(V, deferredSlot, true));
      releaseQEarly(); // no wgmma in flight here: a branch costs no registers
    };
    if (!conditionalRescale || rescaleUnderQK) {
      waitPV();
      waitPV = nullptr;
    }
  }
  for (int half = 0; half < 2; ++half) {
    Value negShift = scale ? arith::NegFOp::create(b, loc, shift[half]).getResult() : Value();
    Values p;
    for (int64_t r = 0; r < nS; ++r) {
      if ((r / 2) % 2 != half)
        continue;
      Value e = scale ? w.fma(x[r], scale, negShift) : w.subf(x[r], shift[half]);
      x[r] = w.intrinsic("llvm.nvvm.ex2.approx.ftz.f", e);
      p.push_back(x[r]);
    }
    Value sum = chainReduce(w, p, reduceChains, false);
    st.l[half] = w.addf(w.mulf(st.l[half], alpha[half]), sum);
  }
  // S's registers are dead past here (P goes to tile_pv packed).
  st.sScale = 1.0;
  pk.clear();
  for (int64_t r = 0; r < nS; r += 2) {
    Value vec = w.undef(VectorType::get({2}, w.f32T));
    vec = w.insertelement(x[r], vec, w.i32(0));
    vec = w.insertelement(x[r + 1], vec, w.i32(1));
    pk.push_back(w.bitcast(w.truncf(vec, VectorType::get({2}, etT)), w.i32T));
  }
  if (rescaleUnderQK && overlap != Overlap::none) { // with the deferred P V
    deferredAlpha[0] = alpha[0];
    deferredAlpha[1] = alpha[1];
    return;
  }
  st.o = rescaleO(st.o, alpha[0], alpha[1], waitPV);
}

// O *= alpha (per row); `first` (the overlapped loop's P V wait, which
// tileSoftmax passes only with the conditional rescale) runs ahead of the
// rescale's branch, never in it.
Value WarpgroupKernel::rescaleO(Value o, Value alpha0, Value alpha1,
                                const std::function<void()> &first) {
  Value alpha[2] = {alpha0, alpha1};
  auto rescale = [&] {
    Value r = o;
    for (int64_t i = 0; i < nO; ++i)
      r = w.insertvalue(w.mulf(w.extractvalue(r, i), alpha[(i / 2) % 2]), r, i);
    return r;
  };
  if (!conditionalRescale)
    return rescale();
  // O moves only in a warp where a row's max moved (vote.sync.any, PTX ISA
  // 9.7.12.9: a warp-uniform branch).
  Value one = w.f32(1.0);
  Value moved = w.ori(w.cmpf(CmpF::UNE, alpha[0], one), w.cmpf(CmpF::UNE, alpha[1], one));
  Value any = NVVM::VoteSyncOp::create(b, loc, w.i1T, w.i32(-1), moved, NVVM::VoteSyncKind::any);
  if (first)
    first();
  return w.ifElse1(any, oT, rescale, [&] { return o; });
}

// O += P V (wgmmaPV, P in registers), committed and waited for.
void WarpgroupKernel::tilePV(TilePVOp op, State &st) {
  if (overlap != Overlap::none) { // issued with the next Q K^T, or after the loop
    deferredSlot = slotOf(op.getV());
    deferredPk = pk;
    return;
  }
  if (scheduler)
    awaitTurn(Value());
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  st.o = wgmmaPV(w, tileAt(V, slotOf(op.getV())), oT, st.o, pk, 0, kKeys, D, etT, kvLayout);
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  if (scheduler)
    passTurn(inLastIteration(op));
}

// A turn is P V of block n - 1 with Q K^T of block n (the first Q K^T of
// a loop, the last P V alone), so one consumer's softmax runs under the
// others' GEMMs: consumer g of C waits on named barrier kTurnBarrier + g
// (its 128 threads and the previous consumer's 128 arrives), then arrives
// on the next one's, (g + 1) mod C. Consumer C - 1 arrives on consumer 0's
// at the start (consumers' first).
// The turns' barrier ids are constants, one branch a consumer (predicated
// by ptxas): an id in a register makes ptxas reserve all 16 named
// barriers and keep the id live.
void WarpgroupKernel::eachConsumer(const std::function<void(int64_t)> &body) {
  int64_t consumers = rowsM / kRows;
  for (int64_t c = 0; c < consumers; ++c)
    w.ifThen(w.cmpi(CmpI::eq, warpgroup, w.i32(c)), [&] { body(c); });
}

void WarpgroupKernel::awaitTurn(Value when) {
  auto sync = [&] {
    eachConsumer([&](int64_t c) { w.barrier(w.i32(kTurnBarrier + c), w.i32(2 * 128)); });
  };
  when ? w.ifThen(when, sync) : sync();
}

void WarpgroupKernel::passTurn(Value when) {
  auto arrive = [&] {
    int64_t consumers = rowsM / kRows;
    eachConsumer([&](int64_t c) {
      w.barrierArrive(w.i32(kTurnBarrier + (c + 1) % consumers), w.i32(2 * 128));
    });
  };
  when ? w.ifThen(when, arrive) : arrive();
}

Value WarpgroupKernel::inFirstIteration(Operation *op) {
  auto loop = dyn_cast<scf::ForOp>(op->getParentOp());
  if (!loop)
    return w.boolean(true);
  return w.cmpi(CmpI::eq, map.lookup(loop.getInductionVar()),
                map.lookup(loop.getLowerBound()));
}

Value WarpgroupKernel::inLastIteration(Operation *op) {
  auto loop = dyn_cast<scf::ForOp>(op->getParentOp());
  if (!loop)
    return w.boolean(true);
  Value next = w.addi(map.lookup(loop.getInductionVar()), map.lookup(loop.getStep()));
  return w.cmpi(CmpI::sge, next, map.lookup(loop.getUpperBound()));
}

} // namespace mlir::flashattn::warpgroup
