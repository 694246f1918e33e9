/*===- abi_stub.h - the "abi" of legacy-style test metadata --------*- C -*-===*
 *
 * The parameter lists a cubin artifact's "abi" holds, derived from the
 * other launch fields as the kernels took them before the abi existed
 * (cuda_launch.c's order): per entry, one pointer per tensor, their dims,
 * the entry's tensor maps ("tma" for the main and dense entries,
 * "packed_tma" / "kv1_tma" for the twins), then the tile counter, tile
 * table, its by-value copy, page lists and the fused merge's three
 * pointers, each where the flags ask for it (dims ranks from the config's
 * flags). Tests use it two ways: to give
 * hand-written stand-in metadata its abi (abi_stub_add), and to check that
 * fa-compile's abi is exactly that order (abi_stub_derive, compared with
 * the artifact's own).
 *
 * Needs cJSON (the runtime's own dependency).
 *
 *===----------------------------------------------------------------------===*/

#ifndef FA_RT_TESTS_ABI_STUB_H
#define FA_RT_TESTS_ABI_STUB_H

#include "flashattn/runtime.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool abi_stub_flag(const cJSON *meta, const char *name) {
  return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(meta, name));
}

static bool abi_stub_has_arg(const cJSON *args, const char *name) {
  for (const cJSON *a = args ? args->child : NULL; a; a = a->next)
    if (cJSON_IsString(a) && !strcmp(a->valuestring, name))
      return true;
  return false;
}

static void abi_stub_add_kind(cJSON *list, const char *kind) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "kind", kind);
  cJSON_AddItemToArray(list, o);
}

/* The rank of argument `name` for the config's flags: q and out [B, S, H,
 * D] or varlen [T, H, D], lse [B, H, S] or [H, T], k and v the same as q
 * unless paged ([P, page, H, D]). */
static int abi_stub_rank(const cJSON *meta, const char *name) {
  const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(meta, "config");
  const cJSON *flags = cfg ? cJSON_GetObjectItemCaseSensitive(cfg, "flags") : NULL;
  unsigned f = cJSON_IsNumber(flags) ? (unsigned)flags->valuedouble : 0;
  bool vq = f & FA_VARLEN_Q, vk = (f & FA_VARLEN_K) && !(f & FA_PAGED);
  if (!strcmp(name, "lse"))
    return vq ? 2 : 3;
  if (!strcmp(name, "k") || !strcmp(name, "v"))
    return vk ? 3 : 4;
  return vq ? 3 : 4;
}

/* A pointer and dims for each of `names` of ranks `ranks`. */
static void abi_stub_tensors(cJSON *list, const char *const *names, const int *ranks, int n) {
  for (int pass = 0; pass < 2; ++pass)
    for (int i = 0; i < n; ++i) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "kind", pass == 0 ? "ptr" : "dims");
      cJSON_AddStringToObject(o, "arg", names[i]);
      if (pass == 1)
        cJSON_AddNumberToObject(o, "rank", ranks[i]);
      cJSON_AddItemToArray(list, o);
    }
}

/* The list of entry `role` (0 main, 1 dense, 2 packed, 3 packed dense, 4
 * kv1, 5 kv1 dense, 6 combine, 7 append), as cuda_launch.c passes its
 * tensors (the partial out [S, B, Sq, H, Dv] and lse [S, B, H, Sq], the
 * combine's out [B, Sq, H, Dv] and lse [B, H, Sq], the append's four
 * 4-D). */
