//===- fa-compile.cpp - write a kernel artifact for the runtime -----------===//
//
// fa-compile [options] -o FILE.faa: compiles one attention configuration
// (the fields of fa_attention_config, flashattn/runtime.h) into an artifact
// that libflashattn_rt loads (fa_kernel_load_artifact_file). --print-key
// prints the cache key instead (what the runtime computes for the config).
// --emit-mlir prints the op the config becomes. --target host (default) makes
// a shared object for this CPU; --target sm90 a cubin for Hopper (needs
// ptxas; --emit-ptx prints the PTX instead and needs none).
//
//===----------------------------------------------------------------------===//

#include "flashattn/Target/HostArtifact.h"
#include "flashattn/Target/HostJit.h"
#include "flashattn/version.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static llvm::cl::OptionCategory faCompileCategory("fa-compile options");

static cl::opt<std::string> output("o", llvm::cl::cat(faCompileCategory), cl::desc("output artifact"),
                                   cl::value_desc("file"));
static cl::opt<std::string> dtype("dtype", llvm::cl::cat(faCompileCategory), cl::init("f16"),
                                  cl::desc("q/k/v element type: f32, f16, bf16"));
static cl::opt<std::string> outDtype("out-dtype", llvm::cl::cat(faCompileCategory), cl::init(""),
                                     cl::desc("out element type (default: dtype)"));
static cl::opt<int> hq("hq", llvm::cl::cat(faCompileCategory), cl::init(1), cl::desc("query heads"));
static cl::opt<int> hkv("hkv", llvm::cl::cat(faCompileCategory), cl::init(1), cl::desc("kv heads"));
static cl::opt<int> d("d", llvm::cl::cat(faCompileCategory), cl::init(128), cl::desc("head_dim"));
static cl::opt<int> dv("dv", llvm::cl::cat(faCompileCategory), cl::init(0), cl::desc("head_dim_v (default: d)"));
static cl::opt<bool> varlenQ("varlen-q", llvm::cl::cat(faCompileCategory), cl::desc("packed q + cu_seqlens_q"));
static cl::opt<bool> varlenK("varlen-k", llvm::cl::cat(faCompileCategory), cl::desc("packed k/v + cu_seqlens_k"));
static cl::opt<bool> sequsedK("seqused-k", llvm::cl::cat(faCompileCategory), cl::desc("seqused_k operand"));
static cl::opt<int> pageSize("page-size", llvm::cl::cat(faCompileCategory), cl::init(0),
                             cl::desc("paged KV with this page size"));
static cl::opt<bool> append("append", llvm::cl::cat(faCompileCategory), cl::desc("kv-cache append"));
static cl::opt<bool> lse("lse", llvm::cl::cat(faCompileCategory), cl::desc("lse output"));
static cl::opt<std::string> alibi("alibi", llvm::cl::cat(faCompileCategory), cl::init(""),
                                  cl::desc("alibi slopes: heads or batch-heads"));
static cl::opt<std::string> causal("causal", llvm::cl::cat(faCompileCategory), cl::init("none"),
                                   cl::desc("none, top_left, bottom_right"));
static cl::opt<int> windowLeft("window-left", llvm::cl::cat(faCompileCategory), cl::init(-1),
                              cl::desc("sliding window: keys left of the diagonal (-1: unbounded)"));
static cl::opt<int> windowRight("window-right", llvm::cl::cat(faCompileCategory), cl::init(-1),
                               cl::desc("sliding window: keys right of the diagonal (-1: unbounded)"));
static cl::opt<float> softcap("softcap", llvm::cl::cat(faCompileCategory), cl::init(0.0f),
                              cl::desc("score softcap: softcap * tanh(s / softcap) (0: off)"));
static cl::opt<float> scale("scale", llvm::cl::cat(faCompileCategory), cl::init(0.0f),
                            cl::desc("softmax scale (0: 1/sqrt(d))"));
static cl::opt<int> numSplits("num-splits", llvm::cl::cat(faCompileCategory), cl::init(1),
                              cl::desc("split-KV: key ranges merged by a combine (0: automatic, 1: none)"));
static cl::opt<int> packGqa("pack-gqa", llvm::cl::cat(faCompileCategory), cl::init(-1),
                            cl::desc("query heads of a kv head share tiles (-1: automatic, 0: off, 1: on)"));
static cl::opt<std::string> regionsFile(
    "regions-file", llvm::cl::cat(faCompileCategory), cl::init(""),
    cl::desc("file with score/mask region text to paste into the op"));
