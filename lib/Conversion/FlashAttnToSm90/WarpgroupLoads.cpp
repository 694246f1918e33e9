//===- WarpgroupLoads.cpp - the warpgroup form's loads ----------------------===//
//
// flashattn-sm90-warpgroup's tile_load, tile_load_paged, tile_wait and
// tile_release: TMA boxes, paged boxes (by lane), row copies, mbarriers.
//
//===----------------------------------------------------------------------===//

#include "WarpgroupKernel.h"

#include "flashattn/Conversion/FlashAttnToSm90/Sm90Kernel.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <cmath>

using namespace mlir;
using namespace mlir::flashattn;

namespace mlir::flashattn::warpgroup {

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
  if (v.arg == Q && inProducer && qSlot)
    awaitLongTileQ(op, st);
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
  } else if (pageSize >= kKeys) {
    Value page = pageAt(w.addi(list, w.divui(row0, ps)));
    Value inPage = w.remui(row0, ps);
    issueTma(role, slot, 1, Value(), st, [&](int64_t box, int64_t) {
      return Values{w.i32(64 * box), head, inPage, page};
    });
  } else if (Value first = w.addi(list, w.divui(row0, ps)); laneBoxes && inProducer) {
    issuePagesByLane(role, slot, first, w.ceildivui(rows, ps), head, st);
  } else {
    issueTma(role, slot, kKeys / (kvHeads * pageSize), w.ceildivui(rows, ps), st,
             [&](int64_t box, int64_t part) {
      Value page = pageAt(w.addi(first, w.i32(part)));
      return panels ? pagePanelCoords(head, page)
                    : Values{w.i32(64 * box), head, w.i32(0), page};
    });
  }
  if (!op.getAsync())
    waitTile(role, slot, rows, st);
  return success();
}

// The page panel map's coordinates of a whole page of kv head `head`:
// {column 0, row 0, the head's first panel, row group 0, page}.
Values WarpgroupKernel::pagePanelCoords(Value head, Value page) {
  Value c0 = w.i32(0);
  return {c0, c0, w.muli(head, w.i32(D / 64)), c0, page};
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
    Value map = P[std::string(kPtr[role]) + "map"], policy = l2PolicyFor(role);
    // Page panels: the page whole at lane x its D / 64 panels' bytes.
    Value at = w.gep(base, w.sptrT, w.i8T,
                     w.muli(lane, w.i32(panels ? D / 64 * partBytes : partBytes)));
    for (int64_t box = 0; box < (panels ? 1 : D / 64); ++box) {
      Value dst = w.addrspacecast(w.gep(at, w.sptrT, w.i8T, int32_t(box * kKeys * 128)), w.cptrT);
      w.tmaLoad(dst, map, bar,
                panels ? pagePanelCoords(head, page) : Values{w.i32(64 * box), head, w.i32(0), page},
                policy);
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
      w.store(workTile, tileIndexAt(slot));
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
    Value policy = l2PolicyFor(role);
    // Page panels (K and V): a part is one box, a page whole, at part x its
    // D / 64 panels' bytes.
    bool pagePanels = panels && role != Q;
    for (int64_t part = 0; part < parts; ++part) {
      auto issue = [&] {
        for (int64_t box = 0; box < (pagePanels ? 1 : D / 64); ++box) {
          int64_t offset = pagePanels ? part * D / 64 * partBytes : box * boxBytes + part * partBytes;
          Value dst = w.addrspacecast(w.gep(base, w.sptrT, w.i8T, int32_t(offset)), w.cptrT);
          w.tmaLoad(dst, P[std::string(kPtr[role]) + "map"], bar, coords(box, part), policy);
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

// From createpolicy (flashattn.l2_policy; PTX ISA, data movement
// instructions, createpolicy), made at each issue: a 64-bit value kept
// across the loop costs the producer two of its 40 registers.
Value WarpgroupKernel::l2PolicyFor(Arg role) {
  L2Priority priority = role == Q ? l2HintQ : l2HintKV;
  if (priority == L2Priority::normal)
    return Value();
  return L2PolicyOp::create(b, loc, w.i64T, L2PriorityAttr::get(b.getContext(), priority));
}

// With two Q buffers the producer loads a tile's Q before the tile before
// has released its own, but ahead of a tile of more than
// kPrefetchMaxBlocks key blocks (its key_blocks, before the load): there
// it first waits for that release, on the other buffer's empty mbarrier
// at its current phase bit (not flipped: the next load into that buffer
// waits for the same phase), so the consumers still meet at a long tile's
// Q. (Two buffers at every tile were 2.5-3% slower at head_dim 64 causal
// from 8k keys, the consumers' waits for K and V growing.)
void WarpgroupKernel::awaitLongTileQ(Operation *load, State &st) {
  KeyBlocksOp range;
  for (Operation *o = load->getPrevNode(); o && !range; o = o->getPrevNode())
    range = dyn_cast<KeyBlocksOp>(o);
  if (!range)
    return;
  Value blocks = w.subi(i32(map.lookup(range.getEnd())), i32(map.lookup(range.getBegin())));
  Value other = w.xori(qSlot, w.i32(1));
  Value phase = st.phase[Q];
  w.ifThen(w.cmpi(CmpI::sgt, blocks, w.i32(kPrefetchMaxBlocks)), [&] {
    w.mbarrierWait(barrierAt(Q, other, true), w.andi(w.shrui(phase, other), w.i32(1)),
                   waitTicks);
  });
}

// Every thread's wait on the slot's mbarrier (the phase bit of the slot,
// flipped); then (zeroVRows) V's rows past `rows` (i32: the next
// sequence's, a cache's unused rows: maybe NaN, and 0 x NaN is NaN in P V)
// to zero; K's are left, every score they make being masked.
void WarpgroupKernel::waitTile(Arg role, Value slot, Value rows, State &st) {
  Value &phase = st.phase[role];
  w.mbarrierWait(barrierAt(role, slot), w.andi(w.shrui(phase, slot), w.i32(1)), waitTicks);
  phase = w.xori(phase, w.shli(w.i32(1), slot));
  // (With several kv heads a block, `rows` keys are rows x kvHeads rows.)
  if (role == V && kvHeads > 1)
    rows = w.muli(rows, w.i32(kvHeads));
  if (role == V && zeroVRows)
    zeroTileRows(w, tileAt(V, slot), ctid, 0, w.maxsi(rows, w.i32(0)), kKeys, D,
                 consumerThreads, specialize ? kConsumerBarrier : 0, kvLayout, !mayIdle());
}

LogicalResult WarpgroupKernel::tileWait(TileWaitOp op, State &st) {
  auto it = roles.find(ringOf(op.getTile()));
  if (it == roles.end() || (it->second == Q && !specialize))
    return op.emitOpError("flashattn-sm90-warpgroup: waits on a tile that loads write (k or "
                          "v, or q in a warp-specialized kernel)");
  if (it->second == Q && !inProducer)
    qRows = map.lookup(op.getRows());
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

} // namespace mlir::flashattn::warpgroup
