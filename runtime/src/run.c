/*===- run.c - runtime lifetime, kernel lookup and compile, input checks --===*/

#define _GNU_SOURCE
#include "internal.h"

#include "flashattn/compiler_abi.h"
#include "flashattn/version.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p (new directories 0700); returns false when the path is not a
 * directory this user owns that others cannot write (a cache others can
 * write could make this process load their code). */
static bool make_dirs(const char *path) {
  char buf[1024];
  snprintf(buf, sizeof(buf), "%s", path);
  for (char *p = buf + 1; *p; ++p)
    if (*p == '/') {
      *p = '\0';
      if (mkdir(buf, 0700) != 0 && errno != EEXIST)
        return false;
      *p = '/';
    }
  if (mkdir(buf, 0700) != 0 && errno != EEXIST)
    return false;
  struct stat st;
  if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
    return false;
  if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
    fa_debug("cache directory %s is not private to this user", path);
    return false;
  }
  return true;
}

/* The compiler library beside this runtime (the runtime's directory, or
 * ../lib from an executable the runtime is built into), as an absolute
 * path; else the bare name for the dynamic loader. Resolved here rather
 * than through the runtime's RUNPATH ($ORIGIN/../lib): dlopen searches the
 * RUNPATH of its caller, which under ASan is the sanitizer's dlopen
 * interceptor, not this library. */
static void default_compiler_library(char *out, size_t n) {
  static const char name[] = "libflashattn_compiler.so";
  Dl_info info;
  snprintf(out, n, "%s", name);
  if (!dladdr((void *)&default_compiler_library, &info) || !info.dli_fname)
    return;
  const char *slash = strrchr(info.dli_fname, '/');
  if (!slash)
    return;
  int dir = (int)(slash - info.dli_fname);
  char path[1024];
  const char *subdirs[] = {"", "/../lib"};
  for (int i = 0; i < 2; ++i) {
    int len = snprintf(path, sizeof(path), "%.*s%s/%s", dir, info.dli_fname, subdirs[i], name);
    if (len < (int)sizeof(path) && len < (int)n && access(path, R_OK) == 0) {
      snprintf(out, n, "%s", path);
      return;
    }
  }
}

/* Seconds a compile may take (compile.c): the option, else
 * $FLASHATTN_COMPILE_TIMEOUT, else 600; negative: in the calling process. */
static int compile_timeout(const fa_runtime_options *options) {
  if (options && options->struct_size == sizeof(*options) && options->compile_timeout_s)
    return options->compile_timeout_s;
  const char *env = getenv("FLASHATTN_COMPILE_TIMEOUT");
  char *end = NULL;
  long v = env && *env ? strtol(env, &end, 10) : 0;
  if (env && *env && *end == '\0' && v != 0 && v > INT32_MIN && v < INT32_MAX)
    return (int)v;
  return 600;
}

fa_status fa_runtime_create(const fa_runtime_options *options,
                            fa_runtime **runtime) {
  if (!runtime)
    return FA_ERROR_INVALID_ARGUMENT;
  *runtime = NULL;
  /* The options as the first release had them (no compile_timeout_s), or
   * whole. */
  if (options && options->struct_size != sizeof(*options) &&
      options->struct_size != offsetof(fa_runtime_options, compile_timeout_s))
    return FA_ERROR_INVALID_ARGUMENT;
  fa_runtime *rt = (fa_runtime *)calloc(1, sizeof(*rt));
  if (!rt)
    return FA_ERROR_OUT_OF_MEMORY;
  rt->memory_capacity =
      options && options->memory_entries > 0 ? options->memory_entries : 64;
  const char *dir = options ? options->cache_dir : NULL;
  if (!dir || !*dir)
    dir = getenv("FLASHATTN_CACHE_DIR");
  /* The directory's path, which must fit whole: a longer one, once cut to
   * the buffer, named another directory and the cache was written there.
   * It turns the disk cache off (memory only), said in the runtime's last
   * error and the cache stats' disk_enabled. */
  int len = -1;
  if (dir && *dir) {
    len = snprintf(rt->cache_dir, sizeof(rt->cache_dir), "%s", dir);
  } else {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
      len = snprintf(rt->cache_dir, sizeof(rt->cache_dir), "%s/flashattn", xdg);
    else if (home && *home)
      len = snprintf(rt->cache_dir, sizeof(rt->cache_dir), "%s/.cache/flashattn", home);
  }
  bool too_long = len >= (int)sizeof(rt->cache_dir);
  if (too_long) {
    rt->cache_dir[0] = '\0';
    fa_fail(rt, FA_ERROR_INVALID_ARGUMENT,
            "the cache directory's path has %d characters, more than %d: disk cache off "
            "(memory only)",
            len, (int)sizeof(rt->cache_dir) - 1);
  }
  rt->disk_enabled = !(options && options->disable_disk_cache) && !too_long &&
                     rt->cache_dir[0] && make_dirs(rt->cache_dir);
  if (!rt->disk_enabled)
    fa_debug("disk cache off (directory '%s')", rt->cache_dir);
  const char *lib = options ? options->compiler_library : NULL;
  if (!lib)
    lib = getenv("FLASHATTN_COMPILER_LIB");
  if (lib)
    snprintf(rt->compiler_library, sizeof(rt->compiler_library), "%s", lib);
  else
    default_compiler_library(rt->compiler_library, sizeof(rt->compiler_library));
  rt->compile_timeout_s = compile_timeout(options);
  *runtime = rt;
  return FA_OK;
}

