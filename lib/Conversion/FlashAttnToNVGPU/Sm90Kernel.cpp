//===- Sm90Kernel.cpp - the sm_90a attention kernel (TMA + WGMMA) ---------===//
//
// Generates, for one attention configuration, a gpu.module holding an
// sm_90a kernel in the LLVM, NVVM, arith and scf dialects, following
// the FlashAttention-3 paper (arXiv 2407.08608,
// sections 3.1 and 3.2):
//
// - warp specialization: warpgroup 0 is the producer (one thread issues
//   every TMA load; setmaxnreg lowers its registers, PTX ISA 9.7.17.1),
//   warpgroups 1..C are consumers, 64 query rows each (a tile has 64 C rows);
//   a persistent grid strides over (batch, head, m_block[, split]) tiles;
// - Q, K and V arrive by TMA (cp.async.bulk.tensor.4d, PTX ISA 9.7.9.25) into
//   128-byte-swizzled shared memory; K and V in `stages` stages with
//   separate full and empty mbarriers, so K is released as soon as S is
//   computed; Q has its own full / empty pair;
// - S = Q K^T by wgmma.mma_async (A and B from shared memory, K-major);
// - intra-warpgroup overlap: S_n = Q K_n^T and O += P_{n-1} V_{n-1} are
//   issued together, and the softmax of S_n runs while P V is in flight;
// - the online softmax on the accumulator fragments (row max and sum by
//   shuffles), exp2 with log2(e) folded into the scale, the -inf guard;
// - O += P V by wgmma with P in registers, emitted with llvm.inline_asm since
//   neither NVGPU nor NVVM has the register-A form (PTX ISA 9.7.15.5.2);
// - the epilogue writes out (bf16/f16 pairs) and lse (f32).
//
// The kernel takes the runtime's launch ABI (runtime/src/cuda_launch.c): one
// pointer per argument, the int64 dims of each, then one CUtensorMap per TMA
// argument (q, k, v) as a 128-byte grid-constant parameter.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Conversion/FlashAttnToNVGPU/Sm90Kernel.h"
#include "flashattn/Conversion/FlashAttnToNVGPU/Sm90Layout.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cassert>
#include <cmath>
#include <functional>
#include <tuple>
#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::flashattn;

namespace {
/// Writes MLIR text with fresh SSA names.
class Writer {
public:
  explicit Writer(std::string &out) : os(out) {}
  std::string fresh() { return "%v" + std::to_string(next++); }
  /// Emits `%new = <text>` and returns %new.
  std::string op(const std::string &text) {
    std::string name = fresh();
    os << "    " << name << " = " << text << "\n";
    return name;
  }
  void line(const std::string &text) { os << "    " << text << "\n"; }
  std::string i32(int64_t v) { return op("arith.constant " + std::to_string(v) + " : i32"); }
  std::string i64(int64_t v) { return op("arith.constant " + std::to_string(v) + " : i64"); }
  std::string f32(double v) {
    return op(llvm::formatv("arith.constant {0:e} : f32", v).str());
  }
  std::string bin(const char *opname, const std::string &a, const std::string &b,
                  const char *type) {
    return op(std::string(opname) + " " + a + ", " + b + " : " + type);
  }

  llvm::raw_string_ostream os;

private:
  int next = 0;
};

std::string structType(int n) {
  std::string s = "!llvm.struct<(";
  for (int i = 0; i < n; ++i)
    s += i ? ", f32" : "f32";
  return s + ")>";
}

/// Comma-separated `n` copies of `t`.
std::string repeat(const std::string &t, int n) {
  std::string s;
  for (int i = 0; i < n; ++i)
    s += (i ? ", " : "") + t;
  return s;
}

/// The first index (i64) and the stride of a grid-stride loop over
/// `threads`-thread CTAs: ctaid x threads + tid, nctaid x threads.
std::pair<std::string, std::string> gridStride(Writer &w, int64_t threads) {
  auto ext = [&](const std::string &v) { return w.op("arith.extui " + v + " : i32 to i64"); };
  std::string tid = ext(w.op("nvvm.read.ptx.sreg.tid.x : i32"));
  std::string cta = ext(w.op("nvvm.read.ptx.sreg.ctaid.x : i32"));
  std::string ncta = ext(w.op("nvvm.read.ptx.sreg.nctaid.x : i32"));
  std::string cThreads = w.i64(threads);
  return {w.bin("arith.addi", w.bin("arith.muli", cta, cThreads, "i64"), tid, "i64"),
          w.bin("arith.muli", ncta, cThreads, "i64")};
}

std::string join(const std::vector<std::string> &v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + v[i];
  return s;
}

/// Index of lse[b, h, i] in a [B, H, Sq] array (i64 values).
std::string lseIndex(Writer &w, const std::string &b, const std::string &h,
                     const std::string &i, const std::string &H, const std::string &Sq) {
  std::string x = w.bin("arith.muli", b, H, "i64");
  x = w.bin("arith.addi", x, h, "i64");
  x = w.bin("arith.muli", x, Sq, "i64");
  return w.bin("arith.addi", x, i, "i64");
}

/// Element offset of out[b, i, h, 0] in a [B, Sq, H, D] array (i64 values).
std::string outRowOffset(Writer &w, const std::string &b, const std::string &i,
                         const std::string &h, const std::string &Sq, const std::string &H,
                         int64_t D) {
  std::string x = w.bin("arith.muli", b, Sq, "i64");
  x = w.bin("arith.addi", x, i, "i64");
  x = w.bin("arith.muli", x, H, "i64");
  x = w.bin("arith.addi", x, h, "i64");
  return w.bin("arith.muli", x, w.i64(D), "i64");
}

/// The address of split `s`'s element `off` of a partial result: element
/// s * stride + off (i64) of `type` at global pointer `base`.
std::string splitElement(Writer &w, const std::string &base, const std::string &s,
                         const std::string &stride, const std::string &off,
                         const char *type) {
  std::string idx = w.bin("arith.addi", w.bin("arith.muli", s, stride, "i64"), off, "i64");
  return w.op("llvm.getelementptr " + base + "[" + idx +
              "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, " + type);
}

/// The split-KV merge of docs/SEMANTICS.md for `V` consecutive values of
/// one output row, over the `S` (i64) splits: m = max_s lse_s, w_s =
/// exp(lse_s - m), out = sum w_s o_s / sum w_s, lse = m + log sum w_s;
/// splits with lse_s = -inf weigh 0, and a row whose splits are all -inf
/// is empty (out 0, lse -inf). One pass over the splits, U at a time,
/// merged online (the running max m, sum w and sum w o rescaled by
/// exp(m_old - m_new) when m grows, as the attention's own online softmax;
/// Milakov & Gimelshein 2018): the loads of a step are issued together, so
/// a decode merge (16 splits) waits one L2 round trip instead of one per
/// split and pass. Split s + j past S reads split S - 1 and weighs nothing.
/// `loadL(s)` and `loadO(s)` emit split s's lse and its V values (s: i64).
/// Emits the normalized values into `out` and returns (empty row, lse).
std::pair<std::string, std::string>
emitMerge(Writer &w, const std::string &S, int V,
          const std::function<std::string(const std::string &)> &loadL,
          const std::function<std::vector<std::string>(const std::string &)> &loadO,
          std::vector<std::string> &out) {
  const int U = 16;
  std::string z64 = w.i64(0), one64 = w.i64(1);
  std::string negInf = w.op("arith.constant 0xFF800000 : f32");
  std::string zeroF = w.f32(0.0);
  std::string log2e = w.f32(1.4426950408889634), ln2 = w.f32(M_LN2);
  std::string cU = w.i64(U), last = w.bin("arith.subi", S, one64, "i64");
  // exp(x - m) as exp2((x - m) log2 e); a max of -inf (nothing seen yet, or
  // an empty row) is taken as 0 so that no -inf - -inf appears.
  auto ex2 = [&](const std::string &x, const std::string &m) {
    std::string e = w.bin("arith.mulf", w.bin("arith.subf", x, m, "f32"), log2e, "f32");
    return w.op("llvm.call_intrinsic \"llvm.nvvm.ex2.approx.ftz.f\"(" + e +
                ") : (f32) -> f32");
  };
  std::string init = "%mg_m = " + negInf + ", %mg_w = " + zeroF;
  std::string types = "f32, f32";
  for (int c = 0; c < V; ++c) {
    init += ", %mg_o" + std::to_string(c) + " = " + zeroF;
    types += ", f32";
  }
  w.line("%mg:" + std::to_string(V + 2) + " = scf.for %mg_s = " + z64 + " to " + S +
         " step " + cU + " iter_args(" + init + ") -> (" + types + ") : i64 {");
  {
    struct Part {
      std::string l;
      std::vector<std::string> o;
    };
    std::vector<Part> parts;
    for (int j = 0; j < U; ++j) {
      std::string sj = w.bin("arith.addi", "%mg_s", w.i64(j), "i64");
      std::string ok = w.op("arith.cmpi ult, " + sj + ", " + S + " : i64");
      sj = w.bin("arith.minui", sj, last, "i64");
      std::string l = w.op("arith.select " + ok + ", " + loadL(sj) + ", " + negInf + " : f32");
      parts.push_back({l, loadO(sj)});
    }
    std::string m = "%mg_m";
    for (Part &p : parts)
      m = w.bin("arith.maximumf", m, p.l, "f32");
    std::string mSafe = w.op("arith.select " +
                             w.op("arith.cmpf oeq, " + m + ", " + negInf + " : f32") + ", " +
                             zeroF + ", " + m + " : f32");
    std::string scale = ex2("%mg_m", mSafe);
    std::string sw = w.bin("arith.mulf", "%mg_w", scale, "f32");
    std::vector<std::string> so;
    for (int c = 0; c < V; ++c)
      so.push_back(w.bin("arith.mulf", "%mg_o" + std::to_string(c), scale, "f32"));
    for (Part &p : parts) {
      std::string wt = ex2(p.l, mSafe);
      sw = w.bin("arith.addf", sw, wt, "f32");
      for (int c = 0; c < V; ++c)
        so[c] = w.op("llvm.intr.fma(" + wt + ", " + p.o[c] + ", " + so[c] +
                     ") : (f32, f32, f32) -> f32");
    }
    w.line("scf.yield " + m + ", " + sw + ", " + join(so) + " : " + types);
  }
  w.line("}");
  std::string empty = w.op("arith.cmpf oeq, %mg#0, " + negInf + " : f32");
  std::string mSafe = w.op("arith.select " + empty + ", " + zeroF + ", %mg#0 : f32");
  out.clear();
  for (int c = 0; c < V; ++c) {
    std::string val = w.bin("arith.divf", "%mg#" + std::to_string(c + 2), "%mg#1", "f32");
    out.push_back(w.op("arith.select " + empty + ", " + zeroF + ", " + val + " : f32"));
  }
  std::string lg = w.op("llvm.call_intrinsic \"llvm.nvvm.lg2.approx.f\"(%mg#1) : (f32) -> f32");
  std::string lv = w.bin("arith.addf", mSafe, w.bin("arith.mulf", lg, ln2, "f32"), "f32");
  return {empty, w.op("arith.select " + empty + ", " + negInf + ", " + lv + " : f32")};
}
} // namespace

