//===- Sm90Kernel.cpp - the sm_90a attention kernel (TMA + WGMMA) ---------===//
//
// Generates, for one attention configuration, a gpu.module holding an
// sm_90a kernel in the LLVM, NVVM, arith and scf dialects, following
// shared/SM90-KERNEL.md and the FlashAttention-3 paper (arXiv 2407.08608):
//
// - one warpgroup (128 threads) per CTA, 64 query rows per tile, key blocks
//   of 64; a persistent grid strides over (batch, head, m_block) tiles;
// - Q, K and V arrive by TMA (cp.async.bulk.tensor.4d, PTX ISA 9.7.9.25) into
//   128-byte-swizzled shared memory, K and V in 2 stages, each stage guarded
//   by an mbarrier (expect_tx, try_wait.parity with the phase of its use);
// - S = Q K^T by wgmma.mma_async (A and B from shared memory, K-major);
// - the online softmax on the accumulator fragments (row max and sum by
//   shuffles), exp2 with log2(e) folded into the scale, the -inf guard;
// - O += P V by wgmma with P in registers, emitted with llvm.inline_asm since
//   neither NVGPU nor NVVM has the register-A form (PTX ISA 9.7.15.5.2);
// - the epilogue writes out (bf16/f16 pairs) and lse (f32).
//
// The kernel takes the runtime's launch ABI (runtime/src/cuda.c): one
// pointer per argument, the int64 dims of each, then one CUtensorMap per TMA
// argument (q, k, v) as a 128-byte grid-constant parameter.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Conversion/FlashAttnToNVGPU/Sm90Kernel.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
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
} // namespace