void fa_runtime_destroy(fa_runtime *rt) {
  if (!rt)
    return;
  fa_cache_destroy(rt);
  fa_cuda_release(rt);
  if (rt->compiler_handle)
    dlclose(rt->compiler_handle);
  free(rt);
}

fa_status fa_runtime_cache_stats(const fa_runtime *rt, fa_cache_stats *stats) {
  if (!rt || !stats)
    return FA_ERROR_INVALID_ARGUMENT;
  *stats = rt->stats;
  stats->disk_enabled = rt->disk_enabled;
  return FA_OK;
}

static fa_status compile(fa_runtime *rt, const fa_attention_config *config,
                         const char *key, fa_kernel **kernel) {
  if (!rt->compiler_library[0])
    return fa_fail(rt, FA_ERROR_CACHE_MISS,
                   "artifact %s is not cached and compilation is disabled", key);
  if (!rt->compiler_tried) {
    rt->compiler_tried = true;
    rt->compiler_handle = dlopen(rt->compiler_library, RTLD_NOW | RTLD_LOCAL);
    if (!rt->compiler_handle)
      fa_debug("no compiler library: %s", dlerror());
  }
  fa_compiler_compile_fn fn = NULL;
  if (rt->compiler_handle)
    *(void **)(&fn) = dlsym(rt->compiler_handle, FA_COMPILER_COMPILE_SYMBOL);
  if (!fn)
    return fa_fail(rt, FA_ERROR_CACHE_MISS,
                   "artifact %s is not cached and no compiler library is "
                   "available ('%s'; set FLASHATTN_COMPILER_LIB)",
                   key, rt->compiler_library);
  void *bytes = NULL;
  size_t size = 0;
  fa_status st = fa_compile_artifact(rt, fn, config, key, &bytes, &size);
  if (st != FA_OK)
    return st;
  rt->stats.compiles++;
  return fa_kernel_create(rt, bytes, size, key, kernel);
}

fa_status fa_kernel_get(fa_runtime *rt, const fa_attention_config *config,
                        fa_kernel **kernel) {
  if (!rt || !config || !kernel)
    return fa_fail(rt, FA_ERROR_INVALID_ARGUMENT, "null argument");
  *kernel = NULL;
  char why[256], key[33];
  if (!fa_config_valid(config, why, sizeof(why)))
    return fa_fail(rt, FA_ERROR_INVALID_ARGUMENT, "invalid config: %s", why);
  fa_status st = fa_config_key(config, FA_COMPILER_VERSION, key);
  if (st != FA_OK)
    return fa_fail(rt, st, "cannot compute the cache key");
  fa_kernel *k = fa_cache_lookup_memory(rt, key);
  if (k) {
    rt->stats.memory_hits++;
    *kernel = k;
    return FA_OK;
  }
  st = fa_cache_lookup_disk(rt, key, &k);
  if (st == FA_OK) {
    rt->stats.disk_hits++;
    fa_cache_insert(rt, k, /*write=*/false);
    *kernel = k;
    return FA_OK;
  }
  if (st != FA_ERROR_CACHE_MISS)
    return st;
  rt->stats.misses++;
  st = compile(rt, config, key, &k);
  if (st != FA_OK)
    return st;
  fa_cache_insert(rt, k, /*write=*/true);
  *kernel = k;
  return FA_OK;
}