std::string mlir::flashattn::emitSm90AttentionKernel(const Sm90KernelSpec &k) {
  const int64_t D = k.headDim, C = k.consumers, BM = 64 * C, BN = k.blockN,
                ST = k.stages;
  const int64_t boxes = D / 64;
  const Sm90Layout L(k);
  const int64_t threads = 128 * (1 + C);
  const int nS = static_cast<int>(BN / 2), nO = static_cast<int>(D / 2),
            nP = static_cast<int>(BN / 4);
  const std::string et = k.f16 ? "f16" : "bf16";
  const std::string sT = structType(nS), oT = structType(nO);
  const double scaleLog2 = k.scale * 1.4426950408889634;

  std::string out;
  Writer w(out);
  auto &os = w.os;
  os << "gpu.module @" << k.name << "_module {\n";
  // Stand-ins for the score / mask regions: the conversion inlines the
  // regions at each call and erases these declarations.
  if (k.scoreRegion)
    os << "  func.func private @" << k.name
       << "_score(f32, index, index, index, index) -> f32\n";
  if (k.maskRegion)
    os << "  func.func private @" << k.name
       << "_mask(index, index, index, index) -> i1\n";
  os << "  llvm.mlir.global external @" << k.name
     << "_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : "
        "!llvm.array<0 x i8>\n";
  os << "  llvm.func @" << k.name
     << "(%q: !llvm.ptr<1>, %k: !llvm.ptr<1>, %v: !llvm.ptr<1>, %o: "
        "!llvm.ptr<1>";
  if (k.lse)
    os << ", %lse: !llvm.ptr<1>";
  // Split-KV partial form: out [S, B, Sq, H, D] f32, lse [S, B, H, Sq].
  const bool partial = k.splitPartial;
  const char *dimNames[] = {"q", "k", "v", "o"};
  // Varlen: q and out [Tq, H, D], k and v [Tk, Hkv, D], lse [Hq, Tq].
  auto rankOf = [&](char n) -> int {
    if (n == 'o')
      return partial ? 5 : k.varlenQ ? 3 : 4;
    return (n == 'q' ? k.varlenQ : k.varlenK) ? 3 : 4;
  };
  for (const char *n : dimNames)
    for (int i = 0; i < rankOf(n[0]); ++i)
      os << ", %" << n << "d" << i << ": i64";
  if (k.lse)
    for (int i = 0; i < (partial ? 4 : k.varlenQ ? 2 : 3); ++i)
      os << ", %ld" << i << ": i64";
  std::vector<const char *> maps = {"qmap", "kmap", "vmap"};
  if (k.tmaStore)
    maps.push_back("omap");
  for (const char *n : maps)
    os << ", %" << n
       << ": !llvm.ptr {llvm.byval = !llvm.array<128 x i8>, llvm.align = 64 : i64, "
          "nvvm.grid_constant}";
  // Dynamic schedule: a u32 tile counter, zero at launch.
  if (k.heavyFirst)
    os << ", %tile_counter: !llvm.ptr<1>";
  // Sequence-aware tiles: the runtime's tile table (Sm90KernelSpec::tileTable).
  if (k.tileTable)
    os << ", %tile_table: !llvm.ptr<1>, %tile_table_inline: !llvm.ptr {llvm.byval = "
          "!llvm.array<"
       << kSm90InlineTableBytes
       << " x i8>, llvm.align = 16 : i64, nvvm.grid_constant}";
  // Paged KV: the page lists. The runtime passes either the block_table
  // itself (device memory: a sequence's list at b x max_pages) or the copies
  // of the lists it put in the tile table; t.kRow is where the tile's list
  // starts either way.
  if (k.pageSize)
    os << ", %page_table: !llvm.ptr<1>";
  // Fused combine: the final out and lse, and the per-tile counters.
  const bool fused = partial && k.fusedCombine;
  if (fused)
    os << ", %merge_out: !llvm.ptr<1>, %merge_lse: !llvm.ptr<1>, %merge_counters: "
          "!llvm.ptr<1>";
  // One CTA per SM: e.g. with C = 2, 384 threads at 168 registers each, the
  // budget setmaxnreg redistributes (PTX ISA, setmaxnreg: registers at launch x threads, not 65536).
  os << ") attributes {nvvm.kernel, nvvm.maxntid = array<i32: " << threads
     << ", 1, 1>, nvvm.minctasm = 1 : i32} {\n";

  // Thread coordinates and shared memory.
  std::string tid = w.op("nvvm.read.ptx.sreg.tid.x : i32");
  std::string cta = w.op("nvvm.read.ptx.sreg.ctaid.x : i32");
  std::string ncta = w.op("nvvm.read.ptx.sreg.nctaid.x : i32");
  std::string c0 = w.i32(0), c1 = w.i32(1), c2 = w.i32(2), c4 = w.i32(4),
              c8 = w.i32(8), c16 = w.i32(16), c32 = w.i32(32),
              c128 = w.i32(128), cST = w.i32(ST);
  std::string smem = w.op("llvm.mlir.addressof @" + k.name + "_smem : !llvm.ptr<3>");
  auto at = [&](int64_t off) {
    return w.op("llvm.getelementptr " + smem + "[" + std::to_string(off) +
                "] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8");
  };
  // Barrier counts: full barriers complete on the TMA bytes after the
  // producer's one arrival; empty barriers when every consumer thread has
  // arrived.
  std::string isLeader = w.op("arith.cmpi eq, " + tid + ", " + c0 + " : i32");
  w.line("scf.if " + isLeader + " {");
  // The tensor maps (kernel parameters) into the tensormap cache before the
  // first copy needs them (PTX ISA, prefetch.tensormap), as
  // FlashAttention-3's producer does at entry: the first TMA load of a
  // short launch (decode, 512-key prefill) no longer waits for its
  // descriptor's fetch.
  for (const char *n : maps)
    w.line(std::string("  nvvm.prefetch tensormap in_param_space, %") + n + " : !llvm.ptr");
  std::string consumersC = w.i32(128 * C);
  // K / V full barriers: the producer thread's arrival (with the TMA
  // bytes), or with per-row copies the 128 producer threads' arrivals.
  std::string fullKV = k.kvRowCopies ? w.i32(128) : c1;
  w.line("  nvvm.mbarrier.init " + at(L.fullQ()) + ", " + c1 + " : !llvm.ptr<3>, i32");
  w.line("  nvvm.mbarrier.init " + at(L.emptyQ()) + ", " + consumersC +
         " : !llvm.ptr<3>, i32");
  for (int64_t s = 0; s < ST; ++s) {
    w.line("  nvvm.mbarrier.init " + at(L.fullK() + 8 * s) + ", " + fullKV +
           " : !llvm.ptr<3>, i32");
    w.line("  nvvm.mbarrier.init " + at(L.fullV() + 8 * s) + ", " + fullKV +
           " : !llvm.ptr<3>, i32");
    w.line("  nvvm.mbarrier.init " + at(L.emptyK() + 8 * s) + ", " + consumersC +
           " : !llvm.ptr<3>, i32");
    w.line("  nvvm.mbarrier.init " + at(L.emptyV() + 8 * s) + ", " + consumersC +
           " : !llvm.ptr<3>, i32");
  }
  if (k.tileTable)
    w.line("  nvvm.mbarrier.init " + at(L.auxV()) + ", " + c1 + " : !llvm.ptr<3>, i32");
  w.line("  nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = "
         "#nvvm.shared_space<cta>}");
  w.line("}");
  w.line("nvvm.barrier0");

  // Problem sizes.
  auto trunc = [&](const std::string &v) {
    return w.op("arith.trunci " + v + " : i64 to i32");
  };
  // sqDim: the extent of q's position dimension (Sq, or Tq when packed by
  // cu_seqlens_q), the stride unit of out and lse rows.
  const bool table = k.tileTable;
  std::string batch = table ? "" : trunc("%qd0"),
              sqDim = trunc(k.varlenQ ? "%qd0" : "%qd1"),
              hq = trunc(k.varlenQ ? "%qd1" : "%qd2"),
              sk = table ? "" : trunc("%kd1"),
              hkv = trunc(k.varlenK ? "%kd1" : "%kd2");
  std::string sq = table ? "" : sqDim;
  std::string groups = w.bin("arith.divui", hq, hkv, "i32");
  std::string cBM = w.i32(BM);
  // pack_gqa: the G query heads of a kv head share its tiles; packed row
  // R = i G + g is query position i of head kvh G + g (FlashAttention-3's
  // order), so a tile's rows cover BM / G positions of all G heads.
  // With kvHeadsPerBlock = HP > 1 a tile serves HP consecutive kv heads
  // (a kv group): packed row R = i G' + hp G + g (G' = HP G) is position i
  // of query head (kvg HP + hp) G + g, and t.kvh is the kv group.
  const int64_t HP = k.kvHeadsPerBlock;
  const int64_t G = k.packGroups * HP;
  const bool packed = G > 1;
  std::string cG = w.i32(G);
  std::string tileHeads =
      !packed ? hq : HP > 1 ? w.bin("arith.divui", hkv, w.i32(HP), "i32") : hkv;
  std::string rowsTotal, nmb, nbh, ntiles, entryCount;
  if (table) {
    // Entry 0 of the table holds the number of (sequence, m_block) entries
    // (each serves every head) and, at word 2, the heads per L2 group.
    // The table is read where the runtime put it: device memory, or with a
    // null pointer the kernel parameter (kSm90InlineTableBytes), through a
    // generic pointer (a grid-constant parameter's address is generic).
    std::string global = w.op("llvm.addrspacecast %tile_table : !llvm.ptr<1> to !llvm.ptr");
    std::string isNull = w.op("llvm.icmp \"eq\" %tile_table, " +
                              w.op("llvm.mlir.zero : !llvm.ptr<1>") + " : !llvm.ptr<1>");
    w.line("%tt = llvm.select " + isNull + ", %tile_table_inline, " + global +
           " : i1, !llvm.ptr");
    entryCount = w.op("llvm.load %tt {invariant} : !llvm.ptr -> i32");
    ntiles = w.bin("arith.muli", entryCount, tileHeads, "i32");
  } else {
    rowsTotal = packed ? w.bin("arith.muli", sq, cG, "i32") : sq;
    nmb = w.bin("arith.ceildivui", rowsTotal, cBM, "i32");
    nbh = w.bin("arith.muli", batch, tileHeads, "i32");
    ntiles = w.bin("arith.muli", nbh, nmb, "i32");
  }
  // The split count is the partial out's leading dimension at run time (the
  // runtime may choose it per launch: automatic num_splits).
  std::string nsplit = partial ? trunc("%od0") : "";
  if (partial)
    ntiles = w.bin("arith.muli", ntiles, nsplit, "i32");
  // Keys per key block: BN, or BN / HP (a block's BN shared-memory rows
  // hold BN / HP keys of HP kv heads, row n = key (n / HP), head n % HP).
  const int64_t KB = BN / HP;
  std::string cBN = w.i32(KB);
  // Paged KV over pages smaller than a key block, one kv head a box: one
  // box per page, in the page panel layout (sm90PagePanels).
  const bool panels = sm90PagePanels(k.pageSize, BN, HP, k.kvRowCopies);
  std::string off = table ? "" : w.bin("arith.subi", sk, sq, "i32");
  std::string negInf = w.op("arith.constant 0xFF800000 : f32");
  std::string zeroF = w.f32(0.0);
  std::string full = w.op("arith.constant -1 : i32");
  std::string clamp = w.i32(31);
  std::string waitTicks = w.i32(10000000);
  // Reduces `vals` (not empty) as k.reduceChains interleaved chains (value
  // i into chain i % chains), then a tree over the chains: a dependency
  // path of about n / chains + log2 chains ops instead of n - 1, for
  // chains - 1 more live registers.
  auto treeReduce = [&](const std::vector<std::string> &vals, const char *combine) {
    assert(!vals.empty() && "a row holds at least one score per thread");
    const size_t chains = std::max<int64_t>(k.reduceChains, 1);
    std::vector<std::string> acc;
    for (size_t i = 0; i < vals.size(); ++i) {
      if (i < chains)
        acc.push_back(vals[i]);
      else
        acc[i % chains] = w.bin(combine, acc[i % chains], vals[i], "f32");
    }
    while (acc.size() > 1) {
      std::vector<std::string> next;
      for (size_t i = 0; i + 1 < acc.size(); i += 2)
        next.push_back(w.bin(combine, acc[i], acc[i + 1], "f32"));
      if (acc.size() % 2)
        next.push_back(acc.back());
      acc.swap(next);
    }
    return acc.front();
  };
  // Lane 0's `v` in every lane of the warp (shfl.sync idx): also how ptxas
  // learns that a value is the same across the warp.
  auto warpUniform = [&](const std::string &v) {
    return w.op("nvvm.shfl.sync idx " + full + ", " + v + ", " + c0 + ", " + clamp +
                " : i32 -> i32");
  };
  // A row of the accumulator lives in the 4 lanes of a quad: reduce with
  // two butterfly shuffles (xor 1, 2).
  auto quadReduce = [&](std::string v, const char *combine) {
    for (const std::string &sh : {c1, c2}) {
      std::string o = w.op("nvvm.shfl.sync bfly " + full + ", " + v + ", " + sh +
                           ", " + clamp + " : f32 -> f32");
      v = w.bin(combine, v, o, "f32");
    }
    return v;
  };

  // Barrier `base` + 8 * slot.
  auto barAt = [&](int64_t base, const std::string &slot) {
    std::string offset = w.bin("arith.muli", slot, c8, "i32");
    offset = w.bin("arith.addi", offset, w.i32(base), "i32");
    return w.op("llvm.getelementptr " + smem + "[" + offset +
                "] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8");
  };
  auto slotBase = [&](int64_t base, const std::string &slot) {
    std::string offset = w.bin("arith.muli", slot, w.i32(L.kvBytes), "i32");
    offset = w.bin("arith.addi", offset, w.i32(base), "i32");
    return w.op("llvm.getelementptr " + smem + "[" + offset +
                "] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8");
  };
  auto ptrAdd = [&](const std::string &base, int64_t o) {
    return w.op("llvm.getelementptr " + base + "[" + std::to_string(o) +
                "] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8");
  };
  auto waitParity = [&](const std::string &bar, const std::string &parity) {
    w.line("nvvm.mbarrier.try_wait.parity " + bar + ", " + parity + ", " +
           waitTicks + " : !llvm.ptr<3>, i32, i32");
  };
  // Stage slot and phase parity of the g-th key block a CTA handles.
  auto slotOf = [&](const std::string &g) { return w.bin("arith.remui", g, cST, "i32"); };
  auto parityOf = [&](const std::string &g) {
    return w.bin("arith.andi", w.bin("arith.divui", g, cST, "i32"), c1, "i32");
  };

  // A tile's coordinates and key-block range, the same in the producer and
  // the consumers.
  // sq, sk, off (= sk - sq) and rowsTotal are the tile's sequence's;
  // (qRow, qb) and (kRow, kb) are the TMA coordinates (position, batch) of
  // its first query and key; b is the sequence (region argument).
  struct Tile {
    std::string b, h, kvh, m0, m1, split, nbLo, nblocks;
    std::string sq, sk, off, rowsTotal, qRow, qb, kRow, kb, entry;
  };
  // Field f of tile-table entry e. Invariant loads may be merged; the
  // epilogue's plain reloads are not, so the fields it needs do not occupy
  // registers through the key-block loop (a dense kernel reads them from
  // its parameters).
  auto tableField = [&](const std::string &e, int f, bool invariant) {
    std::string at0 = w.bin("arith.muli", w.bin("arith.addi", e, c1, "i32"), c8, "i32");
    std::string p = w.op("llvm.getelementptr %tt[" +
                         w.bin("arith.addi", at0, w.i32(f), "i32") +
                         "] : (!llvm.ptr, i32) -> !llvm.ptr, i32");
    return w.op("llvm.load " + p + (invariant ? " {invariant}" : "") +
                " : !llvm.ptr -> i32");
  };
  // The L2 groups of the tile orders: tiles go in groups of hg heads
  // (`heads` in all), `rounds` tiles per head in a group (m_blocks, or
  // table entries), head fastest inside a group; the last group may hold
  // fewer heads. Returns (head, round).
  auto groupedOrder = [&](const std::string &tile, const std::string &hg,
                          const std::string &heads, const std::string &rounds) {
    std::string inGroup = w.bin("arith.muli", hg, rounds, "i32");
    std::string first = w.bin("arith.muli", w.bin("arith.divui", tile, inGroup, "i32"), hg,
                              "i32");
    std::string r = w.bin("arith.remui", tile, inGroup, "i32");
    std::string hgHere = w.bin("arith.minui", hg, w.bin("arith.subi", heads, first, "i32"),
                               "i32");
    std::string head = w.bin("arith.addi", first, w.bin("arith.remui", r, hgHere, "i32"), "i32");
    return std::make_pair(head, w.bin("arith.divui", r, hgHere, "i32"));
  };
  auto decodeTile = [&](const std::string &tileIn) {
    Tile t;
    // Tile order. Static: m_block fastest, so the CTAs running at once share
    // a head's K/V in L2. Heavy-first (masks whose work grows with m_block):
    // m_block slowest and descending, (batch, head) fastest, so every round
    // of the persistent loop hands out tiles of about the same length,
    // longest first (FlashAttention-3's LPT order, without the atomic
    // counter). Split-KV: the split is the fastest index.
    std::string tile = tileIn, mb, bh;
    if (partial) {
      t.split = w.bin("arith.remui", tile, nsplit, "i32");
      tile = w.bin("arith.divui", tile, nsplit, "i32");
    }
    if (table) {
      // Table mode: in groups of hg heads (the table's word 2, the heads
      // whose K/V fit 32 MB of L2, as the lpt order's groups below), entry
      // by entry in the runtime's order (longest first), head fastest;
      // entry e (8 i32 at 32 (e + 1) bytes) = q position, q batch, q
      // length, k position, k batch, k length, m_block, sequence.
      // (A plain load per tile: hoisted, it would hold a register through
      // the key-block loop; 3-consumer head_dim 64 kernels then spill.)
      std::string hgAt =
          w.op("llvm.getelementptr %tt[2] : (!llvm.ptr) -> !llvm.ptr, i32");
      std::string hg = w.bin(
          "arith.minui",
          w.bin("arith.maxui", w.op("llvm.load " + hgAt + " : !llvm.ptr -> i32"), c1, "i32"),
          tileHeads, "i32");
      std::string e;
      std::tie(t.h, e) = groupedOrder(tile, hg, tileHeads, entryCount);
      t.entry = e;
      auto field = [&](int f) { return tableField(e, f, true); };
      t.qRow = field(0);
      t.qb = field(1);
      t.sq = field(2);
      t.kRow = field(3);
      t.kb = field(4);
      t.sk = field(5);
      mb = field(6);
      t.b = field(7);
      t.off = w.bin("arith.subi", t.sk, t.sq, "i32");
      t.rowsTotal = packed ? w.bin("arith.muli", t.sq, cG, "i32") : t.sq;
    } else if (k.heavyFirst) {
      // In groups of hg (batch, head)s whose K and V fit 32 MB of L2
      // (FlashAttention-3's L2 swizzle of its LPT scheduler): group by
      // group, and in a group m_block descending, (batch, head) fastest.
      // The CTAs at work then share a few heads' K/V in L2 instead of
      // streaming every head's (with all heads in one round, a 2k causal
      // call re-reads K/V from HBM for each m_block).
      // hg = (32 MB / 4D) / Sk: no product that could wrap in i32.
      std::string hg = w.bin(
          "arith.maxsi",
          w.bin("arith.divui", w.i32((int64_t(32) << 20) / (4 * D)),
                w.bin("arith.maxsi", sk, c1, "i32"), "i32"),
          c1, "i32");
      // Query heads sharing a kv head share its K/V.
      if (!packed)
        hg = w.bin("arith.muli", hg, groups, "i32");
      hg = w.bin("arith.minui", hg, nbh, "i32");
      std::string round;
      std::tie(bh, round) = groupedOrder(tile, hg, nbh, nmb);
      mb = w.bin("arith.subi", w.bin("arith.subi", nmb, c1, "i32"), round, "i32");
    } else {
      mb = w.bin("arith.remui", tile, nmb, "i32");
      bh = w.bin("arith.divui", tile, nmb, "i32");
    }
    // t.h: the query head, or with pack_gqa the kv head.
    if (!table) {
      t.h = w.bin("arith.remui", bh, tileHeads, "i32");
      t.b = w.bin("arith.divui", bh, tileHeads, "i32");
      t.sq = sq;
      t.sk = sk;
      t.off = off;
      t.rowsTotal = rowsTotal;
      t.qRow = t.kRow = c0;
      t.qb = t.kb = t.b;
    }
    const std::string &sk = t.sk, &off = t.off, &rowsTotal = t.rowsTotal;
    t.kvh = packed ? t.h : w.bin("arith.divui", t.h, groups, "i32");
    t.m0 = w.bin("arith.muli", mb, cBM, "i32");
    // Key range (docs/ARCHITECTURE.md, "Rules every lowering keeps"): n_max = min(Sk, m1 + c), c from causal,
    // over the query positions [pos0, pos1) of the tile's rows.
    std::string rows =
        w.bin("arith.minsi", cBM, w.bin("arith.subi", rowsTotal, t.m0, "i32"), "i32");
    std::string rowEnd = w.bin("arith.addi", t.m0, rows, "i32");
    t.m1 = packed ? w.bin("arith.ceildivui", rowEnd, cG, "i32") : rowEnd;
    std::string pos0 = packed ? w.bin("arith.divui", t.m0, cG, "i32") : t.m0;
    std::string nHi = sk;
    if (k.causal == 1)
      nHi = w.bin("arith.minsi", nHi, t.m1, "i32");
    if (k.causal == 2)
      nHi = w.bin("arith.minsi", nHi, w.bin("arith.addi", t.m1, off, "i32"), "i32");
    if (k.windowRight >= 0)
      nHi = w.bin("arith.minsi", nHi,
                  w.bin("arith.addi", w.bin("arith.addi", t.m1, off, "i32"),
                        w.i32(k.windowRight), "i32"),
                  "i32");
    nHi = w.bin("arith.maxsi", nHi, c0, "i32");
    // n_min = max(0, m0 + Sk - Sq - L) with a left window, as key blocks.
    t.nbLo = c0;
    if (k.windowLeft >= 0) {
      std::string nLo = w.bin("arith.subi", w.bin("arith.addi", pos0, off, "i32"),
                              w.i32(k.windowLeft), "i32");
      nLo = w.bin("arith.maxsi", nLo, c0, "i32");
      t.nbLo = w.bin("arith.divsi", nLo, cBN, "i32");
    }
    std::string nbHi = w.bin("arith.ceildivsi", nHi, cBN, "i32");
    if (partial) {
      // The split's key blocks (as flashattn-tile):
      // [s * ceil(nblk / S), (s + 1) * ceil(nblk / S)) of nblk = ceil(Sk / BN).
      std::string per = w.bin("arith.ceildivsi",
                              w.bin("arith.ceildivsi", sk, cBN, "i32"), nsplit, "i32");
      std::string sLo = w.bin("arith.muli", t.split, per, "i32");
      t.nbLo = w.bin("arith.maxsi", t.nbLo, sLo, "i32");
      nbHi = w.bin("arith.minsi", nbHi, w.bin("arith.addi", sLo, per, "i32"), "i32");
    }
    t.nblocks = w.bin("arith.maxsi", w.bin("arith.subi", nbHi, t.nbLo, "i32"), c0, "i32");
    return t;
  };

  std::string wg = w.bin("arith.divui", tid, c128, "i32");
  std::string isProducer = w.op("arith.cmpi eq, " + wg + ", " + c0 + " : i32");
  w.line("scf.if " + isProducer + " {");
  //===--------------------------------------------------------------------===//
  // Producer: thread 0 issues the TMA loads; the rest of warpgroup 0 leaves
  // (with kvRowCopies all 128 threads copy K and V rows).
  //===--------------------------------------------------------------------===//
  const bool rowCopies = k.kvRowCopies;
  if (k.producerRegs)
    w.line("nvvm.setmaxregister decrease " + std::to_string(k.producerRegs));
  // The L2 policies of the TMA loads (Sm90KernelSpec::l2HintQ / l2HintKV):
  // a 64-bit policy from createpolicy (PTX ISA, "createpolicy"; MLIR's
  // NVVM dialect has no op for it), passed as the loads' l2_cache_hint. It
  // is made again at each load (one instruction, marked with side effects
  // so that it stays there): kept across the loop, the 64-bit value made
  // the 40-register producer spill.
  auto policy = [&](L2Hint hint) -> std::string {
    if (hint == L2Hint::none)
      return "";
    const char *level = hint == L2Hint::evictFirst ? "evict_first" : "evict_last";
    return " l2_cache_hint = " +
           w.op(std::string("llvm.inline_asm has_side_effects asm_dialect = att "
                            "\"createpolicy.fractional.L2::") +
                level + ".b64 $0, 1.0;\", \"=l\" : () -> i64");
  };
  auto qHint = [&] { return policy(k.l2HintQ); };
  auto kvHint = [&] { return policy(k.l2HintKV); };
  // TMA: thread 0 issues everything; with the tile table warp 0 runs the
  // loop (it zeroes the V rows past a sequence).
  if (!rowCopies)
    w.line("scf.if " +
           (k.tileTable ? w.op("arith.cmpi ult, " + tid + ", " + c32 + " : i32") : isLeader) +
           " {");
  // a + b, or b when a is the constant 0 (the dense kernel's positions).
  auto plus = [&](const std::string &a, const std::string &b) {
    return a == c0 ? b : w.bin("arith.addi", a, b, "i32");
  };
  // The trailing TMA coordinates (position, batch) of a 4-D map, or the
  // position alone of a 3-D one (varlen: [T, H, D]).
  auto posBatch = [&](bool varlen, const std::string &pos, const std::string &b) {
    return varlen ? pos : pos + ", " + b;
  };
  // Paged KV: the pages key block `nb` of the tile's sequence reads, and
  // the first row it needs in the first of them. The sequence's page list
  // starts at index t.kRow of %page_table (the device block_table's row b,
  // or the runtime's copy of block_table[b, : ceil(k_len / page_size)] in
  // the tile table). With pages of at least block_n keys
  // (page_size a multiple of block_n) a block lies in one page; with
  // smaller pages (block_n a multiple of page_size) it spans block_n /
  // page_size of them, the last clamped to the sequence's last page (those
  // keys are masked).
  const int64_t PS = k.pageSize;
  // Entry `index` of the tile's page list.
  auto pageIndex = [&](const Tile &t, const std::string &index) {
    std::string p = w.op("llvm.getelementptr %page_table[" +
                         w.bin("arith.addi", t.kRow, index, "i32") +
                         "] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32");
    return w.op("llvm.load " + p + " {invariant} : !llvm.ptr<1> -> i32");
  };
  // The sequence's last page (its index in the list).
  auto lastPage = [&](const Tile &t) {
    return w.bin("arith.subi", w.bin("arith.ceildivui", t.sk, w.i32(PS), "i32"), c1, "i32");
  };
  // Pages of at least block_n keys: the page of block nb and its first row
  // there. (Smaller pages go box by box, one lane each: lanePages.)
  auto pagesOf = [&](const std::string &nb, const Tile &t) {
    std::string key0 = w.bin("arith.muli", nb, cBN, "i32");
    std::string cPS = w.i32(PS);
    return std::vector<std::string>{pageIndex(t, w.bin("arith.divui", key0, cPS, "i32")),
                                    w.bin("arith.remui", key0, cPS, "i32")};
  };
  // Issues the TMA loads of one K (or V) block into `base`.
  auto loadKV = [&](const std::string &map, const std::string &base,
                    const std::string &bar, const std::string &nb,
                    const std::string &kvh, const Tile &t,
                    const std::vector<std::string> &pages) {
    w.line("nvvm.mbarrier.arrive.expect_tx " + bar + ", " + w.i32(L.kvBytes) +
           " : !llvm.ptr<3>, i32");
    if (PS) {
      // A page holding the whole block: one box per 64 columns, block_n
      // rows from the block's first row in the page.
      for (int64_t i = 0; i < boxes; ++i) {
        std::string dst = w.op("llvm.addrspacecast " + ptrAdd(base, i * BN * 128) +
                               " : !llvm.ptr<3> to !llvm.ptr<7>");
        w.line("nvvm.cp.async.bulk.tensor.shared.cluster.global " + dst + ", " + map + ", " +
               bar + ", box[" + w.i32(64 * i) + ", " + kvh + ", " + pages[1] + ", " +
               pages[0] + "]" + kvHint() + " : !llvm.ptr<7>, !llvm.ptr");
      }
      return;
    }
    std::string row = plus(t.kRow, w.bin("arith.muli", nb, cBN, "i32"));
    for (int64_t i = 0; i < boxes; ++i) {
      std::string dst = w.op("llvm.addrspacecast " + ptrAdd(base, i * BN * 128) +
                             " : !llvm.ptr<3> to !llvm.ptr<7>");
      w.line("nvvm.cp.async.bulk.tensor.shared.cluster.global " + dst + ", " +
             map + ", " + bar + ", box[" + w.i32(64 * i) + ", " + kvh + ", " +
             posBatch(k.varlenK, row, t.kb) + "]" + kvHint() + " : !llvm.ptr<7>, !llvm.ptr");
    }
  };
  // The persistent loop over tiles. The producer picks each tile and hands
  // its index to the consumers through shared memory (written before the
  // arrive on full_Q, whose release / acquire orders it). Static: tile +=
  // gridDim. Dynamic (lpt): after the first (blockIdx), the next tile comes
  // from the atomic counter, so a CTA that finished early takes the next
  // longest tile (FlashAttention-3's scheduler). Past the last tile the
  // producer writes the index with no Q load: the consumers stop.
  std::string tileSlot = at(L.tileSlot());
  // With no more tiles than CTAs every tile is some CTA's first: the
  // counter is not touched (the runtime then passes it unzeroed, saving a
  // memset on the stream: decode launches).
  auto nextTile = [&](const std::string &tile) {
    if (!k.heavyFirst)
      return w.bin("arith.addi", tile, ncta, "i32");
    std::string more = w.op("arith.cmpi ugt, " + ntiles + ", " + ncta + " : i32");
    std::string next = w.fresh();
    w.line(next + " = scf.if " + more + " -> (i32) {");
    std::string got = w.op("llvm.atomicrmw add %tile_counter, " + c1 +
                           " monotonic : !llvm.ptr<1>, i32");
    w.line("scf.yield " + w.bin("arith.addi", got, ncta, "i32") + " : i32");
    w.line("} else {");
    w.line("scf.yield " + ntiles + " : i32");
    w.line("}");
    return next;
  };
  // Q's buffer is free again once the consumers released the previous
  // tile's Q (and read its index).
  auto waitQFree = [&](const std::string &tc) {
    std::string reuseQ = w.op("arith.cmpi ugt, " + tc + ", " + c0 + " : i32");
    w.line("scf.if " + reuseQ + " {");
    std::string qPar = w.bin("arith.andi", w.bin("arith.addi", tc, c1, "i32"), c1, "i32");
    waitParity(at(L.emptyQ()), qPar);
    w.line("}");
  };
  // Issues the TMA load of tile t's Q.
  auto loadQ = [&](const Tile &t) {
    std::string barQ = at(L.fullQ());
    w.line("nvvm.mbarrier.arrive.expect_tx " + barQ + ", " + w.i32(L.qBytes) +
           " : !llvm.ptr<3>, i32");
    for (int64_t i = 0; i < boxes; ++i) {
      std::string dst = w.op("llvm.addrspacecast " + at(i * BM * 128) +
                             " : !llvm.ptr<3> to !llvm.ptr<7>");
      // pack_gqa: a 5-D map over q viewed as [B, Sq, Hkv, G, D], box
      // (64, G, 1, BM / G, 1): the box lands as packed rows i G + g.
      std::string coords =
          packed ? w.i32(64 * i) + ", " + c0 + ", " + t.kvh + ", " +
                       posBatch(k.varlenQ,
                                plus(t.qRow, w.bin("arith.divui", t.m0, cG, "i32")),
                                t.qb)
                 : w.i32(64 * i) + ", " + t.h + ", " +
                       posBatch(k.varlenQ, plus(t.qRow, t.m0), t.qb);
      w.line("nvvm.cp.async.bulk.tensor.shared.cluster.global " + dst +
             ", %qmap, " + barQ + ", box[" + coords + "]" + qHint() + " : !llvm.ptr<7>, !llvm.ptr");
    }
  };
  // The stage slot of the g-th key block a CTA loads, the parity of the
  // empty barriers' previous use (g / stages - 1), and whether that use
  // exists (the stage was filled before).
  auto stageUse = [&](const std::string &g) {
    std::string slot = slotOf(g);
    std::string ePar = w.bin(
        "arith.andi",
        w.bin("arith.addi", w.bin("arith.divui", g, cST, "i32"), c1, "i32"), c1, "i32");
    std::string reuse = w.op("arith.cmpi uge, " + g + ", " + cST + " : i32");
    return std::make_tuple(slot, ePar, reuse);
  };
  if (rowCopies) {
    // Per-row copies (paged KV with pages of fewer than 8 keys, where one
    // TMA box per page would not land 1024-byte aligned; FlashAttention-3's
    // non-TMA paged path): all 128 producer threads copy each K / V block
    // with cp.async (16 bytes each, PTX ISA 9.7.9.3), into the 128-byte
    // swizzled layout TMA would have made (16-byte chunk j of row r at
    // chunk j ^ (r % 8)). Thread 0 still picks the tiles and loads Q; it
    // hands each tile's index to the other producer threads through the
    // tile slot and a named barrier. A block's full barriers count the 128
    // threads: each waits for its own copies (cp.async.wait_group, one
    // block behind, so two blocks' copies are in flight), fences them for
    // the async proxy that wgmma reads through, and arrives (block g - 1
    // after K_g is issued).
    std::string prodBar = w.i32(2 * C + 1);
    // Thread t copies chunk column cc = t % (D / 8) of rows t / (D / 8) +
    // i x 128 / (D / 8): 128 is a multiple of D / 8, so cc (its 64-column
    // box and chunk) stays the thread's, and only the row moves.
    const int64_t chunksPerRow = D / 8, rowStep = 128 / chunksPerRow;
    std::string cCh = w.i32(chunksPerRow);
    std::string cc = w.bin("arith.remui", tid, cCh, "i32");
    std::string row0 = w.bin("arith.divui", tid, cCh, "i32");
    std::string ccBox = w.bin("arith.divui", cc, c8, "i32");
    std::string ccChunk = w.bin("arith.remui", cc, c8, "i32");
    // Rows per thread, BN / rowStep = BN x D / 1024, from k's head_dim
    // parameter (= D) so that LLVM keeps a loop instead of unrolling 16
    // copies whose address registers the 40-register producer cannot hold.
    std::string perThread = w.bin(
        "arith.divui",
        w.bin("arith.muli", w.op("arith.trunci %kd3 : i64 to i32"), w.i32(BN), "i32"),
        w.i32(1024), "i32");
    // The rows of block nb of `pool` (k or v) into the slot at `base`, one
    // commit group.
    auto copyRows = [&](const std::string &pool, const std::string &base,
                        const std::string &nb, const Tile &t) {
      std::string key0 = w.bin("arith.muli", nb, cBN, "i32");
      std::string last = lastPage(t);
      auto e64 = [&](const std::string &v) { return w.op("arith.extui " + v + " : i32 to i64"); };
      // Element offset of (kv head, chunk column) within a pool row.
      std::string colOff = w.bin("arith.addi",
                                 w.bin("arith.muli", e64(t.kvh), w.i64(D), "i64"),
                                 w.bin("arith.muli", e64(cc), w.i64(8), "i64"), "i64");
      std::string rowElems = w.bin("arith.muli", e64(hkv), w.i64(D), "i64");
      std::string dstBox = w.bin("arith.muli", ccBox, w.i32(BN * 128), "i32");
      w.line("scf.for %ci = " + c0 + " to " + perThread + " step " + c1 + " : i32 {");
      std::string r = w.bin("arith.addi", row0, w.bin("arith.muli", "%ci", w.i32(rowStep), "i32"),
                            "i32");
      std::string key = w.bin("arith.addi", key0, r, "i32");
      std::string pidx = w.bin("arith.minui", w.bin("arith.divui", key, w.i32(PS), "i32"),
                               last, "i32");
      std::string page = pageIndex(t, pidx);
      // A page index outside the pool (a device block_table is not checked
      // on the host) reads page 0 with source size 0: zeros, never memory
      // outside k or v. (TMA boxes outside the pool are zero-filled.)
      std::string inPool = w.op("arith.cmpi ult, " + page + ", " +
                                w.op("arith.trunci %kd0 : i64 to i32") + " : i32");
      page = w.op("arith.select " + inPool + ", " + page + ", " + c0 + " : i32");
      std::string grow = e64(page);
      if (PS > 1)
        grow = w.bin("arith.addi", w.bin("arith.muli", grow, w.i64(PS), "i64"),
                     e64(w.bin("arith.remui", key, w.i32(PS), "i32")), "i64");
      std::string elem = w.bin("arith.addi", w.bin("arith.muli", grow, rowElems, "i64"),
                               colOff, "i64");
      std::string sw = w.bin("arith.xori", ccChunk, w.bin("arith.andi", r, w.i32(7), "i32"),
                             "i32");
      std::string off = w.bin(
          "arith.addi",
          w.bin("arith.addi", dstBox, w.bin("arith.muli", r, c128, "i32"), "i32"),
          w.bin("arith.muli", sw, c16, "i32"), "i32");
      std::string src = w.op("llvm.getelementptr " + pool + "[" + elem +
                             "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i16");
      std::string dst = w.op("llvm.getelementptr " + base + "[" + off +
                             "] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8");
      // Keys past the sequence: source size 0, so the 16 bytes are zeros
      // (PTX ISA 9.7.9.3, cp.async src-size): their P is 0, and 0 x NaN of
      // whatever follows the sequence would be NaN.
      std::string real = w.bin("arith.andi",
                               w.op("arith.cmpi slt, " + key + ", " + t.sk + " : i32"),
                               inPool, "i1");
      std::string bytes = w.op("arith.select " + real + ", " + c16 + ", " + c0 + " : i32");
      w.line("nvvm.cp.async.shared.global " + dst + ", " + src +
             ", 16, cache = cg, " + bytes + " : !llvm.ptr<3>, !llvm.ptr<1>, i32");
      w.line("}");
      w.line("nvvm.cp.async.commit.group");
    };
    // Block g's copies have landed (for this thread, all but the `pending`
    // most recent groups): fence, arrive.
    auto finish = [&](const std::string &g, int pending) {
      w.line("nvvm.cp.async.wait.group " + std::to_string(pending));
      w.line("nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = "
             "#nvvm.shared_space<cta>}");
      std::string s = slotOf(g);
      w.line("nvvm.mbarrier.arrive " + barAt(L.fullK(), s) + " : !llvm.ptr<3>");
      w.line("nvvm.mbarrier.arrive " + barAt(L.fullV(), s) + " : !llvm.ptr<3>");
    };
    w.line("%pt:3 = scf.while (%ptile = " + cta + ", %pg = " + c0 + ", %ptc = " + c0 +
           ") : (i32, i32, i32) -> (i32, i32, i32) {");
    // Thread 0: publish the tile, load its Q (past the last tile: an
    // arrival with no bytes, the consumers stop). The first barrier keeps
    // it from overwriting the slot before every producer thread read the
    // previous tile (a tile with no key blocks frees Q at once).
    w.line("nvvm.barrier id = " + prodBar + " number_of_threads = " + c128);
    w.line("scf.if " + isLeader + " {");
    waitQFree("%ptc");
    w.line("llvm.store %ptile, " + tileSlot + " : i32, !llvm.ptr<3>");
    std::string more = w.op("arith.cmpi ult, %ptile, " + ntiles + " : i32");
    w.line("scf.if " + more + " {");
    loadQ(decodeTile("%ptile"));
    w.line("} else {");
    w.line("nvvm.mbarrier.arrive " + at(L.fullQ()) + " : !llvm.ptr<3>");
    w.line("}");
    w.line("}");
    w.line("nvvm.barrier id = " + prodBar + " number_of_threads = " + c128);
    std::string cur = w.op("llvm.load " + tileSlot + " : !llvm.ptr<3> -> i32");
    w.line("scf.condition(" + w.op("arith.cmpi ult, " + cur + ", " + ntiles + " : i32") +
           ") " + cur + ", %pg, %ptc : i32, i32, i32");
    w.line("} do {");
    w.line("^bb0(%pwt: i32, %pwg: i32, %pwtc: i32):");
    {
      Tile t = decodeTile("%pwt");
      w.line("%pn = scf.for %pi = " + c0 + " to " + t.nblocks + " step " + c1 +
             " iter_args(%pgg = %pwg) -> (i32) : i32 {");
      std::string slot, ePar, reuse;
      std::tie(slot, ePar, reuse) = stageUse("%pgg");
      std::string kb = w.bin("arith.addi", t.nbLo, "%pi", "i32");
      w.line("scf.if " + reuse + " {");
      waitParity(barAt(L.emptyK(), slot), ePar);
      w.line("}");
      copyRows("%k", slotBase(L.kOff, slot), kb, t);
      // The previous block of this tile (all groups but K_g's) before the
      // wait for V_g's stage: the consumers release V_{g-2} only after
      // P_{g-2} V_{g-2}, which they issue with S_{g-1} (it needs K_{g-1}).
      std::string behind = w.op("arith.cmpi ugt, %pi, " + c0 + " : i32");
      w.line("scf.if " + behind + " {");
      finish(w.bin("arith.subi", "%pgg", c1, "i32"), 1);
      w.line("}");
      w.line("scf.if " + reuse + " {");
      waitParity(barAt(L.emptyV(), slot), ePar);
      w.line("}");
      copyRows("%v", slotBase(L.vOff, slot), kb, t);
      w.line("scf.yield " + w.bin("arith.addi", "%pgg", c1, "i32") + " : i32");
      w.line("}");
      std::string any = w.op("arith.cmpi sgt, " + t.nblocks + ", " + c0 + " : i32");
      w.line("scf.if " + any + " {");
      finish(w.bin("arith.subi", "%pn", c1, "i32"), 0);
      w.line("}");
      // Thread 0 takes the next tile (the others read it from the slot).
      std::string next = w.fresh();
      w.line(next + " = scf.if " + isLeader + " -> (i32) {");
      w.line("scf.yield " + nextTile("%pwt") + " : i32");
      w.line("} else {");
      w.line("scf.yield %pwt : i32");
      w.line("}");
      w.line("scf.yield " + next + ", %pn, " + w.bin("arith.addi", "%pwtc", c1, "i32") +
             " : i32, i32, i32");
    }
    w.line("}");
  } else {
  // Table mode: warp 0 runs the loop (lane 0 issues every TMA); for a V
  // block that reaches past the sequence it lands on aux_V, the warp zeroes
  // the V rows past the sequence (they hold whatever follows it: a stale
  // cache, the next sequence, NaN; their P is 0 but 0 x NaN is NaN), fences
  // them for the async proxy, and lane 0 completes full_V by hand.
  const bool zeroTail = table;
  std::string lane0 = isLeader;
  auto ifLane0 = [&](const std::function<void()> &body) {
    if (zeroTail)
      w.line("scf.if " + lane0 + " {");
    body();
    if (zeroTail)
      w.line("}");
  };
  // The next tile: with the counter only lane 0 takes it, then broadcasts.
  auto nextTileAll = [&](const std::string &tile) {
    if (!zeroTail || !k.heavyFirst)
      return nextTile(tile);
    std::string got = w.fresh();
    w.line(got + " = scf.if " + lane0 + " -> (i32) {");
    w.line("scf.yield " + nextTile(tile) + " : i32");
    w.line("} else {");
    w.line("scf.yield " + tile + " : i32");
    w.line("}");
    return warpUniform(got);
  };
  // Pages smaller than a key block: lane l of the warp issues boxes l, l +
  // 32, ..., each lane loading only its own page index, after lane 0 set the
  // barrier's byte count. One head a box (page panels, sm90PagePanels): box
  // j is page j whole (4 KB with pages of 16 at head_dim 128), at j x
  // page_size x head_dim x 2 bytes. HP heads a box: block_n / page_size x
  // head_dim / 64 boxes (box j: page j / (head_dim / 64), 64 columns j %
  // (head_dim / 64), landing as the dense layout's rows).
  const bool laneBoxes = PS && PS < BN; // paged KV always has the table
  const int64_t perPage = panels ? 1 : boxes;
  const int64_t nBoxes = laneBoxes ? (KB / PS) * perPage : 0;
  const int64_t boxRounds = (nBoxes + 31) / 32;
  std::string lane = zeroTail ? w.bin("arith.remui", tid, c32, "i32") : "";
  // Per round: the box index of this lane and its page (clamped to the
  // sequence's last page, so that idle lanes load a valid entry too).
  auto lanePages = [&](const std::string &nb, const Tile &t) {
    std::vector<std::pair<std::string, std::string>> v;
    std::string last = lastPage(t);
    std::string first = w.bin("arith.muli", nb, w.i32(KB / PS), "i32");
    for (int64_t r = 0; r < boxRounds; ++r) {
      std::string j = r ? w.bin("arith.addi", lane, w.i32(32 * r), "i32") : lane;
      std::string pj = w.bin("arith.divui", j, w.i32(perPage), "i32");
      v.push_back({j, pageIndex(t, w.bin("arith.minui", plus(first, pj), last, "i32"))});
    }
    return v;
  };
  // Lane 0 sets the byte count (its arrival), the warp syncs, each lane
  // issues its boxes.
  auto loadKVLanes = [&](const std::string &map, const std::string &base,
                         const std::string &bar, const std::string &kvh,
                         const std::vector<std::pair<std::string, std::string>> &pages) {
    ifLane0([&] {
      w.line("nvvm.mbarrier.arrive.expect_tx " + bar + ", " + w.i32(L.kvBytes) +
             " : !llvm.ptr<3>, i32");
    });
    w.line("nvvm.bar.warp.sync " + full + " : i32");
    for (const auto &jp : pages) {
      w.line("scf.if " + w.op("arith.cmpi ult, " + jp.first + ", " + w.i32(nBoxes) +
                              " : i32") + " {");
      if (panels) {
        // Coordinates {0, 0, panel of the kv head, 0, page} of the view.
        std::string offset = w.bin("arith.muli", jp.first, w.i32(PS * boxes * 128), "i32");
        std::string at = w.op("llvm.getelementptr " + base + "[" + offset +
                              "] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8");
        std::string dst = w.op("llvm.addrspacecast " + at + " : !llvm.ptr<3> to !llvm.ptr<7>");
        std::string panel = w.bin("arith.muli", kvh, w.i32(boxes), "i32");
        std::string hint = kvHint();
        w.line("nvvm.cp.async.bulk.tensor.shared.cluster.global " + dst + ", " + map + ", " +
               bar + ", box[" + c0 + ", " + c0 + ", " + panel + ", " + c0 + ", " + jp.second +
               "]" + hint + " : !llvm.ptr<7>, !llvm.ptr");
        w.line("}");
        continue;
      }
      std::string pj = w.bin("arith.divui", jp.first, w.i32(boxes), "i32");
      std::string col = w.bin("arith.remui", jp.first, w.i32(boxes), "i32");
      std::string offset = w.bin("arith.addi", w.bin("arith.muli", col, w.i32(BN * 128), "i32"),
                                 w.bin("arith.muli", pj, w.i32(PS * HP * 128), "i32"),
                                 "i32");
      std::string dst = w.op("llvm.addrspacecast " +
                             w.op("llvm.getelementptr " + base + "[" + offset +
                                  "] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8") +
                             " : !llvm.ptr<3> to !llvm.ptr<7>");
      w.line("nvvm.cp.async.bulk.tensor.shared.cluster.global " + dst + ", " + map + ", " +
             bar + ", box[" + w.bin("arith.muli", col, w.i32(64), "i32") + ", " + kvh + ", " +
             c0 + ", " + jp.second + "]" + kvHint() + " : !llvm.ptr<7>, !llvm.ptr");
      w.line("}");
    }
  };
  std::string loopTypes = zeroTail ? "i32, i32, i32, i32" : "i32, i32, i32";
  w.line(std::string("%pt:") + (zeroTail ? "4" : "3") + " = scf.while (%ptile = " + cta +
         ", %pg = " + c0 + ", %ptc = " + c0 + (zeroTail ? ", %pap = " + c0 : "") + ") : (" +
         loopTypes + ") -> (" + loopTypes + ") {");
  w.line("scf.condition(" + w.op("arith.cmpi ult, %ptile, " + ntiles + " : i32") +
         ") %ptile, %pg, %ptc" + (zeroTail ? ", %pap" : "") + " : " + loopTypes);
  w.line("} do {");
  w.line(std::string("^bb0(%pwt: i32, %pwg: i32, %pwtc: i32") +
         (zeroTail ? ", %pwap: i32" : "") + "):");
  {
    Tile t = decodeTile("%pwt");
    // Only lane 0 waits for the stages it refills (the other lanes never
    // wait on a phase they could fall behind; they meet lane 0 at the warp
    // syncs of a zeroing and at the tile broadcast).
    ifLane0([&] { waitQFree("%pwtc"); });
    ifLane0([&] {
      w.line("llvm.store %pwt, " + tileSlot + " : i32, !llvm.ptr<3>");
      loadQ(t);
    });
    // K and V of every key block; a stage is refilled once the consumers
    // released it (empty barrier of its previous use, parity g / stages - 1).
    if (zeroTail)
      w.line("%pn:2 = scf.for %pi = " + c0 + " to " + t.nblocks + " step " + c1 +
             " iter_args(%pgg = %pwg, %pag = %pwap) -> (i32, i32) : i32 {");
    else
      w.line("%pn = scf.for %pi = " + c0 + " to " + t.nblocks + " step " + c1 +
             " iter_args(%pgg = %pwg) -> (i32) : i32 {");
    std::string slot, ePar, reuse;
    std::tie(slot, ePar, reuse) = stageUse("%pgg");
    std::string kb = w.bin("arith.addi", t.nbLo, "%pi", "i32");
    // Paged: the block's page indices are loaded before the wait for its
    // stage, so their latency hides under it.
    std::vector<std::string> pages;
    std::vector<std::pair<std::string, std::string>> boxPages;
    // The first kv head of the boxes (a box holds HP heads).
    std::string kvHead0 = HP > 1 ? w.bin("arith.muli", t.kvh, w.i32(HP), "i32") : t.kvh;
    if (laneBoxes)
      boxPages = lanePages(kb, t);
    else if (PS)
      pages = pagesOf(kb, t);
    // K into the stage (lane 0 waits until it is free), then lane 0 waits
    // until V's is.
    auto waitEmpty = [&](int64_t bar) {
      w.line("scf.if " + reuse + " {");
      waitParity(barAt(bar, slot), ePar);
      w.line("}");
    };
    if (laneBoxes) {
      ifLane0([&] { waitEmpty(L.emptyK()); });
      loadKVLanes("%kmap", slotBase(L.kOff, slot), barAt(L.fullK(), slot), kvHead0, boxPages);
      ifLane0([&] { waitEmpty(L.emptyV()); });
    } else {
      ifLane0([&] {
        waitEmpty(L.emptyK());
        loadKV("%kmap", slotBase(L.kOff, slot), barAt(L.fullK(), slot), kb, t.kvh, t, pages);
        waitEmpty(L.emptyV());
      });
    }
    // V into `base`, completing `bar`.
    auto loadV = [&](const std::string &base, const std::string &bar) {
      if (laneBoxes)
        loadKVLanes("%vmap", base, bar, kvHead0, boxPages);
      else
        ifLane0([&] { loadKV("%vmap", base, bar, kb, t.kvh, t, pages); });
    };
    if (!zeroTail) {
      loadKV("%vmap", slotBase(L.vOff, slot), barAt(L.fullV(), slot), kb, t.kvh, t, pages);
      w.line("scf.yield " + w.bin("arith.addi", "%pgg", c1, "i32") + " : i32");
    } else {
      // Rows [max(zeroFrom, 0), BN) of this block lie past the sequence.
      std::string zeroFrom = w.bin("arith.subi", t.sk, w.bin("arith.muli", kb, cBN, "i32"),
                                   "i32");
      std::string need = w.op("arith.cmpi slt, " + zeroFrom + ", " + cBN + " : i32");
      // As shared-memory rows (keys x HP: a key's HP rows are adjacent).
      if (HP > 1)
        zeroFrom = w.bin("arith.muli", zeroFrom, w.i32(HP), "i32");
      std::string vBase = slotBase(L.vOff, slot);
      std::string pag = w.fresh();
      w.line(pag + " = scf.if " + need + " -> (i32) {");
      loadV(vBase, at(L.auxV()));
      waitParity(at(L.auxV()), "%pag");
      std::string zeros = w.op("llvm.mlir.zero : vector<4xi32>");
      if (panels) {
        // Panel layout: row r of panel h at (r / 8) G + h 1 KB + (r % 8) 128
        // (G = boxes KB): from the 8-row group of the first row past the
        // sequence, each 16 bytes whose row lies past it.
        const int64_t G = boxes * 1024;
        // (One op per statement: the text's order must not depend on the
        // order in which arguments are evaluated.)
        std::string z = w.bin("arith.maxsi", zeroFrom, c0, "i32");
        std::string group0 = w.bin("arith.divui", z, c8, "i32");
        std::string groupOff = w.bin("arith.muli", group0, w.i32(G), "i32");
        std::string laneOff = w.bin("arith.muli", lane, c16, "i32");
        std::string from = w.bin("arith.addi", groupOff, laneOff, "i32");
        std::string end = w.i32(BN / 8 * G), step = w.i32(512);
        w.line("scf.for %pzp = " + from + " to " + end + " step " + step + " : i32 {");
        std::string group = w.bin("arith.divui", "%pzp", w.i32(G), "i32");
        std::string groupRow = w.bin("arith.muli", group, c8, "i32");
        std::string inPanel = w.bin("arith.remui", "%pzp", w.i32(1024), "i32");
        std::string rowInGroup = w.bin("arith.divui", inPanel, c128, "i32");
        std::string row = w.bin("arith.addi", groupRow, rowInGroup, "i32");
        w.line("scf.if " + w.op("arith.cmpi sge, " + row + ", " + z + " : i32") + " {");
        std::string ptr = w.op("llvm.getelementptr " + vBase + "[%pzp] : (!llvm.ptr<3>, i32) -> "
                               "!llvm.ptr<3>, i8");
        w.line("llvm.store " + zeros + ", " + ptr +
               " {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>");
        w.line("}");
        w.line("}");
      } else {
        // Whole 128-byte rows of each 64-column box: contiguous bytes
        // [r0 x 128, BN x 128); lane l zeroes 16 bytes every 512.
        std::string startOff = w.bin(
            "arith.addi",
            w.bin("arith.muli", w.bin("arith.maxsi", zeroFrom, c0, "i32"), c128, "i32"),
            w.bin("arith.muli", lane, c16, "i32"), "i32");
        for (int64_t b = 0; b < boxes; ++b) {
          std::string iv = "%pz" + std::to_string(b);
          w.line("scf.for " + iv + " = " + startOff + " to " + w.i32(BN * 128) + " step " +
                 w.i32(512) + " : i32 {");
          std::string ptr = w.op("llvm.getelementptr " + ptrAdd(vBase, b * BN * 128) + "[" +
                                 iv + "] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8");
          w.line("llvm.store " + zeros + ", " + ptr +
                 " {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>");
          w.line("}");
        }
      }
      w.line("nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = "
             "#nvvm.shared_space<cta>}");
      w.line("nvvm.bar.warp.sync " + full + " : i32");
      ifLane0([&] {
        w.line("nvvm.mbarrier.arrive " + barAt(L.fullV(), slot) + " : !llvm.ptr<3>");
      });
      w.line("scf.yield " + w.bin("arith.xori", "%pag", c1, "i32") + " : i32");
      w.line("} else {");
      loadV(vBase, barAt(L.fullV(), slot));
      w.line("scf.yield %pag : i32");
      w.line("}");
      w.line("scf.yield " + w.bin("arith.addi", "%pgg", c1, "i32") + ", " + pag +
             " : i32, i32");
    }
    w.line("}");
    w.line("scf.yield " + nextTileAll("%pwt") + ", " + (zeroTail ? "%pn#0" : "%pn") + ", " +
           w.bin("arith.addi", "%pwtc", c1, "i32") + (zeroTail ? ", %pn#1" : "") + " : " +
           loopTypes);
  }
  w.line("}");
  // No more tiles: tell the consumers (an arrival with no bytes).
  ifLane0([&] {
    waitQFree("%pt#2");
    w.line("llvm.store %pt#0, " + tileSlot + " : i32, !llvm.ptr<3>");
    w.line("nvvm.mbarrier.arrive " + at(L.fullQ()) + " : !llvm.ptr<3>");
  });
  w.line("}");
  }
  w.line("} else {");
  //===--------------------------------------------------------------------===//
  // Consumers: warpgroup 1 + c owns rows [64 c, 64 c + 64) of each tile.
  //===--------------------------------------------------------------------===//
  if (k.consumerRegs)
    w.line("nvvm.setmaxregister increase " + std::to_string(k.consumerRegs));
  std::string ctid = w.bin("arith.subi", tid, c128, "i32");
  // Values every thread of a warp holds alike, made visibly so for ptxas
  // by warpUniform (CUTLASS's canonical_warp_group_idx): what is
  // computed from them (the wgmma descriptors, the stage slots) can then
  // live in uniform registers. From tid or from shared memory, ptxas
  // computes them per thread and moves each descriptor with R2UR (Nsight
  // Compute, docs/BENCHMARKS.md: 2.5 times cuDNN's integer instructions).
  std::string cw = warpUniform(w.bin("arith.divui", ctid, c128, "i32"));
  // Warp-scheduler barrier (FlashAttention-3's ping-pong, section 3.1):
  // consumer c issues its GEMMs only after consumer c - 1 issued theirs
  // (named barrier 1 + c: its 128 threads sync, the previous consumer's 128
  // arrive), so one consumer's softmax runs under the other's GEMMs. The
  // turn spans the kernel: the last consumer opens the first turn.
  // The barrier ids are constants in per-consumer branches: an id in a
  // register makes ptxas reserve all 16 barriers and keeps it live.
  std::string turnThreads = k.schedulerBarrier ? w.i32(256) : "";
  auto perConsumer = [&](const std::function<void(int64_t)> &body) {
    for (int64_t c = 0; c < C; ++c) {
      if (c + 1 < C) {
        std::string is = w.op("arith.cmpi eq, " + cw + ", " + w.i32(c) + " : i32");
        w.line("scf.if " + is + " {");
      }
      body(c);
      if (c + 1 < C)
        w.line("} else {");
    }
    for (int64_t c = 0; c + 1 < C; ++c)
      w.line("}");
  };
  auto barrierOp = [&](const char *op, int64_t id) {
    w.line(std::string(op) + " id = " + w.i32(id) + " number_of_threads = " + turnThreads);
  };
  if (k.schedulerBarrier) {
    std::string last = w.op("arith.cmpi eq, " + cw + ", " + w.i32(C - 1) + " : i32");
    w.line("scf.if " + last + " {");
    barrierOp("nvvm.barrier.arrive", 1);
    w.line("}");
  }
  auto awaitTurn = [&]() {
    if (k.schedulerBarrier)
      perConsumer([&](int64_t c) { barrierOp("nvvm.barrier", 1 + c); });
  };
  auto passTurn = [&]() {
    if (k.schedulerBarrier)
      perConsumer([&](int64_t c) { barrierOp("nvvm.barrier.arrive", 1 + (c + 1) % C); });
  };
  std::string t128 = w.bin("arith.remui", ctid, c128, "i32");
  std::string warp = w.bin("arith.divui", t128, c32, "i32");
  std::string lane = w.bin("arith.remui", t128, c32, "i32");
  std::string lq = w.bin("arith.divui", lane, c4, "i32");
  std::string lr = w.bin("arith.remui", lane, c4, "i32");
  // Row of fragment registers with (r/2)%2 == 0: 64 c + 16 w + l/4; the
  // other +8. Column: 2 (l%4) + 8 (r/4) + r%2.
  std::string row0 = w.bin("arith.addi",
                           w.bin("arith.addi", w.bin("arith.muli", cw, w.i32(64), "i32"),
                                 w.bin("arith.muli", warp, c16, "i32"), "i32"),
                           lq, "i32");
  std::string row1 = w.bin("arith.addi", row0, c8, "i32");
  std::string col0 = w.bin("arith.muli", lr, c2, "i32");
  // This consumer's 64 rows of Q (every 64-column box holds BM rows).
  std::string qBase = w.op("llvm.getelementptr " + smem + "[" +
                           w.bin("arith.muli", cw, w.i32(64 * 128), "i32") +
                           "] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8");
  std::string scaleC = w.f32(scaleLog2);
  // The row max on raw scores (FlashAttention-2's trick): with a positive
  // scale and nothing between the GEMM and the softmax, exp2(s c - m c) is
  // one fma per score instead of a multiply and a subtraction.
  const bool rawMax = k.softcap <= 0 && !k.scoreRegion && k.scale > 0;
  std::string negScaleC = w.f32(-scaleLog2);
  // With softcap: t = tanh(raw * scale / cap), score2 = cap * log2(e) * t.
  std::string capScale = k.softcap > 0 ? w.f32(k.scale / k.softcap) : "";
  std::string capLog2 = k.softcap > 0 ? w.f32(k.softcap * 1.4426950408889634) : "";
  std::string oZero = w.op("llvm.mlir.undef : " + oT);
  for (int r = 0; r < nO; ++r)
    oZero = w.op("llvm.insertvalue " + zeroF + ", " + oZero + "[" +
                 std::to_string(r) + "] : " + oT);

  // A wgmma shared-memory descriptor (PTX ISA 9.7.15.5.1): start address,
  // leading and stride byte offsets (>> 4), 128-byte swizzle (bit 62). Kept
  // as its low 32 bits (start address and leading offset; the high half is
  // a constant of the layout): moving along a tile adds to the start
  // address only (the sum stays below 2^14: 256 KB of shared window), so
  // in 32-bit adds, and the 64-bit value is put together at the wgmma.
  struct Desc {
    std::string lo;
    int64_t hi;
  };
  auto desc = [&](const std::string &ptr, int64_t lbo, int64_t sbo) {
    std::string addr = w.op("llvm.ptrtoint " + ptr + " : !llvm.ptr<3> to i32");
    std::string start = w.bin("arith.andi", addr, w.i32(0x3FFFF), "i32");
    start = w.bin("arith.shrui", start, c4, "i32");
    return Desc{w.bin("arith.ori", start, w.i32((lbo >> 4) << 16), "i32"),
                ((sbo >> 4) | (int64_t(1) << 30))};
  };
  // The descriptor of `base` + `bytes`, as the i64 the wgmma takes.
  auto descAt = [&](const Desc &d, int64_t bytes) {
    std::string lo = bytes ? w.bin("arith.addi", d.lo, w.i32(bytes >> 4), "i32") : d.lo;
    // One statement per op: the text's order must not depend on the order
    // in which a compiler evaluates function arguments.
    std::string wide = w.op("arith.extui " + lo + " : i32 to i64");
    std::string hi = w.i64(d.hi << 32);
    return w.bin("arith.ori", wide, hi, "i64");
  };
  // Q's base descriptor, re-read at each use through an opaque move: LLVM
  // would otherwise hoist all D / 16 loop-invariant Q descriptors out of the
  // key-block loop and keep them live (spills at head_dim 256).
  Desc qDesc0 = desc(qBase, 16, 1024);
  auto qDesc = [&]() {
    return Desc{w.op("llvm.inline_asm has_side_effects asm_dialect = att "
                     "\"mov.b32 $0, $1;\", \"=r,r\" " + qDesc0.lo + " : (i32) -> i32"),
                qDesc0.hi};
  };
  // Issues S = Q K^T (no commit).
  auto issueQK = [&](const std::string &kBase) {
    std::string s = w.op("llvm.mlir.undef : " + sT);
    // Panel layout (paged, see the producer): 8-row atoms of a panel every
    // boxes KB, panels 1 KB apart.
    Desc qd = qDesc(), kd = desc(kBase, 16, panels ? boxes * 1024 : 1024);
    for (int64_t kk = 0; kk < D / 16; ++kk) {
      int64_t box = kk / 4, inBox = (kk % 4) * 32;
      std::string dA = descAt(qd, box * BM * 128 + inBox);
      std::string dB = descAt(kd, box * (panels ? 1024 : BN * 128) + inBox);
      s = w.op("nvvm.wgmma.mma_async " + dA + ", " + dB + ", " + s +
               ", #nvvm.shape<m = 64, n = " + std::to_string(BN) +
               ", k = 16>, D [<f32>, #nvvm.wgmma_scale_out<" +
               (kk ? "one" : "zero") + ">], A [<" + et +
               ">, #nvvm.wgmma_scale_in<one>, <row>], B [<" + et +
               ">, #nvvm.wgmma_scale_in<one>, <col>] : " + sT + " -> " + sT);
    }
    return s;
  };
  // Issues O += P V with P in registers (no commit): the RS wgmma through
  // inline asm, one per k16 slice of the key block.
  auto issuePV = [&](std::string oacc, const std::vector<std::string> &pk,
                     const std::string &vBase) {
    // V is MN-major (transpose-B): LBO = the distance between the two
    // 64-column boxes, each k16 step 16 rows x 128 B further.
    // Panel layout: panels 1 KB apart, 8-row groups every boxes KB.
    Desc vd = panels ? desc(vBase, 1024, boxes * 1024) : desc(vBase, BN * 128, 1024);
    for (int64_t kk = 0; kk < BN / 16; ++kk) {
      std::string dV = descAt(vd, kk * (panels ? 2 * boxes * 1024 : 2048));
      std::string asmText = "{\\0A.reg .pred p;\\0Asetp.ne.b32 p, 1, 0;\\0A"
                            "wgmma.mma_async.sync.aligned.m64n" +
                            std::to_string(D) + "k16.f32." + et + "." + et + " {";
      for (int r = 0; r < nO; ++r)
        asmText += (r ? ", $" : "$") + std::to_string(r);
      // Operands are numbered outputs first, then inputs (the tied ones
      // too): the A registers are $(2 nO) .. $(2 nO + 3), the descriptor
      // $(2 nO + 4).
      asmText += "}, {$" + std::to_string(2 * nO) + ", $" +
                 std::to_string(2 * nO + 1) + ", $" + std::to_string(2 * nO + 2) +
                 ", $" + std::to_string(2 * nO + 3) + "}, $" +
                 std::to_string(2 * nO + 4) + ", p, 1, 1, 1;\\0A}";
      std::string cons;
      for (int r = 0; r < nO; ++r)
        cons += (r ? ",=f" : "=f");
      for (int r = 0; r < nO; ++r)
        cons += "," + std::to_string(r);
      cons += ",r,r,r,r,l";
      std::string operands, types;
      for (int r = 0; r < nO; ++r) {
        std::string x = w.op("llvm.extractvalue " + oacc + "[" + std::to_string(r) +
                             "] : " + oT);
        operands += (r ? ", " : "") + x;
        types += (r ? ", f32" : "f32");
      }
      for (int a = 0; a < 4; ++a) {
        operands += ", " + pk[kk * 4 + a];
        types += ", i32";
      }
      operands += ", " + dV;
      types += ", i64";
      oacc = w.op("llvm.inline_asm has_side_effects asm_dialect = att \"" +
                  asmText + "\", \"" + cons + "\" " + operands + " : (" + types +
                  ") -> " + oT);
    }
    return oacc;
  };

  // The online softmax of one key block's scores (fragments of S).
  struct Softmax {
    std::string mA, mB, lA, lB, alphaA, alphaB;
    std::vector<std::string> pk;
  };
  struct Rows {
    std::string iA, iB, hA, hB, limA, limB, loA, loB, bIdx, hIdx[2], iIdx[2];
    // lim of the warpgroup's first row, lo of its last (block-level test).
    std::string limFirst, loLast;
    // HP > 1: whether this thread's columns of parity p (r % 2) hold keys
    // of row A's (B's) kv head: headOk[rowB][p].
    std::string headOk[2][2];
  };
  auto softmaxBody = [&](const std::string &s, const std::string &n0, const Rows &rw,
                         const std::string &mOldA, const std::string &mOldB,
                         const std::string &lOldA, const std::string &lOldB,
                         bool masked) {
    Softmax sm;
    std::vector<std::string> sv(nS);
    auto idx = [&](const std::string &v) {
      return w.op("arith.index_cast " + v + " : i32 to index");
    };
    std::vector<std::string> rowVals[2];
    for (int r = 0; r < nS; ++r) {
      std::string x = w.op("llvm.extractvalue " + s + "[" + std::to_string(r) +
                           "] : " + sT);
      int colConst = 8 * (r / 4) + (r % 2);
      bool rowB = (r / 2) % 2;
      std::string j, ok;
      if ((masked || k.scoreRegion) && HP == 1)
        j = w.bin("arith.addi", w.bin("arith.addi", n0, col0, "i32"),
                  w.i32(colConst), "i32");
      else if (masked || k.scoreRegion)
        // Column n holds key n / HP of the block; HP divides 8, so column
        // 2 (lane % 4) + r % 2 + 8 (r / 4) holds key (2 (lane % 4) + r % 2)
        // / HP + 8 (r / 4) / HP.
        j = w.bin("arith.addi",
                  w.bin("arith.addi", n0,
                        w.bin("arith.divui",
                              w.bin("arith.addi", col0, w.i32(colConst % 8), "i32"),
                              w.i32(HP), "i32"),
                        "i32"),
                  w.i32(colConst / 8 * 8 / HP), "i32");
      if (masked) {
        ok = w.op("arith.cmpi slt, " + j + ", " + (rowB ? rw.limB : rw.limA) + " : i32");
        if (HP > 1)
          ok = w.bin("arith.andi", ok, rw.headOk[rowB][r % 2], "i1");
        if (k.windowLeft >= 0)
          ok = w.bin("arith.andi", ok,
                     w.op("arith.cmpi sge, " + j + ", " + (rowB ? rw.loB : rw.loA) +
                          " : i32"),
                     "i1");
      }
      std::string regionArgs;
      if (k.scoreRegion || k.maskRegion)
        regionArgs = rw.bIdx + ", " + rw.hIdx[rowB] + ", " + rw.iIdx[rowB] + ", " + idx(j);
      if (k.maskRegion) {
        // The mask region, inlined by the conversion in place of this call.
        std::string keep = w.op("func.call @" + k.name + "_mask(" + regionArgs +
                                ") : (index, index, index, index) -> i1");
        ok = w.bin("arith.andi", ok, keep, "i1");
      }
      if (k.softcap > 0) {
        // softcap * tanh(s / softcap), then * log2(e). tanh.approx.f32 (PTX
        // ISA 9.7.4.9) has no NVVM op: inline asm.
        x = w.bin("arith.mulf", x, capScale, "f32");
        x = w.op("llvm.inline_asm asm_dialect = att \"tanh.approx.f32 $0, $1;\", \"=f,f\" " +
                 x + " : (f32) -> f32");
        x = w.bin("arith.mulf", x, k.scoreRegion ? w.f32(k.softcap) : capLog2, "f32");
      } else if (!rawMax) {
        x = w.bin("arith.mulf", x, k.scoreRegion ? w.f32(k.scale) : scaleC, "f32");
      }
      if (k.scoreRegion) {
        // The score region sees the natural-domain score (after softcap);
        // log2(e) comes after it.
        x = w.op("func.call @" + k.name + "_score(" + x + ", " + regionArgs +
                 ") : (f32, index, index, index, index) -> f32");
        x = w.bin("arith.mulf", x, w.f32(1.4426950408889634), "f32");
      }
      if (masked)
        x = w.op("arith.select " + ok + ", " + x + ", " + negInf + " : f32");
      sv[r] = x;
      rowVals[rowB].push_back(x);
    }
    std::string mxA = treeReduce(rowVals[0], "arith.maxnumf");
    std::string mxB = treeReduce(rowVals[1], "arith.maxnumf");
    auto quadMax = [&](const std::string &v) { return quadReduce(v, "arith.maxnumf"); };
    // Conditional rescaling (FlashAttention-4; with k.conditionalRescale,
    // else the max always moves): the running max moves only
    // when the block's max exceeds it by more than 8 in exp2 units, so
    // P <= 2^8 (exact enough in bf16/f16, no overflow in the f32 sums) and
    // most blocks leave alpha = 1 and O untouched. The first block always
    // moves it (from -inf); a row still all -inf compares NaN: stays.
    std::string candA = w.bin("arith.maxnumf", mOldA, quadMax(mxA), "f32");
    std::string candB = w.bin("arith.maxnumf", mOldB, quadMax(mxB), "f32");
    std::string updA = w.op("arith.constant true"), updB = updA;
    if (k.conditionalRescale) {
      std::string unit = rawMax ? scaleC : w.f32(1.0), eight = w.f32(8.0);
      auto moves = [&](const std::string &cand, const std::string &old) {
        std::string grow = w.bin("arith.mulf", w.bin("arith.subf", cand, old, "f32"), unit,
                                 "f32");
        return w.op("arith.cmpf ogt, " + grow + ", " + eight + " : f32");
      };
      updA = moves(candA, mOldA);
      updB = moves(candB, mOldB);
    }
    sm.mA = w.op("arith.select " + updA + ", " + candA + ", " + mOldA + " : f32");
    sm.mB = w.op("arith.select " + updB + ", " + candB + ", " + mOldB + " : f32");
    // m_new' = 0 where m_new = -inf: no NaN on rows masked so far.
    auto guard = [&](const std::string &m) {
      std::string e = w.op("arith.cmpf oeq, " + m + ", " + negInf + " : f32");
      return w.op("arith.select " + e + ", " + zeroF + ", " + m + " : f32");
    };
    std::string useA = guard(sm.mA), useB = guard(sm.mB);
    auto ex2 = [&](const std::string &x) {
      return w.op("llvm.call_intrinsic \"llvm.nvvm.ex2.approx.ftz.f\"(" + x +
                  ") : (f32) -> f32");
    };
    // x - m in the log2 domain; with rawMax, x and m are raw scores and
    // (x - m) * scale log2(e) is one fma per score: x * c + (-m c).
    std::string negA, negB;
    if (rawMax) {
      negA = w.bin("arith.mulf", useA, negScaleC, "f32");
      negB = w.bin("arith.mulf", useB, negScaleC, "f32");
    }
    auto shifted = [&](const std::string &x, bool rowB) {
      if (!rawMax)
        return w.bin("arith.subf", x, rowB ? useB : useA, "f32");
      return w.op("llvm.intr.fma(" + x + ", " + scaleC + ", " + (rowB ? negB : negA) +
                  ") : (f32, f32, f32) -> f32");
    };
    std::string one = w.f32(1.0);
    sm.alphaA = w.op("arith.select " + updA + ", " + ex2(shifted(mOldA, false)) + ", " + one +
                     " : f32");
    sm.alphaB = w.op("arith.select " + updB + ", " + ex2(shifted(mOldB, true)) + ", " + one +
                     " : f32");
    std::vector<std::string> p(nS), rowP[2];
    for (int r = 0; r < nS; ++r) {
      bool rowB = (r / 2) % 2;
      p[r] = ex2(shifted(sv[r], rowB));
      rowP[rowB].push_back(p[r]);
    }
    std::string sumA = treeReduce(rowP[0], "arith.addf");
    std::string sumB = treeReduce(rowP[1], "arith.addf");
    sm.lA = w.bin("arith.addf", w.bin("arith.mulf", lOldA, sm.alphaA, "f32"), sumA, "f32");
    sm.lB = w.bin("arith.addf", w.bin("arith.mulf", lOldB, sm.alphaB, "f32"), sumB, "f32");
    // P packed in pairs into the A registers of the P V wgmma.
    for (int r = 0; r < nS; r += 2) {
      std::string vec = w.op("llvm.mlir.undef : vector<2xf32>");
      vec = w.op("llvm.insertelement " + p[r] + ", " + vec + "[" + c0 +
                 " : i32] : vector<2xf32>");
      vec = w.op("llvm.insertelement " + p[r + 1] + ", " + vec + "[" + c1 +
                 " : i32] : vector<2xf32>");
      std::string h2 = w.op("arith.truncf " + vec + " : vector<2xf32> to vector<2x" + et + ">");
      sm.pk.push_back(w.op("llvm.bitcast " + h2 + " : vector<2x" + et + "> to i32"));
    }
    return sm;
  };
  // The softmax of one block, with the mask only where the block crosses a
  // boundary of this warpgroup's 64 rows (FlashAttention-3 masks only those
  // blocks): a key block [n0, n0 + BN) is inside every row's [lo, lim) when
  // n0 + BN <= lim(first row) and n0 >= lo(last row), both monotone in the
  // row. The branch is uniform across the warpgroup (its shuffles stay
  // converged). With a score or mask region every block takes the masked
  // path (a mask region must see every score; two copies of an inlined
  // score region cost registers: spills at head_dim 128).
  auto softmax = [&](const std::string &s, const std::string &n0, const Rows &rw,
                     const std::string &mOldA, const std::string &mOldB,
                     const std::string &lOldA, const std::string &lOldB) {
    if (k.maskRegion || k.scoreRegion || HP > 1)
      return softmaxBody(s, n0, rw, mOldA, mOldB, lOldA, lOldB, true);
    std::string need = w.op("arith.cmpi sgt, " + w.bin("arith.addi", n0, cBN, "i32") +
                            ", " + rw.limFirst + " : i32");
    if (k.windowLeft >= 0)
      need = w.bin("arith.ori", need,
                   w.op("arith.cmpi slt, " + n0 + ", " + rw.loLast + " : i32"), "i1");
    std::string types = "f32, f32, f32, f32, f32, f32" + (nP ? ", " + repeat("i32", nP) : "");
    std::string res = w.fresh();
    w.line(res + ":" + std::to_string(6 + nP) + " = scf.if " + need + " -> (" + types + ") {");
    for (bool masked : {true, false}) {
      if (!masked)
        w.line("} else {");
      Softmax b = softmaxBody(s, n0, rw, mOldA, mOldB, lOldA, lOldB, masked);
      w.line("scf.yield " + b.mA + ", " + b.mB + ", " + b.lA + ", " + b.lB + ", " +
             b.alphaA + ", " + b.alphaB + (nP ? ", " + join(b.pk) : "") + " : " + types);
    }
    w.line("}");
    Softmax sm;
    sm.mA = res + "#0";
    sm.mB = res + "#1";
    sm.lA = res + "#2";
    sm.lB = res + "#3";
    sm.alphaA = res + "#4";
    sm.alphaB = res + "#5";
    for (int i = 0; i < nP; ++i)
      sm.pk.push_back(res + "#" + std::to_string(6 + i));
    return sm;
  };
  auto rescaleAll = [&](std::string oacc, const std::string &aA, const std::string &aB) {
    for (int r = 0; r < nO; ++r) {
      std::string x = w.op("llvm.extractvalue " + oacc + "[" + std::to_string(r) +
                           "] : " + oT);
      x = w.bin("arith.mulf", x, (r / 2) % 2 ? aB : aA, "f32");
      oacc = w.op("llvm.insertvalue " + x + ", " + oacc + "[" + std::to_string(r) +
                  "] : " + oT);
    }
    return oacc;
  };
  // O *= alpha only when some row of the warp moved its max (alpha != 1):
  // a warp-uniform branch (vote.sync.any, PTX ISA 9.7.12.9).
  auto rescale = [&](std::string oacc, const std::string &aA, const std::string &aB) {
    if (!k.conditionalRescale)
      return rescaleAll(oacc, aA, aB);
    std::string one = w.f32(1.0);
    std::string moved = w.bin("arith.ori",
                              w.op("arith.cmpf une, " + aA + ", " + one + " : f32"),
                              w.op("arith.cmpf une, " + aB + ", " + one + " : f32"), "i1");
    std::string any = w.op("nvvm.vote.sync any " + full + ", " + moved + " -> i1");
    std::string res = w.fresh();
    w.line(res + " = scf.if " + any + " -> (" + oT + ") {");
    std::string scaled = rescaleAll(oacc, aA, aB);
    w.line("scf.yield " + scaled + " : " + oT);
    w.line("} else {");
    w.line("scf.yield " + oacc + " : " + oT);
    w.line("}");
    return res;
  };

  // Each tile starts with full_Q: Q has landed and the tile index is
  // written; an index past the last tile ends the loop.
  w.line("%ct:3 = scf.while (%cwg = " + c0 + ", %cwtc = " + c0 +
         ") : (i32, i32) -> (i32, i32, i32) {");
  waitParity(at(L.fullQ()), w.bin("arith.andi", "%cwtc", c1, "i32"));
  std::string ctileV =
      warpUniform(w.op("llvm.load " + at(L.tileSlot()) + " : !llvm.ptr<3> -> i32"));
  w.line("scf.condition(" + w.op("arith.cmpi ult, " + ctileV + ", " + ntiles + " : i32") +
         ") " + ctileV + ", %cwg, %cwtc : i32, i32, i32");
  w.line("} do {");
  w.line("^bb0(%ctile: i32, %cg: i32, %ctc: i32):");
  Tile t = decodeTile("%ctile");
  // This thread's two rows and the keys each may see (lo <= j < lim).
  Rows rw;
  // Packed rows -> (query position, query head).
  std::string rA = w.bin("arith.addi", t.m0, row0, "i32");
  std::string rB = w.bin("arith.addi", t.m0, row1, "i32");
  auto posOf = [&](const std::string &r) {
    return packed ? w.bin("arith.divui", r, cG, "i32") : r;
  };
  auto headOf = [&](const std::string &r) {
    return packed ? w.bin("arith.addi", w.bin("arith.muli", t.kvh, cG, "i32"),
                          w.bin("arith.remui", r, cG, "i32"), "i32")
                  : t.h;
  };
  rw.iA = posOf(rA);
  rw.iB = posOf(rB);
  rw.hA = headOf(rA);
  rw.hB = headOf(rB);
  if (HP > 1) {
    // Row r's kv head in the group, (r % G') / (Hq / Hkv); column c's,
    // c % HP (= (2 (lane % 4) + p) % HP for every 8-column group).
    for (int rowB = 0; rowB < 2; ++rowB) {
      std::string hp = w.bin("arith.divui", w.bin("arith.remui", rowB ? rB : rA, cG, "i32"),
                             w.i32(k.packGroups), "i32");
      for (int par = 0; par < 2; ++par)
        rw.headOk[rowB][par] = w.op(
            "arith.cmpi eq, " + hp + ", " +
            w.bin("arith.remui", w.bin("arith.addi", col0, w.i32(par), "i32"), w.i32(HP), "i32") +
            " : i32");
    }
  }
  // Row i sees keys lo(i) <= j < lim(i) (docs/ARCHITECTURE.md, "Rules every lowering keeps"): lim(i) =
  // min(Sk, i [+ Sk - Sq] + 1 with causal, i + Sk - Sq + right + 1 with a
  // right window), lo(i) = i + Sk - Sq - left with a left window.
  auto limOf = [&](const std::string &i) {
    std::string lim = t.sk;
    if (k.causal) {
      std::string c = k.causal == 2 ? w.bin("arith.addi", i, t.off, "i32") : i;
      lim = w.bin("arith.minsi", lim, w.bin("arith.addi", c, c1, "i32"), "i32");
    }
    if (k.windowRight >= 0)
      lim = w.bin("arith.minsi", lim,
                  w.bin("arith.addi", w.bin("arith.addi", i, t.off, "i32"),
                        w.i32(k.windowRight + 1), "i32"),
                  "i32");
    return lim;
  };
  auto loOf = [&](const std::string &i) {
    return w.bin("arith.subi", w.bin("arith.addi", i, t.off, "i32"), w.i32(k.windowLeft),
                 "i32");
  };
  rw.limA = limOf(rw.iA);
  rw.limB = limOf(rw.iB);
  std::string firstRow = w.bin("arith.addi", t.m0, w.bin("arith.muli", cw, w.i32(64), "i32"),
                               "i32");
  rw.limFirst = limOf(posOf(firstRow));
  if (k.windowLeft >= 0) {
    rw.loA = loOf(rw.iA);
    rw.loB = loOf(rw.iB);
    rw.loLast = loOf(posOf(w.bin("arith.addi", firstRow, w.i32(63), "i32")));
  }
  // Region arguments (positions inside the sequence, as index): b, h and
  // the thread's two rows once per tile, the key per score.
  if (k.scoreRegion || k.maskRegion) {
    auto idx = [&](const std::string &v) {
      return w.op("arith.index_cast " + v + " : i32 to index");
    };
    rw.bIdx = idx(t.b);
    rw.hIdx[0] = idx(rw.hA);
    rw.hIdx[1] = packed ? idx(rw.hB) : rw.hIdx[0];
    rw.iIdx[0] = idx(rw.iA);
    rw.iIdx[1] = idx(rw.iB);
  }
  const std::string stateT = "i32, f32, f32, f32, f32, " + oT;
  std::string has = w.op("arith.cmpi sgt, " + t.nblocks + ", " + c0 + " : i32");
  // A predicated arrive (PTX ISA 9.7.13.15.13, mbarrier.arrive under a
  // guard predicate) rather than a branch: an scf.if in the middle of the
  // key-block loop costs ptxas registers (spills at head_dim 256).
  std::string emptyQAddr = w.op("llvm.ptrtoint " + at(L.emptyQ()) + " : !llvm.ptr<3> to i64");
  auto releaseQIf = [&](const std::string &cond) {
    if (!k.earlyQRelease)
      return;
    std::string flag = w.op("arith.extui " + cond + " : i1 to i32");
    w.line("llvm.inline_asm has_side_effects asm_dialect = att \"{\\0A.reg .pred p;\\0A"
           ".reg .b64 st;\\0Asetp.ne.u32 p, $0, 0;\\0A@p mbarrier.arrive.shared.b64 st, "
           "[$1];\\0A}\", \"r,l\" " + flag + ", " + emptyQAddr + " : (i32, i64) -> ()");
  };
  // A consumer whose 64 rows all lie past Sq (the last tile of a sequence),
  // or whose rows see none of the tile's key blocks (nC = 0 below),
  // computes nothing: it only releases the stages it is counted on, so the
  // tensor cores go to the consumers with real rows.
  std::string active = w.op("arith.cmpi slt, " + firstRow + ", " + t.rowsTotal + " : i32");
  // Under a causal mask or a right window the key range ends at the last
  // row's limit, and a consumer's 64 rows end earlier than the tile's: it
  // computes its first nC blocks only, then releases the rest as the drain
  // below does (with their GEMM turns), so that the tensor cores go to the
  // consumers whose rows see those keys. nC = ceil(lim(last row) / BN) -
  // nbLo, within [0, nblocks].
  std::string nC = t.nblocks;
  if (k.causal || k.windowRight >= 0) {
    std::string lastRow = w.bin(
        "arith.minsi", w.bin("arith.addi", firstRow, w.i32(63), "i32"),
        w.bin("arith.subi", t.rowsTotal, c1, "i32"), "i32");
    std::string nbEnd = w.bin("arith.ceildivsi",
                              w.bin("arith.maxsi", limOf(posOf(lastRow)), c0, "i32"), cBN,
                              "i32");
    nC = w.bin("arith.subi", nbEnd, t.nbLo, "i32");
    nC = w.bin("arith.minsi", w.bin("arith.maxsi", nC, c0, "i32"), t.nblocks, "i32");
  }
  std::string compute =
      w.bin("arith.andi", w.op("arith.cmpi sgt, " + nC + ", " + c0 + " : i32"), active, "i1");
  // Releases key blocks [lo, hi) counted from block counter g: per block,
  // waits for K and V (so that each release counts in the phase of its
  // block), releases them and takes the block's GEMM turn. Returns the
  // counter after them. Needs 2 stages or more: a draining consumer
  // waits for V_t before its turn t, and with one stage V_t would wait for
  // a later consumer's release of V_{t-1}, which follows that turn.
  assert(ST >= 2 && "draining consumers need at least 2 K/V stages");
  auto drainBlocks = [&](const std::string &lo, const std::string &hi, const std::string &g) {
    std::string out = w.fresh(), iv = w.fresh(), gi = w.fresh();
    w.line(out + " = scf.for " + iv + " = " + lo + " to " + hi + " step " + c1 +
           " iter_args(" + gi + " = " + g + ") -> (i32) : i32 {");
    std::string slot = slotOf(gi), par = parityOf(gi);
    waitParity(barAt(L.fullK(), slot), par);
    w.line("nvvm.mbarrier.arrive " + barAt(L.emptyK(), slot) + " : !llvm.ptr<3>");
    waitParity(barAt(L.fullV(), slot), par);
    w.line("nvvm.mbarrier.arrive " + barAt(L.emptyV(), slot) + " : !llvm.ptr<3>");
    awaitTurn();
    passTurn();
    w.line("scf.yield " + w.bin("arith.addi", gi, c1, "i32") + " : i32");
    w.line("}");
    return out;
  };
  w.line("%cr:6 = scf.if " + compute + " -> (" + stateT + ") {");
  {
    // Block 0: S_0, its softmax; no P V yet.
    std::string slot = slotOf("%cg");
    waitParity(barAt(L.fullK(), slot), parityOf("%cg"));
    std::string kBase = slotBase(L.kOff, slot);
    awaitTurn();
    w.line("nvvm.wgmma.fence.aligned");
    std::string s = issueQK(kBase);
    w.line("nvvm.wgmma.commit.group.sync.aligned");
    passTurn();
    w.line("nvvm.wgmma.wait.group.sync.aligned 0");
    w.line("nvvm.mbarrier.arrive " + barAt(L.emptyK(), slot) + " : !llvm.ptr<3>");
    // Q is free once the tile's last S is computed: the producer loads the
    // next tile's Q under this tile's last softmax, P V and epilogue.
    releaseQIf(w.op("arith.cmpi eq, " + nC + ", " + c1 + " : i32"));
    Softmax sm = softmax(s, w.bin("arith.muli", t.nbLo, cBN, "i32"), rw, negInf, negInf,
                         zeroF, zeroF);
    std::string g1 = w.bin("arith.addi", "%cg", c1, "i32");
    // Blocks 1..n-1: issue S_n and O += P_{n-1} V_{n-1}; the softmax of S_n
    // runs while P V is in flight (FlashAttention-3, section 3.2).
    // With rescaleUnderQK, O's rescale by the previous block's alpha runs
    // after S_n is issued, under its wgmma, and before P V is
    // (FlashAttention-3's order): off the path from one block's P V to the
    // next block's GEMMs. The carried alpha starts at 1 (O is 0).
    std::vector<std::string> pArgs;
    std::string oneF = w.f32(1.0);
    std::string iter = "%lg = " + g1 + ", %lma = " + sm.mA + ", %lmb = " + sm.mB +
                       ", %lla = " + sm.lA + ", %llb = " + sm.lB + ", %lo = " + oZero +
                       ", %laa = " + oneF + ", %lab = " + oneF;
    for (int i = 0; i < nP; ++i) {
      iter += ", %lp" + std::to_string(i) + " = " + sm.pk[i];
      pArgs.push_back("%lp" + std::to_string(i));
    }
    w.line("%kl:" + std::to_string(8 + nP) + " = scf.for %cn = " + c1 + " to " +
           nC + " step " + c1 + " iter_args(" + iter + ") -> (" + stateT +
           ", f32, f32" + (nP ? ", " + repeat("i32", nP) : "") + ") : i32 {");
    {
      std::string gPrev = w.bin("arith.subi", "%lg", c1, "i32");
      std::string slotN = slotOf("%lg"), slotP = slotOf(gPrev);
      // Every wait before the fence: a spin loop between wgmma.fence and the
      // wgmma makes ptxas serialize them (ptxas warnings C7517/C7519).
      waitParity(barAt(L.fullK(), slotN), parityOf("%lg"));
      waitParity(barAt(L.fullV(), slotP), parityOf(gPrev));
      std::string kBase = slotBase(L.kOff, slotN), vBase = slotBase(L.vOff, slotP);
      awaitTurn();
      w.line("nvvm.wgmma.fence.aligned");
      std::string sN = issueQK(kBase);
      w.line("nvvm.wgmma.commit.group.sync.aligned");
      std::string oScaled = "%lo";
      if (k.rescaleUnderQK) {
        oScaled = rescale("%lo", "%laa", "%lab");
        // The rescale wrote O's registers: fence them before the wgmma
        // reading them (PTX ISA 9.7.15.6.1, wgmma.fence).
        w.line("nvvm.wgmma.fence.aligned");
      }
      std::string o1 = issuePV(oScaled, pArgs, vBase);
      w.line("nvvm.wgmma.commit.group.sync.aligned");
      passTurn();
      w.line("nvvm.wgmma.wait.group.sync.aligned 1");
      w.line("nvvm.mbarrier.arrive " + barAt(L.emptyK(), slotN) + " : !llvm.ptr<3>");
      releaseQIf(w.op("arith.cmpi eq, " + w.bin("arith.addi", "%cn", c1, "i32") + ", " +
                      nC + " : i32"));
      std::string n0 = w.bin("arith.muli", w.bin("arith.addi", t.nbLo, "%cn", "i32"),
                             cBN, "i32");
      Softmax smN = softmax(sN, n0, rw, "%lma", "%lmb", "%lla", "%llb");
      w.line("nvvm.wgmma.wait.group.sync.aligned 0");
      w.line("nvvm.mbarrier.arrive " + barAt(L.emptyV(), slotP) + " : !llvm.ptr<3>");
      // Without rescaleUnderQK: O *= alpha right after its P V, as before.
      if (!k.rescaleUnderQK)
        o1 = rescale(o1, smN.alphaA, smN.alphaB);
      w.line("scf.yield " + w.bin("arith.addi", "%lg", c1, "i32") + ", " + smN.mA +
             ", " + smN.mB + ", " + smN.lA + ", " + smN.lB + ", " + o1 + ", " +
             smN.alphaA + ", " + smN.alphaB + (nP ? ", " + join(smN.pk) : "") + " : " +
             stateT + ", f32, f32" + (nP ? ", " + repeat("i32", nP) : ""));
    }
    w.line("}");
    // The last block's P V.
    std::vector<std::string> pLast;
    for (int i = 0; i < nP; ++i)
      pLast.push_back("%kl#" + std::to_string(8 + i));
    std::string gLast = w.bin("arith.subi", "%kl#0", c1, "i32");
    std::string slotL = slotOf(gLast);
    waitParity(barAt(L.fullV(), slotL), parityOf(gLast));
    std::string oLast =
        k.rescaleUnderQK ? rescale("%kl#5", "%kl#6", "%kl#7") : std::string("%kl#5");
    awaitTurn();
    w.line("nvvm.wgmma.fence.aligned");
    std::string oL = issuePV(oLast, pLast, slotBase(L.vOff, slotL));
    w.line("nvvm.wgmma.commit.group.sync.aligned");
    passTurn();
    w.line("nvvm.wgmma.wait.group.sync.aligned 0");
    w.line("nvvm.mbarrier.arrive " + barAt(L.emptyV(), slotL) + " : !llvm.ptr<3>");
    // The blocks past this consumer's rows: released, with their turns.
    std::string gEnd = nC != t.nblocks ? drainBlocks(nC, t.nblocks, "%kl#0") : "%kl#0";
    w.line("scf.yield " + gEnd + ", %kl#1, %kl#2, %kl#3, %kl#4, " + oL + " : " + stateT);
  }
  w.line("} else {");
  {
    // Drain: release every key block of the tile and take the GEMM turns
    // the computing path takes (1 + nblocks when nblocks > 0).
    std::string dr = drainBlocks(c0, t.nblocks, "%cg");
    if (k.schedulerBarrier) {
      w.line("scf.if " + has + " {");
      awaitTurn();
      passTurn();
      w.line("}");
    }
    if (k.earlyQRelease)
      w.line("nvvm.mbarrier.arrive " + at(L.emptyQ()) + " : !llvm.ptr<3>");
    w.line("scf.yield " + dr + ", " + negInf + ", " + negInf + ", " + zeroF + ", " + zeroF +
           ", " + oZero + " : " + stateT);
  }
  w.line("}");
  // Without the early release: Q is free after the tile's last P V.
  if (!k.earlyQRelease)
    w.line("nvvm.mbarrier.arrive " + at(L.emptyQ()) + " : !llvm.ptr<3>");

  // Epilogue: reduce the row sums over the quad, normalize, write.
  auto quadSum = [&](const std::string &v) { return quadReduce(v, "arith.addf"); };
  std::string LA = quadSum("%cr#3"), LB = quadSum("%cr#4");
  auto inv = [&](const std::string &l) {
    std::string e = w.op("arith.cmpf oeq, " + l + ", " + zeroF + " : f32");
    std::string q = w.bin("arith.divf", w.f32(1.0), l, "f32");
    return w.op("arith.select " + e + ", " + zeroF + ", " + q + " : f32");
  };
  std::string invA = inv(LA), invB = inv(LB);
  if (table) {
    t.qRow = tableField(t.entry, 0, false);
    t.qb = tableField(t.entry, 1, false);
    t.sq = tableField(t.entry, 2, false);
  }
  std::string hq64 = w.op("arith.extui " + hq + " : i32 to i64");
  std::string sq64 = w.op("arith.extui " + sqDim + " : i32 to i64");
  std::string b64 = w.op("arith.extui " + t.qb + " : i32 to i64");
  std::string h64s[2] = {w.op("arith.extui " + rw.hA + " : i32 to i64"), ""};
  h64s[1] = packed ? w.op("arith.extui " + rw.hB + " : i32 to i64") : h64s[0];
  // Partial form: the split's slice starts at s * B * Sq * H * D (out) and
  // s * B * H * Sq (lse).
  std::string oSplit, lSplit;
  if (partial) {
    std::string s64 = w.op("arith.extui " + t.split + " : i32 to i64");
    std::string rows = w.bin("arith.muli", w.bin("arith.muli", "%od1", "%od2", "i64"),
                             "%od3", "i64");
    oSplit = w.bin("arith.muli", w.bin("arith.muli", s64, rows, "i64"), w.i64(D), "i64");
    lSplit = w.bin("arith.muli", s64, rows, "i64");
  }
  const std::string ot = partial ? "f32" : et;
  // Normalized O of fragment registers r, r + 1 as a packed pair.
  auto outPair = [&](int r) {
    bool half = (r / 2) % 2;
    std::string x0 = w.op("llvm.extractvalue %cr#5[" + std::to_string(r) + "] : " + oT);
    std::string x1 = w.op("llvm.extractvalue %cr#5[" + std::to_string(r + 1) + "] : " + oT);
    x0 = w.bin("arith.mulf", x0, half ? invB : invA, "f32");
    x1 = w.bin("arith.mulf", x1, half ? invB : invA, "f32");
    std::string vec = w.op("llvm.mlir.undef : vector<2xf32>");
    vec = w.op("llvm.insertelement " + x0 + ", " + vec + "[" + c0 + " : i32] : vector<2xf32>");
    vec = w.op("llvm.insertelement " + x1 + ", " + vec + "[" + c1 + " : i32] : vector<2xf32>");
    return partial ? vec
                   : w.op("arith.truncf " + vec + " : vector<2xf32> to vector<2x" + et + ">");
  };
  if (k.tmaStore) {
    // O through shared memory and a TMA store (FlashAttention-3's
    // epilogue; cp.async.bulk.tensor shared::cta -> global, PTX ISA
    // 9.7.9.25.5.2): one elected thread per consumer waits until the
    // previous tile's store has read the buffer, the warpgroup writes its
    // 64 rows in the 128-byte-swizzled layout of the tensor map (16-byte
    // chunk c of row r at chunk c ^ (r % 8)), fences them for the async
    // proxy, and the elected thread stores each 64-column box; TMA clips
    // the rows past Sq.
    std::string elect = w.op("arith.cmpi eq, " + t128 + ", " + c0 + " : i32");
    std::string epiThreads = w.i32(128);
    auto epilogueSync = [&]() {
      perConsumer([&](int64_t c) {
        w.line("nvvm.barrier id = " + w.i32(1 + C + c) + " number_of_threads = " +
               epiThreads);
      });
    };
    w.line("scf.if " + elect + " {");
    w.line("nvvm.cp.async.bulk.wait_group 0 {read}");
    w.line("}");
    epilogueSync();
    std::string oc = w.bin("arith.addi", w.i32(L.oOff),
                           w.bin("arith.muli", cw, w.i32(64 * 128), "i32"), "i32");
    std::string rowOff = w.bin("arith.muli",
                               w.bin("arith.addi", w.bin("arith.muli", warp, c16, "i32"),
                                     lq, "i32"),
                               c128, "i32");
    std::string base = w.bin("arith.addi", w.bin("arith.addi", oc, rowOff, "i32"),
                             w.bin("arith.muli", lr, c4, "i32"), "i32");
    std::vector<std::string> chunk(8);
    for (int jj = 0; jj < 8; ++jj)
      chunk[jj] = w.bin("arith.muli", w.bin("arith.xori", w.i32(jj), lq, "i32"), c16, "i32");
    for (int r = 0; r < nO; r += 2) {
      int j = r / 4, half = (r / 2) % 2;
      std::string pair = w.op("llvm.bitcast " + outPair(r) + " : vector<2x" + et + "> to i32");
      std::string off = w.bin("arith.addi", base,
                              w.bin("arith.addi", chunk[j % 8],
                                    w.i32((j / 8) * BM * 128 + half * 8 * 128), "i32"),
                              "i32");
      std::string ptr = w.op("llvm.getelementptr " + smem + "[" + off +
                             "] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8");
      w.line("llvm.store " + pair + ", " + ptr + " : i32, !llvm.ptr<3>");
    }
    w.line("nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = "
           "#nvvm.shared_space<cta>}");
    epilogueSync();
    w.line("scf.if " + elect + " {");
    std::string row = w.bin("arith.addi", t.m0, w.bin("arith.muli", cw, w.i32(64), "i32"),
                            "i32");
    for (int64_t i = 0; i < boxes; ++i) {
      std::string src = w.op("llvm.getelementptr " + smem + "[" +
                             w.bin("arith.addi", oc, w.i32(i * BM * 128), "i32") +
                             "] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8");
      w.line("nvvm.cp.async.bulk.tensor.global.shared.cta %omap, " + src + ", box[" +
             w.i32(64 * i) + ", " + t.h + ", " + row + ", " + t.b +
             "] : !llvm.ptr, !llvm.ptr<3>");
    }
    w.line("nvvm.cp.async.bulk.commit.group");
    w.line("}");
  }
  for (int half = 0; half < 2; ++half) {
    if (k.tmaStore && !k.lse)
      break;
    std::string i = half ? rw.iB : rw.iA;
    std::string valid = w.op("arith.cmpi slt, " + i + ", " + t.sq + " : i32");
    w.line("scf.if " + valid + " {");
    // The row's position in q's position dimension (varlen: past the
    // sequences before it).
    std::string i64v = w.op("arith.extui " + plus(t.qRow, i) + " : i32 to i64");
    // Out from registers (without the TMA store): element offset of
    // out[b, i, h, 0], then the pairs of this row.
    std::string base;
    if (!k.tmaStore) {
      base = outRowOffset(w, b64, i64v, h64s[half], sq64, hq64, D);
      if (partial)
        base = w.bin("arith.addi", base, oSplit, "i64");
    }
    for (int r = 0; r < nO && !k.tmaStore; r += 2) {
      if (((r / 2) % 2) != half)
        continue;
      std::string h2 = outPair(r);
      std::string col = w.bin("arith.addi", col0, w.i32(8 * (r / 4)), "i32");
      std::string col64 = w.op("arith.extui " + col + " : i32 to i64");
      std::string idx = w.bin("arith.addi", base, col64, "i64");
      std::string ptr = w.op("llvm.getelementptr %o[" + idx +
                             "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, " + ot);
      w.line("llvm.store " + h2 + ", " + ptr + " : vector<2x" + ot + ">, !llvm.ptr<1>");
    }
    if (k.lse) {
      std::string first = w.op("arith.cmpi eq, " + lr + ", " + c0 + " : i32");
      w.line("scf.if " + first + " {");
      std::string Lv = half ? LB : LA, M = half ? "%cr#2" : "%cr#1";
      if (rawMax) // m in raw units: to the log2 domain
        M = w.bin("arith.mulf", M, scaleC, "f32");
      std::string empty = w.op("arith.cmpf oeq, " + Lv + ", " + zeroF + " : f32");
      std::string lg = w.op("llvm.call_intrinsic \"llvm.nvvm.lg2.approx.f\"(" + Lv +
                            ") : (f32) -> f32");
      std::string val = w.bin("arith.mulf", w.bin("arith.addf", M, lg, "f32"),
                              w.f32(M_LN2), "f32");
      val = w.op("arith.select " + empty + ", " + negInf + ", " + val + " : f32");
      // lse[b, h, i]
      std::string li = lseIndex(w, b64, h64s[half], i64v, hq64, sq64);
      if (partial)
        li = w.bin("arith.addi", li, lSplit, "i64");
      std::string lp = w.op("llvm.getelementptr %lse[" + li +
                            "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32");
      w.line("llvm.store " + val + ", " + lp + " : f32, !llvm.ptr<1>");
      w.line("}");
    }
    w.line("}");
  }
  // Fused combine (Sm90KernelSpec::fusedCombine), after the tile's partial
  // results are written: the consumers meet at a named barrier, then one
  // thread counts the unit on the tile's counter with a gpu-scope acq_rel
  // atomic (atom.acq_rel.gpu.add, PTX ISA 9.7.13.5; with the barrier's
  // cumulativity it releases every consumer's stores, PTX ISA 8 "Memory
  // Consistency Model", as CUTLASS's split-K semaphore arrives); the unit
  // that brings the count to S sets it back to 0 and, after a second
  // barrier (its acquire passed on the same way), its consumers merge the
  // tile's rows from every split's partial results (volatile loads: never
  // a line of L1 filled before the other splits wrote it) into the final
  // out and lse, 4 columns per thread and step. A null counter pointer: no
  // merge (the combine kernel runs).
  if (fused) {
    std::string mc = "%merge_counters";
    std::string nul = w.op("llvm.mlir.zero : !llvm.ptr<1>");
    std::string on = w.op("llvm.icmp \"ne\" " + mc + ", " + nul + " : !llvm.ptr<1>");
    w.line("scf.if " + on + " {");
    std::string mergeBar = w.i32(2 * C + 2), consumerThreads = w.i32(128 * C);
    auto sync = [&]() {
      w.line("nvvm.barrier id = " + mergeBar + " number_of_threads = " + consumerThreads);
    };
    sync();
    std::string flag = at(L.mergeSlot());
    std::string first = w.op("arith.cmpi eq, " + ctid + ", " + c0 + " : i32");
    w.line("scf.if " + first + " {");
    std::string unit = w.op("arith.extui " + w.bin("arith.divui", "%ctile", nsplit, "i32") +
                            " : i32 to i64");
    std::string cp = w.op("llvm.getelementptr " + mc + "[" + unit +
                          "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32");
    // (LLVM 22's NVPTX back end drops an atomicrmw's ordering and scope:
    // it prints a plain atom.global.add, hence the inline assembly.)
    std::string old = w.op("llvm.inline_asm has_side_effects asm_dialect = att "
                           "\"atom.acq_rel.gpu.global.add.u32 $0, [$1], 1;\", \"=r,l\" " +
                           cp + " : (!llvm.ptr<1>) -> i32");
    std::string lastUnit = w.op("arith.cmpi eq, " + old + ", " +
                                w.bin("arith.subi", nsplit, c1, "i32") + " : i32");
    w.line("scf.if " + lastUnit + " {");
    w.line("llvm.store " + c0 + ", " + cp + " : i32, !llvm.ptr<1>");
    w.line("}");
    w.line("llvm.store " + w.op("arith.extui " + lastUnit + " : i1 to i32") + ", " + flag +
           " : i32, !llvm.ptr<3>");
    w.line("}");
    sync();
    std::string isLast = w.op("arith.cmpi ne, " +
                              w.op("llvm.load " + flag + " : !llvm.ptr<3> -> i32") + ", " +
                              c0 + " : i32");
    w.line("scf.if " + isLast + " {");
    // The tile's rows: packed rows m0 .. m0 + rows of its sequence.
    std::string rowsTot = packed ? w.bin("arith.muli", t.sq, cG, "i32") : t.sq;
    std::string rowsHere =
        w.bin("arith.maxsi",
              w.bin("arith.minsi", cBM, w.bin("arith.subi", rowsTot, t.m0, "i32"), "i32"), c0,
              "i32");
    const int64_t Q4 = D / 4;
    std::string units = w.bin("arith.muli", rowsHere, w.i32(Q4), "i32");
    std::string S64 = "%od0";
    // Elements of one split's out (B Sq H D) and rows of its lse (B H Sq).
    std::string rowsL = w.bin("arith.muli", w.bin("arith.muli", "%od1", "%od2", "i64"),
                              "%od3", "i64");
    std::string totalO = w.bin("arith.muli", rowsL, w.i64(D), "i64");
    w.line("scf.for %mu = " + ctid + " to " + units + " step " + consumerThreads + " : i32 {");
    std::string rr = w.bin("arith.divui", "%mu", w.i32(Q4), "i32");
    std::string col = w.bin("arith.muli", w.bin("arith.remui", "%mu", w.i32(Q4), "i32"), c4,
                            "i32");
    std::string r = w.bin("arith.addi", t.m0, rr, "i32");
    std::string pos = plus(t.qRow, posOf(r));
    auto ext = [&](const std::string &v) { return w.op("arith.extui " + v + " : i32 to i64"); };
    std::string i64v = ext(pos), h64 = ext(headOf(r));
    // lse row (b H + h) Sq + i; out element ((b Sq + i) H + h) D + col.
    std::string lrow = lseIndex(w, b64, h64, i64v, hq64, sq64);
    std::string e = outRowOffset(w, b64, i64v, h64, sq64, hq64, D);
    e = w.bin("arith.addi", e, ext(col), "i64");
    auto lseAt = [&](const std::string &sj) {
      return w.op("llvm.load volatile " + splitElement(w, "%lse", sj, rowsL, lrow, "f32") +
                  " : !llvm.ptr<1> -> f32");
    };
    auto outAt = [&](const std::string &sj) {
      std::string v4 = w.op("llvm.load volatile " + splitElement(w, "%o", sj, totalO, e, "f32") +
                            " {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>");
      std::vector<std::string> vals;
      for (int c = 0; c < 4; ++c)
        vals.push_back(w.op("llvm.extractelement " + v4 + "[" + w.i32(c) +
                            " : i32] : vector<4xf32>"));
      return vals;
    };
    std::vector<std::string> vals;
    std::string lv = emitMerge(w, S64, 4, lseAt, outAt, vals).second;
    std::string vec = w.op("llvm.mlir.undef : vector<4xf32>");
    for (int c = 0; c < 4; ++c)
      vec = w.op("llvm.insertelement " + vals[c] + ", " + vec + "[" + w.i32(c) +
                 " : i32] : vector<4xf32>");
    std::string fet = k.mergeF16 ? "f16" : "bf16";
    std::string tv = w.op("arith.truncf " + vec + " : vector<4xf32> to vector<4x" + fet + ">");
    std::string op = w.op("llvm.getelementptr %merge_out[" + e +
                          "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, " + fet);
    w.line("llvm.store " + tv + ", " + op + " {alignment = 8 : i64} : vector<4x" + fet +
           ">, !llvm.ptr<1>");
    std::string lOn = w.op("llvm.icmp \"ne\" %merge_lse, " + nul + " : !llvm.ptr<1>");
    std::string col0m = w.op("arith.cmpi eq, " + col + ", " + c0 + " : i32");
    w.line("scf.if " + w.bin("arith.andi", lOn, col0m, "i1") + " {");
    std::string lp = w.op("llvm.getelementptr %merge_lse[" + lrow +
                          "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32");
    w.line("llvm.store " + lv + ", " + lp + " : f32, !llvm.ptr<1>");
    w.line("}");
    w.line("}");
    w.line("}");
    w.line("}");
  }
  w.line("scf.yield %cr#0, " + w.bin("arith.addi", "%ctc", c1, "i32") + " : i32, i32");
  w.line("}");
  if (k.tmaStore) {
    // Shared memory must outlive the last TMA store's reads.
    std::string elect = w.op("arith.cmpi eq, " + t128 + ", " + c0 + " : i32");
    w.line("scf.if " + elect + " {");
    w.line("nvvm.cp.async.bulk.wait_group 0");
    w.line("}");
  }
  w.line("}");
  w.line("llvm.return");
  os << "  }\n}\n";
  return out;
}