std::string mlir::flashattn::emitSm90AttentionKernel(const Sm90KernelSpec &k) {
  const int64_t D = k.headDim, BM = 64, BN = k.blockN;
  const int64_t boxes = D / 64;
  const int64_t qBytes = BM * D * 2, kvBytes = BN * D * 2;
  const int64_t qOff = 0, kOff = qBytes, vOff = qBytes + 2 * kvBytes,
                barOff = qBytes + 4 * kvBytes;
  const int nS = static_cast<int>(BN / 2), nO = static_cast<int>(D / 2);
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
  const bool partial = k.numSplits > 0;
  const char *dimNames[] = {"q", "k", "v", "o"};
  for (const char *n : dimNames)
    for (int i = 0; i < (partial && n[0] == 'o' ? 5 : 4); ++i)
      os << ", %" << n << "d" << i << ": i64";
  if (k.lse)
    for (int i = 0; i < (partial ? 4 : 3); ++i)
      os << ", %ld" << i << ": i64";
  for (const char *n : {"qmap", "kmap", "vmap"})
    os << ", %" << n
       << ": !llvm.ptr {llvm.byval = !llvm.array<128 x i8>, llvm.align = 64 : i64, "
          "nvvm.grid_constant}";
  os << ") attributes {nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {\n";

  // Thread coordinates and shared memory.
  std::string tid = w.op("nvvm.read.ptx.sreg.tid.x : i32");
  std::string cta = w.op("nvvm.read.ptx.sreg.ctaid.x : i32");
  std::string ncta = w.op("nvvm.read.ptx.sreg.nctaid.x : i32");
  std::string c0 = w.i32(0), c1 = w.i32(1), c2 = w.i32(2), c4 = w.i32(4),
              c8 = w.i32(8), c16 = w.i32(16), c32 = w.i32(32),
              c64 = w.i32(64);
  std::string warp = w.bin("arith.divui", tid, c32, "i32");
  std::string lane = w.bin("arith.remui", tid, c32, "i32");
  std::string lq = w.bin("arith.divui", lane, c4, "i32");
  std::string lr = w.bin("arith.remui", lane, c4, "i32");
  // Row of fragment registers with (r/2)%2 == 0: 16 w + l/4; the other +8.
  std::string row0 = w.bin("arith.addi", w.bin("arith.muli", warp, c16, "i32"), lq, "i32");
  std::string row1 = w.bin("arith.addi", row0, c8, "i32");
  std::string col0 = w.bin("arith.muli", lr, c2, "i32"); // + 8*(r/4) + r%2
  std::string smem = w.op("llvm.mlir.addressof @" + k.name + "_smem : !llvm.ptr<3>");
  auto at = [&](int64_t off) {
    return w.op("llvm.getelementptr " + smem + "[" + std::to_string(off) +
                "] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8");
  };
  std::string barQ = at(barOff);
  std::string barK[2] = {at(barOff + 8), at(barOff + 16)};
  std::string barV[2] = {at(barOff + 24), at(barOff + 32)};
  std::string isLeader = w.op("arith.cmpi eq, " + tid + ", " + c0 + " : i32");
  w.line("scf.if " + isLeader + " {");
  for (const std::string &b : {barQ, barK[0], barK[1], barV[0], barV[1]})
    w.line("  nvvm.mbarrier.init " + b + ", " + c1 + " : !llvm.ptr<3>, i32");
  w.line("  nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = "
         "#nvvm.shared_space<cta>}");
  w.line("}");
  w.line("nvvm.barrier0");

  // Problem sizes.
  auto trunc = [&](const std::string &v) {
    return w.op("arith.trunci " + v + " : i64 to i32");
  };
  std::string batch = trunc("%qd0"), sq = trunc("%qd1"), hq = trunc("%qd2"),
              sk = trunc("%kd1"), hkv = trunc("%kd2");
  std::string groups = w.bin("arith.divui", hq, hkv, "i32");
  std::string nmb = w.bin("arith.ceildivui", sq, c64, "i32");
  std::string ntiles =
      w.bin("arith.muli", w.bin("arith.muli", batch, hq, "i32"), nmb, "i32");
  std::string nsplit = partial ? w.i32(k.numSplits) : "";
  if (partial)
    ntiles = w.bin("arith.muli", ntiles, nsplit, "i32");
  std::string cBN = w.i32(BN);
  std::string scaleC = w.f32(scaleLog2);
  // With softcap: t = tanh(raw * scale / cap), score2 = cap * log2(e) * t.
  std::string capScale = k.softcap > 0 ? w.f32(k.scale / k.softcap) : "";
  std::string capLog2 =
      k.softcap > 0 ? w.f32(k.softcap * 1.4426950408889634) : "";
  std::string negInf = w.op("arith.constant 0xFF800000 : f32");
  std::string zeroF = w.f32(0.0);
  std::string full = w.op("arith.constant -1 : i32");
  std::string clamp = w.i32(31);

  // Issues the TMA loads of one K (or V) block into `slot`.
  auto loadKV = [&](const std::string &map, const std::string &base,
                    const std::string &bar, const std::string &nb,
                    const std::string &kvh, const std::string &b) {
    w.line("nvvm.mbarrier.arrive.expect_tx " + bar + ", " + w.i32(kvBytes) +
           " : !llvm.ptr<3>, i32");
    std::string row = w.bin("arith.muli", nb, cBN, "i32");
    for (int64_t i = 0; i < boxes; ++i) {
      std::string dst = w.op("llvm.getelementptr " + base + "[" +
                             std::to_string(i * BN * 128) +
                             "] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8");
      std::string dstc = w.op("llvm.addrspacecast " + dst +
                              " : !llvm.ptr<3> to !llvm.ptr<7>");
      w.line("nvvm.cp.async.bulk.tensor.shared.cluster.global " + dstc + ", " +
             map + ", " + bar + ", box[" + w.i32(64 * i) + ", " + kvh + ", " +
             row + ", " + b + "] : !llvm.ptr<7>, !llvm.ptr");
    }
  };
  auto slotBase = [&](int64_t off, const std::string &slot) {
    std::string offset = w.bin("arith.muli", slot, w.i32(kvBytes), "i32");
    offset = w.bin("arith.addi", offset, w.i32(off), "i32");
    return w.op("llvm.getelementptr " + smem + "[" + offset +
                "] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8");
  };
  auto barAt = [&](int64_t off, const std::string &slot) {
    std::string offset = w.bin("arith.muli", slot, c8, "i32");
    offset = w.bin("arith.addi", offset, w.i32(barOff + off), "i32");
    return w.op("llvm.getelementptr " + smem + "[" + offset +
                "] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8");
  };
  // A wgmma shared-memory descriptor (PTX ISA 9.7.15.5.1): start address,
  // leading and stride byte offsets (>> 4), 128-byte swizzle (bit 62).
  auto desc = [&](const std::string &ptr, int64_t lbo, int64_t sbo) {
    std::string addr = w.op("llvm.ptrtoint " + ptr + " : !llvm.ptr<3> to i64");
    std::string start = w.bin("arith.andi", addr, w.i64(0x3FFFF), "i64");
    start = w.bin("arith.shrui", start, w.i64(4), "i64");
    int64_t rest = ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (int64_t(1) << 62);
    return w.bin("arith.ori", start, w.i64(rest), "i64");
  };
  auto ptrAdd = [&](const std::string &base, int64_t off) {
    return w.op("llvm.getelementptr " + base + "[" + std::to_string(off) +
                "] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8");
  };

  // The persistent loop over tiles, carrying the key-block count g (stage
  // phases) and the tile count (Q phase).
  std::string g0 = c0;
  w.line("%tiles_end:2 = scf.for %tile = " + cta + " to " + ntiles + " step " +
         ncta + " iter_args(%g = " + g0 + ", %tc = " + c0 + ") -> (i32, i32) : i32 {");
  // Tile order. Static: m_block fastest, so the CTAs running at once share
  // a head's K/V in L2. Heavy-first (masks whose work grows with m_block):
  // m_block slowest and descending, (batch, head) fastest, so every round of
  // the persistent loop hands out tiles of about the same length, longest
  // first (FlashAttention-3's LPT order, without the atomic counter); with
  // m_block fastest, a grid that is not a multiple of the m_block count
  // gives some CTAs only the long tiles.
  // Split-KV: the split is the fastest index.
  std::string mb, bh, split, tile = "%tile";
  if (partial) {
    split = w.bin("arith.remui", tile, nsplit, "i32");
    tile = w.bin("arith.divui", tile, nsplit, "i32");
  }
  if (k.heavyFirst) {
    std::string nbh = w.bin("arith.muli", batch, hq, "i32");
    bh = w.bin("arith.remui", tile, nbh, "i32");
    mb = w.bin("arith.subi", w.bin("arith.subi", nmb, w.i32(1), "i32"),
               w.bin("arith.divui", tile, nbh, "i32"), "i32");
  } else {
    mb = w.bin("arith.remui", tile, nmb, "i32");
    bh = w.bin("arith.divui", tile, nmb, "i32");
  }
  std::string h = w.bin("arith.remui", bh, hq, "i32");
  std::string b = w.bin("arith.divui", bh, hq, "i32");
  std::string kvh = w.bin("arith.divui", h, groups, "i32");
  std::string m0 = w.bin("arith.muli", mb, c64, "i32");
  // Key range (DESIGN.md section 2): n_max = min(Sk, m1 + c), c from causal.
  std::string rows = w.bin("arith.minsi", c64, w.bin("arith.subi", sq, m0, "i32"), "i32");
  std::string m1 = w.bin("arith.addi", m0, rows, "i32");
  std::string off = w.bin("arith.subi", sk, sq, "i32");
  std::string nHi = sk;
  if (k.causal == 1)
    nHi = w.bin("arith.minsi", nHi, m1, "i32");
  if (k.causal == 2)
    nHi = w.bin("arith.minsi", nHi, w.bin("arith.addi", m1, off, "i32"), "i32");
  if (k.windowRight >= 0)
    nHi = w.bin("arith.minsi", nHi,
                w.bin("arith.addi", w.bin("arith.addi", m1, off, "i32"),
                      w.i32(k.windowRight), "i32"),
                "i32");
  nHi = w.bin("arith.maxsi", nHi, c0, "i32");
  // n_min = max(0, m0 + Sk - Sq - L) with a left window, as key blocks.
  std::string nbLo = c0;
  if (k.windowLeft >= 0) {
    std::string nLo = w.bin("arith.subi", w.bin("arith.addi", m0, off, "i32"),
                            w.i32(k.windowLeft), "i32");
    nLo = w.bin("arith.maxsi", nLo, c0, "i32");
    nbLo = w.bin("arith.divsi", nLo, cBN, "i32");
  }
  std::string nbHi = w.bin("arith.ceildivsi", nHi, cBN, "i32");
  if (partial) {
    // The split's key blocks (DESIGN.md section 2, as flashattn-tile):
    // [s * ceil(nblk / S), (s + 1) * ceil(nblk / S)) of nblk = ceil(Sk / BN).
    std::string per = w.bin("arith.ceildivsi",
                            w.bin("arith.ceildivsi", sk, cBN, "i32"), nsplit, "i32");
    std::string sLo = w.bin("arith.muli", split, per, "i32");
    nbLo = w.bin("arith.maxsi", nbLo, sLo, "i32");
    nbHi = w.bin("arith.minsi", nbHi, w.bin("arith.addi", sLo, per, "i32"), "i32");
  }
  std::string nblocks = w.bin("arith.subi", nbHi, nbLo, "i32");
  nblocks = w.bin("arith.maxsi", nblocks, c0, "i32");

  // This thread's two rows and the keys each may see (j < lim).
  std::string iA = w.bin("arith.addi", m0, row0, "i32");
  std::string iB = w.bin("arith.addi", m0, row1, "i32");
  // Keys j with lo <= j < lim are allowed (causal, window, sequence end).
  std::string limA = sk, limB = sk, loA, loB;
  if (k.causal) {
    std::string cA = k.causal == 2 ? w.bin("arith.addi", iA, off, "i32") : iA;
    std::string cB = k.causal == 2 ? w.bin("arith.addi", iB, off, "i32") : iB;
    limA = w.bin("arith.minsi", limA, w.bin("arith.addi", cA, c1, "i32"), "i32");
    limB = w.bin("arith.minsi", limB, w.bin("arith.addi", cB, c1, "i32"), "i32");
  }
  if (k.windowRight >= 0) {
    std::string r1 = w.i32(k.windowRight + 1);
    limA = w.bin("arith.minsi", limA,
                 w.bin("arith.addi", w.bin("arith.addi", iA, off, "i32"), r1, "i32"), "i32");
    limB = w.bin("arith.minsi", limB,
                 w.bin("arith.addi", w.bin("arith.addi", iB, off, "i32"), r1, "i32"), "i32");
  }
  if (k.windowLeft >= 0) {
    std::string l = w.i32(k.windowLeft);
    loA = w.bin("arith.subi", w.bin("arith.addi", iA, off, "i32"), l, "i32");
    loB = w.bin("arith.subi", w.bin("arith.addi", iB, off, "i32"), l, "i32");
  }

  // Leader: Q, and the first two K/V blocks.
  w.line("scf.if " + isLeader + " {");
  w.line("  nvvm.mbarrier.arrive.expect_tx " + barQ + ", " + w.i32(qBytes) +
         " : !llvm.ptr<3>, i32");
  for (int64_t i = 0; i < boxes; ++i) {
    std::string dst = w.op("llvm.addrspacecast " + ptrAdd(at(qOff), i * BM * 128) +
                           " : !llvm.ptr<3> to !llvm.ptr<7>");
    w.line("nvvm.cp.async.bulk.tensor.shared.cluster.global " + dst +
           ", %qmap, " + barQ + ", box[" + w.i32(64 * i) + ", " + h + ", " +
           m0 + ", " + b + "] : !llvm.ptr<7>, !llvm.ptr");
  }
  for (int j = 0; j < 2; ++j) {
    std::string nb = w.i32(j);
    std::string has = w.op("arith.cmpi slt, " + nb + ", " + nblocks + " : i32");
    w.line("scf.if " + has + " {");
    std::string gj = w.bin("arith.addi", "%g", nb, "i32");
    std::string slot = w.bin("arith.remui", gj, c2, "i32");
    std::string kb = w.bin("arith.addi", nbLo, nb, "i32");
    loadKV("%kmap", slotBase(kOff, slot), barAt(8, slot), kb, kvh, b);
    loadKV("%vmap", slotBase(vOff, slot), barAt(24, slot), kb, kvh, b);
    w.line("}");
  }
  w.line("}");
  std::string qpar = w.bin("arith.andi", "%tc", c1, "i32");
  w.line("nvvm.mbarrier.try_wait.parity " + barQ + ", " + qpar + ", " +
         w.i32(10000000) + " : !llvm.ptr<3>, i32, i32");

  // Loop-carried state: g, row max (2 rows), row sum (2 partial), O.
  std::string oInit = w.op("llvm.mlir.undef : " + oT);
  for (int r = 0; r < nO; ++r)
    oInit = w.op("llvm.insertvalue " + zeroF + ", " + oInit + "[" +
                 std::to_string(r) + "] : " + oT);
  w.line("%kl:6 = scf.for %n = " + c0 + " to " + nblocks + " step " + c1 +
         " iter_args(%gg = %g, %m_a = " + negInf + ", %m_b = " + negInf +
         ", %l_a = " + zeroF + ", %l_b = " + zeroF + ", %oacc = " + oInit +
         ") -> (i32, f32, f32, f32, f32, " + oT + ") : i32 {");
  std::string slot = w.bin("arith.remui", "%gg", c2, "i32");
  std::string par = w.bin("arith.andi", w.bin("arith.divui", "%gg", c2, "i32"), c1, "i32");
  std::string kBase = slotBase(kOff, slot), vBase = slotBase(vOff, slot);
  w.line("nvvm.mbarrier.try_wait.parity " + barAt(8, slot) + ", " + par + ", " +
         w.i32(10000000) + " : !llvm.ptr<3>, i32, i32");
  // S = Q K^T.
  std::string qBase = at(qOff);
  std::string s = w.op("llvm.mlir.undef : " + sT);
  w.line("nvvm.wgmma.fence.aligned");
  for (int64_t kk = 0; kk < D / 16; ++kk) {
    int64_t box = kk / 4, inBox = (kk % 4) * 32;
    std::string dA = desc(ptrAdd(qBase, box * BM * 128 + inBox), 16, 1024);
    std::string dB = desc(ptrAdd(kBase, box * BN * 128 + inBox), 16, 1024);
    s = w.op("nvvm.wgmma.mma_async " + dA + ", " + dB + ", " + s +
             ", #nvvm.shape<m = 64, n = " + std::to_string(BN) +
             ", k = 16>, D [<f32>, #nvvm.wgmma_scale_out<" +
             (kk ? "one" : "zero") + ">], A [<" + et +
             ">, #nvvm.wgmma_scale_in<one>, <row>], B [<" + et +
             ">, #nvvm.wgmma_scale_in<one>, <col>] : " + sT + " -> " + sT);
  }
  w.line("nvvm.wgmma.commit.group.sync.aligned");
  w.line("nvvm.wgmma.wait.group.sync.aligned 0");

  // Softmax on the fragments.
  std::string n0 = w.bin("arith.muli", w.bin("arith.addi", nbLo, "%n", "i32"),
                         cBN, "i32");
  std::vector<std::string> sv(nS);
  // Region arguments (positions inside the sequence, as index): b, h and the
  // thread's two rows once per block, the key per score.
  auto idx = [&](const std::string &v) {
    return w.op("arith.index_cast " + v + " : i32 to index");
  };
  std::string bIdx, hIdx, iIdx[2];
  if (k.scoreRegion || k.maskRegion) {
    bIdx = idx(b);
    hIdx = idx(h);
    iIdx[0] = idx(iA);
    iIdx[1] = idx(iB);
  }
  std::string mxA = negInf, mxB = negInf;
  for (int r = 0; r < nS; ++r) {
    std::string x = w.op("llvm.extractvalue " + s + "[" + std::to_string(r) +
                         "] : " + sT);
    int colConst = 8 * (r / 4) + (r % 2);
    std::string j = w.bin("arith.addi", w.bin("arith.addi", n0, col0, "i32"),
                          w.i32(colConst), "i32");
    bool rowB = (r / 2) % 2;
    std::string ok = w.op("arith.cmpi slt, " + j + ", " + (rowB ? limB : limA) + " : i32");
    if (k.windowLeft >= 0)
      ok = w.bin("arith.andi", ok,
                 w.op("arith.cmpi sge, " + j + ", " + (rowB ? loB : loA) + " : i32"), "i1");
    std::string regionArgs;
    if (k.scoreRegion || k.maskRegion)
      regionArgs = bIdx + ", " + hIdx + ", " + iIdx[rowB] + ", " + idx(j);
    if (k.maskRegion) {
      // The mask region, inlined by the conversion in place of this call.
      std::string keep = w.op("func.call @" + k.name + "_mask(" + regionArgs +
                              ") : (index, index, index, index) -> i1");
      ok = w.bin("arith.andi", ok, keep, "i1");
    }
    if (k.softcap > 0) {
      // softcap * tanh(s / softcap), then * log2(e). tanh.approx.f32 (PTX ISA
      // 9.7.4.9) has no NVVM op: inline asm.
      x = w.bin("arith.mulf", x, capScale, "f32");
      x = w.op("llvm.inline_asm asm_dialect = att \"tanh.approx.f32 $0, $1;\", \"=f,f\" " +
               x + " : (f32) -> f32");
      x = w.bin("arith.mulf", x, k.scoreRegion ? w.f32(k.softcap) : capLog2, "f32");
    } else {
      x = w.bin("arith.mulf", x, k.scoreRegion ? w.f32(k.scale) : scaleC, "f32");
    }
    if (k.scoreRegion) {
      // The score region sees the natural-domain score (after softcap);
      // log2(e) comes after it.
      x = w.op("func.call @" + k.name + "_score(" + x + ", " + regionArgs +
               ") : (f32, index, index, index, index) -> f32");
      x = w.bin("arith.mulf", x, w.f32(1.4426950408889634), "f32");
    }
    x = w.op("arith.select " + ok + ", " + x + ", " + negInf + " : f32");
    sv[r] = x;
    if (rowB)
      mxB = w.bin("arith.maxnumf", mxB, x, "f32");
    else
      mxA = w.bin("arith.maxnumf", mxA, x, "f32");
  }
  auto quadMax = [&](std::string v) {
    for (const std::string &sh : {c1, c2}) {
      std::string o = w.op("nvvm.shfl.sync bfly " + full + ", " + v + ", " + sh +
                           ", " + clamp + " : f32 -> f32");
      v = w.bin("arith.maxnumf", v, o, "f32");
    }
    return v;
  };
  mxA = quadMax(mxA);
  mxB = quadMax(mxB);
  std::string mNewA = w.bin("arith.maxnumf", "%m_a", mxA, "f32");
  std::string mNewB = w.bin("arith.maxnumf", "%m_b", mxB, "f32");
  auto guard = [&](const std::string &m) {
    std::string e = w.op("arith.cmpf oeq, " + m + ", " + negInf + " : f32");
    return w.op("arith.select " + e + ", " + zeroF + ", " + m + " : f32");
  };
  std::string useA = guard(mNewA), useB = guard(mNewB);
  auto ex2 = [&](const std::string &x) {
    return w.op("llvm.call_intrinsic \"llvm.nvvm.ex2.approx.ftz.f\"(" + x +
                ") : (f32) -> f32");
  };
  std::string alphaA = ex2(w.bin("arith.subf", "%m_a", useA, "f32"));
  std::string alphaB = ex2(w.bin("arith.subf", "%m_b", useB, "f32"));
  std::string sumA = zeroF, sumB = zeroF;
  std::vector<std::string> p(nS);
  for (int r = 0; r < nS; ++r) {
    bool rowB = (r / 2) % 2;
    p[r] = ex2(w.bin("arith.subf", sv[r], rowB ? useB : useA, "f32"));
    if (rowB)
      sumB = w.bin("arith.addf", sumB, p[r], "f32");
    else
      sumA = w.bin("arith.addf", sumA, p[r], "f32");
  }
  std::string lA = w.bin("arith.addf", w.bin("arith.mulf", "%l_a", alphaA, "f32"), sumA, "f32");
  std::string lB = w.bin("arith.addf", w.bin("arith.mulf", "%l_b", alphaB, "f32"), sumB, "f32");
  std::string oacc = "%oacc";
  for (int r = 0; r < nO; ++r) {
    std::string x = w.op("llvm.extractvalue " + oacc + "[" + std::to_string(r) +
                         "] : " + oT);
    x = w.bin("arith.mulf", x, (r / 2) % 2 ? alphaB : alphaA, "f32");
    oacc = w.op("llvm.insertvalue " + x + ", " + oacc + "[" + std::to_string(r) +
                "] : " + oT);
  }
  // P packed in pairs into the A registers of the next wgmma.
  std::vector<std::string> pk(nS / 2);
  for (int r = 0; r < nS; r += 2) {
    std::string vec = w.op("llvm.mlir.undef : vector<2xf32>");
    vec = w.op("llvm.insertelement " + p[r] + ", " + vec + "[" + c0 +
               " : i32] : vector<2xf32>");
    vec = w.op("llvm.insertelement " + p[r + 1] + ", " + vec + "[" + c1 +
               " : i32] : vector<2xf32>");
    std::string h2 = w.op("arith.truncf " + vec + " : vector<2xf32> to vector<2x" + et + ">");
    pk[r / 2] = w.op("llvm.bitcast " + h2 + " : vector<2x" + et + "> to i32");
  }
  // O += P V: RS wgmma through inline asm (no op for the register-A form).
  w.line("nvvm.mbarrier.try_wait.parity " + barAt(24, slot) + ", " + par + ", " +
         w.i32(10000000) + " : !llvm.ptr<3>, i32, i32");
  w.line("nvvm.wgmma.fence.aligned");
  for (int64_t kk = 0; kk < BN / 16; ++kk) {
    std::string dV = desc(ptrAdd(vBase, kk * 2048), BN * 128, 1024);
    std::string asmText = "{\\0A.reg .pred p;\\0Asetp.ne.b32 p, 1, 0;\\0A"
                          "wgmma.mma_async.sync.aligned.m64n" +
                          std::to_string(D) + "k16.f32." + et + "." + et + " {";
    for (int r = 0; r < nO; ++r)
      asmText += (r ? ", $" : "$") + std::to_string(r);
    // Operands are numbered outputs first, then inputs (the tied ones too):
    // the A registers are $(2 nO) .. $(2 nO + 3), the descriptor $(2 nO + 4).
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
  w.line("nvvm.wgmma.commit.group.sync.aligned");
  w.line("nvvm.wgmma.wait.group.sync.aligned 0");
  // Every thread is done with this stage: refill it with block n + 2.
  w.line("nvvm.barrier0");
  std::string n2 = w.bin("arith.addi", "%n", c2, "i32");
  std::string more = w.op("arith.cmpi slt, " + n2 + ", " + nblocks + " : i32");
  std::string doLoad = w.bin("arith.andi", more, isLeader, "i1");
  w.line("scf.if " + doLoad + " {");
  std::string kb2 = w.bin("arith.addi", nbLo, n2, "i32");
  loadKV("%kmap", kBase, barAt(8, slot), kb2, kvh, b);
  loadKV("%vmap", vBase, barAt(24, slot), kb2, kvh, b);
  w.line("}");
  std::string gNext = w.bin("arith.addi", "%gg", c1, "i32");
  w.line("scf.yield " + gNext + ", " + mNewA + ", " + mNewB + ", " + lA + ", " +
         lB + ", " + oacc + " : i32, f32, f32, f32, f32, " + oT);
  w.line("}");

  // Epilogue: reduce the row sums over the quad, normalize, write.
  auto quadSum = [&](std::string v) {
    for (const std::string &sh : {c1, c2}) {
      std::string o = w.op("nvvm.shfl.sync bfly " + full + ", " + v + ", " + sh +
                           ", " + clamp + " : f32 -> f32");
      v = w.bin("arith.addf", v, o, "f32");
    }
    return v;
  };
  std::string LA = quadSum("%kl#3"), LB = quadSum("%kl#4");
  auto inv = [&](const std::string &l) {
    std::string e = w.op("arith.cmpf oeq, " + l + ", " + zeroF + " : f32");
    std::string q = w.bin("arith.divf", w.f32(1.0), l, "f32");
    return w.op("arith.select " + e + ", " + zeroF + ", " + q + " : f32");
  };
  std::string invA = inv(LA), invB = inv(LB);
  std::string hq64 = w.op("arith.extui " + hq + " : i32 to i64");
  std::string sq64 = w.op("arith.extui " + sq + " : i32 to i64");
  std::string b64 = w.op("arith.extui " + b + " : i32 to i64");
  std::string h64 = w.op("arith.extui " + h + " : i32 to i64");
  // Partial form: the split's slice starts at s * B * Sq * H * D (out) and
  // s * B * H * Sq (lse).
  std::string oSplit, lSplit;
  if (partial) {
    std::string s64 = w.op("arith.extui " + split + " : i32 to i64");
    std::string rows = w.bin("arith.muli", w.bin("arith.muli", "%od1", "%od2", "i64"),
                             "%od3", "i64");
    oSplit = w.bin("arith.muli", w.bin("arith.muli", s64, rows, "i64"), w.i64(D), "i64");
    lSplit = w.bin("arith.muli", s64, rows, "i64");
  }
  const std::string ot = partial ? "f32" : et;
  for (int half = 0; half < 2; ++half) {
    std::string i = half ? iB : iA;
    std::string valid = w.op("arith.cmpi slt, " + i + ", " + sq + " : i32");
    w.line("scf.if " + valid + " {");
    std::string i64v = w.op("arith.extui " + i + " : i32 to i64");
    // Element offset of out[b, i, h, 0].
    std::string base = w.bin("arith.muli", b64, sq64, "i64");
    base = w.bin("arith.addi", base, i64v, "i64");
    base = w.bin("arith.muli", base, hq64, "i64");
    base = w.bin("arith.addi", base, h64, "i64");
    base = w.bin("arith.muli", base, w.i64(D), "i64");
    if (partial)
      base = w.bin("arith.addi", base, oSplit, "i64");
    for (int r = 0; r < nO; r += 2) {
      if (((r / 2) % 2) != half)
        continue;
      std::string x0 = w.op("llvm.extractvalue %kl#5[" + std::to_string(r) + "] : " + oT);
      std::string x1 = w.op("llvm.extractvalue %kl#5[" + std::to_string(r + 1) + "] : " + oT);
      x0 = w.bin("arith.mulf", x0, half ? invB : invA, "f32");
      x1 = w.bin("arith.mulf", x1, half ? invB : invA, "f32");
      std::string vec = w.op("llvm.mlir.undef : vector<2xf32>");
      vec = w.op("llvm.insertelement " + x0 + ", " + vec + "[" + c0 + " : i32] : vector<2xf32>");
      vec = w.op("llvm.insertelement " + x1 + ", " + vec + "[" + c1 + " : i32] : vector<2xf32>");
      std::string h2 =
          partial ? vec
                  : w.op("arith.truncf " + vec + " : vector<2xf32> to vector<2x" + et + ">");
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
      std::string L = half ? LB : LA, M = half ? "%kl#2" : "%kl#1";
      std::string empty = w.op("arith.cmpf oeq, " + L + ", " + zeroF + " : f32");
      std::string lg = w.op("llvm.call_intrinsic \"llvm.nvvm.lg2.approx.f\"(" + L +
                            ") : (f32) -> f32");
      std::string val = w.bin("arith.mulf", w.bin("arith.addf", M, lg, "f32"),
                              w.f32(M_LN2), "f32");
      val = w.op("arith.select " + empty + ", " + negInf + ", " + val + " : f32");
      // lse[b, h, i]
      std::string li = w.bin("arith.muli", b64, hq64, "i64");
      li = w.bin("arith.addi", li, h64, "i64");
      li = w.bin("arith.muli", li, sq64, "i64");
      li = w.bin("arith.addi", li, i64v, "i64");
      if (partial)
        li = w.bin("arith.addi", li, lSplit, "i64");
      std::string lp = w.op("llvm.getelementptr %lse[" + li +
                            "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32");
      w.line("llvm.store " + val + ", " + lp + " : f32, !llvm.ptr<1>");
      w.line("}");
    }
    w.line("}");
  }
  // Q's buffer is reloaded by the next tile.
  w.line("nvvm.barrier0");
  std::string tcNext = w.bin("arith.addi", "%tc", c1, "i32");
  w.line("scf.yield %kl#0, " + tcNext + " : i32, i32");
  w.line("}");
  w.line("llvm.return");
  os << "  }\n}\n";
  return out;
}

int64_t mlir::flashattn::sm90SharedMemoryBytes(const Sm90KernelSpec &k) {
  return 64 * k.headDim * 2 + 4 * k.blockN * k.headDim * 2 + 64;
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
  auto ext = [&](const std::string &v) {
    return w.op("arith.extui " + v + " : i32 to i64");
  };
  std::string tid = ext(w.op("nvvm.read.ptx.sreg.tid.x : i32"));
  std::string cta = ext(w.op("nvvm.read.ptx.sreg.ctaid.x : i32"));
  std::string ncta = ext(w.op("nvvm.read.ptx.sreg.nctaid.x : i32"));
  std::string c128 = w.i64(128);
  std::string first = w.bin("arith.addi", w.bin("arith.muli", cta, c128, "i64"), tid, "i64");
  std::string stride = w.bin("arith.muli", ncta, c128, "i64");
  std::string S = "%pod0", B = "%pod1", Sq = "%pod2", H = "%pod3", D = "%pod4";
  std::string total = w.bin("arith.muli",
                            w.bin("arith.muli", w.bin("arith.muli", B, Sq, "i64"), H, "i64"),
                            D, "i64");
  std::string rowsBHS = w.bin("arith.muli", w.bin("arith.muli", B, H, "i64"), Sq, "i64");
  std::string z64 = w.i64(0), one64 = w.i64(1);
  std::string negInf = w.op("arith.constant 0xFF800000 : f32");
  std::string zeroF = w.f32(0.0);
  std::string log2e = w.f32(1.4426950408889634), ln2 = w.f32(M_LN2);
  w.line("scf.for %e = " + first + " to " + total + " step " + stride + " : i64 {");
  std::string d = w.bin("arith.remui", "%e", D, "i64");
  std::string r = w.bin("arith.divui", "%e", D, "i64");
  std::string h = w.bin("arith.remui", r, H, "i64");
  std::string bi = w.bin("arith.divui", r, H, "i64");
  std::string i = w.bin("arith.remui", bi, Sq, "i64");
  std::string b = w.bin("arith.divui", bi, Sq, "i64");
  // lse_s at partial_lse[s, b, h, i].
  std::string lrow = w.bin("arith.addi",
                           w.bin("arith.muli", w.bin("arith.addi",
                                                     w.bin("arith.muli", b, H, "i64"), h, "i64"),
                                 Sq, "i64"),
                           i, "i64");
  auto lseAt = [&](const std::string &s) {
    std::string idx = w.bin("arith.addi", w.bin("arith.muli", s, rowsBHS, "i64"), lrow, "i64");
    std::string p = w.op("llvm.getelementptr %pl[" + idx +
                         "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32");
    return w.op("llvm.load " + p + " : !llvm.ptr<1> -> f32");
  };
  // Pass 1: the largest lse_s (DESIGN.md section 1: splits with lse_s = -inf
  // weigh 0; all -inf is an empty row).
  w.line("%mx = scf.for %s = " + z64 + " to " + S + " step " + one64 +
         " iter_args(%m = " + negInf + ") -> (f32) : i64 {");
  w.line("  scf.yield " + w.bin("arith.maximumf", "%m", lseAt("%s"), "f32") + " : f32");
  w.line("}");
  std::string empty = w.op("arith.cmpf oeq, %mx, " + negInf + " : f32");
  std::string mSafe = w.op("arith.select " + empty + ", " + zeroF + ", %mx : f32");
  // Pass 2: w_s = exp(lse_s - m), out = sum w_s o_s / sum w_s.
  w.line("%acc:2 = scf.for %s2 = " + z64 + " to " + S + " step " + one64 +
         " iter_args(%sw = " + zeroF + ", %so = " + zeroF + ") -> (f32, f32) : i64 {");
  std::string x = w.bin("arith.mulf", w.bin("arith.subf", lseAt("%s2"), mSafe, "f32"),
                        log2e, "f32");
  std::string wt = w.op("llvm.call_intrinsic \"llvm.nvvm.ex2.approx.ftz.f\"(" + x +
                        ") : (f32) -> f32");
  std::string oidx = w.bin("arith.addi", w.bin("arith.muli", "%s2", total, "i64"), "%e", "i64");
  std::string op = w.op("llvm.getelementptr %po[" + oidx +
                        "] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32");
  std::string ov = w.op("llvm.load " + op + " : !llvm.ptr<1> -> f32");
  w.line("scf.yield " + w.bin("arith.addf", "%sw", wt, "f32") + ", " +
         w.op("llvm.intr.fma(" + wt + ", " + ov + ", %so) : (f32, f32, f32) -> f32") +
         " : f32, f32");
  w.line("}");
  std::string val = w.bin("arith.divf", "%acc#1", "%acc#0", "f32");
  val = w.op("arith.select " + empty + ", " + zeroF + ", " + val + " : f32");
  std::string tv = w.op("arith.truncf " + val + " : f32 to " + et);
  std::string optr = w.op("llvm.getelementptr %o[%e] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, " + et);
  w.line("llvm.store " + tv + ", " + optr + " : " + et + ", !llvm.ptr<1>");
  if (k.lse) {
    std::string d0 = w.op("arith.cmpi eq, " + d + ", " + z64 + " : i64");
    w.line("scf.if " + d0 + " {");
    std::string lg = w.op("llvm.call_intrinsic \"llvm.nvvm.lg2.approx.f\"(%acc#0) : (f32) -> f32");
    std::string lv = w.bin("arith.addf", mSafe, w.bin("arith.mulf", lg, ln2, "f32"), "f32");
    lv = w.op("arith.select " + empty + ", " + negInf + ", " + lv + " : f32");
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
