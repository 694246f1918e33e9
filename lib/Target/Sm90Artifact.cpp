//===- Sm90Artifact.cpp - sm_90a cubin artifacts for the runtime ----------===//
//
// A runtime config with target sm90 becomes the memref-form op
// (buildAttentionModule), goes through flashattn-sm90-pipeline to PTX
// (flashattn-tile and the sm90 passes build the kernels), ptxas makes the sm_90a
// cubin (rejected when it spills), and libflashattn_rt wraps it with the
// launch metadata: entry, argument order, threads, dynamic shared
// memory, the persistent grid, and the TMA maps of q, k and v.
//
//===----------------------------------------------------------------------===//

#include "flashattn/Target/HostArtifact.h"

#include "ConfigLowering.h"

#include "flashattn/Conversion/FlashAttnToSm90/Sm90Kernel.h"
#include "flashattn/Dialect/FlashAttn/IR/FlashAttn.h"
#include "flashattn/Pipelines/Pipelines.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::flashattn;

/// ptxas from $FLASHATTN_PTXAS, the PATH, $CUDA_HOME/bin or /usr/local/cuda/bin.
static std::string findPtxas() {
  if (const char *env = std::getenv("FLASHATTN_PTXAS"); env && *env)
    return env;
  if (llvm::ErrorOr<std::string> p = llvm::sys::findProgramByName("ptxas"))
    return *p;
  std::vector<std::string> dirs;
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    dirs.push_back(std::string(home) + "/bin");
  dirs.push_back("/usr/local/cuda/bin");
  for (const std::string &d : dirs)
    if (llvm::sys::fs::can_execute(d + "/ptxas"))
      return d + "/ptxas";
  return "";
}

namespace json = llvm::json;

/// `entry`'s #flashattn.kernel_abi in `entries`, or null.
static KernelAbiAttr abiOf(Sm90EntriesAttr entries, StringRef entry) {
  DictionaryAttr abi = entries.getAbi();
  return abi ? dyn_cast_or_null<KernelAbiAttr>(abi.get(entry)) : KernelAbiAttr();
}

/// The first parameter of `abi` of `kind` (and argument `arg`), or null.
static KernelParamAttr findParam(KernelAbiAttr abi, ParamKind kind, StringRef arg = "") {
  if (abi)
    for (Attribute a : abi.getParams())
      if (auto p = cast<KernelParamAttr>(a); p.getKind() == kind && (arg.empty() || p.getArg() == arg))
        return p;
  return {};
}

/// The fields of a tensor-map parameter.
static json::Object tmaJson(KernelParamAttr p) {
  // Strings copied: the attributes' context ends before the metadata is
  // written.
  json::Object m{{"arg", p.getArg().str()}, {"box", json::Array(p.getBox().asArrayRef())},
                 {"swizzle", p.getSwizzle()}};
  if (p.getGroup())
    m["group"] = p.getGroup();
  if (p.getPagePanels())
    m["page_panels"] = true;
  return m;
}

/// One parameter of the metadata's "abi" lists.
static json::Object paramJson(KernelParamAttr p) {
  json::Object m = p.getKind() == ParamKind::tma ? tmaJson(p) : json::Object();
  m["kind"] = stringifyParamKind(p.getKind());
  if (p.getKind() == ParamKind::ptr || p.getKind() == ParamKind::dims)
    m["arg"] = p.getArg().str();
  if (p.getKind() == ParamKind::dims)
    m["rank"] = p.getRank();
  if (p.getKind() == ParamKind::tile_table_inline)
    m["bytes"] = p.getBytes();
  return m;
}