std::string mlir::flashattn::emitSm90CombineKernel(const Sm90CombineSpec &k) {
  const std::string et = k.f16 ? "f16" : "bf16";
  std::string out;
  Writer w(out);
  auto &os = w.os;
  os << "  llvm.func @" << k.name
     << "(%po: !llvm.ptr<1>, %pl: !llvm.ptr<1>, %o: !llvm.ptr<1>";
  if (k.lse)
    os << ", %lse: !llvm.ptr<1>";
  for (int i = 0; i < 5; ++i)
    os << ", %pod" << i << ": i64";
  for (int i = 0; i < 4; ++i)
    os << ", %pld" << i << ": i64";
  for (int i = 0; i < 4; ++i)
    os << ", %od" << i << ": i64";
  if (k.lse)
    for (int i = 0; i < 3; ++i)
      os << ", %ld" << i << ": i64";
  os << ") attributes {nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {\n";
  // One thread per output element e = ((b * Sq + i) * H + h) * D + d, a
  // grid-stride loop over all of them.
  auto [first, stride] = gridStride(w, 128);
  std::string S = "%pod0", B = "%pod1", Sq = "%pod2", H = "%pod3", D = "%pod4";
  std::string total = w.bin("arith.muli",
                            w.bin("arith.muli", w.bin("arith.muli", B, Sq, "i64"), H, "i64"),
                            D, "i64");
  std::string rowsBHS = w.bin("arith.muli", w.bin("arith.muli", B, H, "i64"), Sq, "i64");
  std::string z64 = w.i64(0);
  w.line("scf.for %e = " + first + " to " + total + " step " + stride + " : i64 {");
  std::string d = w.bin("arith.remui", "%e", D, "i64");
  std::string r = w.bin("arith.divui", "%e", D, "i64");
  std::string h = w.bin("arith.remui", r, H, "i64");
  std::string bi = w.bin("arith.divui", r, H, "i64");
  std::string i = w.bin("arith.remui", bi, Sq, "i64");
  std::string b = w.bin("arith.divui", bi, Sq, "i64");
  // lse_s at partial_lse[s, b, h, i].
  std::string lrow = lseIndex(w, b, h, i, H, Sq);
  auto lseAt = [&](const std::string &s) {
    return w.op("llvm.load " + splitElement(w, "%pl", s, rowsBHS, lrow, "f32") +
                " : !llvm.ptr<1> -> f32");
  };
  auto outAt = [&](const std::string &s) {
    return std::vector<std::string>{w.op("llvm.load " +
                                         splitElement(w, "%po", s, total, "%e", "f32") +
                                         " : !llvm.ptr<1> -> f32")};
  };
  std::vector<std::string> vals;
  std::string lv = emitMerge(w, S, 1, lseAt, outAt, vals).second;
  std::string tv = w.op("arith.truncf " + vals[0] + " : f32 to " + et);
  std::string optr = w.op("llvm.getelementptr %o[%e] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, " + et);
  w.line("llvm.store " + tv + ", " + optr + " : " + et + ", !llvm.ptr<1>");
  if (k.lse) {
    std::string d0 = w.op("arith.cmpi eq, " + d + ", " + z64 + " : i64");
    w.line("scf.if " + d0 + " {");
    // lse[b, h, i]: the same row index as partial_lse's within a split.
    std::string lp = w.op("llvm.getelementptr %lse[" + lrow +
                          "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32");
    w.line("llvm.store " + lv + ", " + lp + " : f32, !llvm.ptr<1>");
    w.line("}");
  }
  w.line("}");
  w.line("llvm.return");
  os << "  }\n";
  return out;
}

