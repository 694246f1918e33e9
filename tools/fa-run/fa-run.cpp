//===- fa-run.cpp - compile, run and check flashattn.attention ------------===//
//
// fa-run FILE.mlir: every public function of FILE that holds one
// flashattn.attention whose operands are the function's arguments is a case.
// The whole module goes through the host pipeline (one-shot-bufferize first
// for the tensor form) into native code in-process (MLIR ExecutionEngine).
// Each case gets inputs from a seed (or from `fa.values` argument
// attributes), outputs poisoned with NaN, runs, and is checked against an
// independent float64 reference written plainly from docs/SEMANTICS.md (no
// tiling, no online softmax), with FlashAttention's tolerance rule. Score and
// mask regions are evaluated by the reference through standalone functions
// extracted from the op (the region's own code, called once per (i, j)).
//
// Prints one table row per case; exits 0 when every case passes, 1 on a
// mismatch or bad input (with a message), 2 when the file cannot be compiled.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "flashattn/Target/HostJit.h"

#include "Npy.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <sys/stat.h>
#include <cmath>
#include <cstring>
#include <random>

using namespace mlir;
using namespace mlir::flashattn;

static llvm::cl::OptionCategory faRunCategory("fa-run options");

static llvm::cl::opt<std::string> inputFile(llvm::cl::Positional, llvm::cl::cat(faRunCategory),
                                            llvm::cl::desc("<input .mlir>"),
                                            llvm::cl::Required);
static llvm::cl::opt<unsigned> seed("seed", llvm::cl::cat(faRunCategory), llvm::cl::desc("input seed"),
                                    llvm::cl::init(0));
static llvm::cl::opt<unsigned>
    repeat("repeat", llvm::cl::cat(faRunCategory), llvm::cl::desc("timed runs per case (median reported)"),
           llvm::cl::init(1));
static llvm::cl::opt<std::string>
    onlyCase("case", llvm::cl::cat(faRunCategory), llvm::cl::desc("run only the function with this name"),
             llvm::cl::init(""));
static llvm::cl::opt<std::string> inputsDir(
    "inputs", llvm::cl::cat(faRunCategory),
    llvm::cl::desc("read inputs from DIR/<case>/<name>.npy or DIR/<name>.npy "
                   "(name: q, k, v, cu_seqlens_q, ..., or argN)"),
    llvm::cl::init(""));
static llvm::cl::opt<bool> decompose(
    "decompose", llvm::cl::cat(faRunCategory),
    llvm::cl::desc("lower through flashattn-decompose-to-linalg and upstream's linalg "
                   "lowering instead of flashattn-tile (tensor form only)"),
    llvm::cl::init(false));
static llvm::cl::list<int64_t> tileSizes(
    "tile-sizes", llvm::cl::cat(faRunCategory), llvm::cl::CommaSeparated,
    llvm::cl::desc("tile each op over (batch, kv head, query row) by these sizes first, "
                   "through its TilingInterface (0 = whole dimension; tensor form)"));
static llvm::cl::opt<std::string> dumpDir(
    "dump-inputs", llvm::cl::cat(faRunCategory),
    llvm::cl::desc("write each case's inputs to DIR/<case>/<name>.npy"),
    llvm::cl::init(""));

