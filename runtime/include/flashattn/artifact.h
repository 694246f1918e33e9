/*===- flashattn/artifact.h - the artifact container ---------------*- C -*-===*
 *
 * What the compiler emits for one specialised attention and the runtime
 * loads: a single file holding a header, launch metadata (JSON) and the
 * code (a host shared object, or an sm_90a cubin).
 *
 * Layout (little-endian):
 *   offset  size  field
 *        0     8  magic "FLASHATT"
 *        8     4  container format version (1)
 *       12     4  kind (fa_artifact_kind)
 *       16    32  cache key (lowercase hex, fa_config_key)
 *       48     8  metadata size M
 *       56     8  payload size P
 *       64     8  XXH3-64 checksum of the M + P bytes that follow
 *       72     M  metadata: JSON object {"compiler_version", "config": {...},
 *                 "entry", "args": [names], "target", and for cubins "block",
 *                 "grid", "smem", the optional launch fields of the
 *                 kernel's forms (split-KV, tile table, packed GQA,
 *                 one-head twins, append: docs/ARCHITECTURE.md, "The sm_90a
 *                 lowering", lists them under lib/Target/Sm90Artifact.cpp;
 *                 artifact.c checks them), and "abi": {entry name: [params
 *                 in parameter order]} for every entry, each param {"kind":
 *                 "ptr" | "dims" (with "rank") | "tma" (with "box"
 *                 (innermost first), "swizzle"[, "group"][,
 *                 "page_panels"]), with "arg" naming a tensor of the entry;
 *                 or "tile_counter" | "tile_table" | "tile_table_inline"
 *                 (with "bytes") | "page_table" | "merge_out" |
 *                 "merge_lse" | "merge_counters"} (docs/ARCHITECTURE.md,
 *                 Runtime)}
 *     72+M     P  payload
 * A file that is shorter, has another magic/version, a checksum mismatch, or
 * whose key is not the one its config hashes to is rejected with
 * FA_ERROR_CORRUPT_ARTIFACT.
 *
 *===----------------------------------------------------------------------===*/

#ifndef FLASHATTN_ARTIFACT_H
#define FLASHATTN_ARTIFACT_H

#include "flashattn/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FA_ARTIFACT_FORMAT_VERSION 1
#define FA_ARTIFACT_HEADER_SIZE 72

typedef enum fa_artifact_kind {
  FA_ARTIFACT_HOST_SO = 1, /* ELF shared object exporting `entry` */
  FA_ARTIFACT_CUBIN = 2    /* sm_90a cubin with kernel `entry` */
} fa_artifact_kind;

/* Builds an artifact: the metadata JSON gets "compiler_version" and
 * "config" added (from `config`). `extra_metadata_json` is a JSON object
 * whose members are merged in (entry, args, launch fields). On success
 * *bytes (malloc'd, release with fa_artifact_free) holds *size bytes. */
fa_status fa_artifact_build(const fa_attention_config *config,
                            const char *compiler_version, fa_artifact_kind kind,
                            const char *extra_metadata_json,
                            const void *payload, size_t payload_size,
                            void **bytes, size_t *size);
void fa_artifact_free(void *bytes);

/* The x86-64 micro-architecture level host artifacts are compiled for on
 * this machine: "x86-64-v4" (AVX-512), "x86-64-v3" (AVX2, FMA) or "x86-64",
 * from the CPU's own feature flags. It is part of the cache key of host
 * configs, so that a cache directory shared between machines never serves
 * code a CPU cannot run. */
const char *fa_host_cpu_level(void);

#ifdef __cplusplus
}
#endif

#endif /* FLASHATTN_ARTIFACT_H */
