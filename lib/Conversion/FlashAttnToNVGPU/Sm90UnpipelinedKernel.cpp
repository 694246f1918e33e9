//===- Sm90UnpipelinedKernel.cpp - the unpipelined sm_90a attention kernel ===//
//
// The reference form of the sm_90a attention kernel: one warpgroup (128
// threads) per CTA does everything in program order, with none of the
// pipelined kernel's overlap. Per tile of 64 query rows (a persistent
// loop, tile += gridDim): thread 0 loads Q by TMA (cp.async.bulk.tensor,
// PTX ISA 9.7.9.25) onto an mbarrier, then per key block of 64 keys in
// [n_min, n_max) (flashattn.key_blocks) it loads K and V onto a second
// mbarrier; every thread waits, S = Q K^T by wgmma.mma_async (A and B
// from 128-byte-swizzled shared memory, PTX ISA 9.7.15.5), waits for it,
// runs the online softmax on its fragment (rows by quad shuffles, exp2
// with log2 e folded into the scale; keys outside [key_begin, key_end)
// masked in every block), rescales O, and O += P V with P in registers
// (flashattn.wgmma_rs), waits again; a CTA barrier separates each block's
// reads from the next block's loads. The epilogue writes O / l and lse.
//
// This is the kernel the pipelined one (Sm90KernelBuilder.cpp) is
// debugged against: the same tensor maps, fragment layouts, key ranges and
// tile table, nothing overlapped. head_dim 64, 128 or 256, GQA, causal,
// windows, softcap, score / mask regions, lse, split-KV (the partial form;
// the combine kernel merges), pack_gqa; dense [B, S, H, D] layouts, or the
// runtime's tile table (varlen [T, H, D] q / k / v, seqused_k, append) and
// paged K / V with pages of a multiple of 64 keys (a key block inside one
// page).
//
//===----------------------------------------------------------------------===//

#include "flashattn/Conversion/FlashAttnToNVGPU/Sm90Kernel.h"

#include "KernelEmitter.h"
#include "Sm90Abi.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::flashattn;

using CmpI = arith::CmpIPredicate;
using CmpF = arith::CmpFPredicate;
using Values = KernelEmitter::Values;

namespace {
constexpr int64_t kBM = 64, kBN = 64, kThreads = 128;

/// One tile's coordinates: its head and kv head, first row, and its
/// sequence's (qRow, qb) / (kRow, kb) TMA coordinates of the first query /
/// key (paged: kRow is where its page list starts), lengths and the
/// bottom-right offset sk - sq.
struct TileInfo {
  Value h, kvh, m0, qRow, qb, sq, kRow, kb, sk, off, split, rows;
  Value seq; ///< the regions' %b: the batch, or the table entry's sequence
};

/// The thread's online-softmax state: the running max (log2 domain) and
/// its partial row sum, for its two rows A and B, and O's fragment.
struct RowState {
  Value mA, mB, lA, lB, o;
};

class UnpipelinedKernelBuilder {
public:
  UnpipelinedKernelBuilder(OpBuilder &builder, Location loc, const Sm90KernelSpec &k)
      : k(k), b(builder), loc(loc), ctx(builder.getContext()), w(builder, loc), D(k.headDim),
        boxes(D / 64), nS(kBN / 2), nO(D / 2), qBytes(boxes * kBM * 128),
        kvBytes(boxes * kBN * 128), kOff(qBytes), vOff(qBytes + kvBytes),
        barOff(qBytes + 2 * kvBytes), etT(k.f16 ? Type(b.getF16Type()) : Type(b.getBF16Type())),
        sT(w.structOf(nS, w.f32T)), oT(w.structOf(nO, w.f32T)), G(k.packGroups) {}

