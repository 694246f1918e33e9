//===- PipelineKV.cpp - flashattn-sm90-pipeline-kv ------------------------===//
//
// Software pipelining of the key-block loops of the tiled sm90 kernels: the
// K and V tiles of key block n + stages - 1 start loading (tile_load async)
// while block n is computed, each into a ring of `stages` scratch tiles,
// and are waited for (tile_wait) where the loads stood. The loop is not
// peeled: the loads of the first stages - 1 blocks start before it, and
// iteration n starts block n + stages - 1 when that block is below the end.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Transforms/Passes.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>

namespace mlir::flashattn {
#define GEN_PASS_DEF_FLASHATTNSM90PIPELINEKV
#include "flashattn/Transforms/Passes.h.inc"
} // namespace mlir::flashattn

using namespace mlir;
using namespace mlir::flashattn;

namespace {
/// A load of the loop body into a scratch tile (memref.alloca outside the
/// loop, used only inside it), with the pure ops of the body its operands
/// come from, in order.
struct PipelinedLoad {
  Operation *load;
  memref::AllocaOp tile;
  SmallVector<Operation *> slice;
  int64_t lead = 0; // blocks ahead of the iteration that waits for it
};


/// The ops of `body` that `load`'s operands (but its tile) depend on, in
/// program order; failure when one has effects or regions, uses the tile,
/// or a value of the body that is not the induction variable's or an op's
/// (a value carried by the loop is not known a block ahead).
static FailureOr<SmallVector<Operation *>> operandSlice(Operation *load, scf::ForOp loop) {
  Block *body = loop.getBody();
  Value tile = loadedTile(load);
  llvm::SetVector<Operation *> seen;
  SmallVector<Value> work;
  for (Value v : load->getOperands())
    if (v != tile)
      work.push_back(v);
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (v == tile)
      return failure();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() == body && v != loop.getInductionVar())
        return failure();
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (def->getBlock() != body || seen.contains(def))
      continue;
    if (!isPure(def) || def->getNumRegions())
      return failure();
    seen.insert(def);
    llvm::append_range(work, def->getOperands());
  }
  SmallVector<Operation *> slice(seen.begin(), seen.end());
  llvm::sort(slice, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return slice;
}

/// Whether `user` reads `tile` as K (tile_qk) or V (tile_pv).
static bool readsKV(Operation *user, Value tile) {
  if (auto qk = dyn_cast<TileQKOp>(user))
    return qk.getK() == tile;
  if (auto pv = dyn_cast<TilePVOp>(user))
    return pv.getV() == tile;
  return false;
}

/// The K / V loads of `loop` that can start ahead.
static SmallVector<PipelinedLoad> pipelinedLoads(scf::ForOp loop) {
  SmallVector<PipelinedLoad> loads;
  Block *body = loop.getBody();
  for (Operation &op : body->without_terminator()) {
    if (!isa<TileLoadOp, TileLoadPagedOp>(op))
      continue;
    // A scratch tile of the loop that this load alone writes.
    auto tile = loadedTile(&op).getDefiningOp<memref::AllocaOp>();
    auto writes = [&](Operation *u) { return u != &op && isa<TileLoadOp, TileLoadPagedOp>(u); };
    if (!tile || loop->isAncestor(tile) || llvm::any_of(tile->getUsers(), writes) ||
        llvm::any_of(tile->getUsers(), [&](Operation *u) { return !loop->isAncestor(u); }) ||
        llvm::none_of(tile->getUsers(), [&](Operation *u) { return readsKV(u, tile); }))
      continue;
    FailureOr<SmallVector<Operation *>> slice = operandSlice(&op, loop);
    if (succeeded(slice))
      loads.push_back({&op, tile, *slice});
  }
  return loads;
}

