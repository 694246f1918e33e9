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

/* A list of at most 4 tensor maps (absent: none). */
static bool parse_tma_list(const cJSON *list, fa_tma_desc *maps, int *n) {
  *n = 0;
  if (!list)
    return true;
  if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) > 4)
    return false;
  *n = cJSON_GetArraySize(list);
  for (int i = 0; i < *n; ++i)
    if (!parse_tma(cJSON_GetArrayItem(list, i), &maps[i]))
      return false;
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

/* The argument names, the launch fields (block, smem, grid) and the tensor
 * maps. */
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
  if (!parse_tma_list(cJSON_GetObjectItemCaseSensitive(meta, "tma"), a->tma, &a->num_tma))
    return "bad tma list (at most 4 maps of rank 1..5, box 1..256, swizzle 0/32/64/128)";
  return NULL;
}

/* Automatic pack_gqa: packed entries, G and their own map list, whose q
 * map views q as [B, S, Hkv, G, D] (varlen [T, Hkv, G, D]): box (64, G, 1,
 * block_m / G[, 1]). */
static const char *parse_packed(const cJSON *meta, fa_artifact *a) {
  const char *bad = "bad packed_entry (with packed_groups = Hq / Hkv, a packed_tma list "
                    "whose q map is grouped by it over block_m / G positions, and "
                    "packed_dense_entry exactly with dense_entry)";
  const cJSON *packed_tma = cJSON_GetObjectItemCaseSensitive(meta, "packed_tma");
  if (!opt_string(meta, "packed_entry", a->packed_entry, sizeof(a->packed_entry)) ||
      !opt_string(meta, "packed_dense_entry", a->packed_dense_entry,
                  sizeof(a->packed_dense_entry)))
    return bad;
  if (!a->packed_entry[0])
    return a->packed_dense_entry[0] || packed_tma ? bad : NULL;
  double g = 0;
  if (!number(meta, "packed_groups", &g) || !(g >= 2 && g <= 256) ||
      !parse_tma_list(packed_tma, a->packed_tma, &a->num_packed_tma) ||
      a->num_packed_tma < 1 || a->config.num_kv_heads <= 0 ||
      a->config.num_q_heads != (int)g * a->config.num_kv_heads ||
      (a->packed_dense_entry[0] != '\0') != (a->dense_entry[0] != '\0'))
    return bad;
  bool q_ok = false;
  for (int i = 0; i < a->num_packed_tma; ++i) {
    const fa_tma_desc *t = &a->packed_tma[i];
    if (strcmp(t->arg, "q") == 0)
      q_ok = t->group == (int)g && t->rank == ((a->config.flags & FA_VARLEN_Q) ? 4 : 5) &&
             t->box[1] == (int)g && a->block_m > 0 && t->box[3] * (int)g == a->block_m;
  }
  if (!q_ok)
    return bad;
  a->packed_groups = (int)g;
  return NULL;
}

/* Several kv heads per key block: HP, and the one-head kernels with their
 * map list: pack_groups = HP x Hq / Hkv, with Hq / Hkv >= 2 and HP dividing
 * Hkv. */
static const char *parse_kv1(const cJSON *meta, fa_artifact *a) {
  const char *bad = "bad kv_heads_per_block (HP in [2, 8] dividing Hkv, pack_groups = HP x "
                    "Hq / Hkv, with kv1_entry, kv1_tma, and kv1_dense_entry exactly with "
                    "dense_entry)";
  const cJSON *kv1_tma = cJSON_GetObjectItemCaseSensitive(meta, "kv1_tma");
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
       a->config.num_q_heads * hpi != a->pack_groups * a->config.num_kv_heads ||
       !parse_tma_list(kv1_tma, a->kv1_tma, &a->num_kv1_tma) || a->num_kv1_tma < 1 ||
       (a->kv1_dense_entry[0] != '\0') != (a->dense_entry[0] != '\0')))
    return bad;
  if (hpi == 1 && (a->kv1_entry[0] || a->kv1_dense_entry[0] || kv1_tma))
    return bad;
  return NULL;
}

/* Page panel maps (a pool [P, S, H, D] seen as {64, 8, H D / 64, S / 8,
 * P}), in any of the three map lists: k or v of a paged artifact, one box
 * per page. */
static const char *check_page_panels(const fa_artifact *a) {
  const fa_tma_desc *lists[3] = {a->tma, a->packed_tma, a->kv1_tma};
  int counts[3] = {a->num_tma, a->num_packed_tma, a->num_kv1_tma};
  const fa_attention_config *c = &a->config;
  for (int l = 0; l < 3; ++l)
    for (int i = 0; i < counts[l]; ++i) {
      const fa_tma_desc *t = &lists[l][i];
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

/* A foreign or tampered entry: its key is not what its config hashes to. */
static const char *check_key(const fa_artifact *a) {
  char key[33];
  if (fa_config_key(&a->config, a->compiler_version, key) != FA_OK)
    return "config is invalid";
  if (strcmp(key, a->key) != 0)
    return "key does not match the config";
  return NULL;
}

static const char *parse_meta(const cJSON *meta, fa_artifact *a) {
  const char *why;
  if (!cJSON_IsObject(meta))
    return "metadata is not a JSON object";
  if ((why = parse_required(meta, a)) || (why = parse_entries(meta, a)) ||
      (why = parse_flags(meta, a)) || (why = parse_tiles(meta, a)) ||
      (why = parse_launch(meta, a)) || (why = parse_packed(meta, a)) ||
      (why = parse_kv1(meta, a)) || (why = check_page_panels(a)))
    return why;
  return check_key(a);
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
  const char *why = parse_meta(meta, a);
  cJSON_Delete(meta);
  if (why) {
    fa_artifact_release(a);
    return fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT, "corrupt artifact: %s", why);
  }
  a->payload = p + FA_ARTIFACT_HEADER_SIZE + m;
  a->payload_size = n;
  return FA_OK;
}
