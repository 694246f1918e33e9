//===- WarpgroupKernel.h - flashattn-sm90-warpgroup's distribution -*- C++ -*-===//
//
// The warpgroup form of flashattn-tile's sm90 kernels (TilesToWarpgroup.cpp
// says what each tile op becomes): the kernel's arguments and views, the
// online-softmax state carried through loops and branches, and
// WarpgroupKernel, whose steps are spread over TilesToWarpgroup.cpp (the
// kernel, its loops and branches), WarpgroupLoads.cpp (TMA, row copies,
// mbarriers), WarpgroupCompute.cpp (wgmma, the fragment softmax, the
// turns) and WarpgroupStore.cpp (the epilogue).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_LIB_CONVERSION_FLASHATTNTOSM90_WARPGROUPKERNEL_H
#define FLASHATTN_LIB_CONVERSION_FLASHATTNTOSM90_WARPGROUPKERNEL_H

#include "KernelEmitter.h"
#include "Sm90Abi.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::flashattn::warpgroup {

using CmpI = arith::CmpIPredicate;
using CmpF = arith::CmpFPredicate;
using Values = KernelEmitter::Values;

/// The rows of one warpgroup (128 threads): a wgmma's M.
constexpr int64_t kRows = 64;
/// The named barriers of the consumers of a warp-specialized kernel: all
/// of them, and consumer g's turn at the tensor cores (kTurnBarrier + g, g
/// < 3).
constexpr int32_t kConsumerBarrier = 1;
constexpr int32_t kTurnBarrier = 2;
/// Warpgroup g's named barrier around its TMA store of O (its 128 threads).
constexpr int32_t kStoreBarrier = 5;

/// The kernel's arguments by their `flashattn.arg` name.
enum Arg { Q, K, V, Out, Lse, Table, Pages, NumArgs };
constexpr const char *kArgNames[] = {"q", "k", "v", "out", "lse", "tile_table", "page_table"};
/// Their ABI names inside the emitter: the pointer and the dims' prefix.
constexpr const char *kPtr[] = {"q", "k", "v", "o", "lse", "tile_table", "page_table"};
constexpr const char *kDims[] = {"q", "k", "v", "o", "l", "", ""};

/// A memref.subview of a kernel argument: its offsets (index values, one
/// per argument dimension) and the argument dimensions it keeps, in order.
struct View {
  Arg arg;
  Values offsets;
  SmallVector<int64_t> kept;
};

/// The warpgroup's online-softmax state: the mbarrier phases of the Q, K
/// and V tiles (bit s: slot s of a ring), the thread's two rows' max and
/// sum, O and S. A warp-specialized producer carries its phases only (of
/// the empty mbarriers). S's registers hold its scores divided by
/// `sScale` (> 0): tile_qk's scale stays out of them until the softmax
/// applies it in one fma a score, or a tile_map needs it (`sScale` is not
/// a carried value: 1 at every loop boundary; a branch keeps it when both
/// sides do). A producer copying rows also carries `pend`, the shared-memory
/// offset (i32) of the full mbarrier whose copies it has not arrived on yet
/// (0: none).
struct State {
  Value phase[3], m[2], l[2], o, s;
  bool producer = false;
  double sScale = 1.0;
  Value pend;
  Values values() const {
    if (producer && pend)
      return {phase[0], phase[1], phase[2], pend};
    if (producer)
      return {phase[0], phase[1], phase[2]};
    return {phase[0], phase[1], phase[2], m[0], m[1], l[0], l[1], o, s};
  }
  static State from(ValueRange v, bool producer) {
    if (producer)
      return {{v[0], v[1], v[2]}, {}, {}, Value(), Value(), true, 1.0,
              v.size() > 3 ? v[3] : Value()};
    return {{v[0], v[1], v[2]}, {v[3], v[4]}, {v[5], v[6]}, v[7], v[8], false, 1.0, Value()};
  }
};

