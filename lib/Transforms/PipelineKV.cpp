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

/// Starts the loads of block `block` (`iv` then) into slot `slot` of the
/// rings, when the block is below the loop's end.
static void startBlock(OpBuilder &b, scf::ForOp loop, ArrayRef<PipelinedLoad> loads,
                       ArrayRef<Value> rings, Value block, Value slot) {
  Location loc = loop.getLoc();
  Value below =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, block, loop.getUpperBound());
  auto guard = scf::IfOp::create(b, loc, below, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(guard.thenBlock());
  IRMapping map;
  map.map(loop.getInductionVar(), block);
  for (auto [load, ring] : llvm::zip(loads, rings)) {
    for (Operation *op : load.slice)
      if (!map.contains(op))
        map.map(op, b.clone(*op, map));
    map.map(loadedTile(load.load), slotOf(b, loc, ring, slot));
    Operation *started = b.clone(*load.load, map);
    started->setAttr("async", b.getUnitAttr());
  }
}

/// Rewrites `loop` (step 1) to load `stages - 1` blocks ahead.
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
  SmallVector<Value> rings;
  for (PipelinedLoad &load : loads) {
    OpBuilder at(load.tile);
    auto type = load.tile.getType();
    SmallVector<int64_t> shape{stages};
    llvm::append_range(shape, type.getShape());
    rings.push_back(memref::AllocaOp::create(
        at, load.tile.getLoc(), MemRefType::get(shape, type.getElementType())));
  }
  Value begin = loop.getLowerBound();
  for (int64_t p = 0; p + 1 < stages; ++p)
    startBlock(b, loop, loads, rings, p ? arith::AddIOp::create(b, loc, begin, idx(p)) : begin,
               idx(p));
  b.setInsertionPointToStart(loop.getBody());
  Value rel = arith::SubIOp::create(b, loc, loop.getInductionVar(), begin);
  Value slot = arith::RemSIOp::create(b, loc, rel, idx(stages));
  Value aheadSlot =
      arith::RemSIOp::create(b, loc, arith::AddIOp::create(b, loc, rel, idx(stages - 1)), idx(stages));
  Value ahead = arith::AddIOp::create(b, loc, loop.getInductionVar(), idx(stages - 1));
  startBlock(b, loop, loads, rings, ahead, aheadSlot);
  SmallVector<Value> current;
  for (Value ring : rings)
    current.push_back(slotOf(b, loc, ring, slot));
  for (auto [load, tile] : llvm::zip(loads, current)) {
    OpBuilder at(load.load);
    TileWaitOp::create(at, load.load->getLoc(), tile, loadedRows(load.load));
    load.load->erase();
    load.tile.getResult().replaceAllUsesWith(tile);
    load.tile.erase();
  }
}

/// `stages` of the plan of the op naming `kernel`; 0 when none names it.
static int64_t planStages(ModuleOp module, gpu::GPUFuncOp kernel) {
  auto kernels = kernel->getParentOfType<gpu::GPUModuleOp>();
  PlanAttr plan = planOfSm90Kernel(module, kernels.getSymNameAttr(), kernel.getNameAttr());
  return plan ? plan.getStages() : 0;
}

struct FlashAttnSm90PipelineKVPass
    : public flashattn::impl::FlashAttnSm90PipelineKVBase<FlashAttnSm90PipelineKVPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    module.walk([&](gpu::GPUFuncOp kernel) {
      if (!kernel.isKernel())
        return;
      int64_t n = stages ? int64_t(stages) : planStages(module, kernel);
      if (n < 2)
        return;
      SmallVector<scf::ForOp> loops;
      kernel.walk([&](scf::ForOp loop) { loops.push_back(loop); });
      for (scf::ForOp loop : loops) {
        std::optional<int64_t> step = getConstantIntValue(loop.getStep());
        SmallVector<PipelinedLoad> loads = pipelinedLoads(loop);
        if (step == 1 && !loads.empty())
          pipeline(loop, loads, n);
      }
    });
  }
};
} // namespace