/// What the artifact writer needs from an op's #flashattn.sm90_entries.
static void readEntries(Sm90EntriesAttr entries, Sm90Ptx &result) {
  result.kernel = entries.getKernel().getLeafReference().str();
  auto leaf = [](SymbolRefAttr ref) {
    return ref ? ref.getLeafReference().str() : std::string();
  };
  result.dense = leaf(entries.getDense());
  result.append = leaf(entries.getAppend());
  result.combine = leaf(entries.getCombine());
  result.packedGroups = entries.getPackedGroups();
  result.kvHeadsPerBlock = entries.getKvHeadsPerBlock();
  result.kvRowCopies = entries.getKvRowCopies();
  KernelAbiAttr main = abiOf(entries, result.kernel);
  if (!main)
    return; // compileSm90Artifact says the ABI is missing
  result.hasAbi = true;
  result.smem = main.getSmem();
  result.threads = main.getThreads();
  result.tileTable = static_cast<bool>(findParam(main, ParamKind::tile_table));
  result.pageTable = static_cast<bool>(findParam(main, ParamKind::page_table));
  if (KernelParamAttr inlineTable = findParam(main, ParamKind::tile_table_inline))
    result.tileTableInline = inlineTable.getBytes();
  result.tileCounter = static_cast<bool>(findParam(main, ParamKind::tile_counter));
  result.fusedCombine = static_cast<bool>(findParam(main, ParamKind::merge_out));
  result.denseTileCounter = static_cast<bool>(
      findParam(abiOf(entries, result.dense), ParamKind::tile_counter));
  KernelParamAttr q = findParam(main, ParamKind::tma, "q");
  result.packGroups = q && q.getGroup() ? q.getGroup() : 1;
  for (NamedAttribute e : entries.getAbi()) {
    auto abi = cast<KernelAbiAttr>(e.getValue());
    json::Array params;
    for (Attribute a : abi.getParams()) {
      auto p = cast<KernelParamAttr>(a);
      params.push_back(paramJson(p));
    }
    result.abi[e.getName().str()] = std::move(params);
  }
}

LogicalResult mlir::flashattn::compileSm90Ptx(const fa_attention_config &config,
                                             Sm90Ptx &result,
                                             std::string &error,
                                             const Sm90PlanOverrides &overrides) {
  // Automatic num_splits (0): the sizes are known only at launch, so the
  // runtime chooses the count (FlashAttention's heuristic over the SMs):
  // compile the split-KV form (partial kernel + combine) with a placeholder
  // count; the kernel reads the real one from its partial out.
  fa_attention_config lowered = config;
  result.autoSplits = config.num_splits == 0;
  if (result.autoSplits)
    lowered.num_splits = 2;
  ConfigLowering lowering;
  if (failed(lowering.run(
          lowered, FA_TARGET_SM90,
          [&](OpPassManager &pm) {
            Sm90PipelineOptions options;
            options.format = "isa"; // ptxas runs below, with a check for spills
            options.blockM = overrides.blockM;
            options.blockN = overrides.blockN;
            options.consumers = overrides.consumers;
            options.stages = overrides.stages;
#define FA_SM90_TUNING(NAME, FLAG, DESC, VALUES) options.NAME = overrides.NAME;
#include "flashattn/Transforms/Sm90Tuning.def"
            options.kvHeadsPerBlock = overrides.kvHeadsPerBlock;
            options.unpipelined = overrides.unpipelined;
            // Automatic num_splits: a dense entry for launches of 1 split.
            options.denseEntry = result.autoSplits;
            // Automatic pack_gqa: packed entries the runtime may pick.
            options.packedEntry = config.pack_gqa < 0 &&
                                  config.num_q_heads > config.num_kv_heads;
            buildFlashAttnSm90Pipeline(pm, options);
          },
          "flashattn-sm90-pipeline", error)))
    return failure();
  ModuleOp module = lowering.module();
  module.walk([&](AttentionOp op) {
    auto entries = op->getAttrOfType<Sm90EntriesAttr>("flashattn.sm90");
    if (!entries)
      return;
    readEntries(entries, result);
    if (PlanAttr plan = op.getPlanAttr()) {
      result.blockM = plan.getBlockM();
      result.blockN = plan.getBlockN();
    }
  });
  if (lowered.num_splits > 1 && result.combine.empty()) {
    error = "split-KV without a combine kernel";
    return failure();
  }
  std::string &ptx = result.ptx;
  module.walk([&](gpu::BinaryOp bin) {
    for (Attribute obj : bin.getObjects())
      if (auto o = dyn_cast<gpu::ObjectAttr>(obj))
        ptx = o.getObject().getValue().str();
  });
  if (ptx.empty()) {
    std::string dump;
    llvm::raw_string_ostream ds(dump);
    module.print(ds);
    error = "no PTX came out of the sm90 lowering: " + dump.substr(0, 2000);
    return failure();
  }
  return success();
}

