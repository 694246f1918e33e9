//===- WarpSpecialize.cpp - flashattn-sm90-warp-specialize ----------------===//
//
// Warp specialization of the tiled sm90 kernels: the kernel body becomes a
// flashattn.warp_specialize of a producer copy (the loads, async, and what
// they need) and a consumer copy (the rest; a wait where a load waited, a
// tile_release after each waited tile's last read).
//
//===----------------------------------------------------------------------===//

#include "flashattn/Transforms/Passes.h"

#include "flashattn/Conversion/FlashAttnToSm90/Sm90Kernel.h"
#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::flashattn {
#define GEN_PASS_DEF_FLASHATTNSM90WARPSPECIALIZE
#include "flashattn/Transforms/Passes.h.inc"
} // namespace mlir::flashattn

using namespace mlir;
using namespace mlir::flashattn;

static bool isLoad(Operation *op) { return isa<TileLoadOp, TileLoadPagedOp>(op); }

/// Erases the ops of `region` whose results are unused and that have no
/// effect (memory reads, index arithmetic, loops and branches left empty),
/// innermost first, until none is left.
static void eraseDeadOps(Region &region) {
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
static void keepLoads(Region &producer) {
  SmallVector<Operation *> drop;
  producer.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto load = dyn_cast<TileLoadOp>(op))
      load.setAsync(true);
    else if (auto load = dyn_cast<TileLoadPagedOp>(op))
      load.setAsync(true);
    else if (op->getDialect() && isa<FlashAttnDialect>(op->getDialect()) &&
             !isa<KeyEndOp, KeyBeginOp, KeyBlocksOp>(op)) {
      drop.push_back(op); // with its regions (a tile_map's body)
      return WalkResult::skip();
    }
    return WalkResult::advance();
  });
  for (Operation *op : drop)
    op->erase();
}

/// The op of `block` holding the last read of `wait`'s tile (in `region`)
/// before the next wait on it; failure when a read lies outside the
/// block (after the release, the producer may overwrite the tile).
static FailureOr<Operation *> lastRead(TileWaitOp wait, Region &region) {
  Block *block = wait->getBlock();
  Operation *next = nullptr, *last = wait;
  for (Operation &op : llvm::make_range(std::next(wait->getIterator()), block->end())) {
    bool waits = op.walk([&](TileWaitOp w) {
                       return w.getTile() == wait.getTile() ? WalkResult::interrupt()
                                                            : WalkResult::advance();
                     }).wasInterrupted();
    if (waits) {
      next = &op;
      break;
    }
  }
  for (Operation *user : wait.getTile().getUsers()) {
    if (user == wait.getOperation() || !region.isAncestor(user->getParentRegion()))
      continue;
    Operation *at = block->findAncestorOpInBlock(*user);
    if (!at)
      return wait.emitOpError("flashattn-sm90-warp-specialize: the waited tile is read "
                              "outside the wait's block"),
             failure();
    if (at->isBeforeInBlock(wait) || (next && !at->isBeforeInBlock(next)))
      continue;
    if (last->isBeforeInBlock(at))
      last = at;
  }
  return last;
}

/// The consumers: the loads dropped, a wait in place of each load that
/// waited (the Q tile), a release after the last read of each waited tile
/// in the wait's block (before its next wait there).
static LogicalResult keepCompute(Region &consumers) {
  SmallVector<Operation *> loads;
  consumers.walk([&](Operation *op) {
    if (isLoad(op))
      loads.push_back(op);
  });
  for (Operation *load : loads) {
    if (!isAsyncLoad(load)) {
      OpBuilder b(load);
      TileWaitOp::create(b, load->getLoc(), loadedTile(load), loadedRows(load));
    }
    load->erase();
  }
  SmallVector<TileWaitOp> waits;
  consumers.walk([&](TileWaitOp wait) { waits.push_back(wait); });
  for (TileWaitOp wait : waits) {
    FailureOr<Operation *> last = lastRead(wait, consumers);
    if (failed(last))
      return failure();
    OpBuilder b(wait->getContext());
    b.setInsertionPointAfter(*last);
    TileReleaseOp::create(b, wait->getLoc(), wait.getTile());
  }
  return success();
}

/// The consumers of `kernel`: 64 score rows each.
static int64_t consumersOf(gpu::GPUFuncOp kernel) {
  int64_t rows = 0;
  kernel.walk([&](TileQKOp qk) { rows = cast<MemRefType>(qk.getS().getType()).getDimSize(0); });
  return rows / 64;
}

/// Whether the op naming `kernel` plans it warp-specialized.
static bool plannedSpecialized(ModuleOp module, gpu::GPUFuncOp kernel) {
  auto kernels = kernel->getParentOfType<gpu::GPUModuleOp>();
  PlanAttr plan = planOfSm90Kernel(module, kernels.getSymNameAttr(), kernel.getNameAttr());
  return plan && plan.getSm90() && plan.getSm90().getWarpSpecialize();
}

namespace {
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
      if (failed(specialize(kernel)))
        return signalPassFailure();
  }

  /// The register budgets: the options', or FlashAttention-3's
  /// (sm90RegisterSplit); failure when setmaxnreg.inc would wait forever
  /// (more than the launch allocation, PTX ISA 9.7.17.1).
  FailureOr<std::pair<int64_t, int64_t>> budgets(gpu::GPUFuncOp kernel) {
    int64_t consumers = consumersOf(kernel);
    auto [producerSplit, consumerSplit] = sm90RegisterSplit(consumers);
    int64_t p = producerRegs >= 0 ? producerRegs : producerSplit;
    int64_t c = consumerRegs >= 0 ? consumerRegs : consumerSplit;
    int64_t threads = 128 * (1 + consumers), launch = sm90LaunchRegisters(threads);
    int64_t used = 128 * (p ? p : launch) + 128 * consumers * (c ? c : launch);
    if (used > launch * threads)
      return kernel.emitError("flashattn-sm90-warp-specialize: setmaxnreg budgets ")
             << p << " x 128 + " << c << " x " << 128 * consumers << " = " << used
             << " registers exceed the launch's " << launch << " x " << threads,
             failure();
    return std::make_pair(p, c);
  }

  LogicalResult specialize(gpu::GPUFuncOp kernel) {
    FailureOr<std::pair<int64_t, int64_t>> regs = budgets(kernel);
    if (failed(regs))
      return failure();
    Block &body = kernel.getBody().front();
    SmallVector<Operation *> moved;
    for (Operation &op : body.without_terminator())
      if (!isa<memref::AllocaOp>(op))
        moved.push_back(&op);
    OpBuilder b = OpBuilder::atBlockTerminator(&body);
    Location loc = kernel.getLoc();
    Value tid = arith::IndexCastOp::create(b, loc, b.getI32Type(),
                                           gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
    auto split = WarpSpecializeOp::create(b, loc, tid, regs->first, regs->second);
    for (Region *region : {&split.getProducer(), &split.getConsumers()}) {
      OpBuilder inner = OpBuilder::atBlockBegin(&region->emplaceBlock());
      IRMapping map;
      for (Operation *op : moved)
        inner.clone(*op, map);
    }
    for (Operation *op : llvm::reverse(moved))
      op->erase();
    keepLoads(split.getProducer());
    if (failed(keepCompute(split.getConsumers())))
      return failure();
    eraseDeadOps(split.getProducer());
    eraseDeadOps(split.getConsumers());
    return success();
  }
};
} // namespace
