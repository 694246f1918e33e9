//===- Sm90KernelBuilder.cpp - the sm_90a attention kernels, built as IR --===//
//
// Builds, for one attention configuration, the sm_90a kernel in the LLVM,
// NVVM, arith and scf dialects with OpBuilder (KernelEmitter), plus the
// flashattn ops later passes lower (flashattn.warp_specialize,
// flashattn.wgmma_rs; the key-range ops key_blocks / key_end / key_begin),
// following the FlashAttention-3
// paper (arXiv 2407.08608, sections 3.1 and 3.2):
//
// - warp specialization (flashattn.warp_specialize): warpgroup 0 is the producer (one thread issues
//   every TMA load; setmaxnreg lowers its registers, PTX ISA 9.7.17.1),
//   warpgroups 1..C are consumers, 64 query rows each (a tile has 64 C rows);
//   a persistent grid strides over (batch, head, m_block[, split]) tiles;
// - Q, K and V arrive by TMA (cp.async.bulk.tensor, PTX ISA 9.7.9.25) into
//   128-byte-swizzled shared memory; K and V in `stages` stages with
//   separate full and empty mbarriers, so K is released as soon as S is
//   computed; Q has its own full / empty pair;
// - S = Q K^T by wgmma.mma_async (A and B from shared memory, K-major);
// - intra-warpgroup overlap: S_n = Q K_n^T and O += P_{n-1} V_{n-1} are
//   issued together, and the softmax of S_n runs while P V is in flight;
// - the online softmax on the accumulator fragments (row max and sum by
//   shuffles), exp2 with log2(e) folded into the scale, the -inf guard;
// - O += P V by wgmma with P in registers: flashattn.wgmma_rs, which
//   convert-flashattn-sm90-to-nvvm makes inline PTX since neither NVGPU nor
//   NVVM has the register-A form (PTX ISA 9.7.15.5.2);
// - the epilogue writes out (bf16/f16 pairs) and lse (f32).
//
// A refactoring that should not change the kernels is checked byte for
// byte against an earlier commit's PTX with scripts/compare_sm90_ptx.sh
// (built with the same C++ compiler: where an argument list creates two
// ops, their order is the compiler's).
//
//===----------------------------------------------------------------------===//

#include "flashattn/Conversion/FlashAttnToNVGPU/Sm90Kernel.h"

#include "KernelEmitter.h"
#include "Sm90Abi.h"
#include "Sm90Merge.h"
#include "flashattn/Conversion/FlashAttnToNVGPU/Sm90Layout.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <cassert>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

using namespace mlir;
using namespace mlir::flashattn;

using CmpI = arith::CmpIPredicate;
using CmpF = arith::CmpFPredicate;
using Values = KernelEmitter::Values;

//===----------------------------------------------------------------------===//
// The attention kernel.
//===----------------------------------------------------------------------===//

namespace {

using Combine = std::function<Value(Value, Value)>;

VectorType vecOf(int64_t n, Type t) { return VectorType::get({n}, t); }

/// A tile's coordinates and key-block range, the same in the producer and
/// the consumers.
/// sq, sk, off (= sk - sq) and rowsTotal are the tile's sequence's;
/// (qRow, qb) and (kRow, kb) are the TMA coordinates (position, batch) of
/// its first query and key; b is the sequence (region argument).
struct Tile {
  Value b, h, kvh, m0, m1, split, nbLo, nblocks;
  Value sq, sk, off, rowsTotal, qRow, qb, kRow, kb, entry;
};

/// Per round of lane-issued boxes: the box index of this lane and its page.
using BoxPages = std::vector<std::pair<Value, Value>>;

/// The producer's view of one key block: its stage slot, the parity of the
/// empty barriers' previous use and whether that use exists, the block
/// index, the first kv head of its boxes and its pages (paged KV).
struct KVBlock {
  Value slot, ePar, reuse, kb, kvHead0;
  Values pages;
  BoxPages boxPages;
};

/// A wgmma shared-memory descriptor, as its low 32 bits and the constant
/// high half (see AttentionKernelBuilder::desc).
struct Desc {
  Value lo;
  int64_t hi;
};

/// The online softmax of one key block's scores (fragments of S).
struct Softmax {
  Value mA, mB, lA, lB, alphaA, alphaB;
  Values pk;
};

/// A consumer thread's two rows of a tile and the keys each may see.
struct Rows {
  Value iA, iB, hA, hB, limA, limB, loA, loB, bIdx, hIdx[2], iIdx[2];
  // lim of the warpgroup's first row, lo of its last (block-level test).
  Value limFirst, loLast;
  // HP > 1: whether this thread's columns of parity p (r % 2) hold keys
  // of row A's (B's) kv head: headOk[rowB][p].
  Value headOk[2][2];
};

/// One tile as a consumer warpgroup sees it.
struct ConsumerTile {
  Tile t;
  Rows rw;
  /// The tile index, the warpgroup's first packed row, the key blocks it
  /// computes (the rest it drains), the address of empty_Q (i64).
  Value ctile, firstRow, nC, emptyQ;
};

/// What the epilogue and the fused merge share: the consumers' final state
/// (block counter, m, l of both rows, O), the row sums over the quad and
/// their inverses, i64 sizes and coordinates, the split's offsets.
struct Epilogue {
  Values cr;
  Value LA, LB, invA, invB, hq64, sq64, b64, h64s[2], oSplit, lSplit;
  Type ot;
};

/// Builds the attention kernel of one Sm90KernelSpec: the parameters and
/// the prologue, then the producer warpgroup and the consumer warpgroups.
/// Members hold the values the pieces share.
class AttentionKernelBuilder {
public:
  AttentionKernelBuilder(OpBuilder &builder, Location loc, const Sm90KernelSpec &k)
      : k(k), builder(builder), loc(loc), ctx(builder.getContext()), w(builder, loc), L(k),
        D(k.headDim), C(k.consumers), BM(64 * C), BN(k.blockN), ST(k.stages), boxes(D / 64),
        threads(128 * (1 + C)), nS(static_cast<int>(BN / 2)), nO(static_cast<int>(D / 2)),
        nP(static_cast<int>(BN / 4)), HP(k.kvHeadsPerBlock), G(k.packGroups * HP),
        KB(BN / HP), PS(k.pageSize), partial(k.splitPartial), fused(partial && k.fusedCombine),
        table(k.tileTable), packed(G > 1),
        panels(sm90PagePanels(k.pageSize, BN, HP, k.kvRowCopies)),
        rawMax(k.softcap <= 0 && !k.scoreRegion && k.scale > 0),
        etT(k.f16 ? Type(builder.getF16Type()) : Type(builder.getBF16Type())),
        sT(w.structOf(nS, w.f32T)), oT(w.structOf(nO, w.f32T)),
        scaleLog2(k.scale * 1.4426950408889634) {
    maxF = [this](Value a, Value c) { return w.maxnumf(a, c); };
    addF = [this](Value a, Value c) { return w.addf(a, c); };
  }

  void build();

private:
  // Parameters, prologue, problem sizes.
  void declareRegionsAndSmem();
  std::vector<AbiParam> kernelParams();
  void initBarriers();
  void problemSizes();

  // Shared helpers.
  Value trunc(const char *name) { return w.trunci(P[name], w.i32T); }
  Value at(int64_t off) { return w.gep(smem, w.sptrT, w.i8T, int32_t(off)); }
  Value barAt(int64_t base, Value slot);
  Value slotBase(int64_t base, Value slot);
  Value ptrAdd(Value base, int64_t o) { return w.gep(base, w.sptrT, w.i8T, int32_t(o)); }
  void waitParity(Value bar, Value parity) { w.mbarrierWait(bar, parity, waitTicks); }
  // Stage slot and phase parity of the g-th key block a CTA handles.
  Value slotOf(Value g) { return w.remui(g, cST); }
  Value parityOf(Value g) { return w.andi(w.divui(g, cST), c1); }
  // a + b, or b when a is the constant 0 (the dense kernel's positions).
  Value plus(Value a, Value b) { return a == c0 ? b : w.addi(a, b); }
  Value warpUniform(Value v);
  Value quadReduce(Value v, const Combine &combine);

  // Tiles.
  Value tableField(Value e, int f, bool invariant);
  std::pair<Value, Value> groupedOrder(Value tile, Value hg, Value heads, Value rounds);
  Value tableTile(Value tile, Tile &t);
  std::pair<Value, Value> heavyFirstOrder(Value tile);
  void tileKeyRange(Tile &t, Value mb);
  Tile decodeTile(Value tileIn);

  // Producer.
  void producer();
  Value policy(L2Hint hint);
  Value qHint() { return policy(k.l2HintQ); }
  Value kvHint() { return policy(k.l2HintKV); }
  Value pageIndex(const Tile &t, Value index);
  // The sequence's last page (its index in the list).
  Value lastPage(const Tile &t) { return w.subi(w.ceildivui(t.sk, w.i32(PS)), c1); }
  Values pagesOf(Value nb, const Tile &t);
  void tmaLoad(Value dst, Value map, Value bar, Values coords, Value hint) {
    w.tmaLoad(dst, map, bar, coords, hint);
  }
  void loadKV(Value map, Value base, Value bar, Value nb, Value kvh, const Tile &t,
              const Values &pages);
  Value nextTile(Value tile);
  void waitQFree(Value tc);
  void loadQ(const Tile &t);
  std::tuple<Value, Value, Value> stageUse(Value g);
  // Producer, per-row copies.
  void rowCopyProducer();
  void copyRows(Value pool, Value base, Value nb, const Tile &t);
  void copyRow(Value pool, Value base, const Tile &t, Value ci, Value key0, Value last,
               Value colOff, Value rowElems, Value dstBox);
  void finishCopies(Value g, int pending);
  std::pair<Value, Values> rowCopyPublish(ValueRange a);
  Values rowCopyTile(ValueRange a);
  Values rowCopyBlock(const Tile &t, Value pi, Value pgg);
  // Producer, TMA.
  void tmaProducer();
  void ifLane0(llvm::function_ref<void()> body);
  Value nextTileAll(Value tile);
  BoxPages lanePages(Value nb, const Tile &t);
  void loadKVLanes(Value map, Value base, Value bar, Value kvh, const BoxPages &pages);
  void loadLaneBox(Value map, Value base, Value bar, Value kvh, Value j, Value page);
  Values tmaProducerTile(ValueRange a);
  Values tmaProducerBlock(const Tile &t, Value pi, ValueRange it);
  void waitEmpty(const KVBlock &blk, int64_t bar);
  void loadV(const Tile &t, const KVBlock &blk, Value base, Value bar);
  Value zeroVTail(const Tile &t, const KVBlock &blk, Value vBase, Value zeroFrom, Value pag);
  void zeroPanelRows(Value vBase, Value zeroFrom, Value zeros);
  void zeroBoxRows(Value vBase, Value zeroFrom, Value zeros);

  // Consumers.
  void consumers();
  void consumerSetup();
  void fragmentLayout();
  void perConsumerFrom(llvm::function_ref<void(int64_t)> body, int64_t c);
  void perConsumer(llvm::function_ref<void(int64_t)> body) { perConsumerFrom(body, 0); }
  void barrierSync(int64_t id) { w.barrier(w.i32(id), turnThreads); }
  void barrierArrive(int64_t id) { w.barrierArrive(w.i32(id), turnThreads); }
  void awaitTurn();
  void passTurn();
  Desc desc(Value ptr, int64_t lbo, int64_t sbo);
  Value descAt(const Desc &d, int64_t bytes);
  Desc qDesc();
  Value issueQK(Value kBase);
  Value issuePV(Value oacc, const Values &pk, Value vBase);
  Value score(Value s, int r, Value n0, const Rows &rw, bool masked);
  Softmax softmaxBody(Value s, Value n0, const Rows &rw, Value mOldA, Value mOldB,
                      Value lOldA, Value lOldB, bool masked);
  void packP(const Values &p, Softmax &sm);
  Softmax softmax(Value s, Value n0, const Rows &rw, Value mOldA, Value mOldB, Value lOldA,
                  Value lOldB);
  Value rescaleAll(Value oacc, Value aA, Value aB);
  Value rescale(Value oacc, Value aA, Value aB);
  // Consumers, one tile.
  Values consumerTile(Value ctile, Value cg, Value ctc);
  Value posOf(Value r) { return packed ? w.divui(r, cG) : r; }
  Value headOf(const Tile &t, Value r);
  Value limOf(const Tile &t, Value i);
  Value loOf(const Tile &t, Value i);
  CausalKind causalKind() const { return static_cast<CausalKind>(k.causal); }
  void tileRows(ConsumerTile &ct);
  Value computedBlocks(const ConsumerTile &ct);
  void releaseQIf(const ConsumerTile &ct, Value cond);
  Value drainBlocks(Value lo, Value hi, Value g);
  void waitFull(int64_t base, Value slot, Value g);
  Values computeTile(const ConsumerTile &ct, Value cg);
  Values keyBlock(const ConsumerTile &ct, Value cn, ValueRange a);
  Values lastBlock(const ConsumerTile &ct, const Values &kl);
  Values drainTile(const ConsumerTile &ct, Value cg, Value has);
  // Epilogue and fused merge.
  void epilogue(ConsumerTile &ct, const Values &cr);
  Value outPair(const Epilogue &e, int r);
  void epilogueTmaStore(const ConsumerTile &ct, const Epilogue &e);
  void storeRow(const ConsumerTile &ct, const Epilogue &e, int half, Value i);
  void storeLse(const Epilogue &e, int half, Value i64v);
  void fusedMerge(const ConsumerTile &ct, const Epilogue &e);
  void countMergeUnit(const ConsumerTile &ct, Value mc, Value flag);
  void mergeTile(const ConsumerTile &ct, const Epilogue &e, Value consumerThreads);
  void mergeUnit(const ConsumerTile &ct, const Epilogue &e, Value mu, Value rowsL,
                 Value totalO);

