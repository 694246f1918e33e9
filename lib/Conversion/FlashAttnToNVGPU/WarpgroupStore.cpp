//===- WarpgroupStore.cpp - the warpgroup form's epilogue -------------------===//
//
// flashattn-sm90-warpgroup's tile_store: O / l and lse from the fragments,
// directly or through shared memory and a TMA store.
//
//===----------------------------------------------------------------------===//

#include "WarpgroupKernel.h"

#include "flashattn/Conversion/FlashAttnToNVGPU/Sm90Kernel.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <cmath>

using namespace mlir;
using namespace mlir::flashattn;

namespace mlir::flashattn::warpgroup {

// out[i, :] = O / l (0 for a row without keys) for the rows below `rows`,
// lse[i] = (m + log2 l) ln 2 (-inf without keys).
LogicalResult WarpgroupKernel::tileStore(TileStoreOp op, State &st) {
  auto out = views.find(op.getOut());
  if (out == views.end() || out->second.arg != Out)
    return op.emitOpError("flashattn-sm90-warpgroup: stores into a view of out only");
  const View *lv = nullptr;
  if (op.getLse()) {
    auto it = views.find(op.getLse());
    if (it == views.end() || it->second.arg != Lse)
      return op.emitOpError("flashattn-sm90-warpgroup: lse into a view of lse only");
    lv = &it->second;
  }
  Value rows = i32(map.lookup(op.getRows()));
  Value l[2], isZero[2], inv[2];
  for (int half = 0; half < 2; ++half) {
    l[half] = quadReduce(st.l[half], false);
    isZero[half] = w.cmpf(CmpF::OEQ, l[half], zeroF);
    inv[half] = w.select(isZero[half], zeroF, w.divf(w.f32(1.0), l[half]));
  }
  if (tmaStore)
    storeThroughTma(out->second, st, inv);
  for (int half = 0; half < 2; ++half) {
    if (tmaStore && !lv)
      break;
    Value i = row[half];
    w.ifThen(w.cmpi(CmpI::slt, i, rows), [&] {
      // Packed row i: position i / G of head i % G.
      Values outRow{w.extui(i, w.i64T)}, lseRow = outRow;
      if (out->second.kept.size() == 3) {
        Value pos = w.extui(w.divui(i, w.i32(packG)), w.i64T);
        Value head = w.extui(w.remui(i, w.i32(packG)), w.i64T);
        outRow = {pos, head};
        lseRow = {head, pos};
      }
      for (int64_t r = 0; r < nO && !tmaStore; r += 2) {
        if ((r / 2) % 2 != half)
          continue;
        Value vec = normalizedPair(st, r, inv[half]);
        Values local = outRow;
        local.push_back(w.extui(w.addi(col0, w.i32(8 * (r / 4))), w.i64T));
        Value ptr = w.gep(P["o"], w.gptrT, outT, linear(out->second, local));
        w.store(outT.isF32() ? vec : w.truncf(vec, VectorType::get({2}, outT)), ptr);
      }
      if (lv)
        w.ifThen(w.cmpi(CmpI::eq, lr, w.i32(0)), [&] {
          Value lg = w.intrinsic("llvm.nvvm.lg2.approx.f", l[half]);
          Value val = w.mulf(w.addf(st.m[half], lg), w.f32(M_LN2));
          val = w.select(isZero[half], negInf, val);
          w.store(val, w.gep(P["lse"], w.gptrT, w.f32T, linear(*lv, lseRow)));
        });
    });
  }
  return success();
}

// FlashAttention-3's epilogue: each consumer warpgroup writes its 64 rows
// of O into shared memory in the tensor map's 128-byte swizzle (16-byte
// chunk c of row r at chunk c ^ (r % 8)), fences them for the async proxy
// and its first thread stores each 64-column box with cp.async.bulk.tensor
// (shared::cta to global, PTX ISA 9.7.9.25.5.2), which clips the rows past
// Sq. That thread first waits until its previous store has read the tile
// (cp.async.bulk.wait_group.read), under the warpgroup's named barrier.
Value WarpgroupKernel::normalizedPair(const State &st, int64_t r, Value inv) {
  Value vec = w.undef(VectorType::get({2}, w.f32T));
  vec = w.insertelement(w.mulf(w.extractvalue(st.o, r), inv), vec, w.i32(0));
  return w.insertelement(w.mulf(w.extractvalue(st.o, r + 1), inv), vec, w.i32(1));
}

void WarpgroupKernel::storeThroughTma(const View &out, State &st, Value inv[2]) {
  Value elect = firstOfWarpgroup();
  auto sync = [&] {
    eachConsumer([&](int64_t c) { w.barrier(w.i32(kStoreBarrier + c), w.i32(128)); });
  };
  w.ifThen(elect, [&] { NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, b.getUnitAttr()); });
  sync();
  Value lq = w.remui(row[0], w.i32(8));
  for (int64_t r = 0; r < nO; r += 2) {
    int64_t j = r / 4, half = (r / 2) % 2;
    Value vec = normalizedPair(st, r, inv[half]);
    Value pair = w.bitcast(w.truncf(vec, VectorType::get({2}, outT)), w.i32T);
    Value chunk = w.muli(w.xori(w.i32(j % 8), lq), w.i32(16));
    Value offset = w.addi(w.addi(w.muli(row[half], w.i32(128)), chunk), w.muli(lr, w.i32(4)));
    offset = w.addi(offset, w.i32(oOff + (j / 8) * rowsM * 128));
    w.store(pair, w.gep(smem, w.sptrT, w.i8T, offset));
  }
  w.fenceProxyAsyncShared();
  sync();
  w.ifThen(elect, [&] {
    Value row0 = w.addi(i32(out.offsets[1]), w.muli(warpgroup, w.i32(kRows)));
    for (int64_t box = 0; box < D / 64; ++box) {
      Value src = at(oOff + box * rowsM * 128);
      src = w.gep(src, w.sptrT, w.i8T, w.muli(warpgroup, w.i32(kRows * 128)));
      w.tmaStore(P["omap"], src,
                 {w.i32(64 * box), i32(out.offsets[2]), row0, i32(out.offsets[0])});
    }
    NVVM::CpAsyncBulkCommitGroupOp::create(b, loc);
  });
}

} // namespace mlir::flashattn::warpgroup
