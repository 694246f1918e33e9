/*===- artifact.c - the artifact container (flashattn/artifact.h) ---------===*
 *
 * Metadata is JSON, built and parsed with cJSON; the checksum is XXH3-64.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE /* strdup (POSIX) */
#include "internal.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static const char kMagic[8] = {'F', 'L', 'A', 'S', 'H', 'A', 'T', 'T'};

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static cJSON *configToJson(const fa_attention_config *c) {
  cJSON *o = cJSON_CreateObject();
  if (!o)
    return NULL;
  cJSON_AddNumberToObject(o, "target", c->target);
  cJSON_AddNumberToObject(o, "dtype", c->dtype);
  cJSON_AddNumberToObject(o, "out_dtype", c->out_dtype);
  cJSON_AddNumberToObject(o, "num_q_heads", c->num_q_heads);
  cJSON_AddNumberToObject(o, "num_kv_heads", c->num_kv_heads);
  cJSON_AddNumberToObject(o, "head_dim", c->head_dim);
  cJSON_AddNumberToObject(o, "head_dim_v", c->head_dim_v);
  cJSON_AddNumberToObject(o, "flags", c->flags);
  cJSON_AddNumberToObject(o, "page_size", c->page_size);
  cJSON_AddNumberToObject(o, "causal", c->causal);
  cJSON_AddNumberToObject(o, "window_left", c->window_left);
  cJSON_AddNumberToObject(o, "window_right", c->window_right);
  cJSON_AddNumberToObject(o, "softcap", (double)c->softcap);
  cJSON_AddNumberToObject(o, "scale", (double)c->scale);
  cJSON_AddNumberToObject(o, "num_splits", c->num_splits);
  cJSON_AddNumberToObject(o, "pack_gqa", c->pack_gqa);
  if (c->regions)
    cJSON_AddStringToObject(o, "regions", c->regions);
  return o;
}

static bool number(const cJSON *o, const char *name, double *out) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, name);
  if (!cJSON_IsNumber(item))
    return false;
  *out = item->valuedouble;
  return true;
}

static bool jsonToConfig(const cJSON *o, fa_attention_config *c, char **regions) {
  *c = fa_attention_config_default();
  double v[16];
  const char *names[16] = {"target", "dtype", "out_dtype", "num_q_heads",
                           "num_kv_heads", "head_dim", "head_dim_v", "flags",
                           "page_size", "causal", "window_left",
                           "window_right", "softcap", "scale", "num_splits",
                           "pack_gqa"};
  /* Each value in its field's range, and whole where the field is an
   * integer (C11 6.3.1.4 and 6.3.1.5: a conversion of a value outside the
   * target's range is undefined): flags u32, softcap and scale float, the
   * others i32. The comparisons also reject NaN. */
  for (int i = 0; i < 16; ++i) {
    if (!number(o, names[i], &v[i]))
      return false;
    if (i == 12 || i == 13) {
      if (!(v[i] >= -FLT_MAX && v[i] <= FLT_MAX))
        return false;
    } else if (!(v[i] >= (i == 7 ? 0.0 : -2147483648.0)) ||
               !(v[i] <= (i == 7 ? 4294967295.0 : 2147483647.0)) || v[i] != floor(v[i])) {
      return false;
    }
  }
  /* Through int32_t: an enum whose constants are all non-negative may have
   * an unsigned underlying type, and -1.0 converted to it is undefined. */
  c->target = (fa_target)(int32_t)v[0];
  c->dtype = (fa_dtype)(int32_t)v[1];
  c->out_dtype = (fa_dtype)(int32_t)v[2];
  c->num_q_heads = (int32_t)v[3];
  c->num_kv_heads = (int32_t)v[4];
  c->head_dim = (int32_t)v[5];
  c->head_dim_v = (int32_t)v[6];
  c->flags = (uint32_t)v[7];
  c->page_size = (int32_t)v[8];
  c->causal = (fa_causal)(int32_t)v[9];
  c->window_left = (int32_t)v[10];
  c->window_right = (int32_t)v[11];
  c->softcap = (float)v[12];
  c->scale = (float)v[13];
  c->num_splits = (int32_t)v[14];
  c->pack_gqa = (int32_t)v[15];
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "regions");
  *regions = NULL;
  if (cJSON_IsString(r)) {
    *regions = strdup(r->valuestring);
    if (!*regions)
      return false;
  }
  c->regions = *regions;
  return true;
}

