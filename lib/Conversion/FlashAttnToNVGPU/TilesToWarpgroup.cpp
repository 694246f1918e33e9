//===- TilesToWarpgroup.cpp - flashattn-sm90-warpgroup --------------------===//
//
// Distributes flashattn-tile's sm90 kernels (a gpu.func written for one CTA
// over the tile ops) over one warpgroup of 128 threads per 64 rows of the
// score tile: the warpgroup form, every step in program order, the
// warpgroups in step (CTA barriers before TMA loads).
//
//   tile_load   a CTA barrier (the tile's previous reads are over), thread 0
//               loads the rows by TMA (cp.async.bulk.tensor, PTX ISA
//               9.7.9.25) onto the tile's mbarrier, every thread waits
//               (its phase a carried value); with `async` the wait is
//               the tile_wait's. A ring of K or V tiles (from
//               flashattn-sm90-pipeline-kv) has a slot and an mbarrier a
//               tile, the slots' phases bits of one carried value
//   tile_qk     wgmma.mma_async over shared-memory descriptors (PTX ISA
//               9.7.15.5), committed and waited for; S as the accumulator
//               fragment (an LLVM struct of 32 f32), times the scale
//   tile_map    its body cloned per fragment register at that register's
//               row and column (row ops once per row), the elements
//               outside [rows) x [cols) kept
//   tile_softmax the online softmax on the fragment: row max and sum by
//               quad shuffles, exp2, P packed in pairs, O rescaled
//   tile_pv     O += P V by flashattn.wgmma_rs (P in registers)
//   tile_store  out = O / l and lse through the view's place in the tensor
//
//   tile_release (warp-specialized) every consumer thread's arrive on the
//               tile's empty mbarrier
//
// A flashattn.warp_specialize (flashattn-sm90-warp-specialize) adds the
// producer's warpgroup: its thread 0 issues every TMA after a wait on the
// slot's empty mbarrier, and no CTA barrier is left. With the plan's
// scheduler_barrier the consumers (2 or 3) take turns at the tensor cores
// (named barriers); with its intra_wg_overlap a key-block loop issues
// block n - 1's P V after block n's Q K^T (overlappedLoop); under its lpt
// schedule the work loop takes tiles from a counter (producerWorkLoop);
// with its tma_store O leaves through shared memory (storeThroughTma).
//
// The online-softmax state (phases, the two rows' m and l, O, S) is carried
// through scf.for / scf.if as values. The result is an llvm.func with the
// kernel ABI (#flashattn.kernel_abi: q, k, v, out[, lse], their dims and
// tensor maps) the runtime launches; the op's flashattn.sm90 gets the ABI.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Conversion/Passes.h"

#include "flashattn/Conversion/FlashAttnToNVGPU/Sm90Kernel.h"

#include "KernelEmitter.h"
#include "Sm90Abi.h"
#include "Sm90Spec.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <functional>

namespace mlir::flashattn {
#define GEN_PASS_DEF_FLASHATTNSM90WARPGROUP
#include "flashattn/Conversion/Passes.h.inc"
} // namespace mlir::flashattn

using namespace mlir;
using namespace mlir::flashattn;

using CmpI = arith::CmpIPredicate;
using CmpF = arith::CmpFPredicate;
using Values = KernelEmitter::Values;

namespace {
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
/// Their ABI names inside the builder: the pointer and the dims' prefix.
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
  WarpgroupKernel(gpu::GPUFuncOp tiled, OpBuilder &b, PlanAttr plan)
      : WarpgroupKernel(tiled, b, plan ? plan.getSm90() : Sm90CodegenAttr(),
                        plan && plan.getSchedule() == Schedule::lpt) {}
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
        planRowCopies(cg && cg.getKvRowCopies()),
        planLongestFirst(longestFirst),
        rescaleUnderQK(cg && cg.getRescaleUnderQk()) {}
  /// Builds the llvm.func before `tiled`; failure says why on the op.
  LogicalResult build();

private:
  LogicalResult shapes();
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
  LogicalResult branch(scf::IfOp branch, State &st);
  LogicalResult tileLoad(TileLoadOp op, State &st);
  LogicalResult tileLoadPaged(TileLoadPagedOp op, State &st);
  void copyPagedRows(Arg role, Value slot, Value list, Value head, Value row0, Value rows,
                     State &st);
  /// The pending copies' arrive (the state's `pend`), after all but the
  /// `newer` most recent commit groups landed.
  void arrivePending(State &st, int32_t newer);
  void waitEmpty(Arg role, Value slot, State &st);
  void issuePagesByLane(Arg role, Value slot, Value first, Value valid, Value head, State &st);
  LogicalResult ringRoles();
  void issueTma(Arg role, Value slot, int64_t parts, Value valid, State &st,
                function_ref<Values(int64_t, int64_t)> coords);
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
  Value rescaleO(Value o, Value alpha0, Value alpha1);
  void tilePV(TilePVOp op, State &st);
  /// The consumers' turns at the tensor cores (FlashAttention-3's
  /// ping-pong): a wait for this warpgroup's turn, the hand-over to the
  /// other's; `when` (i1) guards each when given.
  void awaitTurn(Value when);
  void passTurn(Value when);
  /// Whether `op` runs in the first (last) iteration of the loop it is
  /// directly in (true outside loops).
  Value inFirstIteration(Operation *op);
  Value inLastIteration(Operation *op);
  LogicalResult tileStore(TileStoreOp op, State &st);
  /// O (times each row's `inv`) through shared memory and a TMA store.
  void storeThroughTma(const View &out, State &st, Value inv[2]);
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
  /// pack_gqa: Q's loads, out's and lse's stores view G query heads of a kv
  /// head (packed row i G + g: position i of head g); 1 without.
  int64_t packG = 1;
  int64_t D = 0, qBytes = 0, kvBytes = 0, kOff = 0, vOff = 0, barOff = 0, bars = 3,
          nS = 0, nO = 0;
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
  /// The plan's early_q_release: the release of Q right after an
  /// overlapped key-block loop (`earlyQ`) moves into the loop's last block
  /// (releaseQEarly), so the producer loads the next tile's Q under the
  /// last softmax, P V and epilogue; `lastBlock` (i1): the block being
  /// emitted is the loop's last; `blocksRan`: the loop has a block (both
  /// valid while `earlyQ` is set).
  bool planEarlyQ = false, planRowCopies = false;
  TileReleaseOp earlyQ;
  Value lastBlock, blocksRan;
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
  Value deferredSlot;
  Values deferredPk;
  /// With the plan's rescale_under_qk: O's rescale by the deferred block's
  /// alpha (both rows) waits for its P V, issued after the next Q K^T.
  bool rescaleUnderQK = false;
  Value deferredAlpha[2];
  int64_t consumerThreads = 0; ///< the threads of S's rows
  bool lse = false, f16 = false;
  Type etT, outT, sT, oT;
  /// ctid: the thread's index among the consumers (tid without warp
  /// specialization), which the fragment layout and the row copies use.
  Value smem, warpgroup, tid, ctid, leader, negInf, zeroF, waitTicks, row[2], col0, lr, table;
  Value args[NumArgs];
  bool varlenQ = false, varlenK = false, partial = false;
};