fa_status fa_kernel_load_artifact(fa_runtime *rt, const void *bytes,
                                  size_t size, fa_kernel **kernel) {
  if (!rt || !bytes || !kernel)
    return fa_fail(rt, FA_ERROR_INVALID_ARGUMENT, "null argument");
  void *copy = malloc(size ? size : 1);
  if (!copy)
    return fa_fail(rt, FA_ERROR_OUT_OF_MEMORY, "out of memory");
  memcpy(copy, bytes, size);
  fa_kernel *k;
  fa_status st = fa_kernel_create(rt, copy, size, NULL, &k);
  if (st != FA_OK)
    return st;
  fa_kernel *existing = fa_cache_lookup_memory(rt, k->artifact.key);
  if (existing) {
    fa_kernel_destroy(k);
    *kernel = existing;
    return FA_OK;
  }
  fa_cache_insert(rt, k, /*write=*/true);
  *kernel = k;
  return FA_OK;
}

fa_status fa_kernel_load_artifact_file(fa_runtime *rt, const char *path,
                                       fa_kernel **kernel) {
  if (!rt || !path || !kernel)
    return fa_fail(rt, FA_ERROR_INVALID_ARGUMENT, "null argument");
  /* A path the caller names may be a link; it must lead to a regular file
   * (not a FIFO that would block, nor a directory, which seeks to 2^63 - 1). */
  struct stat st;
  size_t size = 0;
  fa_status st_read;
  char why[FA_ERROR_SIZE];
  void *bytes = fa_read_regular_file(path, /*nofollow=*/false, &st, &size, &st_read, why,
                                     sizeof(why));
  if (!bytes)
    return fa_fail(rt, st_read, "%s", why);
  fa_status status = fa_kernel_load_artifact(rt, bytes, size, kernel);
  free(bytes);
  return status;
}

/*---------------------------------------------------------------------------*
 * Input checks
 *---------------------------------------------------------------------------*/

typedef struct {
  fa_runtime *rt;
  int64_t batch; /* -1 until known */
  const char *batch_from;
} checker;

static fa_status see_batch(checker *c, int64_t b, const char *from) {
  if (c->batch < 0) {
    c->batch = b;
    c->batch_from = from;
    return FA_OK;
  }
  if (c->batch != b)
    return fa_fail(c->rt, FA_ERROR_SHAPE_MISMATCH,
                   "batch size mismatch: %s gives %lld but %s gives %lld", from,
                   (long long)b, c->batch_from, (long long)c->batch);
  return FA_OK;
}

/* Checks a tensor's presence, rank and the given dims (-1 = any). */
static fa_status expect(checker *c, const char *name, const fa_tensor *t,
                        int rank, const int64_t *dims) {
  if (t->rank != rank)
    return fa_fail(c->rt, t->data ? FA_ERROR_SHAPE_MISMATCH
                                  : FA_ERROR_INVALID_ARGUMENT,
                   "'%s' must be a rank-%d tensor%s (got rank %d%s)", name,
                   rank, t->data ? "" : " with data", t->rank,
                   t->data ? "" : ", null data");
  for (int i = 0; i < rank; ++i) {
    if (t->shape[i] < 0 || t->shape[i] > INT32_MAX)
      return fa_fail(c->rt, FA_ERROR_SHAPE_MISMATCH,
                     "'%s' dim %d is %lld, outside [0, 2^31 - 1]", name, i,
                     (long long)t->shape[i]);
    if (dims[i] >= 0 && t->shape[i] != dims[i])
      return fa_fail(c->rt, FA_ERROR_SHAPE_MISMATCH,
                     "'%s' dim %d is %lld, expected %lld (from the kernel's config, or "
                     "from q / k where they set it)",
                     name, i,
                     (long long)t->shape[i], (long long)dims[i]);
  }
  /* The element count must fit the kernels' i64 offsets with room for the
   * element size: at most 2^60 (each dimension alone fits i32, their
   * product need not). */
  int64_t count = 1;
  for (int i = 0; i < rank; ++i)
    if (__builtin_mul_overflow(count, t->shape[i], &count) || count > ((int64_t)1 << 60))
      return fa_fail(c->rt, FA_ERROR_SHAPE_MISMATCH,
                     "'%s' holds more than 2^60 elements (its dims multiply past the "
                     "kernels' 64-bit offsets)",
                     name);
  /* Null data only for an empty tensor (PyTorch gives those address 0). */
  if (!t->data && count > 0)
    return fa_fail(c->rt, FA_ERROR_INVALID_ARGUMENT,
                   "'%s' has null data for %lld elements", name, (long long)count);
  return FA_OK;
}

