//===- Tile.cpp - flashattn-tile ------------------------------------------===//
//
// Lowers a planned flashattn.attention on memrefs into the tiled online
// softmax of FlashAttention-2 (arXiv 2307.08691, algorithm 1), with the key
// ranges and boundary-only masking of docs/ARCHITECTURE.md ("Rules every
// lowering keeps"):
//
//   scf.for %b (sequences)
//     scf.for %t (work loop over tiles: head, m_block, split)
//       tile_init; tile_load Q
//       scf.for %nb in [n_min / block_n, ceil(n_max / block_n)) ∩ split
//         tile_load(_paged) K; tile_qk
//         [elementwise: softcap, ALiBi, score region, * log2(e)]
//         [scf.if boundary block: causal / window / sequence-end mask]
//         [mask region]
//         tile_softmax; tile_load(_paged) V; tile_pv
//       tile_store out (and lse)
//
// Scores are in the base-2 domain; log2(e) is folded into tile_qk's scale
// when nothing acts on the scores after scaling.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Transforms/Passes.h"

#include "TileEmit.h"
#include "TileGridKernels.h"

#include "flashattn/Conversion/FlashAttnToSm90/Sm90Kernel.h"
#include "flashattn/Transforms/PlanSm90.h"

#include "flashattn/Utils/IntArith.h"
#include "flashattn/Utils/LoopBuilders.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <tuple>

namespace mlir::flashattn {
#define GEN_PASS_DEF_FLASHATTNTILE
#include "flashattn/Transforms/Passes.h.inc"

#include <limits>
} // namespace mlir::flashattn

using namespace mlir;
using namespace mlir::flashattn;