fa_status fa_artifact_build(const fa_attention_config *config,
                            const char *compiler_version, fa_artifact_kind kind,
                            const char *extra, const void *payload,
                            size_t payload_size, void **bytes, size_t *size) {
  if (!config || !compiler_version || !bytes || !size ||
      (!payload && payload_size))
    return FA_ERROR_INVALID_ARGUMENT;
  char key[33];
  fa_status st = fa_config_key(config, compiler_version, key);
  if (st != FA_OK)
    return st;
  cJSON *meta = extra ? cJSON_Parse(extra) : cJSON_CreateObject();
  if (!meta || !cJSON_IsObject(meta)) {
    cJSON_Delete(meta);
    return FA_ERROR_INVALID_ARGUMENT;
  }
  cJSON_DeleteItemFromObjectCaseSensitive(meta, "compiler_version");
  cJSON_DeleteItemFromObjectCaseSensitive(meta, "config");
  cJSON_AddStringToObject(meta, "compiler_version", compiler_version);
  cJSON_AddItemToObject(meta, "config", configToJson(config));
  char *text = cJSON_PrintUnformatted(meta);
  cJSON_Delete(meta);
  if (!text)
    return FA_ERROR_OUT_OF_MEMORY;
  size_t m = strlen(text);
  size_t total = FA_ARTIFACT_HEADER_SIZE + m + payload_size;
  unsigned char *out = (unsigned char *)malloc(total);
  if (!out) {
    free(text);
    return FA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(out, kMagic, 8);
  put32(out + 8, FA_ARTIFACT_FORMAT_VERSION);
  put32(out + 12, (uint32_t)kind);
  memcpy(out + 16, key, 32);
  put64(out + 48, m);
  put64(out + 56, payload_size);
  memcpy(out + FA_ARTIFACT_HEADER_SIZE, text, m);
  if (payload_size)
    memcpy(out + FA_ARTIFACT_HEADER_SIZE + m, payload, payload_size);
  put64(out + 64, XXH3_64bits(out + FA_ARTIFACT_HEADER_SIZE, m + payload_size));
  free(text);
  *bytes = out;
  *size = total;
  return FA_OK;
}

void fa_artifact_free(void *bytes) { free(bytes); }

void fa_artifact_release(fa_artifact *a) {
  free(a->regions);
  a->regions = NULL;
  free(a->abi_params);
  a->abi_params = NULL;
  memset(a->abi, 0, sizeof(a->abi));
}

/* An optional string field, copied into buf ("" when absent); false when
 * present but not a string. */
static bool opt_string(const cJSON *meta, const char *name, char *buf, size_t n) {
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(meta, name);
  if (s && !cJSON_IsString(s))
    return false;
  snprintf(buf, n, "%s", s ? s->valuestring : "");
  return true;
}

/* An optional boolean field (false when absent); false when present but
 * not a boolean. */
static bool opt_bool(const cJSON *meta, const char *name, bool *out) {
  const cJSON *b = cJSON_GetObjectItemCaseSensitive(meta, name);
  *out = b && cJSON_IsTrue(b);
  return !b || cJSON_IsBool(b);
}

/* One tensor-map entry of the metadata: {"arg", "box" (rank 1..5, entries
 * 1..256, innermost first), "swizzle" (0/32/64/128)[, "group"][,
 * "page_panels"]}. */
static bool parse_tma(const cJSON *m, fa_tma_desc *t) {
  const cJSON *arg = cJSON_GetObjectItemCaseSensitive(m, "arg");
  const cJSON *box = cJSON_GetObjectItemCaseSensitive(m, "box");
  double swz;
  if (!cJSON_IsObject(m) || !cJSON_IsString(arg) || !cJSON_IsArray(box) ||
      !number(m, "swizzle", &swz) || !(swz >= 0 && swz <= 128))
    return false;
  snprintf(t->arg, sizeof(t->arg), "%s", arg->valuestring);
  t->rank = cJSON_GetArraySize(box);
  t->swizzle = (int)swz;
  if (t->rank < 1 || t->rank > 5 ||
      (t->swizzle != 0 && t->swizzle != 32 && t->swizzle != 64 && t->swizzle != 128))
    return false;
  for (int d = 0; d < t->rank; ++d) {
    const cJSON *e = cJSON_GetArrayItem(box, d);
    if (!cJSON_IsNumber(e) || !(e->valuedouble >= 1 && e->valuedouble <= 256))
      return false;
    t->box[d] = (int)e->valuedouble;
  }
  /* "group" G > 1: the map views a 4-D [B, S, H, D] tensor as 5-D
   * [B, S, H / G, G, D] (pack_gqa; a varlen [T, H, D] as 4-D); the box
   * then has rank 5 (4). */
  double group = 1;
  if (cJSON_GetObjectItemCaseSensitive(m, "group") &&
      (!number(m, "group", &group) || !(group >= 1 && group <= 256) ||
       (group > 1 && t->rank != 5 && t->rank != 4)))
    return false;
  t->group = (int)group;
  bool panels = false;
  if (!opt_bool(m, "page_panels", &panels) || (panels && (t->rank != 5 || group > 1)))
    return false;
  t->page_panels = panels;
  return true;
}

/* The header: magic, format version, sizes (*meta_size bytes of metadata
 * and *payload_size of payload follow it, exactly), checksum, kind, key. */
static fa_status parse_header(fa_runtime *rt, const unsigned char *p, size_t size,
                              fa_artifact *a, uint64_t *meta_size, uint64_t *payload_size) {
  if (!p || size < FA_ARTIFACT_HEADER_SIZE)
    return fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT,
                   "artifact truncated: %zu bytes, the header alone is %d",
                   size, FA_ARTIFACT_HEADER_SIZE);
  if (memcmp(p, kMagic, 8) != 0)
    return fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT,
                   "not a flashattn artifact (bad magic)");
  if (get32(p + 8) != FA_ARTIFACT_FORMAT_VERSION)
    return fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT,
                   "artifact format version %u, this runtime reads %d",
                   get32(p + 8), FA_ARTIFACT_FORMAT_VERSION);
  uint64_t m = get64(p + 48), n = get64(p + 56);
  if (m > size || n > size || FA_ARTIFACT_HEADER_SIZE + m + n != size)
    return fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT,
                   "artifact truncated or padded: header says %llu + %llu "
                   "bytes after it, the file has %zu",
                   (unsigned long long)m, (unsigned long long)n,
                   size - FA_ARTIFACT_HEADER_SIZE);
  if (XXH3_64bits(p + FA_ARTIFACT_HEADER_SIZE, m + n) != get64(p + 64))
    return fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT, "artifact checksum mismatch");
  a->kind = (fa_artifact_kind)get32(p + 12);
  if (a->kind != FA_ARTIFACT_HOST_SO && a->kind != FA_ARTIFACT_CUBIN)
    return fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT, "unknown artifact kind %d",
                   (int)a->kind);
  memcpy(a->key, p + 16, 32);
  a->key[32] = '\0';
  *meta_size = m;
  *payload_size = n;
  return FA_OK;
}