/// Slot `slot` of `ring` ([stages, T, D]) as a [T, D] tile.
static Value slotOf(OpBuilder &b, Location loc, Value ring, Value slot) {
  auto type = cast<MemRefType>(ring.getType());
  SmallVector<OpFoldResult> offsets{slot, b.getIndexAttr(0), b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes{b.getIndexAttr(1), b.getIndexAttr(type.getDimSize(1)),
                                  b.getIndexAttr(type.getDimSize(2))};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  auto tileType = memref::SubViewOp::inferRankReducedResultType(
      type.getShape().drop_front(), type, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, cast<MemRefType>(tileType), ring, offsets, sizes,
                                   strides);
}

/// Starts the loads of `loads` for block `block` (`iv` then) into slot
/// `slot` of their rings, when the block is below the loop's end (always
/// when not `guarded`).
static void startBlock(OpBuilder &b, scf::ForOp loop, ArrayRef<PipelinedLoad *> loads,
                       ArrayRef<Value> rings, Value block, Value slot, bool guarded = true) {
  Location loc = loop.getLoc();
  OpBuilder::InsertionGuard g(b);
  if (guarded) {
    Value below =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, block, loop.getUpperBound());
    auto guard = scf::IfOp::create(b, loc, below, /*withElseRegion=*/false);
    b.setInsertionPointToStart(guard.thenBlock());
  }
  IRMapping map;
  map.map(loop.getInductionVar(), block);
  for (auto [load, ring] : llvm::zip(loads, rings)) {
    for (Operation *op : load->slice)
      if (!map.contains(op))
        map.map(op, b.clone(*op, map));
    map.map(loadedTile(load->load), slotOf(b, loc, ring, slot));
    Operation *started = b.clone(*load->load, map);
    started->setAttr("async", b.getUnitAttr());
  }
}

/// Rewrites `loop` (step 1) so that each load starts its `lead` blocks
/// ahead, into a ring of `stages` tiles: blocks begin .. begin + lead - 1
/// before the loop, block n + lead in iteration n; within an iteration the
/// loads of the longest lead first.
static void pipeline(scf::ForOp loop, MutableArrayRef<PipelinedLoad> loads, int64_t stages) {
  Location loc = loop.getLoc();
  OpBuilder b(loop);
  DenseMap<int64_t, Value> constants; // before the loop, for the loop too
  auto idx = [&](int64_t v) {
    Value &c = constants[v];
    if (!c) {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPoint(loop);
      c = arith::ConstantIndexOp::create(b, loc, v);
    }
    return c;
  };
  DenseMap<Operation *, Value> ringOf;
  int64_t maxLead = 0;
  for (PipelinedLoad &load : loads) {
    OpBuilder at(load.tile);
    auto type = load.tile.getType();
    SmallVector<int64_t> shape{stages};
    llvm::append_range(shape, type.getShape());
    ringOf[load.load] = memref::AllocaOp::create(
        at, load.tile.getLoc(), MemRefType::get(shape, type.getElementType()));
    maxLead = std::max(maxLead, load.lead);
  }
  // The loads of lead above `p` (exactly `p` when `exact`), with their rings.
  auto leading = [&](int64_t p, bool exact) {
    std::pair<SmallVector<PipelinedLoad *>, SmallVector<Value>> group;
    for (PipelinedLoad &load : loads)
      if (exact ? load.lead == p : load.lead > p) {
        group.first.push_back(&load);
        group.second.push_back(ringOf[load.load]);
      }
    return group;
  };
  Value begin = loop.getLowerBound();
  for (int64_t p = 0; p < maxLead; ++p) {
    auto [group, rings] = leading(p, false);
    startBlock(b, loop, group, rings, p ? arith::AddIOp::create(b, loc, begin, idx(p)) : begin,
               idx(p));
  }
  b.setInsertionPointToStart(loop.getBody());
  Value rel = arith::SubIOp::create(b, loc, loop.getInductionVar(), begin);
  Value slot = arith::RemSIOp::create(b, loc, rel, idx(stages));
  for (int64_t lead = maxLead; lead >= 0; --lead) {
    auto [group, rings] = leading(lead, true);
    if (group.empty())
      continue;
    if (lead == 0) {
      startBlock(b, loop, group, rings, loop.getInductionVar(), slot, /*guarded=*/false);
      continue;
    }
    Value aheadSlot =
        arith::RemSIOp::create(b, loc, arith::AddIOp::create(b, loc, rel, idx(lead)), idx(stages));
    Value ahead = arith::AddIOp::create(b, loc, loop.getInductionVar(), idx(lead));
    startBlock(b, loop, group, rings, ahead, aheadSlot);
  }
  for (PipelinedLoad &load : loads) {
    Value tile = slotOf(b, loc, ringOf[load.load], slot);
    OpBuilder at(load.load);
    TileWaitOp::create(at, load.load->getLoc(), tile, loadedRows(load.load));
    load.load->erase();
    load.tile.getResult().replaceAllUsesWith(tile);
    load.tile.erase();
  }
}