namespace {

constexpr double kLog2e = 1.4426950408889634;

/// True when every shaped operand has a static unit stride in its last
/// dimension (head_dim rows are contiguous, as the tile views require).
static bool hasUnitInnerStrides(AttentionOp op) {
  for (Value v : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (type && type.getRank() > 0 && !hasUnitInnerStride(type))
      return false;
  }
  return true;
}

/// kv-cache append: k_new/v_new rows go to positions cache_seqlens[b] + r
/// (through block_table when paged); positions past the cache are skipped,
/// never written (callers reject such input with a status).
static void emitAppend(OpBuilder &b, Location loc, AttentionOp op,
                       Value batch, Value hkv, Value capacity) {
  Emit e{b, loc};
  Value k = op.getK(), v = op.getV();
  Value kNew = op.getKNew(), vNew = op.getVNew();
  buildFor(b, loc, e.c(0), batch, [&](Value bIdx) {
    Value start = e.loadIndex(op.getCacheSeqlens(), {bIdx});
    buildFor(b, loc, e.c(0), e.size(kNew, 1), [&](Value r) {
      Value pos = e.add(start, r);
      Value inside = arith::AndIOp::create(
          b, loc, e.cmp(arith::CmpIPredicate::sge, pos, e.c(0)),
          e.cmp(arith::CmpIPredicate::slt, pos, capacity));
      auto ifOp = scf::IfOp::create(b, loc, inside, /*else=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value first = bIdx, second = pos;
      if (op.isPaged()) {
        Value pageSize = e.size(k, 1);
        first = e.loadIndex(op.getBlockTable(),
                            {bIdx, e.div(pos, pageSize)});
        second = e.rem(pos, pageSize);
      }
      buildFor(b, loc, e.c(0), hkv, [&](Value g) {
        for (auto [src, dst] : {std::pair(kNew, k), std::pair(vNew, v)}) {
          buildFor(b, loc, e.c(0), e.size(dst, 3), [&](Value x) {
            Value val = memref::LoadOp::create(b, loc, src,
                                               ValueRange{bIdx, r, g, x});
            memref::StoreOp::create(b, loc, val, dst,
                                    ValueRange{first, second, g, x});
          });
        }
      });
    });
  });
}

/// Which sm90 kernel of an op flashattn-tile builds: the op's own, or a twin
/// the runtime may launch instead (`<kernel>_dense`: the split-KV partial
/// form's attention without splits, writing the combine's out and lse, for
/// launches of one split; `_packed`: pack_gqa where the op leaves it to
/// the plan and the plan did not pack).
struct KernelVariant {
  bool dense = false, packed = false;
  /// `_kv1`: one kv head a key block where the plan's kv_heads_per_block
  /// puts several.
  bool oneKvHead = false;
};

/// The kv heads a key block of `op`'s sm90 kernel holds: the plan's
/// kv_heads_per_block where it packs GQA over paged KV, else 1.
static int64_t plannedKvHeads(AttentionOp op) {
  PlanAttr plan = op.getPlanAttr();
  if (!plan.getPackGqa() || !op.isPaged() || !plan.getSm90())
    return 1;
  return std::max<int64_t>(plan.getSm90().getKvHeadsPerBlock(), 1);
}

/// The facts of one planned op that flashattn-tile uses, its scratch tiles,
/// and the pieces of the loop nest (docs/ARCHITECTURE.md, flashattn-tile):
/// sequences, work tiles, the views of a tile, each key block's loads, score
/// modifiers, masks and online-softmax update.
class AttentionTiler {
public:
  /// `kernel`: the sm90 tiled kernel's arguments (q, k, v, out[, lse]) in
  /// place of the op's operands; its scratch tiles are allocas.
  AttentionTiler(AttentionOp op, OpBuilder &b, ValueRange kernel = {},
                 KernelVariant variant = {});
  /// No output row at all (static extents): the op only appends.
  bool noOutputRows() const;
  /// The loop nest, after the append.
  void build();
  /// The sm90 kernel's work loop: tiles gpu.block_id, + gpu.grid_dim, ...
  /// over (batch, head, m_block, split), split fastest (m_block next, or
  /// with the plan's lpt schedule longest first); with the runtime's tile
  /// `table` (memref<?xi32>) over (entry, head, split).
  void buildPersistent(Value table, Value pages = Value());
  void deallocScratch();

private:
  /// One sequence's extents (in-sequence positions start at 0).
  struct Sequence {
    Value b, qOff, sq, kOff, sk, nmb; // nmb: m_blocks of its queries
  };
  /// One work tile: head, kv head, rows [m0, m0 + rows), split, its views
  /// and c = Sk - Sq.
  struct WorkTile {
    Value h, g, m0, rows, split, qv, kv, vv, pages, ov, lv, c;
    Value p0; ///< the query position of row m0 (m0 + q_start)
    Value r0; ///< out's first row: m0, or packed its position m0 / G
  };
  /// The query position (in its sequence) and the query head of the
  /// tile's row i: with pack_gqa row m0 + i is position (m0 + i) / G of
  /// head h G + (m0 + i) % G (m0 a multiple of G; from m0, not p0, so that
  /// the key-block loop keeps one of them live).
  Value rowPos(const WorkTile &w, Value i) {
    if (pack == 1)
      return e.add(w.p0, i);
    Value pos = e.div(e.add(w.m0, i), e.c(pack));
    return op.getQStart() ? e.add(pos, op.getQStart()) : pos;
  }
  Value rowHead(const WorkTile &w, Value i) {
    if (pack == 1)
      return w.h;
    Value first = e.mul(w.h, e.c(pack));
    return e.add(first, e.rem(i, e.c(pack)));
  }

  Sequence sequence(Value bIdx);
  void workTile(const Sequence &s, Value t);
  void tileBody(const Sequence &s, Value h, Value mb, Value split);
  void tableTile(Value table, Value t);
  void longestFirstTile(Value t, Value nmb);
  /// Member and round of `i` in groups of `hg` of `n` members, `rounds`
  /// rounds a group, member fastest (the last group may hold fewer).
  std::pair<Value, Value> grouped(Value i, Value hg, Value n, Value rounds);
  Value seqView(Value src, Value bIdx, Value head, Value off, Value len, int64_t cols,
                int64_t heads = 1);
  void views(const Sequence &s, WorkTile &w);
  Value keyEnd(const Sequence &s, const WorkTile &w, Value i);
  Value keyBegin(const WorkTile &w, Value i);
  void keyBlock(const Sequence &s, const WorkTile &w, Value nb, Value maskFrom,
                Value maskUntil);
  void loadKV(const WorkTile &w, Value src, Value view, Value n0, Value cols, Value tile);
  void tileMap(Value rows, Value cols, function_ref<Value(Value, Value, Value)> fn);
  void scoreModifiers(const Sequence &s, const WorkTile &w, Value n0, Value cols);
  Value toBase2(Value x);
  void boundaryMask(const Sequence &s, const WorkTile &w, Value nb, Value n0, Value maskFrom,
                    Value maskUntil);
  void maskRegion(const Sequence &s, const WorkTile &w, Value n0, Value cols);
  void otherHeadsMask();

  AttentionOp op;
  OpBuilder &b;
  Location loc;
  Emit e;
  bool inKernel;
  Value pageTable; ///< kernel, paged: the runtime's page lists (memref<?xi32>)
  IRMapping outside; ///< kernel: constants from above the regions, cloned
  int64_t bm, bn, d, dv, qr;
  /// pack_gqa (the sm90 kernel, the plan's): the G = Hq / Hkv query heads
  /// of each of a tile's `kvHeads` kv heads share its rows, row i pack + g
  /// position i of its group's query head g (pack = kvHeads G; 1: none).
  /// With kvHeads > 1 (the plan's kv_heads_per_block) a key block holds
  /// bn / kvHeads keys of each kv head, heads fastest (tile_load_paged's
  /// `heads`), and a row sees only its kv head's columns.
  int64_t pack = 1, kvHeads = 1;
  /// The keys of a key block.
  int64_t blockKeys() const { return bn / kvHeads; }
  /// The key of column j of block n0's scores, and the columns of `keys`
  /// keys.
  Value colKey(Value n0, Value j) {
    return e.add(n0, kvHeads > 1 ? e.div(j, e.c(kvHeads)) : j);
  }
  Value columns(Value keys) { return kvHeads > 1 ? e.mul(keys, e.c(kvHeads)) : keys; }
  Value numSplits; ///< partial out's leading dim (1 without splits)
  bool partial, varlenQ, varlenK, paged, append, noKeys = false, longestFirst;
  /// The plan's descending_key_blocks (sm90 kernels).
  bool descendingKeyBlocks;
  Value q, k, v, out, lse;
  Value qt, kt, vt, st, mt, lt, acc; // f32 scratch tiles
  Value hq, hkv, groups, batch, capacity;
  Value tileHeads; ///< the heads the tiles go over: hq, or hkv packed
  double softcap, qkScale;
  bool hasScoreRegion, hasMaskRegion, hasMods;
  CausalKind causal;
  int64_t winL, winR;
};

static bool staticZero(Value v, int64_t i) {
  return cast<MemRefType>(v.getType()).getDimSize(i) == 0;
}

AttentionTiler::AttentionTiler(AttentionOp op, OpBuilder &b, ValueRange kernel,
                               KernelVariant variant)
    : op(op), b(b), loc(op.getLoc()), e{b, op.getLoc()}, inKernel(!kernel.empty()) {
  PlanAttr plan = op.getPlanAttr();
  bm = plan.getBlockM(), bn = plan.getBlockN();
  d = op.getHeadDim(), dv = op.getHeadDimV();
  partial = op.isSplitPartial() && !variant.dense;
  longestFirst = plan.getSchedule() == Schedule::lpt;
  descendingKeyBlocks = inKernel && plan.getSm90() && plan.getSm90().getDescendingKeyBlocks();

  varlenQ = op.isVarlenQ(), varlenK = op.isVarlenK();
  paged = op.isPaged(), append = op.hasAppend();
  q = op.getQ(), k = op.getK(), v = op.getV(), out = op.getOut(), lse = op.getLse();
  if (inKernel) {
    q = kernel[0], k = kernel[1], v = kernel[2], out = kernel[3];
    lse = kernel.size() > 4 ? kernel[4] : Value();
    // Constants that folding hoisted out of the regions come along.
    for (Region *region : {&op.getScore(), &op.getMask()})
      region->walk([&](Operation *inner) {
        for (Value v : inner->getOperands())
          if (!outside.contains(v) && !region->isAncestor(v.getParentRegion()))
            outside.map(v, b.clone(*v.getDefiningOp())->getResult(0));
      });
  }
  qr = cast<MemRefType>(q.getType()).getRank();

  Type f32 = b.getF32Type();
  auto alloc = [&](ArrayRef<int64_t> shape) -> Value {
    auto type = MemRefType::get(shape, f32);
    if (inKernel)
      return memref::AllocaOp::create(b, loc, type);
    return memref::AllocOp::create(b, loc, type);
  };
  qt = alloc({bm, d}), kt = alloc({bn, d}), vt = alloc({bn, dv});
  st = alloc({bm, bn}), mt = alloc({bm}), lt = alloc({bm});
  acc = alloc({bm, dv});

  hq = e.size(q, qr - 2);
  // The split count is the partial out's leading dimension (the plan's
  // count; a kernel's is dynamic, the launch's).
  numSplits = partial ? e.size(out, 0) : e.c(1);
  hkv = e.size(k, cast<MemRefType>(k.getType()).getRank() - 2);
  groups = e.div(hq, hkv);
  if (inKernel && (plan.getPackGqa() || variant.packed))
    pack = std::max<int64_t>(op.getNumQHeads() / op.getNumKVHeads(), 1);
  if (pack > 1 && !variant.oneKvHead)
    kvHeads = plannedKvHeads(op);
  pack *= kvHeads;
  tileHeads = pack > 1 ? e.div(hkv, e.c(kvHeads)) : hq;
  // (A kernel over the tile table reads no cu_seqlens.)
  batch = varlenQ ? (inKernel ? Value() : e.sub(e.size(op.getCuSeqlensQ(), 0), e.c(1)))
                  : e.size(q, 0);
  // Keys a sequence can hold: reads never go past this.
  capacity = paged ? (inKernel ? Value() : e.mul(e.size(op.getBlockTable(), 1), e.size(k, 1)))
             : varlenK ? Value()
                       : e.size(k, 1);
  // (A kernel's append is a kernel of its own, launched before it.)
  if (append && !inKernel)
    emitAppend(b, loc, op, batch, hkv, capacity);

  // Statically empty extents. memref.subview rejects a static offset into
  // a dimension of static size 0, so the views cannot be built there. With
  // no key position (seqlen_k 0; paged: no page, pages of 0 keys or a
  // block_table of no column) every row is empty (docs/SEMANTICS.md: out
  // 0, lse -inf): the key loop is not built.
  noKeys = !varlenK && (paged ? staticZero(op.getBlockTable(), 1) || staticZero(k, 0) ||
                                    staticZero(k, 1)
                              : staticZero(k, 1));

  // Score modifiers and the scale (base-2 domain).
  double scale = op.getEffectiveScale();
  softcap = op.getSoftcap() ? op.getSoftcap()->convertToDouble() : 0;
  hasScoreRegion = !op.getScore().empty();
  hasMaskRegion = !op.getMask().empty();
  hasMods = softcap > 0 || op.getAlibiSlopes() || hasScoreRegion;
  qkScale = hasMods ? scale : scale * kLog2e;
  causal = op.getCausal();
  std::tie(winL, winR) = op.getWindow();
  // A window side of 2^62 keys or more excludes no key: positions index
  // memrefs, so they and Sk - Sq stay below 2^62 in magnitude, and no bound
  // (-1) is the same mask without the i64 overflow of m1 + c + R.
  if (winL >= (int64_t(1) << 62))
    winL = -1;
  if (winR >= (int64_t(1) << 62))
    winR = -1;
  // The sm90 kernel's positions are i32: sides of 2^30 keys or more are no
  // bound there.
  if (inKernel) {
    winL = sm90WindowSide(winL);
    winR = sm90WindowSide(winR);
  }
}

// With no output row (batch or seqlen_q 0; the verifier already wants a
// head) the op writes nothing (its append still runs).
bool AttentionTiler::noOutputRows() const {
  return staticZero(q, 0) || (!varlenQ && staticZero(q, 1));
}

void AttentionTiler::deallocScratch() {
  if (inKernel)
    return;
  for (Value buffer : {qt, kt, vt, st, mt, lt, acc})
    memref::DeallocOp::create(b, loc, buffer);
}

void AttentionTiler::build() {
  buildFor(b, loc, e.c(0), batch, [&](Value bIdx) {
    Sequence s = sequence(bIdx);
    s.nmb = e.ceilDiv(s.sq, e.c(bm));
    Value numTiles = e.mul(e.mul(hq, s.nmb), numSplits);
    buildFor(b, loc, e.c(0), numTiles, [&](Value t) { workTile(s, t); });
  });
}

void AttentionTiler::buildPersistent(Value table, Value pages) {
  pageTable = pages;
  Value first = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value grid = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
  Value perSequence, total, nmb;
  if (table) {
    total = e.mul(e.mul(e.loadIndex(table, {e.c(0)}), tileHeads), numSplits);
  } else {
    nmb = e.ceilDiv(e.mul(e.size(q, 1), e.c(pack)), e.c(bm));
    perSequence = e.mul(e.mul(tileHeads, nmb), numSplits);
    total = e.mul(batch, perSequence);
  }
  auto loop = scf::ForOp::create(b, loc, first, total, grid);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value t = loop.getInductionVar();
  if (table)
    return tableTile(table, t);
  if (longestFirst)
    return longestFirstTile(t, nmb);
  Sequence s = sequence(e.divu(t, perSequence));
  s.nmb = nmb;
  workTile(s, e.remu(t, perSequence));
}

// Work tile t over the runtime's tile table (runtime/src/schedule.c: a
// header of 8 words, word 0 the entries; then 8 words an entry: q
// position, q batch, q length, k position, k batch, k length, m_block,
// sequence): split fastest, then in groups of hg heads (word 2: the K / V
// of a group's heads fit L2) entry by entry, head fastest inside a group,
// the last group holding the heads left.
void AttentionTiler::tableTile(Value table, Value t) {
  Value rest = e.divu(t, numSplits);
  Value entries = e.loadIndex(table, {e.c(0)});
  Value hg = e.min(e.max(e.loadIndex(table, {e.c(2)}), e.c(1)), tileHeads);
  auto [head, entry] = grouped(rest, hg, tileHeads, entries);
  auto field = [&](int64_t f) {
    return e.loadIndex(table, {e.add(e.mul(entry, e.c(8)), e.c(8 + f))});
  };
  Sequence s{field(7), varlenQ ? field(0) : e.c(0), field(2),
             varlenK || paged ? field(3) : e.c(0), field(5), Value()};
  tileBody(s, head, field(6), e.remu(t, numSplits));
}

// Work tile t longest first (FlashAttention-3's LPT order, the plan's lpt
// schedule: a causal tile's work grows with its m_block): split fastest,
// then in groups of hg (batch, head)s whose K and V fit 32 MB of L2,
// m_block descending, (batch, head) fastest: in each group the longest
// tiles come first (the sm90 kernel's counter hands them out in this
// order). The decode divides unsigned, as every work-tile decode here: a
// tile index and the counts are never negative, and a signed division
// costs the sm90 kernels' tile prologue a dozen more instructions.
void AttentionTiler::longestFirstTile(Value t, Value nmb) {
  Value rest = e.divu(t, numSplits);
  Value nbh = e.mul(batch, tileHeads);
  // Query heads of one kv head share its K / V (packed: a tile's).
  Value keys = capacity ? e.max(capacity, e.c(1)) : e.c(1);
  Value perKvHead = e.max(e.div(e.c((int64_t(32) << 20) / (2 * (d + dv))), keys), e.c(1));
  Value hg = e.min(pack > 1 ? perKvHead : e.mul(perKvHead, groups), nbh);
  auto [bh, round] = grouped(rest, hg, nbh, nmb);
  Sequence s = sequence(e.divu(bh, tileHeads));
  s.nmb = nmb;
  tileBody(s, e.remu(bh, tileHeads), e.sub(e.sub(nmb, e.c(1)), round), e.remu(t, numSplits));
}

std::pair<Value, Value> AttentionTiler::grouped(Value i, Value hg, Value n, Value rounds) {
  Value perGroup = e.mul(hg, rounds);
  Value first = e.mul(e.divu(i, perGroup), hg);
  Value inGroup = e.remu(i, perGroup);
  Value here = e.min(hg, e.sub(n, first));
  return {e.add(first, e.remu(inGroup, here)), e.divu(inGroup, here)};
}

AttentionTiler::Sequence AttentionTiler::sequence(Value bIdx) {
  Value one = e.c(1);
  Sequence s{bIdx, e.c(0), e.size(q, 1), e.c(0), Value(), Value()};
  if (varlenQ) {
    // Never past the packed tensor, never negative (callers check
    // cu_seqlens and report bad input with a status).
    s.qOff = e.loadIndex(op.getCuSeqlensQ(), {bIdx});
    s.sq = e.sub(e.loadIndex(op.getCuSeqlensQ(), {e.add(bIdx, one)}), s.qOff);
    s.sq = e.max(e.min(s.sq, e.sub(e.size(q, 0), s.qOff)), e.c(0));
  }
  if (append) {
    s.sk = e.add(e.loadIndex(op.getCacheSeqlens(), {bIdx}), e.size(op.getKNew(), 1));
  } else if (op.getSequsedK()) {
    s.sk = e.loadIndex(op.getSequsedK(), {bIdx});
    if (varlenK)
      s.kOff = e.loadIndex(op.getCuSeqlensK(), {bIdx});
  } else if (varlenK) {
    s.kOff = e.loadIndex(op.getCuSeqlensK(), {bIdx});
    s.sk = e.sub(e.loadIndex(op.getCuSeqlensK(), {e.add(bIdx, one)}), s.kOff);
  } else {
    s.sk = capacity;
  }
  if (capacity)
    s.sk = e.min(s.sk, capacity);
  else
    s.sk = e.min(s.sk, e.sub(e.size(k, 0), s.kOff));
  s.sk = e.max(s.sk, e.c(0));
  return s;
}

// Work tile t of the sequence: (head, m_block, split), split fastest.
void AttentionTiler::workTile(const Sequence &s, Value t) {
  Value rest = e.divu(t, numSplits);
  tileBody(s, e.divu(rest, s.nmb), e.remu(rest, s.nmb), e.remu(t, numSplits));
}

// The tile of head h, m_block mb and split `split` of the sequence.
void AttentionTiler::tileBody(const Sequence &s, Value h, Value mb, Value split) {
  WorkTile w;
  w.split = split;
  w.h = h;
  w.g = pack > 1 ? (kvHeads > 1 ? e.mul(w.h, e.c(kvHeads)) : w.h) : e.div(w.h, groups);
  w.m0 = e.mul(mb, e.c(bm));
  w.rows = e.min(e.c(bm), e.sub(e.mul(s.sq, e.c(pack)), w.m0));

  // The key blocks of the query positions [p0, p0 + rows / G) (and of the
  // split). A tile of rows (q_start, seqlen_q) moves the positions and
  // aligns to seqlen_q queries.
  Value qStart = op.getQStart(), seqlenQ = op.getSeqlenQ();
  w.r0 = pack > 1 ? e.div(w.m0, e.c(pack)) : w.m0;
  w.p0 = qStart ? e.add(w.r0, qStart) : w.r0;
  w.c = e.sub(s.sk, seqlenQ ? seqlenQ : s.sq);
  views(s, w);
  Value m1 = rowPos(w, w.rows);
  auto range = KeyBlocksOp::create(b, loc, b.getIndexType(), b.getIndexType(), w.p0, m1, s.sk,
                                   w.c, partial ? w.split : Value(),
                                   partial ? numSplits : Value(), blockKeys(), causal, winL,
                                   winR);
  // A key block needs the mask when it reaches past the first row's key
  // end (nb n + n > end: nb >= floor(end / n)) or starts before the last
  // row's window start (nb n < begin: nb < ceil(begin / n)): bounds of the
  // block index above the loop, where a lowering may split it.
  Value keys = e.c(blockKeys());
  Value maskFrom = e.floorDiv(keyEnd(s, w, w.p0), keys);
  Value maskUntil =
      winL >= 0 ? e.ceilDiv(keyBegin(w, rowPos(w, e.c(bm - 1))), keys) : Value();

  TileInitOp::create(b, loc, mt, lt, acc);
  TileLoadOp::create(b, loc, w.qv, w.m0, w.rows, qt);
  // The plan's descending_key_blocks: iteration j computes block top - j.
  bool descending = !noKeys && keyBlocksDescend(descendingKeyBlocks,
                                                 causal != CausalKind::none, winL, winR);
  Value top = descending ? e.sub(e.add(range.getBegin(), range.getEnd()), e.c(1)) : Value();
  if (!noKeys)
    buildFor(b, loc, range.getBegin(), range.getEnd(), [&](Value j) {
      keyBlock(s, w, descending ? e.sub(top, j) : j, maskFrom, maskUntil);
    });
  TileStoreOp::create(b, loc, acc, mt, lt, w.ov, w.rows, w.lv);
}

/// The rank-reduced [len, cols] view of sequence bIdx (dense: batch bIdx;
/// varlen: rows from `off`) and `head` of q, k or v; with `heads` > 1 the
/// [len, heads, cols] view of heads [head, head + heads) (pack_gqa's q).
Value AttentionTiler::seqView(Value src, Value bIdx, Value head, Value off, Value len,
                              int64_t cols, int64_t heads) {
  OpFoldResult zero = b.getIndexAttr(0), unit = b.getIndexAttr(1), nh = b.getIndexAttr(heads);
  SmallVector<int64_t> dropHead;
  if (heads == 1)
    dropHead.push_back(1);
  if (cast<MemRefType>(src.getType()).getRank() == 3)
    return e.view(src, {off, head, zero}, {len, nh, b.getIndexAttr(cols)}, dropHead);
  SmallVector<int64_t> dropped{0};
  if (heads == 1)
    dropped.push_back(2);
  return e.view(src, {bIdx, zero, head, zero},
                {unit, e.size(src, 1), nh, b.getIndexAttr(cols)}, dropped);
}

// The tile's views: Q, K and V (or the block_table row), out and lse (of
// the split with the partial form). With pack_gqa Q, out and lse keep the
// kv head's G query heads: [Sq, G, D], [rows / G, G, Dv] and [G, rows / G].
void AttentionTiler::views(const Sequence &s, WorkTile &w) {
  OpFoldResult zero = b.getIndexAttr(0), unit = b.getIndexAttr(1);
  Value qHead = pack > 1 ? e.mul(w.h, e.c(pack)) : w.h;
  w.qv = seqView(q, s.b, qHead, s.qOff, s.sq, d, pack);
  if (noKeys) {
    // No view of an empty cache (see the constructor).
  } else if (paged && pageTable) {
    // The kernel's page lists: the sequence's from its entry's k position.
    Value pages = e.ceilDiv(s.sk, e.size(k, 1));
    w.pages = e.view(pageTable, {s.kOff}, {pages}, {});
  } else if (paged) {
    w.pages = e.view(op.getBlockTable(), {s.b, zero}, {unit, e.size(op.getBlockTable(), 1)},
                     {0});
  } else {
    Value len = varlenK ? s.sk : Value();
    w.kv = seqView(k, s.b, w.g, s.kOff, len, d);
    w.vv = seqView(v, s.b, w.g, s.kOff, len, dv);
  }
  SmallVector<OpFoldResult> outOffsets, outSizes, lseOffsets, lseSizes;
  SmallVector<int64_t> outDropped, lseDropped;
  if (partial) {
    outOffsets.push_back(w.split);
    outSizes.push_back(unit);
    outDropped.push_back(0);
    lseOffsets.push_back(w.split);
    lseSizes.push_back(unit);
    lseDropped.push_back(0);
  }
  int64_t base = partial ? 1 : 0;
  bool packed = pack > 1;
  Value pos = w.r0;
  Value positions = packed ? e.div(w.rows, e.c(pack)) : w.rows;
  OpFoldResult heads = b.getIndexAttr(pack);
  if (varlenQ) {
    outOffsets.append({e.add(s.qOff, pos), qHead, zero});
    outSizes.append({positions, heads, b.getIndexAttr(dv)});
    lseOffsets.append({qHead, e.add(s.qOff, pos)});
    lseSizes.append({heads, positions});
    if (!packed) {
      outDropped.push_back(base + 1);
      lseDropped.push_back(base);
    }
  } else {
    outOffsets.append({s.b, pos, qHead, zero});
    outSizes.append({unit, positions, heads, b.getIndexAttr(dv)});
    outDropped.push_back(base);
    lseOffsets.append({s.b, qHead, pos});
    lseSizes.append({unit, heads, positions});
    lseDropped.push_back(base);
    if (!packed) {
      outDropped.push_back(base + 2);
      lseDropped.push_back(base + 1);
    }
  }
  w.ov = e.view(out, outOffsets, outSizes, outDropped);
  w.lv = lse ? e.view(lse, lseOffsets, lseSizes, lseDropped) : Value();
}

// Row i sees keys keyBegin(i) <= j < keyEnd(i).
Value AttentionTiler::keyEnd(const Sequence &s, const WorkTile &w, Value i) {
  return KeyEndOp::create(b, loc, b.getIndexType(), i, s.sk, w.c, causal, winR);
}

Value AttentionTiler::keyBegin(const WorkTile &w, Value i) {
  return KeyBeginOp::create(b, loc, b.getIndexType(), i, w.c, winL);
}

void AttentionTiler::loadKV(const WorkTile &w, Value src, Value view, Value n0, Value cols,
                            Value tile) {
  if (paged)
    TileLoadPagedOp::create(b, loc, src, w.pages, w.g, n0, cols, tile, /*async=*/false,
                            kvHeads);
  else
    TileLoadOp::create(b, loc, view, n0, cols, tile);
}

// Key block nb: K, S = Q K^T, the score modifiers, the masks, the online
// softmax, V, O += P V.
void AttentionTiler::keyBlock(const Sequence &s, const WorkTile &w, Value nb, Value maskFrom,
                              Value maskUntil) {
  Value n0 = e.mul(nb, e.c(blockKeys()));
  Value cols = e.min(e.c(blockKeys()), e.sub(s.sk, n0));
  loadKV(w, k, w.kv, n0, cols, kt);
  TileQKOp::create(b, loc, qt, kt, st, b.getF32FloatAttr(qkScale));
  if (hasMods)
    scoreModifiers(s, w, n0, cols);
  boundaryMask(s, w, nb, n0, maskFrom, maskUntil);
  if (hasMaskRegion)
    maskRegion(s, w, n0, cols);
  if (kvHeads > 1)
    otherHeadsMask();
  TileSoftmaxOp::create(b, loc, st, mt, lt, acc);
  loadKV(w, v, w.vv, n0, cols, vt);
  TilePVOp::create(b, loc, st, vt, acc);
}

// S[i, j] = fn(S[i, j], i, j) for i < rows, j < cols, as one tile_map.
void AttentionTiler::tileMap(Value rows, Value cols,
                             function_ref<Value(Value, Value, Value)> fn) {
  auto map = TileMapOp::create(b, loc, st, rows, cols);
  Type index = b.getIndexType();
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.createBlock(&map.getBody(), {}, {b.getF32Type(), index, index},
                              {loc, loc, loc});
  Value x = fn(body->getArgument(0), body->getArgument(1), body->getArgument(2));
  YieldOp::create(b, loc, x);
}

// Softcap, ALiBi and the score region on the real rows and columns, with
// in-sequence indices, then * log2(e).
void AttentionTiler::scoreModifiers(const Sequence &s, const WorkTile &w, Value n0,
                                    Value cols) {
  Type f32 = b.getF32Type();
  tileMap(w.rows, columns(cols), [&](Value x, Value i, Value j) {
    Value iAbs = rowPos(w, i), jAbs = colKey(n0, j);
    if (softcap > 0) {
      Value cap = e.f32(softcap);
      Value y = arith::DivFOp::create(b, loc, x, cap);
      y = math::TanhOp::create(b, loc, y);
      x = arith::MulFOp::create(b, loc, y, cap);
    }
    if (Value slopes = op.getAlibiSlopes()) {
      Value slope = cast<MemRefType>(slopes.getType()).getRank() == 1
                        ? memref::LoadOp::create(b, loc, slopes, rowHead(w, i))
                        : memref::LoadOp::create(b, loc, slopes, ValueRange{s.b, rowHead(w, i)});
      Value dist = math::AbsIOp::create(b, loc, e.sub(e.add(iAbs, w.c), jAbs));
      Value distI = arith::IndexCastOp::create(b, loc, b.getI64Type(), dist);
      Value distF = arith::SIToFPOp::create(b, loc, f32, distI);
      x = arith::SubFOp::create(b, loc, x, arith::MulFOp::create(b, loc, slope, distF));
    }
    if (hasScoreRegion)
      x = inlineRegion(b, op.getScore(), {x, s.b, rowHead(w, i), iAbs, jAbs}, &outside);
    return toBase2(x);
  });
}

// x log2(e), kept finite where x is: a finite score past FLT_MAX / log2(e)
// (an additive mask of the dtype's minimum, as Hugging Face's) must not
// become -inf, which would weigh 0 where the formula weighs exp(x - max);
// -inf (a region's "masked") stays -inf.
Value AttentionTiler::toBase2(Value x) {
  Value y = arith::MulFOp::create(b, loc, x, e.f32(kLog2e));
  Value big = e.f32(std::numeric_limits<float>::max());
  Value clamped = arith::MinimumFOp::create(
      b, loc, arith::MaximumFOp::create(b, loc, y, arith::NegFOp::create(b, loc, big)), big);
  Value inf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                    math::AbsFOp::create(b, loc, x), e.f32(INFINITY));
  return arith::SelectOp::create(b, loc, inf, y, clamped);
}

// The causal / window / sequence-end mask, on boundary blocks only: block
// nb >= maskFrom (or < maskUntil).
void AttentionTiler::boundaryMask(const Sequence &s, const WorkTile &w, Value nb, Value n0,
                                  Value maskFrom, Value maskUntil) {
  using P = arith::CmpIPredicate;
  Value boundary = e.cmp(P::sge, nb, maskFrom);
  if (maskUntil)
    boundary = arith::OrIOp::create(b, loc, boundary, e.cmp(P::slt, nb, maskUntil));
  auto ifOp = scf::IfOp::create(b, loc, boundary, /*else=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value negInf = e.f32(-INFINITY);
  tileMap(e.c(bm), e.c(bn), [&](Value x, Value i, Value j) {
    Value iAbs = rowPos(w, i);
    Value end = keyEnd(s, w, iAbs);
    Value begin = winL >= 0 ? keyBegin(w, iAbs) : Value();
    Value jAbs = colKey(n0, j);
    Value ok = e.cmp(P::slt, jAbs, end);
    if (begin)
      ok = arith::AndIOp::create(b, loc, ok, e.cmp(P::sge, jAbs, begin));
    return arith::SelectOp::create(b, loc, ok, x, negInf);
  });
}

// The mask region, on every block (real rows and columns).
void AttentionTiler::maskRegion(const Sequence &s, const WorkTile &w, Value n0, Value cols) {
  Value negInf = e.f32(-INFINITY);
  tileMap(w.rows, columns(cols), [&](Value x, Value i, Value j) {
    Value iAbs = rowPos(w, i), jAbs = colKey(n0, j);
    Value keep = inlineRegion(b, op.getMask(), {s.b, rowHead(w, i), iAbs, jAbs}, &outside);
    return arith::SelectOp::create(b, loc, keep, x, negInf);
  });
}

// kv_heads_per_block: row i (its group's query head i % pack, of kv head
// (i % pack) / G) sees only its kv head's columns (j % kvHeads), on every
// block.
void AttentionTiler::otherHeadsMask() {
  using P = arith::CmpIPredicate;
  Value negInf = e.f32(-INFINITY);
  int64_t g = pack / kvHeads;
  tileMap(e.c(bm), e.c(bn), [&](Value x, Value i, Value j) {
    Value rowHead = e.divu(e.remu(i, e.c(pack)), e.c(g));
    Value ok = e.cmp(P::eq, rowHead, e.remu(j, e.c(kvHeads)));
    return arith::SelectOp::create(b, loc, ok, x, negInf);
  });
}

/// What the sm90 kernel does not take yet, or "".
static std::string sm90TileUnsupported(AttentionOp op) {
  if (op.getAlibiSlopes())
    return "ALiBi";
  if (op.getQStart() || op.getSeqlenQ())
    return "a tile of query rows (q_start)";
  // pack_gqa (the plan's): Q's TMA box is G heads x block_m / G positions.
  PlanAttr plan = op.getPlanAttr();
  int64_t hq = op.getNumQHeads(), hkv = op.getNumKVHeads();
  if (plan.getPackGqa() && (ShapedType::isDynamic(hq) || ShapedType::isDynamic(hkv)))
    return "pack_gqa with dynamic head counts";
  if (plan.getPackGqa() && hq / hkv > 1 && plan.getBlockM() % (hq / hkv))
    return "pack_gqa with Hq / Hkv = " + std::to_string(hq / hkv) +
           " not dividing block_m = " + std::to_string(plan.getBlockM());
  int64_t kvHeads = plan.getSm90() ? plan.getSm90().getKvHeadsPerBlock() : 1;
  if (kvHeads > 1 && (!plan.getPackGqa() || !op.isPaged() || hq / hkv < 2 || hkv % kvHeads ||
                      plan.getBlockN() % kvHeads || plan.getBlockM() % (hq / hkv * kvHeads) ||
                      plan.getSm90().getKvRowCopies()))
    return "kv_heads_per_block = " + std::to_string(kvHeads) +
           " (only with pack_gqa over paged KV by TMA, dividing Hkv = " + std::to_string(hkv) +
           " and block_n, and Hq / Hkv times it dividing block_m)";
  for (Region *region : {&op.getScore(), &op.getMask()}) {
    WalkResult r = region->walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (!region->isAncestor(v.getParentRegion()) &&
            !(v.getDefiningOp() && v.getDefiningOp()->hasTrait<OpTrait::ConstantLike>()))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return "score / mask regions that use values from outside them (other than constants)";
  }
  return "";
}

/// Query heads per kv head of `op`'s pack_gqa twin, or 0 without one: an
/// op that leaves pack_gqa to the plan, which did not pack, with static
/// head counts whose ratio G > 1 divides block_m (Q's TMA box).
static int64_t packedTwinGroups(AttentionOp op) {
  PlanAttr plan = op.getPlanAttr();
  int64_t hq = op.getNumQHeads(), hkv = op.getNumKVHeads();
  if (op.getPackGqa().has_value() || plan.getPackGqa() || ShapedType::isDynamic(hq) ||
      ShapedType::isDynamic(hkv))
    return 0;
  int64_t g = hq / hkv;
  return g > 1 && plan.getBlockM() % g == 0 ? g : 0;
}

/// Builds kernel `name` of `op` (`variant`) at the end of `kernels`:
/// `gpu.func @name(q, k, v, out[, lse][, tile_table][, page_table])
/// kernel`, whose body is the persistent work loop over the tile ops.
static void buildKernel(AttentionOp op, PatternRewriter &rewriter, gpu::GPUModuleOp kernels,
                        const std::string &name, KernelVariant variant) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToEnd(kernels.getBody());
  SmallVector<Type> types;
  SmallVector<StringRef> names{"q", "k", "v", "out"};
  // The split-KV partial form's split count is the launch's: out's and
  // lse's leading dimension is dynamic in the kernel. The dense twin
  // writes the combine's out and lse.
  bool partial = op.isSplitPartial() && !variant.dense;
  CombineOp combine = variant.dense ? op.getPartialCombine() : CombineOp();
  auto anySplits = [&](Value v) -> Type {
    auto type = cast<MemRefType>(v.getType());
    if (!partial)
      return type;
    SmallVector<int64_t> shape(type.getShape());
    shape[0] = ShapedType::kDynamic;
    return MemRefType::get(shape, type.getElementType());
  };
  for (Value v : {op.getQ(), op.getK(), op.getV()})
    types.push_back(v.getType());
  Value out = combine ? combine.getOut() : op.getOut();
  Value lse = combine ? combine.getLse() : op.getLse();
  types.push_back(anySplits(out));
  if (lse) {
    types.push_back(anySplits(lse));
    names.push_back("lse");
  }
  // Varlen and seqused_k: the runtime's tile table gives each tile's
  // sequence.
  // Append: the key lengths after the append (cache_seqlens[b] + S_new)
  // come through the table too; the append kernel runs first.
  bool table = op.isVarlenQ() || op.isVarlenK() || op.getSequsedK() || op.hasAppend();
  auto words = MemRefType::get({ShapedType::kDynamic}, rewriter.getI32Type());
  if (table) {
    types.push_back(words);
    names.push_back("tile_table");
  }
  // Paged: the page lists (the block_table on the device, or the lists the
  // runtime copies into its table; an entry's k position says where its
  // sequence's list starts).
  if (op.isPaged()) {
    types.push_back(words);
    names.push_back("page_table");
  }
  auto func = gpu::GPUFuncOp::create(rewriter, op.getLoc(), name,
                                     rewriter.getFunctionType(types, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), rewriter.getUnitAttr());
  for (auto [i, argName] : llvm::enumerate(names))
    func.setArgAttr(i, "flashattn.arg", rewriter.getStringAttr(argName));
  rewriter.setInsertionPointToStart(&func.getBody().front());
  ValueRange args = func.getArguments();
  int64_t extra = (table ? 1 : 0) + (op.isPaged() ? 1 : 0);
  AttentionTiler tiler(op, rewriter, args.drop_back(extra), variant);
  if (!tiler.noOutputRows())
    tiler.buildPersistent(table ? args[args.size() - extra] : Value(),
                          op.isPaged() ? args.back() : Value());
  gpu::ReturnOp::create(rewriter, op.getLoc());
}

/// sm90: the op's tiled kernel, `gpu.func @fa_sm90_N` in `gpu.module
/// @fa_sm90_N_module` (buildKernel), and with `denseEntry` / `packedEntry`
/// its twins (`_dense`, `_packed`, `_dense_packed`); the op stays (the
/// runtime launches the kernels) with `flashattn.sm90` naming them.
static void tileIntoKernel(AttentionOp op, PatternRewriter &rewriter, bool denseEntry,
                           bool packedEntry) {
  MLIRContext *ctx = op.getContext();
  auto module = op->getParentOfType<ModuleOp>();
  int n = 0;
  std::string name;
  do
    name = "fa_sm90_" + std::to_string(n++);
  while (module.lookupSymbol(name + "_module"));
  rewriter.modifyOpInPlace(module, [&] {
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), rewriter.getUnitAttr());
  });
  gpu::GPUModuleOp kernels;
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToEnd(module.getBody());
    kernels = gpu::GPUModuleOp::create(rewriter, op.getLoc(), name + "_module");
  }
  bool dense = denseEntry && op.getPartialCombine();
  int64_t groups = packedEntry ? packedTwinGroups(op) : 0;
  SmallVector<std::string> attention{name};
  if (dense)
    attention.push_back(name + "_dense");
  // kv_heads_per_block: the twins with one kv head a block (`_kv1`), for
  // calls with too few tiles to fill the SMs.
  PlanAttr plan = op.getPlanAttr();
  bool rowCopies = op.isPaged() && plan.getSm90() && plan.getSm90().getKvRowCopies();
  int64_t kvHeads = plannedKvHeads(op);
  for (const std::string &entry : attention) {
    bool isDense = entry != name;
    buildKernel(op, rewriter, kernels, entry, {isDense, false, false});
    if (groups)
      buildKernel(op, rewriter, kernels, entry + "_packed", {isDense, true, false});
    if (kvHeads > 1)
      buildKernel(op, rewriter, kernels, entry + "_kv1", {isDense, false, true});
  }
  auto ref = [&](StringRef entry) {
    return SymbolRefAttr::get(ctx, name + "_module", {FlatSymbolRefAttr::get(ctx, entry)});
  };
  // Split-KV: the combine's merge kernel, which the combine names; the
  // kv-cache append: its copy kernel, launched first.
  SymbolRefAttr combineRef, appendRef;
  if (CombineOp combine = op.isSplitPartial() ? op.getPartialCombine() : CombineOp()) {
    buildCombineKernel(combine, rewriter, kernels, name + "_combine");
    combineRef = ref(name + "_combine");
    rewriter.modifyOpInPlace(combine, [&] {
      combine->setAttr("flashattn.sm90", Sm90EntriesAttr::get(ctx, combineRef, nullptr, nullptr,
                                                              nullptr, 0, 1, false, nullptr));
    });
  }
  if (op.hasAppend()) {
    buildAppendKernel(op, rewriter, kernels, name + "_append");
    appendRef = ref(name + "_append");
  }
  rewriter.modifyOpInPlace(op, [&] {
    op->setAttr("flashattn.sm90",
                Sm90EntriesAttr::get(ctx, ref(name), dense ? ref(name + "_dense") : nullptr,
                                     appendRef, combineRef, groups, kvHeads, rowCopies,
                                     nullptr));
  });
}

struct TileAttention : OpRewritePattern<AttentionOp> {
  TileAttention(MLIRContext *ctx, bool denseEntry, bool packedEntry)
      : OpRewritePattern(ctx), denseEntry(denseEntry), packedEntry(packedEntry) {}
  bool denseEntry, packedEntry;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    PlanAttr plan = op.getPlanAttr();
    if (!plan)
      return rewriter.notifyMatchFailure(op, "no plan: run flashattn-plan");
    if (!isa<MemRefType>(op.getQ().getType()))
      return rewriter.notifyMatchFailure(op, "tensor form: bufferize first");
    if (plan.getNumSplits() > 1 && !op.isSplitPartial())
      return rewriter.notifyMatchFailure(op, "run flashattn-split-kv first");
    if (ShapedType::isDynamic(op.getHeadDim()) ||
        ShapedType::isDynamic(op.getHeadDimV()))
      return rewriter.notifyMatchFailure(op, "needs a static head_dim");
    if (op.getHeadDim() > kMaxTileDim || op.getHeadDimV() > kMaxTileDim)
      return rewriter.notifyMatchFailure(op, "head_dim too large for the tiles");
    if (!hasUnitInnerStrides(op))
      return rewriter.notifyMatchFailure(op, "needs unit inner strides");
    if (plan.getTarget() == Target::sm90) {
      if (op->hasAttr("flashattn.sm90"))
        return rewriter.notifyMatchFailure(op, "already tiled into its kernel");
      std::string lacks = sm90TileUnsupported(op);
      if (!lacks.empty())
        return rewriter.notifyMatchFailure(op, lacks);
      tileIntoKernel(op, rewriter, denseEntry, packedEntry);
      return success();
    }
    AttentionTiler tiler(op, rewriter);
    if (!tiler.noOutputRows())
      tiler.build();
    tiler.deallocScratch();
    rewriter.eraseOp(op);
    return success();
  }
};

struct FlashAttnTilePass
    : public flashattn::impl::FlashAttnTileBase<FlashAttnTilePass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFlashAttnTilePatterns(patterns, denseEntry, packedEntry);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // Anything left could not be tiled: say why.
    WalkResult result = getOperation()->walk([&](AttentionOp op) {
      if (op->hasAttr("flashattn.sm90"))
        return WalkResult::advance();
      if (!op.getPlanAttr())
        op.emitError("flashattn-tile: no plan; run flashattn-plan first");
      else if (!isa<MemRefType>(op.getQ().getType()))
        op.emitError("flashattn-tile: needs the memref form; bufferize first "
                     "(one-shot-bufferize)");
      else if (op.getPlanAttr().getNumSplits() > 1 && !op.isSplitPartial())
        op.emitError("flashattn-tile: plan has num_splits > 1; run "
                     "flashattn-split-kv first");
      else if (!hasUnitInnerStrides(op))
        op.emitError("flashattn-tile: every operand needs a unit stride in "
                     "its last dimension (bufferize with "
                     "function-boundary-type-conversion=identity-layout-map, "
                     "or copy strided operands)");
      else if (ShapedType::isDynamic(op.getHeadDim()) ||
               ShapedType::isDynamic(op.getHeadDimV()))
        op.emitError("flashattn-tile: needs a static head_dim");
      else if (op.getPlanAttr().getTarget() == Target::sm90 &&
               !sm90TileUnsupported(op).empty())
        op.emitError("flashattn-tile: the sm90 kernel does not take ")
            << sm90TileUnsupported(op) << " yet";
      else
        op.emitError() << "flashattn-tile: head_dim " << op.getHeadDim()
                       << " / head_dim_v " << op.getHeadDimV()
                       << " exceeds the tiles' largest dimension, "
                       << kMaxTileDim;
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace

void mlir::flashattn::populateFlashAttnTilePatterns(RewritePatternSet &patterns,
                                                   bool denseEntry, bool packedEntry) {
  patterns.add<TileAttention>(patterns.getContext(), denseEntry, packedEntry);
}