  const Sm90KernelSpec &k;
  OpBuilder &builder;
  Location loc;
  MLIRContext *ctx;
  KernelEmitter w;
  const Sm90Layout L;
  const int64_t D, C, BM, BN, ST, boxes, threads;
  const int nS, nO, nP;
  // pack_gqa: HP kv heads a tile, G = packGroups HP packed rows a position.
  const int64_t HP, G;
  // Keys per key block, and the page size (0: dense KV).
  const int64_t KB, PS;
  // Split-KV partial form, fused combine, tile table, pack_gqa.
  const bool partial, fused, table, packed;
  // Paged KV over pages smaller than a key block, one kv head a box: one
  // box per page, in the page panel layout (sm90PagePanels).
  const bool panels;
  // The row max on raw scores (see fragmentLayout).
  const bool rawMax;
  const Type etT, sT, oT;
  const double scaleLog2;
  Combine maxF, addF;

  std::vector<std::string> maps;
  KernelFunc P;
  // Thread coordinates, constants, shared memory.
  Value tid, cta, ncta, c0, c1, c2, c4, c8, c16, c32, c128, cST, smem, isLeader;
  // Problem sizes.
  Value batch, sqDim, hq, sk, hkv, sq, groups, cBM, cG, tileHeads;
  Value rowsTotal, nmb, nbh, ntiles, entryCount, tt, nsplit, cBN, off;
  Value negInf, zeroF, full, clamp, waitTicks;

  // Producer state.
  Value tileSlot;
  // Per-row copies: this thread's chunk column, first row, box and chunk
  // in the box; its rows per block; the producer's named barrier.
  int64_t rowStep = 0;
  Value copyCol, copyRow0, ccBox, ccChunk, perThread, prodBar;
  // TMA: with the tile table (zeroTail) warp 0 runs the loop.
  bool zeroTail = false, laneBoxes = false;
  int64_t perPage = 0, nBoxes = 0, boxRounds = 0;
  Value lane0, prodLane;

  // Consumer state.
  Value ctid, cw, turnThreads, t128, warp, lane, lq, lr, row0, row1, col0, qBase;
  Value scaleC, negScaleC, capScale, capLog2, oZero;
  Desc qDesc0;
};

//===----------------------------------------------------------------------===//
// Parameters, prologue, problem sizes.
//===----------------------------------------------------------------------===//

void AttentionKernelBuilder::declareRegionsAndSmem() {
  declareKernelGlobals(w, k.name, k.scoreRegion, k.maskRegion);
}

std::vector<AbiParam> AttentionKernelBuilder::kernelParams() {
  // Parameters (the runtime's launch ABI): pointers, dims, tensor maps,
  // then the scheduler's and the merge's.
  AbiBuilder abi{builder.getContext(), {}};
  abi.attentionTensors(k.lse, k.varlenQ, k.varlenK, partial);
  // The tensor maps, boxes innermost first (64 columns: the 128-byte
  // swizzle's extent). Varlen tensors ([T, H, D]) have no batch dimension:
  // their boxes lose the trailing 1. pack_gqa: q viewed as [B, Sq, Hkv, G,
  // D], box G heads x block_m / G positions. K/V: HP heads x the key
  // block's (or a page's) keys, or with page panels one page as {64, 8,
  // D / 64, page / 8, 1}.
  auto box = [](bool varlen, SmallVector<int64_t> b) {
    if (varlen)
      b.pop_back();
    return b;
  };
  if (packed)
    abi.add(ParamKind::tma, "q", "q", 0, box(k.varlenQ, {64, G, 1, BM / G, 1}), G);
  else
    abi.add(ParamKind::tma, "q", "q", 0, box(k.varlenQ, {64, 1, BM, 1}));
  const int64_t kvRows = k.pageSize ? std::min<int64_t>(KB, k.pageSize) : KB;
  for (const char *n : {"k", "v"}) {
    if (panels)
      abi.add(ParamKind::tma, n, n, 0, {64, 8, D / 64, k.pageSize / 8, 1}, 0, true);
    else
      abi.add(ParamKind::tma, n, n, 0, box(k.varlenK, {64, HP, kvRows, 1}));
  }
  maps = {"qmap", "kmap", "vmap"};
  if (k.tmaStore) {
    abi.add(ParamKind::tma, "out", "o", 0, {64, 1, 64, 1});
    maps.push_back("omap");
  }
  // Dynamic schedule: a u32 tile counter, zero at launch.
  if (k.heavyFirst)
    abi.scalar(ParamKind::tile_counter, "tile_counter");
  // Sequence-aware tiles: the runtime's tile table (Sm90KernelSpec::tileTable).
  if (k.tileTable) {
    abi.scalar(ParamKind::tile_table, "tile_table");
    abi.add(ParamKind::tile_table_inline, "", "tile_table_inline", 0, {}, 0, false,
            kSm90InlineTableBytes);
  }
  // Paged KV: the page lists. The runtime passes either the block_table
  // itself (device memory: a sequence's list at b x max_pages) or the copies
  // of the lists it put in the tile table; t.kRow is where the tile's list
  // starts either way.
  if (k.pageSize)
    abi.scalar(ParamKind::page_table, "page_table");
  // Fused combine: the final out and lse, and the per-tile counters.
  if (fused) {
    abi.scalar(ParamKind::merge_out, "merge_out");
    abi.scalar(ParamKind::merge_lse, "merge_lse");
    abi.scalar(ParamKind::merge_counters, "merge_counters");
  }
  return abi.params;
}

void AttentionKernelBuilder::initBarriers() {
  // Thread coordinates and shared memory.
  tid = w.tid();
  cta = w.ctaid();
  ncta = w.nctaid();
  c0 = w.i32(0);
  c1 = w.i32(1);
  c2 = w.i32(2);
  c4 = w.i32(4);
  c8 = w.i32(8);
  c16 = w.i32(16);
  c32 = w.i32(32);
  c128 = w.i32(128);
  cST = w.i32(ST);
  smem = LLVM::AddressOfOp::create(builder, loc, w.sptrT, k.name + "_smem");
  // Barrier counts: full barriers complete on the TMA bytes after the
  // producer's one arrival; empty barriers when every consumer thread has
  // arrived.
  isLeader = w.cmpi(CmpI::eq, tid, c0);
  w.ifThen(isLeader, [&] {
    // The tensor maps (kernel parameters) into the tensormap cache before
    // the first copy needs them (PTX ISA, prefetch.tensormap), as
    // FlashAttention-3's producer does at entry: the first TMA load of a
    // short launch (decode, 512-key prefill) no longer waits for its
    // descriptor's fetch.
    for (const std::string &n : maps)
      NVVM::PrefetchOp::create(builder, loc, {}, {}, P[n], Value(), /*tensormap=*/true,
                               /*uniform=*/false, /*in_param_space=*/true);
    Value consumersC = w.i32(128 * C);
    // K / V full barriers: the producer thread's arrival (with the TMA
    // bytes), or with per-row copies the 128 producer threads' arrivals.
    Value fullKV = k.kvRowCopies ? w.i32(128) : c1;
    w.mbarrierInit(at(L.fullQ()), c1);
    w.mbarrierInit(at(L.emptyQ()), consumersC);
    for (int64_t s = 0; s < ST; ++s) {
      w.mbarrierInit(at(L.fullK() + 8 * s), fullKV);
      w.mbarrierInit(at(L.fullV() + 8 * s), fullKV);
      w.mbarrierInit(at(L.emptyK() + 8 * s), consumersC);
      w.mbarrierInit(at(L.emptyV() + 8 * s), consumersC);
    }
    if (k.tileTable)
      w.mbarrierInit(at(L.auxV()), c1);
    w.fenceProxyAsyncShared();
  });
  NVVM::Barrier0Op::create(builder, loc);
}

void AttentionKernelBuilder::problemSizes() {
  // sqDim: the extent of q's position dimension (Sq, or Tq when packed by
  // cu_seqlens_q), the stride unit of out and lse rows.
  batch = table ? Value() : trunc("qd0");
  sqDim = trunc(k.varlenQ ? "qd0" : "qd1");
  hq = trunc(k.varlenQ ? "qd1" : "qd2");
  sk = table ? Value() : trunc("kd1");
  hkv = trunc(k.varlenK ? "kd1" : "kd2");
  sq = table ? Value() : sqDim;
  groups = w.divui(hq, hkv);
  cBM = w.i32(BM);
  // pack_gqa: the G query heads of a kv head share its tiles; packed row
  // R = i G + g is query position i of head kvh G + g (FlashAttention-3's
  // order), so a tile's rows cover BM / G positions of all G heads.
  // With kvHeadsPerBlock = HP > 1 a tile serves HP consecutive kv heads
  // (a kv group): packed row R = i G' + hp G + g (G' = HP G) is position i
  // of query head (kvg HP + hp) G + g, and t.kvh is the kv group.
  cG = w.i32(G);
  tileHeads = !packed ? hq : HP > 1 ? w.divui(hkv, w.i32(HP)) : hkv;
  if (table) {
    // Entry 0 of the table holds the number of (sequence, m_block) entries
    // (each serves every head) and, at word 2, the heads per L2 group.
    tt = tileTableAt(w, P);
    entryCount = w.load(w.i32T, tt, /*invariant=*/true);
    ntiles = w.muli(entryCount, tileHeads);
  } else {
    rowsTotal = packed ? w.muli(sq, cG) : sq;
    nmb = w.ceildivui(rowsTotal, cBM);
    nbh = w.muli(batch, tileHeads);
    ntiles = w.muli(nbh, nmb);
  }
  // The split count is the partial out's leading dimension at run time (the
  // runtime may choose it per launch: automatic num_splits).
  nsplit = partial ? trunc("od0") : Value();
  if (partial)
    ntiles = w.muli(ntiles, nsplit);
  // Keys per key block: BN, or BN / HP (a block's BN shared-memory rows
  // hold BN / HP keys of HP kv heads, row n = key (n / HP), head n % HP).
  cBN = w.i32(KB);
  off = table ? Value() : w.subi(sk, sq);
  negInf = w.negInf();
  zeroF = w.f32(0.0);
  full = w.i32(-1);
  clamp = w.i32(31);
  waitTicks = w.i32(10000000);
}

void AttentionKernelBuilder::build() {
  declareRegionsAndSmem();
  std::vector<AbiParam> params = kernelParams();
  // One CTA per SM: e.g. with C = 2, 384 threads at 168 registers each, the
  // budget setmaxnreg redistributes.
  OpBuilder::InsertionGuard funcGuard(builder);
  P = buildKernelFunc(w, k.name, params, threads, L.total(), /*minCtas=*/true);
  initBarriers();
  problemSizes();
  // Warpgroup 0 produces, the others consume (flashattn-lower-warp-specialize
  // makes the branch and the register budgets).
  auto partitions = WarpSpecializeOp::create(builder, loc, tid, k.producerRegs, k.consumerRegs);
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&partitions.getProducer().emplaceBlock());
    producer();
    builder.setInsertionPointToStart(&partitions.getConsumers().emplaceBlock());
    consumers();
  }
  LLVM::ReturnOp::create(builder, loc, ValueRange{});
}

//===----------------------------------------------------------------------===//
// Shared helpers.
//===----------------------------------------------------------------------===//

// Barrier `base` + 8 * slot.
Value AttentionKernelBuilder::barAt(int64_t base, Value slot) {
  Value offset = w.muli(slot, c8);
  offset = w.addi(offset, w.i32(base));
  return w.gep(smem, w.sptrT, w.i8T, offset);
}

Value AttentionKernelBuilder::slotBase(int64_t base, Value slot) {
  Value offset = w.muli(slot, w.i32(L.kvBytes));
  offset = w.addi(offset, w.i32(base));
  return w.gep(smem, w.sptrT, w.i8T, offset);
}

// Lane 0's `v` in every lane of the warp (shfl.sync idx): also how ptxas
// learns that a value is the same across the warp.
Value AttentionKernelBuilder::warpUniform(Value v) {
  return w.shfl(NVVM::ShflKind::idx, full, v, c0, clamp);
}

// A row of the accumulator lives in the 4 lanes of a quad: reduce with
// two butterfly shuffles (xor 1, 2).
Value AttentionKernelBuilder::quadReduce(Value v, const Combine &combine) {
  for (Value sh : {c1, c2}) {
    Value o = w.shfl(NVVM::ShflKind::bfly, full, v, sh, clamp);
    v = combine(v, o);
  }
  return v;
}

//===----------------------------------------------------------------------===//
// Tiles.
//===----------------------------------------------------------------------===//

// Field f of tile-table entry e. Invariant loads may be merged; the
// epilogue's plain reloads are not, so the fields it needs do not occupy
// registers through the key-block loop (a dense kernel reads them from
// its parameters).
Value AttentionKernelBuilder::tableField(Value e, int f, bool invariant) {
  return flashattn::tableField(w, tt, e, f, invariant);
}

