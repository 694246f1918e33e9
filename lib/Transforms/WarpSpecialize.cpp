//===- WarpSpecialize.cpp - flashattn-sm90-warp-specialize ----------------===//
//
// Warp specialization of the tiled sm90 kernels: the kernel body becomes a
// flashattn.warp_specialize of a producer copy (the loads, async, and what
// they need) and a consumer copy (the rest; a wait where a load waited, a
// tile_release after each waited tile's last read).
//
//===----------------------------------------------------------------------===//

#include "flashattn/Transforms/Passes.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::flashattn {
#define GEN_PASS_DEF_FLASHATTNSM90WARPSPECIALIZE
#include "flashattn/Transforms/Passes.h.inc"
} // namespace mlir::flashattn

using namespace mlir;
using namespace mlir::flashattn;

namespace {
bool isLoad(Operation *op) { return isa<TileLoadOp, TileLoadPagedOp>(op); }

Value loadedTile(Operation *load) {
  if (auto l = dyn_cast<TileLoadOp>(load))
    return l.getTile();
  return cast<TileLoadPagedOp>(load).getTile();
}

Value loadedRows(Operation *load) {
  if (auto l = dyn_cast<TileLoadOp>(load))
    return l.getRows();
  return cast<TileLoadPagedOp>(load).getRows();
}

/// Erases the ops of `region` whose results are unused and that have no
/// effect (memory reads, index arithmetic, loops and branches left empty),
/// innermost first, until none is left.
void eraseDeadOps(Region &region) {
  bool erased = true;
  while (erased) {
    SmallVector<Operation *> dead;
    region.walk<WalkOrder::PostOrder>([&](Operation *op) {
      if (isOpTriviallyDead(op))
        dead.push_back(op);
    });
    for (Operation *op : dead)
      op->erase();
    erased = !dead.empty();
  }
}

/// The producer: every load, started (async); the compute, the waits and
/// the stores dropped.
void keepLoads(Region &producer) {
  SmallVector<Operation *> drop;
  producer.walk([&](Operation *op) {
    if (auto load = dyn_cast<TileLoadOp>(op))
      load.setAsync(true);
    else if (auto load = dyn_cast<TileLoadPagedOp>(op))
      load.setAsync(true);
    else if (op->getDialect() && isa<FlashAttnDialect>(op->getDialect()) &&
             !isa<KeyEndOp, KeyBeginOp, KeyBlocksOp>(op))
      drop.push_back(op);
  });
  for (Operation *op : drop)
    op->erase();
}

/// The consumers: the loads dropped, a wait in place of each load that
/// waited (the Q tile), a release after the last read of each waited tile
/// in the wait's block.
void keepCompute(Region &consumers) {
  SmallVector<Operation *> loads;
  consumers.walk([&](Operation *op) {
    if (isLoad(op))
      loads.push_back(op);
  });
  for (Operation *load : loads) {
    bool async = isa<TileLoadOp>(load) ? cast<TileLoadOp>(load).getAsync()
                                       : cast<TileLoadPagedOp>(load).getAsync();
    if (!async) {
      OpBuilder b(load);
      TileWaitOp::create(b, load->getLoc(), loadedTile(load), loadedRows(load));
    }
    load->erase();
  }
  SmallVector<TileWaitOp> waits;
  consumers.walk([&](TileWaitOp wait) { waits.push_back(wait); });
  for (TileWaitOp wait : waits) {
    Block *block = wait->getBlock();
    Operation *last = wait;
    for (Operation *user : wait.getTile().getUsers()) {
      Operation *at = block->findAncestorOpInBlock(*user);
      if (at && last->isBeforeInBlock(at))
        last = at;
    }
    OpBuilder b = OpBuilder::atBlockBegin(block);
    b.setInsertionPointAfter(last);
    TileReleaseOp::create(b, wait->getLoc(), wait.getTile());
  }
}

/// The setmaxnreg budgets of FlashAttention-3 for `consumers` warpgroups:
/// 40 x 128 + 232 x 256 and 32 x 128 + 160 x 384 registers fill the SM's
/// 65536 at one CTA an SM.
std::pair<int64_t, int64_t> defaultRegisters(int64_t consumers) {
  if (consumers == 2)
    return {40, 232};
  if (consumers == 3)
    return {32, 160};
  return {0, 0};
}

/// The consumers of `kernel`: 64 score rows each.
int64_t consumersOf(gpu::GPUFuncOp kernel) {
  int64_t rows = 0;
  kernel.walk([&](TileQKOp qk) { rows = cast<MemRefType>(qk.getS().getType()).getDimSize(0); });
  return rows / 64;
}

/// Whether an op naming `kernel` plans it warp-specialized.
bool plannedSpecialized(ModuleOp module, gpu::GPUFuncOp kernel) {
  auto kernels = kernel->getParentOfType<gpu::GPUModuleOp>();
  bool planned = false;
  module.walk([&](AttentionOp op) {
    PlanAttr plan = op.getPlanAttr();
    if (plan && plan.getSm90() && plan.getSm90().getWarpSpecialize() &&
        op.namesSm90Kernel(kernels.getSymNameAttr(), kernel.getNameAttr()))
      planned = true;
  });
  return planned;
}

struct FlashAttnSm90WarpSpecializePass
    : public flashattn::impl::FlashAttnSm90WarpSpecializeBase<FlashAttnSm90WarpSpecializePass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<gpu::GPUFuncOp> kernels;
    getOperation().walk([&](gpu::GPUFuncOp kernel) {
      bool split = false;
      kernel.walk([&](WarpSpecializeOp) { split = true; });
      if (kernel.isKernel() && !split && !kernel.getBody().empty() &&
          plannedSpecialized(getOperation(), kernel))
        kernels.push_back(kernel);
    });
    for (gpu::GPUFuncOp kernel : kernels)
      specialize(kernel);
  }

  void specialize(gpu::GPUFuncOp kernel) {
    Block &body = kernel.getBody().front();
    SmallVector<Operation *> moved;
    for (Operation &op : body.without_terminator())
      if (!isa<memref::AllocaOp>(op))
        moved.push_back(&op);
    OpBuilder b = OpBuilder::atBlockTerminator(&body);
    Location loc = kernel.getLoc();
    Value tid = arith::IndexCastOp::create(b, loc, b.getI32Type(),
                                           gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
    auto [pRegs, cRegs] = defaultRegisters(consumersOf(kernel));
    auto split = WarpSpecializeOp::create(b, loc, tid, producerRegs >= 0 ? producerRegs : pRegs,
                                          consumerRegs >= 0 ? consumerRegs : cRegs);
    for (Region *region : {&split.getProducer(), &split.getConsumers()}) {
      OpBuilder inner = OpBuilder::atBlockBegin(&region->emplaceBlock());
      IRMapping map;
      for (Operation *op : moved)
        inner.clone(*op, map);
    }
    for (Operation *op : llvm::reverse(moved))
      op->erase();
    keepLoads(split.getProducer());
    keepCompute(split.getConsumers());
    eraseDeadOps(split.getProducer());
    eraseDeadOps(split.getConsumers());
  }
};
} // namespace
