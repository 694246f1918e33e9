//===- AttentionModule.cpp - a runtime config as a flashattn.attention ----===//
//
// Builds, with OpBuilder, the module a runtime config (fa_attention_config)
// stands for: one `func.func @fa_attention` whose arguments are the call's
// tensors as memrefs (batch, sequence and page-count dimensions dynamic;
// heads, head dims and the page size static) and whose body is the
// flashattn.attention with the config's attributes. The config's score /
// mask regions (`config.regions`, user text in the op's region syntax,
// `score(%s: f32, %b: index, ...) { ... }`) are the only text parsed: each
// region is read as the body of a function of that name and moved into the
// op.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Utils/ParserWorkarounds.h"
#include "flashattn/Target/HostArtifact.h"

#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <cctype>

using namespace mlir;
using namespace mlir::flashattn;

namespace {
/// The memref types of a config's arguments.
struct ArgTypes {
  Type q, k, v, out, lse, i32v, blockTable, alibi, kNew, vNew;
};

ArgTypes argTypes(MLIRContext *ctx, const fa_attention_config &c) {
  Builder b(ctx);
  auto elem = [&](fa_dtype t) -> Type {
    return t == FA_F32 ? Type(b.getF32Type()) : t == FA_F16 ? Type(b.getF16Type())
                                                            : Type(b.getBF16Type());
  };
  Type et = elem(c.dtype), ot = elem(c.out_dtype);
  const int64_t dyn = ShapedType::kDynamic, hq = c.num_q_heads, hkv = c.num_kv_heads,
                d = c.head_dim, dv = c.head_dim_v, ps = c.page_size;
  auto memref = [](ArrayRef<int64_t> shape, Type e) -> Type { return MemRefType::get(shape, e); };
  bool varlenQ = c.flags & FA_VARLEN_Q, varlenK = c.flags & FA_VARLEN_K,
       paged = c.flags & FA_PAGED;
  ArgTypes t;
  t.q = varlenQ ? memref({dyn, hq, d}, et) : memref({dyn, dyn, hq, d}, et);
  auto kv = [&](int64_t dim) {
    return paged     ? memref({dyn, ps, hkv, dim}, et)
           : varlenK ? memref({dyn, hkv, dim}, et)
                     : memref({dyn, dyn, hkv, dim}, et);
  };
  t.k = kv(d);
  t.v = kv(dv);
  t.out = varlenQ ? memref({dyn, hq, dv}, ot) : memref({dyn, dyn, hq, dv}, ot);
  t.lse = varlenQ ? memref({hq, dyn}, b.getF32Type()) : memref({dyn, hq, dyn}, b.getF32Type());
  t.i32v = memref({dyn}, b.getI32Type());
  t.blockTable = memref({dyn, dyn}, b.getI32Type());
  t.alibi = (c.flags & FA_ALIBI_PER_BATCH) ? memref({dyn, hq}, b.getF32Type())
                                           : memref({hq}, b.getF32Type());
  t.kNew = memref({dyn, dyn, hkv, d}, et);
  t.vNew = memref({dyn, dyn, hkv, dv}, et);
  return t;
}

/// `regions` with `func.func @` before each top-level `score` / `mask`
/// keyword: the region syntax read as functions of those names.
std::string asFunctions(StringRef regions) {
  std::string out;
  int depth = 0;
  for (size_t i = 0; i < regions.size(); ++i) {
    char ch = regions[i];
    bool wordStart = i == 0 || !(std::isalnum(static_cast<unsigned char>(regions[i - 1])) ||
                                 regions[i - 1] == '_' || regions[i - 1] == '%');
    if (depth == 0 && wordStart &&
        (regions.substr(i).starts_with("score") || regions.substr(i).starts_with("mask")))
      out += "func.func @";
    depth += ch == '{' ? 1 : ch == '}' ? -1 : 0;
    out += ch;
  }
  return out;
}

/// Moves the config's regions (user text) into `op`.
LogicalResult addRegions(AttentionOp op, StringRef regions, std::string &error) {
  MLIRContext *ctx = op.getContext();
  // The region bodies end in flashattn.yield, which verifies only inside
  // the op: they are verified there, with the module.
  if (findKnownParserCrash(regions) != StringRef::npos) {
    error = std::string("the config's regions: ") + kIndexDenseArrayError;
    return failure();
  }
  ParserConfig config(ctx, /*verifyAfterParse=*/false);
  OwningOpRef<ModuleOp> parsed = parseSourceString<ModuleOp>(asFunctions(regions), config);
  if (!parsed) {
    error = "the config's regions do not parse";
    return failure();
  }
  for (Operation &top : llvm::make_early_inc_range(*parsed->getBody())) {
    auto fn = dyn_cast<func::FuncOp>(top);
    if (!fn || fn.getBody().empty()) {
      error = "the config's regions: only score(...) { ... } and mask(...) { ... } may "
              "appear, found '" +
              top.getName().getStringRef().str() + "'";
      return failure();
    }
    StringRef name = fn.getSymName();
    Region &into = name == "score" ? op.getScore() : op.getMask();
    if ((name != "score" && name != "mask") || !into.empty()) {
      error = ("the config's regions: '" + name + "' is not a score or mask region, or repeats")
                  .str();
      return failure();
    }
    into.takeBody(fn.getBody());
  }
  return success();
}
} // namespace