/* The metadata's parts, each parsed and checked by one function below in
 * this order: NULL, or what is wrong (the first failure's message). */

/* config, compiler_version, entry and the args list. */
static const char *parse_required(const cJSON *meta, fa_artifact *a) {
  const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(meta, "config");
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(meta, "compiler_version");
  const cJSON *entry = cJSON_GetObjectItemCaseSensitive(meta, "entry");
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(meta, "args");
  if (!cJSON_IsObject(cfg) || !cJSON_IsString(ver) || !cJSON_IsString(entry) ||
      !cJSON_IsArray(args) || !jsonToConfig(cfg, &a->config, &a->regions))
    return "metadata lacks config, compiler_version, entry or args";
  snprintf(a->compiler_version, sizeof(a->compiler_version), "%s", ver->valuestring);
  snprintf(a->entry, sizeof(a->entry), "%s", entry->valuestring);
  return NULL;
}

/* The split-KV and append entries. A split-KV cubin launches its partial
 * kernel then the combine; one without the other would get arguments of
 * the wrong shape. */
static const char *parse_entries(const cJSON *meta, fa_artifact *a) {
  if (!opt_string(meta, "combine_entry", a->combine_entry, sizeof(a->combine_entry)))
    return "bad combine_entry";
  if (!opt_string(meta, "dense_entry", a->dense_entry, sizeof(a->dense_entry)) ||
      (a->dense_entry[0] && !a->combine_entry[0]))
    return "bad dense_entry (a string, with combine_entry)";
  if (!opt_string(meta, "append_entry", a->append_entry, sizeof(a->append_entry)))
    return "bad append_entry (a string, exactly when the config appends, with tile_table)";
  if (a->kind == FA_ARTIFACT_CUBIN &&
      (a->config.num_splits > 1 || a->config.num_splits == 0) !=
          (a->combine_entry[0] != '\0'))
    return "bad combine_entry (a string, exactly when num_splits is 0 or > 1)";
  return NULL;
}

/* The launch ABI's booleans. */
static const char *parse_flags(const cJSON *meta, fa_artifact *a) {
  if (!opt_bool(meta, "tile_counter", &a->tile_counter))
    return "bad tile_counter (expected a boolean)";
  if (!opt_bool(meta, "auto_splits", &a->auto_splits))
    return "bad auto_splits (expected a boolean, with num_splits 0)";
  if (!opt_bool(meta, "tile_table", &a->tile_table))
    return "bad tile_table (expected a boolean)";
  if (!opt_bool(meta, "page_table", &a->page_table) ||
      (a->page_table && (!a->tile_table || !(a->config.flags & FA_PAGED))))
    return "bad page_table (expected a boolean, only with tile_table and paged)";
  if (!opt_bool(meta, "dense_tile_counter", &a->dense_tile_counter))
    return "bad dense_tile_counter (expected a boolean)";
  if (!opt_bool(meta, "fused_combine", &a->fused_combine) ||
      (a->fused_combine && !a->combine_entry[0]))
    return "bad fused_combine (expected a boolean, only with combine_entry)";
  return NULL;
}