static fa_status absent(checker *c, const char *name, const fa_tensor *t) {
  if (t->data || t->rank)
    return fa_fail(c->rt, FA_ERROR_INVALID_ARGUMENT,
                   "'%s' is given but the kernel was compiled without it", name);
  return FA_OK;
}

static fa_status check_cu_seqlens(checker *c, const char *name,
                                  const fa_tensor *t, int64_t total) {
  const int32_t *cu = (const int32_t *)t->data;
  int64_t b = t->shape[0] - 1;
  if (b < 0)
    return fa_fail(c->rt, FA_ERROR_SHAPE_MISMATCH, "'%s' is empty", name);
  if (cu[0] != 0)
    return fa_fail(c->rt, FA_ERROR_BAD_INPUT, "%s[0] = %d, must be 0", name, cu[0]);
  for (int64_t i = 0; i < b; ++i)
    if (cu[i + 1] < cu[i])
      return fa_fail(c->rt, FA_ERROR_BAD_INPUT,
                     "%s is not monotone: [%lld] = %d < [%lld] = %d", name,
                     (long long)(i + 1), cu[i + 1], (long long)i, cu[i]);
  if (cu[b] > total)
    return fa_fail(c->rt, FA_ERROR_BAD_INPUT,
                   "%s[%lld] = %d is past the tensor (%lld rows)", name,
                   (long long)b, cu[b], (long long)total);
  return FA_OK;
}

#define TRY(x)                                                                 \
  do {                                                                         \
    fa_status st_ = (x);                                                       \
    if (st_ != FA_OK)                                                          \
      return st_;                                                              \
  } while (0)

/* q, cu_seqlens_q, out and lse: present exactly as the config says, with
 * the config's heads and head dims. */
static fa_status check_q_out(checker *c, const fa_attention_config *cfg,
                             const fa_attention_args *a) {
  const uint32_t f = cfg->flags;
  const int64_t hq = cfg->num_q_heads, d = cfg->head_dim, dv = cfg->head_dim_v;
  bool varlenQ = f & FA_VARLEN_Q;
  if (varlenQ) {
    TRY(expect(c, "q", &a->q, 3, (int64_t[]){-1, hq, d}));
    TRY(expect(c, "cu_seqlens_q", &a->cu_seqlens_q, 1, (int64_t[]){-1}));
    TRY(see_batch(c, a->cu_seqlens_q.shape[0] - 1, "cu_seqlens_q (length - 1)"));
    TRY(expect(c, "out", &a->out, 3, (int64_t[]){a->q.shape[0], hq, dv}));
  } else {
    TRY(expect(c, "q", &a->q, 4, (int64_t[]){-1, -1, hq, d}));
    TRY(absent(c, "cu_seqlens_q", &a->cu_seqlens_q));
    TRY(see_batch(c, a->q.shape[0], "q (dim 0)"));
    TRY(expect(c, "out", &a->out, 4,
               (int64_t[]){a->q.shape[0], a->q.shape[1], hq, dv}));
  }
  if (!(f & FA_WITH_LSE))
    return absent(c, "lse", &a->lse);
  if (varlenQ)
    return expect(c, "lse", &a->lse, 2, (int64_t[]){hq, a->q.shape[0]});
  return expect(c, "lse", &a->lse, 3, (int64_t[]){a->q.shape[0], hq, a->q.shape[1]});
}

/* k, v and their metadata (block_table, cu_seqlens_k); *capacity: the keys
 * a sequence can hold (-1: per cu_seqlens_k). */