class WarpgroupKernel {
public:
  /// `cg`: the plan's code-generation choices (the scheduler barrier,
  /// taken with a producer and 2 or 3 consumers; the intra-warpgroup
  /// overlap, the TMA store and the early Q release, with a producer).
  /// `merged`: the element type of the final out a split-KV partial
  /// kernel's fused merge writes (the op's flashattn.combine's; null:
  /// none).
  WarpgroupKernel(gpu::GPUFuncOp tiled, OpBuilder &b, PlanAttr plan, Type merged = {})
      : WarpgroupKernel(tiled, b, plan ? plan.getSm90() : Sm90CodegenAttr(),
                        plan && plan.getSchedule() == Schedule::lpt) {
    planFusedMerge = plan && plan.getSm90() && plan.getSm90().getFusedMerge();
    mergeT = merged;
  }
  /// `longestFirst`: the plan's lpt schedule (the work loop of a
  /// warp-specialized kernel without a tile table then takes its tiles
  /// from a counter).
  WarpgroupKernel(gpu::GPUFuncOp tiled, OpBuilder &b, Sm90CodegenAttr cg, bool longestFirst)
      : tiled(tiled), b(b), loc(tiled.getLoc()), w(b, tiled.getLoc()),
        planSchedulerBarrier(cg && cg.getSchedulerBarrier()),
        planOverlap(cg && cg.getIntraWgOverlap()),
        conditionalRescale(cg && cg.getConditionalRescale()),
        reduceChains(cg ? cg.getReduceChains() : 1),
        planTmaStore(cg && cg.getTmaStore()), planEarlyQ(cg && cg.getEarlyQRelease()),
        planPredicatedQ(cg && cg.getPredicatedQRelease()),
        planPrefetchQ(cg && cg.getPrefetchNextQ()),
        planRowCopies(cg && cg.getKvRowCopies()),
        planLongestFirst(longestFirst),
        rescaleUnderQK(cg && cg.getRescaleUnderQk()),
        planDrainIdle(cg && cg.getDrainIdleConsumers()),
        l2HintQ(cg ? cg.getL2HintQ() : L2Priority::normal),
        l2HintKV(cg ? cg.getL2HintKv() : L2Priority::normal) {}
  /// Builds the llvm.func before `tiled`; failure says why on the op.
  LogicalResult build();

private:
  LogicalResult shapes();
  LogicalResult arguments();
  LogicalResult tileShapes();
  LogicalResult pageShapes();
  LogicalResult elementTypes();
  LogicalResult sharedMemory();
  std::vector<AbiParam> params();
  void prologue();
  LogicalResult block(Block &src, State &st);
  LogicalResult op(Operation &op, State &st);
  LogicalResult loop(scf::ForOp loop, State &st);
  /// The persistent work loop over the tile counter (the plan's lpt
  /// schedule): the producer's, which takes each next tile and hands it
  /// over through shared memory, and the consumers', which read it.
  bool dynamicWorkLoops();
  bool isDynamicWorkLoop(scf::ForOp loop) const;
  LogicalResult producerWorkLoop(scf::ForOp loop, State &st);
  LogicalResult consumerWorkLoop(scf::ForOp loop, State &st);
  Value nextTile(Value total, Value grid);
  /// The key-block loop with block n - 1's P V issued after block n's
  /// Q K^T (FlashAttention-3's intra-warpgroup overlap).
  bool overlappable(scf::ForOp loop) const;
  LogicalResult overlappedLoop(scf::ForOp loop, State &st);
  Values deferredValues() const;
  void setDeferred(ValueRange v);
  Value flushDeferred(Value o);
  TileReleaseOp qReleaseAfter(scf::ForOp loop) const;
  void releaseQEarly();
  /// A consumer's own key blocks: the end of the blocks its 64 rows see
  /// (ownEnd), and the blocks past it waited for and released only
  /// (drains).
  Value ownEnd(scf::ForOp loop);
  /// Whether this consumer's 64 rows all lie past its Q tile's (i1), in a
  /// packed kernel with more than one consumer; else null.
  Value idleConsumer();
  /// Whether a consumer here may be idle (the plan's drain_idle_consumers
  /// in a packed warp-specialized kernel with more than one consumer).
  bool mayIdle() const;
  /// flashattn-tile's descending key-block order: the `top` of iteration
  /// j's block top - j (begin + end - 1), defined above the loop; else null.
  Value descendingTop(scf::ForOp loop) const;
  /// Whether the body computes its block from the iteration some other way.
  bool otherBlockOrder(scf::ForOp loop) const;
  /// This consumer's iterations [lo, hi) of the key-block loop (ownEnd's
  /// blocks; in a descending loop the ones past them come first).
  std::pair<Value, Value> ownIterations(scf::ForOp loop, Value lb);
  /// The blocks the consumer does not see, around its own `lo`, `hi`:
  /// called `before` its own iterations and after them, it emits them
  /// where the loop's order puts them.
  LogicalResult drains(scf::ForOp loop, Value lb, Value lo, Value hi, State &st, bool before);
  /// Whether the key-block loop runs under a causal mask or a right window
  /// (in flashattn-tile's ascending order, the masked blocks last).
  bool maskedLast(scf::ForOp loop) const;
  /// The loop's key_blocks where a consumer computes its own rows' blocks
  /// only (ownEnd; `withTurns`: where it masks its own rows' blocks only,
  /// ownMaskFrom), else null.
  KeyBlocksOp ownRange(scf::ForOp loop, bool withTurns = false) const;
  /// This consumer's first row of the tile (64 g past the tile's).
  Value ownFirstRow(KeyBlocksOp range);
  /// The steady blocks of an overlapped loop, split at its boundary
  /// branch's bounds (boundarySplit) into loops where that branch is known.
  struct BlockSplit {
    scf::IfOp branch;
    Value from;
    bool alsoBefore; ///< the branch also runs below a bound (a left window)
    Value top;       ///< descendingTop: the masked blocks come first
  };
  /// The split's bound `from` (floor(key_end(first row) / block_n)) at
  /// this consumer's first row, where it applies (ownRange, no left window).
  Value ownMaskFrom(scf::ForOp loop, const BlockSplit &split);
  std::optional<BlockSplit> boundarySplit(scf::ForOp loop) const;
  FailureOr<Values> steadyLoops(scf::ForOp loop, Value from, Value ub, Values inits);
  FailureOr<Values> steadyLoop(scf::ForOp loop, Value from, Value to, Value ub,
                               ValueRange inits);
  bool drainSkips(Operation &op) const;
  LogicalResult branch(scf::IfOp branch, State &st);
  LogicalResult tileLoad(TileLoadOp op, State &st);
  LogicalResult tileLoadPaged(TileLoadPagedOp op, State &st);
  void copyPagedRows(Arg role, Value slot, Value list, Value head, Value row0, Value rows,
                     State &st);
  /// The pending copies' arrive (the state's `pend`), after all but the
  /// `newer` most recent commit groups landed.
  void arrivePending(State &st, int32_t newer);
  void waitEmpty(Arg role, Value slot, State &st);
  /// With two Q buffers, ahead of a tile of more than kPrefetchMaxBlocks
  /// key blocks, the producer's wait for the tile before to release its Q.
  void awaitLongTileQ(Operation *load, State &st);
  static constexpr int64_t kPrefetchMaxBlocks = 16;
  void issuePagesByLane(Arg role, Value slot, Value first, Value valid, Value head, State &st);
  Values pagePanelCoords(Value head, Value page);
  LogicalResult ringRoles();
  void issueTma(Arg role, Value slot, int64_t parts, Value valid, State &st,
                function_ref<Values(int64_t, int64_t)> coords);
  /// The role's L2 policy (i64) for its TMA loads, made where it is used;
  /// none for a normal priority.
  Value l2PolicyFor(Arg role);
  void waitTile(Arg role, Value slot, Value rows, State &st);
  LogicalResult tileWait(TileWaitOp op, State &st);
  LogicalResult tileRelease(TileReleaseOp op);
  LogicalResult specialized(WarpSpecializeOp op, State &st);
  void tileQK(TileQKOp op, State &st);
  void tileMap(TileMapOp op, State &st);
  /// S's pending scale applied to its registers (sScale back to 1); the
  /// state's values with it applied, for a loop or branch boundary.
  void applyScale(State &st);
  Values carried(State &st);
  void tileSoftmax(State &st);
  /// O *= alpha (row half of each register), in the warps where a row's
  /// max moved with the plan's conditional rescale.
  Value rescaleO(Value o, Value alpha0, Value alpha1,
                 const std::function<void()> &first = nullptr);
  void tilePV(TilePVOp op, State &st);
  /// The consumers' turns at the tensor cores (FlashAttention-3's
  /// ping-pong): a wait for this warpgroup's turn, the hand-over to the
  /// other's; `when` (i1) guards each when given.
  void eachConsumer(const std::function<void(int64_t)> &body);
  void awaitTurn(Value when);
  void passTurn(Value when);
  /// Whether `op` runs in the first (last) iteration of the loop it is
  /// directly in (true outside loops).
  Value inFirstIteration(Operation *op);
  Value inLastIteration(Operation *op);
  LogicalResult tileStore(TileStoreOp op, State &st);
  /// O (times each row's `inv`) through shared memory and a TMA store.
  void storeThroughTma(const View &out, State &st, Value inv[2]);
  /// Packed row `i` (i32) of a tile's view of out as its local
  /// coordinates (i64) in out's view and in lse's.
  std::pair<Values, Values> rowCoords(const View &out, Value i);
  /// The fused split-KV merge after tile_store `op` wrote the tile's
  /// partial results (WarpgroupStore.cpp).
  LogicalResult fusedMerge(TileStoreOp op, const View &out, const View &lse, Value rows);
  void countMergeUnit(Value unit, Value flag);
  void mergeRows(const View &out, const View &lse, Value rows);
  void mergeUnit(const View &out, const View &lse, Value mu);
  /// The elements of one split's slice of a partial result (`a`: Out or
  /// Lse; i64).
  Value splitSlice(Arg a);
  /// O's registers r, r + 1 times `inv` (vector<2xf32>).
  Value normalizedPair(const State &st, int64_t r, Value inv);
  /// Whether this consumer thread is its warpgroup's first.
  Value firstOfWarpgroup() { return w.cmpi(CmpI::eq, w.remui(ctid, w.i32(128)), w.i32(0)); }
  /// Every consumer thread's arrive on Q's empty mbarrier (its slot of `tile`).
  void releaseQ(Value tile) { w.mbarrierArrive(barrierAt(Q, slotOf(tile), true)); }
  Value quadReduce(Value v, bool max) { return flashattn::quadReduce(w, v, max); }
  Value at(int64_t offset) { return w.gep(smem, w.sptrT, w.i8T, int32_t(offset)); }
  Value i32(Value index) { return arith::IndexCastOp::create(b, loc, w.i32T, index); }
  Value i64(Value index) { return arith::IndexCastOp::create(b, loc, w.i64T, index); }
  Value index(Value v) { return arith::IndexCastOp::create(b, loc, w.indexT, v); }
  /// The element index (i64) of a view's element at `local` (i64, one per
  /// kept dimension) in its argument, row-major over the launch's dims.
  Value linear(const View &v, ArrayRef<Value> local);
  /// The runtime's split-KV partial results are [S, B, Sq, H, D] and [S, B,
  /// H, Sq] in every layout: with varlen q the op's [S, Tq, H, D] and [S,
  /// H, Tq] come with a unit batch at dimension 1.
  bool unitBatch(Arg a) const { return partial && varlenQ && (a == Out || a == Lse); }
  static bool containsTileOps(Operation *op);
  LogicalResult tileOp(Operation &src, State &st);
  void clone(Operation &src);
  /// A tile_map's `col mod c` (c dividing 8) for fragment register r,
  /// mapped to its per-thread value; false for any other op.
  bool foldColumnRem(Operation *op, Value col, int64_t r);
  /// A tile_map's compares of a column's key with a row's key bound, per
  /// row (columnBounds) and per register (foldColumnCmp; false for any
  /// other op).
  void columnBounds(Block &body, ArrayRef<Operation *> elementOps);
  bool foldColumnCmp(Operation *op, int64_t r);
  /// The compares columnBounds found: the row's bound less the column's
  /// base (lim), and whether the key is the compare's left operand.
  llvm::DenseMap<Operation *, std::pair<Value, bool>> colBounds;
  /// The tile a load writes, a slot of a ring or not, and its ring (or
  /// itself); the slot (i32) of one in its ring (0 outside rings).
  static Value ringOf(Value tile);
  Value slotOf(Value tile);
  /// Shared memory of slot `slot` (i32) of the role's tiles, and its
  /// mbarrier: the full one (the copy landed) or the empty one (its
  /// consumers are done with it; warp-specialized kernels).
  Value tileAt(Arg role, Value slot);
  Value barrierAt(Arg role, Value slot, bool empty = false);
  Value barrierOffset(Arg role, Value slot, bool empty = false);
  /// Whether `tile` is one the role's loads write.
  bool hasRole(Value tile, Arg role) const;