/* The tile sizes, what needs them, and the table's forms. */
static const char *parse_tiles(const cJSON *meta, fa_artifact *a) {
  const char *tiles[3] = {"block_m", "block_n", "pack_groups"};
  int *slots[3] = {&a->block_m, &a->block_n, &a->pack_groups};
  for (int i = 0; i < 3; ++i) {
    double v = 0;
    if (cJSON_GetObjectItemCaseSensitive(meta, tiles[i]) &&
        (!number(meta, tiles[i], &v) || !(v >= 1 && v <= 256)))
      return "bad block_m, block_n or pack_groups (integers in [1, 256])";
    *slots[i] = (int)v;
  }
  if (a->auto_splits && (a->config.num_splits != 0 || !a->block_m || !a->block_n))
    return "auto_splits needs num_splits 0, block_m and block_n";
  if (a->tile_table && (!a->block_m || !a->block_n))
    return "tile_table needs block_m and block_n";
  /* The attention kernels' by-value copy of the table (bytes): a parameter
   * they take after the table pointer, so it is part of the launch ABI
   * whenever given. */
  double v = 0;
  if (cJSON_GetObjectItemCaseSensitive(meta, "tile_table_inline") &&
      (!number(meta, "tile_table_inline", &v) ||
       !(v >= 32 && v <= FA_MAX_INLINE_TABLE_BYTES) ||
       v != (double)((int)v / 16 * 16) || !a->tile_table))
    return "bad tile_table_inline (a multiple of 16 in [32, 3072], only with tile_table)";
  a->tile_table_inline = (int)v;
  /* The sequence-aware forms read their tiles from the table: a cubin for
   * them without it would read a parameter nobody passes. An append cubin
   * writes k_new / v_new first: without its kernel (or its tile table) the
   * attention would read a stale cache. */
  if (a->kind == FA_ARTIFACT_CUBIN && !a->tile_table &&
      (a->config.flags & (FA_VARLEN_Q | FA_VARLEN_K | FA_SEQUSED_K | FA_PAGED | FA_APPEND)))
    return "varlen, seqused_k, paged and append cubins need tile_table";
  if (a->kind == FA_ARTIFACT_CUBIN &&
      ((a->append_entry[0] != '\0') != !!(a->config.flags & FA_APPEND) ||
       (a->append_entry[0] && !a->tile_table)))
    return "bad append_entry (a string, exactly when the config appends, with tile_table)";
  return NULL;
}

/* The tensors a kernel of `c` takes, in the compiler's order (the op's
 * operands): what "args" must list exactly, since the kernel's code reads
 * its parameters in that order. A cubin takes q, k, v, out[, lse]: the
 * integer metadata reaches it through the tile table, k_new / v_new go to
 * its append entry (their "abi" lists say where). */
static int expected_args(const fa_attention_config *c, bool cubin, const char *names[]) {
  const struct {
    const char *name;
    uint32_t flags; /* present when one of these is set; 0: always */
  } all[] = {{"q", 0},
             {"k", 0},
             {"v", 0},
             {"cu_seqlens_q", FA_VARLEN_Q},
             {"cu_seqlens_k", FA_VARLEN_K},
             {"seqused_k", FA_SEQUSED_K},
             {"block_table", FA_PAGED},
             {"alibi_slopes", FA_ALIBI},
             {"k_new", FA_APPEND},
             {"v_new", FA_APPEND},
             {"cache_seqlens", FA_APPEND},
             {"out", 0},
             {"lse", FA_WITH_LSE}};
  int n = 0;
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i)
    if (!all[i].flags || (c->flags & all[i].flags & (cubin ? FA_WITH_LSE : ~0u)))
      names[n++] = all[i].name;
  return n;
}

/* The argument names and the launch fields (block, smem, grid). */
static const char *parse_launch(const cJSON *meta, fa_artifact *a) {
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(meta, "args");
  a->num_args = cJSON_GetArraySize(args);
  if (a->num_args < 4 || a->num_args > FA_MAX_ARGS)
    return "bad args list";
  for (int i = 0; i < a->num_args; ++i) {
    const cJSON *name = cJSON_GetArrayItem(args, i);
    if (!cJSON_IsString(name))
      return "bad args list";
    snprintf(a->arg_names[i], sizeof(a->arg_names[i]), "%s", name->valuestring);
  }
  const char *want[FA_MAX_ARGS];
  int nwant = expected_args(&a->config, a->kind == FA_ARTIFACT_CUBIN, want);
  bool same = nwant == a->num_args;
  for (int i = 0; same && i < nwant; ++i)
    same = !strcmp(want[i], a->arg_names[i]);
  if (!same)
    return "bad args list (not the tensors of the config, in operand order)";
  const char *bad_launch = "bad launch fields (block 1..1024, smem 0..232448)";
  const cJSON *block = cJSON_GetObjectItemCaseSensitive(meta, "block");
  for (int i = 0; i < 3; ++i) {
    const cJSON *e = cJSON_IsArray(block) ? cJSON_GetArrayItem(block, i) : NULL;
    if (e && (!cJSON_IsNumber(e) || e->valuedouble < 1 || e->valuedouble > 1024))
      return bad_launch;
    a->block[i] = e ? (int)e->valuedouble : 1;
  }
  double v;
  a->smem = 0;
  if (number(meta, "smem", &v)) {
    if (!(v >= 0 && v <= 232448))
      return bad_launch;
    a->smem = (int)v;
  }
  const cJSON *grid = cJSON_GetObjectItemCaseSensitive(meta, "grid");
  snprintf(a->grid, sizeof(a->grid), "%s",
           cJSON_IsString(grid) ? grid->valuestring : "persistent");
  return NULL;
}