static fa_status check_kv(checker *c, const fa_attention_config *cfg,
                          const fa_attention_args *a, int64_t *capacity) {
  const uint32_t f = cfg->flags;
  const int64_t hkv = cfg->num_kv_heads, d = cfg->head_dim, dv = cfg->head_dim_v;
  *capacity = -1;
  if (f & FA_PAGED) {
    TRY(expect(c, "k", &a->k, 4, (int64_t[]){-1, cfg->page_size, hkv, d}));
    TRY(expect(c, "v", &a->v, 4, (int64_t[]){a->k.shape[0], cfg->page_size, hkv, dv}));
    TRY(expect(c, "block_table", &a->block_table, 2, (int64_t[]){-1, -1}));
    TRY(see_batch(c, a->block_table.shape[0], "block_table (dim 0)"));
    /* A pool of no page holds no key, whatever the table's width (a
     * device block_table's entries are not checked). */
    *capacity = a->k.shape[0] == 0 ? 0 : a->block_table.shape[1] * cfg->page_size;
  } else if (f & FA_VARLEN_K) {
    TRY(expect(c, "k", &a->k, 3, (int64_t[]){-1, hkv, d}));
    TRY(expect(c, "v", &a->v, 3, (int64_t[]){a->k.shape[0], hkv, dv}));
    TRY(expect(c, "cu_seqlens_k", &a->cu_seqlens_k, 1, (int64_t[]){-1}));
    TRY(see_batch(c, a->cu_seqlens_k.shape[0] - 1, "cu_seqlens_k (length - 1)"));
  } else {
    TRY(expect(c, "k", &a->k, 4, (int64_t[]){-1, -1, hkv, d}));
    TRY(expect(c, "v", &a->v, 4,
               (int64_t[]){a->k.shape[0], a->k.shape[1], hkv, dv}));
    TRY(see_batch(c, a->k.shape[0], "k (dim 0)"));
    *capacity = a->k.shape[1];
  }
  if (!(f & FA_PAGED))
    TRY(absent(c, "block_table", &a->block_table));
  if (!(f & FA_VARLEN_K))
    TRY(absent(c, "cu_seqlens_k", &a->cu_seqlens_k));
  return FA_OK;
}

/* seqused_k, alibi_slopes and the append's k_new, v_new, cache_seqlens
 * (batch b). */
static fa_status check_extras(checker *c, const fa_attention_config *cfg,
                              const fa_attention_args *a) {
  const uint32_t f = cfg->flags;
  const int64_t b = c->batch, hq = cfg->num_q_heads, hkv = cfg->num_kv_heads,
                d = cfg->head_dim, dv = cfg->head_dim_v;
  if (f & FA_SEQUSED_K)
    TRY(expect(c, "seqused_k", &a->seqused_k, 1, (int64_t[]){b}));
  else
    TRY(absent(c, "seqused_k", &a->seqused_k));
  if (!(f & FA_ALIBI))
    TRY(absent(c, "alibi_slopes", &a->alibi_slopes));
  else if (f & FA_ALIBI_PER_BATCH)
    TRY(expect(c, "alibi_slopes", &a->alibi_slopes, 2, (int64_t[]){b, hq}));
  else
    TRY(expect(c, "alibi_slopes", &a->alibi_slopes, 1, (int64_t[]){hq}));
  if (!(f & FA_APPEND)) {
    TRY(absent(c, "k_new", &a->k_new));
    TRY(absent(c, "v_new", &a->v_new));
    return absent(c, "cache_seqlens", &a->cache_seqlens);
  }
  TRY(expect(c, "k_new", &a->k_new, 4, (int64_t[]){b, -1, hkv, d}));
  TRY(expect(c, "v_new", &a->v_new, 4, (int64_t[]){b, a->k_new.shape[1], hkv, dv}));
  TRY(expect(c, "cache_seqlens", &a->cache_seqlens, 1, (int64_t[]){b}));
  /* The sm90 append kernel copies 16-byte chunks. */
  if (cfg->target == FA_TARGET_SM90 &&
      ((uintptr_t)a->k_new.data % 16 != 0 || (uintptr_t)a->v_new.data % 16 != 0))
    return fa_fail(c->rt, FA_ERROR_BAD_INPUT,
                   "'k_new' and 'v_new' must be 16-byte aligned (the sm90 "
                   "append copies 16-byte chunks)");
  return FA_OK;
}

/* The integer metadata is read on the host: in device memory it would
 * fault there. Asked of the driver for sm90 cubins, and for host
 * artifacts once this runtime has loaded the driver anyway. A block_table
 * may be device memory for a cubin that reads it (page_table): the
 * kernels read it there (*pages_on_device), and its entries are not
 * checked (a page outside the pool reads zeros and an append to it is
 * dropped, in the kernels). */