// The L2 groups of the tile orders: tiles go in groups of hg heads
// (`heads` in all), `rounds` tiles per head in a group (m_blocks, or
// table entries), head fastest inside a group; the last group may hold
// fewer heads. Returns (head, round).
std::pair<Value, Value> AttentionKernelBuilder::groupedOrder(Value tile, Value hg, Value heads,
                                                             Value rounds) {
  return flashattn::groupedOrder(w, tile, hg, heads, rounds);
}

// Table mode: in groups of hg heads (the table's word 2, the heads
// whose K/V fit 32 MB of L2, as the lpt order's groups below), entry
// by entry in the runtime's order (longest first), head fastest;
// entry e (8 i32 at 32 (e + 1) bytes) = q position, q batch, q
// length, k position, k batch, k length, m_block, sequence.
// (A plain load per tile: hoisted, it would hold a register through
// the key-block loop; 3-consumer head_dim 64 kernels then spill.)
// Fills t's sequence fields; returns the m_block.
Value AttentionKernelBuilder::tableTile(Value tile, Tile &t) {
  Value hgAt = w.gep(tt, w.ptrT, w.i32T, 2);
  Value hg = w.minui(w.maxui(w.load(w.i32T, hgAt), c1), tileHeads);
  Value e;
  std::tie(t.h, e) = groupedOrder(tile, hg, tileHeads, entryCount);
  t.entry = e;
  auto field = [&](int f) { return tableField(e, f, true); };
  t.qRow = field(0);
  t.qb = field(1);
  t.sq = field(2);
  t.kRow = field(3);
  t.kb = field(4);
  t.sk = field(5);
  Value mb = field(6);
  t.b = field(7);
  t.off = w.subi(t.sk, t.sq);
  t.rowsTotal = packed ? w.muli(t.sq, cG) : t.sq;
  return mb;
}

// In groups of hg (batch, head)s whose K and V fit 32 MB of L2
// (FlashAttention-3's L2 swizzle of its LPT scheduler): group by
// group, and in a group m_block descending, (batch, head) fastest.
// Returns ((batch, head), m_block).
std::pair<Value, Value> AttentionKernelBuilder::heavyFirstOrder(Value tile) {
  // hg = (32 MB / 4D) / Sk: no product that could wrap in i32.
  Value perHead = w.i32((int64_t(32) << 20) / (4 * D));
  Value hg = w.maxsi(w.divui(perHead, w.maxsi(sk, c1)), c1);
  // Query heads sharing a kv head share its K/V.
  if (!packed)
    hg = w.muli(hg, groups);
  hg = w.minui(hg, nbh);
  Value bh, round;
  std::tie(bh, round) = groupedOrder(tile, hg, nbh, nmb);
  Value mb = w.subi(w.subi(nmb, c1), round);
  return {bh, mb};
}

// The tile's rows [m0, m0 + BM) of m_block mb and its key blocks.
void AttentionKernelBuilder::tileKeyRange(Tile &t, Value mb) {
  Value tsk = t.sk, toff = t.off, trows = t.rowsTotal;
  t.kvh = packed ? t.h : w.divui(t.h, groups);
  t.m0 = w.muli(mb, cBM);
  // The key blocks of the query positions [pos0, pos1) of the tile's rows
  // (flashattn.key_blocks, as flashattn-tile's).
  Value rows = w.minsi(cBM, w.subi(trows, t.m0));
  Value rowEnd = w.addi(t.m0, rows);
  t.m1 = packed ? w.ceildivui(rowEnd, cG) : rowEnd;
  Value pos0 = packed ? w.divui(t.m0, cG) : t.m0;
  auto range = KeyBlocksOp::create(
      builder, loc, w.i32T, w.i32T, pos0, t.m1, tsk, toff, partial ? t.split : Value(),
      partial ? nsplit : Value(), KB, causalKind(), k.windowLeft, k.windowRight);
  t.nbLo = range.getBegin();
  t.nblocks = w.maxsi(w.subi(range.getEnd(), t.nbLo), c0);
}

Tile AttentionKernelBuilder::decodeTile(Value tileIn) {
  Tile t;
  // Tile order. Static: m_block fastest, so the CTAs running at once share
  // a head's K/V in L2. Heavy-first (masks whose work grows with m_block):
  // m_block slowest and descending, (batch, head) fastest, so every round
  // of the persistent loop hands out tiles of about the same length,
  // longest first (FlashAttention-3's LPT order). Split-KV: the split is
  // the fastest index.
  Value tile = tileIn, mb, bh;
  if (partial) {
    t.split = w.remui(tile, nsplit);
    tile = w.divui(tile, nsplit);
  }
  if (table) {
    mb = tableTile(tile, t);
  } else if (k.heavyFirst) {
    std::tie(bh, mb) = heavyFirstOrder(tile);
  } else {
    mb = w.remui(tile, nmb);
    bh = w.divui(tile, nmb);
  }
  // t.h: the query head, or with pack_gqa the kv head.
  if (!table) {
    t.h = w.remui(bh, tileHeads);
    t.b = w.divui(bh, tileHeads);
    t.sq = sq;
    t.sk = sk;
    t.off = off;
    t.rowsTotal = rowsTotal;
    t.qRow = t.kRow = c0;
    t.qb = t.kb = t.b;
  }
  tileKeyRange(t, mb);
  return t;
}

//===----------------------------------------------------------------------===//
// Producer: thread 0 issues the TMA loads; the rest of warpgroup 0 leaves
// (with kvRowCopies all 128 threads copy K and V rows).
//===----------------------------------------------------------------------===//

void AttentionKernelBuilder::producer() {
  const bool rowCopies = k.kvRowCopies;
  // TMA: thread 0 issues everything; with the tile table warp 0 runs the
  // loop (it zeroes the V rows past a sequence).
  Value tmaThreads;
  if (!rowCopies)
    tmaThreads = k.tileTable ? w.cmpi(CmpI::ult, tid, c32) : isLeader;
  auto body = [&] {
    tileSlot = at(L.tileSlot());
    if (rowCopies)
      rowCopyProducer();
    else
      tmaProducer();
  };
  if (rowCopies)
    body();
  else
    w.ifThen(tmaThreads, body);
}

// The L2 policies of the TMA loads (Sm90KernelSpec::l2HintQ / l2HintKV):
// a 64-bit policy from createpolicy (PTX ISA, "createpolicy"; MLIR's
// NVVM dialect has no op for it), passed as the loads' l2_cache_hint.
// It is made again at each load (one instruction, marked with side
// effects so that it stays there): kept across the loop, the 64-bit
// value made the 40-register producer spill.
Value AttentionKernelBuilder::policy(L2Hint hint) {
  if (hint == L2Hint::none)
    return Value();
  L2Priority priority =
      hint == L2Hint::evictFirst ? L2Priority::evict_first : L2Priority::evict_last;
  return L2PolicyOp::create(builder, loc, w.i64T,
                            L2PriorityAttr::get(builder.getContext(), priority));
}

// Paged KV: the pages key block `nb` of the tile's sequence reads, and
// the first row it needs in the first of them. The sequence's page list
// starts at index t.kRow of %page_table (the device block_table's row
// b, or the runtime's copy of block_table[b, : ceil(k_len /
// page_size)] in the tile table). With pages of at least block_n keys
// (page_size a multiple of block_n) a block lies in one page; with
// smaller pages (block_n a multiple of page_size) it spans block_n /
// page_size of them, the last clamped to the sequence's last page
// (those keys are masked).
//
// Entry `index` of the tile's page list.
Value AttentionKernelBuilder::pageIndex(const Tile &t, Value index) {
  Value p = w.gep(P["page_table"], w.gptrT, w.i32T, w.addi(t.kRow, index));
  return w.load(w.i32T, p, /*invariant=*/true);
}

// Pages of at least block_n keys: the page of block nb and its first
// row there. (Smaller pages go box by box, one lane each: lanePages.)
Values AttentionKernelBuilder::pagesOf(Value nb, const Tile &t) {
  Value key0 = w.muli(nb, cBN);
  Value cPS = w.i32(PS);
  Value page = pageIndex(t, w.divui(key0, cPS));
  return Values{page, w.remui(key0, cPS)};
}

// Issues the TMA loads of one K (or V) block into `base`.
void AttentionKernelBuilder::loadKV(Value map, Value base, Value bar, Value nb, Value kvh,
                                    const Tile &t, const Values &pages) {
  w.mbarrierExpectTx(bar, w.i32(L.kvBytes));
  if (PS) {
    // A page holding the whole block: one box per 64 columns, block_n
    // rows from the block's first row in the page.
    for (int64_t i = 0; i < boxes; ++i) {
      Value dst = w.addrspacecast(ptrAdd(base, i * BN * 128), w.cptrT);
      Value col = w.i32(64 * i);
      Value hint = kvHint();
      tmaLoad(dst, map, bar, {col, kvh, pages[1], pages[0]}, hint);
    }
    return;
  }
  Value row = plus(t.kRow, w.muli(nb, cBN));
  for (int64_t i = 0; i < boxes; ++i) {
    Value dst = w.addrspacecast(ptrAdd(base, i * BN * 128), w.cptrT);
    Value col = w.i32(64 * i);
    Values coords = {col, kvh};
    Values pb = posBatch(k.varlenK, row, t.kb);
    coords.append(pb.begin(), pb.end());
    Value hint = kvHint();
    tmaLoad(dst, map, bar, coords, hint);
  }
}

// The persistent loop over tiles. The producer picks each tile and
// hands its index to the consumers through shared memory (written
// before the arrive on full_Q, whose release / acquire orders it).
// Static: tile += gridDim. Dynamic (lpt): after the first (blockIdx),
// the next tile comes from the atomic counter, so a CTA that finished
// early takes the next longest tile (FlashAttention-3's scheduler).
// Past the last tile the producer writes the index with no Q load: the
// consumers stop.
// With no more tiles than CTAs every tile is some CTA's first: the
// counter is not touched (the runtime then passes it unzeroed, saving a
// memset on the stream: decode launches).
Value AttentionKernelBuilder::nextTile(Value tile) {
  if (!k.heavyFirst)
    return w.addi(tile, ncta);
  Value more = w.cmpi(CmpI::ugt, ntiles, ncta);
  return w.ifElse1(
      more, w.i32T,
      [&] {
        Value got = LLVM::AtomicRMWOp::create(builder, loc, LLVM::AtomicBinOp::add,
                                              P["tile_counter"], c1,
                                              LLVM::AtomicOrdering::monotonic);
        return w.addi(got, ncta);
      },
      [&] { return ntiles; });
}

// Q's buffer is free again once the consumers released the previous
// tile's Q (and read its index).
void AttentionKernelBuilder::waitQFree(Value tc) {
  Value reuseQ = w.cmpi(CmpI::ugt, tc, c0);
  w.ifThen(reuseQ, [&] {
    Value qPar = w.andi(w.addi(tc, c1), c1);
    waitParity(at(L.emptyQ()), qPar);
  });
}

// Issues the TMA load of tile t's Q.
void AttentionKernelBuilder::loadQ(const Tile &t) {
  Value barQ = at(L.fullQ());
  w.mbarrierExpectTx(barQ, w.i32(L.qBytes));
  for (int64_t i = 0; i < boxes; ++i) {
    Value dst = w.addrspacecast(at(i * BM * 128), w.cptrT);
    // pack_gqa: a 5-D map over q viewed as [B, Sq, Hkv, G, D], box
    // (64, G, 1, BM / G, 1): the box lands as packed rows i G + g.
    Values coords;
    if (packed) {
      Value col = w.i32(64 * i);
      Value pos = plus(t.qRow, w.divui(t.m0, cG));
      coords = {col, c0, t.kvh};
      Values pb = posBatch(k.varlenQ, pos, t.qb);
      coords.append(pb.begin(), pb.end());
    } else {
      Value col = w.i32(64 * i);
      Value pos = plus(t.qRow, t.m0);
      coords = {col, t.h};
      Values pb = posBatch(k.varlenQ, pos, t.qb);
      coords.append(pb.begin(), pb.end());
    }
    Value hint = qHint();
    tmaLoad(dst, P["qmap"], barQ, coords, hint);
  }
}

// The stage slot of the g-th key block a CTA loads, the parity of the
// empty barriers' previous use (g / stages - 1), and whether that use
// exists (the stage was filled before).
std::tuple<Value, Value, Value> AttentionKernelBuilder::stageUse(Value g) {
  Value slot = slotOf(g);
  Value ePar = w.andi(w.addi(w.divui(g, cST), c1), c1);
  Value reuse = w.cmpi(CmpI::uge, g, cST);
  return std::make_tuple(slot, ePar, reuse);
}

//===----------------------------------------------------------------------===//
// Producer, per-row copies.
//===----------------------------------------------------------------------===//