static cl::opt<bool> printKey("print-key", llvm::cl::cat(faCompileCategory), cl::desc("print the cache key"));
static cl::opt<bool> emitMlir("emit-mlir", llvm::cl::cat(faCompileCategory), cl::desc("print the op as MLIR"));
static cl::opt<bool> emitPtx("emit-ptx", llvm::cl::cat(faCompileCategory), cl::desc("sm90: print the kernel's PTX"));
static cl::opt<int> blockM("block-m", llvm::cl::cat(faCompileCategory), cl::init(0),
                           cl::desc("sm90 tuning: query rows per tile (0: the plan's)"));
static cl::opt<int> blockN("block-n", llvm::cl::cat(faCompileCategory), cl::init(0),
                           cl::desc("sm90 tuning: keys per block (0: the plan's)"));
static cl::opt<int> consumers("consumers", llvm::cl::cat(faCompileCategory), cl::init(0),
                              cl::desc("sm90 tuning: consumer warpgroups (0: the plan's)"));
static cl::opt<int> stages("stages", llvm::cl::cat(faCompileCategory), cl::init(0),
                           cl::desc("sm90 tuning: K/V stages (0: the plan's); the cache "
                                    "key does not record these overrides"));
#define FA_SM90_TUNING(NAME, FLAG, DESC, VALUES)                                              \
  static cl::opt<std::string> NAME(FLAG, llvm::cl::cat(faCompileCategory), cl::init("auto"),   \
                                   cl::desc("sm90 tuning: " DESC " (" VALUES ")"));
#include "flashattn/Transforms/Sm90Tuning.def"
static cl::opt<int> kvHeadsPerBlock(
    "kv-heads-per-block", llvm::cl::cat(faCompileCategory), cl::init(0),
    cl::desc("sm90 tuning: pack_gqa over small pages, kv heads per key block (0: auto, "
             "1: off)"));
static cl::opt<bool> unpipelined(
    "unpipelined", llvm::cl::cat(faCompileCategory),
    cl::desc("sm90: the warpgroup form, flashattn-tile's kernel distributed over one "
             "warpgroup without K / V pipelining or a producer (64 x 64 tiles; the tile "
             "overrides do not apply; not over pages that need row copies: fewer than 8 "
             "keys, or neither a multiple of 64 nor a multiple of 8 dividing it)"));
static cl::opt<std::string> target("target", llvm::cl::cat(faCompileCategory), cl::init("host"),
                                   cl::desc("host (a shared object for this CPU) or sm90 (a cubin; needs ptxas)"));

static std::optional<fa_dtype> parseDtype(StringRef s) {
  return StringSwitch<std::optional<fa_dtype>>(s)
      .Case("f32", FA_F32)
      .Case("f16", FA_F16)
      .Case("bf16", FA_BF16)
      .Default(std::nullopt);
}

/// Whether an sm90 tuning option is given (they need --target sm90).
static bool sm90TuningGiven() {
  for (const cl::opt<std::string> *o : {
#define FA_SM90_TUNING(NAME, FLAG, DESC, VALUES) &NAME,
#include "flashattn/Transforms/Sm90Tuning.def"
       })
    if (o->getValue() != "auto")
      return true;
  return blockM || blockN || consumers || stages || kvHeadsPerBlock || unpipelined;
}

/// The configuration of the command line (`regions` holds the regions
/// file's text, which `c.regions` points into); an exit code past 0 with
/// the reason printed.
static int configFromOptions(fa_attention_config &c, std::string &regions) {
  c = fa_attention_config_default();
  std::optional<fa_dtype> t = parseDtype(dtype);
  std::optional<fa_dtype> ot = parseDtype(outDtype.empty() ? dtype : outDtype);
  std::optional<fa_causal> cz = StringSwitch<std::optional<fa_causal>>(causal)
                                    .Case("none", FA_CAUSAL_NONE)
                                    .Case("top_left", FA_CAUSAL_TOP_LEFT)
                                    .Case("bottom_right", FA_CAUSAL_BOTTOM_RIGHT)
                                    .Default(std::nullopt);
  if (!t || !ot || !cz) {
    errs() << "fa-compile: bad --dtype, --out-dtype or --causal\n";
    return 2;
  }
  if (!alibi.empty() && alibi != "heads" && alibi != "batch-heads") {
    errs() << "fa-compile: --alibi takes heads or batch-heads, got '" << alibi << "'\n";
    return 2;
  }
  if (target != "host" && target != "sm90") {
    errs() << "fa-compile: --target takes host or sm90, got '" << target << "'\n";
    return 2;
  }
  if (target == "host" && sm90TuningGiven()) {
    errs() << "fa-compile: the sm90 tuning options (--block-m ... --l2-hint-kv) "
              "need --target sm90\n";
    return 2;
  }
  c.dtype = *t;
  c.out_dtype = *ot;
  c.num_q_heads = hq;
  c.num_kv_heads = hkv;
  c.head_dim = d;
  c.head_dim_v = dv ? dv : d;
  c.flags = (varlenQ ? FA_VARLEN_Q : 0) | (varlenK ? FA_VARLEN_K : 0) |
            (sequsedK || pageSize ? FA_SEQUSED_K : 0) | (pageSize ? FA_PAGED : 0) |
            (append ? FA_APPEND : 0) | (lse ? FA_WITH_LSE : 0) |
            (!alibi.empty() ? FA_ALIBI : 0) | (alibi == "batch-heads" ? FA_ALIBI_PER_BATCH : 0);
  c.page_size = pageSize;
  c.causal = *cz;
  c.window_left = windowLeft;
  c.window_right = windowRight;
  c.softcap = softcap;
  c.scale = scale;
  c.num_splits = numSplits;
  c.pack_gqa = packGqa;
  if (!regionsFile.empty()) {
    auto buf = MemoryBuffer::getFile(regionsFile);
    if (!buf) {
      errs() << "fa-compile: cannot read " << regionsFile << "\n";
      return 2;
    }
    regions = (*buf)->getBuffer().str();
    c.regions = regions.c_str();
  }
  char why[256];
  if (fa_config_validate(&c, why, sizeof(why)) != FA_OK) {
    errs() << "fa-compile: invalid configuration: " << why << "\n";
    return 2;
  }
  if (target == "sm90")
    c.target = FA_TARGET_SM90;
  return 0;
}