static fa_status check_metadata_memory(fa_runtime *rt, const fa_kernel *k,
                                       const fa_attention_args *a, bool *pages_on_device) {
  const char *meta_names[] = {"cu_seqlens_q", "cu_seqlens_k", "seqused_k", "cache_seqlens",
                              "block_table"};
  const fa_tensor *meta[] = {&a->cu_seqlens_q, &a->cu_seqlens_k, &a->seqused_k,
                             &a->cache_seqlens, &a->block_table};
  bool device_pages_ok = k->artifact.kind == FA_ARTIFACT_CUBIN && k->artifact.page_table;
  for (int i = 0; i < 5; ++i) {
    bool on_device = false;
    if (!meta[i]->data)
      continue;
    if (i == 4 && device_pages_ok) {
      TRY(fa_cuda_on_device(rt, meta[i]->data, pages_on_device));
      continue;
    }
    if (fa_cuda_on_device(rt, meta[i]->data, &on_device) != FA_OK || !on_device)
      continue;
    return fa_fail(rt, FA_ERROR_BAD_INPUT,
                   "'%s' is in device memory; it is read on the host and must be "
                   "host-readable (plain, pinned or managed memory)%s",
                   meta_names[i],
                   i == 4 ? " for this kernel (sm90 cubins with page_table take a "
                            "device block_table)"
                          : "");
  }
  return FA_OK;
}

/* A host kernel reads and writes q, k, v, out and the rest on the host too
 * (device memory would fault in the kernel). */
static fa_status check_host_data(fa_runtime *rt, const fa_attention_args *a) {
  const char *data_names[] = {"q", "k", "v", "out", "lse", "alibi_slopes", "k_new", "v_new"};
  const fa_tensor *data[] = {&a->q, &a->k, &a->v, &a->out, &a->lse, &a->alibi_slopes,
                             &a->k_new, &a->v_new};
  for (int i = 0; i < 8; ++i) {
    bool on_device = false;
    if (data[i]->data && fa_cuda_on_device(rt, data[i]->data, &on_device) == FA_OK &&
        on_device)
      return fa_fail(rt, FA_ERROR_BAD_INPUT,
                     "'%s' is in device memory; a host kernel reads and writes it on "
                     "the host (plain, pinned or managed memory)",
                     data_names[i]);
  }
  return FA_OK;
}

/* Every entry of a host block_table inside the pool. */
static fa_status check_block_table(fa_runtime *rt, const fa_attention_args *a) {
  const int32_t *bt = (const int32_t *)a->block_table.data;
  int64_t n = a->block_table.shape[0] * a->block_table.shape[1];
  for (int64_t i = 0; i < n; ++i)
    if (bt[i] < 0 || bt[i] >= a->k.shape[0])
      return fa_fail(rt, FA_ERROR_BAD_INPUT,
                     "block_table entry [%lld] = %d is past the pool of "
                     "%lld pages",
                     (long long)i, bt[i], (long long)a->k.shape[0]);
  return FA_OK;
}

/* seqused_k and the append's rows within each sequence's capacity
 * (`capacity`, or per cu_seqlens_k). */
static fa_status check_capacity(fa_runtime *rt, uint32_t f, int64_t b,
                                const fa_attention_args *a, int64_t capacity) {
  for (int64_t i = 0; i < b; ++i) {
    int64_t cap = capacity;
    if (f & FA_VARLEN_K) {
      const int32_t *cu = (const int32_t *)a->cu_seqlens_k.data;
      cap = cu[i + 1] - cu[i];
    }
    if (f & FA_SEQUSED_K) {
      int32_t used = ((const int32_t *)a->seqused_k.data)[i];
      if (used < 0 || used > cap)
        return fa_fail(rt, FA_ERROR_BAD_INPUT,
                       "seqused_k[%lld] = %d is outside [0, %lld] (capacity)",
                       (long long)i, used, (long long)cap);
    }
    if (f & FA_APPEND) {
      int32_t start = ((const int32_t *)a->cache_seqlens.data)[i];
      if (start < 0 || start + a->k_new.shape[1] > cap)
        return fa_fail(rt, FA_ERROR_BAD_INPUT,
                       "append past capacity: cache_seqlens[%lld] = %d + %lld "
                       "new rows > %lld keys",
                       (long long)i, start, (long long)a->k_new.shape[1],
                       (long long)cap);
    }
  }
  return FA_OK;
}