  gpu::GPUFuncOp tiled;
  OpBuilder &b;
  Location loc;
  KernelEmitter w;
  KernelFunc P;
  IRMapping map;
  DenseMap<Value, View> views;
  DenseMap<Value, Arg> roles;  ///< the role (Q, K, V) of each tile loads write, by ring
  DenseMap<Value, Value> slots; ///< the slot (i32) of each ring slot's tile
  int64_t ringSize[3] = {1, 1, 1};
  Operation *lastIssue = nullptr; ///< the leader's branch of the last TMA issued
  Values pk; ///< P packed for tile_pv, valid after tile_softmax in one block
  Value mTile, lTile, accTile, sTile; ///< the scratch tiles the state stands for
  int64_t pageSize = 0;
  /// The plan's kv_row_copies (pages TMA boxes cannot take): every producer
  /// thread copies rows of K and V with cp.async.
  bool rowCopies = false;
  /// Pages smaller than a key block by TMA in a producer warpgroup, more
  /// than 2 boxes a block: its warp 0 runs the producer, lane l issuing the
  /// boxes of the block's page l (their page-table reads overlap).
  bool laneBoxes = false;
  /// tile_load_paged's `heads` (pack_gqa's kv heads per key block): a TMA
  /// box holds that many heads of a page's rows, heads fastest.
  int64_t kvHeads = 1;
  /// Pages of one kv head smaller than a key block by TMA: one box a whole
  /// page through the pool's page panel map (sm90PagePanels), K and V
  /// tiles in the page panel layout (kvLayout).
  bool panels = false;
  KVTileLayout kvLayout{0, 1024};
  /// pack_gqa: Q's loads, out's and lse's stores view G query heads of a kv
  /// head (packed row i G + g: position i of head g); 1 without.
  int64_t packG = 1;
  int64_t D = 0, qBytes = 0, kvBytes = 0, kOff = 0, vOff = 0, barOff = 0, bars = 3,
          nS = 0, nO = 0;
  /// Q's slots: 2 with the counter's tiles where they fit (the producer
  /// loads the next tile's Q while the consumers finish this one), the
  /// slot of the work loop's iteration (i32; null outside it or with one).
  int64_t qSlots = 1;
  Value qSlot;
  Value tileIndexAt(Value slot);
  /// S's columns and rows; the CTA's threads (128 a 64 rows, and the
  /// producer's 128 with warp specialization).
  int64_t kKeys = 0, rowsM = 0, threads = 0;
  /// A warp-specialized kernel; the producer's ops being emitted; the
  /// plan's choices and whether the turns are taken.
  bool specialize = false, inProducer = false, planSchedulerBarrier = false,
       planOverlap = false, scheduler = false, conditionalRescale = false;
  int64_t reduceChains = 1; ///< the plan's chains of a row's max and sum
  /// The plan's TMA store of O; taken (where O's tile fits beside the
  /// rings, in a warp-specialized kernel storing 16-bit dense rows): O's
  /// staging tile in shared memory.
  bool planTmaStore = false, tmaStore = false;
  int64_t oOff = 0;
  /// The release of Q right after an overlapped key-block loop
  /// (`earlyQ`): with the plan's early_q_release it moves into the loop's
  /// last block (releaseQEarly), so the producer loads the next tile's Q
  /// under the last softmax, P V and epilogue; without it, to right after
  /// the last block's Q K^T (under the last P V and the epilogue);
  /// `lastBlock` (i1): the block being emitted is the loop's last;
  /// `blocksRan`: the loop has a block (both valid while `earlyQ` is set).
  bool planEarlyQ = false, planPredicatedQ = false, planPrefetchQ = false,
       planRowCopies = false;
  /// The plan's fused_merge; taken in a split-KV partial kernel whose op
  /// merges into bf16 or f16 (`mergeT`): the merge's flag (i32) in shared
  /// memory at `mergeOff`.
  bool planFusedMerge = false, fused = false;
  Type mergeT;
  int64_t mergeOff = 0;
  TileReleaseOp earlyQ;
  Value lastBlock, blocksRan;
  /// How the block being emitted releases Q when it is the last (with
  /// early_q_release): a branch around the arrive; with the boundary split
  /// and the plan's predicated_q_release (steadyLoops), not at all in the
  /// first loop and a predicated arrive in the second; `qHeld` (i1): Q
  /// still held after both loops (the first had the last block).
  enum class QInLoop { branch, predicated, none } qInLoop = QInLoop::branch;
  Value qHeld;
  /// The plan's lpt schedule; taken by the work loop (dynamic): the tile
  /// index's place in shared memory; the producer's tile (i32, inside its
  /// work loop); the consumers' wait for Q that the work loop's top does
  /// (null without the counter).
  bool planLongestFirst = false, dynamic = false;
  int64_t tileOff = 0;
  Value workTile;
  Operation *topQWait = nullptr;
  /// Where the ops of an overlapped key-block loop are emitted: its first
  /// block (before the loop) or the loop; the previous block's P V waiting
  /// to issue (its V slot and packed P) there.
  enum class Overlap { none, first, steady } overlap = Overlap::none;
  /// A drain loop's body being emitted: its waits and releases only.
  bool draining = false;
  /// The rows of the consumers' Q tile (its tile_wait's), for idleConsumer.
  Value qRows;
  /// A steady loop's boundary branch and whether it runs there (null:
  /// the branch stays).
  scf::IfOp knownBranch;
  bool branchTaken = false;
  Value deferredSlot;
  Values deferredPk;
  /// With the plan's rescale_under_qk: O's rescale by the deferred block's
  /// alpha (both rows) waits for its P V, issued after the next Q K^T.
  bool rescaleUnderQK = false;
  /// The plan's drain_idle_consumers (idleConsumer).
  bool planDrainIdle = false;
  /// The plan's L2 eviction priorities of the TMA loads of Q and of K / V
  /// (l2PolicyFor).
  L2Priority l2HintQ, l2HintKV;
  Value deferredAlpha[2];
  int64_t consumerThreads = 0; ///< the threads of S's rows
  bool lse = false, f16 = false;
  Type etT, outT, sT, oT;
  /// ctid: the thread's index among the consumers (tid without warp
  /// specialization), which the fragment layout and the row copies use.
  Value smem, warpgroup, tid, ctid, leader, negInf, zeroF, waitTicks, row[2], col0, lr, table;
  Value args[NumArgs];
  bool varlenQ = false, varlenK = false, partial = false;
  /// Whether V's rows past a block's keys are zeroed after its wait.
  bool zeroVRows = true;
};

} // namespace mlir::flashattn::warpgroup

#endif