namespace {

//===----------------------------------------------------------------------===//
// Buffers and element conversion
//===----------------------------------------------------------------------===//

enum class Elem { f32, f16, bf16, i32, i1 };

/// One argument's storage (row-major, identity layout).
struct Buffer {
  Elem elem = Elem::f32;
  SmallVector<int64_t> shape;
  std::vector<uint8_t> data;
  int64_t count() const {
    int64_t n = 1;
    for (int64_t s : shape)
      n *= s;
    return n;
  }
  size_t width() const {
    return elem == Elem::f32 || elem == Elem::i32 ? 4 : elem == Elem::i1 ? 1 : 2;
  }
  void allocate() { data.assign(count() * width(), 0); }
  int32_t *i32() { return reinterpret_cast<int32_t *>(data.data()); }
};

/// Decoding table of every f16 / bf16 bit pattern.
struct HalfTables {
  std::vector<float> f16, bf16;
  HalfTables() : f16(65536), bf16(65536) {
    for (uint32_t bits = 0; bits < 65536; ++bits) {
      llvm::APFloat h(llvm::APFloat::IEEEhalf(), llvm::APInt(16, bits));
      bf16[bits] = llvm::APFloat(llvm::APFloat::BFloat(), llvm::APInt(16, bits))
                       .convertToFloat();
      bool lost;
      h.convert(llvm::APFloat::IEEEsingle(),
                llvm::APFloat::rmNearestTiesToEven, &lost);
      f16[bits] = h.convertToFloat();
    }
  }
};
static const HalfTables &tables() {
  static HalfTables t;
  return t;
}

static uint16_t encodeHalf(double x, const llvm::fltSemantics &sem) {
  llvm::APFloat f(x);
  bool lost;
  f.convert(sem, llvm::APFloat::rmNearestTiesToEven, &lost);
  return static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
}

static double getF(const Buffer &buf, int64_t i) {
  switch (buf.elem) {
  case Elem::f32:
    return reinterpret_cast<const float *>(buf.data.data())[i];
  case Elem::f16:
    return tables().f16[reinterpret_cast<const uint16_t *>(buf.data.data())[i]];
  case Elem::bf16:
    return tables().bf16[reinterpret_cast<const uint16_t *>(buf.data.data())[i]];
  default:
    return 0;
  }
}

static void setF(Buffer &buf, int64_t i, double x) {
  switch (buf.elem) {
  case Elem::f32:
    reinterpret_cast<float *>(buf.data.data())[i] = static_cast<float>(x);
    return;
  case Elem::f16:
    reinterpret_cast<uint16_t *>(buf.data.data())[i] =
        encodeHalf(x, llvm::APFloat::IEEEhalf());
    return;
  case Elem::bf16:
    reinterpret_cast<uint16_t *>(buf.data.data())[i] =
        encodeHalf(x, llvm::APFloat::BFloat());
    return;
  default:
    return;
  }
}

/// Rounds x through the element type (identity for f32 inputs is f32).
static double roundTo(Elem e, double x) {
  switch (e) {
  case Elem::f16:
    return tables().f16[encodeHalf(x, llvm::APFloat::IEEEhalf())];
  case Elem::bf16:
    return tables().bf16[encodeHalf(x, llvm::APFloat::BFloat())];
  default:
    return static_cast<float>(x);
  }
}

static std::optional<Elem> elemOf(Type t) {
  if (t.isF32())
    return Elem::f32;
  if (t.isF16())
    return Elem::f16;
  if (t.isBF16())
    return Elem::bf16;
  if (t.isInteger(32))
    return Elem::i32;
  return std::nullopt;
}

static const char *elemName(Elem e) {
  switch (e) {
  case Elem::f32:
    return "f32";
  case Elem::f16:
    return "f16";
  case Elem::bf16:
    return "bf16";
  case Elem::i32:
    return "i32";
  default:
    return "i1";
  }
}

/// The strided-memref descriptor fields of a buffer, as the LLVM lowering
/// of a memref argument expects them (allocated, aligned, offset, sizes,
/// strides), stored so that their addresses stay valid.
struct Descriptor {
  void *allocated, *aligned;
  int64_t offset = 0;
  SmallVector<int64_t> sizes, strides;
  explicit Descriptor(Buffer &buf)
      : allocated(buf.data.data()), aligned(buf.data.data()),
        sizes(buf.shape.begin(), buf.shape.end()), strides(buf.shape.size()) {
    int64_t s = 1;
    for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
      strides[i] = s;
      s *= sizes[i];
    }
  }
  void pack(SmallVectorImpl<void *> &args) {
    args.push_back(&allocated);
    args.push_back(&aligned);
    args.push_back(&offset);
    for (int64_t &s : sizes)
      args.push_back(&s);
    for (int64_t &s : strides)
      args.push_back(&s);
  }
};

//===----------------------------------------------------------------------===//
// Cases
//===----------------------------------------------------------------------===//

/// Operand roles of flashattn.attention, in operand order.
enum Role {
  Q, K, V, CuQ, CuK, SequsedK, BlockTable, Alibi, KNew, VNew, CacheSeqlens,
  Out, Lse, NumRoles
};
static const char *roleNames[NumRoles] = {
    "q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", "seqused_k",
    "block_table", "alibi_slopes", "k_new", "v_new", "cache_seqlens", "out",
    "lse"};

struct RegionFn {
  std::string name;
  SmallVector<unsigned> capturedArgs; // func argument numbers
  void (*fn)(void **) = nullptr;
};

struct Case {
  std::string name;
  SmallVector<int> roleArg = SmallVector<int>(NumRoles, -1);
  SmallVector<Type> argTypes;
  SmallVector<DenseI32ArrayAttr> argValues;
  // Attributes.
  double scale = 0, softcap = 0;
  CausalKind causal = CausalKind::none;
  int64_t winL = -1, winR = -1, numSplits = 0;
  std::optional<RegionFn> score, mask;
  std::string features;
};

static std::string shapeOf(Type t) {
  auto s = cast<ShapedType>(t);
  std::string r;
  llvm::raw_string_ostream os(r);
  llvm::interleave(s.getShape(), os, "x");
  return r;
}