/* Automatic pack_gqa: packed entries and G = Hq / Hkv (their q map:
 * check_packed_map). */
static const char *parse_packed(const cJSON *meta, fa_artifact *a) {
  const char *bad = "bad packed_entry (with packed_groups = Hq / Hkv, a q map grouped by "
                    "it over block_m / G positions, and packed_dense_entry exactly with "
                    "dense_entry)";
  if (!opt_string(meta, "packed_entry", a->packed_entry, sizeof(a->packed_entry)) ||
      !opt_string(meta, "packed_dense_entry", a->packed_dense_entry,
                  sizeof(a->packed_dense_entry)))
    return bad;
  if (!a->packed_entry[0])
    return a->packed_dense_entry[0] ? bad : NULL;
  double g = 0;
  if (!number(meta, "packed_groups", &g) || !(g >= 2 && g <= 256) ||
      a->config.num_kv_heads <= 0 || a->config.num_q_heads != (int64_t)g * a->config.num_kv_heads ||
      (a->packed_dense_entry[0] != '\0') != (a->dense_entry[0] != '\0'))
    return bad;
  a->packed_groups = (int)g;
  return NULL;
}

/* Several kv heads per key block: HP, and the one-head kernels:
 * pack_groups = HP x Hq / Hkv, with Hq / Hkv >= 2 and HP dividing Hkv
 * (their maps: check_twin_maps). */
static const char *parse_kv1(const cJSON *meta, fa_artifact *a) {
  const char *bad = "bad kv_heads_per_block (HP in [2, 8] dividing Hkv, pack_groups = HP x "
                    "Hq / Hkv, with kv1_entry and its tensor maps, and kv1_dense_entry "
                    "exactly with dense_entry)";
  double hp = 1;
  if (cJSON_GetObjectItemCaseSensitive(meta, "kv_heads_per_block") &&
      (!number(meta, "kv_heads_per_block", &hp) || !(hp >= 2 && hp <= 8)))
    return bad;
  a->kv_heads_per_block = (int)hp;
  if (!opt_string(meta, "kv1_entry", a->kv1_entry, sizeof(a->kv1_entry)) ||
      !opt_string(meta, "kv1_dense_entry", a->kv1_dense_entry, sizeof(a->kv1_dense_entry)))
    return bad;
  int hpi = a->kv_heads_per_block;
  if (hpi > 1 &&
      (!a->kv1_entry[0] || a->pack_groups < 2 * hpi || a->config.num_kv_heads <= 0 ||
       a->config.num_kv_heads % hpi != 0 ||
       (int64_t)a->config.num_q_heads * hpi != (int64_t)a->pack_groups * a->config.num_kv_heads ||
       (a->kv1_dense_entry[0] != '\0') != (a->dense_entry[0] != '\0')))
    return bad;
  if (hpi == 1 && (a->kv1_entry[0] || a->kv1_dense_entry[0]))
    return bad;
  return NULL;
}

/* The entry names by role ("" = absent; the main entry always present). */
static const char *entry_name(const fa_artifact *a, fa_entry_role role) {
  const char *names[FA_NUM_ENTRIES] = {a->entry,     a->dense_entry,     a->packed_entry,
                                       a->packed_dense_entry, a->kv1_entry,
                                       a->kv1_dense_entry,    a->combine_entry,
                                       a->append_entry};
  return names[role];
}

static bool is_dense(fa_entry_role role) {
  return role == FA_ENTRY_DENSE || role == FA_ENTRY_PACKED_DENSE || role == FA_ENTRY_KV1_DENSE;
}

static bool has_arg(const fa_artifact *a, const char *name) {
  for (int i = 0; i < a->num_args; ++i)
    if (!strcmp(a->arg_names[i], name))
      return true;
  return false;
}

/* The tensors an entry takes (its "ptr" and "dims" parameters name them,
 * in this order): a split-KV partial kernel q, k, v and the partial out,
 * lse; the combine partial_out, partial_lse, out[, lse]; the append k_new,
 * v_new, k, v; the other attention kernels the artifact's args. */
static int entry_tensors(const fa_artifact *a, fa_entry_role role,
                         const char *names[FA_MAX_ARGS]) {
  static const char *partial[] = {"q", "k", "v", "out", "lse"};
  static const char *combine[] = {"partial_out", "partial_lse", "out", "lse"};
  static const char *append[] = {"k_new", "v_new", "k", "v"};
  const char *const *list = NULL;
  int n = 0;
  if (role == FA_ENTRY_COMBINE)
    list = combine, n = has_arg(a, "lse") ? 4 : 3;
  else if (role == FA_ENTRY_APPEND)
    list = append, n = 4;
  else if (!is_dense(role) && a->combine_entry[0])
    list = partial, n = 5;
  if (list) {
    for (int i = 0; i < n; ++i)
      names[i] = list[i];
    return n;
  }
  for (int i = 0; i < a->num_args; ++i)
    names[i] = a->arg_names[i];
  return a->num_args;
}