/// The plan of the op naming `kernel`; null when none names it.
static PlanAttr planOf(ModuleOp module, gpu::GPUFuncOp kernel) {
  auto kernels = kernel->getParentOfType<gpu::GPUModuleOp>();
  return planOfSm90Kernel(module, kernels.getSymNameAttr(), kernel.getNameAttr());
}

/// Whether `tile` is read as V (tile_pv).
static bool readAsV(memref::AllocaOp tile) {
  return llvm::any_of(tile->getUsers(), [&](Operation *u) {
    auto pv = dyn_cast<TilePVOp>(u);
    return pv && pv.getV() == tile.getResult();
  });
}

/// How many blocks V's loads start after K's: under the plan's
/// intra-warpgroup overlap (with a producer warpgroup) block n's P V runs
/// in iteration n + 1, a block after its Q K^T, so V a block behind K
/// still leads its read by stages - 1 blocks, and each iteration starts K
/// of block n + 1 before V of block n (FlashAttention-3's producer order):
/// the next Q K^T's K does not queue behind a V needed later. Not with
/// the plan's kv_row_copies: their producer (all 128 threads copying rows
/// in 40 registers) then spills.
static int64_t planVLag(PlanAttr plan) {
  Sm90CodegenAttr cg = plan ? plan.getSm90() : Sm90CodegenAttr();
  return cg && cg.getWarpSpecialize() && cg.getIntraWgOverlap() && !cg.getKvRowCopies() ? 1 : 0;
}

/// Whether a key block of `loads` gathers more than 8 pages: its V a
/// block behind K then keeps twice as many page boxes in flight, which
/// measured slower (one-head kernels over pages of 8 rows).
static bool manyPageBoxes(ArrayRef<PipelinedLoad> loads) {
  return llvm::any_of(loads, [](const PipelinedLoad &load) {
    auto paged = dyn_cast<TileLoadPagedOp>(load.load);
    if (!paged)
      return false;
    int64_t pageSize = paged.getPool().getType().getDimSize(1);
    int64_t tileRows = paged.getTile().getType().getDimSize(0);
    return !ShapedType::isDynamic(pageSize) && tileRows > 8 * pageSize * int64_t(paged.getHeads());
  });
}

struct FlashAttnSm90PipelineKVPass
    : public flashattn::impl::FlashAttnSm90PipelineKVBase<FlashAttnSm90PipelineKVPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    module.walk([&](gpu::GPUFuncOp kernel) {
      if (!kernel.isKernel())
        return;
      PlanAttr plan = planOf(module, kernel);
      int64_t n = stages ? int64_t(stages) : plan ? plan.getStages() : 0;
      if (n < 2)
        return;
      int64_t lag = std::clamp<int64_t>(vLag >= 0 ? int64_t(vLag) : planVLag(plan), 0, n - 1);
      SmallVector<scf::ForOp> loops;
      kernel.walk([&](scf::ForOp loop) { loops.push_back(loop); });
      for (scf::ForOp loop : loops) {
        std::optional<int64_t> step = getConstantIntValue(loop.getStep());
        SmallVector<PipelinedLoad> loads = pipelinedLoads(loop);
        int64_t loopLag = manyPageBoxes(loads) ? 0 : lag;
        for (PipelinedLoad &load : loads)
          load.lead = n - 1 - (readAsV(load.tile) ? loopLag : 0);
        if (step == 1 && !loads.empty())
          pipeline(loop, loads, n);
      }
    });
  }
};
} // namespace