/// Extracts a region into `func.func @name(region args..., captured memref
/// function arguments...) -> yielded type`, for the reference.
static FailureOr<RegionFn> extractRegion(ModuleOp module, func::FuncOp fn,
                                         Region &region, StringRef name) {
  RegionFn out;
  out.name = name.str();
  SetVector<Value> captured;
  getUsedValuesDefinedAbove(region, captured);
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  SmallVector<Type> inputs(region.getArgumentTypes());
  SmallVector<Value> capturedArgs, capturedConsts;
  for (Value v : captured) {
    auto arg = dyn_cast<BlockArgument>(v);
    if (arg && arg.getOwner() == &fn.getBody().front() &&
        isa<MemRefType, RankedTensorType>(v.getType())) {
      capturedArgs.push_back(v);
      out.capturedArgs.push_back(arg.getArgNumber());
      auto st = cast<ShapedType>(v.getType());
      inputs.push_back(MemRefType::get(st.getShape(), st.getElementType()));
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (def && def->getNumOperands() == 0 && def->getNumRegions() == 0) {
      capturedConsts.push_back(v);
      continue;
    }
    return emitError(v.getLoc())
           << "fa-run: a region uses a value that is neither a function "
              "argument nor a constant; the reference cannot evaluate it";
  }
  auto yield = cast<YieldOp>(region.front().getTerminator());
  auto refFn = func::FuncOp::create(
      b, fn.getLoc(), name,
      b.getFunctionType(inputs, yield.getValues().getTypes()));
  Block *entry = refFn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping mapping;
  unsigned nArgs = region.getNumArguments();
  mapping.map(region.getArguments(), entry->getArguments().take_front(nArgs));
  for (auto [i, v] : llvm::enumerate(capturedArgs)) {
    Value arg = entry->getArgument(nArgs + i);
    if (isa<RankedTensorType>(v.getType()))
      arg = bufferization::ToTensorOp::create(
          b, fn.getLoc(), cast<RankedTensorType>(v.getType()), arg,
          /*restrict=*/true);
    mapping.map(v, arg);
  }
  for (Value v : capturedConsts)
    b.clone(*v.getDefiningOp(), mapping);
  for (Operation &op : region.front().without_terminator())
    b.clone(op, mapping);
  func::ReturnOp::create(b, fn.getLoc(),
                         llvm::map_to_vector(yield.getValues(), [&](Value v) {
                           return mapping.lookupOrDefault(v);
                         }));
  return out;
}

/// Collects the cases of the module; extracts region functions.
static FailureOr<std::vector<Case>> collectCases(ModuleOp module) {
  std::vector<Case> cases;
  SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
  for (func::FuncOp fn : funcs) {
    if (fn.isExternal() || fn.isPrivate())
      continue;
    if (!onlyCase.empty() && fn.getName() != onlyCase)
      continue;
    SmallVector<AttentionOp> ops;
    fn.walk([&](AttentionOp op) { ops.push_back(op); });
    if (ops.empty())
      continue;
    if (ops.size() > 1)
      return fn.emitError("fa-run: a case function holds one "
                          "flashattn.attention, this one holds ")
             << ops.size();
    AttentionOp op = ops.front();
    if (op.getQStart())
      return op.emitError("fa-run: an op that is a tile of query rows (q_start, seqlen_q) "
                          "has no reference here; tile the whole op with --tile-sizes");
    Case c;
    c.name = fn.getName().str();
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      c.argTypes.push_back(fn.getArgumentTypes()[i]);
      c.argValues.push_back(
          fn.getArgAttrOfType<DenseI32ArrayAttr>(i, "fa.values"));
      if (!cast<ShapedType>(fn.getArgumentTypes()[i]).hasStaticShape())
        return fn.emitError("fa-run: argument #")
               << i << " needs a static shape";
    }
    SmallVector<Value> roles = {
        op.getQ(),         op.getK(),           op.getV(),
        op.getCuSeqlensQ(), op.getCuSeqlensK(), op.getSequsedK(),
        op.getBlockTable(), op.getAlibiSlopes(), op.getKNew(),
        op.getVNew(),       op.getCacheSeqlens(), op.getOut(),
        op.getLse()};
    for (auto [r, v] : llvm::enumerate(roles)) {
      if (!v)
        continue;
      auto arg = dyn_cast<BlockArgument>(v);
      if (!arg || arg.getOwner() != &fn.getBody().front())
        return op.emitError("fa-run: operand '")
               << roleNames[r] << "' must be an argument of the function";
      c.roleArg[r] = arg.getArgNumber();
    }
    c.scale = op.getEffectiveScale();
    c.softcap = op.getSoftcap() ? op.getSoftcap()->convertToDouble() : 0;
    c.causal = op.getCausal();
    std::tie(c.winL, c.winR) = op.getWindow();
    c.numSplits = op.getNumSplitsAttr().getValue().getSExtValue();

    std::string f;
    llvm::raw_string_ostream fs(f);
    fs << (op.isVarlenQ() ? "varlen " : "") << (op.isPaged() ? "paged " : "")
       << (op.hasAppend() ? "append " : "");
    if (c.causal != CausalKind::none)
      fs << "causal=" << stringifyCausalKind(c.causal) << " ";
    if (c.winL >= 0 || c.winR >= 0)
      fs << "window=(" << c.winL << "," << c.winR << ") ";
    if (c.softcap > 0)
      fs << "softcap=" << c.softcap << " ";
    if (op.getAlibiSlopes())
      fs << "alibi ";
    if (c.numSplits > 1)
      fs << "splits=" << c.numSplits << " ";
    if (!op.getScore().empty())
      fs << "score ";
    if (!op.getMask().empty())
      fs << "mask ";
    if (op.getLse())
      fs << "lse ";
    if (isa<RankedTensorType>(op.getQ().getType()))
      fs << "tensor ";
    c.features = f.empty() ? "dense" : f;

    if (!op.getScore().empty()) {
      auto r = extractRegion(module, fn, op.getScore(),
                             ("__fa_ref_score_" + c.name));
      if (failed(r))
        return failure();
      c.score = *r;
    }
    if (!op.getMask().empty()) {
      auto r = extractRegion(module, fn, op.getMask(),
                             ("__fa_ref_mask_" + c.name));
      if (failed(r))
        return failure();
      c.mask = *r;
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

/// Fills every argument: floats from N(0, 1) (outputs poisoned with NaN),
/// metadata from `fa.values` or drawn valid from the seed.
static void fillInputs(Case &c, SmallVector<Buffer> &bufs, std::mt19937 &rng) {
  bufs.resize(c.argTypes.size());
  for (auto [i, t] : llvm::enumerate(c.argTypes)) {
    auto st = cast<ShapedType>(t);
    bufs[i].elem = *elemOf(st.getElementType());
    bufs[i].shape.assign(st.getShape().begin(), st.getShape().end());
    bufs[i].allocate();
  }
  auto buf = [&](Role r) -> Buffer * {
    return c.roleArg[r] < 0 ? nullptr : &bufs[c.roleArg[r]];
  };
  std::normal_distribution<double> normal(0.0, 1.0);
  for (auto [i, b] : llvm::enumerate(bufs)) {
    if (b.elem == Elem::i32)
      continue;
    bool isOut = static_cast<int>(i) == c.roleArg[Out] ||
                 static_cast<int>(i) == c.roleArg[Lse];
    for (int64_t e = 0, n = b.count(); e < n; ++e)
      setF(b, e, isOut ? NAN : normal(rng));
  }
  // Explicit values first.
  for (auto [i, b] : llvm::enumerate(bufs))
    if (DenseI32ArrayAttr v = c.argValues[i])
      for (int64_t e = 0; e < std::min<int64_t>(b.count(), v.size()); ++e)
        b.i32()[e] = v[e];
  auto given = [&](Role r) { return c.roleArg[r] >= 0 && c.argValues[c.roleArg[r]]; };
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, std::max(lo, hi))(rng);
  };
  Buffer *q = buf(Q), *k = buf(K);
  int64_t batch = buf(CuQ) ? buf(CuQ)->shape[0] - 1 : q->shape[0];
  auto splitTotal = [&](Buffer *cu, int64_t total) {
    std::vector<int64_t> cuts{0, total};
    for (int64_t b = 1; b < batch; ++b)
      cuts.push_back(uniform(0, total));
    std::sort(cuts.begin(), cuts.end());
    for (int64_t b = 0; b <= batch; ++b)
      cu->i32()[b] = static_cast<int32_t>(cuts[b]);
  };
  if (buf(CuQ) && !given(CuQ))
    splitTotal(buf(CuQ), q->shape[0]);
  if (buf(CuK) && !given(CuK))
    splitTotal(buf(CuK), k->shape[0]);
  int64_t capacity = k->shape.size() == 4 ? k->shape[1] : 0;
  if (Buffer *bt = buf(BlockTable)) {
    // A pool of no page holds no key, whatever the table's width (as in the
    // runtime's check_kv).
    capacity = k->shape[0] == 0 ? 0 : bt->shape[1] * k->shape[1];
    // A pool of no page leaves no page to name: the entries stay 0, which
    // checkInputs refuses (as the runtime refuses a host block_table naming
    // a page outside the pool); a table of no column is an empty result.
    if (!given(BlockTable) && k->shape[0] > 0) {
      // Distinct pages where the pool allows, so that appends do not collide.
      std::vector<int32_t> pages(k->shape[0]);
      std::iota(pages.begin(), pages.end(), 0);
      std::shuffle(pages.begin(), pages.end(), rng);
      for (int64_t e = 0; e < bt->count(); ++e)
        bt->i32()[e] = pages[e % pages.size()];
    }
  }
  int64_t sNew = buf(KNew) ? buf(KNew)->shape[1] : 0;
  if (Buffer *cs = buf(CacheSeqlens); cs && !given(CacheSeqlens))
    for (int64_t b = 0; b < batch; ++b)
      cs->i32()[b] = static_cast<int32_t>(uniform(0, capacity - sNew));
  if (Buffer *su = buf(SequsedK); su && !given(SequsedK))
    for (int64_t b = 0; b < batch; ++b) {
      int64_t cap = capacity;
      if (Buffer *cuk = buf(CuK))
        cap = cuk->i32()[b + 1] - cuk->i32()[b];
      su->i32()[b] = static_cast<int32_t>(uniform(0, cap));
    }
  if (Buffer *al = buf(Alibi))
    for (int64_t e = 0; e < al->count(); ++e) {
      int64_t h = e % al->shape.back();
      setF(*al, e, std::pow(2.0, -8.0 * (h + 1) / al->shape.back()));
    }
}

/// Input checks of docs/SEMANTICS.md (bad input is rejected, never read
/// or written out of bounds). Returns an error message or "".
static std::string checkInputs(Case &c, SmallVector<Buffer> &bufs) {
  auto buf = [&](Role r) -> Buffer * {
    return c.roleArg[r] < 0 ? nullptr : &bufs[c.roleArg[r]];
  };
  Buffer *q = buf(Q), *k = buf(K);
  int64_t batch = buf(CuQ) ? buf(CuQ)->shape[0] - 1 : q->shape[0];
  for (auto [role, total] : {std::pair(CuQ, q->shape[0]),
                             std::pair(CuK, k->shape[0])}) {
    Buffer *cu = buf(role);
    if (!cu)
      continue;
    if (cu->i32()[0] != 0)
      return std::string(roleNames[role]) + "[0] must be 0";
    for (int64_t b = 0; b < batch; ++b)
      if (cu->i32()[b + 1] < cu->i32()[b])
        return std::string(roleNames[role]) + " is not monotone at " +
               std::to_string(b + 1);
    if (cu->i32()[batch] > total)
      return std::string(roleNames[role]) + "[" + std::to_string(batch) +
             "] = " + std::to_string(cu->i32()[batch]) +
             " is past the tensor (" + std::to_string(total) + " rows)";
  }
  int64_t capacity = k->shape.size() == 4 ? k->shape[1] : 0;
  if (Buffer *bt = buf(BlockTable)) {
    capacity = k->shape[0] == 0 ? 0 : bt->shape[1] * k->shape[1];
    if (k->shape[0] == 0 && bt->count() > 0)
      return "block_table has " + std::to_string(bt->count()) +
             " entries but the pool has no page (a pool of no page holds no "
             "key: only a block_table of no column can go with it)";
    for (int64_t e = 0; e < bt->count(); ++e)
      if (bt->i32()[e] < 0 || bt->i32()[e] >= k->shape[0])
        return "block_table entry " + std::to_string(bt->i32()[e]) +
               " is past the pool of " + std::to_string(k->shape[0]) +
               " pages";
  }
  if (Buffer *su = buf(SequsedK))
    for (int64_t b = 0; b < batch; ++b) {
      int64_t cap = capacity;
      if (Buffer *cuk = buf(CuK))
        cap = cuk->i32()[b + 1] - cuk->i32()[b];
      if (su->i32()[b] < 0 || su->i32()[b] > cap)
        return "seqused_k[" + std::to_string(b) + "] = " +
               std::to_string(su->i32()[b]) + " is past the capacity " +
               std::to_string(cap);
    }
  if (Buffer *cs = buf(CacheSeqlens)) {
    int64_t sNew = buf(KNew)->shape[1];
    for (int64_t b = 0; b < batch; ++b)
      if (cs->i32()[b] < 0 || cs->i32()[b] + sNew > capacity)
        return "append past capacity: cache_seqlens[" + std::to_string(b) +
               "] = " + std::to_string(cs->i32()[b]) + " + " +
               std::to_string(sNew) + " new rows > " +
               std::to_string(capacity) + " keys";
  }
  return "";
}

//===----------------------------------------------------------------------===//
// Reference (float64, docs/SEMANTICS.md)
//===----------------------------------------------------------------------===//

struct Result {
  double maxAbs = 0, maxRef = 0, maxNaive = 0, maxRound = 0, maxRel = 0;
  double lseErr = 0;
  /// Some finite lse is off by more than 1e-3 + 1e-6 |ref|.
  bool lseOff = false;
  bool lseInfMismatch = false, nan = false;
  double pairs = 0; // allowed (i, j) pairs x heads, for GFLOP/s
};

/// All elements of a float buffer as doubles (empty for a null buffer).
static std::vector<double> decode(const Buffer *buf) {
  std::vector<double> out;
  if (!buf)
    return out;
  out.resize(buf->count());
  for (int64_t i = 0, n = buf->count(); i < n; ++i)
    out[i] = getF(*buf, i);
  return out;
}

static Result reference(Case &c, SmallVector<Buffer> &in,
                        SmallVector<Buffer> &got) {
  auto buf = [&](SmallVector<Buffer> &bs, Role r) -> Buffer * {
    return c.roleArg[r] < 0 ? nullptr : &bs[c.roleArg[r]];
  };
  Buffer *q = buf(in, Q), *k = buf(in, K), *v = buf(in, V);
  Buffer *outGot = buf(got, Out), *lseGot = buf(got, Lse);
  Buffer *cuq = buf(in, CuQ), *cuk = buf(in, CuK), *su = buf(in, SequsedK);
  Buffer *bt = buf(in, BlockTable), *al = buf(in, Alibi);
  Buffer *kn = buf(in, KNew), *cs = buf(in, CacheSeqlens);
  bool varlenQ = q->shape.size() == 3, paged = bt != nullptr;
  bool varlenK = !paged && k->shape.size() == 3;
  int64_t hq = q->shape[q->shape.size() - 2];
  int64_t hkv = k->shape[k->shape.size() - 2];
  int64_t d = q->shape.back(), dv = v->shape.back();
  int64_t batch = cuq ? cuq->shape[0] - 1 : q->shape[0];
  Elem elem = q->elem;
  bool lowp = elem != Elem::f32;
  int64_t sqDense = varlenQ ? 0 : q->shape[1];
  std::vector<double> qd = decode(q), kd = decode(k), vd = decode(v);
  std::vector<double> knd = decode(kn), vnd = decode(buf(in, VNew));
  std::vector<double> outd = decode(outGot), lsed = decode(lseGot);

  Result res;
  std::vector<double> s, w;
  std::vector<float> sf, pr;
  std::vector<char> allowed;
  std::vector<const double *> krow, vrow;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t qOff = varlenQ ? cuq->i32()[b] : 0;
    int64_t sq = varlenQ ? cuq->i32()[b + 1] - qOff : sqDense;
    int64_t kOff = varlenK ? cuk->i32()[b] : 0, sk;
    int64_t start = cs ? cs->i32()[b] : 0, sNew = kn ? kn->shape[1] : 0;
    if (cs)
      sk = start + sNew;
    else if (su)
      sk = su->i32()[b];
    else if (varlenK)
      sk = cuk->i32()[b + 1] - cuk->i32()[b];
    else
      sk = k->shape[1];
    // Row j of kv head g (the appended rows come from k_new / v_new).
    auto row = [&](const std::vector<double> &cache,
                   const std::vector<double> &fresh, int64_t j, int64_t g,
                   int64_t width) -> const double * {
      if (cs && j >= start)
        return &fresh[((b * sNew + (j - start)) * hkv + g) * width];
      if (paged) {
        int64_t ps = k->shape[1];
        int64_t page = bt->i32()[b * bt->shape[1] + j / ps];
        return &cache[((page * ps + j % ps) * hkv + g) * width];
      }
      if (varlenK)
        return &cache[((kOff + j) * hkv + g) * width];
      return &cache[((b * k->shape[1] + j) * hkv + g) * width];
    };
    s.resize(sk);
    sf.resize(sk);
    w.resize(sk);
    pr.resize(sk);
    allowed.resize(sk);
    krow.resize(sk);
    vrow.resize(sk);
    for (int64_t h = 0; h < hq; ++h) {
      int64_t g = h / (hq / hkv);
      for (int64_t j = 0; j < sk; ++j) {
        krow[j] = row(kd, knd, j, g, d);
        vrow[j] = row(vd, vnd, j, g, dv);
      }
      for (int64_t i = 0; i < sq; ++i) {
        int64_t qRow = varlenQ ? (qOff + i) : (b * sqDense + i);
        const double *qp = &qd[(qRow * hq + h) * d];
        double mx = -INFINITY;
        float mxf = -INFINITY;
        for (int64_t j = 0; j < sk; ++j) {
          const double *kp = krow[j];
          double dot = 0;
          float dotf = 0;
          for (int64_t x = 0; x < d; ++x) {
            dot += qp[x] * kp[x];
            dotf += static_cast<float>(qp[x]) * static_cast<float>(kp[x]);
          }
          double sc = c.scale * dot;
          float scf = static_cast<float>(c.scale) * dotf;
          if (c.softcap > 0) {
            sc = c.softcap * std::tanh(sc / c.softcap);
            scf = static_cast<float>(c.softcap) *
                  std::tanh(scf / static_cast<float>(c.softcap));
          }
          if (al) {
            int64_t slopeIdx = al->shape.size() == 2 ? b * hq + h : h;
            double slope = getF(*al, slopeIdx);
            double dist = std::abs(static_cast<double>(i + sk - sq - j));
            sc -= slope * dist;
            scf -= static_cast<float>(slope * dist);
          }
          int64_t bi = b, hi = h, ii = i, ji = j;
          auto callRegion = [&](RegionFn &rf, void *result,
                                std::optional<float> score) {
            SmallVector<void *> args;
            float sv = score.value_or(0);
            if (score)
              args.push_back(&sv);
            args.append({&bi, &hi, &ii, &ji});
            std::vector<Descriptor> descs;
            descs.reserve(rf.capturedArgs.size());
            for (unsigned a : rf.capturedArgs)
              descs.emplace_back(in[a]);
            for (Descriptor &desc : descs)
              desc.pack(args);
            args.push_back(result);
            rf.fn(args.data());
          };
          if (c.score) {
            float r = 0, rf = 0;
            callRegion(*c.score, &r, static_cast<float>(sc));
            callRegion(*c.score, &rf, scf);
            sc = r;
            scf = rf;
          }
          bool ok = true;
          int64_t off = sk - sq;
          if (c.causal == CausalKind::top_left)
            ok = ok && j <= i;
          if (c.causal == CausalKind::bottom_right)
            ok = ok && j <= i + off;
          // j >= i + off - L and j <= i + off + R, written so that no side
          // overflows for windows near INT64_MAX (i, j and off are small).
          if (c.winL >= 0)
            ok = ok && i + off - j <= c.winL;
          if (c.winR >= 0)
            ok = ok && j - i - off <= c.winR;
          if (ok && c.mask) {
            uint8_t keep = 0;
            callRegion(*c.mask, &keep, std::nullopt);
            ok = keep & 1;
          }
          allowed[j] = ok && sc != -INFINITY;
          s[j] = sc;
          sf[j] = scf;
          if (allowed[j]) {
            mx = std::max(mx, sc);
            mxf = std::max(mxf, scf);
            res.pairs += 1;
          }
        }
        // Exact, and naive (the unfused f32 softmax; with f16 / bf16, P
        // rounded to the element type before P V).
        double sum = 0;
        float sumf = 0;
        for (int64_t j = 0; j < sk; ++j) {
          w[j] = allowed[j] ? std::exp(s[j] - mx) : 0;
          sum += w[j];
          pr[j] = allowed[j] ? std::exp(sf[j] - mxf) : 0;
          sumf += pr[j];
        }
        if (lowp)
          for (int64_t j = 0; j < sk; ++j)
            if (allowed[j])
              pr[j] = static_cast<float>(roundTo(elem, pr[j] / sumf));
        bool empty = sum == 0;
        int64_t outRow = varlenQ ? (qOff + i) : (b * sqDense + i);
        for (int64_t x = 0; x < dv; ++x) {
          double ref = 0;
          float naive = 0;
          for (int64_t j = 0; j < sk; ++j) {
            if (!allowed[j])
              continue;
            double vv = vrow[j][x];
            ref += w[j] * vv;
            naive += pr[j] * static_cast<float>(vv);
          }
          ref = empty ? 0 : ref / sum;
          double o = outd[(outRow * hq + h) * dv + x];
          if (std::isnan(o)) {
            res.nan = true;
            continue;
          }
          double err = std::abs(o - ref);
          res.maxAbs = std::max(res.maxAbs, err);
          res.maxRef = std::max(res.maxRef, std::abs(ref));
          res.maxRel = std::max(res.maxRel, err / std::max(std::abs(ref), 1e-3));
          double naiveR = empty ? 0 : lowp ? roundTo(elem, naive) : naive / sumf;
          res.maxNaive = std::max(res.maxNaive, std::abs(naiveR - ref));
          if (lowp)
            res.maxRound = std::max(res.maxRound,
                                    std::abs(roundTo(elem, ref) - ref));
        }
        if (lseGot) {
          double lseRef = empty ? -INFINITY : mx + std::log(sum);
          int64_t idx = varlenQ ? h * q->shape[0] + qOff + i
                                : (b * hq + h) * sqDense + i;
          double l = lsed[idx];
          if (std::isnan(l))
            res.nan = true;
          else if (std::isinf(lseRef) || std::isinf(l))
            res.lseInfMismatch |= !(std::isinf(lseRef) && std::isinf(l) &&
                                    (lseRef < 0) == (l < 0));
          else {
            res.lseErr = std::max(res.lseErr, std::abs(l - lseRef));
            res.lseOff |= std::abs(l - lseRef) > 1e-3 + 1e-6 * std::abs(lseRef);
          }
        }
      }
    }
  }
  return res;
}