/* One cache row an append writes: (page * page_size + slot, sequence). */
typedef struct {
  int64_t row, seq;
} append_slot;

static int compare_append_slots(const void *x, const void *y) {
  const append_slot *a = x, *b = y;
  if (a->row != b->row)
    return a->row < b->row ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* No two appended rows land on the same cache row: block_table rows that
 * name the same page under the positions [cache_seqlens[b], cache_seqlens[b]
 * + S_new) would make two sequences (or one, twice) write it. Run after
 * the block_table and capacity checks (every position has a page inside
 * the pool). */
static fa_status check_append_aliasing(fa_runtime *rt, int64_t batch,
                                       const fa_attention_args *a) {
  const int32_t *bt = (const int32_t *)a->block_table.data;
  const int32_t *start = (const int32_t *)a->cache_seqlens.data;
  int64_t rows = a->k_new.shape[1], page_size = a->k.shape[1];
  int64_t pages_per_seq = a->block_table.shape[1], n = batch * rows;
  if (n < 2)
    return FA_OK;
  append_slot *slots = malloc((size_t)n * sizeof(*slots));
  if (!slots)
    return fa_fail(rt, FA_ERROR_OUT_OF_MEMORY, "out of host memory checking the append's %lld rows",
                   (long long)n);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r) {
      int64_t pos = start[b] + r;
      int64_t page = bt[b * pages_per_seq + pos / page_size];
      slots[b * rows + r] = (append_slot){page * page_size + pos % page_size, b};
    }
  qsort(slots, (size_t)n, sizeof(*slots), compare_append_slots);
  int64_t i = 1;
  while (i < n && slots[i].row != slots[i - 1].row)
    ++i;
  if (i == n) {
    free(slots);
    return FA_OK;
  }
  append_slot x = slots[i - 1], y = slots[i];
  free(slots);
  long long slot = (long long)(x.row % page_size), page = (long long)(x.row / page_size);
  if (x.seq == y.seq)
    return fa_fail(rt, FA_ERROR_BAD_INPUT,
                   "append aliasing: sequence %lld writes row %lld of page %lld twice (its "
                   "block_table row names the page twice)",
                   (long long)x.seq, slot, page);
  return fa_fail(rt, FA_ERROR_BAD_INPUT,
                 "append aliasing: sequences %lld and %lld both write row %lld of page %lld "
                 "(their block_table rows name the same page)",
                 (long long)x.seq, (long long)y.seq, slot, page);
}

/* Values of the integer metadata (host memory). */
static fa_status check_metadata_values(checker *c, const fa_attention_config *cfg,
                                       const fa_attention_args *a, int64_t capacity,
                                       bool pages_on_device) {
  const uint32_t f = cfg->flags;
  if (f & FA_VARLEN_Q)
    TRY(check_cu_seqlens(c, "cu_seqlens_q", &a->cu_seqlens_q, a->q.shape[0]));
  if (f & FA_VARLEN_K)
    TRY(check_cu_seqlens(c, "cu_seqlens_k", &a->cu_seqlens_k, a->k.shape[0]));
  if ((f & FA_PAGED) && !pages_on_device)
    TRY(check_block_table(c->rt, a));
  TRY(check_capacity(c->rt, f, c->batch, a, capacity));
  if ((f & FA_PAGED) && (f & FA_APPEND) && !pages_on_device)
    TRY(check_append_aliasing(c->rt, c->batch, a));
  return FA_OK;
}

/* Window sides of 2^30 keys or more: the sm90 kernels take them as no
 * bound (flashattn-tile: their position sums are i32), which
 * is exact while every sequence has fewer than 2^30 queries and keys. The
 * tensors' extents bound both: q's sequence (or packed) dimension, and the
 * capacity (packed k: its rows). */