// Per-row copies (paged KV with pages of fewer than 8 keys, where one
// TMA box per page would not land 1024-byte aligned;
// FlashAttention-3's non-TMA paged path): all 128 producer threads
// copy each K / V block with cp.async (16 bytes each, PTX ISA
// 9.7.9.3), into the 128-byte swizzled layout TMA would have made
// (16-byte chunk j of row r at chunk j ^ (r % 8)). Thread 0 still
// picks the tiles and loads Q; it hands each tile's index to the
// other producer threads through the tile slot and a named barrier. A
// block's full barriers count the 128 threads: each waits for its own
// copies (cp.async.wait_group, one block behind, so two blocks'
// copies are in flight), fences them for the async proxy that wgmma
// reads through, and arrives (block g - 1 after K_g is issued).
void AttentionKernelBuilder::rowCopyProducer() {
  prodBar = w.i32(2 * C + 1);
  // Thread t copies chunk column cc = t % (D / 8) of rows t / (D / 8) +
  // i x 128 / (D / 8): 128 is a multiple of D / 8, so cc (its 64-column
  // box and chunk) stays the thread's, and only the row moves.
  const int64_t chunksPerRow = D / 8;
  rowStep = 128 / chunksPerRow;
  Value cCh = w.i32(chunksPerRow);
  copyCol = w.remui(tid, cCh);
  copyRow0 = w.divui(tid, cCh);
  ccBox = w.divui(copyCol, c8);
  ccChunk = w.remui(copyCol, c8);
  // Rows per thread, BN / rowStep = BN x D / 1024, from k's head_dim
  // parameter (= D) so that LLVM keeps a loop instead of unrolling 16
  // copies whose address registers the 40-register producer cannot
  // hold.
  Value dParam = w.trunci(P["kd3"], w.i32T);
  perThread = w.divui(w.muli(dParam, w.i32(BN)), w.i32(1024));
  w.whileLoop(
      {cta, c0, c0}, {w.i32T, w.i32T, w.i32T},
      [&](ValueRange a) { return rowCopyPublish(a); },
      [&](ValueRange a) { return rowCopyTile(a); });
}

// The rows of block nb of `pool` (k or v) into the slot at `base`,
// one commit group.
void AttentionKernelBuilder::copyRows(Value pool, Value base, Value nb, const Tile &t) {
  Value key0 = w.muli(nb, cBN);
  Value last = lastPage(t);
  auto e64 = [&](Value v) { return w.extui(v, w.i64T); };
  // Element offset of (kv head, chunk column) within a pool row.
  Value chunkOff = w.muli(e64(copyCol), w.i64(8));
  Value colOff = w.addi(w.muli(e64(t.kvh), w.i64(D)), chunkOff);
  Value rowElems = w.muli(e64(hkv), w.i64(D));
  Value dstBox = w.muli(ccBox, w.i32(BN * 128));
  w.forLoop(c0, perThread, c1, [&](Value ci) {
    copyRow(pool, base, t, ci, key0, last, colOff, rowElems, dstBox);
  });
  NVVM::CpAsyncCommitGroupOp::create(builder, loc);
}

// This thread's 16 bytes of row copyRow0 + ci x rowStep of the block.
void AttentionKernelBuilder::copyRow(Value pool, Value base, const Tile &t, Value ci,
                                     Value key0, Value last, Value colOff, Value rowElems,
                                     Value dstBox) {
  auto e64 = [&](Value v) { return w.extui(v, w.i64T); };
  Value r = w.addi(copyRow0, w.muli(ci, w.i32(rowStep)));
  Value key = w.addi(key0, r);
  Value pidx = w.minui(w.divui(key, w.i32(PS)), last);
  Value page = pageIndex(t, pidx);
  // A page index outside the pool (a device block_table is not
  // checked on the host) reads page 0 with source size 0: zeros,
  // never memory outside k or v. (TMA boxes outside the pool are
  // zero-filled.)
  Value pool0 = w.trunci(P["kd0"], w.i32T);
  Value inPool = w.cmpi(CmpI::ult, page, pool0);
  page = w.select(inPool, page, c0);
  Value grow = e64(page);
  if (PS > 1) {
    Value inPage = e64(w.remui(key, w.i32(PS)));
    grow = w.addi(w.muli(grow, w.i64(PS)), inPage);
  }
  Value elem = w.addi(w.muli(grow, rowElems), colOff);
  Value sw = w.xori(ccChunk, w.andi(r, w.i32(7)));
  Value chunkAt = w.muli(sw, c16);
  Value offset = w.addi(w.addi(dstBox, w.muli(r, c128)), chunkAt);
  Value src = w.gep(pool, w.gptrT, w.i16T, elem);
  Value dst = w.gep(base, w.sptrT, w.i8T, offset);
  // Keys past the sequence: source size 0, so the 16 bytes are
  // zeros (PTX ISA 9.7.9.3, cp.async src-size): their P is 0, and 0
  // x NaN of whatever follows the sequence would be NaN.
  Value real = w.andi(w.cmpi(CmpI::slt, key, t.sk), inPool);
  Value bytes = w.select(real, c16, c0);
  NVVM::CpAsyncOp::create(builder, loc, dst, src, 16, NVVM::LoadCacheModifierKind::CG, bytes);
}

// Block g's copies have landed (for this thread, all but the
// `pending` most recent groups): fence, arrive.
void AttentionKernelBuilder::finishCopies(Value g, int pending) {
  NVVM::CpAsyncWaitGroupOp::create(builder, loc, pending);
  w.fenceProxyAsyncShared();
  Value s = slotOf(g);
  w.mbarrierArrive(barAt(L.fullK(), s));
  w.mbarrierArrive(barAt(L.fullV(), s));
}

// The row-copy loop's condition: (tile, block counter, tile counter).
std::pair<Value, Values> AttentionKernelBuilder::rowCopyPublish(ValueRange a) {
  Value ptile = a[0], pg = a[1], ptc = a[2];
  // Thread 0: publish the tile, load its Q (past the last tile:
  // an arrival with no bytes, the consumers stop). The first
  // barrier keeps it from overwriting the slot before every
  // producer thread read the previous tile (a tile with no key
  // blocks frees Q at once).
  w.barrier(prodBar, c128);
  w.ifThen(isLeader, [&] {
    waitQFree(ptc);
    w.store(ptile, tileSlot);
    Value more = w.cmpi(CmpI::ult, ptile, ntiles);
    w.ifThenElse(
        more, [&] { loadQ(decodeTile(ptile)); }, [&] { w.mbarrierArrive(at(L.fullQ())); });
  });
  w.barrier(prodBar, c128);
  Value cur = w.load(w.i32T, tileSlot);
  return {w.cmpi(CmpI::ult, cur, ntiles), Values{cur, pg, ptc}};
}

// One tile of the row-copy loop: every key block's K and V rows.
Values AttentionKernelBuilder::rowCopyTile(ValueRange a) {
  Value pwt = a[0], pwg = a[1], pwtc = a[2];
  Tile t = decodeTile(pwt);
  Values pn = w.forLoop(c0, t.nblocks, c1, {pwg}, [&](Value pi, ValueRange it) {
    return rowCopyBlock(t, pi, it[0]);
  });
  Value any = w.cmpi(CmpI::sgt, t.nblocks, c0);
  w.ifThen(any, [&] { finishCopies(w.subi(pn[0], c1), 0); });
  // Thread 0 takes the next tile (the others read it from the
  // slot).
  Value next = w.ifElse1(
      isLeader, w.i32T, [&] { return nextTile(pwt); }, [&] { return pwt; });
  return Values{next, pn[0], w.addi(pwtc, c1)};
}

// Key block pi of tile t, the CTA's block pgg.
Values AttentionKernelBuilder::rowCopyBlock(const Tile &t, Value pi, Value pgg) {
  auto [slot, ePar, reuse] = stageUse(pgg);
  Value kb = w.addi(t.nbLo, pi);
  w.ifThen(reuse, [&] { waitParity(barAt(L.emptyK(), slot), ePar); });
  copyRows(P["k"], slotBase(L.kOff, slot), kb, t);
  // The previous block of this tile (all groups but K_g's)
  // before the wait for V_g's stage: the consumers release
  // V_{g-2} only after P_{g-2} V_{g-2}, which they issue with
  // S_{g-1} (it needs K_{g-1}).
  Value behind = w.cmpi(CmpI::ugt, pi, c0);
  w.ifThen(behind, [&] { finishCopies(w.subi(pgg, c1), 1); });
  w.ifThen(reuse, [&] { waitParity(barAt(L.emptyV(), slot), ePar); });
  copyRows(P["v"], slotBase(L.vOff, slot), kb, t);
  return Values{w.addi(pgg, c1)};
}

//===----------------------------------------------------------------------===//
// Producer, TMA.
//===----------------------------------------------------------------------===//

// Table mode: warp 0 runs the loop (lane 0 issues every TMA); for a
// V block that reaches past the sequence it lands on aux_V, the warp
// zeroes the V rows past the sequence (they hold whatever follows
// it: a stale cache, the next sequence, NaN; their P is 0 but 0 x NaN
// is NaN), fences them for the async proxy, and lane 0 completes
// full_V by hand.
void AttentionKernelBuilder::tmaProducer() {
  zeroTail = table;
  lane0 = isLeader;
  // Pages smaller than a key block: lane l of the warp issues boxes l,
  // l + 32, ..., each lane loading only its own page index, after lane
  // 0 set the barrier's byte count. One head a box (page panels,
  // sm90PagePanels): box j is page j whole (4 KB with pages of 16 at
  // head_dim 128), at j x page_size x head_dim x 2 bytes. HP heads a
  // box: block_n / page_size x head_dim / 64 boxes (box j: page j /
  // (head_dim / 64), 64 columns j % (head_dim / 64), landing as the
  // dense layout's rows).
  laneBoxes = PS && PS < BN; // paged KV always has the table
  perPage = panels ? 1 : boxes;
  nBoxes = laneBoxes ? (KB / PS) * perPage : 0;
  boxRounds = (nBoxes + 31) / 32;
  prodLane = zeroTail ? w.remui(tid, c32) : Value();
  Values init = {cta, c0, c0};
  if (zeroTail)
    init.push_back(c0);
  Values pt = w.whileLoop(
      init, TypeRange(ValueRange(init)),
      [&](ValueRange a) -> std::pair<Value, Values> {
        return {w.cmpi(CmpI::ult, a[0], ntiles), Values(a)};
      },
      [&](ValueRange a) { return tmaProducerTile(a); });
  // No more tiles: tell the consumers (an arrival with no bytes).
  ifLane0([&] {
    waitQFree(pt[2]);
    w.store(pt[0], tileSlot);
    w.mbarrierArrive(at(L.fullQ()));
  });
}

void AttentionKernelBuilder::ifLane0(llvm::function_ref<void()> body) {
  if (zeroTail)
    w.ifThen(lane0, body);
  else
    body();
}

// The next tile: with the counter only lane 0 takes it, then
// broadcasts.
Value AttentionKernelBuilder::nextTileAll(Value tile) {
  if (!zeroTail || !k.heavyFirst)
    return nextTile(tile);
  Value got = w.ifElse1(
      lane0, w.i32T, [&] { return nextTile(tile); }, [&] { return tile; });
  return warpUniform(got);
}

// Per round: the box index of this lane and its page (clamped to the
// sequence's last page, so that idle lanes load a valid entry too).
BoxPages AttentionKernelBuilder::lanePages(Value nb, const Tile &t) {
  BoxPages v;
  Value last = lastPage(t);
  Value first = w.muli(nb, w.i32(KB / PS));
  for (int64_t r = 0; r < boxRounds; ++r) {
    Value j = r ? w.addi(prodLane, w.i32(32 * r)) : prodLane;
    Value pj = w.divui(j, w.i32(perPage));
    Value page = pageIndex(t, w.minui(plus(first, pj), last));
    v.push_back({j, page});
  }
  return v;
}

// Lane 0 sets the byte count (its arrival), the warp syncs, each lane
// issues its boxes.
void AttentionKernelBuilder::loadKVLanes(Value map, Value base, Value bar, Value kvh,
                                         const BoxPages &pages) {
  ifLane0([&] { w.mbarrierExpectTx(bar, w.i32(L.kvBytes)); });
  NVVM::SyncWarpOp::create(builder, loc, full);
  for (const auto &jp : pages) {
    Value inRange = w.cmpi(CmpI::ult, jp.first, w.i32(nBoxes));
    w.ifThen(inRange, [&] { loadLaneBox(map, base, bar, kvh, jp.first, jp.second); });
  }
}

// Box j (in page `page`) of a block into `base`.
void AttentionKernelBuilder::loadLaneBox(Value map, Value base, Value bar, Value kvh, Value j,
                                         Value page) {
  if (panels) {
    // Coordinates {0, 0, panel of the kv head, 0, page} of the
    // view.
    Value offset = w.muli(j, w.i32(PS * boxes * 128));
    Value atBox = w.gep(base, w.sptrT, w.i8T, offset);
    Value dst = w.addrspacecast(atBox, w.cptrT);
    Value panel = w.muli(kvh, w.i32(boxes));
    Value hint = kvHint();
    tmaLoad(dst, map, bar, {c0, c0, panel, c0, page}, hint);
    return;
  }
  Value pj = w.divui(j, w.i32(boxes));
  Value col = w.remui(j, w.i32(boxes));
  Value pageOff = w.muli(pj, w.i32(PS * HP * 128));
  Value offset = w.addi(w.muli(col, w.i32(BN * 128)), pageOff);
  Value dst = w.addrspacecast(w.gep(base, w.sptrT, w.i8T, offset), w.cptrT);
  Value hint = kvHint();
  Value col64 = w.muli(col, w.i32(64));
  tmaLoad(dst, map, bar, {col64, kvh, c0, page}, hint);
}

