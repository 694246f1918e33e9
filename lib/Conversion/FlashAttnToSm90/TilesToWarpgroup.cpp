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

#include "GridKernels.h"
#include "WarpgroupKernel.h"

#include "flashattn/Conversion/FlashAttnToSm90/Sm90Kernel.h"
#include "Sm90Checks.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/SmallBitVector.h"

namespace mlir::flashattn {
#define GEN_PASS_DEF_FLASHATTNSM90WARPGROUP
#include "flashattn/Conversion/Passes.h.inc"
} // namespace mlir::flashattn

using namespace mlir;
using namespace mlir::flashattn;

namespace mlir::flashattn::warpgroup {

// The kernel's shapes and the choices they decide: its arguments, tiles,
// pages and element types, then where each buffer sits in shared memory.
LogicalResult WarpgroupKernel::shapes() {
  if (failed(arguments()) || failed(tileShapes()) || (args[Pages] && failed(pageShapes())) ||
      failed(elementTypes()) || failed(ringRoles()))
    return failure();
  return sharedMemory();
}

// The arguments by their flashattn.arg names, and the layouts they say.
LogicalResult WarpgroupKernel::arguments() {
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
  return success();
}

// The score tiles' rows and keys, pack_gqa's groups, the warpgroups and
// whether the consumers take turns.
LogicalResult WarpgroupKernel::tileShapes() {
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
  // V's rows past a block's keys: with the tile table they may be the next
  // sequence's or a cache's unused rows, zeroed after V's wait; in the dense
  // layout they are past the tensor's sequence dimension, which a tiled-mode
  // TMA load writes as zeros (PTX ISA, "Tensors": out-of-bound elements; the
  // runtime's maps take CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), so the zeroing
  // goes, except in the 3-consumer kernels, which measured 1-5% slower
  // without its branch (never taken at block-aligned lengths) while the
  // 2-consumer ones ran 2-4.5% faster (ptxas's schedule).
  zeroVRows = args[Table] || rowsM / kRows == 3;
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
  return success();
}

// Paged K / V: how a key block's pages are loaded.
LogicalResult WarpgroupKernel::pageShapes() {
  auto type = [&](Arg a) { return cast<MemRefType>(args[a].getType()); };
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
  // (Page panels: 1.13-1.30x in decode over pages of 8 against a box of
  // 64 columns a page.)
  panels = sm90PagePanels(pageSize, kKeys, kvHeads, rowCopies);
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
  return success();
}

// The element types and the head dim.
LogicalResult WarpgroupKernel::elementTypes() {
  auto type = [&](Arg a) { return cast<MemRefType>(args[a].getType()); };
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
  return success();
}

// Where Q, the K / V rings, O's staging tile, the mbarriers, the tile
// index and the merge flag sit in shared memory, and the choices that take
// room there (the TMA store, the counter's tiles, the fused merge).
LogicalResult WarpgroupKernel::sharedMemory() {
  kvLayout = panels ? KVTileLayout::pagePanels(D) : KVTileLayout::dense(kKeys);
  int64_t boxes = D / 64;
  qBytes = boxes * rowsM * 128;
  kvBytes = boxes * kKeys * 128;
  auto place = [&](int64_t slots) {
    qSlots = slots;
    kOff = slots * qBytes;
    vOff = kOff + ringSize[K] * kvBytes;
    oOff = vOff + ringSize[V] * kvBytes;
    bars = (slots + ringSize[K] + ringSize[V]) * (specialize ? 2 : 1);
  };
  // Q slots, O staged and the bytes after the mbarriers fit.
  auto fits = [&](int64_t slots, bool stagedO, int64_t tail) {
    return sm90SharedMemoryBytes(D, rowsM, kKeys, slots, ringSize[K], ringSize[V], stagedO,
                                 specialize) +
               tail <=
           kSm90MaxSharedMemory;
  };
  place(1);
  int64_t oBytes = boxes * rowsM * 128;
  auto outType = cast<MemRefType>(args[Out].getType());
  tmaStore = planTmaStore && specialize && !partial && !args[Table] && packG == 1 &&
             outType.getRank() == 4 && outT.getIntOrFloatBitWidth() == 16 &&
             fits(1, true, 8);
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
  // The plan's prefetch_next_q: a second Q buffer where it fits beside the
  // rest (O's staging tile kept).
  if (dynamic && planPrefetchQ) {
    place(fits(2, tmaStore, 16) ? 2 : 1);
    barOff = oOff + (tmaStore ? oBytes : 0);
  }
  tileOff = barOff + 8 * bars;
  if (dynamic && tileOff + 8 > kSm90MaxSharedMemory) {
    dynamic = false; // the static stride then (the index needs 8 bytes)
    topQWait = nullptr;
  }
  // The fused merge's flag after the tile index; without room for it the
  // runtime's combine kernel merges.
  mergeOff = tileOff + (dynamic ? 8 : 0);
  fused = planFusedMerge && partial && lse && mergeT && (mergeT.isBF16() || mergeT.isF16()) &&
          mergeOff + 8 <= kSm90MaxSharedMemory;
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
  if (qSlot && hasRole(tile, Q))
    return qSlot;
  Value slot = slots.lookup(tile);
  return slot ? slot : w.i32(0);
}

Value WarpgroupKernel::tileIndexAt(Value slot) {
  if (qSlots == 1)
    return at(tileOff);
  return w.gep(smem, w.sptrT, w.i8T, w.addi(w.i32(tileOff), w.muli(slot, w.i32(4))));
}

bool WarpgroupKernel::hasRole(Value tile, Arg role) const {
  auto it = roles.find(ringOf(tile));
  return it != roles.end() && it->second == role;
}

Value WarpgroupKernel::tileAt(Arg role, Value slot) {
  int64_t base = role == Q ? 0 : role == K ? kOff : vOff;
  return w.gep(smem, w.sptrT, w.i8T,
               w.addi(w.i32(base), w.muli(slot, w.i32(role == Q ? qBytes : kvBytes))));
}

Value WarpgroupKernel::barrierOffset(Arg role, Value slot, bool empty) {
  int64_t first = role == Q ? 0 : role == K ? qSlots : qSlots + ringSize[K];
  if (empty)
    first += qSlots + ringSize[K] + ringSize[V];
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
  if (panels) // {64 columns, 8 rows, D / 64 panels, page / 8 row groups, 1 page}
    kvBox = {64, 8, D / 64, pageSize / 8, 1};
  abi.add(ParamKind::tma, "k", "k", 0, kvBox, 0, panels);
  abi.add(ParamKind::tma, "v", "v", 0, kvBox, 0, panels);
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
  // The fused merge: the final out and lse (null: none), and a counter
  // per tile (null: no merge, the combine kernel runs).
  if (fused) {
    abi.scalar(ParamKind::merge_out, "merge_out");
    abi.scalar(ParamKind::merge_lse, "merge_lse");
    abi.scalar(ParamKind::merge_counters, "merge_counters");
  }
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
    // The tensor maps (kernel parameters) into the tensormap cache before
    // the first copy needs them (PTX ISA, prefetch.tensormap), as
    // FlashAttention-3's producer does at entry: a short launch's first
    // TMA copy does not wait for its descriptor's fetch.
    for (const char *map : {"qmap", "kmap", "vmap", "omap"})
      if (P.args.count(map))
        NVVM::PrefetchOp::create(b, loc, {}, {}, P[map], Value(), /*tensormap=*/true,
                                 /*uniform=*/false, /*in_param_space=*/true);
    int64_t full = specialize ? bars / 2 : bars;
    for (int64_t i = 0; i < bars; ++i)
      w.mbarrierInit(at(barOff + 8 * i),
                     w.i32(i >= full ? consumerThreads : rowCopies && i >= qSlots ? 128 : 1));
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
  // The same in every thread of a warp, and visibly so for ptxas
  // (shfl.sync idx, PTX ISA 9.7.9.6): what is computed from it (Q's wgmma
  // descriptors, the turns' barrier ids) then lives in uniform registers.
  warpgroup = w.shfl(NVVM::ShflKind::idx, w.i32(-1), w.divui(ctid, w.i32(128)), w.i32(0),
                     w.i32(31));
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

// Whether every tile op inside `root` is one `allowed` takes (their bodies
// not looked into).
static bool holdsOnly(Operation *root, function_ref<bool(Operation *)> allowed) {
  WalkResult other = root->walk<WalkOrder::PreOrder>([&](Operation *o) {
    if (o != root && allowed(o))
      return WalkResult::skip();
    return o != root && isTileOp(o) ? WalkResult::interrupt() : WalkResult::advance();
  });
  return !other.wasInterrupted();
}

bool WarpgroupKernel::containsTileOps(Operation *root) {
  return root
      ->walk([](Operation *inner) {
        return isTileOp(inner) ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
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
  if (scheduler) // the last consumer hands the first turn to consumer 0
    w.ifThen(w.cmpi(CmpI::eq, warpgroup, w.i32(rowsM / kRows - 1)),
             [&] { w.barrierArrive(w.i32(kTurnBarrier), w.i32(2 * 128)); });
  if (failed(block(src.getConsumers().front(), st)))
    return failure();
  // Shared memory outlives the last TMA store's reads.
  if (tmaStore)
    w.ifThen(firstOfWarpgroup(),
             [&] { NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, UnitAttr()); });
  return success();
}

LogicalResult WarpgroupKernel::loop(scf::ForOp src, State &st) {
  if (src.getNumRegionIterArgs())
    return src.emitOpError("flashattn-sm90-warpgroup: loops of the tiled kernel carry no "
                           "values");
  if (isDynamicWorkLoop(src))
    return inProducer ? producerWorkLoop(src, st) : consumerWorkLoop(src, st);
  if (overlappable(src))
    return overlappedLoop(src, st);
  Value lb = map.lookup(src.getLowerBound());
  auto [lo, ub] = ownIterations(src, lb);
  if (failed(drains(src, lb, lo, ub, st, /*before=*/true)))
    return failure();
  auto next = scf::ForOp::create(b, loc, lo, ub, map.lookup(src.getStep()), carried(st));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(next.getBody());
    map.map(src.getInductionVar(), next.getInductionVar());
    State inner = State::from(next.getRegionIterArgs(), st.producer);
    if (failed(block(*src.getBody(), inner)))
      return failure();
    scf::YieldOp::create(b, loc, carried(inner));
  }
  st = State::from(next.getResults(), st.producer);
  // Row copies: the loop's last copies arrive at its exit (the consumers
  // may need them before they release what the producer waits on next).
  if (st.pend)
    arrivePending(st, 0);
  return drains(src, lb, lo, ub, st, /*before=*/false);
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
// the consumers stop there. Both work loops carry the iteration's Q buffer
// (qSlot: 0, 1, 0, ... with the plan's prefetch_next_q, else always 0),
// whose tile index, mbarriers and phase bit the iteration uses.
LogicalResult WarpgroupKernel::producerWorkLoop(scf::ForOp src, State &st) {
  Value total = i32(map.lookup(src.getUpperBound())), grid = i32(map.lookup(src.getStep()));
  Values init{i32(map.lookup(src.getLowerBound())), w.i32(0)};
  init.append(carried(st));
  LogicalResult ok = success();
  auto loop = scf::WhileOp::create(
      b, loc, TypeRange(ValueRange(init)), init,
      [&](OpBuilder &, Location, ValueRange a) {
        scf::ConditionOp::create(b, loc, w.cmpi(CmpI::slt, a[0], total), a);
      },
      [&](OpBuilder &, Location, ValueRange a) {
        workTile = a[0];
        qSlot = qSlots > 1 ? a[1] : Value();
        map.map(src.getInductionVar(), index(a[0]));
        State in = State::from(a.drop_front(2), true);
        ok = block(*src.getBody(), in);
        Values next{nextTile(total, grid), w.xori(a[1], w.i32(qSlots > 1 ? 1 : 0))};
        next.append(carried(in));
        scf::YieldOp::create(b, loc, next);
      });
  workTile = qSlot = Value();
  if (failed(ok))
    return failure();
  st = State::from(loop.getResults().drop_front(2), true);
  Value slot = loop.getResult(1);
  waitEmpty(Q, slot, st);
  w.store(loop.getResult(0), tileIndexAt(slot));
  w.mbarrierArrive(barrierAt(Q, slot));
  return success();
}

// Each iteration waits for Q (its buffer's), reads the tile's index (the
// same in every thread: shfl.sync idx tells ptxas) and stops past the last
// tile; the body's wait for Q is that one.
LogicalResult WarpgroupKernel::consumerWorkLoop(scf::ForOp src, State &st) {
  Value total = i32(map.lookup(src.getUpperBound()));
  Values init{w.i32(0)};
  init.append(carried(st));
  SmallVector<Type> types{w.i32T};
  for (Value v : init)
    types.push_back(v.getType());
  LogicalResult ok = success();
  auto loop = scf::WhileOp::create(
      b, loc, types, init,
      [&](OpBuilder &, Location, ValueRange a) {
        State in = State::from(a.drop_front(), false);
        waitTile(Q, a[0], Value(), in);
        Value t = w.load(w.i32T, tileIndexAt(a[0]));
        t = w.shfl(NVVM::ShflKind::idx, w.i32(-1), t, w.i32(0), w.i32(31));
        Values v{t, a[0]};
        v.append(in.values());
        scf::ConditionOp::create(b, loc, w.cmpi(CmpI::slt, t, total), v);
      },
      [&](OpBuilder &, Location, ValueRange a) {
        map.map(src.getInductionVar(), index(a[0]));
        qSlot = qSlots > 1 ? a[1] : Value();
        State in = State::from(a.drop_front(2), false);
        ok = block(*src.getBody(), in);
        Values next{w.xori(a[1], w.i32(qSlots > 1 ? 1 : 0))};
        next.append(carried(in));
        scf::YieldOp::create(b, loc, next);
      });
  qSlot = Value();
  if (failed(ok))
    return failure();
  st = State::from(loop.getResults().drop_front(2), false);
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
  o = wgmmaPV(w, tileAt(V, deferredSlot), oT, o, deferredPk, 0, kKeys, D, etT, kvLayout);
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  if (scheduler)
    passTurn(Value());
  w.mbarrierArrive(barrierAt(V, deferredSlot, true));
  return o;
}

// The consumer's first iteration lb (ownIterations) before the loop (its
// P V deferred), lb + 1 .. end in it (each issuing the previous block's P
// V after its Q K^T), the last P V after it; the deferred P V's slot and
// packed P are carried values.
LogicalResult WarpgroupKernel::overlappedLoop(scf::ForOp src, State &st) {
  Value begin = map.lookup(src.getLowerBound());
  auto [lb, ub] = ownIterations(src, begin);
  if (failed(drains(src, begin, lb, ub, st, /*before=*/true)))
    return failure();
  Value step = map.lookup(src.getStep());
  Value any = w.cmpi(CmpI::slt, lb, ub);
  int64_t npk = kKeys / 4;
  applyScale(st);
  earlyQ = qReleaseAfter(src);
  blocksRan = any;
  // Without a block: the state and an undefined deferred P V (slot, alpha,
  // P), whose types the carried values take: only flushDeferred and the
  // steady loops read it, after a first block. (Zeros here cost a move a
  // register at every tile; undef lets LLVM drop the merge.)
  Values idle = st.values();
  idle.push_back(w.undef(w.i32T));
  if (rescaleUnderQK)
    idle.append(2, w.undef(w.f32T));
  idle.append(npk, w.undef(w.i32T));
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
  FailureOr<Values> steady = steadyLoops(src, w.addi(lb, step), ub, first);
  if (failed(steady))
    return failure();
  st = State::from(ValueRange(*steady).take_front(n), false);
  setDeferred(ValueRange(*steady).drop_front(n));
  // Without early_q_release, Q is released after the last block's Q K^T
  // (waited in the loop), before the last P V: the producer loads the
  // next tile's Q under it and the epilogue.
  if (earlyQ && !planEarlyQ)
    w.ifThen(any, [&] { releaseQ(earlyQ.getTile()); });
  if (qHeld)
    w.ifThen(qHeld, [&] { releaseQ(earlyQ.getTile()); });
  qHeld = Value();
  st.o = w.ifElse1(any, oT, [&] { return flushDeferred(st.o); }, [&] { return st.o; });
  return drains(src, begin, lb, ub, st, /*before=*/false);
}

// The overlapped loop's blocks [from, ub): with a boundary branch, the
// blocks before its bound `from` (no mask) and past it (the causal
// diagonal, the sequence's end) in loops of their own, the branch known in
// each (in a descending loop the masked ones first); else one loop.
FailureOr<Values> WarpgroupKernel::steadyLoops(scf::ForOp src, Value from, Value ub,
                                               Values inits) {
  std::optional<BlockSplit> split = boundarySplit(src);
  if (!split)
    return steadyLoop(src, from, ub, ub, inits);
  // (Under a left window the blocks before `from` keep the branch: a third
  // loop made ptxas spill at head_dim 128.)
  // A descending loop's iterations j < top + 1 - bound are the masked ones.
  Value bound = ownMaskFrom(src, *split);
  if (split->top)
    bound = w.subi(w.addi(map.lookup(split->top), arith::ConstantIndexOp::create(b, loc, 1)),
                   bound);
  Value masked = w.minsi(w.maxsi(bound, from), ub);
  knownBranch = split->alsoBefore ? scf::IfOp() : split->branch;
  branchTaken = bool(split->top);
  // Q's early release is in the second loop only, and after both loops
  // when the first had the last block (the second none): with the plan's
  // predicated_q_release, as a predicated arrive; under a causal mask or a
  // right window, whose diagonal puts a tile's last block in the second
  // loop (ascending: the masked one; descending: the unmasked one, which
  // runs last), as a branch there (head_dim 64 causal 1.3-2.3% faster
  // than the branch in both loops). Else a branch in each loop.
  bool maskedOnly = planPredicatedQ || maskedLast(src);
  qInLoop = maskedOnly ? QInLoop::none : QInLoop::branch;
  FailureOr<Values> v = steadyLoop(src, from, masked, ub, inits);
  qInLoop = planPredicatedQ ? QInLoop::predicated : QInLoop::branch;
  knownBranch = split->branch;
  branchTaken = !split->top;
  if (succeeded(v))
    v = steadyLoop(src, masked, ub, ub, *v);
  knownBranch = {};
  qInLoop = QInLoop::branch;
  if (earlyQ && planEarlyQ && maskedOnly)
    qHeld = w.andi(w.cmpi(CmpI::slt, from, ub), w.cmpi(CmpI::sge, masked, ub));
  return v;
}

// Whether the key-block loop `src` runs under a causal mask or a right
// window: a tile's last block then holds the diagonal of its last row.
bool WarpgroupKernel::maskedLast(scf::ForOp src) const {
  auto range = src.getUpperBound().getDefiningOp<KeyBlocksOp>();
  return range && (range.getCausal() != CausalKind::none ||
                   static_cast<int64_t>(range.getWindowRight()) >= 0);
}

// Blocks [from, to) of the overlapped loop `src` (whose end is `ub`), each
// issuing the previous block's P V after its Q K^T; returns the state and
// the deferred P V after them.
FailureOr<Values> WarpgroupKernel::steadyLoop(scf::ForOp src, Value from, Value to, Value ub,
                                              ValueRange inits) {
  Value step = map.lookup(src.getStep());
  // (The consumer's state: the phases, m, l, O and S.)
  unsigned n = State::from(inits, false).values().size();
  auto next = scf::ForOp::create(b, loc, from, to, step, inits);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(next.getBody());
  map.map(src.getInductionVar(), next.getInductionVar());
  State in = State::from(next.getRegionIterArgs().take_front(n), false);
  setDeferred(next.getRegionIterArgs().drop_front(n));
  lastBlock = w.cmpi(CmpI::sge, w.addi(next.getInductionVar(), step), ub);
  overlap = Overlap::steady;
  LogicalResult ok = block(*src.getBody(), in);
  overlap = Overlap::none;
  Values v = carried(in);
  v.append(deferredValues());
  scf::YieldOp::create(b, loc, v);
  if (failed(ok))
    return failure();
  return Values(next.getResults());
}

// The boundary branch of a key-block loop: an scf.if in its body holding
// tile_maps only, on `n >= from` or `n >= from || n < until` with the
// bounds defined above the loop (flashattn-tile's boundary mask), n the
// induction variable or, descending, top - iv (no `until` then).
std::optional<WarpgroupKernel::BlockSplit>
WarpgroupKernel::boundarySplit(scf::ForOp src) const {
  Value iv = src.getInductionVar(), top = descendingTop(src);
  auto isBlock = [&](Value n) {
    auto rev = n.getDefiningOp<arith::SubIOp>();
    return top ? rev && rev.getLhs() == top && rev.getRhs() == iv : n == iv;
  };
  auto bound = [&](Value c, CmpI p) -> Value {
    auto cmp = c.getDefiningOp<arith::CmpIOp>();
    if (cmp && cmp.getPredicate() == p && isBlock(cmp.getLhs()) &&
        src.isDefinedOutsideOfLoop(cmp.getRhs()))
      return cmp.getRhs();
    return {};
  };
  for (Operation &o : src.getBody()->without_terminator()) {
    auto branch = dyn_cast<scf::IfOp>(o);
    if (!branch || branch.getNumResults() || !branch.getElseRegion().empty())
      continue;
    if (!holdsOnly(branch, [](Operation *in) { return isa<TileMapOp>(in); }))
      continue;
    Value c = branch.getCondition();
    if (Value from = bound(c, CmpI::sge))
      return BlockSplit{branch, from, false, top};
    if (auto any = c.getDefiningOp<arith::OrIOp>(); any && !top) {
      Value from = bound(any.getLhs(), CmpI::sge), until = bound(any.getRhs(), CmpI::slt);
      if (from && until)
        return BlockSplit{branch, from, true, Value()};
    }
  }
  return std::nullopt;
}

// Under a causal mask or a right window, a consumer's rows [64 g, 64 g +
// 64) of a tile see fewer key blocks than the tile's last rows: the end of
// its own blocks (the key_blocks of its rows; FlashAttention-3's
// per-warpgroup n_block_max), in a warp-specialized consumer's loop over
// the tile's key_blocks. Not with the turns (every consumer takes one a
// block; `withTurns` for what does not change the blocks a consumer
// runs, ownMaskFrom) nor pack_gqa (rows are not positions). Else the
// loop's end.
KeyBlocksOp WarpgroupKernel::ownRange(scf::ForOp src, bool withTurns) const {
  auto range = src.getUpperBound().getDefiningOp<KeyBlocksOp>();
  if (!maskedLast(src) || !specialize || inProducer || (scheduler && !withTurns) ||
      rowsM == kRows || packG > 1 || src.getLowerBound() != range.getBegin() ||
      !isConstantIntValue(src.getStep(), 1) || otherBlockOrder(src))
    return {};
  return range;
}

// This consumer's first row: the tile's plus 64 g.
Value WarpgroupKernel::ownFirstRow(KeyBlocksOp range) {
  return w.addi(map.lookup(range.getRowBegin()), index(w.muli(warpgroup, w.i32(kRows))));
}

// A packed tile holds G rows a query position (decode: G rows in all),
// often fewer than 64: a consumer whose rows all lie past them computes no
// block and drains them all (with their turns), so that the tensor cores
// and issue slots go to the consumers with rows (FlashAttention-3 and cuDNN
// take such tiles with one consumer's rows). Not in the producer, nor with
// one consumer.
bool WarpgroupKernel::mayIdle() const {
  return planDrainIdle && specialize && !inProducer && packG > 1 && rowsM > kRows;
}

Value WarpgroupKernel::idleConsumer() {
  if (!mayIdle() || !qRows ||
      !qRows.getParentRegion()->isAncestor(b.getInsertionBlock()->getParent()))
    return {};
  return w.cmpi(CmpI::sge, index(w.muli(warpgroup, w.i32(kRows))), qRows);
}

Value WarpgroupKernel::ownEnd(scf::ForOp src) {
  Value ub = map.lookup(src.getUpperBound());
  KeyBlocksOp range = ownRange(src);
  Value idle = idleConsumer();
  if (!range)
    return idle ? w.select(idle, map.lookup(src.getLowerBound()), ub) : ub;
  Value rowEnd = map.lookup(range.getRowEnd());
  Value first = ownFirstRow(range);
  Value last = w.minsi(w.addi(first, arith::ConstantIndexOp::create(b, loc, kRows)), rowEnd);
  auto mapped = [&](Value v) { return v ? map.lookup(v) : v; };
  auto own = KeyBlocksOp::create(b, loc, range->getResultTypes(), first, last,
                                 mapped(range.getSeqlenK()), mapped(range.getOffset()),
                                 mapped(range.getSplit()), mapped(range.getNumSplits()),
                                 range.getBlockNAttr(), range.getCausalAttr(),
                                 range.getWindowLeftAttr(), range.getWindowRightAttr());
  // A warpgroup past the tile's last row computes no block.
  Value end = w.minsi(own.getEnd(), ub);
  return w.select(w.cmpi(CmpI::slt, first, rowEnd), end, map.lookup(src.getLowerBound()));
}

// A block index x - iv other than descendingTop's (IR rewritten after
// flashattn-tile): its consumers then run every block, with the mask's
// branch, which holds in any order.
bool WarpgroupKernel::otherBlockOrder(scf::ForOp src) const {
  Value iv = src.getInductionVar(), top = descendingTop(src);
  return llvm::any_of(iv.getUsers(), [&](Operation *user) {
    auto rev = dyn_cast<arith::SubIOp>(user);
    return rev && rev.getRhs() == iv && rev.getLhs() != top;
  });
}

// flashattn-tile's descending form: top = (begin + end) - 1 above the
// loop over [begin, end), and top - j in its body.
Value WarpgroupKernel::descendingTop(scf::ForOp src) const {
  Value iv = src.getInductionVar();
  auto isTop = [&](Value v) {
    auto top = v.getDefiningOp<arith::SubIOp>();
    auto sum = top ? top.getLhs().getDefiningOp<arith::AddIOp>() : arith::AddIOp();
    return sum && sum.getLhs() == src.getLowerBound() && sum.getRhs() == src.getUpperBound() &&
           isConstantIntValue(top.getRhs(), 1);
  };
  for (Operation *user : iv.getUsers())
    if (auto rev = dyn_cast<arith::SubIOp>(user); rev && rev.getRhs() == iv && isTop(rev.getLhs()))
      return rev.getLhs();
  return {};
}

// Ascending: [lb, ownEnd). Descending (block top - j in iteration j), the
// blocks below ownEnd are the last iterations: [lb + end - ownEnd, end),
// ownEnd taken at least lb (a split's range may end below its own begin,
// a consumer's blocks below the split's), so that they start at most at end.
std::pair<Value, Value> WarpgroupKernel::ownIterations(scf::ForOp src, Value lb) {
  Value own = ownEnd(src), end = map.lookup(src.getUpperBound());
  if (!descendingTop(src) || own == end)
    return {lb, own};
  Value below = w.maxsi(own, lb);
  return {w.subi(w.addi(lb, end), below), end};
}

// The first masked block of this consumer's rows where the tile's is
// flashattn-tile's floor(key_end(first row) / block_n) (the boundary
// split's bound): the same of its own first row, from which its blocks
// reach past a row's key end (FlashAttention-3 masks per warpgroup). Else
// the tile's bound, also under a left window, whose blocks before the bound
// keep the branch on the tile's bound.
Value WarpgroupKernel::ownMaskFrom(scf::ForOp src, const BlockSplit &split) {
  Value tile = map.lookup(split.from);
  KeyBlocksOp range = ownRange(src, /*withTurns=*/true);
  auto div = split.from.getDefiningOp<arith::FloorDivSIOp>();
  auto end = div ? div.getLhs().getDefiningOp<KeyEndOp>() : KeyEndOp();
  if (split.alsoBefore || !range || !end || end.getRow() != range.getRowBegin())
    return tile;
  auto own = KeyEndOp::create(b, loc, end.getType(), ownFirstRow(range),
                              map.lookup(end.getSeqlenK()), map.lookup(end.getOffset()),
                              end.getCausalAttr(), end.getWindowRightAttr());
  return arith::FloorDivSIOp::create(b, loc, own, map.lookup(div.getRhs()));
}

// The blocks of the key-block loop `src` past this consumer's own end
// (ownEnd), whose keys its rows do not see: their
// waits (with zeroVRows, V's tail zeroed with the other consumers) and
// releases only, so that every consumer releases every block and the
// slots' phases stay in step: the iterations past [lo, hi) of
// ownIterations, called `before` them and after them; they run before lo
// in a descending loop, [max(hi, lb), end) in an ascending one. Nothing
// when the consumer owns them all.
LogicalResult WarpgroupKernel::drains(scf::ForOp src, Value lb, Value lo, Value hi, State &st,
                                      bool before) {
  Value end = map.lookup(src.getUpperBound());
  bool descending = bool(descendingTop(src));
  if (before != descending || (descending ? lo == lb : hi == end))
    return success();
  Value from = descending ? lb : w.maxsi(hi, lb), to = descending ? lo : end;
  auto next = scf::ForOp::create(b, loc, from, to, map.lookup(src.getStep()),
                                 ValueRange(st.phase));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(next.getBody());
  map.map(src.getInductionVar(), next.getInductionVar());
  State in = st;
  llvm::copy(next.getRegionIterArgs(), in.phase);
  // With the turns only an idle consumer drains (ownRange): it takes the
  // N + 1 turns a consumer computing the loop's N blocks takes. Its warps
  // come from the mbarrier waits' spin loops, which may leave a warp's
  // threads apart: bar.warp.sync (PTX ISA 9.7.13.3) joins them before the
  // aligned bar.sync (computing consumers join at their wgmma).
  auto turn = [&] {
    NVVM::SyncWarpOp::create(b, loc, w.i32(-1));
    awaitTurn(Value());
    passTurn(Value());
  };
  bool turns = scheduler && mayIdle();
  if (turns)
    turn();
  draining = true;
  LogicalResult ok = block(*src.getBody(), in);
  draining = false;
  scf::YieldOp::create(b, loc, ValueRange(in.phase));
  llvm::copy(next.getResults(), st.phase);
  b.setInsertionPointAfter(next);
  if (turns)
    w.ifThen(w.cmpi(CmpI::slt, from, to), turn);
  return ok;
}

// In a drain loop: the ops that compute (and branches holding only those).
bool WarpgroupKernel::drainSkips(Operation &src) const {
  if (!draining)
    return false;
  auto computes = [](Operation *o) {
    return isa<TileQKOp, TileMapOp, TileSoftmaxOp, TilePVOp>(o);
  };
  return computes(&src) || (isa<scf::IfOp>(src) && holdsOnly(&src, computes));
}

// In the overlapped loop's last block, Q's release (with the plan's
// early_q_release): after the first block's Q K^T, or after a later
// block's wait for the P V before it.
void WarpgroupKernel::releaseQEarly() {
  if (!earlyQ || !planEarlyQ || qInLoop == QInLoop::none)
    return;
  if (qInLoop == QInLoop::predicated)
    MBarrierArriveIfOp::create(b, loc, lastBlock, barrierAt(Q, slotOf(earlyQ.getTile()), true));
  else
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
  if (drainSkips(src))
    return success();
  if (knownBranch && &src == knownBranch.getOperation())
    return branchTaken ? block(*knownBranch.thenBlock(), st) : success();
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
  declareKernelSmem(w, name);
  OpBuilder::InsertionGuard guard(b);
  // Warp-specialized: one CTA an SM, whose registers setmaxnreg shares out.
  P = buildKernelFunc(w, name + "_wg", params(), threads, mergeOff + (fused ? 8 : 0),
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

} // namespace mlir::flashattn::warpgroup

namespace {
using namespace mlir::flashattn::warpgroup;

struct FlashAttnSm90WarpgroupPass
    : public flashattn::impl::FlashAttnSm90WarpgroupBase<FlashAttnSm90WarpgroupPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUFuncOp> kernels;
    module.walk([&](gpu::GPUFuncOp f) {
      if (f.isKernel())
        kernels.push_back(f);
    });
    for (gpu::GPUFuncOp tiled : kernels) {
      OpBuilder b(tiled);
      if (isGridKernel(tiled)) {
        if (failed(lowerGridKernel(tiled, b)))
          return signalPassFailure();
      } else if (failed(checkOps(module, tiled)) ||
                 failed(WarpgroupKernel(tiled, b, plannedPlan(module, tiled),
                                        mergedType(module, tiled))
                            .build())) {
        return signalPassFailure();
      }
      auto kernels = tiled->getParentOfType<gpu::GPUModuleOp>();
      std::string name = tiled.getName().str();
      tiled.erase();
      kernels.lookupSymbol<LLVM::LLVMFuncOp>(name + "_wg").setSymName(name);
    }
    // The ops flashattn-tile left without an ABI name kernels built here.
    WalkResult described = module.walk([&](AttentionOp op) {
      auto e = op->getAttrOfType<Sm90EntriesAttr>("flashattn.sm90");
      if (!e || e.getAbi())
        return WalkResult::advance();
      return failed(describe(op)) ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (described.wasInterrupted())
      signalPassFailure();
  }

  /// The plan of the op naming `tiled` (its kernel or a twin);
  /// null when it has none.
  static PlanAttr plannedPlan(ModuleOp module, gpu::GPUFuncOp tiled) {
    auto kernels = tiled->getParentOfType<gpu::GPUModuleOp>();
    return planOfSm90Kernel(module, kernels.getSymNameAttr(), tiled.getNameAttr());
  }

  /// The element type of the final out that the flashattn.combine of the
  /// split-KV op naming `tiled` writes; null without one.
  static Type mergedType(ModuleOp module, gpu::GPUFuncOp tiled) {
    auto kernels = tiled->getParentOfType<gpu::GPUModuleOp>();
    Type merged;
    module.walk([&](AttentionOp op) {
      CombineOp combine = op.namesSm90Attention(kernels.getSymNameAttr(), tiled.getNameAttr())
                              ? op.getPartialCombine()
                              : CombineOp();
      if (combine)
        merged = cast<ShapedType>(combine.getOut().getType()).getElementType();
    });
    return merged;
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

  /// The op gets the ABIs of its kernels (the kernel, the dense entry, the
  /// twins, the combine and append kernels flashattn-tile made beside them).
  LogicalResult describe(AttentionOp op) {
    MLIRContext *ctx = op.getContext();
    auto e = op->getAttrOfType<Sm90EntriesAttr>("flashattn.sm90");
    auto kernels = SymbolTable::lookupNearestSymbolFrom<gpu::GPUModuleOp>(
        op, FlatSymbolRefAttr::get(e.getKernel().getRootReference()));
    CombineOp combine = op.getPartialCombine();
    if (op.isSplitPartial() && !e.getCombine())
      return op.emitError("flashattn-sm90-warpgroup: the split-KV partial results need a "
                          "flashattn.combine (memref form) reading them");
    if (e.getCombine()) {
      Type merged = cast<ShapedType>(combine.getOut().getType()).getElementType();
      if (!merged.isBF16() && !merged.isF16())
        return combine.emitError("flashattn-sm90-warpgroup: the sm90 combine writes bf16 or "
                                 "f16, got ")
               << merged;
    }
    SmallVector<NamedAttribute> abis;
    for (const std::string &name : Sm90EntriesAttr::entryNames(
             e.getKernel(), e.getDense(), e.getAppend(), e.getCombine(), e.getPackedGroups(),
             e.getKvHeadsPerBlock())) {
      auto fn = kernels.lookupSymbol<LLVM::LLVMFuncOp>(name);
      if (!fn)
        return op.emitError("flashattn-sm90-warpgroup: the op names kernel @")
               << name << ", which its gpu.module does not hold";
      abis.push_back(NamedAttribute(fn.getSymNameAttr(), fn->getAttr("flashattn.abi")));
    }
    op->setAttr("flashattn.sm90",
                Sm90EntriesAttr::get(ctx, e.getKernel(), e.getDense(), e.getAppend(), e.getCombine(),
                                     e.getPackedGroups(), e.getKvHeadsPerBlock(),
                                     e.getKvRowCopies(), DictionaryAttr::get(ctx, abis)));
    return success();
  }
};
} // namespace