OwningOpRef<ModuleOp> mlir::flashattn::buildAttentionModule(MLIRContext *ctx,
                                                            const fa_attention_config &c,
                                                            std::vector<std::string> &argNames,
                                                            std::string &error) {
  ctx->loadDialect<FlashAttnDialect, func::FuncDialect>();
  OpBuilder b(ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  ArgTypes t = argTypes(ctx, c);
  bool lse = c.flags & FA_WITH_LSE;
  std::vector<std::pair<const char *, Type>> args = {{"q", t.q}, {"k", t.k}, {"v", t.v}};
  auto opt = [&](bool present, const char *name, Type type) {
    if (present)
      args.push_back({name, type});
  };
  opt(c.flags & FA_VARLEN_Q, "cu_seqlens_q", t.i32v);
  opt(c.flags & FA_VARLEN_K, "cu_seqlens_k", t.i32v);
  opt(c.flags & FA_SEQUSED_K, "seqused_k", t.i32v);
  opt(c.flags & FA_PAGED, "block_table", t.blockTable);
  opt(c.flags & FA_ALIBI, "alibi_slopes", t.alibi);
  opt(c.flags & FA_APPEND, "k_new", t.kNew);
  opt(c.flags & FA_APPEND, "v_new", t.vNew);
  opt(c.flags & FA_APPEND, "cache_seqlens", t.i32v);
  args.push_back({"out", t.out});
  opt(lse, "lse", t.lse);
  SmallVector<Type> types;
  for (auto &[name, type] : args) {
    argNames.push_back(name);
    types.push_back(type);
  }
  b.setInsertionPointToEnd(module->getBody());
  auto fn = func::FuncOp::create(b, loc, "fa_attention", b.getFunctionType(types, {}));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto arg = [&](StringRef name) -> Value {
    for (auto [i, a] : llvm::enumerate(args))
      if (name == a.first)
        return entry->getArgument(i);
    return Value();
  };
  SmallVector<Value> outs = {arg("out")};
  if (lse)
    outs.push_back(arg("lse"));
  static const CausalKind causal[] = {CausalKind::none, CausalKind::top_left,
                                      CausalKind::bottom_right};
  DenseI64ArrayAttr window;
  if (c.window_left >= 0 || c.window_right >= 0)
    window = b.getDenseI64ArrayAttr({c.window_left, c.window_right});
  auto f32 = [&](float v, bool present) { return present ? b.getF32FloatAttr(v) : FloatAttr(); };
  auto op = AttentionOp::create(
      b, loc, TypeRange{}, arg("q"), arg("k"), arg("v"), arg("cu_seqlens_q"),
      arg("cu_seqlens_k"), arg("seqused_k"), arg("block_table"), arg("alibi_slopes"),
      arg("k_new"), arg("v_new"), arg("cache_seqlens"), /*q_start=*/Value(),
      /*seqlen_q=*/Value(), outs, f32(c.scale, c.scale != 0),
      causal[c.causal], window, f32(c.softcap, c.softcap > 0), c.num_splits,
      c.pack_gqa >= 0 ? b.getBoolAttr(c.pack_gqa != 0) : BoolAttr(), PlanAttr());
  func::ReturnOp::create(b, loc);
  if (c.regions && failed(addRegions(op, c.regions, error)))
    return nullptr;
  if (failed(verify(*module))) {
    error = "the config's op does not verify";
    return nullptr;
  }
  return module;
}