std::string mlir::flashattn::emitSm90AppendKernel(const Sm90AppendSpec &k) {
  std::string out;
  Writer w(out);
  auto &os = w.os;
  os << "  llvm.func @" << k.name
     << "(%kn: !llvm.ptr<1>, %vn: !llvm.ptr<1>, %kc: !llvm.ptr<1>, %vc: !llvm.ptr<1>";
  for (const char *n : {"kn", "vn", "kc", "vc"})
    for (int i = 0; i < 4; ++i)
      os << ", %" << n << "d" << i << ": i64";
  os << ", %table: !llvm.ptr<1>";
  // Paged: the page lists (the attention kernel's %page_table).
  if (k.paged)
    os << ", %pages: !llvm.ptr<1>";
  os << ") attributes {nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>} {\n";
  // One thread per 16-byte chunk e = ((b * S_new + r) * Hkv + g) * (D / 8)
  // + c of k_new and of v_new, a grid-stride loop over all of them.
  auto sext = [&](const std::string &v) { return w.op("arith.extsi " + v + " : i32 to i64"); };
  auto [first, stride] = gridStride(w, 256);
  std::string B = "%knd0", S = "%knd1", H = "%knd2", D = "%knd3";
  std::string c8 = w.i64(8), c2 = w.i64(2), c1 = w.i64(1);
  std::string chunks = w.bin("arith.divui", D, c8, "i64");
  std::string total = w.bin("arith.muli",
                            w.bin("arith.muli", w.bin("arith.muli", B, S, "i64"), H, "i64"),
                            chunks, "i64");
  auto tableAt = [&](const std::string &idx, const char *table = "%table") {
    std::string p = w.op(std::string("llvm.getelementptr ") + table + "[" + idx +
                         "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32");
    return sext(w.op("llvm.load " + p + " {invariant} : !llvm.ptr<1> -> i32"));
  };
  // Word 1 of the table: where the per-sequence (start, page list) pairs
  // are.
  std::string appendAt = tableAt(c1);
  w.line("scf.for %e = " + first + " to " + total + " step " + stride + " : i64 {");
  std::string c = w.bin("arith.remui", "%e", chunks, "i64");
  std::string rest = w.bin("arith.divui", "%e", chunks, "i64");
  std::string g = w.bin("arith.remui", rest, H, "i64");
  rest = w.bin("arith.divui", rest, H, "i64");
  std::string r = w.bin("arith.remui", rest, S, "i64");
  std::string b = w.bin("arith.divui", rest, S, "i64");
  std::string pair = w.bin("arith.addi", appendAt, w.bin("arith.muli", b, c2, "i64"), "i64");
  // Position cache_seqlens[b] + r; the runtime checked it is inside the
  // cache (never written otherwise).
  std::string pos = w.bin("arith.addi", tableAt(pair), r, "i64");
  // The cache row: b x capacity + pos (dense), or page x page_size + pos %
  // page_size with page = the sequence's page list [pos / page_size].
  std::string row, inPool;
  if (k.paged) {
    std::string ps = "%kcd1";
    std::string list = tableAt(w.bin("arith.addi", pair, c1, "i64"));
    std::string page = tableAt(w.bin("arith.addi", list, w.bin("arith.divui", pos, ps, "i64"),
                                     "i64"),
                               "%pages");
    // A page outside the pool (an unchecked device block_table): the row is
    // not written.
    inPool = w.op("arith.cmpi ult, " + page + ", %kcd0 : i64");
    row = w.bin("arith.addi", w.bin("arith.muli", page, ps, "i64"),
                w.bin("arith.remui", pos, ps, "i64"), "i64");
  } else {
    row = w.bin("arith.addi", w.bin("arith.muli", b, "%kcd1", "i64"), pos, "i64");
  }
  std::string elem = w.bin("arith.muli", c, c8, "i64");
  std::string src = w.bin("arith.addi",
                          w.bin("arith.muli",
                                w.bin("arith.addi",
                                      w.bin("arith.muli", w.bin("arith.addi",
                                                                w.bin("arith.muli", b, S, "i64"),
                                                                r, "i64"),
                                            H, "i64"),
                                      g, "i64"),
                                D, "i64"),
                          elem, "i64");
  std::string dst = w.bin("arith.addi",
                          w.bin("arith.muli",
                                w.bin("arith.addi", w.bin("arith.muli", row, H, "i64"), g, "i64"),
                                D, "i64"),
                          elem, "i64");
  if (k.paged)
    w.line("scf.if " + inPool + " {");
  for (auto [from, to] : {std::pair("%kn", "%kc"), std::pair("%vn", "%vc")}) {
    std::string sp = w.op(std::string("llvm.getelementptr ") + from + "[" + src +
                          "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i16");
    std::string dp = w.op(std::string("llvm.getelementptr ") + to + "[" + dst +
                          "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i16");
    std::string val = w.op("llvm.load " + sp + " {alignment = 16 : i64} : !llvm.ptr<1> -> "
                           "vector<4xi32>");
    w.line("llvm.store " + val + ", " + dp + " {alignment = 16 : i64} : vector<4xi32>, "
           "!llvm.ptr<1>");
  }
  if (k.paged)
    w.line("}");
  w.line("}");
  w.line("llvm.return");
  os << "  }\n";
  return out;
}