/// The file name of argument `i` of a case: its operand role, or argN.
static std::string argName(const Case &c, unsigned i) {
  for (int r = 0; r < NumRoles; ++r)
    if (c.roleArg[r] == static_cast<int>(i))
      return roleNames[r];
  return "arg" + std::to_string(i);
}

static bool isOutput(const Case &c, unsigned i) {
  return static_cast<int>(i) == c.roleArg[Out] ||
         static_cast<int>(i) == c.roleArg[Lse];
}

/// --inputs: replaces inputs by .npy files where they exist.
static std::string readInputs(Case &c, SmallVector<Buffer> &bufs) {
  for (unsigned i = 0; i < bufs.size(); ++i) {
    if (isOutput(c, i))
      continue;
    std::string name = argName(c, i);
    std::string path = inputsDir + "/" + c.name + "/" + name + ".npy";
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      path = inputsDir + "/" + name + ".npy";
      if (stat(path.c_str(), &st) != 0)
        continue;
    }
    std::vector<double> values;
    std::vector<int64_t> shape;
    std::string err = farun::readNpy(path, values, shape);
    if (!err.empty())
      return err;
    if (ArrayRef<int64_t>(shape) != ArrayRef<int64_t>(bufs[i].shape)) {
      std::string got, want;
      llvm::raw_string_ostream g(got), w(want);
      llvm::interleave(shape, g, "x");
      llvm::interleave(bufs[i].shape, w, "x");
      return path + " has shape " + got + ", the argument '" + name + "' is " +
             want;
    }
    for (size_t e = 0; e < values.size(); ++e) {
      if (bufs[i].elem == Elem::i32)
        bufs[i].i32()[e] = static_cast<int32_t>(values[e]);
      else
        setF(bufs[i], e, values[e]);
    }
  }
  return "";
}