static fa_status check_window(fa_runtime *rt, const fa_kernel *k, const fa_attention_args *a,
                              int64_t capacity) {
  const fa_attention_config *cfg = &k->artifact.config;
  if (k->artifact.kind != FA_ARTIFACT_CUBIN ||
      (cfg->window_left < (1 << 30) && cfg->window_right < (1 << 30)))
    return FA_OK;
  int64_t most_q = a->q.shape[(cfg->flags & FA_VARLEN_Q) ? 0 : 1];
  int64_t most_k = capacity >= 0 ? capacity : a->k.shape[0];
  if (most_q >= (1 << 30) || most_k >= (1 << 30))
    return fa_fail(rt, FA_ERROR_UNSUPPORTED,
                   "the sm90 kernels take a window side of 2^30 keys or more as no bound, "
                   "exact only below 2^30 queries and keys a sequence; this call allows "
                   "%lld queries and %lld keys",
                   (long long)most_q, (long long)most_k);
  return FA_OK;
}

/* The call's tensors in the artifact's argument order. */
static fa_status order_args(fa_runtime *rt, const fa_kernel *k, const fa_attention_args *a,
                            const fa_tensor **ordered) {
  static const char *names[] = {"q", "k", "v", "cu_seqlens_q", "cu_seqlens_k",
                                "seqused_k", "block_table", "alibi_slopes",
                                "k_new", "v_new", "cache_seqlens", "out", "lse"};
  const fa_tensor *all[] = {&a->q, &a->k, &a->v, &a->cu_seqlens_q,
                            &a->cu_seqlens_k, &a->seqused_k, &a->block_table,
                            &a->alibi_slopes, &a->k_new, &a->v_new,
                            &a->cache_seqlens, &a->out, &a->lse};
  for (int i = 0; i < k->artifact.num_args; ++i) {
    ordered[i] = NULL;
    for (int j = 0; j < FA_MAX_ARGS; ++j)
      if (strcmp(k->artifact.arg_names[i], names[j]) == 0)
        ordered[i] = all[j];
    if (!ordered[i] || (!ordered[i]->data && !ordered[i]->rank))
      return fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT,
                     "the artifact's argument '%s' has no tensor",
                     k->artifact.arg_names[i]);
  }
  return FA_OK;
}

fa_status fa_attention_run(fa_runtime *rt, fa_kernel *k,
                           const fa_attention_args *a) {
  if (!rt)
    return FA_ERROR_INVALID_ARGUMENT;
  if (!k || !a)
    return fa_fail(rt, FA_ERROR_INVALID_ARGUMENT, "null kernel or args");
  if (a->struct_size != sizeof(*a))
    return fa_fail(rt, FA_ERROR_INVALID_ARGUMENT,
                   "args struct_size %u, expected %zu", a->struct_size,
                   sizeof(*a));
  const fa_attention_config *cfg = &k->artifact.config;
  const uint32_t f = cfg->flags;
  checker c = {rt, -1, NULL};
  int64_t capacity;
  TRY(check_q_out(&c, cfg, a));
  TRY(check_kv(&c, cfg, a, &capacity));
  TRY(check_extras(&c, cfg, a));
  bool pages_on_device = false;
  if (k->artifact.kind == FA_ARTIFACT_CUBIN || rt->cuda) {
    TRY(check_metadata_memory(rt, k, a, &pages_on_device));
    if (k->artifact.kind == FA_ARTIFACT_HOST_SO)
      TRY(check_host_data(rt, a));
  }
  TRY(check_metadata_values(&c, cfg, a, capacity, pages_on_device));
  TRY(check_window(rt, k, a, capacity));
  /* No output row (batch, seqlen_q or total_q 0): nothing to attend or
   * write; an append with rows still runs (its kernel writes the cache). */
  if (fa_tensor_elements(&a->out) == 0 &&
      !((f & FA_APPEND) && fa_tensor_elements(&a->k_new) > 0))
    return FA_OK;
  const fa_tensor *ordered[FA_MAX_ARGS];
  TRY(order_args(rt, k, a, ordered));
  if (k->artifact.kind == FA_ARTIFACT_HOST_SO)
    return fa_host_launch(rt, k, ordered, k->artifact.num_args);
  /* Tensor maps: alignment and strides are checked before the driver. */
  const char *names[FA_MAX_ARGS];
  for (int i = 0; i < k->artifact.num_args; ++i)
    names[i] = k->artifact.arg_names[i];
  TRY(fa_tma_check_call(rt, k, names, ordered, k->artifact.num_args));
  return fa_cuda_launch(rt, k, ordered, k->artifact.num_args, a, pages_on_device);
}

#undef TRY
