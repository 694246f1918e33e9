//===- Sm90Kernel.h - facts of the sm_90a attention kernels -----*- C++ -*-===//
//
// What flashattn-plan, the passes that build the sm_90a kernels
// (flashattn-tile, flashattn-sm90-warp-specialize, flashattn-sm90-warpgroup)
// and the artifact writer agree on: the limits of an sm_90 block, the
// register split of a warp-specialized kernel, how paged K/V reach shared
// memory and how the kernels bound a window.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_CONVERSION_FLASHATTNTOSM90_SM90KERNEL_H
#define FLASHATTN_CONVERSION_FLASHATTNTOSM90_SM90KERNEL_H

#include <cstdint>
#include <utility>

namespace mlir {
namespace flashattn {

/// Bytes of the tile table a kernel over the runtime's tile table also
/// takes by value (a grid-constant kernel parameter): a launch whose table
/// fits, with no dynamic-scheduler counter to zero, no append and the page
/// lists (if any) in the caller's device block_table, passes a null table
/// pointer and the table inline, so that no host-to-device copy precedes
/// the kernel on the stream. 2048 bytes: 63 entries after the 32-byte
/// header, and with the rest of the parameters (under 1 KB) inside the
/// 4 KB that every CUDA driver accepts.
constexpr int64_t kSm90InlineTableBytes = 2048;

/// Whether a kernel reads K and V in the page panel layout: paged KV by TMA
/// boxes (not kvRowCopies) with pages of `pageSize` keys smaller than its key
/// block of `blockRows` shared-memory rows, one kv head a box
/// (`kvHeadsPerBox` 1). Each page is then ONE box through a 5-D view of the
/// pool [P, S, H, D]: {64 columns, 8 rows, H D / 64 column panels, S / 8
/// row groups, P} innermost first, strides (a row, 128 bytes, 8 rows, a
/// page), box {64, 8, D / 64, S / 8, 1} (the metadata's "page_panels"
/// maps). The page lands as its 8-row groups, each of D / 64 swizzled
/// 1 KB panels: in a key block, panel h of keys [8 g, 8 g + 8) lies at
/// g D / 64 KB + h KB. The wgmma descriptors step by those strides (K:
/// stride byte offset D / 64 KB; V: leading byte offset 1 KB, stride byte
/// offset D / 64 KB; PTX ISA 9.7.15.5.1), so a block of 16-key pages at
/// head_dim 128 is 8 boxes of 4 KB instead of 16 of 2 KB.
inline bool sm90PagePanels(int64_t pageSize, int64_t blockRows, int64_t kvHeadsPerBox,
                           bool kvRowCopies) {
  return pageSize > 0 && pageSize < blockRows && kvHeadsPerBox == 1 && !kvRowCopies;
}

/// Dynamic shared memory one sm_90 block may take (227 KB, opt-in above
/// 48 KB).
constexpr int64_t kSm90MaxSharedMemory = 227 * 1024;

/// Shared memory of an sm90 kernel up to the end of its mbarriers, as
/// flashattn-sm90-warpgroup lays it out: `qSlots` Q tiles of `rows` rows,
/// `kSlots` K then `vSlots` V tiles of `keys` rows (head_dim `d`, 16-bit
/// elements), O's staging tile (a Q tile's size) when `stagedO`, then an
/// 8-byte mbarrier a tile (two, full and empty, with a producer warpgroup:
/// `fullAndEmpty`). The tile index and the merge flag follow.
inline int64_t sm90SharedMemoryBytes(int64_t d, int64_t rows, int64_t keys, int64_t qSlots,
                                     int64_t kSlots, int64_t vSlots, bool stagedO,
                                     bool fullAndEmpty) {
  int64_t q = rows * d * 2, kv = keys * d * 2;
  int64_t bars = (qSlots + kSlots + vSlots) * (fullAndEmpty ? 2 : 1);
  return qSlots * q + (kSlots + vSlots) * kv + (stagedO ? q : 0) + 8 * bars;
}

/// Whether paged K/V of `pageSize`-key pages can go by TMA boxes into key
/// blocks of `blockN` rows: each box must land 1024-byte aligned (the
/// 128-byte swizzle's atom), so pages hold whole key blocks or divide a
/// block in multiples of 8 rows. Otherwise per-row copies.
inline bool sm90PageBoxes(int64_t pageSize, int64_t blockN) {
  return pageSize % blockN == 0 || (blockN % pageSize == 0 && pageSize % 8 == 0);
}

/// A window side as the kernel takes it: its positions are i32 sums (i +
/// Sk - Sq + right), and a side of 2^30 keys or more excludes no key of any
/// sequence an sm90 GPU holds (Sk and Sq stay below 2^30: K and V of 2^30
/// keys at head_dim 64 take 256 GiB), exactly as no bound (-1) does, so it
/// becomes -1 (FlashAttention likewise takes a side >= seqlen_k as -1).
inline int64_t sm90WindowSide(int64_t side) {
  return side >= (int64_t(1) << 30) ? -1 : side;
}

/// Registers per thread at launch with one CTA per SM: 65536 / threads,
/// rounded down to a multiple of 8 (168 at 384 threads, 128 at 512).
inline int64_t sm90LaunchRegisters(int64_t threads) {
  int64_t r = (65536 / threads) & ~int64_t(7);
  return r > 255 ? 255 : r;
}

/// FlashAttention-3's setmaxnreg split of a warp-specialized kernel with
/// `consumers` consumer warpgroups, (producer, consumer) registers a
/// thread: 40 / 232 with 2 consumers (40 x 128 + 232 x 256 = 168 x 384),
/// 32 / 160 with 3 (32 x 128 + 160 x 384 = 128 x 512); none (0 / 0) with 1
/// (256 threads have 255 registers each). The split must not exceed the
/// launch allocation, sm90LaunchRegisters x threads, or setmaxnreg.inc
/// waits forever (PTX ISA, setmaxnreg).
inline std::pair<int64_t, int64_t> sm90RegisterSplit(int64_t consumers) {
  return consumers == 2 ? std::make_pair<int64_t, int64_t>(40, 232)
         : consumers == 3 ? std::make_pair<int64_t, int64_t>(32, 160)
                          : std::make_pair<int64_t, int64_t>(0, 0);
}

} // namespace flashattn
} // namespace mlir

#endif