/// --dump-inputs: writes every input of a case as .npy.
static std::string dumpInputs(Case &c, SmallVector<Buffer> &bufs) {
  std::string dir = dumpDir + "/" + c.name;
  mkdir(dumpDir.c_str(), 0755);
  mkdir(dir.c_str(), 0755);
  for (unsigned i = 0; i < bufs.size(); ++i) {
    if (isOutput(c, i))
      continue;
    std::vector<double> values(bufs[i].count());
    for (int64_t e = 0; e < bufs[i].count(); ++e)
      values[e] = bufs[i].elem == Elem::i32 ? bufs[i].i32()[e] : getF(bufs[i], e);
    std::vector<int64_t> shape(bufs[i].shape.begin(), bufs[i].shape.end());
    std::string err = farun::writeNpy(dir + "/" + argName(c, i) + ".npy",
                                      values, shape, bufs[i].elem == Elem::i32);
    if (!err.empty())
      return err;
  }
  return "";
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::HideUnrelatedOptions(faRunCategory);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "fa-run: compile every flashattn.attention of a file through the host "
      "pipeline, run it, and check it against a float64 reference\n");

  DialectRegistry registry;
  registerHostJitDependencies(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();

  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(inputFile, &ctx);
  if (!module)
    return 2;
  FailureOr<std::vector<Case>> cases = collectCases(*module);
  if (failed(cases))
    return 2;
  if (cases->empty()) {
    llvm::errs() << "fa-run: " << inputFile
                 << " holds no function with a flashattn.attention\n";
    return 2;
  }

  auto compileStart = std::chrono::steady_clock::now();
  HostCompileOptions compileOptions;
  compileOptions.decompose = decompose;
  compileOptions.tileSizes.assign(tileSizes.begin(), tileSizes.end());
  FailureOr<std::unique_ptr<ExecutionEngine>> engine = compileForHost(*module, compileOptions);
  if (failed(engine)) {
    llvm::errs() << "fa-run: compiling " << inputFile << " failed\n";
    return 2;
  }
  // The JIT generates code at the first lookup: include it in the time.
  if (auto first = (*engine)->lookupPacked(cases->front().name); !first)
    llvm::consumeError(first.takeError());
  double compileMs = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - compileStart)
                         .count();
  llvm::outs() << "fa-run: " << inputFile << ": " << cases->size()
               << " case(s), compiled in "
               << llvm::format("%.0f", compileMs) << " ms\n";
  llvm::outs() << llvm::format("%-28s %-6s %-36s %-44s %10s %10s %9s %9s "
                               "%9s %8s  %s\n",
                               "case", "dtype", "shapes q/k/out",
                               "features", "max_abs", "tol", "max_rel",
                               "lse_err", "time_ms", "GFLOP/s", "result");

  int failures = 0;
  for (Case &c : *cases) {
    auto lookup = [&](StringRef name) -> void (*)(void **) {
      auto fn = (*engine)->lookupPacked(name);
      if (!fn) {
        llvm::consumeError(fn.takeError());
        return nullptr;
      }
      return *fn;
    };
    auto fn = lookup(c.name);
    if (c.score)
      c.score->fn = lookup(c.score->name);
    if (c.mask)
      c.mask->fn = lookup(c.mask->name);
    if (!fn || (c.score && !c.score->fn) || (c.mask && !c.mask->fn)) {
      llvm::errs() << "fa-run: " << c.name << ": compiled function missing\n";
      ++failures;
      continue;
    }
    std::mt19937 rng(seed);
    SmallVector<Buffer> inputs;
    fillInputs(c, inputs, rng);
    std::string bad = inputsDir.empty() ? "" : readInputs(c, inputs);
    if (bad.empty() && !dumpDir.empty())
      bad = dumpInputs(c, inputs);
    if (bad.empty())
      bad = checkInputs(c, inputs);
    std::string dtype = elemName(inputs[c.roleArg[Q]].elem);
    std::string shapes = shapeOf(c.argTypes[c.roleArg[Q]]) + " " +
                         shapeOf(c.argTypes[c.roleArg[K]]) + " " +
                         shapeOf(c.argTypes[c.roleArg[Out]]);
    if (!bad.empty()) {
      llvm::outs() << llvm::format("%-28s %-6s %-36s %-44s ", c.name.c_str(),
                                   dtype.c_str(), shapes.c_str(),
                                   c.features.c_str())
                   << "BAD INPUT: " << bad << "\n";
      ++failures;
      continue;
    }
    std::vector<double> times;
    SmallVector<Buffer> run;
    for (unsigned r = 0; r < std::max(1u, repeat.getValue()); ++r) {
      run = inputs; // fresh copy: the append writes into the cache
      std::vector<Descriptor> descs;
      descs.reserve(run.size());
      SmallVector<void *> args;
      for (Buffer &bbuf : run)
        descs.emplace_back(bbuf);
      for (Descriptor &desc : descs)
        desc.pack(args);
      auto t0 = std::chrono::steady_clock::now();
      fn(args.data());
      times.push_back(std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - t0)
                          .count());
    }
    std::sort(times.begin(), times.end());
    double ms = times[times.size() / 2];
    Result res = reference(c, inputs, run);
    bool lowp = inputs[c.roleArg[Q]].elem != Elem::f32;
    // docs/SEMANTICS.md, "Tolerance of the tests".
    double tol = lowp ? (c.softcap > 0 ? 3 : 2) * res.maxNaive + 2 * res.maxRound
                      : 2 * res.maxNaive + 1e-5 * res.maxRef + 1e-6;
    // The naive path can tie the reference exactly on tiny cases: keep a
    // floor of one rounding step of the output type.
    if (lowp)
      tol = std::max(tol, 2 * res.maxRound + 1e-6);
    bool lseOk = !res.lseInfMismatch && !res.lseOff;
    bool ok = !res.nan && res.maxAbs <= tol && lseOk;
    double gflops = res.pairs * 2.0 *
                    (inputs[c.roleArg[Q]].shape.back() +
                     inputs[c.roleArg[V]].shape.back()) /
                    (ms * 1e6);
    llvm::outs() << llvm::format(
        "%-28s %-6s %-36s %-44s %10.3e %10.3e %9.2e %9.2e %9.3f %8.2f  %s\n",
        c.name.c_str(), dtype.c_str(), shapes.c_str(), c.features.c_str(),
        res.maxAbs, tol, res.maxRel,
        res.lseInfMismatch ? INFINITY : res.lseErr, ms, gflops,
        ok ? "PASS" : (res.nan ? "FAIL (NaN)" : "FAIL"));
    failures += !ok;
  }
  llvm::outs() << (failures ? "fa-run: FAILED " : "fa-run: all ")
               << (failures ? std::to_string(failures) + " of " : "")
               << cases->size() << " case(s)"
               << (failures ? "" : " within tolerance") << "\n";
  return failures ? 1 : 0;
}