/* Whether an entry takes a parameter of a launch value's kind, as the
 * metadata's flags (which decide the values: cuda_launch.c) say. */
static bool expects(const fa_artifact *a, fa_entry_role role, fa_param_kind kind) {
  const bool attention = role < FA_ENTRY_COMBINE, dense = is_dense(role);
  switch (kind) {
  case FA_PARAM_TILE_COUNTER:
    return attention && (dense ? a->dense_tile_counter : a->tile_counter);
  case FA_PARAM_TILE_TABLE:
    return role == FA_ENTRY_APPEND || (attention && a->tile_table);
  case FA_PARAM_TILE_TABLE_INLINE:
    return attention && a->tile_table_inline > 0;
  case FA_PARAM_PAGE_TABLE:
    return role != FA_ENTRY_COMBINE && a->page_table;
  case FA_PARAM_MERGE_OUT:
  case FA_PARAM_MERGE_LSE:
  case FA_PARAM_MERGE_COUNTERS:
    return attention && !dense && a->fused_combine;
  default:
    return false;
  }
}

/* The kinds' names, in fa_param_kind's order. */
static const char *const kParamKinds[] = {
    "ptr",        "dims",      "tma",       "tile_counter", "tile_table", "tile_table_inline",
    "page_table", "merge_out", "merge_lse", "merge_counters"};
#define NUM_PARAM_KINDS ((int)(sizeof kParamKinds / sizeof kParamKinds[0]))

/* One parameter's fields: NULL, or what is wrong with them. The argument
 * of ptr, dims and tma is one of the entry's `n` tensors. */
static const char *parse_param(const cJSON *o, const fa_artifact *a, const char *const *tensors,
                               int n, fa_param *p) {
  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, "kind");
  if (!cJSON_IsObject(o) || !cJSON_IsString(kind))
    return "not an object with a string \"kind\"";
  int k = 0;
  while (k < NUM_PARAM_KINDS && strcmp(kParamKinds[k], kind->valuestring))
    ++k;
  if (k == NUM_PARAM_KINDS)
    return "unknown kind";
  p->kind = (fa_param_kind)k;
  if (p->kind == FA_PARAM_TILE_TABLE_INLINE) {
    double bytes;
    if (!number(o, "bytes", &bytes) || bytes != a->tile_table_inline)
      return "bytes differ from the metadata's tile_table_inline";
    p->bytes = a->tile_table_inline;
  }
  if (p->kind > FA_PARAM_TMA)
    return NULL;
  const cJSON *arg = cJSON_GetObjectItemCaseSensitive(o, "arg");
  int t = 0;
  while (cJSON_IsString(arg) && t < n && strcmp(tensors[t], arg->valuestring))
    ++t;
  if (!cJSON_IsString(arg) || t == n)
    return "its \"arg\" is not one of the entry's tensors";
  snprintf(p->arg, sizeof(p->arg), "%s", arg->valuestring);
  double rank = 0;
  if (p->kind == FA_PARAM_DIMS &&
      (!number(o, "rank", &rank) || !(rank >= 1 && rank <= 5) || rank != floor(rank)))
    return "rank outside 1..5";
  p->rank = p->kind == FA_PARAM_DIMS ? (int)rank : 0;
  if (p->kind == FA_PARAM_TMA && !parse_tma(o, &p->tma))
    return "bad tensor map (box of rank 1..5, entries 1..256, swizzle 0/32/64/128)";
  return NULL;
}

/* Where an entry's parameter list disagrees with its tensors and the
 * metadata's flags: the i-th pointer (and the i-th dims) is of the i-th
 * tensor, at most FA_MAX_TMA maps, each launch value at most once and
 * exactly where the flags ask for it. `counts`: of each kind so far. */
static const char *check_param(const fa_artifact *a, fa_entry_role role,
                               const char *const *tensors, int nt, const fa_param *p,
                               int counts[]) {
  int seen = counts[p->kind]++;
  if ((p->kind == FA_PARAM_PTR || p->kind == FA_PARAM_DIMS) && seen >= nt)
    return "more of them than the entry's tensors";
  if ((p->kind == FA_PARAM_PTR || p->kind == FA_PARAM_DIMS) && strcmp(p->arg, tensors[seen]))
    return "not in the order of the entry's tensors";
  if (p->kind == FA_PARAM_TMA && seen >= FA_MAX_TMA)
    return "more than 4 tensor maps";
  if (p->kind > FA_PARAM_TMA && (seen > 0 || !expects(a, role, p->kind)))
    return seen > 0 ? "given twice" : "a parameter the metadata's flags do not ask for";
  return NULL;
}

/* One entry's list of `num` parameters into `params`; NULL, or the
 * message in `why`. */