/// ptxas on `ptx` -> `cubin` (bytes) and its -v log in `info`.
static LogicalResult runPtxas(const std::string &ptx, std::string &cubin, std::string &info,
                              std::string &error) {
  std::string ptxas = findPtxas();
  if (ptxas.empty()) {
    error = "ptxas not found (install the CUDA toolkit or set FLASHATTN_PTXAS)";
    return failure();
  }
  llvm::SmallString<128> ptxPath, cubinPath, logPath;
  if (llvm::sys::fs::createTemporaryFile("flashattn", "ptx", ptxPath) ||
      llvm::sys::fs::createTemporaryFile("flashattn", "cubin", cubinPath) ||
      llvm::sys::fs::createTemporaryFile("flashattn", "log", logPath)) {
    error = "cannot create temporary files";
    return failure();
  }
  llvm::scope_exit cleanup([&] {
    llvm::sys::fs::remove(ptxPath);
    llvm::sys::fs::remove(cubinPath);
    llvm::sys::fs::remove(logPath);
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(ptxPath, ec);
    os << ptx;
  }
  // --split-compile: the entries compiled on up to 8 threads (the
  // artifact's several entries; the same SASS as one thread, and a fixed
  // count, not the machine's, keeps the cubin the same on every machine).
  // A ptxas that does not know the option (it says so, naming it) runs
  // again without it.
  std::string execError;
  auto assemble = [&](bool split) {
    llvm::SmallVector<llvm::StringRef> args = {ptxas, "-arch=sm_90a", "-O3", "-v"};
    if (split)
      args.append({"--split-compile", "8"});
    args.append({ptxPath, "-o", cubinPath});
    std::optional<llvm::StringRef> redirects[] = {std::nullopt, logPath.str(), logPath.str()};
    return llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, 0, 0, &execError);
  };
  auto readLog = [&] {
    auto log = llvm::MemoryBuffer::getFile(logPath);
    return log ? (*log)->getBuffer().str() : execError;
  };
  int rc = assemble(true);
  if (rc != 0 && llvm::StringRef(readLog()).contains("split-compile"))
    rc = assemble(false);
  if (rc != 0) {
    error = "ptxas failed: " + readLog();
    return failure();
  }
  info = readLog();
  auto bytes = llvm::MemoryBuffer::getFile(cubinPath);
  if (!bytes) {
    error = "cannot read the cubin";
    return failure();
  }
  cubin = (*bytes)->getBuffer().str();
  return success();
}

/// The secondary entries: the dense entry of automatic splits and the
/// twins of the main and dense entries (`_packed`, `_kv1`), named by
/// flashattn-tile.
static std::vector<std::string> secondaryEntries(const Sm90Ptx &compiled) {
  const std::string &kernel = compiled.kernel;
  std::vector<std::string> secondary;
  if (!compiled.dense.empty())
    secondary.push_back(compiled.dense);
  // The twins of the main and dense entries (`_packed`, `_kv1`).
  auto addTwins = [&](const char *suffix) {
    secondary.push_back(kernel + suffix);
    if (!compiled.dense.empty())
      secondary.push_back(compiled.dense + suffix);
  };
  if (compiled.packedGroups)
    addTwins("_packed");
  if (compiled.kvHeadsPerBlock > 1)
    addTwins("_kv1");
  return secondary;
}