// One tile of the TMA loop: (tile, block counter, tile counter[, aux_V
// parity]).
Values AttentionKernelBuilder::tmaProducerTile(ValueRange a) {
  Value pwt = a[0], pwg = a[1], pwtc = a[2];
  Value pwap = zeroTail ? a[3] : Value();
  Tile t = decodeTile(pwt);
  // Only lane 0 waits for the stages it refills (the other lanes
  // never wait on a phase they could fall behind; they meet lane 0
  // at the warp syncs of a zeroing and at the tile broadcast).
  ifLane0([&] { waitQFree(pwtc); });
  ifLane0([&] {
    w.store(pwt, tileSlot);
    loadQ(t);
  });
  // K and V of every key block; a stage is refilled once the
  // consumers released it (empty barrier of its previous use,
  // parity g / stages - 1).
  Values loopInit = {pwg};
  if (zeroTail)
    loopInit.push_back(pwap);
  Values pn = w.forLoop(c0, t.nblocks, c1, loopInit, [&](Value pi, ValueRange it) {
    return tmaProducerBlock(t, pi, it);
  });
  Value tc = w.addi(pwtc, c1);
  Values next = {nextTileAll(pwt), pn[0], tc};
  if (zeroTail)
    next.push_back(pn[1]);
  return next;
}

// K into the stage (lane 0 waits until it is free), then lane
// 0 waits until V's is.
void AttentionKernelBuilder::waitEmpty(const KVBlock &blk, int64_t bar) {
  w.ifThen(blk.reuse, [&] { waitParity(barAt(bar, blk.slot), blk.ePar); });
}

// V into `base`, completing `bar`.
void AttentionKernelBuilder::loadV(const Tile &t, const KVBlock &blk, Value base, Value bar) {
  if (laneBoxes)
    loadKVLanes(P["vmap"], base, bar, blk.kvHead0, blk.boxPages);
  else
    ifLane0([&] { loadKV(P["vmap"], base, bar, blk.kb, t.kvh, t, blk.pages); });
}

// Key block pi of tile t: (block counter[, aux_V parity]) in `it`.
Values AttentionKernelBuilder::tmaProducerBlock(const Tile &t, Value pi, ValueRange it) {
  Value pgg = it[0];
  Value pag = zeroTail ? it[1] : Value();
  KVBlock blk;
  std::tie(blk.slot, blk.ePar, blk.reuse) = stageUse(pgg);
  blk.kb = w.addi(t.nbLo, pi);
  // Paged: the block's page indices are loaded before the wait
  // for its stage, so their latency hides under it.
  // The first kv head of the boxes (a box holds HP heads).
  blk.kvHead0 = HP > 1 ? w.muli(t.kvh, w.i32(HP)) : t.kvh;
  if (laneBoxes)
    blk.boxPages = lanePages(blk.kb, t);
  else if (PS)
    blk.pages = pagesOf(blk.kb, t);
  if (laneBoxes) {
    ifLane0([&] { waitEmpty(blk, L.emptyK()); });
    Value bar = barAt(L.fullK(), blk.slot);
    loadKVLanes(P["kmap"], slotBase(L.kOff, blk.slot), bar, blk.kvHead0, blk.boxPages);
    ifLane0([&] { waitEmpty(blk, L.emptyV()); });
  } else {
    ifLane0([&] {
      waitEmpty(blk, L.emptyK());
      Value bar = barAt(L.fullK(), blk.slot);
      loadKV(P["kmap"], slotBase(L.kOff, blk.slot), bar, blk.kb, t.kvh, t, blk.pages);
      waitEmpty(blk, L.emptyV());
    });
  }
  if (!zeroTail) {
    Value bar = barAt(L.fullV(), blk.slot);
    loadKV(P["vmap"], slotBase(L.vOff, blk.slot), bar, blk.kb, t.kvh, t, blk.pages);
    return Values{w.addi(pgg, c1)};
  }
  // Rows [max(zeroFrom, 0), BN) of this block lie past the
  // sequence.
  Value zeroFrom = w.subi(t.sk, w.muli(blk.kb, cBN));
  Value need = w.cmpi(CmpI::slt, zeroFrom, cBN);
  // As shared-memory rows (keys x HP: a key's HP rows are
  // adjacent).
  if (HP > 1)
    zeroFrom = w.muli(zeroFrom, w.i32(HP));
  Value vBase = slotBase(L.vOff, blk.slot);
  Value pagNext = w.ifElse1(
      need, w.i32T, [&] { return zeroVTail(t, blk, vBase, zeroFrom, pag); },
      [&] {
        loadV(t, blk, vBase, barAt(L.fullV(), blk.slot));
        return pag;
      });
  return Values{w.addi(pgg, c1), pagNext};
}

// V lands on aux_V; the warp zeroes its rows from zeroFrom on, fences
// them, and lane 0 completes full_V. Returns aux_V's next parity.
Value AttentionKernelBuilder::zeroVTail(const Tile &t, const KVBlock &blk, Value vBase,
                                        Value zeroFrom, Value pag) {
  loadV(t, blk, vBase, at(L.auxV()));
  waitParity(at(L.auxV()), pag);
  Value zeros = w.zero(vecOf(4, w.i32T));
  if (panels)
    zeroPanelRows(vBase, zeroFrom, zeros);
  else
    zeroBoxRows(vBase, zeroFrom, zeros);
  w.fenceProxyAsyncShared();
  NVVM::SyncWarpOp::create(builder, loc, full);
  ifLane0([&] { w.mbarrierArrive(barAt(L.fullV(), blk.slot)); });
  return w.xori(pag, c1);
}

// Panel layout: row r of panel h at (r / 8) G + h 1
// KB + (r % 8) 128 (G = boxes KB): from the 8-row
// group of the first row past the sequence, each 16
// bytes whose row lies past it.
void AttentionKernelBuilder::zeroPanelRows(Value vBase, Value zeroFrom, Value zeros) {
  const int64_t GB = boxes * 1024;
  Value z = w.maxsi(zeroFrom, c0);
  Value group0 = w.divui(z, c8);
  Value groupOff = w.muli(group0, w.i32(GB));
  Value laneOff = w.muli(prodLane, c16);
  Value from = w.addi(groupOff, laneOff);
  Value end = w.i32(BN / 8 * GB), step = w.i32(512);
  w.forLoop(from, end, step, [&](Value pzp) {
    Value group = w.divui(pzp, w.i32(GB));
    Value groupRow = w.muli(group, c8);
    Value inPanel = w.remui(pzp, w.i32(1024));
    Value rowInGroup = w.divui(inPanel, c128);
    Value row = w.addi(groupRow, rowInGroup);
    w.ifThen(w.cmpi(CmpI::sge, row, z), [&] {
      Value ptr = w.gep(vBase, w.sptrT, w.i8T, pzp);
      w.store(zeros, ptr, 16);
    });
  });
}

// Whole 128-byte rows of each 64-column box:
// contiguous bytes [r0 x 128, BN x 128); lane l zeroes
// 16 bytes every 512.
void AttentionKernelBuilder::zeroBoxRows(Value vBase, Value zeroFrom, Value zeros) {
  Value laneOff = w.muli(prodLane, c16);
  Value startOff = w.addi(w.muli(w.maxsi(zeroFrom, c0), c128), laneOff);
  for (int64_t bx = 0; bx < boxes; ++bx) {
    Value end = w.i32(BN * 128), step = w.i32(512);
    w.forLoop(startOff, end, step, [&](Value iv) {
      Value ptr = w.gep(ptrAdd(vBase, bx * BN * 128), w.sptrT, w.i8T, iv);
      w.store(zeros, ptr, 16);
    });
  }
}

//===----------------------------------------------------------------------===//
// Consumers: warpgroup 1 + c owns rows [64 c, 64 c + 64) of each tile.
//===----------------------------------------------------------------------===//

void AttentionKernelBuilder::consumers() {
  consumerSetup();
  fragmentLayout();
  // Q's base descriptor, re-read at each use through an opaque move: LLVM
  // would otherwise hoist all D / 16 loop-invariant Q descriptors out of
  // the key-block loop and keep them live (spills at head_dim 256).
  qDesc0 = desc(qBase, 16, 1024);
  // Each tile starts with full_Q: Q has landed and the tile index is
  // written; an index past the last tile ends the loop.
  w.whileLoop(
      {c0, c0}, {w.i32T, w.i32T, w.i32T},
      [&](ValueRange a) -> std::pair<Value, Values> {
        Value cwg = a[0], cwtc = a[1];
        Value parity = w.andi(cwtc, c1);
        waitParity(at(L.fullQ()), parity);
        Value ctileV = warpUniform(w.load(w.i32T, at(L.tileSlot())));
        return {w.cmpi(CmpI::ult, ctileV, ntiles), Values{ctileV, cwg, cwtc}};
      },
      [&](ValueRange a) -> Values { return consumerTile(a[0], a[1], a[2]); });
  if (k.tmaStore) {
    // Shared memory must outlive the last TMA store's reads.
    Value elect = w.cmpi(CmpI::eq, t128, c0);
    w.ifThen(elect, [&] { NVVM::CpAsyncBulkWaitGroupOp::create(builder, loc, 0, UnitAttr()); });
  }
}

void AttentionKernelBuilder::consumerSetup() {
  ctid = w.subi(tid, c128);
  // Values every thread of a warp holds alike, made visibly so for ptxas
  // by warpUniform (CUTLASS's canonical_warp_group_idx): what is
  // computed from them (the wgmma descriptors, the stage slots) can then
  // live in uniform registers. From tid or from shared memory, ptxas
  // computes them per thread and moves each descriptor with R2UR.
  cw = warpUniform(w.divui(ctid, c128));
  // Warp-scheduler barrier (FlashAttention-3's ping-pong, section 3.1):
  // consumer c issues its GEMMs only after consumer c - 1 issued theirs
  // (named barrier 1 + c: its 128 threads sync, the previous consumer's
  // 128 arrive), so one consumer's softmax runs under the other's GEMMs.
  // The turn spans the kernel: the last consumer opens the first turn.
  // The barrier ids are constants in per-consumer branches: an id in a
  // register makes ptxas reserve all 16 barriers and keeps it live.
  turnThreads = k.schedulerBarrier ? w.i32(256) : Value();
  if (k.schedulerBarrier) {
    Value last = w.cmpi(CmpI::eq, cw, w.i32(C - 1));
    w.ifThen(last, [&] { barrierArrive(1); });
  }
}

void AttentionKernelBuilder::fragmentLayout() {
  t128 = w.remui(ctid, c128);
  warp = w.divui(t128, c32);
  lane = w.remui(t128, c32);
  lq = w.divui(lane, c4);
  lr = w.remui(lane, c4);
  // Row of fragment registers with (r/2)%2 == 0: 64 c + 16 w + l/4; the
  // other +8. Column: 2 (l%4) + 8 (r/4) + r%2.
  Value warpRows = w.muli(warp, c16);
  row0 = w.addi(w.addi(w.muli(cw, w.i32(64)), warpRows), lq);
  row1 = w.addi(row0, c8);
  col0 = w.muli(lr, c2);
  // This consumer's 64 rows of Q (every 64-column box holds BM rows).
  qBase = w.gep(smem, w.sptrT, w.i8T, w.muli(cw, w.i32(64 * 128)));
  scaleC = w.f32(scaleLog2);
  // The row max on raw scores (FlashAttention-2's trick, rawMax): with a
  // positive scale and nothing between the GEMM and the softmax, exp2(s c
  // - m c) is one fma per score instead of a multiply and a subtraction.
  negScaleC = w.f32(-scaleLog2);
  // With softcap: t = tanh(raw * scale / cap), score2 = cap * log2(e) * t.
  capScale = k.softcap > 0 ? w.f32(k.scale / k.softcap) : Value();
  capLog2 = k.softcap > 0 ? w.f32(k.softcap * 1.4426950408889634) : Value();
  oZero = w.undef(oT);
  for (int r = 0; r < nO; ++r)
    oZero = w.insertvalue(zeroF, oZero, r);
}

void AttentionKernelBuilder::perConsumerFrom(llvm::function_ref<void(int64_t)> body,
                                             int64_t c) {
  if (c + 1 >= C) {
    body(c);
    return;
  }
  Value is = w.cmpi(CmpI::eq, cw, w.i32(c));
  w.ifThenElse(
      is, [&] { body(c); }, [&] { perConsumerFrom(body, c + 1); });
}

void AttentionKernelBuilder::awaitTurn() {
  if (k.schedulerBarrier)
    perConsumer([&](int64_t c) { barrierSync(1 + c); });
}

void AttentionKernelBuilder::passTurn() {
  if (k.schedulerBarrier)
    perConsumer([&](int64_t c) { barrierArrive(1 + (c + 1) % C); });
}

// A wgmma shared-memory descriptor (PTX ISA 9.7.15.5.1): start address,
// leading and stride byte offsets (>> 4), 128-byte swizzle (bit 62).
// Kept as its low 32 bits (start address and leading offset; the high
// half is a constant of the layout): moving along a tile adds to the
// start address only (the sum stays below 2^14: 256 KB of shared
// window), so in 32-bit adds, and the 64-bit value is put together at
// the wgmma.
Desc AttentionKernelBuilder::desc(Value ptr, int64_t lbo, int64_t sbo) {
  Value addr = w.ptrtoint(ptr, w.i32T);
  Value start = w.andi(addr, w.i32(0x3FFFF));
  start = w.shrui(start, c4);
  return Desc{w.ori(start, w.i32((lbo >> 4) << 16)), ((sbo >> 4) | (int64_t(1) << 30))};
}