LogicalResult WarpgroupKernel::shapes() {
  for (unsigned i = 0; i < tiled.getNumArguments(); ++i) {
    auto name = tiled.getArgAttrOfType<StringAttr>(i, "flashattn.arg");
    const char *const *it =
        name ? llvm::find(kArgNames, name.getValue()) : std::end(kArgNames);
    if (it == std::end(kArgNames))
      return tiled.emitError("flashattn-sm90-warpgroup: argument ")
             << i << " of the tiled kernel has no flashattn.arg name it knows";
    args[it - std::begin(kArgNames)] = tiled.getArgument(i);
  }
  if (!args[Q] || !args[K] || !args[V] || !args[Out])
    return tiled.emitError("flashattn-sm90-warpgroup: the tiled kernel needs q, k, v and out");
  auto type = [&](Arg a) { return cast<MemRefType>(args[a].getType()); };
  for (Arg a : {Q, K, V, Out, Lse})
    if (args[a] && !type(a).getLayout().isIdentity())
      return tiled.emitError("flashattn-sm90-warpgroup: the kernel's tensors are contiguous "
                             "(identity layouts), got ")
             << type(a);
  varlenQ = type(Q).getRank() == 3;
  varlenK = type(K).getRank() == 3;
  lse = static_cast<bool>(args[Lse]);
  partial = type(Out).getRank() == type(Q).getRank() + 1;
  if (!args[Table] && (varlenQ || varlenK || args[Pages]))
    return tiled.emitError("flashattn-sm90-warpgroup: packed and paged layouts need the tile "
                           "table");
  // 64-row score tiles of one key block size, a multiple of 16 up to 256
  // (wgmma m64nNk16; P V takes the keys in k16 steps).
  WalkResult tiles = tiled.walk([&](TileQKOp qk) {
    auto s = cast<MemRefType>(qk.getS().getType());
    int64_t n = s.getDimSize(1);
    int64_t m = s.getDimSize(0);
    if (m % kRows || m > 256 || n % 16 || n > 256 || (kKeys && (n != kKeys || m != rowsM)))
      return WalkResult::interrupt();
    kKeys = n;
    rowsM = m;
    return WalkResult::advance();
  });
  if (tiles.wasInterrupted() || !kKeys)
    return tiled.emitError("flashattn-sm90-warpgroup: score tiles of one shape: a multiple of "
                           "64 rows (a warpgroup each) and of 16 keys, up to 256 each (plan "
                           "block-m=64 x consumers)");
  nS = kKeys / 2;
  consumerThreads = rowsM / kRows * 128;
  // pack_gqa: Q's TMA box is G heads x rowsM / G positions.
  WalkResult packs = tiled.walk([&](TileLoadOp load) {
    auto src = cast<MemRefType>(load.getSource().getType());
    if (src.getRank() != 3)
      return WalkResult::advance();
    packG = src.getDimSize(1);
    return rowsM % packG || packG > 256 ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (packs.wasInterrupted())
    return tiled.emitError("flashattn-sm90-warpgroup: packed Q tiles need G (")
           << packG << " query heads a kv head) dividing the tile's " << rowsM << " rows";
  specialize = tiled.walk([](WarpSpecializeOp) { return WalkResult::interrupt(); })
                   .wasInterrupted();
  threads = consumerThreads + (specialize ? 128 : 0);
  // Turns balance (N + 1 waits and hand-overs a consumer per loop of N
  // blocks) when every tile_qk and tile_pv sits directly in one loop.
  Operation *gemmLoop = nullptr;
  bool oneLoop = true;
  tiled.walk([&](Operation *op) {
    if (!isa<TileQKOp, TilePVOp>(op))
      return;
    Operation *parent = op->getParentOp();
    oneLoop &= isa<scf::ForOp>(parent) && (!gemmLoop || gemmLoop == parent);
    gemmLoop = parent;
  });
  int64_t consumers = rowsM / kRows;
  scheduler = planSchedulerBarrier && specialize && (consumers == 2 || consumers == 3) && oneLoop;
  if (args[Pages]) {
    // A key block inside one page, or a key block of whole pages of a
    // multiple of 8 keys, one TMA box each (8-row atoms keep the swizzle);
    // other pages by the plan's row copies, in a producer warpgroup.
    pageSize = type(K).getDimSize(1);
    rowCopies = planRowCopies && specialize;
    tiled.walk([&](TileLoadPagedOp load) { kvHeads = std::max<int64_t>(kvHeads, load.getHeads()); });
    int64_t boxRows = kvHeads * pageSize;
    // (Lanes for more than 2 boxes a block: 1.10-1.48x with 8 or 16 a
    // block; with 2, thread 0 alone was 0-5% faster.)
    laneBoxes = specialize && !rowCopies && pageSize < kKeys && kKeys / boxRows > 2;
    if (kvHeads > 1 && (rowCopies || pageSize >= kKeys || kKeys % boxRows || boxRows % 8))
      return tiled.emitError("flashattn-sm90-warpgroup: ")
             << kvHeads << " kv heads a key block need TMA boxes of " << kvHeads
             << " heads x a page's keys, a multiple of 8 rows dividing the key block (" << kKeys
             << "), got " << type(K);
    if (ShapedType::isDynamic(pageSize) ||
        (!rowCopies && pageSize % kKeys && (kKeys % boxRows || boxRows % 8))) {
      InFlightDiagnostic diag =
          tiled.emitError("flashattn-sm90-warpgroup: pages of a multiple of the key block (")
          << kKeys << ") or of 8 keys dividing it";
      return diag << ", or the plan's kv_row_copies with a producer warpgroup, got " << type(K);
    }
  }
  Type et = type(Q).getElementType();
  if (!et.isBF16() && !et.isF16())
    return tiled.emitError("flashattn-sm90-warpgroup: q must be bf16 or f16, got ") << et;
  f16 = et.isF16();
  etT = et;
  outT = type(Out).getElementType();
  D = type(Q).getDimSize(type(Q).getRank() - 1);
  if (D != 64 && D != 128 && D != 256)
    return tiled.emitError("flashattn-sm90-warpgroup: head_dim 64, 128 or 256, got ") << D;
  for (Arg a : {K, V, Out})
    if (type(a).getDimSize(type(a).getRank() - 1) != D)
      return tiled.emitError("flashattn-sm90-warpgroup: k, v and out need q's head_dim ")
             << D << " (head_dim_v = head_dim), got " << type(a);
  if (outT != et && !(partial && outT.isF32()))
    return tiled.emitError("flashattn-sm90-warpgroup: out in q's element type (f32 in the "
                           "split-KV partial form), got ")
           << outT;
  if (failed(ringRoles()))
    return failure();
  int64_t boxes = D / 64;
  qBytes = boxes * rowsM * 128;
  kvBytes = boxes * kKeys * 128;
  kOff = qBytes;
  vOff = kOff + ringSize[K] * kvBytes;
  oOff = vOff + ringSize[V] * kvBytes;
  bars = (1 + ringSize[K] + ringSize[V]) * (specialize ? 2 : 1);
  int64_t oBytes = boxes * rowsM * 128;
  auto outType = cast<MemRefType>(args[Out].getType());
  tmaStore = planTmaStore && specialize && !partial && !args[Table] && packG == 1 &&
             outType.getRank() == 4 && outT.getIntOrFloatBitWidth() == 16 &&
             oOff + oBytes + 8 * bars + 8 <= kSm90MaxSharedMemory;
  barOff = oOff + (tmaStore ? oBytes : 0);
  if (barOff + 8 * bars > kSm90MaxSharedMemory)
    return tiled.emitError("flashattn-sm90-warpgroup: rings of ")
           << ringSize[K] << " K and " << ringSize[V] << " V tiles at head_dim " << D
           << " need " << barOff + 8 * bars << " bytes of shared memory, more than "
           << kSm90MaxSharedMemory;
  // The counter's tiles without a tile table (whose entries the runtime
  // already orders longest first).
  dynamic = planLongestFirst && specialize && !args[Table] && ringSize[Q] == 1 &&
            !rowCopies && !laneBoxes && dynamicWorkLoops();
  tileOff = barOff + 8 * bars;
  if (dynamic && tileOff + 8 > kSm90MaxSharedMemory) {
    dynamic = false; // the static stride then (the index needs 8 bytes)
    topQWait = nullptr;
  }
  nO = D / 2;
  sT = w.structOf(nS, w.f32T);
  oT = w.structOf(nO, w.f32T);
  return success();
}

Value WarpgroupKernel::ringOf(Value tile) {
  if (auto sub = tile.getDefiningOp<memref::SubViewOp>())
    if (sub.getSource().getDefiningOp<memref::AllocaOp>())
      return sub.getSource();
  return tile;
}

// The role of every tile loads write (the argument they read), and the
// ring sizes: Q is a tile, K and V may be rings ([slots, 64, D]).
LogicalResult WarpgroupKernel::ringRoles() {
  WalkResult r = tiled.walk([&](Operation *op) {
    Value source, tile;
    if (auto load = dyn_cast<TileLoadOp>(op)) {
      auto sub = load.getSource().getDefiningOp<memref::SubViewOp>();
      source = sub ? sub.getSource() : Value();
      tile = load.getTile();
    } else if (auto load = dyn_cast<TileLoadPagedOp>(op)) {
      source = load.getPool();
      tile = load.getTile();
    } else {
      return WalkResult::advance();
    }
    const Value *which = llvm::find(args, source);
    if (!source || which == std::end(args) || which - std::begin(args) > V)
      return WalkResult::advance(); // tileLoad says why
    Arg role = Arg(which - std::begin(args));
    Value ring = ringOf(tile);
    auto type = cast<MemRefType>(ring.getType());
    int64_t n = type.getRank() == 3 ? type.getDimSize(0) : 1;
    auto [it, fresh] = roles.try_emplace(ring, role);
    if (it->second != role || (role == Q && n > 1)) {
      op->emitOpError("flashattn-sm90-warpgroup: a tile is loaded from one of q, k or v, and "
                      "only k and v tiles come in rings");
      return WalkResult::interrupt();
    }
    if (n > 32) { // the slots' phases are the bits of an i32
      op->emitOpError("flashattn-sm90-warpgroup: rings of at most 32 tiles, got ") << n;
      return WalkResult::interrupt();
    }
    ringSize[role] = std::max(ringSize[role], n);
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

Value WarpgroupKernel::slotOf(Value tile) {
  Value slot = slots.lookup(tile);
  return slot ? slot : w.i32(0);
}

bool WarpgroupKernel::hasRole(Value tile, Arg role) const {
  auto it = roles.find(ringOf(tile));
  return it != roles.end() && it->second == role;
}

Value WarpgroupKernel::tileAt(Arg role, Value slot) {
  int64_t base = role == Q ? 0 : role == K ? kOff : vOff;
  return w.gep(smem, w.sptrT, w.i8T, w.addi(w.i32(base), w.muli(slot, w.i32(kvBytes))));
}

Value WarpgroupKernel::barrierOffset(Arg role, Value slot, bool empty) {
  int64_t first = role == Q ? 0 : role == K ? 1 : 1 + ringSize[K];
  if (empty)
    first += 1 + ringSize[K] + ringSize[V];
  return w.addi(w.i32(barOff + 8 * first), w.muli(slot, w.i32(8)));
}

Value WarpgroupKernel::barrierAt(Arg role, Value slot, bool empty) {
  return w.gep(smem, w.sptrT, w.i8T, barrierOffset(role, slot, empty));
}

std::vector<AbiParam> WarpgroupKernel::params() {
  AbiBuilder abi{b.getContext(), {}};
  for (Arg a : {Q, K, V, Out, Lse})
    if (args[a])
      abi.ptr(kArgNames[a], kPtr[a]);
  for (Arg a : {Q, K, V, Out, Lse})
    if (args[a])
      abi.dims(kArgNames[a], kDims[a],
               cast<MemRefType>(args[a].getType()).getRank() + (unitBatch(a) ? 1 : 0));
  // Boxes of 64 columns (the 128-byte swizzle's extent) x 1 head x the
  // tile's rows (x 1 batch, without varlen).
  auto box = [](bool varlen, int64_t rows) {
    return varlen ? SmallVector<int64_t>{64, 1, rows} : SmallVector<int64_t>{64, 1, rows, 1};
  };
  if (packG > 1) {
    // pack_gqa: q viewed as [B, Sq, Hkv, G, D], G heads x rowsM / G
    // positions a box, which lands as packed rows i G + g.
    SmallVector<int64_t> packed{64, packG, 1, rowsM / packG, 1};
    if (varlenQ)
      packed.pop_back();
    abi.add(ParamKind::tma, "q", "q", 0, packed, packG);
  } else {
    abi.add(ParamKind::tma, "q", "q", 0, box(varlenQ, rowsM));
  }
  SmallVector<int64_t> kvBox = box(varlenK, kKeys);
  if (pageSize && pageSize < kKeys)
    kvBox[2] = pageSize; // a page a box (of kvHeads heads)
  kvBox[1] = kvHeads;
  abi.add(ParamKind::tma, "k", "k", 0, kvBox);
  abi.add(ParamKind::tma, "v", "v", 0, kvBox);
  if (tmaStore) // a warpgroup's 64 rows a box
    abi.add(ParamKind::tma, "out", "o", 0, box(false, kRows));
  if (args[Table]) {
    abi.scalar(ParamKind::tile_table, "tile_table");
    abi.add(ParamKind::tile_table_inline, "", "tile_table_inline", 0, {}, 0, false,
            kSm90InlineTableBytes);
  }
  if (args[Pages])
    abi.scalar(ParamKind::page_table, "page_table");
  if (dynamic)
    abi.scalar(ParamKind::tile_counter, "tile_counter");
  return abi.params;
}

void WarpgroupKernel::prologue() {
  tid = w.tid();
  negInf = w.negInf();
  zeroF = w.f32(0.0);
  waitTicks = w.i32(10000000);
  smem = LLVM::AddressOfOp::create(b, loc, w.sptrT, tiled.getName().str() + "_smem");
  leader = w.cmpi(CmpI::eq, tid, w.i32(0));
  // A full mbarrier completes on its one arrive (the TMA's expect_tx), an
  // empty one on every consumer thread's release.
  // With row copies K's and V's full mbarriers complete on the 128
  // producer threads' arrives.
  w.ifThen(leader, [&] {
    int64_t full = specialize ? bars / 2 : bars;
    for (int64_t i = 0; i < bars; ++i)
      w.mbarrierInit(at(barOff + 8 * i),
                     w.i32(i >= full ? consumerThreads : rowCopies && i > 0 ? 128 : 1));
    w.fenceProxyAsyncShared();
  });
  NVVM::Barrier0Op::create(b, loc);
  // Fragment layout of a wgmma m64nN accumulator: register r of thread t
  // holds row 16 (t / 32) + (t % 32) / 4 + 8 ((r / 2) % 2), column
  // 2 (t % 4) + 8 (r / 4) + r % 2 (t / 32 counting the warps of every
  // warpgroup: warpgroup g's rows start at 64 g), t and g counting the
  // consumers only.
  ctid = specialize ? w.subi(tid, w.i32(128)) : tid;
  Value warp = w.divui(ctid, w.i32(32)), lane = w.remui(ctid, w.i32(32));
  lr = w.remui(lane, w.i32(4));
  row[0] = w.addi(w.muli(warp, w.i32(16)), w.divui(lane, w.i32(4)));
  row[1] = w.addi(row[0], w.i32(8));
  // Warpgroup g computes rows [64 g, 64 g + 64) of S and O: its Q rows
  // start 64 g rows into each box of Q.
  warpgroup = w.divui(ctid, w.i32(128));
  col0 = w.muli(lr, w.i32(2));
  if (args[Table])
    table = tileTableAt(w, P);
}

Value WarpgroupKernel::linear(const View &v, ArrayRef<Value> local) {
  auto type = cast<MemRefType>(args[v.arg].getType());
  auto dim = [&](int64_t d) { return P[std::string(kDims[v.arg]) + "d" + std::to_string(d)]; };
  bool unit = unitBatch(v.arg);
  Value idx = w.i64(0);
  for (int64_t d = 0; d < type.getRank(); ++d) {
    Value pos = i64(v.offsets[d]);
    auto it = llvm::find(v.kept, d);
    if (it != v.kept.end())
      pos = w.addi(pos, local[it - v.kept.begin()]);
    idx = w.addi(w.muli(idx, dim(unit && d ? d + 1 : d)), pos);
    if (unit && d == 0)
      idx = w.muli(idx, dim(1)); // the unit batch, at 0
  }
  return idx;
}

/// A flashattn op that acts on tiles (the key-range ops are plain index
/// arithmetic, cloned as they are).
static bool isTileOp(Operation *op) {
  return op->getDialect() && isa<FlashAttnDialect>(op->getDialect()) &&
         !isa<KeyEndOp, KeyBeginOp, KeyBlocksOp>(op);
}

bool WarpgroupKernel::containsTileOps(Operation *root) {
  return root
      ->walk([](Operation *inner) {
        return isTileOp(inner) ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
}

// TMA the rows [row0, row0 + 64) of the view's tile into its shared-memory
// slot; rows past the tensor read as zero (the view's rows past `rows` are
// past its dimension in the dense layout).
LogicalResult WarpgroupKernel::tileLoad(TileLoadOp op, State &st) {
  auto it = views.find(op.getSource());
  if (it == views.end() || it->second.arg > V)
    return op.emitOpError("flashattn-sm90-warpgroup: loads views of q, k or v only");
  const View &v = it->second;
  int64_t last = int64_t(v.offsets.size()) - 1;
  bool packed = v.kept.size() == 3;
  if (packed && v.arg != Q)
    return op.emitOpError("flashattn-sm90-warpgroup: packed loads of q only");
  Value row0 = map.lookup(op.getRow0()), slot = slotOf(op.getTile());
  // Packed: the head coordinate splits into (0, kv head) and row0 is
  // position row0 / G (a multiple of G).
  issueTma(v.arg, slot, 1, Value(), st, [&](int64_t box, int64_t) {
    Values coords;
    for (int64_t d = last; d >= 0; --d) {
      Value c = i32(v.offsets[d]);
      if (d == last) {
        c = w.addi(c, w.i32(64 * box));
      } else if (d == v.kept[0]) {
        c = w.addi(c, packed ? w.divui(i32(row0), w.i32(packG)) : i32(row0));
      } else if (packed && d == v.kept[1]) {
        coords.push_back(w.i32(0));
        c = w.divui(c, w.i32(packG));
      }
      coords.push_back(c);
    }
    return coords;
  });
  if (!op.getAsync())
    waitTile(v.arg, slot, i32(map.lookup(op.getRows())), st);
  return success();
}

// Paged: key row r of the sequence is row r % page of page pages[r / page]:
// a key block inside one page (pages of a multiple of the key block), or
// of whole pages (8, 16, 32 keys) one box each (of the load's `heads` kv
// heads, heads fastest), the boxes past the block's rows not loaded (the
// list may end there), by lane with more than 2 a block; other pages by
// row copies.
LogicalResult WarpgroupKernel::tileLoadPaged(TileLoadPagedOp op, State &st) {
  auto pool = llvm::find(args, op.getPool());
  auto pages = views.find(op.getPages());
  if (pool == std::end(args) || (pool - std::begin(args) != K && pool - std::begin(args) != V) ||
      pages == views.end() || pages->second.arg != Pages)
    return op.emitOpError("flashattn-sm90-warpgroup: paged loads of k or v through the page "
                          "table only");
  Arg role = Arg(pool - std::begin(args));
  Value slot = slotOf(op.getTile());
  Value row0 = i32(map.lookup(op.getRow0())), ps = w.i32(pageSize);
  Value list = i32(pages->second.offsets[0]), head = i32(map.lookup(op.getHead()));
  Value rows = i32(map.lookup(op.getRows()));
  auto pageAt = [&](Value entry) {
    return w.load(w.i32T, w.gep(P["page_table"], w.gptrT, w.i32T, entry), true);
  };
  if (rowCopies) {
    copyPagedRows(role, slot, list, head, row0, rows, st);
    if (!op.getAsync())
      waitTile(role, slot, rows, st);
    return success();
  }
  if (pageSize >= kKeys) {
    Value page = pageAt(w.addi(list, w.divui(row0, ps)));
    Value inPage = w.remui(row0, ps);
    issueTma(role, slot, 1, Value(), st, [&](int64_t box, int64_t) {
      return Values{w.i32(64 * box), head, inPage, page};
    });
  } else {
    Value first = w.addi(list, w.divui(row0, ps));
    if (laneBoxes && inProducer) {
      issuePagesByLane(role, slot, first, w.ceildivui(rows, ps), head, st);
      if (!op.getAsync())
        waitTile(role, slot, rows, st);
      return success();
    }
    issueTma(role, slot, kKeys / (kvHeads * pageSize), w.ceildivui(rows, ps), st,
             [&](int64_t box, int64_t part) {
      return Values{w.i32(64 * box), head, w.i32(0), pageAt(w.addi(first, w.i32(part)))};
    });
  }
  if (!op.getAsync())
    waitTile(role, slot, rows, st);
  return success();
}

// A warp-specialized producer's wait until the consumers released the
// slot (its empty mbarrier's phase bit starts at 1: the first wait on a
// slot passes).
void WarpgroupKernel::waitEmpty(Arg role, Value slot, State &st) {
  Value &phase = st.phase[role];
  w.mbarrierWait(barrierAt(role, slot, true), w.andi(w.shrui(phase, slot), w.i32(1)),
                 waitTicks);
  phase = w.xori(phase, w.shli(w.i32(1), slot));
}

// A block of `valid` pages (of kvHeads heads a box), page p issued by lane
// p of the producer's warp 0 (FlashAttention-3's paged TMA): lane 0 sets
// the bytes the slot's full mbarrier expects, the warp syncs, each lane
// reads its page index and issues its D / 64 boxes. One lane a page, each
// behind its own page-table read, instead of one thread behind each read
// in turn.
void WarpgroupKernel::issuePagesByLane(Arg role, Value slot, Value first, Value valid,
                                       Value head, State &st) {
  waitEmpty(role, slot, st);
  int64_t parts = kKeys / (kvHeads * pageSize), partBytes = kKeys / parts * 128;
  Value lane = w.remui(tid, w.i32(32)), bar = barrierAt(role, slot), base = tileAt(role, slot);
  w.ifThen(leader, [&] { w.mbarrierExpectTx(bar, w.muli(valid, w.i32(D / 64 * partBytes))); });
  NVVM::SyncWarpOp::create(b, loc, w.i32(-1));
  Value mine = w.andi(w.cmpi(CmpI::ult, lane, w.i32(parts)), w.cmpi(CmpI::ult, lane, valid));
  w.ifThen(mine, [&] {
    Value page = w.load(w.i32T, w.gep(P["page_table"], w.gptrT, w.i32T, w.addi(first, lane)),
                        true);
    Value at = w.gep(base, w.sptrT, w.i8T, w.muli(lane, w.i32(partBytes)));
    for (int64_t box = 0; box < D / 64; ++box) {
      Value dst = w.addrspacecast(w.gep(at, w.sptrT, w.i8T, int32_t(box * kKeys * 128)), w.cptrT);
      w.tmaLoad(dst, P[std::string(kPtr[role]) + "map"], bar,
                {w.i32(64 * box), head, w.i32(0), page}, Value());
    }
  });
}

// Row copies (FlashAttention-3's paged path without TMA): thread t of
// the producer copies 16-byte chunk column c = t % (D / 8) of the slot's
// rows t / (D / 8) + i 128 / (D / 8) with cp.async (PTX ISA 9.7.9.3), into
// the 128-byte swizzled layout a TMA box makes (chunk c % 8 of row r at
// chunk (c % 8) ^ (r % 8) of box c / 8). Key row r is row r % page of page
// pages[r / page]; rows past `rows`, and a page outside the pool (a device
// block_table is not checked), read as zeros (source size 0: never memory
// outside k or v). The copies are one commit group; once they landed
// (cp.async.wait_group) every thread fences them for the async proxy that
// wgmma reads through and arrives on the slot's full mbarrier: when the
// next load's copies are issued (the state's `pend`; the producer's loops
// flush it at their exit), so that two loads are in flight, as
// FlashAttention-3's.
void WarpgroupKernel::copyPagedRows(Arg role, Value slot, Value list, Value head, Value row0,
                                    Value rows, State &st) {
  waitEmpty(role, slot, st);
  const int64_t chunks = D / 8, rowStep = 128 / chunks;
  Value ptid = w.remui(tid, w.i32(128));
  Value col = w.remui(ptid, w.i32(chunks)), firstRow = w.divui(ptid, w.i32(chunks));
  Value chunk = w.remui(col, w.i32(8));
  Value dst0 = w.gep(tileAt(role, slot), w.sptrT, w.i8T, w.muli(w.divui(col, w.i32(8)),
                                                                 w.i32(kKeys * 128)));
  auto e64 = [&](Value v) { return w.extui(v, w.i64T); };
  Value hkv = w.trunci(P[std::string(kDims[role]) + "d2"], w.i32T);
  Value poolPages = w.trunci(P[std::string(kDims[role]) + "d0"], w.i32T);
  Value colElem = w.addi(w.muli(e64(head), w.i64(D)), w.muli(e64(col), w.i64(8)));
  // Rows a thread copies, kKeys D / 1024, from the dims (a loop LLVM does
  // not unroll: the producer's 40 registers hold one copy's addresses).
  Value perThread = w.divui(w.muli(w.trunci(P[std::string(kDims[role]) + "d3"], w.i32T),
                                   w.i32(kKeys)),
                            w.i32(1024));
  Value ps = w.i32(pageSize);
  w.forLoop(w.i32(0), perThread, w.i32(1), [&](Value i) {
    Value r = w.addi(firstRow, w.muli(i, w.i32(rowStep)));
    Value real = w.cmpi(CmpI::slt, r, rows);
    // A row past `rows` reads the tile's first page (the list may end).
    Value key = w.addi(row0, w.select(real, r, w.i32(0)));
    Value page = w.load(w.i32T, w.gep(P["page_table"], w.gptrT, w.i32T,
                                      w.addi(list, w.divui(key, ps))), true);
    Value inPool = w.cmpi(CmpI::ult, page, poolPages);
    page = w.select(inPool, page, w.i32(0));
    Value poolRow = w.addi(w.muli(e64(page), w.i64(pageSize)), e64(w.remui(key, ps)));
    Value elem = w.addi(w.muli(w.muli(poolRow, e64(hkv)), w.i64(D)), colElem);
    Value src = w.gep(P[kPtr[role]], w.gptrT, w.i16T, elem);
    Value swizzled = w.xori(chunk, w.andi(r, w.i32(7)));
    Value dst = w.gep(dst0, w.sptrT, w.i8T,
                      w.addi(w.muli(r, w.i32(128)), w.muli(swizzled, w.i32(16))));
    Value bytes = w.select(w.andi(real, inPool), w.i32(16), w.i32(0));
    NVVM::CpAsyncOp::create(b, loc, dst, src, 16, NVVM::LoadCacheModifierKind::CG, bytes);
  });
  NVVM::CpAsyncCommitGroupOp::create(b, loc);
  arrivePending(st, 1);
  st.pend = barrierOffset(role, slot);
  // A ring of one slot cannot wait: the consumers release its V only
  // after the next K, whose arrive would wait for the next V's copies.
  if (ringSize[K] == 1 || ringSize[V] == 1)
    arrivePending(st, 0);
}

void WarpgroupKernel::arrivePending(State &st, int32_t newer) {
  w.ifThen(w.cmpi(CmpI::ne, st.pend, w.i32(0)), [&] {
    NVVM::CpAsyncWaitGroupOp::create(b, loc, newer);
    w.fenceProxyAsyncShared();
    w.mbarrierArrive(w.gep(smem, w.sptrT, w.i8T, st.pend));
  });
  st.pend = w.i32(0);
}

// A CTA barrier (the slot's previous reads are over), thread 0's TMA of
// the tile's D / 64 boxes (each in `parts` boxes of kKeys / parts rows,
// the first `valid` of them when given) onto the slot's mbarrier. In a
// warp-specialized producer the wait on the slot's empty mbarrier (by
// every producer thread that runs) stands for the barrier: its phase bit
// starts at 1, so the first wait on a slot passes.
void WarpgroupKernel::issueTma(Arg role, Value slot, int64_t parts, Value valid, State &st,
                               function_ref<Values(int64_t, int64_t)> coords) {
  int64_t boxBytes = (role == Q ? rowsM : kKeys) * 128, partBytes = kKeys / parts * 128;
  Value base = tileAt(role, slot), bar = barrierAt(role, slot);
  if (inProducer) {
    waitEmpty(role, slot, st);
    // The tile's index, released to the consumers by Q's arrive.
    if (role == Q && dynamic)
      w.store(workTile, at(tileOff));
  }
  // One barrier for loads issued back to back (K and V of a block).
  Block *here = b.getInsertionBlock();
  bool afterIssue = lastIssue && lastIssue->getBlock() == here &&
                    llvm::all_of(llvm::make_range(std::next(lastIssue->getIterator()),
                                                  b.getInsertionPoint()),
                                 [](Operation &o) { return isPure(&o); });
  if (!afterIssue && !inProducer)
    NVVM::Barrier0Op::create(b, loc);
  // (A producer with row copies runs on all its threads, one issuing boxes
  // by lane on its warp 0.)
  auto leaderOnly = [&](function_ref<void()> issue) {
    if (inProducer && !rowCopies && !laneBoxes)
      issue();
    else
      w.ifThen(leader, issue);
  };
  leaderOnly([&] {
    Value bytes = w.i32(role == Q ? qBytes : kvBytes);
    if (valid)
      bytes = w.muli(valid, w.i32(D / 64 * partBytes));
    w.mbarrierExpectTx(bar, bytes);
    for (int64_t part = 0; part < parts; ++part) {
      auto issue = [&] {
        for (int64_t box = 0; box < D / 64; ++box) {
          Value dst = w.addrspacecast(
              w.gep(base, w.sptrT, w.i8T, int32_t(box * boxBytes + part * partBytes)), w.cptrT);
          w.tmaLoad(dst, P[std::string(kPtr[role]) + "map"], bar, coords(box, part), Value());
        }
      };
      if (valid && part > 0)
        w.ifThen(w.cmpi(CmpI::slt, w.i32(part), valid), issue);
      else
        issue();
    }
  });
  lastIssue = &*std::prev(b.getInsertionPoint());
}

// Every thread's wait on the slot's mbarrier (the phase bit of the slot,
// flipped); then V's rows past `rows` (i32: the next sequence's, a cache's
// unused rows: maybe NaN, and 0 x NaN is NaN in P V) to zero; K's are
// left, every score they make being masked.
void WarpgroupKernel::waitTile(Arg role, Value slot, Value rows, State &st) {
  Value &phase = st.phase[role];
  w.mbarrierWait(barrierAt(role, slot), w.andi(w.shrui(phase, slot), w.i32(1)), waitTicks);
  phase = w.xori(phase, w.shli(w.i32(1), slot));
  // (With several kv heads a block, `rows` keys are rows x kvHeads rows.)
  if (role == V && kvHeads > 1)
    rows = w.muli(rows, w.i32(kvHeads));
  if (role == V)
    zeroTileRows(w, tileAt(V, slot), ctid, 0, w.maxsi(rows, w.i32(0)), kKeys, D,
                 consumerThreads, specialize ? kConsumerBarrier : 0);
}

LogicalResult WarpgroupKernel::tileWait(TileWaitOp op, State &st) {
  auto it = roles.find(ringOf(op.getTile()));
  if (it == roles.end() || (it->second == Q && !specialize))
    return op.emitOpError("flashattn-sm90-warpgroup: waits on a tile that loads write (k or "
                          "v, or q in a warp-specialized kernel)");
  if (op == topQWait) // done at the dynamic work loop's top
    return success();
  waitTile(it->second, slotOf(op.getTile()), i32(map.lookup(op.getRows())), st);
  return success();
}

// Every consumer thread arrives on the tile's empty mbarrier. Without warp
// specialization the CTA barrier before each load orders the reuse:
// nothing to do.
LogicalResult WarpgroupKernel::tileRelease(TileReleaseOp op) {
  auto it = roles.find(ringOf(op.getTile()));
  if (it == roles.end())
    return op.emitOpError("flashattn-sm90-warpgroup: releases a tile that loads write");
  // Q after an overlapped loop went back in its last block: here only
  // when it had none.
  if (op == earlyQ) {
    w.ifThen(w.xori(blocksRan, w.boolean(true)), [&] { releaseQ(op.getTile()); });
    earlyQ = {};
    lastBlock = blocksRan = Value();
    return success();
  }
  // An overlapped loop's V goes back after its P V (tileSoftmax, flush).
  if (specialize && !(overlap != Overlap::none && it->second == V))
    w.mbarrierArrive(barrierAt(it->second, slotOf(op.getTile()), true));
  return success();
}

// The producer's ops run on thread 0 of warpgroup 0 (the other producer
// threads only give their registers up; with row copies on all of them,
// with page boxes by lane on its warp 0, the TMAs but the lanes' page
// boxes on thread 0), the consumers' on warpgroups 1 and up;
// flashattn-lower-warp-specialize makes the branch.
LogicalResult WarpgroupKernel::specialized(WarpSpecializeOp src, State &st) {
  if (inProducer || src->getParentOp() != tiled)
    return src.emitOpError("flashattn-sm90-warpgroup: one warp_specialize, at the top of the "
                           "kernel");
  auto split = WarpSpecializeOp::create(b, loc, tid, src.getProducerRegs(),
                                        src.getConsumerRegs());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&split.getProducer().emplaceBlock());
  LogicalResult produced = success();
  auto produce = [&] {
    inProducer = true;
    Value none = w.i32(-1);
    State ps{{none, none, none}, {}, {}, Value(), Value(), true};
    if (rowCopies)
      ps.pend = w.i32(0);
    produced = block(src.getProducer().front(), ps);
    inProducer = false;
  };
  // Row copies: every producer thread copies (the TMAs stay thread 0's);
  // boxes by lane: warp 0.
  if (rowCopies)
    produce();
  else if (laneBoxes)
    w.ifThen(w.cmpi(CmpI::ult, tid, w.i32(32)), produce);
  else
    w.ifThen(leader, produce);
  if (failed(produced))
    return failure();
  b.setInsertionPointToStart(&split.getConsumers().emplaceBlock());
  if (scheduler)
    passTurn(w.cmpi(CmpI::eq, warpgroup, w.i32(rowsM / kRows - 1)));
  if (failed(block(src.getConsumers().front(), st)))
    return failure();
  // Shared memory outlives the last TMA store's reads.
  if (tmaStore)
    w.ifThen(firstOfWarpgroup(),
             [&] { NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, UnitAttr()); });
  return success();
}

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
  Value qAt = branches ? smem : w.gep(smem, w.sptrT, w.i8T, w.muli(warpgroup, w.i32(kRows * 128)));
  std::function<Values(int64_t)> from = [&](int64_t g) -> Values {
    auto qk = [&]() -> Values {
      NVVM::WgmmaFenceAlignedOp::create(b, loc);
      Value s = wgmmaQK(w, qAt, kAt, sT, branches ? g * kRows * 128 : 0, 0, rowsM, kKeys, D, f16);
      NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
      if (!steady) {
        NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
        return {s};
      }
      Value o = st.o;
      if (rescaleUnderQK) { // under Q K^T; the rescale wrote O: fence (PTX ISA 9.7.15.6.1)
        o = rescaleO(o, deferredAlpha[0], deferredAlpha[1]);
        NVVM::WgmmaFenceAlignedOp::create(b, loc);
      }
      o = wgmmaPV(w, tileAt(V, deferredSlot), oT, o, deferredPk, 0, kKeys, D, etT);
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

// The online softmax of one key block on the thread's fragment: the new
// row max (a max of -inf shifts by 0, so a row without keys stays 0),
// alpha = exp2(m_old - m_new), P = exp2(s - m_new) packed into pairs, l =
// l alpha + sum P, O *= alpha. With S's scale c pending, the max is taken
// on the raw scores (c > 0 keeps their order) and P = exp2(x c - m_new)
// is one fma a score (FlashAttention-2's). A row's max and sum run in the
// plan's reduce_chains chains.
void WarpgroupKernel::tileSoftmax(State &st) {
  Values x(nS), rowX[2];
  for (int64_t r = 0; r < nS; ++r) {
    x[r] = w.extractvalue(st.s, r);
    rowX[(r / 2) % 2].push_back(x[r]);
  }
  Value scale = st.sScale == 1.0 ? Value() : w.f32(st.sScale);
  Value alpha[2];
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
    Value shift = w.select(w.cmpf(CmpF::OEQ, mNew, negInf), zeroF, mNew);
    alpha[half] = w.intrinsic("llvm.nvvm.ex2.approx.ftz.f", w.subf(st.m[half], shift));
    Value negShift = scale ? arith::NegFOp::create(b, loc, shift).getResult() : Value();
    Values p;
    for (int64_t r = 0; r < nS; ++r) {
      if ((r / 2) % 2 != half)
        continue;
      Value e = scale ? w.fma(x[r], scale, negShift) : w.subf(x[r], shift);
      x[r] = w.intrinsic("llvm.nvvm.ex2.approx.ftz.f", e);
      p.push_back(x[r]);
    }
    Value sum = chainReduce(w, p, reduceChains, false);
    st.m[half] = mNew;
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
  // The previous block's P V (overlapped) is over before O moves: then its
  // V slot goes back to the producer.
  if (overlap == Overlap::steady) {
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
    w.mbarrierArrive(barrierAt(V, deferredSlot, true));
    releaseQEarly(); // no wgmma in flight here: a branch costs no registers
  }
  if (rescaleUnderQK && overlap != Overlap::none) { // with the deferred P V
    deferredAlpha[0] = alpha[0];
    deferredAlpha[1] = alpha[1];
    return;
  }
  st.o = rescaleO(st.o, alpha[0], alpha[1]);
}

Value WarpgroupKernel::rescaleO(Value o, Value alpha0, Value alpha1) {
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
  st.o = wgmmaPV(w, tileAt(V, slotOf(op.getV())), oT, st.o, pk, 0, kKeys, D, etT);
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
void WarpgroupKernel::awaitTurn(Value when) {
  auto sync = [&] {
    w.barrier(w.addi(w.i32(kTurnBarrier), warpgroup), w.i32(2 * 128));
  };
  when ? w.ifThen(when, sync) : sync();
}

void WarpgroupKernel::passTurn(Value when) {
  auto arrive = [&] {
    int64_t consumers = rowsM / kRows;
    Value next = consumers == 2 ? w.subi(w.i32(1), warpgroup)
                                : w.remui(w.addi(warpgroup, w.i32(1)), w.i32(consumers));
    w.barrierArrive(w.addi(w.i32(kTurnBarrier), next), w.i32(2 * 128));
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
  Value sync = w.addi(w.i32(kStoreBarrier), warpgroup), threads = w.i32(128);
  w.ifThen(elect, [&] { NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, b.getUnitAttr()); });
  w.barrier(sync, threads);
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
  w.barrier(sync, threads);
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

LogicalResult WarpgroupKernel::loop(scf::ForOp src, State &st) {
  if (src.getNumRegionIterArgs())
    return src.emitOpError("flashattn-sm90-warpgroup: loops of the tiled kernel carry no "
                           "values");
  if (isDynamicWorkLoop(src))
    return inProducer ? producerWorkLoop(src, st) : consumerWorkLoop(src, st);
  if (overlappable(src))
    return overlappedLoop(src, st);
  auto next = scf::ForOp::create(b, loc, map.lookup(src.getLowerBound()),
                                 map.lookup(src.getUpperBound()), map.lookup(src.getStep()),
                                 carried(st));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(next.getBody());
  map.map(src.getInductionVar(), next.getInductionVar());
  State inner = State::from(next.getRegionIterArgs(), st.producer);
  if (failed(block(*src.getBody(), inner)))
    return failure();
  scf::YieldOp::create(b, loc, carried(inner));
  st = State::from(next.getResults(), st.producer);
  // Row copies: the loop's last copies arrive at its exit (the consumers
  // may need them before they release what the producer waits on next).
  if (st.pend) {
    b.setInsertionPointAfter(next);
    arrivePending(st, 0);
  }
  return success();
}

// The work loop of a warp-specialized kernel (from gpu.block_id by
// gpu.grid_dim, at the top of the producer and of the consumers) whose
// consumers wait for Q directly in its body, under the lpt schedule: the
// dynamic scheduler of FlashAttention-3 (arXiv 2407.08608, section 3.1).
// A CTA's first tile is its block index, each next one the grid past a u32
// counter's atomic increment, so a CTA done early takes the next longest
// tile (flashattn-tile orders them longest first).
static bool isWorkLoop(scf::ForOp loop) {
  return isa<WarpSpecializeOp>(loop->getParentOp()) &&
         loop.getLowerBound().getDefiningOp<gpu::BlockIdOp>() &&
         loop.getStep().getDefiningOp<gpu::GridDimOp>();
}

// One work loop in each of the producer and the consumers, the consumers'
// one wait for Q directly in it (`topQWait`).
bool WarpgroupKernel::dynamicWorkLoops() {
  WarpSpecializeOp ws;
  tiled.walk([&](WarpSpecializeOp op) { ws = op; });
  auto loops = [](Region &r) {
    SmallVector<scf::ForOp> found;
    for (auto loop : r.front().getOps<scf::ForOp>())
      if (isWorkLoop(loop))
        found.push_back(loop);
    return found;
  };
  SmallVector<scf::ForOp> produced = loops(ws.getProducer()), consumed = loops(ws.getConsumers());
  if (produced.size() != 1 || consumed.size() != 1)
    return false;
  SmallVector<TileWaitOp> qWaits;
  consumed.front().walk([&](TileWaitOp wait) {
    if (hasRole(wait.getTile(), Q))
      qWaits.push_back(wait);
  });
  if (qWaits.size() != 1 || qWaits.front()->getParentOp() != consumed.front())
    return false;
  topQWait = qWaits.front();
  return true;
}

bool WarpgroupKernel::isDynamicWorkLoop(scf::ForOp src) const {
  return dynamic && isWorkLoop(src);
}

// The counter is read only with more tiles than CTAs (every tile is then
// not some CTA's first; the runtime zeroes it only then).
Value WarpgroupKernel::nextTile(Value total, Value grid) {
  return w.ifElse1(
      w.cmpi(CmpI::sgt, total, grid), w.i32T,
      [&] {
        Value got = LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::add, P["tile_counter"],
                                              w.i32(1), LLVM::AtomicOrdering::monotonic);
        return w.addi(got, grid);
      },
      [&] { return total; });
}

// The producer writes each tile's index into shared memory before Q's
// load arrives on its full mbarrier (a release the consumers' wait
// acquires), and after the last tile the index past it with a bare arrive:
// the consumers stop there.
LogicalResult WarpgroupKernel::producerWorkLoop(scf::ForOp src, State &st) {
  Value total = i32(map.lookup(src.getUpperBound())), grid = i32(map.lookup(src.getStep()));
  Values init{i32(map.lookup(src.getLowerBound()))};
  init.append(carried(st));
  LogicalResult ok = success();
  auto loop = scf::WhileOp::create(
      b, loc, TypeRange(ValueRange(init)), init,
      [&](OpBuilder &, Location, ValueRange a) {
        scf::ConditionOp::create(b, loc, w.cmpi(CmpI::slt, a[0], total), a);
      },
      [&](OpBuilder &, Location, ValueRange a) {
        workTile = a[0];
        map.map(src.getInductionVar(), index(a[0]));
        State in = State::from(a.drop_front(), true);
        ok = block(*src.getBody(), in);
        Values next{nextTile(total, grid)};
        next.append(carried(in));
        scf::YieldOp::create(b, loc, next);
      });
  workTile = Value();
  if (failed(ok))
    return failure();
  st = State::from(loop.getResults().drop_front(), true);
  Value slot = w.i32(0);
  w.mbarrierWait(barrierAt(Q, slot, true), w.andi(st.phase[Q], w.i32(1)), waitTicks);
  st.phase[Q] = w.xori(st.phase[Q], w.i32(1));
  w.store(loop.getResult(0), at(tileOff));
  w.mbarrierArrive(barrierAt(Q, slot));
  return success();
}

// Each iteration waits for Q, reads the tile's index (the same in every
// thread: shfl.sync idx tells ptxas) and stops past the last tile; the
// body's wait for Q is that one.
LogicalResult WarpgroupKernel::consumerWorkLoop(scf::ForOp src, State &st) {
  Value total = i32(map.lookup(src.getUpperBound()));
  Values init = carried(st);
  SmallVector<Type> types{w.i32T};
  for (Value v : init)
    types.push_back(v.getType());
  LogicalResult ok = success();
  auto loop = scf::WhileOp::create(
      b, loc, types, init,
      [&](OpBuilder &, Location, ValueRange a) {
        State in = State::from(a, false);
        waitTile(Q, w.i32(0), Value(), in);
        Value t = w.load(w.i32T, at(tileOff));
        t = w.shfl(NVVM::ShflKind::idx, w.i32(-1), t, w.i32(0), w.i32(31));
        Values v{t};
        v.append(in.values());
        scf::ConditionOp::create(b, loc, w.cmpi(CmpI::slt, t, total), v);
      },
      [&](OpBuilder &, Location, ValueRange a) {
        map.map(src.getInductionVar(), index(a[0]));
        State in = State::from(a.drop_front(), false);
        ok = block(*src.getBody(), in);
        scf::YieldOp::create(b, loc, carried(in));
      });
  if (failed(ok))
    return failure();
  st = State::from(loop.getResults().drop_front(), false);
  return success();
}

// A warp-specialized consumer's key-block loop whose body holds one
// tile_qk, then one tile_softmax, then one tile_pv (its tile_release of V
// after the P V); with two consumers, under the turns.
bool WarpgroupKernel::overlappable(scf::ForOp src) const {
  if (!planOverlap || !specialize || inProducer || overlap != Overlap::none)
    return false;
  // V's wait after the softmax (a wait before it would hold block n's V
  // while block n - 1's is not yet released) and its release after P V.
  int qk = 0, softmax = 0, pv = 0, vWaits = 0, vReleases = 0;
  bool ordered = true;
  for (Operation &o : src.getBody()->without_terminator()) {
    if (isa<scf::ForOp>(o) && containsTileOps(&o))
      return false;
    bool vWait = isa<TileWaitOp>(o) && hasRole(cast<TileWaitOp>(o).getTile(), V);
    bool vRelease = isa<TileReleaseOp>(o) && hasRole(cast<TileReleaseOp>(o).getTile(), V);
    qk += isa<TileQKOp>(o);
    softmax += isa<TileSoftmaxOp>(o);
    pv += isa<TilePVOp>(o);
    vWaits += vWait;
    vReleases += vRelease;
    ordered &= !isa<TileSoftmaxOp>(o) || qk == 1;
    ordered &= !vWait || softmax == 1;
    ordered &= !isa<TilePVOp>(o) || vWaits == 1;
    ordered &= !vRelease || pv == 1;
  }
  return ordered && qk == 1 && softmax == 1 && pv == 1 && vWaits == 1 && vReleases == 1;
}

Values WarpgroupKernel::deferredValues() const {
  Values v{deferredSlot};
  if (rescaleUnderQK)
    v.append({deferredAlpha[0], deferredAlpha[1]});
  v.append(deferredPk.begin(), deferredPk.end());
  return v;
}

void WarpgroupKernel::setDeferred(ValueRange v) {
  deferredSlot = v.front();
  v = v.drop_front();
  if (rescaleUnderQK) {
    deferredAlpha[0] = v[0];
    deferredAlpha[1] = v[1];
    v = v.drop_front(2);
  }
  deferredPk.assign(v.begin(), v.end());
}

// The deferred P V alone (a turn of its own), waited for, its V released.
Value WarpgroupKernel::flushDeferred(Value o) {
  if (scheduler)
    awaitTurn(Value());
  if (rescaleUnderQK)
    o = rescaleO(o, deferredAlpha[0], deferredAlpha[1]);
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  o = wgmmaPV(w, tileAt(V, deferredSlot), oT, o, deferredPk, 0, kKeys, D, etT);
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  if (scheduler)
    passTurn(Value());
  w.mbarrierArrive(barrierAt(V, deferredSlot, true));
  return o;
}

// Block begin before the loop (its P V deferred), blocks begin + 1 .. end
// in it (each issuing the previous block's P V after its Q K^T), the last
// P V after it; the deferred P V's slot and packed P are carried values.
LogicalResult WarpgroupKernel::overlappedLoop(scf::ForOp src, State &st) {
  Value lb = map.lookup(src.getLowerBound()), ub = map.lookup(src.getUpperBound());
  Value step = map.lookup(src.getStep());
  Value any = w.cmpi(CmpI::slt, lb, ub);
  int64_t npk = kKeys / 4;
  applyScale(st);
  earlyQ = planEarlyQ ? qReleaseAfter(src) : TileReleaseOp();
  blocksRan = any;
  // Without a block: the state and an idle deferred P V (slot 0, alpha 1,
  // P 0), whose types the carried values take.
  Values idle = st.values();
  idle.push_back(w.i32(0));
  if (rescaleUnderQK)
    idle.append(2, w.f32(1.0));
  idle.append(npk, w.i32(0));
  SmallVector<Type> types = llvm::to_vector(ValueRange(idle).getTypes());
  LogicalResult ok = success();
  auto none = [&] { return idle; };
  Values first = w.ifElse(
      any, types,
      [&]() -> Values {
        overlap = Overlap::first;
        map.map(src.getInductionVar(), lb);
        lastBlock = w.cmpi(CmpI::sge, w.addi(lb, step), ub);
        State in = st;
        ok = block(*src.getBody(), in);
        overlap = Overlap::none;
        Values v = carried(in);
        v.append(deferredValues());
        return v;
      },
      none);
  if (failed(ok))
    return failure();
  unsigned n = st.values().size();
  auto next = scf::ForOp::create(b, loc, w.addi(lb, step), ub, step, first);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(next.getBody());
    map.map(src.getInductionVar(), next.getInductionVar());
    State in = State::from(next.getRegionIterArgs().take_front(n), false);
    setDeferred(next.getRegionIterArgs().drop_front(n));
    lastBlock = w.cmpi(CmpI::sge, w.addi(next.getInductionVar(), step), ub);
    overlap = Overlap::steady;
    ok = block(*src.getBody(), in);
    overlap = Overlap::none;
    Values v = carried(in);
    v.append(deferredValues());
    scf::YieldOp::create(b, loc, v);
  }
  if (failed(ok))
    return failure();
  st = State::from(next.getResults().take_front(n), false);
  setDeferred(next.getResults().drop_front(n));
  st.o = w.ifElse1(any, oT, [&] { return flushDeferred(st.o); }, [&] { return st.o; });
  return success();
}

// In the overlapped loop's last block, Q's release (with the plan's
// early_q_release): after the first block's Q K^T, or after a later
// block's wait for the P V before it.
void WarpgroupKernel::releaseQEarly() {
  if (earlyQ)
    w.ifThen(lastBlock, [&] { releaseQ(earlyQ.getTile()); });
}

// The tile_release of Q next after `loop` in its block (past pure ops).
TileReleaseOp WarpgroupKernel::qReleaseAfter(scf::ForOp loop) const {
  for (Operation *o = loop->getNextNode(); o; o = o->getNextNode()) {
    if (auto release = dyn_cast<TileReleaseOp>(o))
      return hasRole(release.getTile(), Q) ? release : TileReleaseOp();
    if (!isPure(o) || o->getNumRegions())
      return {};
  }
  return {};
}

LogicalResult WarpgroupKernel::branch(scf::IfOp src, State &st) {
  if (src.getNumResults())
    return src.emitOpError("flashattn-sm90-warpgroup: branches of the tiled kernel yield "
                           "no values");
  Values in = st.values();
  auto next = scf::IfOp::create(b, loc, TypeRange(ValueRange(in)),
                                map.lookup(src.getCondition()), /*else=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(next.thenBlock());
  State then = st;
  if (failed(block(*src.thenBlock(), then)))
    return failure();
  b.setInsertionPointToStart(next.elseBlock());
  State other = st;
  if (src.elseBlock() && failed(block(*src.elseBlock(), other)))
    return failure();
  // S's pending scale passes the branch when both sides keep it (a
  // boundary mask); else both apply it.
  bool keep = then.sScale == other.sScale;
  auto yield = [&](Block *at, State &side) {
    b.setInsertionPointToEnd(at);
    scf::YieldOp::create(b, loc, keep ? side.values() : carried(side));
  };
  yield(next.thenBlock(), then);
  yield(next.elseBlock(), other);
  st = State::from(next.getResults(), st.producer);
  st.sScale = keep ? then.sScale : 1.0;
  return success();
}

LogicalResult WarpgroupKernel::block(Block &src, State &st) {
  for (Operation &inner : src.without_terminator())
    if (failed(op(inner, st)))
      return failure();
  return success();
}

LogicalResult WarpgroupKernel::op(Operation &src, State &st) {
  if (auto forOp = dyn_cast<scf::ForOp>(src); forOp && containsTileOps(forOp))
    return loop(forOp, st);
  if (auto ifOp = dyn_cast<scf::IfOp>(src); ifOp && containsTileOps(ifOp))
    return branch(ifOp, st);
  if (isa<memref::AllocaOp, memref::AllocOp, memref::DeallocOp>(src))
    return success(); // scratch tiles: registers and shared memory
  if (auto sub = dyn_cast<memref::SubViewOp>(src); sub && ringOf(sub.getResult()) != sub) {
    // A slot of a ring: [slot, 0, 0] [1, 64, D].
    SmallVector<OpFoldResult> offsets = sub.getMixedOffsets();
    if (!sub.hasUnitStride() || llvm::any_of(ArrayRef(offsets).drop_front(), [](auto o) {
          return getConstantIntValue(o) != 0;
        }))
      return sub.emitOpError("flashattn-sm90-warpgroup: a ring's slot is a whole [64, D] tile");
    OpFoldResult at = offsets.front();
    slots[sub.getResult()] = isa<Value>(at) ? i32(map.lookup(cast<Value>(at)))
                                            : w.i32(*getConstantIntValue(at));
    return success();
  }
  if (auto sub = dyn_cast<memref::SubViewOp>(src)) {
    auto arg = dyn_cast<BlockArgument>(sub.getSource());
    if (!arg || arg.getOwner()->getParentOp() != tiled || sub.getSource() == args[Table])
      return sub.emitOpError("flashattn-sm90-warpgroup: views of the kernel's tensors and page "
                             "lists only");
    auto which = llvm::find(args, sub.getSource());
    View v{Arg(which - std::begin(args)), {}, {}};
    for (OpFoldResult ofr : sub.getMixedOffsets())
      v.offsets.push_back(isa<Value>(ofr) ? map.lookup(cast<Value>(ofr))
                                          : Value(arith::ConstantIndexOp::create(
                                                b, loc, getConstantIntValue(ofr).value())));
    llvm::SmallBitVector dropped = sub.getDroppedDims();
    for (int64_t d = 0; d < sub.getSourceType().getRank(); ++d)
      if (!dropped.test(d))
        v.kept.push_back(d);
    views[sub.getResult()] = v;
    return success();
  }
  if (auto dim = dyn_cast<memref::DimOp>(src)) {
    auto arg = dyn_cast<BlockArgument>(dim.getSource());
    std::optional<int64_t> d = dim.getConstantIndex();
    const Value *which = llvm::find(args, dim.getSource());
    if (!arg || !d || which == std::end(args) || which - std::begin(args) > Lse)
      return dim.emitOpError("flashattn-sm90-warpgroup: dims of the kernel's tensors only");
    Arg a = Arg(which - std::begin(args));
    int64_t abiDim = unitBatch(a) && *d ? *d + 1 : *d;
    map.map(dim.getResult(), index(P[std::string(kDims[a]) + "d" + std::to_string(abiDim)]));
    return success();
  }
  if (auto load = dyn_cast<memref::LoadOp>(src)) {
    if (load.getMemRef() != args[Table])
      return load.emitOpError("flashattn-sm90-warpgroup: loads from the tile table only");
    Value at = i32(map.lookup(load.getIndices()[0]));
    map.map(load.getResult(), w.load(w.i32T, w.gep(table, w.ptrT, w.i32T, at), true));
    return success();
  }
  if (isa<gpu::BlockIdOp>(src)) {
    map.map(src.getResult(0), index(w.ctaid()));
    return success();
  }
  if (isa<gpu::GridDimOp>(src)) {
    map.map(src.getResult(0), index(w.nctaid()));
    return success();
  }
  if (isa<gpu::ThreadIdOp>(src)) {
    map.map(src.getResult(0), index(tid));
    return success();
  }
  if (auto split = dyn_cast<WarpSpecializeOp>(src))
    return specialized(split, st);
  if (isTileOp(&src))
    return tileOp(src, st);
  for (Value v : src.getOperands())
    if (isa<MemRefType>(v.getType()))
      return src.emitOpError("flashattn-sm90-warpgroup: cannot distribute this use of a memref");
  clone(src);
  return success();
}

// The tile ops. The online-softmax state lives in registers, so every op
// must act on the tiles tile_init and tile_qk name: the state (m, l, acc)
// and the scores (s).
LogicalResult WarpgroupKernel::tileOp(Operation &src, State &st) {
  auto same = [&](Value v, Value &role, StringRef what) {
    if (!role)
      role = v;
    if (v == role)
      return true;
    src.emitOpError("flashattn-sm90-warpgroup: acts on a tile other than the ")
        << what << " of tile_init / tile_qk (the state is in registers)";
    return false;
  };
  if (auto init = dyn_cast<TileInitOp>(src)) {
    if (!same(init.getM(), mTile, "row max") || !same(init.getL(), lTile, "row sum") ||
        !same(init.getAcc(), accTile, "accumulator"))
      return failure();
    st.m[0] = st.m[1] = negInf;
    st.l[0] = st.l[1] = zeroF;
    st.o = w.undef(oT);
    for (int64_t r = 0; r < nO; ++r)
      st.o = w.insertvalue(zeroF, st.o, r);
    return success();
  }
  if (auto load = dyn_cast<TileLoadOp>(src))
    return tileLoad(load, st);
  if (auto load = dyn_cast<TileLoadPagedOp>(src))
    return tileLoadPaged(load, st);
  if (auto wait = dyn_cast<TileWaitOp>(src))
    return tileWait(wait, st);
  if (auto release = dyn_cast<TileReleaseOp>(src))
    return tileRelease(release);
  if (auto qk = dyn_cast<TileQKOp>(src)) {
    if (!same(qk.getS(), sTile, "scores"))
      return failure();
    if (!hasRole(qk.getQ(), Q) || !hasRole(qk.getK(), K))
      return src.emitOpError("flashattn-sm90-warpgroup: tile_qk reads the tiles loaded from q "
                             "and k");
    tileQK(qk, st);
    return success();
  }
  if (auto map = dyn_cast<TileMapOp>(src)) {
    if (!same(map.getS(), sTile, "scores"))
      return failure();
    tileMap(map, st);
    return success();
  }
  if (auto softmax = dyn_cast<TileSoftmaxOp>(src)) {
    if (!same(softmax.getS(), sTile, "scores") || !same(softmax.getM(), mTile, "row max") ||
        !same(softmax.getL(), lTile, "row sum") ||
        !same(softmax.getAcc(), accTile, "accumulator"))
      return failure();
    tileSoftmax(st);
    return success();
  }
  if (auto pv = dyn_cast<TilePVOp>(src)) {
    if (!same(pv.getP(), sTile, "scores") || !same(pv.getAcc(), accTile, "accumulator"))
      return failure();
    if (!hasRole(pv.getV(), V))
      return src.emitOpError("flashattn-sm90-warpgroup: tile_pv reads a tile loaded from v");
    if (pk.empty())
      return src.emitOpError("flashattn-sm90-warpgroup: tile_pv needs the tile_softmax of "
                             "its block before it");
    tilePV(pv, st);
    pk.clear();
    return success();
  }
  if (auto store = dyn_cast<TileStoreOp>(src)) {
    if (!same(store.getAcc(), accTile, "accumulator") || !same(store.getM(), mTile, "row max") ||
        !same(store.getL(), lTile, "row sum"))
      return failure();
    return tileStore(store, st);
  }
  return src.emitOpError("flashattn-sm90-warpgroup: no warpgroup form for this op");
}

// math.tanh as tanh.approx.f32 (softcap); the rest as it is.
void WarpgroupKernel::clone(Operation &src) {
  if (auto tanh = dyn_cast<math::TanhOp>(src))
    map.map(tanh.getResult(), softcapTanh(w, map.lookup(tanh.getOperand())));
  else
    b.clone(src, map);
}

LogicalResult WarpgroupKernel::build() {
  if (failed(shapes()))
    return failure();
  std::string name = tiled.getName().str();
  declareKernelGlobals(w, name, false, false);
  OpBuilder::InsertionGuard guard(b);
  // Warp-specialized: one CTA an SM, whose registers setmaxnreg shares out.
  P = buildKernelFunc(w, name + "_wg", params(), threads, tileOff + (dynamic ? 8 : 0),
                      /*minCtas=*/specialize);
  prologue();
  State st{{w.i32(0), w.i32(0), w.i32(0)}, {negInf, negInf}, {zeroF, zeroF}, w.undef(oT),
           w.undef(sT)};
  if (failed(block(tiled.getBody().front(), st))) {
    P.func.erase();
    return failure();
  }
  LLVM::ReturnOp::create(b, loc, ValueRange{});
  return success();
}

struct FlashAttnSm90WarpgroupPass
    : public flashattn::impl::FlashAttnSm90WarpgroupBase<FlashAttnSm90WarpgroupPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUFuncOp> kernels;
    module.walk([&](gpu::GPUFuncOp f) {
      if (f.isKernel())
        kernels.push_back(f);
    });
    SetVector<Operation *> described;
    for (gpu::GPUFuncOp tiled : kernels) {
      if (failed(checkOps(module, tiled)))
        return signalPassFailure();
      OpBuilder b(tiled);
      if (failed(WarpgroupKernel(tiled, b, plannedPlan(module, tiled)).build()))
        return signalPassFailure();
      auto kernels = tiled->getParentOfType<gpu::GPUModuleOp>();
      std::string name = tiled.getName().str();
      tiled.erase();
      kernels.lookupSymbol<LLVM::LLVMFuncOp>(name + "_wg").setSymName(name);
      module.walk([&](AttentionOp op) {
        if (op.namesSm90Attention(kernels.getSymNameAttr(), b.getStringAttr(name)))
          described.insert(op);
      });
    }
    for (Operation *op : described)
      if (failed(describe(cast<AttentionOp>(op))))
        return signalPassFailure();
  }

  /// The plan of the op naming `tiled` (its kernel or a twin);
  /// null when it has none.
  static PlanAttr plannedPlan(ModuleOp module, gpu::GPUFuncOp tiled) {
    auto kernels = tiled->getParentOfType<gpu::GPUModuleOp>();
    return planOfSm90Kernel(module, kernels.getSymNameAttr(), tiled.getNameAttr());
  }

  /// The ops naming `tiled`'s kernel; an error on the first the sm90
  /// kernels cannot take (element types, head dims, regions).
  LogicalResult checkOps(ModuleOp module, gpu::GPUFuncOp tiled) {
    auto kernels = tiled->getParentOfType<gpu::GPUModuleOp>();
    WalkResult r = module.walk([&](AttentionOp op) {
      if (!op.namesSm90Attention(kernels.getSymNameAttr(), tiled.getNameAttr()))
        return WalkResult::advance();
      std::string why = sm90OperandsUnsupported(op);
      if (why.empty())
        return WalkResult::advance();
      op.emitError("flashattn-sm90-warpgroup: ") << why;
      return WalkResult::interrupt();
    });
    return failure(r.wasInterrupted());
  }

  /// The op gets the ABIs of its attention kernels (the kernel, the dense
  /// entry, the twins); a split-KV partial op's flashattn.combine gets its
  /// merge kernel, `<kernel>_combine`, and an appending op its copy kernel,
  /// `<kernel>_append`, in the same module.
  LogicalResult describe(AttentionOp op) {
    MLIRContext *ctx = op.getContext();
    auto e = op->getAttrOfType<Sm90EntriesAttr>("flashattn.sm90");
    auto kernels = SymbolTable::lookupNearestSymbolFrom<gpu::GPUModuleOp>(
        op, FlatSymbolRefAttr::get(e.getKernel().getRootReference()));
    SmallVector<NamedAttribute> abis;
    auto abiOf = [&](StringRef name) {
      auto fn = kernels.lookupSymbol<LLVM::LLVMFuncOp>(name);
      abis.push_back(NamedAttribute(fn.getSymNameAttr(), fn->getAttr("flashattn.abi")));
    };
    for (const std::string &name : Sm90EntriesAttr::entryNames(
             e.getKernel(), e.getDense(), nullptr, nullptr, e.getPackedGroups(),
             e.getKvHeadsPerBlock()))
      abiOf(name);
    StringRef kernel = e.getKernel().getLeafReference();
    // An entry beside the kernels: `<kernel><suffix>`, built at the end of
    // the module; its ABI joins the op's.
    auto entry = [&](StringRef suffix, function_ref<void(OpBuilder &, StringRef)> build) {
      std::string name = (kernel + suffix).str();
      OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
      build(b, name);
      abiOf(name);
      return SymbolRefAttr::get(kernels.getSymNameAttr(), {FlatSymbolRefAttr::get(ctx, name)});
    };
    SymbolRefAttr combineRef;
    CombineOp combine = op.getPartialCombine();
    if (op.isSplitPartial() && !combine)
      return op.emitError("flashattn-sm90-warpgroup: the split-KV partial results need a "
                          "flashattn.combine (memref form) reading them");
    if (combine) {
      Type merged = cast<ShapedType>(combine.getOut().getType()).getElementType();
      if (!merged.isBF16() && !merged.isF16())
        return combine.emitError("flashattn-sm90-warpgroup: the sm90 combine writes bf16 or "
                                 "f16, got ")
               << merged;
      combineRef = entry("_combine", [&](OpBuilder &b, StringRef name) {
        Sm90CombineSpec spec;
        spec.name = name.str();
        spec.f16 = merged.isF16();
        spec.lse = static_cast<bool>(combine.getLse());
        buildSm90CombineKernel(b, combine.getLoc(), spec);
      });
      combine->setAttr("flashattn.sm90", Sm90EntriesAttr::get(ctx, combineRef, nullptr, nullptr,
                                                              nullptr, 0, 1, false, nullptr));
    }
    // kv-cache append: the copy kernel, launched first.
    SymbolRefAttr appendRef;
    if (op.hasAppend())
      appendRef = entry("_append", [&](OpBuilder &b, StringRef name) {
        Sm90AppendSpec spec;
        spec.name = name.str();
        spec.paged = op.isPaged();
        buildSm90AppendKernel(b, op.getLoc(), spec);
      });
    op->setAttr("flashattn.sm90",
                Sm90EntriesAttr::get(ctx, e.getKernel(), e.getDense(), appendRef, combineRef,
                                     e.getPackedGroups(), e.getKvHeadsPerBlock(),
                                     e.getKvRowCopies(), DictionaryAttr::get(ctx, abis)));
    return success();
  }
};
} // namespace