static const char *parse_entry_abi(const cJSON *list, const fa_artifact *a, fa_entry_role role,
                                   fa_param *params, int num, char *why, size_t n) {
  const char *name = entry_name(a, role);
  const char *tensors[FA_MAX_ARGS];
  int nt = entry_tensors(a, role, tensors);
  int counts[NUM_PARAM_KINDS] = {0};
  for (int i = 0; i < num; ++i) {
    const cJSON *o = cJSON_GetArrayItem(list, i);
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, "kind");
    const char *bad = parse_param(o, a, tensors, nt, &params[i]);
    if (!bad)
      bad = check_param(a, role, tensors, nt, &params[i], counts);
    if (bad) {
      snprintf(why, n, "bad abi of entry '%s', parameter %d (%s): %s", name, i,
               cJSON_IsString(kind) ? kind->valuestring : "?", bad);
      return why;
    }
  }
  for (int k = 0; k < NUM_PARAM_KINDS; ++k) {
    const bool tensor = k <= FA_PARAM_DIMS;
    const int want = tensor ? nt : (int)expects(a, role, (fa_param_kind)k);
    if (k != FA_PARAM_TMA && counts[k] != want) {
      snprintf(why, n, "bad abi of entry '%s': %d %s parameters, %s %d", name, counts[k],
               kParamKinds[k], tensor ? "its tensors" : "the metadata's flags", want);
      return why;
    }
  }
  return NULL;
}

/* Each present entry's list in the abi (a list of at most FA_MAX_PARAMS),
 * and no name in it that is not an entry; *total: their parameters. */
static const char *abi_lists(const cJSON *abi, const fa_artifact *a, const cJSON *lists[],
                             int *total, char *why, size_t n) {
  for (const cJSON *e = abi->child; e; e = e->next) {
    int r = 0;
    while (r < FA_NUM_ENTRIES && (!entry_name(a, r)[0] || strcmp(entry_name(a, r), e->string)))
      ++r;
    if (r == FA_NUM_ENTRIES) {
      snprintf(why, n, "bad abi: '%s' is not an entry of the artifact", e->string);
      return why;
    }
  }
  *total = 0;
  for (int r = 0; r < FA_NUM_ENTRIES; ++r) {
    const char *name = entry_name(a, r);
    lists[r] = name[0] ? cJSON_GetObjectItemCaseSensitive(abi, name) : NULL;
    int size = cJSON_IsArray(lists[r]) ? cJSON_GetArraySize(lists[r]) : -1;
    if (name[0] && (size < 0 || size > FA_MAX_PARAMS)) {
      snprintf(why, n, "bad abi: no list of at most %d parameters for entry '%s'",
               FA_MAX_PARAMS, name);
      return why;
    }
    *total += name[0] ? size : 0;
  }
  return NULL;
}

/* "abi": every entry's parameter list, in parameter order (cubins only,
 * where it is required). */
static const char *parse_abi(const cJSON *meta, fa_artifact *a, char *why, size_t n) {
  const cJSON *abi = cJSON_GetObjectItemCaseSensitive(meta, "abi");
  if (a->kind != FA_ARTIFACT_CUBIN)
    return NULL;
  if (!cJSON_IsObject(abi))
    return "metadata lacks its abi (an object: each entry's parameter list)";
  const cJSON *lists[FA_NUM_ENTRIES];
  int total = 0;
  if (abi_lists(abi, a, lists, &total, why, n))
    return why;
  a->abi_params = (fa_param *)calloc(total > 0 ? (size_t)total : 1, sizeof(fa_param));
  if (!a->abi_params)
    return "out of memory";
  fa_param *next = a->abi_params;
  for (int r = 0; r < FA_NUM_ENTRIES; ++r) {
    if (!lists[r])
      continue;
    int num = cJSON_GetArraySize(lists[r]);
    if (parse_entry_abi(lists[r], a, r, next, num, why, n))
      return why;
    a->abi[r] = (fa_abi){num, next};
    next += num;
  }
  return NULL;
}

/* The tensor maps of an entry's list. */
static int entry_maps(const fa_artifact *a, fa_entry_role role, const fa_tma_desc *maps[]) {
  int n = 0;
  for (int i = 0; i < a->abi[role].num_params; ++i)
    if (a->abi[role].params[i].kind == FA_PARAM_TMA)
      maps[n++] = &a->abi[role].params[i].tma;
  return n;
}

/* The packed kernels' q map views q as [B, S, Hkv, G, D] (varlen [T, Hkv,
 * G, D]): box (64, G, 1, block_m / G[, 1]); the one-head kernels have
 * tensor maps. */