static cJSON *abi_stub_list(const cJSON *meta, int role) {
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(meta, "args");
  const bool split = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(meta, "combine_entry"));
  const bool dense = role == 1 || role == 3 || role == 5, attention = role < 6;
  cJSON *list = cJSON_CreateArray();
  const char *names[16];
  int r[16], n = 0;
  if (role == 6) {
    const char *c[] = {"partial_out", "partial_lse", "out", "lse"};
    int cr[] = {5, 4, 4, 3};
    n = abi_stub_has_arg(args, "lse") ? 4 : 3;
    for (int i = 0; i < n; ++i)
      names[i] = c[i], r[i] = cr[i];
  } else if (role == 7) {
    const char *c[] = {"k_new", "v_new", "k", "v"};
    for (n = 0; n < 4; ++n)
      names[n] = c[n], r[n] = 4;
  } else if (split && !dense) {
    const char *c[] = {"q", "k", "v", "out", "lse"};
    int cr[] = {4, 4, 4, 5, 4};
    for (n = 0; n < 5; ++n)
      names[n] = c[n], r[n] = cr[n];
  } else {
    for (const cJSON *a = args ? args->child : NULL; a && n < 16; a = a->next, ++n)
      names[n] = cJSON_IsString(a) ? a->valuestring : "?";
  }
  for (int i = 0; i < n && role < 6; ++i)
    if (!(split && !dense && i >= 3))
      r[i] = abi_stub_rank(meta, names[i]);
  abi_stub_tensors(list, names, r, n);
  const char *maps = role < 2 ? "tma" : role < 4 ? "packed_tma" : role < 6 ? "kv1_tma" : NULL;
  const cJSON *tma = maps ? cJSON_GetObjectItemCaseSensitive(meta, maps) : NULL;
  for (const cJSON *m = cJSON_IsArray(tma) ? tma->child : NULL; m; m = m->next) {
    cJSON *o = cJSON_Duplicate(m, 1);
    cJSON_AddStringToObject(o, "kind", "tma");
    cJSON_AddItemToArray(list, o);
  }
  if (attention && abi_stub_flag(meta, dense ? "dense_tile_counter" : "tile_counter"))
    abi_stub_add_kind(list, "tile_counter");
  if (role == 7 || (attention && abi_stub_flag(meta, "tile_table")))
    abi_stub_add_kind(list, "tile_table");
  const cJSON *inl = cJSON_GetObjectItemCaseSensitive(meta, "tile_table_inline");
  if (attention && cJSON_IsNumber(inl)) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", "tile_table_inline");
    cJSON_AddNumberToObject(o, "bytes", inl->valuedouble);
    cJSON_AddItemToArray(list, o);
  }
  if (role != 6 && abi_stub_flag(meta, "page_table"))
    abi_stub_add_kind(list, "page_table");
  if (attention && !dense && abi_stub_flag(meta, "fused_combine")) {
    abi_stub_add_kind(list, "merge_out");
    abi_stub_add_kind(list, "merge_lse");
    abi_stub_add_kind(list, "merge_counters");
  }
  return list;
}

/* The abi object of `meta` (every entry present). */
static cJSON *abi_stub_derive(const cJSON *meta) {
  static const char *keys[] = {"entry",     "dense_entry",     "packed_entry",
                               "packed_dense_entry", "kv1_entry", "kv1_dense_entry",
                               "combine_entry",      "append_entry"};
  cJSON *abi = cJSON_CreateObject();
  for (int role = 0; role < 8; ++role) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(meta, keys[role]);
    if (cJSON_IsString(name) && !cJSON_GetObjectItemCaseSensitive(abi, name->valuestring))
      cJSON_AddItemToObject(abi, name->valuestring, abi_stub_list(meta, role));
  }
  return abi;
}

/* `meta` with its abi added when it has none (malloc'd; `meta` itself,
 * copied, when it is no JSON object or has one). */
static char *abi_stub_add(const char *meta) {
  cJSON *o = cJSON_Parse(meta);
  if (!cJSON_IsObject(o) || cJSON_GetObjectItemCaseSensitive(o, "abi")) {
    cJSON_Delete(o);
    char *copy = (char *)malloc(strlen(meta) + 1);
    return copy ? memcpy(copy, meta, strlen(meta) + 1) : NULL;
  }
  cJSON_AddItemToObject(o, "abi", abi_stub_derive(o));
  char *text = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return text;
}

#endif
