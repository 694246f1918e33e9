//===- Sm90Abi.h - the sm_90a kernels' parameter lists ---------*- C++ -*-===//
//
// What the sm_90a kernels' emitters (TilesToWarpgroup.cpp, Warpgroup*.cpp,
// GridKernels.cpp) share: the kernel's parameter list as #flashattn.param
// attributes (the runtime's launch ABI), the llvm.func it becomes, its
// shared-memory global, the tile table, the wgmmas and the softmax's
// reductions.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_LIB_CONVERSION_FLASHATTNTOSM90_SM90ABI_H
#define FLASHATTN_LIB_CONVERSION_FLASHATTNTOSM90_SM90ABI_H

#include "KernelEmitter.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"

#include <cassert>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::flashattn {

/// The kernel's llvm.func and its named parameters.
struct KernelFunc {
  LLVM::LLVMFuncOp func;
  std::map<std::string, Value> args;
  Value operator[](const std::string &name) const {
    auto it = args.find(name);
    assert(it != args.end() && "no such kernel parameter");
    return it->second;
  }
};

/// One entry of a kernel's ABI and the stem of the names its LLVM
/// parameters get inside the emitter (`P[...]`): ptr -> stem, dims ->
/// stem "d0" .. stem "d<rank-1>", tma -> stem "map", the others -> stem.
struct AbiParam {
  KernelParamAttr attr;
  std::string stem;
};

struct AbiBuilder {
  MLIRContext *ctx;
  std::vector<AbiParam> params;
  void add(ParamKind kind, StringRef arg, std::string stem, int64_t rank = 0,
           ArrayRef<int64_t> box = {}, int64_t group = 0, bool panels = false,
           int64_t bytes = 0);
  void ptr(StringRef arg, std::string stem) { add(ParamKind::ptr, arg, std::move(stem)); }
  void dims(StringRef arg, std::string stem, int64_t rank) {
    add(ParamKind::dims, arg, std::move(stem), rank);
  }
  void scalar(ParamKind kind, std::string stem) { add(kind, "", std::move(stem)); }
};

/// Builds `llvm.func @name(...) attributes {nvvm.kernel, nvvm.maxntid =
/// [threads, 1, 1][, nvvm.minctasm = 1], flashattn.abi = ...}` with its
/// entry block, its parameters those `abi` describes: pointers
/// !llvm.ptr<1>, dims i64, tensor maps 128-byte grid-constant byval arrays
/// (align 64), the inline tile table a byval array of its bytes (align 16).
/// Leaves the builder at the start of the entry block.
KernelFunc buildKernelFunc(KernelEmitter &w, const std::string &name,
                           const std::vector<AbiParam> &abi, int64_t threads, int64_t smem,
                           bool minCtas);

/// The runtime's tile table, read where the runtime put it: device memory
/// (`tile_table`), or with a null pointer the grid-constant inline copy
/// (`tile_table_inline`, kSm90InlineTableBytes), through a generic pointer
/// (a grid-constant parameter's address is generic).
Value tileTableAt(KernelEmitter &w, const KernelFunc &P);

/// Declares the kernel's dynamic shared memory, `@<name>_smem`
/// (1024-aligned, address space 3).
void declareKernelSmem(KernelEmitter &w, const std::string &name);

/// The max (or sum) of `v` over the 4 lanes of a quad, which hold a row of
/// a wgmma accumulator: two butterfly shuffles (xor 1, 2).
Value quadReduce(KernelEmitter &w, Value v, bool max);

/// The max (or sum) of `vals` (not empty) in `chains` interleaved chains
/// (value i into chain i % chains), then a tree over the chains: a
/// dependency path of about n / chains + log2(chains) ops instead of n - 1,
/// for chains - 1 more live registers.
Value chainReduce(KernelEmitter &w, ArrayRef<Value> vals, int64_t chains, bool max);

/// Where a K or V tile's rows lie in shared memory: 64-column panels of
/// 128-byte rows under the 128-byte swizzle, in 8-row atoms of 1 KB; the
/// 64 columns h of row r at h `panel` + (r / 8) `group` + (r % 8) 128
/// bytes. The dense layout (a TMA box of the tile's rows a panel): panel
/// = rows x 128, group = 1 KB. The page panel layout (a box a page whose
/// 8-row groups each hold the d / 64 panels, sm90PagePanels): panel =
/// 1 KB, group = d / 64 KB.
struct KVTileLayout {
  int64_t panel, group;
  static KVTileLayout dense(int64_t rows) { return {rows * 128, 1024}; }
  static KVTileLayout pagePanels(int64_t d) { return {1024, d / 64 * 1024}; }
};

/// S = Q K^T on one warpgroup: D / 16 k16 steps of wgmmaSS (N = `keys`),
/// Q (`rows` rows) at `qOff` past `qSmem` and K (`keys` rows, laid out as
/// `kLayout`, dense by default) at `kOff` past `kSmem` (!llvm.ptr<3>),
/// both K-major under the 128-byte swizzle (LBO 16; SBO the distance of
/// 8-row atoms). Q's descriptor goes through flashattn.opaque: LLVM would
/// otherwise hoist its D / 16 loop-invariant steps out of the key-block
/// loop and keep them live. Not fenced, committed or waited.
Value wgmmaQK(KernelEmitter &w, Value qSmem, Value kSmem, Type accType, int64_t qOff,
              int64_t kOff, int64_t rows, int64_t keys, int64_t d, bool f16,
              std::optional<KVTileLayout> kLayout = std::nullopt);

/// O += P V on one warpgroup: `keys` / 16 k16 steps of flashattn.wgmma_rs,
/// P from registers (four packed pairs a step, `pk`), V at `vOff` past
/// `smem` (laid out as `vLayout`, dense by default), MN-major (LBO: the
/// distance of its 64-column panels, SBO: of its 8-row atoms; each step
/// 16 rows further). Not fenced, committed or waited.
Value wgmmaPV(KernelEmitter &w, Value smem, Type accType, Value acc, ArrayRef<Value> pk,
              int64_t vOff, int64_t keys, int64_t d, Type elem,
              std::optional<KVTileLayout> vLayout = std::nullopt);

/// Rows [from, rows) of the `rows`-row tile at `offset` past `smem` (laid
/// out as `layout`, dense by default) to zero, by the `threads` threads of
/// the CTA in 16-byte chunks (a row keeps its place under the swizzle),
/// fenced for the async proxy; then a barrier of those threads: the CTA's
/// (barrier 0), after the branch, or, when `barrierId` is not 0, that
/// named barrier of `threads` threads, only where rows were zeroed (`from`
/// is the same in every thread): bar.sync, or with `aligned` false
/// barrier.sync without .aligned (PTX ISA 9.7.13.1), where the threads
/// reach it from different instructions (a consumer that drains its blocks
/// and one that computes them).
void zeroTileRows(KernelEmitter &w, Value smem, Value tid, int64_t offset, Value from,
                  int64_t rows, int64_t d, int64_t threads, int32_t barrierId = 0,
                  std::optional<KVTileLayout> layout = std::nullopt, bool aligned = true);

/// softcap's tanh of `x` (already scaled by scale / softcap):
/// tanh.approx.f32 (PTX ISA 9.7.4.9), which NVPTX selects for an
/// llvm.tanh with afn.
Value softcapTanh(KernelEmitter &w, Value x);

} // namespace mlir::flashattn

#endif