/// ptxas's log checked: no serialized wgmma; spills, entry by entry (ptxas
/// reports each after "Compiling entry function"): the main kernel (and
/// the combine, append) must not spill; a secondary entry, and the
/// per-row-copy kernels (their 40-register producer copies and
/// zero-fills), may spill a few bytes (some do, 4-16 bytes at head_dim
/// 128): recorded in `entrySpills` (bytes stored) rather than failing the
/// config.
/// `spilled`: the failure is a main kernel's spill.
static LogicalResult checkPtxasLog(const Sm90Ptx &compiled, const std::string &info,
                                   json::Object &entrySpills, std::string &error,
                                   bool &spilled) {
  // ptxas warnings C7510-C7520 mean it serialized wgmma (an accumulator or
  // A register touched while a wgmma may read it, or a wait between fence
  // and wgmma): slower, and a sign the generated order broke an invariant.
  if (info.find("(C75") != std::string::npos) {
    error = "ptxas serialized wgmma in the sm90 kernel: " + info;
    return failure();
  }
  std::vector<std::string> secondary = secondaryEntries(compiled);
  auto isSecondary = [&](const std::string &name) {
    return llvm::is_contained(secondary, name);
  };
  for (size_t at = info.find("Compiling entry function"); at != std::string::npos;) {
    size_t next = info.find("Compiling entry function", at + 1);
    std::string entry = info.substr(at, next == std::string::npos ? std::string::npos
                                                                   : next - at);
    size_t q0 = entry.find('\''), q1 = entry.find('\'', q0 + 1);
    std::string name = entry.substr(q0 + 1, q1 - q0 - 1);
    size_t sp = entry.find(" bytes spill stores");
    if (sp != std::string::npos) {
      size_t num = entry.rfind(' ', sp - 1);
      int bytes = std::atoi(entry.c_str() + num + 1);
      if (bytes > 0 && !compiled.kvRowCopies && !isSecondary(name)) {
        error = "the sm90 kernel " + name + " spills registers: " + info;
        spilled = true;
        return failure();
      }
      if (bytes > 0)
        entrySpills[name] = bytes;
    }
    at = next;
  }
  // setmaxnreg redistributes the launch allocation (registers x threads):
  // the kernel's split assumes ptxas gave it sm90LaunchRegisters (168 at 384
  // threads, 128 at 512); with fewer, setmaxnreg.inc would wait forever on
  // the GPU (PTX ISA, setmaxnreg; docs/ARCHITECTURE.md). The secondary entries have the same
  // split.
  if (compiled.threads > 256) {
    std::vector<std::string> entries = {compiled.kernel};
    llvm::append_range(entries, secondary);
    for (const std::string &entry : entries) {
      size_t at = info.find("Compiling entry function '" + entry + "'");
      at = at == std::string::npos ? at : info.find("Used ", at);
      int regs = at == std::string::npos ? 0 : std::atoi(info.c_str() + at + 5);
      if (regs < sm90LaunchRegisters(compiled.threads)) {
        error = "the sm90 kernel " + entry + " got " + std::to_string(regs) +
                " registers at launch; its setmaxnreg split needs " +
                std::to_string(sm90LaunchRegisters(compiled.threads)) + ": " + info;
        return failure();
      }
    }
  }
  return success();
}