  void build();

private:
  std::vector<AbiParam> params();
  void prologue();
  Values tile(Value tileIndex, Value tc, Value g);
  TileInfo decode(Value tileIndex);
  Value tableField(Value e, int f) { return flashattn::tableField(w, table, e, f, true); }
  void loadQ(const TileInfo &t);
  void loadKV(const TileInfo &t, Value n);
  void zeroVTail(const TileInfo &t, Value n0);
  Value issueQK();
  Value issuePV(Value o, const Values &pk);
  Value score(Value raw, ValueRange regionArgs);
  RowState softmaxBlock(const TileInfo &t, const RowState &st, Value s, Value n0, Values &pk);
  void epilogue(const TileInfo &t, const RowState &st);
  Value quadReduce(Value v, bool max) { return flashattn::quadReduce(w, v, max); }
  Value keyEnd(const TileInfo &t, Value i) {
    return KeyEndOp::create(b, loc, w.i32T, i, t.sk, t.off, static_cast<CausalKind>(k.causal),
                            k.windowRight);
  }
  Value keyBegin(const TileInfo &t, Value i) {
    return KeyBeginOp::create(b, loc, w.i32T, i, t.off, k.windowLeft);
  }
  Value at(int64_t offset) { return w.gep(smem, w.sptrT, w.i8T, int32_t(offset)); }
  Value trunc(const char *name) { return w.trunci(P[name], w.i32T); }
  const Sm90KernelSpec &k;
  OpBuilder &b;
  Location loc;
  MLIRContext *ctx;
  KernelEmitter w;
  const int64_t D, boxes, nS, nO, qBytes, kvBytes, kOff, vOff, barOff;
  const Type etT, sT, oT;
  KernelFunc P;
  Value smem, tid, c0, c1, leader, negInf, zeroF, waitTicks;
  Value sqDim, sq, sk, hq, groups, off, nmb, ntiles, table, entries, nsplit;
  Value row0, row1, col0, lr;
  /// The thread's two rows in the tile: their query positions and heads
  /// (pack_gqa: packed row R = i G + g is position i of head kvh G + g).
  Value pos[2], head[2];
  Value tileHeads;
  const int64_t G; ///< pack_gqa's query heads per kv head (1: off)
};

std::vector<AbiParam> UnpipelinedKernelBuilder::params() {
  AbiBuilder abi{ctx, {}};
  abi.attentionTensors(k.lse, k.varlenQ, k.varlenK, k.splitPartial);
  // Boxes of 64 columns (the 128-byte swizzle's extent) x 1 head x rows
  // (x 1 batch, or page, without varlen).
  auto box = [](bool varlen, int64_t rows) {
    return varlen ? SmallVector<int64_t>{64, 1, rows} : SmallVector<int64_t>{64, 1, rows, 1};
  };
  // pack_gqa: q viewed as [B, Sq, Hkv, G, D], box 64 x G x 1 x 64 / G
  // (x 1): it lands as packed rows i G + g.
  if (G > 1) {
    SmallVector<int64_t> packedBox{64, G, 1, kBM / G, 1};
    if (k.varlenQ)
      packedBox.pop_back();
    abi.add(ParamKind::tma, "q", "q", 0, packedBox, G);
  } else {
    abi.add(ParamKind::tma, "q", "q", 0, box(k.varlenQ, kBM));
  }
  abi.add(ParamKind::tma, "k", "k", 0, box(k.varlenK, kBN));
  abi.add(ParamKind::tma, "v", "v", 0, box(k.varlenK, kBN));
  if (k.tileTable) {
    abi.scalar(ParamKind::tile_table, "tile_table");
    abi.add(ParamKind::tile_table_inline, "", "tile_table_inline", 0, {}, 0, false,
            kSm90InlineTableBytes);
  }
  if (k.pageSize)
    abi.scalar(ParamKind::page_table, "page_table");
  return abi.params;
}

void UnpipelinedKernelBuilder::prologue() {
  tid = w.tid();
  c0 = w.i32(0);
  c1 = w.i32(1);
  negInf = w.negInf();
  zeroF = w.f32(0.0);
  waitTicks = w.i32(10000000);
  smem = LLVM::AddressOfOp::create(b, loc, w.sptrT, k.name + "_smem");
  leader = w.cmpi(CmpI::eq, tid, c0);
  w.ifThen(leader, [&] {
    w.mbarrierInit(at(barOff), c1);     // Q
    w.mbarrierInit(at(barOff + 8), c1); // K and V
    w.fenceProxyAsyncShared();
  });
  NVVM::Barrier0Op::create(b, loc);
  // sqDim: the extent of q's position dimension (Sq, or Tq), the stride
  // unit of out and lse rows.
  sqDim = trunc(k.varlenQ ? "qd0" : "qd1");
  hq = trunc(k.varlenQ ? "qd1" : "qd2");
  Value hkv = trunc(k.varlenK ? "kd1" : "kd2");
  groups = w.divui(hq, hkv);
  // A tile's heads: query heads, or with pack_gqa kv heads.
  tileHeads = G > 1 ? hkv : hq;
  if (k.tileTable) {
    // The runtime's table; word 0 = its entries, each tile of one per head.
    table = tileTableAt(w, P);
    entries = w.load(w.i32T, table, /*invariant=*/true);
    ntiles = w.muli(entries, tileHeads);
  } else {
    Value batch = trunc("qd0");
    sq = sqDim;
    sk = trunc("kd1");
    off = w.subi(sk, sq);
    Value rowsTotal = G > 1 ? w.muli(sq, w.i32(G)) : sq;
    nmb = w.ceildivui(rowsTotal, w.i32(kBM));
    ntiles = w.muli(w.muli(batch, tileHeads), nmb);
  }
  // The split count is the partial out's leading dimension at run time
  // (automatic num_splits picks it per launch); the split is the tile
  // index's fastest part.
  if (k.splitPartial) {
    nsplit = trunc("od0");
    ntiles = w.muli(ntiles, nsplit);
  }
  // Fragment layout of a wgmma m64nN accumulator: register r of thread t
  // holds row 16 (t / 32) + (t % 32) / 4 + 8 ((r / 2) % 2), column
  // 2 (t % 4) + 8 (r / 4) + r % 2.
  Value warp = w.divui(tid, w.i32(32)), lane = w.remui(tid, w.i32(32));
  lr = w.remui(lane, w.i32(4));
  row0 = w.addi(w.muli(warp, w.i32(16)), w.divui(lane, w.i32(4)));
  row1 = w.addi(row0, w.i32(8));
  col0 = w.muli(lr, w.i32(2));
}

void UnpipelinedKernelBuilder::loadQ(const TileInfo &t) {
  w.ifThen(leader, [&] {
    w.mbarrierExpectTx(at(barOff), w.i32(qBytes));
    for (int64_t i = 0; i < boxes; ++i) {
      Values coords;
      if (G > 1) {
        coords = {w.i32(64 * i), c0, t.kvh};
        coords.append(posBatch(k.varlenQ, w.addi(t.qRow, w.divui(t.m0, w.i32(G))), t.qb));
      } else {
        coords = {w.i32(64 * i), t.h};
        coords.append(posBatch(k.varlenQ, w.addi(t.qRow, t.m0), t.qb));
      }
      w.tmaLoad(w.addrspacecast(at(i * kBM * 128), w.cptrT), P["qmap"], at(barOff), coords,
                Value());
    }
  });
}

// Key block n: rows kRow + 64 n of the sequence, or with pages row
// 64 n % page of page list[kRow + 64 n / page].
void UnpipelinedKernelBuilder::loadKV(const TileInfo &t, Value n) {
  w.ifThen(leader, [&] {
    Value bar = at(barOff + 8);
    w.mbarrierExpectTx(bar, w.i32(2 * kvBytes));
    Value key0 = w.muli(n, w.i32(kBN));
    Values rowBatch;
    if (k.pageSize) {
      Value ps = w.i32(k.pageSize);
      Value entry = w.addi(t.kRow, w.divui(key0, ps));
      Value page = w.load(w.i32T, w.gep(P["page_table"], w.gptrT, w.i32T, entry), true);
      rowBatch = {w.remui(key0, ps), page};
    } else {
      rowBatch = posBatch(k.varlenK, w.addi(t.kRow, key0), t.kb);
    }
    for (int64_t i = 0; i < boxes; ++i) {
      Values coords{w.i32(64 * i), t.kvh};
      coords.append(rowBatch);
      w.tmaLoad(w.addrspacecast(at(kOff + i * kBN * 128), w.cptrT), P["kmap"], bar, coords,
                Value());
      w.tmaLoad(w.addrspacecast(at(vOff + i * kBN * 128), w.cptrT), P["vmap"], bar, coords,
                Value());
    }
  });
}

// V's rows past the sequence (the next sequence's, a cache's unused rows:
// maybe NaN, and 0 x NaN is NaN in P V) to zero.
void UnpipelinedKernelBuilder::zeroVTail(const TileInfo &t, Value n0) {
  zeroTileRows(w, smem, tid, vOff, w.maxsi(w.subi(t.sk, n0), c0), kBN, D, kThreads);
}

Value UnpipelinedKernelBuilder::issueQK() {
  return wgmmaQK(w, smem, smem, sT, 0, kOff, kBM, kBN, D, k.f16);
}

Value UnpipelinedKernelBuilder::issuePV(Value o, const Values &pk) {
  return wgmmaPV(w, smem, oT, o, pk, vOff, kBN, D, etT);
}

// A raw score to the log2 domain: softcap (cap tanh(s scale / cap),
// tanh.approx.f32, PTX ISA 9.7.4.9, which NVPTX selects for an llvm.tanh
// with afn) or the scale, then the score region (inlined by the
// conversion at this call; it sees the natural-domain score), then
// log2 e.
Value UnpipelinedKernelBuilder::score(Value raw, ValueRange regionArgs) {
  double natural = k.softcap > 0 ? k.softcap : k.scale;
  double factor = k.scoreRegion ? natural : natural * 1.4426950408889634;
  Value x = raw;
  if (k.softcap > 0) {
    x = w.mulf(x, w.f32(k.scale / k.softcap));
    x = softcapTanh(w, x);
  }
  x = w.mulf(x, w.f32(factor));
  if (k.scoreRegion) {
    Values args{x};
    args.append(regionArgs.begin(), regionArgs.end());
    x = func::CallOp::create(b, loc, k.name + "_score", TypeRange{w.f32T}, args).getResult(0);
    x = w.mulf(x, w.f32(1.4426950408889634));
  }
  return x;
}

// One key block's online softmax on the thread's fragment of S: scores to
// the log2 domain, keys outside [lo, lim) of the row to -inf, the new row
// max (a max of -inf shifts by 0, so a row without keys stays 0), alpha =
// exp2(m_old - m_new), P = exp2(s - m_new) packed into pairs, l = l alpha +
// sum P. Returns the new state with O rescaled.
RowState UnpipelinedKernelBuilder::softmaxBlock(const TileInfo &t, const RowState &st, Value s,
                                                Value n0, Values &pk) {
  Value lim[2] = {keyEnd(t, pos[0]), keyEnd(t, pos[1])};
  Value lo[2] = {k.windowLeft >= 0 ? keyBegin(t, pos[0]) : Value(),
                 k.windowLeft >= 0 ? keyBegin(t, pos[1]) : Value()};
  Values x(nS);
  Value mx[2] = {negInf, negInf};
  bool regions = k.scoreRegion || k.maskRegion;
  Value rowIdx[2], headIdx[2];
  for (int half = 0; half < 2 && regions; ++half) {
    rowIdx[half] = w.indexCast(pos[half]);
    headIdx[half] = G > 1 || half == 0 ? w.indexCast(head[half]) : headIdx[0];
  }
  Value seqIdx = regions ? w.indexCast(t.seq) : Value();
  for (int64_t r = 0; r < nS; ++r) {
    int half = (r / 2) % 2;
    Value j = w.addi(n0, w.addi(col0, w.i32(8 * (r / 4) + r % 2)));
    Value keep = w.cmpi(CmpI::slt, j, lim[half]);
    if (lo[half])
      keep = w.andi(keep, w.cmpi(CmpI::sge, j, lo[half]));
    Values regionArgs;
    if (k.scoreRegion || k.maskRegion)
      regionArgs = {seqIdx, headIdx[half], rowIdx[half], w.indexCast(j)};
    Value raw = w.extractvalue(s, r);
    if (k.maskRegion) // the mask region, inlined by the conversion at this call
      keep = w.andi(keep, func::CallOp::create(b, loc, k.name + "_mask", TypeRange{w.i1T},
                                               regionArgs)
                              .getResult(0));
    x[r] = w.select(keep, score(raw, regionArgs), negInf);
    mx[half] = w.maxnumf(mx[half], x[r]);
  }
  Value mOld[2] = {st.mA, st.mB}, lOld[2] = {st.lA, st.lB}, mNew[2], alpha[2], sum[2];
  for (int half = 0; half < 2; ++half) {
    mNew[half] = w.maxnumf(mOld[half], quadReduce(mx[half], true));
    Value isEmpty = w.cmpf(CmpF::OEQ, mNew[half], negInf);
    Value shift = w.select(isEmpty, zeroF, mNew[half]);
    alpha[half] = w.intrinsic("llvm.nvvm.ex2.approx.ftz.f", w.subf(mOld[half], shift));
    sum[half] = zeroF;
    for (int64_t r = 0; r < nS; ++r) {
      if ((r / 2) % 2 != half)
        continue;
      x[r] = w.intrinsic("llvm.nvvm.ex2.approx.ftz.f", w.subf(x[r], shift));
      sum[half] = w.addf(sum[half], x[r]);
    }
  }
  for (int64_t r = 0; r < nS; r += 2) {
    Value vec = w.undef(VectorType::get({2}, w.f32T));
    vec = w.insertelement(x[r], vec, c0);
    vec = w.insertelement(x[r + 1], vec, c1);
    pk.push_back(w.bitcast(w.truncf(vec, VectorType::get({2}, etT)), w.i32T));
  }
  RowState next{mNew[0], mNew[1], w.addf(w.mulf(lOld[0], alpha[0]), sum[0]),
                w.addf(w.mulf(lOld[1], alpha[1]), sum[1]), st.o};
  for (int64_t r = 0; r < nO; ++r) {
    Value v = w.mulf(w.extractvalue(next.o, r), alpha[(r / 2) % 2]);
    next.o = w.insertvalue(v, next.o, r);
  }
  return next;
}

// out[b, i, h, :] = O / l (0 for a row without keys) for the rows below
// Sq, and lse[b, h, i] = (m + log2 l) ln 2 (-inf without keys).
void UnpipelinedKernelBuilder::epilogue(const TileInfo &t, const RowState &st) {
  Value b64 = w.extui(t.qb, w.i64T);
  Value sq64 = w.extui(sqDim, w.i64T), hq64 = w.extui(hq, w.i64T);
  Value ms[2] = {st.mA, st.mB}, ls[2] = {st.lA, st.lB};
  // Partial form: the split's slices start at s B Sq H D (out, f32) and
  // s B H Sq (lse).
  Value oSplit, lSplit;
  if (k.splitPartial) {
    Value s64 = w.extui(t.split, w.i64T);
    lSplit = w.muli(s64, w.muli(w.muli(P["od1"], P["od2"]), P["od3"]));
    oSplit = w.muli(lSplit, w.i64(D));
  }
  Type ot = k.splitPartial ? w.f32T : etT;
  for (int half = 0; half < 2; ++half) {
    Value l = quadReduce(ls[half], false);
    Value isZero = w.cmpf(CmpF::OEQ, l, zeroF);
    Value inv = w.select(isZero, zeroF, w.divf(w.f32(1.0), l));
    Value i = pos[half], h64 = w.extui(head[half], w.i64T);
    w.ifThen(w.cmpi(CmpI::slt, i, t.sq), [&] {
      // The row's place in q's position dimension (varlen: past the
      // sequences before it).
      Value i64v = w.extui(w.addi(t.qRow, i), w.i64T);
      Value base = outRowOffset(w, b64, i64v, h64, sq64, hq64, D);
      if (oSplit)
        base = w.addi(base, oSplit);
      for (int64_t r = 0; r < nO; r += 2) {
        if ((r / 2) % 2 != half)
          continue;
        Value vec = w.undef(VectorType::get({2}, w.f32T));
        vec = w.insertelement(w.mulf(w.extractvalue(st.o, r), inv), vec, c0);
        vec = w.insertelement(w.mulf(w.extractvalue(st.o, r + 1), inv), vec, c1);
        Value col = w.extui(w.addi(col0, w.i32(8 * (r / 4))), w.i64T);
        Value ptr = w.gep(P["o"], w.gptrT, ot, w.addi(base, col));
        w.store(k.splitPartial ? vec : w.truncf(vec, VectorType::get({2}, etT)), ptr);
      }
      if (k.lse)
        w.ifThen(w.cmpi(CmpI::eq, lr, c0), [&] {
          Value lg = w.intrinsic("llvm.nvvm.lg2.approx.f", l);
          Value val = w.mulf(w.addf(ms[half], lg), w.f32(M_LN2));
          val = w.select(isZero, negInf, val);
          Value li = lseIndex(w, b64, h64, i64v, hq64, sq64);
          if (lSplit)
            li = w.addi(li, lSplit);
          w.store(val, w.gep(P["lse"], w.gptrT, w.f32T, li));
        });
    });
  }
}

// Tile `tileIndex`: without the table m_block fastest, then head, then
// batch; with it, in groups of hg heads (the table's word 2), entry by
// entry, head fastest, an entry being (q position, q batch, q length, k
// position, k batch, k length, m_block, sequence).
TileInfo UnpipelinedKernelBuilder::decode(Value tileIndex) {
  TileInfo t;
  if (k.splitPartial) {
    t.split = w.remui(tileIndex, nsplit);
    tileIndex = w.divui(tileIndex, nsplit);
  }
  if (!k.tileTable) {
    Value mb = w.remui(tileIndex, nmb), bh = w.divui(tileIndex, nmb);
    t.h = w.remui(bh, tileHeads);
    t.qb = t.kb = w.divui(bh, tileHeads);
    t.m0 = w.muli(mb, w.i32(kBM));
    t.qRow = t.kRow = c0;
    t.seq = t.qb;
    t.sq = sq;
    t.sk = sk;
    t.off = off;
  } else {
    Value hg =
        w.minui(w.maxui(w.load(w.i32T, w.gep(table, w.ptrT, w.i32T, 2)), c1), tileHeads);
    Value e;
    std::tie(t.h, e) = groupedOrder(w, tileIndex, hg, tileHeads, entries);
    t.qRow = tableField(e, 0);
    t.qb = tableField(e, 1);
    t.sq = tableField(e, 2);
    t.kRow = tableField(e, 3);
    t.kb = tableField(e, 4);
    t.sk = tableField(e, 5);
    t.m0 = w.muli(tableField(e, 6), w.i32(kBM));
    t.seq = tableField(e, 7);
    t.off = w.subi(t.sk, t.sq);
  }
  // t.h: the query head, or with pack_gqa the kv head.
  t.kvh = G > 1 ? t.h : w.divui(t.h, groups);
  t.rows = G > 1 ? w.muli(t.sq, w.i32(G)) : t.sq;
  return t;
}

// One tile: Q, the key blocks, the epilogue. Returns the next (tile
// counter, key-block counter): the mbarriers' phases.
Values UnpipelinedKernelBuilder::tile(Value tileIndex, Value tc, Value g) {
  TileInfo t = decode(tileIndex);
  // The previous tile's reads of Q, K and V are over.
  NVVM::Barrier0Op::create(b, loc);
  loadQ(t);
  w.mbarrierWait(at(barOff), w.andi(tc, c1), waitTicks);
  Value cG = w.i32(G);
  for (int half = 0; half < 2; ++half) {
    Value r = w.addi(t.m0, half ? row1 : row0);
    pos[half] = G > 1 ? w.divui(r, cG) : r;
    head[half] = G > 1 ? w.addi(w.muli(t.kvh, cG), w.remui(r, cG)) : t.h;
  }
  // The key blocks of the query positions [pos0, pos1) of the tile's rows.
  Value rowEnd = w.addi(t.m0, w.minsi(w.i32(kBM), w.subi(t.rows, t.m0)));
  Value pos0 = G > 1 ? w.divui(t.m0, cG) : t.m0;
  Value pos1 = G > 1 ? w.ceildivui(rowEnd, cG) : rowEnd;
  auto range = KeyBlocksOp::create(b, loc, w.i32T, w.i32T, pos0, pos1, t.sk, t.off, t.split,
                                   k.splitPartial ? nsplit : Value(), kBN, static_cast<CausalKind>(k.causal),
                                   k.windowLeft, k.windowRight);
  Value oZero = w.undef(oT);
  for (int64_t r = 0; r < nO; ++r)
    oZero = w.insertvalue(zeroF, oZero, r);
  Value end = w.maxsi(range.getEnd(), range.getBegin());
  Values init{g, negInf, negInf, zeroF, zeroF, oZero};
  Values fin = w.forLoop(range.getBegin(), end, c1, init, [&](Value n, ValueRange a) -> Values {
    NVVM::Barrier0Op::create(b, loc); // the previous block's K and V are read
    loadKV(t, n);
    w.mbarrierWait(at(barOff + 8), w.andi(a[0], c1), waitTicks);
    Value n0 = w.muli(n, w.i32(kBN));
    if (k.tileTable)
      zeroVTail(t, n0);
    NVVM::WgmmaFenceAlignedOp::create(b, loc);
    Value s = issueQK();
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
    Values pk;
    RowState st = softmaxBlock(t, RowState{a[1], a[2], a[3], a[4], a[5]}, s, n0, pk);
    NVVM::WgmmaFenceAlignedOp::create(b, loc);
    Value o = issuePV(st.o, pk);
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
    return {w.addi(a[0], c1), st.mA, st.mB, st.lA, st.lB, o};
  });
  epilogue(t, RowState{fin[1], fin[2], fin[3], fin[4], fin[5]});
  return {w.addi(tc, c1), fin[0]};
}

void UnpipelinedKernelBuilder::build() {
  declareKernelGlobals(w, k.name, k.scoreRegion, k.maskRegion);
  OpBuilder::InsertionGuard guard(b);
  P = buildKernelFunc(w, k.name, params(), kThreads, barOff + 16, /*minCtas=*/false);
  prologue();
  w.forLoop(w.ctaid(), ntiles, w.nctaid(), {c0, c0}, [&](Value t, ValueRange a) -> Values {
    return tile(t, a[0], a[1]);
  });
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}
} // namespace

std::string mlir::flashattn::sm90UnpipelinedUnsupported(const Sm90KernelSpec &k) {
  if (k.headDim != 64 && k.headDim != 128 && k.headDim != 256)
    return "head_dim " + std::to_string(k.headDim);
  if (k.kvRowCopies || (k.pageSize && k.pageSize % kBN))
    return "pages of other than a multiple of 64 keys";
  if (k.kvHeadsPerBlock > 1)
    return "several kv heads per key block";
  if (kBM % k.packGroups)
    return "pack_gqa with " + std::to_string(k.packGroups) + " query heads per kv head (a divisor of 64)";
  return "";
}

void mlir::flashattn::buildSm90UnpipelinedKernel(OpBuilder &builder, Location loc,
                                                 const Sm90KernelSpec &spec) {
  UnpipelinedKernelBuilder(builder, loc, spec).build();
}