static const char *check_twin_maps(const fa_artifact *a) {
  const fa_tma_desc *maps[FA_MAX_TMA];
  const int g = a->packed_groups;
  for (int r = FA_ENTRY_PACKED; r <= FA_ENTRY_PACKED_DENSE && g; ++r) {
    if (!entry_name(a, r)[0])
      continue;
    bool q_ok = false;
    for (int i = 0, n = entry_maps(a, r, maps); i < n; ++i)
      if (strcmp(maps[i]->arg, "q") == 0)
        q_ok = maps[i]->group == g && maps[i]->rank == ((a->config.flags & FA_VARLEN_Q) ? 4 : 5) &&
               maps[i]->box[1] == g && a->block_m > 0 && maps[i]->box[3] * g == a->block_m;
    if (!q_ok)
      return "bad packed_entry (with packed_groups = Hq / Hkv, a q map grouped by it over "
             "block_m / G positions)";
  }
  if (a->kv1_entry[0] && entry_maps(a, FA_ENTRY_KV1, maps) < 1)
    return "bad kv_heads_per_block (with kv1_entry and its tensor maps)";
  return NULL;
}

/* Page panel maps (a pool [P, S, H, D] seen as {64, 8, H D / 64, S / 8,
 * P}), of any entry: k or v of a paged artifact, one box per page. */
static const char *check_page_panels(const fa_artifact *a) {
  const fa_attention_config *c = &a->config;
  const fa_tma_desc *maps[FA_MAX_TMA];
  for (int r = 0; r < FA_NUM_ENTRIES; ++r)
    for (int i = 0, n = entry_maps(a, r, maps); i < n; ++i) {
      const fa_tma_desc *t = maps[i];
      if (t->page_panels &&
          (!(c->flags & FA_PAGED) || (strcmp(t->arg, "k") && strcmp(t->arg, "v")) ||
           c->page_size % 8 != 0 || c->head_dim % 64 != 0 || t->box[0] != 64 ||
           t->box[1] != 8 || t->box[2] != c->head_dim / 64 ||
           t->box[3] != c->page_size / 8 || t->box[4] != 1))
        return "bad page_panels map (k or v of a paged artifact, box {64, 8, "
               "head_dim / 64, page_size / 8, 1})";
    }
  return NULL;
}

/* A foreign or tampered entry: its key is not what its config hashes to.
 * A host artifact compiled on a CPU of another level (its key hashes that
 * level) is not corrupt but cannot run here: *st becomes
 * FA_ERROR_UNSUPPORTED and the message names both levels. */
static const char *check_key(const fa_artifact *a, char *buf, size_t n, fa_status *st) {
  char key[33];
  if (fa_config_key(&a->config, a->compiler_version, key) != FA_OK)
    return "config is invalid";
  if (strcmp(key, a->key) == 0)
    return NULL;
  static const char *const levels[] = {"x86-64", "x86-64-v3", "x86-64-v4", "generic"};
  const char *here = fa_host_cpu_level();
  for (size_t i = 0; a->config.target == FA_TARGET_HOST && i < sizeof(levels) / sizeof(*levels);
       ++i) {
    if (strcmp(levels[i], here) == 0 ||
        fa_config_key_at(&a->config, a->compiler_version, levels[i], key) != FA_OK ||
        strcmp(key, a->key) != 0)
      continue;
    snprintf(buf, n,
             "host artifact compiled for CPU level %s, this CPU is %s: compile it on "
             "this machine (fa-compile --target host)",
             levels[i], here);
    *st = FA_ERROR_UNSUPPORTED;
    return buf;
  }
  return "key does not match the config";
}

static const char *parse_meta(const cJSON *meta, fa_artifact *a, char *buf, size_t n,
                              fa_status *st) {
  const char *why;
  if (!cJSON_IsObject(meta))
    return "metadata is not a JSON object";
  if ((why = parse_required(meta, a)) || (why = parse_entries(meta, a)) ||
      (why = parse_flags(meta, a)) || (why = parse_tiles(meta, a)) ||
      (why = parse_launch(meta, a)) || (why = parse_packed(meta, a)) ||
      (why = parse_kv1(meta, a)) || (why = parse_abi(meta, a, buf, n)) ||
      (why = check_twin_maps(a)) || (why = check_page_panels(a)))
    return why;
  return check_key(a, buf, n, st);
}

fa_status fa_artifact_parse(fa_runtime *rt, const void *bytes, size_t size,
                            fa_artifact *a) {
  const unsigned char *p = (const unsigned char *)bytes;
  memset(a, 0, sizeof(*a));
  uint64_t m = 0, n = 0;
  fa_status st = parse_header(rt, p, size, a, &m, &n);
  if (st != FA_OK)
    return st;
  cJSON *meta = cJSON_ParseWithLength((const char *)p + FA_ARTIFACT_HEADER_SIZE, m);
  char buf[256];
  fa_status failed = FA_ERROR_CORRUPT_ARTIFACT;
  const char *why = parse_meta(meta, a, buf, sizeof(buf), &failed);
  cJSON_Delete(meta);
  if (why) {
    fa_artifact_release(a);
    return fa_fail(rt, failed, "%s%s", failed == FA_ERROR_CORRUPT_ARTIFACT ? "corrupt artifact: " : "",
                   why);
  }
  a->payload = p + FA_ARTIFACT_HEADER_SIZE + m;
  a->payload_size = n;
  return FA_OK;
}