/// The artifact's launch metadata.
static json::Object sm90Metadata(const fa_attention_config &config, Sm90Ptx &compiled,
                                 json::Object entrySpills) {
  const std::string &kernel = compiled.kernel;
  int64_t smem = compiled.smem;
  int64_t g = compiled.packGroups, bm = compiled.blockM, hp = compiled.kvHeadsPerBlock,
          bn = compiled.blockN / hp;
  json::Array argNames{"q", "k", "v", "out"};
  if (config.flags & FA_WITH_LSE)
    argNames.push_back("lse");
  json::Object meta{{"entry", kernel},
                    {"target", "sm90"},
                    {"args", std::move(argNames)},
                    {"block", json::Array{compiled.threads, 1, 1}},
                    {"grid", "persistent"},
                    {"smem", smem},
                    {"block_m", bm},
                    {"block_n", bn},
                    {"pack_groups", g}};
  if (compiled.tileCounter)
    meta["tile_counter"] = true;
  if (compiled.autoSplits)
    meta["auto_splits"] = true;
  // Varlen, seqused_k, paged, append: the runtime builds the tile table per
  // launch from cu_seqlens_q / cu_seqlens_k / seqused_k / block_table /
  // cache_seqlens (none of them a kernel argument).
  // The attention kernels also take a copy of the table by value, of
  // "tile_table_inline" bytes (used when the table pointer is null).
  if (compiled.tileTable) {
    meta["tile_table"] = true;
    meta["tile_table_inline"] = compiled.tileTableInline;
  }
  // Paged: the kernels (attention, append) take the page lists as their
  // last parameter: the call's block_table when it is in device memory, or
  // the tile table with copies of the lists.
  if (compiled.pageTable)
    meta["page_table"] = true;
  // kv-cache append: the copy kernel the runtime launches first (on
  // k_new, v_new, k, v and the tile table).
  if (!compiled.append.empty())
    meta["append_entry"] = compiled.append;
  // Automatic splits: the kernel the runtime launches when the count is 1.
  if (!compiled.dense.empty())
    meta["dense_entry"] = compiled.dense;
  if (compiled.denseTileCounter)
    meta["dense_tile_counter"] = true;
  if (!entrySpills.empty())
    meta["entry_spills"] = std::move(entrySpills);
  // Automatic pack_gqa: the packed entries and their q map (heads split by
  // G, box G heads x block_m / G positions); the runtime takes them when a
  // call's queries of a kv head fit one tile.
  if (int64_t pg = compiled.packedGroups) {
    meta["packed_entry"] = kernel + "_packed";
    if (!compiled.dense.empty())
      meta["packed_dense_entry"] = compiled.dense + "_packed";
    meta["packed_groups"] = pg;
  }
  // Several kv heads per key block: the one-head kernels (block_n x HP
  // keys a block, groups of G / HP heads, k/v boxes of one head), for
  // launches with too few tiles.
  if (hp > 1) {
    meta["kv_heads_per_block"] = hp;
    meta["kv1_entry"] = kernel + "_kv1";
    if (!compiled.dense.empty())
      meta["kv1_dense_entry"] = compiled.dense + "_kv1";
  }
  if (!compiled.combine.empty()) {
    meta["combine_entry"] = compiled.combine;
    // The partial kernels also merge (the plan's fused_merge): they take
    // out, lse and the merge counters after their other parameters.
    if (compiled.fusedCombine)
      meta["fused_combine"] = true;
  }
  // Every entry's parameters, in order: the runtime packs launches from
  // them.
  meta["abi"] = std::move(compiled.abi);
  return meta;
}

LogicalResult mlir::flashattn::compileSm90Artifact(
    const fa_attention_config &config, std::vector<char> &artifact,
    std::string &error, const Sm90PlanOverrides &overrides) {
  Sm90Ptx compiled;
  if (failed(compileSm90Ptx(config, compiled, error, overrides)))
    return failure();
  if (!compiled.hasAbi) {
    error = "kernel @" + compiled.kernel + " carries no #flashattn.kernel_abi";
    return failure();
  }
  std::string cubin, info;
  json::Object entrySpills;
  if (failed(runPtxas(compiled.ptx, cubin, info, error)))
    return failure();
  bool spilled = false;
  if (failed(checkPtxasLog(compiled, info, entrySpills, error, spilled))) {
    // The automatic fused_merge: on, unless the partial kernel then spills
    // (the merge's code tips a kernel at the consumers' register limit over
    // it); then the combine kernel merges.
    if (!spilled || !compiled.fusedCombine || overrides.fusedMerge != "auto")
      return failure();
    Sm90PlanOverrides unfused = overrides;
    unfused.fusedMerge = "off";
    return compileSm90Artifact(config, artifact, error, unfused);
  }
  json::Object meta = sm90Metadata(config, compiled, std::move(entrySpills));
  return packageArtifact(config, FA_ARTIFACT_CUBIN, meta, cubin, artifact, error);
}