// The descriptor of `base` + `bytes`, as the i64 the wgmma takes.
Value AttentionKernelBuilder::descAt(const Desc &d, int64_t bytes) {
  Value lo = bytes ? w.addi(d.lo, w.i32(bytes >> 4)) : d.lo;
  Value wide = w.extui(lo, w.i64T);
  Value hi = w.i64(d.hi << 32);
  return w.ori(wide, hi);
}

// Q's descriptor through an opaque `mov.b32` (PTX ISA, data movement
// instructions, "mov"; side effects so that LLVM cannot hoist or merge it:
// MLIR has no optimization barrier that survives to PTX).
Desc AttentionKernelBuilder::qDesc() {
  return Desc{OpaqueOp::create(builder, loc, w.i32T, qDesc0.lo), qDesc0.hi};
}

// Issues S = Q K^T (no commit).
Value AttentionKernelBuilder::issueQK(Value kBase) {
  Value s = w.undef(sT);
  // Panel layout (paged, see the producer): 8-row atoms of a panel
  // every boxes KB, panels 1 KB apart.
  Desc qd = qDesc(), kd = desc(kBase, 16, panels ? boxes * 1024 : 1024);
  for (int64_t kk = 0; kk < D / 16; ++kk) {
    int64_t box = kk / 4, inBox = (kk % 4) * 32;
    Value dA = descAt(qd, box * BM * 128 + inBox);
    Value dB = descAt(kd, box * (panels ? 1024 : BN * 128) + inBox);
    s = wgmmaSS(w, sT, s, dA, dB, BN, k.f16, kk == 0);
  }
  return s;
}

// Issues O += P V with P in registers (no commit): one flashattn.wgmma_rs
// per k16 slice of the key block (convert-flashattn-sm90-to-nvvm makes
// the inline PTX MLIR lacks).
Value AttentionKernelBuilder::issuePV(Value oacc, const Values &pk, Value vBase) {
  // V is MN-major (transpose-B): LBO = the distance between the two
  // 64-column boxes, each k16 step 16 rows x 128 B further.
  // Panel layout: panels 1 KB apart, 8-row groups every boxes KB.
  Desc vd = panels ? desc(vBase, 1024, boxes * 1024) : desc(vBase, BN * 128, 1024);
  for (int64_t kk = 0; kk < BN / 16; ++kk) {
    Value dV = descAt(vd, kk * (panels ? 2 * boxes * 1024 : 2048));
    Values a(pk.begin() + kk * 4, pk.begin() + kk * 4 + 4);
    Type element = k.f16 ? w.b.getF16Type() : w.b.getBF16Type();
    oacc = WgmmaRsOp::create(builder, loc, oT, oacc, a, dV, D, element);
  }
  return oacc;
}

// Score r of the thread's fragment of S, scaled to the log2 domain (or
// raw with rawMax), through softcap and the score region, masked.
Value AttentionKernelBuilder::score(Value s, int r, Value n0, const Rows &rw, bool masked) {
  Value x = w.extractvalue(s, r);
  int colConst = 8 * (r / 4) + (r % 2);
  bool rowB = (r / 2) % 2;
  Value j, ok;
  if ((masked || k.scoreRegion) && HP == 1) {
    j = w.addi(w.addi(n0, col0), w.i32(colConst));
  } else if (masked || k.scoreRegion) {
    // Column n holds key n / HP of the block; HP divides 8, so column
    // 2 (lane % 4) + r % 2 + 8 (r / 4) holds key (2 (lane % 4) + r %
    // 2) / HP + 8 (r / 4) / HP.
    Value inGroup = w.addi(col0, w.i32(colConst % 8));
    Value keyInGroup = w.divui(inGroup, w.i32(HP));
    j = w.addi(w.addi(n0, keyInGroup), w.i32(colConst / 8 * 8 / HP));
  }
  if (masked) {
    ok = w.cmpi(CmpI::slt, j, rowB ? rw.limB : rw.limA);
    if (HP > 1)
      ok = w.andi(ok, rw.headOk[rowB][r % 2]);
    if (k.windowLeft >= 0)
      ok = w.andi(ok, w.cmpi(CmpI::sge, j, rowB ? rw.loB : rw.loA));
  }
  Values regionArgs;
  if (k.scoreRegion || k.maskRegion)
    regionArgs = {rw.bIdx, rw.hIdx[rowB], rw.iIdx[rowB], w.indexCast(j)};
  if (k.maskRegion) {
    // The mask region, inlined by the conversion in place of this
    // call.
    Value keep = func::CallOp::create(builder, loc, k.name + "_mask", TypeRange{w.i1T},
                                      regionArgs)
                     .getResult(0);
    ok = w.andi(ok, keep);
  }
  if (k.softcap > 0) {
    // softcap * tanh(s / softcap), then * log2(e): tanh.approx.f32 (PTX
    // ISA 9.7.4.9), which NVPTX selects for an llvm.tanh with afn (what
    // LLVM upgrades llvm.nvvm.tanh.approx.f32 to).
    x = w.mulf(x, capScale);
    x = softcapTanh(w, x);
    Value factor = k.scoreRegion ? w.f32(k.softcap) : capLog2;
    x = w.mulf(x, factor);
  } else if (!rawMax) {
    Value factor = k.scoreRegion ? w.f32(k.scale) : scaleC;
    x = w.mulf(x, factor);
  }
  if (k.scoreRegion) {
    // The score region sees the natural-domain score (after softcap);
    // log2(e) comes after it.
    Values args = {x};
    args.append(regionArgs.begin(), regionArgs.end());
    x = func::CallOp::create(builder, loc, k.name + "_score", TypeRange{w.f32T}, args)
            .getResult(0);
    x = w.mulf(x, w.f32(1.4426950408889634));
  }
  if (masked)
    x = w.select(ok, x, negInf);
  return x;
}

Softmax AttentionKernelBuilder::softmaxBody(Value s, Value n0, const Rows &rw, Value mOldA,
                                            Value mOldB, Value lOldA, Value lOldB,
                                            bool masked) {
  Softmax sm;
  Values sv(nS);
  Values rowVals[2];
  for (int r = 0; r < nS; ++r) {
    Value x = score(s, r, n0, rw, masked);
    sv[r] = x;
    rowVals[(r / 2) % 2].push_back(x);
  }
  Value mxA = chainReduce(w, rowVals[0], k.reduceChains, true);
  Value mxB = chainReduce(w, rowVals[1], k.reduceChains, true);
  // Conditional rescaling (FlashAttention-4; with k.conditionalRescale,
  // else the max always moves): the running max moves only when the
  // block's max exceeds it by more than 8 in exp2 units, so P <= 2^8
  // (exact enough in bf16/f16, no overflow in the f32 sums) and most
  // blocks leave alpha = 1 and O untouched. The first block always
  // moves it (from -inf); a row still all -inf compares NaN: stays.
  Value candA = w.maxnumf(mOldA, quadReduce(mxA, maxF));
  Value candB = w.maxnumf(mOldB, quadReduce(mxB, maxF));
  Value updA = w.boolean(true), updB = updA;
  if (k.conditionalRescale) {
    Value unit = rawMax ? scaleC : w.f32(1.0), eight = w.f32(8.0);
    auto moves = [&](Value cand, Value old) {
      Value grow = w.mulf(w.subf(cand, old), unit);
      return w.cmpf(CmpF::OGT, grow, eight);
    };
    updA = moves(candA, mOldA);
    updB = moves(candB, mOldB);
  }
  sm.mA = w.select(updA, candA, mOldA);
  sm.mB = w.select(updB, candB, mOldB);
  // m_new' = 0 where m_new = -inf: no NaN on rows masked so far.
  auto guard = [&](Value m) {
    Value e = w.cmpf(CmpF::OEQ, m, negInf);
    return w.select(e, zeroF, m);
  };
  Value useA = guard(sm.mA), useB = guard(sm.mB);
  auto ex2 = [&](Value x) { return w.intrinsic("llvm.nvvm.ex2.approx.ftz.f", x); };
  // x - m in the log2 domain; with rawMax, x and m are raw scores and
  // (x - m) * scale log2(e) is one fma per score: x * c + (-m c).
  Value negA, negB;
  if (rawMax) {
    negA = w.mulf(useA, negScaleC);
    negB = w.mulf(useB, negScaleC);
  }
  auto shifted = [&](Value x, bool rowB) {
    if (!rawMax)
      return w.subf(x, rowB ? useB : useA);
    return w.fma(x, scaleC, rowB ? negB : negA);
  };
  Value one = w.f32(1.0);
  Value aA = ex2(shifted(mOldA, false));
  sm.alphaA = w.select(updA, aA, one);
  Value aB = ex2(shifted(mOldB, true));
  sm.alphaB = w.select(updB, aB, one);
  Values p(nS), rowP[2];
  for (int r = 0; r < nS; ++r) {
    bool rowB = (r / 2) % 2;
    p[r] = ex2(shifted(sv[r], rowB));
    rowP[rowB].push_back(p[r]);
  }
  Value sumA = chainReduce(w, rowP[0], k.reduceChains, false);
  Value sumB = chainReduce(w, rowP[1], k.reduceChains, false);
  sm.lA = w.addf(w.mulf(lOldA, sm.alphaA), sumA);
  sm.lB = w.addf(w.mulf(lOldB, sm.alphaB), sumB);
  packP(p, sm);
  return sm;
}

// P packed in pairs into the A registers of the P V wgmma.
void AttentionKernelBuilder::packP(const Values &p, Softmax &sm) {
  for (int r = 0; r < nS; r += 2) {
    Value vec = w.undef(vecOf(2, w.f32T));
    vec = w.insertelement(p[r], vec, c0);
    vec = w.insertelement(p[r + 1], vec, c1);
    Value h2 = w.truncf(vec, vecOf(2, etT));
    sm.pk.push_back(w.bitcast(h2, w.i32T));
  }
}

// The softmax of one block, with the mask only where the block crosses
// a boundary of this warpgroup's 64 rows (FlashAttention-3 masks only
// those blocks): a key block [n0, n0 + BN) is inside every row's [lo,
// lim) when n0 + BN <= lim(first row) and n0 >= lo(last row), both
// monotone in the row. The branch is uniform across the warpgroup (its
// shuffles stay converged). With a score or mask region every block
// takes the masked path (a mask region must see every score; two copies
// of an inlined score region cost registers: spills at head_dim 128).
Softmax AttentionKernelBuilder::softmax(Value s, Value n0, const Rows &rw, Value mOldA,
                                        Value mOldB, Value lOldA, Value lOldB) {
  if (k.maskRegion || k.scoreRegion || HP > 1)
    return softmaxBody(s, n0, rw, mOldA, mOldB, lOldA, lOldB, true);
  Value need = w.cmpi(CmpI::sgt, w.addi(n0, cBN), rw.limFirst);
  if (k.windowLeft >= 0)
    need = w.ori(need, w.cmpi(CmpI::slt, n0, rw.loLast));
  SmallVector<Type> types(6, w.f32T);
  types.append(nP, w.i32T);
  auto branch = [&](bool masked) {
    Softmax b = softmaxBody(s, n0, rw, mOldA, mOldB, lOldA, lOldB, masked);
    Values v = {b.mA, b.mB, b.lA, b.lB, b.alphaA, b.alphaB};
    v.append(b.pk.begin(), b.pk.end());
    return v;
  };
  Values res = w.ifElse(
      need, types, [&] { return branch(true); }, [&] { return branch(false); });
  Softmax sm;
  sm.mA = res[0];
  sm.mB = res[1];
  sm.lA = res[2];
  sm.lB = res[3];
  sm.alphaA = res[4];
  sm.alphaB = res[5];
  for (int i = 0; i < nP; ++i)
    sm.pk.push_back(res[6 + i]);
  return sm;
}

Value AttentionKernelBuilder::rescaleAll(Value oacc, Value aA, Value aB) {
  for (int r = 0; r < nO; ++r) {
    Value x = w.extractvalue(oacc, r);
    x = w.mulf(x, (r / 2) % 2 ? aB : aA);
    oacc = w.insertvalue(x, oacc, r);
  }
  return oacc;
}

// O *= alpha only when some row of the warp moved its max (alpha != 1):
// a warp-uniform branch (vote.sync.any, PTX ISA 9.7.12.9).
Value AttentionKernelBuilder::rescale(Value oacc, Value aA, Value aB) {
  if (!k.conditionalRescale)
    return rescaleAll(oacc, aA, aB);
  Value one = w.f32(1.0);
  Value movedB = w.cmpf(CmpF::UNE, aB, one);
  Value movedA = w.cmpf(CmpF::UNE, aA, one);
  Value moved = w.ori(movedA, movedB);
  Value any =
      NVVM::VoteSyncOp::create(builder, loc, w.i1T, full, moved, NVVM::VoteSyncKind::any);
  return w.ifElse1(
      any, oT, [&] { return rescaleAll(oacc, aA, aB); }, [&] { return oacc; });
}

//===----------------------------------------------------------------------===//
// Consumers, one tile.
//===----------------------------------------------------------------------===//