static mlir::flashattn::Sm90PlanOverrides overridesFromOptions() {
  mlir::flashattn::Sm90PlanOverrides o;
  o.blockM = blockM;
  o.blockN = blockN;
  o.consumers = consumers;
  o.stages = stages;
#define FA_SM90_TUNING(NAME, FLAG, DESC, VALUES) o.NAME = NAME;
#include "flashattn/Transforms/Sm90Tuning.def"
  o.kvHeadsPerBlock = kvHeadsPerBlock;
  o.unpipelined = unpipelined;
  return o;
}

/// --emit-ptx: the sm90 kernel's PTX on stdout.
static int printPtx(const fa_attention_config &c,
                    const mlir::flashattn::Sm90PlanOverrides &overrides) {
  mlir::flashattn::Sm90Ptx compiled;
  std::string error;
  if (c.target != FA_TARGET_SM90 ||
      mlir::failed(mlir::flashattn::compileSm90Ptx(c, compiled, error, overrides))) {
    errs() << "fa-compile: " << (error.empty() ? "--emit-ptx needs --target sm90" : error) << "\n";
    return 1;
  }
  outs() << compiled.ptx;
  return 0;
}

/// --emit-mlir: the configuration's flashattn.attention op on stdout.
static int printOp(const fa_attention_config &c) {
  std::vector<std::string> names;
  std::string error;
  mlir::DialectRegistry registry;
  mlir::flashattn::registerHostJitDependencies(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::flashattn::buildAttentionModule(&context, c, names, error);
  if (!module) {
    errs() << "fa-compile: " << error << "\n";
    return 1;
  }
  module->getBody()->front().print(outs());
  outs() << "\n";
  return 0;
}

/// The artifact (host or sm90) into `output`.
static int writeArtifact(const fa_attention_config &c,
                         const mlir::flashattn::Sm90PlanOverrides &overrides) {
  if (output.empty()) {
    errs() << "fa-compile: -o FILE is required\n";
    return 2;
  }
  std::vector<char> artifact;
  std::string error;
  if (mlir::failed(c.target == FA_TARGET_SM90
                       ? mlir::flashattn::compileSm90Artifact(c, artifact, error, overrides)
                       : mlir::flashattn::compileHostArtifact(c, artifact, error))) {
    errs() << "fa-compile: " << error << "\n";
    return 1;
  }
  std::error_code ec;
  raw_fd_ostream os(output, ec);
  if (ec) {
    errs() << "fa-compile: cannot write " << output << ": " << ec.message() << "\n";
    return 1;
  }
  os.write(artifact.data(), artifact.size());
  os.close();
  if (os.has_error()) {
    errs() << "fa-compile: cannot write " << output << ": " << os.error().message() << "\n";
    os.clear_error();
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  llvm::cl::HideUnrelatedOptions(faCompileCategory);
  llvm::cl::ParseCommandLineOptions(argc, argv, "fa-compile: compile one attention configuration into a kernel artifact (host or sm90)\n");
  fa_attention_config c;
  std::string regions;
  if (int code = configFromOptions(c, regions))
    return code;
  if (printKey) {
    char key[33];
    fa_config_key(&c, FA_COMPILER_VERSION, key);
    outs() << key << "\n";
    return 0;
  }
  mlir::flashattn::Sm90PlanOverrides overrides = overridesFromOptions();
  if (emitPtx)
    return printPtx(c, overrides);
  if (emitMlir)
    return printOp(c);
  return writeArtifact(c, overrides);
}
