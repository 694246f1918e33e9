//===- host-bench.cpp - the host path against unfused OpenBLAS attention --===//
//
// Benchmark, not a test. For each sequence length (512, 2k, 4k by default),
// f32, head_dim 128, non-causal, batch 1, `--heads` heads: our host path
// (flashattn-host-pipeline, JIT) and an unfused attention written with
// OpenBLAS (per head: S = Q K^T with cblas_sgemm, a row softmax, O = P V with
// cblas_sgemm), run in the same process on the same inputs, interleaved
// (ours, peer, ours, peer, ...), medians reported with their ratio. Both are
// single-threaded (openblas_set_num_threads(1)): our host code has no thread
// parallelism yet. The two outputs are compared as a sanity check.
//
// Usage: host-bench [--seqlens=512,2048,4096] [--heads=4] [--reps=5]
//
//===----------------------------------------------------------------------===//

#include "flashattn/Target/HostJit.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cblas.h>

#include <algorithm>
#include <iterator>
#include <chrono>
#include <cmath>
#include <random>
#include <vector>

extern "C" void openblas_set_num_threads(int);

using namespace mlir;

static llvm::cl::list<int64_t> seqlens("seqlens", llvm::cl::CommaSeparated,
                                       llvm::cl::desc("sequence lengths"));
static llvm::cl::opt<int64_t> heads("heads", llvm::cl::init(4),
                                    llvm::cl::desc("attention heads"));
static llvm::cl::opt<int> reps("reps", llvm::cl::init(5),
                               llvm::cl::desc("timed runs of each side"));

static constexpr int64_t kHeadDim = 128;

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Unfused attention over [1, S, H, D] f32 tensors (row-major), per head.
static void openblasAttention(const float *q, const float *k, const float *v,
                              float *out, int64_t s, int64_t h,
                              std::vector<float> &scores) {
  const int64_t d = kHeadDim, ld = h * d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  scores.resize(s * s);
  for (int64_t head = 0; head < h; ++head) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s, s, d, scale,
                q + head * d, ld, k + head * d, ld, 0.0f, scores.data(), s);
    for (int64_t i = 0; i < s; ++i) {
      float *row = &scores[i * s];
      float mx = *std::max_element(row, row + s), sum = 0;
      for (int64_t j = 0; j < s; ++j)
        sum += (row[j] = std::exp(row[j] - mx));
      for (int64_t j = 0; j < s; ++j)
        row[j] /= sum;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s, d, s, 1.0f,
                scores.data(), s, v + head * d, ld, 0.0f, out + head * d, ld);
  }
}

/// The strided-memref fields of a row-major [1, S, H, D] buffer.
struct Desc4 {
  float *allocated, *aligned;
  int64_t offset = 0, sizes[4], strides[4];
  Desc4(float *p, int64_t s, int64_t h) : allocated(p), aligned(p) {
    int64_t dims[4] = {1, s, h, kHeadDim};
    int64_t stride = 1;
    for (int i = 3; i >= 0; --i) {
      sizes[i] = dims[i];
      strides[i] = stride;
      stride *= dims[i];
    }
  }
  void pack(std::vector<void *> &args) {
    args.push_back(&allocated);
    args.push_back(&aligned);
    args.push_back(&offset);
    for (int i = 0; i < 4; ++i)
      args.push_back(&sizes[i]);
    for (int i = 0; i < 4; ++i)
      args.push_back(&strides[i]);
  }
};

/// `func.func @attn(q, k, v, out)` over memref<1 x s x heads x 128 x f32>
/// holding one non-causal flashattn.attention, built with OpBuilder.
static OwningOpRef<ModuleOp> buildModule(MLIRContext *ctx, int64_t s) {
  OpBuilder b(ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  auto t = MemRefType::get({1, s, heads, kHeadDim}, b.getF32Type());
  b.setInsertionPointToEnd(module->getBody());
  auto fn = func::FuncOp::create(b, loc, "attn", b.getFunctionType({t, t, t, t}, {}));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value none;
  flashattn::AttentionOp::create(
      b, loc, TypeRange{}, entry->getArgument(0), entry->getArgument(1),
      entry->getArgument(2), /*cu_seqlens_q=*/none, /*cu_seqlens_k=*/none,
      /*seqused_k=*/none, /*block_table=*/none, /*alibi_slopes=*/none,
      /*k_new=*/none, /*v_new=*/none, /*cache_seqlens=*/none, /*q_start=*/none,
      /*seqlen_q=*/none, ValueRange{entry->getArgument(3)}, FloatAttr(),
      flashattn::CausalKind::none, DenseI64ArrayAttr(), FloatAttr(), /*num_splits=*/1,
      BoolAttr(), flashattn::PlanAttr());
  func::ReturnOp::create(b, loc);
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(argc, argv, "host path vs OpenBLAS\n");
  static const int64_t kDefaultLengths[] = {512, 2048, 4096};
  std::vector<int64_t> lengths(seqlens.begin(), seqlens.end());
  if (lengths.empty())
    lengths.assign(std::begin(kDefaultLengths), std::end(kDefaultLengths));
  openblas_set_num_threads(1);

  DialectRegistry registry;
  flashattn::registerHostJitDependencies(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();

  llvm::outs() << llvm::format(
      "%-8s %-6s %12s %10s %12s %10s %8s %10s\n", "seqlen", "heads",
      "ours_ms", "GFLOP/s", "openblas_ms", "GFLOP/s", "ratio", "max_diff");
  for (int64_t s : lengths) {
    OwningOpRef<ModuleOp> module = buildModule(&ctx, s);
    if (!module)
      return 1;
    auto engine = flashattn::compileForHost(*module);
    if (failed(engine))
      return 1;
    auto fn = (*engine)->lookupPacked("attn");
    if (!fn) {
      llvm::errs() << llvm::toString(fn.takeError()) << "\n";
      return 1;
    }

    int64_t n = s * heads * kHeadDim;
    std::vector<float> q(n), k(n), v(n), ours(n), peer(n), scores;
    std::mt19937 rng(0);
    std::normal_distribution<float> normal;
    for (std::vector<float> *x : {&q, &k, &v})
      for (float &e : *x)
        e = normal(rng);
    Desc4 dq(q.data(), s, heads), dk(k.data(), s, heads),
        dv(v.data(), s, heads), dout(ours.data(), s, heads);
    std::vector<void *> args;
    for (Desc4 *d : {&dq, &dk, &dv, &dout})
      d->pack(args);

    std::vector<double> oursMs, peerMs;
    for (int r = 0; r < reps; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      (*fn)(args.data());
      auto t1 = std::chrono::steady_clock::now();
      openblasAttention(q.data(), k.data(), v.data(), peer.data(), s, heads,
                        scores);
      auto t2 = std::chrono::steady_clock::now();
      oursMs.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      peerMs.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
    }
    double diff = 0;
    for (int64_t i = 0; i < n; ++i)
      diff = std::max(diff, static_cast<double>(std::abs(ours[i] - peer[i])));
    double flops = 4.0 * heads * s * s * kHeadDim;
    double a = median(oursMs), b = median(peerMs);
    llvm::outs() << llvm::format("%-8lld %-6lld %12.2f %10.2f %12.2f %10.2f "
                                 "%8.2f %10.2e\n",
                                 (long long)s, (long long)heads.getValue(), a,
                                 flops / (a * 1e6), b, flops / (b * 1e6),
                                 b / a, diff);
  }
  llvm::outs() << "ratio = openblas_ms / ours_ms (> 1: ours is faster); "
                  "single thread, f32, head_dim 128, non-causal\n";
  return 0;
}