// One tile of the consumers' loop: the key-block loop, the epilogue and
// the fused merge. Returns the next iteration's (block counter, tile
// counter).
Values AttentionKernelBuilder::consumerTile(Value ctile, Value cg, Value ctc) {
  ConsumerTile ct;
  ct.ctile = ctile;
  ct.t = decodeTile(ctile);
  tileRows(ct);
  SmallVector<Type> stateT = {w.i32T, w.f32T, w.f32T, w.f32T, w.f32T, oT};
  Value has = w.cmpi(CmpI::sgt, ct.t.nblocks, c0);
  // A predicated arrive (PTX ISA 9.7.13.15.13, mbarrier.arrive under a
  // guard predicate) rather than a branch: an scf.if in the middle of
  // the key-block loop costs ptxas registers (spills at head_dim 256).
  ct.emptyQ = at(L.emptyQ());
  // A consumer whose 64 rows all lie past Sq (the last tile of a
  // sequence), or whose rows see none of the tile's key blocks (nC = 0
  // below), computes nothing: it only releases the stages it is counted
  // on, so the tensor cores go to the consumers with real rows.
  Value active = w.cmpi(CmpI::slt, ct.firstRow, ct.t.rowsTotal);
  ct.nC = computedBlocks(ct);
  Value compute = w.andi(w.cmpi(CmpI::sgt, ct.nC, c0), active);
  assert(ST >= 2 && "draining consumers need at least 2 K/V stages");
  Values cr = w.ifElse(
      compute, stateT, [&]() -> Values { return computeTile(ct, cg); },
      [&]() -> Values { return drainTile(ct, cg, has); });
  // Without the early release: Q is free after the tile's last P V.
  if (!k.earlyQRelease)
    w.mbarrierArrive(at(L.emptyQ()));
  epilogue(ct, cr);
  return {cr[0], w.addi(ctc, c1)};
}

// Packed row r's query head (t.h without pack_gqa).
Value AttentionKernelBuilder::headOf(const Tile &t, Value r) {
  if (!packed)
    return t.h;
  Value inGroup = w.remui(r, cG);
  return w.addi(w.muli(t.kvh, cG), inGroup);
}

// Row i sees keys lo(i) <= j < lim(i): flashattn.key_begin and key_end,
// expanded by flashattn-lower-key-ranges as on the host.
Value AttentionKernelBuilder::limOf(const Tile &t, Value i) {
  return KeyEndOp::create(builder, loc, w.i32T, i, t.sk, t.off, causalKind(), k.windowRight);
}

Value AttentionKernelBuilder::loOf(const Tile &t, Value i) {
  return KeyBeginOp::create(builder, loc, w.i32T, i, t.off, k.windowLeft);
}

// This thread's two rows and the keys each may see (lo <= j < lim).
void AttentionKernelBuilder::tileRows(ConsumerTile &ct) {
  const Tile &t = ct.t;
  Rows &rw = ct.rw;
  // Packed rows -> (query position, query head).
  Value rA = w.addi(t.m0, row0);
  Value rB = w.addi(t.m0, row1);
  rw.iA = posOf(rA);
  rw.iB = posOf(rB);
  rw.hA = headOf(t, rA);
  rw.hB = headOf(t, rB);
  if (HP > 1) {
    // Row r's kv head in the group, (r % G') / (Hq / Hkv); column c's,
    // c % HP (= (2 (lane % 4) + p) % HP for every 8-column group).
    for (int rowB = 0; rowB < 2; ++rowB) {
      Value inGroup = w.remui(rowB ? rB : rA, cG);
      Value hp = w.divui(inGroup, w.i32(k.packGroups));
      for (int par = 0; par < 2; ++par) {
        Value col = w.addi(col0, w.i32(par));
        Value colHead = w.remui(col, w.i32(HP));
        rw.headOk[rowB][par] = w.cmpi(CmpI::eq, hp, colHead);
      }
    }
  }
  rw.limA = limOf(t, rw.iA);
  rw.limB = limOf(t, rw.iB);
  ct.firstRow = w.addi(t.m0, w.muli(cw, w.i32(64)));
  rw.limFirst = limOf(t, posOf(ct.firstRow));
  if (k.windowLeft >= 0) {
    rw.loA = loOf(t, rw.iA);
    rw.loB = loOf(t, rw.iB);
    rw.loLast = loOf(t, posOf(w.addi(ct.firstRow, w.i32(63))));
  }
  // Region arguments (positions inside the sequence, as index): b, h
  // and the thread's two rows once per tile, the key per score.
  if (k.scoreRegion || k.maskRegion) {
    rw.bIdx = w.indexCast(t.b);
    rw.hIdx[0] = w.indexCast(rw.hA);
    rw.hIdx[1] = packed ? w.indexCast(rw.hB) : rw.hIdx[0];
    rw.iIdx[0] = w.indexCast(rw.iA);
    rw.iIdx[1] = w.indexCast(rw.iB);
  }
}

// Under a causal mask or a right window the key range ends at the
// last row's limit, and a consumer's 64 rows end earlier than the
// tile's: it computes its first nC blocks only, then releases the
// rest as the drain below does (with their GEMM turns), so that the
// tensor cores go to the consumers whose rows see those keys. nC =
// ceil(lim(last row) / BN) - nbLo, within [0, nblocks].
Value AttentionKernelBuilder::computedBlocks(const ConsumerTile &ct) {
  const Tile &t = ct.t;
  Value nC = t.nblocks;
  if (k.causal || k.windowRight >= 0) {
    Value rowsEnd = w.subi(t.rowsTotal, c1);
    Value lastRow = w.minsi(w.addi(ct.firstRow, w.i32(63)), rowsEnd);
    Value nbEnd = w.ceildivsi(w.maxsi(limOf(t, posOf(lastRow)), c0), cBN);
    nC = w.subi(nbEnd, t.nbLo);
    nC = w.minsi(w.maxsi(nC, c0), t.nblocks);
  }
  return nC;
}

void AttentionKernelBuilder::releaseQIf(const ConsumerTile &ct, Value cond) {
  if (!k.earlyQRelease)
    return;
  // A predicated arrive: no branch around it.
  MBarrierArriveIfOp::create(builder, loc, cond, ct.emptyQ);
}

// Releases key blocks [lo, hi) counted from block counter g: per
// block, waits for K and V (so that each release counts in the phase
// of its block), releases them and takes the block's GEMM turn.
// Returns the counter after them. Needs 2 stages or more: a draining
// consumer waits for V_t before its turn t, and with one stage V_t
// would wait for a later consumer's release of V_{t-1}, which follows
// that turn.
Value AttentionKernelBuilder::drainBlocks(Value lo, Value hi, Value g) {
  return w.forLoop(lo, hi, c1, {g}, [&](Value, ValueRange it) {
    Value gi = it[0];
    Value slot = slotOf(gi), par = parityOf(gi);
    waitParity(barAt(L.fullK(), slot), par);
    w.mbarrierArrive(barAt(L.emptyK(), slot));
    waitParity(barAt(L.fullV(), slot), par);
    w.mbarrierArrive(barAt(L.emptyV(), slot));
    awaitTurn();
    passTurn();
    return Values{w.addi(gi, c1)};
  })[0];
}

void AttentionKernelBuilder::waitFull(int64_t base, Value slot, Value g) {
  Value parity = parityOf(g);
  waitParity(barAt(base, slot), parity);
}

// The computing path: returns (block counter, m and l of both rows, O).
Values AttentionKernelBuilder::computeTile(const ConsumerTile &ct, Value cg) {
  // Block 0: S_0, its softmax; no P V yet.
  Value slot = slotOf(cg);
  waitFull(L.fullK(), slot, cg);
  Value kBase = slotBase(L.kOff, slot);
  awaitTurn();
  NVVM::WgmmaFenceAlignedOp::create(builder, loc);
  Value s = issueQK(kBase);
  NVVM::WgmmaGroupSyncAlignedOp::create(builder, loc);
  passTurn();
  NVVM::WgmmaWaitGroupSyncOp::create(builder, loc, 0);
  w.mbarrierArrive(barAt(L.emptyK(), slot));
  // Q is free once the tile's last S is computed: the producer
  // loads the next tile's Q under this tile's last softmax, P V
  // and epilogue.
  releaseQIf(ct, w.cmpi(CmpI::eq, ct.nC, c1));
  Softmax sm = softmax(s, w.muli(ct.t.nbLo, cBN), ct.rw, negInf, negInf, zeroF, zeroF);
  Value g1 = w.addi(cg, c1);
  // Blocks 1..n-1: issue S_n and O += P_{n-1} V_{n-1}; the softmax
  // of S_n runs while P V is in flight (FlashAttention-3, section
  // 3.2). With rescaleUnderQK, O's rescale by the previous block's
  // alpha runs after S_n is issued, under its wgmma, and before P V
  // is (FlashAttention-3's order): off the path from one block's P
  // V to the next block's GEMMs. The carried alpha starts at 1 (O
  // is 0).
  Value oneF = w.f32(1.0);
  Values iter = {g1, sm.mA, sm.mB, sm.lA, sm.lB, oZero, oneF, oneF};
  iter.append(sm.pk.begin(), sm.pk.end());
  Values kl = w.forLoop(c1, ct.nC, c1, iter, [&](Value cn, ValueRange a) -> Values {
    return keyBlock(ct, cn, a);
  });
  return lastBlock(ct, kl);
}

// Key block cn (1 <= cn < nC) of the loop; `a` = (block counter, m and
// l of both rows, O, alpha of both rows, P of the previous block).
Values AttentionKernelBuilder::keyBlock(const ConsumerTile &ct, Value cn, ValueRange a) {
  Value lg = a[0], lma = a[1], lmb = a[2], lla = a[3], llb = a[4], lo = a[5], laa = a[6],
        lab = a[7];
  Values pArgs(a.begin() + 8, a.end());
  Value gPrev = w.subi(lg, c1);
  Value slotN = slotOf(lg), slotP = slotOf(gPrev);
  // Every wait before the fence: a spin loop between wgmma.fence
  // and the wgmma makes ptxas serialize them.
  waitFull(L.fullK(), slotN, lg);
  waitFull(L.fullV(), slotP, gPrev);
  Value kBase = slotBase(L.kOff, slotN), vBase = slotBase(L.vOff, slotP);
  awaitTurn();
  NVVM::WgmmaFenceAlignedOp::create(builder, loc);
  Value sN = issueQK(kBase);
  NVVM::WgmmaGroupSyncAlignedOp::create(builder, loc);
  Value oScaled = lo;
  if (k.rescaleUnderQK) {
    oScaled = rescale(lo, laa, lab);
    // The rescale wrote O's registers: fence them before the
    // wgmma reading them (PTX ISA 9.7.15.6.1, wgmma.fence).
    NVVM::WgmmaFenceAlignedOp::create(builder, loc);
  }
  Value o1 = issuePV(oScaled, pArgs, vBase);
  NVVM::WgmmaGroupSyncAlignedOp::create(builder, loc);
  passTurn();
  NVVM::WgmmaWaitGroupSyncOp::create(builder, loc, 1);
  w.mbarrierArrive(barAt(L.emptyK(), slotN));
  releaseQIf(ct, w.cmpi(CmpI::eq, w.addi(cn, c1), ct.nC));
  Value n0 = w.muli(w.addi(ct.t.nbLo, cn), cBN);
  Softmax smN = softmax(sN, n0, ct.rw, lma, lmb, lla, llb);
  NVVM::WgmmaWaitGroupSyncOp::create(builder, loc, 0);
  w.mbarrierArrive(barAt(L.emptyV(), slotP));
  // Without rescaleUnderQK: O *= alpha right after its P V.
  if (!k.rescaleUnderQK)
    o1 = rescale(o1, smN.alphaA, smN.alphaB);
  Values next = {w.addi(lg, c1), smN.mA, smN.mB, smN.lA, smN.lB, o1, smN.alphaA, smN.alphaB};
  next.append(smN.pk.begin(), smN.pk.end());
  return next;
}

// The last block's P V, then the blocks past this consumer's rows.
Values AttentionKernelBuilder::lastBlock(const ConsumerTile &ct, const Values &kl) {
  Values pLast(kl.begin() + 8, kl.end());
  Value gLast = w.subi(kl[0], c1);
  Value slotL = slotOf(gLast);
  waitFull(L.fullV(), slotL, gLast);
  Value oLast = k.rescaleUnderQK ? rescale(kl[5], kl[6], kl[7]) : kl[5];
  awaitTurn();
  NVVM::WgmmaFenceAlignedOp::create(builder, loc);
  Value oL = issuePV(oLast, pLast, slotBase(L.vOff, slotL));
  NVVM::WgmmaGroupSyncAlignedOp::create(builder, loc);
  passTurn();
  NVVM::WgmmaWaitGroupSyncOp::create(builder, loc, 0);
  w.mbarrierArrive(barAt(L.emptyV(), slotL));
  // The blocks past this consumer's rows: released, with their
  // turns.
  Value gEnd = ct.nC != ct.t.nblocks ? drainBlocks(ct.nC, ct.t.nblocks, kl[0]) : kl[0];
  return {gEnd, kl[1], kl[2], kl[3], kl[4], oL};
}

// Drain: release every key block of the tile and take the GEMM
// turns the computing path takes (1 + nblocks when nblocks > 0).
Values AttentionKernelBuilder::drainTile(const ConsumerTile &ct, Value cg, Value has) {
  Value dr = drainBlocks(c0, ct.t.nblocks, cg);
  if (k.schedulerBarrier)
    w.ifThen(has, [&] {
      awaitTurn();
      passTurn();
    });
  if (k.earlyQRelease)
    w.mbarrierArrive(at(L.emptyQ()));
  return {dr, negInf, negInf, zeroF, zeroF, oZero};
}

//===----------------------------------------------------------------------===//
// Epilogue and fused merge.
//===----------------------------------------------------------------------===//

// Epilogue: reduce the row sums over the quad, normalize, write.
void AttentionKernelBuilder::epilogue(ConsumerTile &ct, const Values &cr) {
  Tile &t = ct.t;
  Epilogue e;
  e.cr = cr;
  e.LA = quadReduce(cr[3], addF);
  e.LB = quadReduce(cr[4], addF);
  auto inv = [&](Value l) {
    Value isZero = w.cmpf(CmpF::OEQ, l, zeroF);
    Value q = w.divf(w.f32(1.0), l);
    return w.select(isZero, zeroF, q);
  };
  e.invA = inv(e.LA);
  e.invB = inv(e.LB);
  if (table) {
    t.qRow = tableField(t.entry, 0, false);
    t.qb = tableField(t.entry, 1, false);
    t.sq = tableField(t.entry, 2, false);
  }
  e.hq64 = w.extui(hq, w.i64T);
  e.sq64 = w.extui(sqDim, w.i64T);
  e.b64 = w.extui(t.qb, w.i64T);
  e.h64s[0] = w.extui(ct.rw.hA, w.i64T);
  e.h64s[1] = packed ? w.extui(ct.rw.hB, w.i64T) : e.h64s[0];
  // Partial form: the split's slice starts at s * B * Sq * H * D (out)
  // and s * B * H * Sq (lse).
  if (partial) {
    Value s64 = w.extui(t.split, w.i64T);
    Value rows = w.muli(w.muli(P["od1"], P["od2"]), P["od3"]);
    Value slice = w.muli(s64, rows);
    e.oSplit = w.muli(slice, w.i64(D));
    e.lSplit = w.muli(s64, rows);
  }
  e.ot = partial ? w.f32T : etT;
  if (k.tmaStore)
    epilogueTmaStore(ct, e);
  for (int half = 0; half < 2; ++half) {
    if (k.tmaStore && !k.lse)
      break;
    Value i = half ? ct.rw.iB : ct.rw.iA;
    Value valid = w.cmpi(CmpI::slt, i, t.sq);
    w.ifThen(valid, [&] { storeRow(ct, e, half, i); });
  }
  if (fused)
    fusedMerge(ct, e);
}

// Normalized O of fragment registers r, r + 1 as a packed pair.
Value AttentionKernelBuilder::outPair(const Epilogue &e, int r) {
  bool half = (r / 2) % 2;
  Value x0 = w.extractvalue(e.cr[5], r);
  Value x1 = w.extractvalue(e.cr[5], r + 1);
  x0 = w.mulf(x0, half ? e.invB : e.invA);
  x1 = w.mulf(x1, half ? e.invB : e.invA);
  Value vec = w.undef(vecOf(2, w.f32T));
  vec = w.insertelement(x0, vec, c0);
  vec = w.insertelement(x1, vec, c1);
  return partial ? vec : w.truncf(vec, vecOf(2, etT));
}

// O through shared memory and a TMA store (FlashAttention-3's
// epilogue; cp.async.bulk.tensor shared::cta -> global, PTX ISA
// 9.7.9.25.5.2): one elected thread per consumer waits until the
// previous tile's store has read the buffer, the warpgroup writes
// its 64 rows in the 128-byte-swizzled layout of the tensor map
// (16-byte chunk c of row r at chunk c ^ (r % 8)), fences them for
// the async proxy, and the elected thread stores each 64-column
// box; TMA clips the rows past Sq.
void AttentionKernelBuilder::epilogueTmaStore(const ConsumerTile &ct, const Epilogue &e) {
  const Tile &t = ct.t;
  Value elect = w.cmpi(CmpI::eq, t128, c0);
  Value epiThreads = w.i32(128);
  auto epilogueSync = [&]() {
    perConsumer([&](int64_t c) { w.barrier(w.i32(1 + C + c), epiThreads); });
  };
  w.ifThen(elect, [&] {
    NVVM::CpAsyncBulkWaitGroupOp::create(builder, loc, 0, UnitAttr::get(ctx));
  });
  epilogueSync();
  Value oOff = w.i32(L.oOff);
  Value oc = w.addi(oOff, w.muli(cw, w.i32(64 * 128)));
  Value rowOff = w.muli(w.addi(w.muli(warp, c16), lq), c128);
  Value laneOff = w.muli(lr, c4);
  Value base = w.addi(w.addi(oc, rowOff), laneOff);
  Values chunk(8);
  for (int jj = 0; jj < 8; ++jj)
    chunk[jj] = w.muli(w.xori(w.i32(jj), lq), c16);
  for (int r = 0; r < nO; r += 2) {
    int j = r / 4, half = (r / 2) % 2;
    Value pair = w.bitcast(outPair(e, r), w.i32T);
    Value inBox = w.addi(chunk[j % 8], w.i32((j / 8) * BM * 128 + half * 8 * 128));
    Value offset = w.addi(base, inBox);
    Value ptr = w.gep(smem, w.sptrT, w.i8T, offset);
    w.store(pair, ptr);
  }
  w.fenceProxyAsyncShared();
  epilogueSync();
  w.ifThen(elect, [&] {
    Value row = w.addi(t.m0, w.muli(cw, w.i32(64)));
    for (int64_t i = 0; i < boxes; ++i) {
      Value src = w.gep(smem, w.sptrT, w.i8T, w.addi(oc, w.i32(i * BM * 128)));
      Value col = w.i32(64 * i);
      w.tmaStore(P["omap"], src, {col, t.h, row, t.b});
    }
    NVVM::CpAsyncBulkCommitGroupOp::create(builder, loc);
  });
}

// Row i (half 0: row A, 1: row B) of this thread: out from registers
// (without the TMA store) and lse.
void AttentionKernelBuilder::storeRow(const ConsumerTile &ct, const Epilogue &e, int half,
                                      Value i) {
  // The row's position in q's position dimension (varlen: past the
  // sequences before it).
  Value i64v = w.extui(plus(ct.t.qRow, i), w.i64T);
  // Out from registers (without the TMA store): element offset of
  // out[b, i, h, 0], then the pairs of this row.
  Value base;
  if (!k.tmaStore) {
    base = outRowOffset(w, e.b64, i64v, e.h64s[half], e.sq64, e.hq64, D);
    if (partial)
      base = w.addi(base, e.oSplit);
  }
  for (int r = 0; r < nO && !k.tmaStore; r += 2) {
    if (((r / 2) % 2) != half)
      continue;
    Value h2 = outPair(e, r);
    Value col = w.addi(col0, w.i32(8 * (r / 4)));
    Value col64 = w.extui(col, w.i64T);
    Value index = w.addi(base, col64);
    Value ptr = w.gep(P["o"], w.gptrT, e.ot, index);
    w.store(h2, ptr);
  }
  if (k.lse) {
    Value first = w.cmpi(CmpI::eq, lr, c0);
    w.ifThen(first, [&] { storeLse(e, half, i64v); });
  }
}

void AttentionKernelBuilder::storeLse(const Epilogue &e, int half, Value i64v) {
  Value Lv = half ? e.LB : e.LA, M = half ? e.cr[2] : e.cr[1];
  if (rawMax) // m in raw units: to the log2 domain
    M = w.mulf(M, scaleC);
  Value empty = w.cmpf(CmpF::OEQ, Lv, zeroF);
  Value lg = w.intrinsic("llvm.nvvm.lg2.approx.f", Lv);
  Value sum = w.addf(M, lg);
  Value val = w.mulf(sum, w.f32(M_LN2));
  val = w.select(empty, negInf, val);
  // lse[b, h, i]
  Value li = lseIndex(w, e.b64, e.h64s[half], i64v, e.hq64, e.sq64);
  if (partial)
    li = w.addi(li, e.lSplit);
  Value lp = w.gep(P["lse"], w.gptrT, w.f32T, li);
  w.store(val, lp);
}

// Fused combine (Sm90KernelSpec::fusedCombine), after the tile's
// partial results are written: the consumers meet at a named barrier,
// then one thread counts the unit on the tile's counter with a
// gpu-scope acq_rel atomic (atom.acq_rel.gpu.add, PTX ISA 9.7.13.5;
// with the barrier's cumulativity it releases every consumer's
// stores, PTX ISA 8 "Memory Consistency Model", as CUTLASS's split-K
// semaphore arrives); the unit that brings the count to S sets it
// back to 0 and, after a second barrier (its acquire passed on the
// same way), its consumers merge the tile's rows from every split's
// partial results (volatile loads: never a line of L1 filled before
// the other splits wrote it) into the final out and lse, 4 columns
// per thread and step. A null counter pointer: no merge (the combine
// kernel runs).
void AttentionKernelBuilder::fusedMerge(const ConsumerTile &ct, const Epilogue &e) {
  Value mc = P["merge_counters"];
  Value nul = w.zero(w.gptrT);
  Value on = w.icmp(LLVM::ICmpPredicate::ne, mc, nul);
  w.ifThen(on, [&] {
    Value mergeBar = w.i32(2 * C + 2), consumerThreads = w.i32(128 * C);
    auto sync = [&]() { w.barrier(mergeBar, consumerThreads); };
    sync();
    Value flag = at(L.mergeSlot());
    Value first = w.cmpi(CmpI::eq, ctid, c0);
    w.ifThen(first, [&] { countMergeUnit(ct, mc, flag); });
    sync();
    Value isLast = w.cmpi(CmpI::ne, w.load(w.i32T, flag), c0);
    w.ifThen(isLast, [&] { mergeTile(ct, e, consumerThreads); });
  });
}

// Counts this unit on the tile's counter; `flag`: whether it was the last.
void AttentionKernelBuilder::countMergeUnit(const ConsumerTile &ct, Value mc, Value flag) {
  Value unit = w.extui(w.divui(ct.ctile, nsplit), w.i64T);
  Value cp = w.gep(mc, w.gptrT, w.i32T, unit);
  // Acquire-release at GPU scope (flashattn.atomic_add_acq_rel: LLVM 22's
  // NVPTX back end drops an atomicrmw's ordering).
  Value old = AtomicAddAcqRelOp::create(builder, loc, w.i32T, cp, 1);
  Value lastUnit = w.cmpi(CmpI::eq, old, w.subi(nsplit, c1));
  w.ifThen(lastUnit, [&] { w.store(c0, cp); });
  w.store(w.extui(lastUnit, w.i32T), flag);
}

// The tile's rows: packed rows m0 .. m0 + rows of its sequence, D / 4
// units of 4 columns each, strided over the consumer threads.
void AttentionKernelBuilder::mergeTile(const ConsumerTile &ct, const Epilogue &e,
                                       Value consumerThreads) {
  const Tile &t = ct.t;
  Value rowsTot = packed ? w.muli(t.sq, cG) : t.sq;
  Value rowsHere = w.maxsi(w.minsi(cBM, w.subi(rowsTot, t.m0)), c0);
  const int64_t Q4 = D / 4;
  Value units = w.muli(rowsHere, w.i32(Q4));
  // Elements of one split's out (B Sq H D) and rows of its lse (B
  // H Sq).
  Value rowsL = w.muli(w.muli(P["od1"], P["od2"]), P["od3"]);
  Value totalO = w.muli(rowsL, w.i64(D));
  w.forLoop(ctid, units, consumerThreads,
            [&](Value mu) { mergeUnit(ct, e, mu, rowsL, totalO); });
}

void AttentionKernelBuilder::mergeUnit(const ConsumerTile &ct, const Epilogue &e, Value mu,
                                       Value rowsL, Value totalO) {
  const Tile &t = ct.t;
  const int64_t Q4 = D / 4;
  Value S64 = P["od0"];
  Value rr = w.divui(mu, w.i32(Q4));
  Value col = w.muli(w.remui(mu, w.i32(Q4)), c4);
  Value r = w.addi(t.m0, rr);
  Value pos = plus(t.qRow, posOf(r));
  Value i64v = w.extui(pos, w.i64T);
  Value h64 = w.extui(headOf(t, r), w.i64T);
  // lse row (b H + h) Sq + i; out element ((b Sq + i) H + h) D +
  // col.
  Value lrow = lseIndex(w, e.b64, h64, i64v, e.hq64, e.sq64);
  Value el = outRowOffset(w, e.b64, i64v, h64, e.sq64, e.hq64, D);
  el = w.addi(el, w.extui(col, w.i64T));
  Type fet = k.mergeF16 ? Type(builder.getF16Type()) : Type(builder.getBF16Type());
  emitMergeUnit(w, {S64, P["o"], totalO, el, P["lse"], rowsL, lrow, P["merge_out"],
                    P["merge_lse"], col, fet});
}

} // namespace

void mlir::flashattn::buildSm90AttentionKernel(OpBuilder &builder, Location loc,
                                               const Sm90KernelSpec &k) {
  AttentionKernelBuilder(builder, loc, k).build();
}
