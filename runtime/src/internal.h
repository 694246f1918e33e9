/*===- internal.h - libflashattn_rt internals ----------------------*- C -*-===*/

#ifndef FLASHATTN_RT_INTERNAL_H
#define FLASHATTN_RT_INTERNAL_H

#include "flashattn/artifact.h"
#include "flashattn/compiler_abi.h"
#include "flashattn/runtime.h"

#include <stdarg.h>
#include <sys/stat.h>
#include <stdbool.h>

#define FA_MAX_ARGS 13
/* The largest "tile_table_inline" an artifact may declare (bytes): the
 * size of the launch's buffer for the by-value tile table. */
#define FA_MAX_INLINE_TABLE_BYTES 3072
#define FA_ERROR_SIZE 512

/* Declarations shared between the runtime's files but not exported from
 * the library (the cuda_*.h headers' functions). */
#define FA_HIDDEN __attribute__((visibility("hidden")))

/* Elements of a tensor (the product of its dims; shapes the checks of
 * run.c passed hold at most 2^60). */
static inline int64_t fa_tensor_elements(const fa_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; ++i)
    n *= t->shape[i];
  return n;
}

/* A tensor map of the metadata: the argument, the box in TMA order
 * (innermost first), the swizzle in bytes (0, 32, 64, 128), the group
 * (> 1: the tensor's heads split by it, one more dimension), and whether
 * it is a page panel view. */
typedef struct fa_tma_desc {
  char arg[16];
  int rank;
  int box[5];
  int swizzle;
  int group;
  /* "page_panels": a paged pool [P, S, H, D] seen as {64, 8, H D / 64,
   * S / 8, P} (innermost first; strides: a row, 128 bytes, 8 rows, a
   * page), so that one box lands a page as 8-row groups of its 64-column
   * panels. */
  int page_panels;
} fa_tma_desc;

/* A kernel parameter of the metadata's "abi" (docs/ARCHITECTURE.md,
 * Runtime): an argument's device pointer (8 bytes) or its `rank` int64
 * dims (row-major), a tensor map of it (128 bytes), or one of the
 * launch's own values (cuda_launch.c). */
typedef enum fa_param_kind {
  FA_PARAM_PTR,
  FA_PARAM_DIMS,
  FA_PARAM_TMA,
  FA_PARAM_TILE_COUNTER,
  FA_PARAM_TILE_TABLE,
  FA_PARAM_TILE_TABLE_INLINE, /* `bytes` by value */
  FA_PARAM_PAGE_TABLE,
  FA_PARAM_MERGE_OUT,
  FA_PARAM_MERGE_LSE,
  FA_PARAM_MERGE_COUNTERS
} fa_param_kind;

typedef struct fa_param {
  fa_param_kind kind;
  char arg[16]; /* ptr, dims, tma */
  int rank;     /* dims */
  int bytes;    /* tile_table_inline */
  fa_tma_desc tma;
} fa_param;

/* The most parameters of one kernel: a pointer and up to 5 dims per
 * argument, 4 tensor maps, the tile counter, table, its copy, page lists
 * and the merge's 3 pointers. At most 4 tensor maps. */
#define FA_MAX_PARAMS (FA_MAX_ARGS * 6 + 11)
#define FA_MAX_TMA 4

/* The entries of a cubin, by role (fa_artifact's entry names). */
typedef enum fa_entry_role {
  FA_ENTRY_MAIN,
  FA_ENTRY_DENSE,
  FA_ENTRY_PACKED,
  FA_ENTRY_PACKED_DENSE,
  FA_ENTRY_KV1,
  FA_ENTRY_KV1_DENSE,
  FA_ENTRY_COMBINE,
  FA_ENTRY_APPEND,
  FA_NUM_ENTRIES
} fa_entry_role;

/* One entry's parameters, in order. */
typedef struct fa_abi {
  int num_params;
  const fa_param *params;
} fa_abi;

/* A parsed artifact (views into `bytes`, which the kernel owns). */
typedef struct fa_artifact {
  fa_artifact_kind kind;
  char key[33];
  fa_attention_config config;
  char *regions;          /* owned copy of config.regions */
  char compiler_version[64];
  char entry[128];
  char combine_entry[128]; /* split-KV combine kernel of a cubin, or "" */
  char append_entry[128];  /* kv-cache append kernel of a cubin, or "" */
  char dense_entry[128];   /* auto_splits: the kernel for one split, or "" */
  int num_args;
  char arg_names[FA_MAX_ARGS][16];
  int block[3], smem;     /* cubin launch */
  char grid[16];          /* "persistent" or "tiles" */
  /* The kernel takes a u32 tile counter that must be zero at launch (the
   * dynamic tile scheduler; its abi's "tile_counter"). */
  bool tile_counter;
  /* Split-KV with the count chosen per launch (config num_splits 0), and
   * the tile sizes the choice needs (block_m query rows, block_n keys,
   * pack_groups query heads per tile row group; 0 when absent). */
  bool auto_splits;
  int block_m, block_n, pack_groups;
  /* The kernels take the tile table the runtime builds per launch from
   * cu_seqlens_q / cu_seqlens_k / seqused_k (schedule.c; "tile_table"). */
  bool tile_table;
  /* Bytes of the table copy the attention kernels take by value
   * ("tile_table_inline"; 0: no such parameter). Trusted as
   * the compiler wrote it: the kernel's parameter has this size
   * (kSm90InlineTableBytes), and a table is passed there only if it fits. */
  int tile_table_inline;
  /* Paged: the kernels take the page lists (the call's block_table in
   * device memory, or the table's copies). Older cubins read the copies in
   * the table alone. */
  bool page_table;
  /* The dense entry takes the tile counter (its own schedule; the split
   * partial kernel may not). */
  bool dense_tile_counter;
  /* Split-KV: the partial kernels also merge ("fused_combine"). They take
   * the final out, lse (or null) and the u32 merge counters; null counters
   * leave the merge to the combine. */
  bool fused_combine;
  /* Automatic pack_gqa: the kernels with the query heads packed (launched
   * when a call's queries of a kv head fit one tile) and G; "" / 0 when
   * absent. */
  char packed_entry[128], packed_dense_entry[128];
  int packed_groups;
  /* Several kv heads per key block (1 when not): the kernels' block_n
   * counts keys of HP heads, pack_groups HP x Hq / Hkv heads; the one-head
   * kernels (block_n x HP keys, pack_groups / HP heads) are launched when a
   * call has too few tiles ("" when absent). */
  int kv_heads_per_block;
  char kv1_entry[128], kv1_dense_entry[128];
  /* Each entry's parameter list ("abi"; num_params 0 for an absent entry),
   * views into abi_params (owned). */
  fa_abi abi[FA_NUM_ENTRIES];
  fa_param *abi_params;
  const unsigned char *payload;
  size_t payload_size;
} fa_artifact;

/* Query heads per tile row group: pack_groups, or 1 without pack_gqa. A
 * launch has num_q_heads / this tile heads. */
static inline int64_t fa_tile_groups(const fa_artifact *a) {
  return a->pack_groups > 1 ? a->pack_groups : 1;
}

struct fa_kernel {
  fa_artifact artifact;
  void *bytes; /* the whole container */
  size_t size;
  /* host backend */
  int memfd;
  void *dl_handle;
  void (*host_entry)(void **);
  /* cuda backend */
  void *cu_module, *cu_function, *cu_combine, *cu_append, *cu_dense;
  void *cu_packed, *cu_dense_packed; /* automatic pack_gqa */
  void *cu_kv1, *cu_dense_kv1;       /* one kv head per key block */
  void *cu_api; /* the fa_cuda (cuda_context.h) that loaded the module */
  /* LRU list */
  struct fa_kernel *prev, *next;
  bool in_use; /* returned to a caller: never evicted while the runtime lives */
};

struct fa_runtime {
  char error[FA_ERROR_SIZE];
  char cache_dir[1024];
  bool disk_enabled;
  int memory_capacity, memory_count;
  fa_kernel *lru_head, *lru_tail; /* most recent first */
  fa_kernel *evicted;             /* kept alive: callers may hold them */
  fa_cache_stats stats;
  /* compiler library */
  char compiler_library[1024];
  void *compiler_handle;
  bool compiler_tried;
  int compile_timeout_s; /* < 0: in the calling process (compile.c) */
  /* cuda */
  void *cuda;
};

/* Sets the last error (printf-style) and returns `status`. */
fa_status fa_fail(fa_runtime *rt, fa_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void fa_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* cache.c: writes all n bytes to fd (retrying short writes and EINTR). */
bool fa_write_all(int fd, const void *p, size_t n);

/* compile.c: runs the compiler library's `fn` on a miss (in a child
 * process with a time limit); *bytes (malloc) holds the artifact. */
fa_status fa_compile_artifact(fa_runtime *rt, fa_compiler_compile_fn fn,
                              const fa_attention_config *config, const char *key,
                              void **bytes, size_t *size);

/* artifact.c */
fa_status fa_artifact_parse(fa_runtime *rt, const void *bytes, size_t size,
                            fa_artifact *out);
void fa_artifact_release(fa_artifact *a);

/* config.c */
bool fa_config_valid(const fa_attention_config *c, char *why, size_t n);
/* fa_config_key with host configs keyed to CPU level `level` (one of
 * fa_host_cpu_level's answers), not this machine's. */
fa_status fa_config_key_at(const fa_attention_config *c, const char *version,
                           const char *level, char key[33]);
size_t fa_dtype_size(fa_dtype t);
const char *fa_dtype_name(fa_dtype t);

/* cache.c */
/* The bytes of the regular file at `path` (malloc'd, `*size` of them, at
 * least 1 byte allocated), with fstat's result in `st`. The file is opened
 * without blocking (a FIFO or device would wait for a writer forever) and,
 * with `nofollow`, not through a symbolic link; anything but a regular file
 * is refused before a byte is read, and the size comes from fstat, never
 * from seeking (a directory seeks to 2^63 - 1). On failure: NULL, `*status`
 * FA_ERROR_IO or FA_ERROR_OUT_OF_MEMORY and the reason in `why` (the
 * runtime's error is left alone: a cache entry that cannot be read is only
 * a miss), errno as open(2) left it when the file could not be opened. */
void *fa_read_regular_file(const char *path, bool nofollow, struct stat *st,
                           size_t *size, fa_status *status, char *why, size_t n);
fa_kernel *fa_cache_lookup_memory(fa_runtime *rt, const char *key);
fa_status fa_cache_lookup_disk(fa_runtime *rt, const char *key,
                               fa_kernel **kernel);
void fa_cache_insert(fa_runtime *rt, fa_kernel *kernel, bool write_disk);
void fa_cache_destroy(fa_runtime *rt);

/* kernel.c */
fa_status fa_kernel_create(fa_runtime *rt, void *bytes, size_t size,
                           const char *expected_key, fa_kernel **out);
void fa_kernel_destroy(fa_kernel *k);

/* host.c */
fa_status fa_host_load(fa_runtime *rt, fa_kernel *k);
fa_status fa_host_launch(fa_runtime *rt, fa_kernel *k,
                         const fa_tensor *const *tensors, int n);

/* schedule.c: the tile table of a "tile_table" cubin for the call's
 * checked inputs (layout and order in schedule.c): *table (malloc'd,
 * *words i32, freed by the caller) and *entries, the number of (sequence,
 * m_block) tiles per head: sum over sequences of ceil(q_len x pack_groups /
 * block_m). With pages_on_device the block_table stays where it is (device
 * memory): no page lists are copied, a sequence's list starts at b x
 * max_pages. */
fa_status fa_sm90_tile_table(fa_runtime *rt, const fa_kernel *k,
                             const fa_attention_args *args, bool pages_on_device,
                             int32_t **table, int64_t *entries, int64_t *words);

/* The CUDA backend (cuda_*.c; its own declarations in cuda_*.h), as the
 * rest of the runtime sees it. */

/* cuda_module.c: loads the cubin and its entries (at the first launch), and
 * unloads them. */
fa_status fa_cuda_load(fa_runtime *rt, fa_kernel *k);
void fa_cuda_unload(fa_kernel *k);
/* cuda_launch.c: launches the artifact's kernel(s) on `tensors` (the
 * artifact's argument order); `args` gives the integer metadata the tile
 * table is built from; pages_on_device: the block_table is device memory
 * (fa_cuda_on_device). */
fa_status fa_cuda_launch(fa_runtime *rt, fa_kernel *k,
                         const fa_tensor *const *tensors, int n,
                         const fa_attention_args *args, bool pages_on_device);
/* cuda_context.c: whether `ptr` is device memory the host cannot read
 * (cuPointerGetAttribute: memory type device and not managed); false for
 * host, pinned, managed and unregistered memory. And the backend's release,
 * at fa_runtime_destroy. */
fa_status fa_cuda_on_device(fa_runtime *rt, const void *ptr, bool *on_device);
void fa_cuda_release(fa_runtime *rt);

/* cuda_tma.c: the element type of tensor map `m` of the artifact (out_dtype
 * for "out", f32 for "lse", the input dtype otherwise), and whether `t` can
 * be described by that map (PTX ISA / CUDA driver: cuTensorMapEncodeTiled
 * requirements). fa_tma_check_call checks the maps of the kernel's main and
 * dense entries over the call's tensors (`names`, n of them; not a split-KV
 * partial kernel's out and lse, which are the runtime's): run.c before
 * anything runs, the launch for a twin's own maps. */
fa_dtype fa_tma_dtype(const fa_artifact *a, const fa_tma_desc *m);
fa_status fa_tma_check(fa_runtime *rt, const fa_kernel *k, const fa_tma_desc *m,
                       const fa_tensor *t);
fa_status fa_tma_check_call(fa_runtime *rt, const fa_kernel *k, const char *const *names,
                            const fa_tensor *const *tensors, int n);

/* cuda_variant.c: automatic num_splits at launch: FlashAttention's
 * occupancy heuristic (flash_api.cpp, num_splits_heuristic): tiles = batch
 * x heads x ceil(rows / block_m) (rows and heads packed with pack_gqa), 1
 * when tiles fill 80% of the SMs, else the smallest count up to min(128,
 * SMs, key blocks) whose wave efficiency is at least FA_SPLIT_EFFICIENCY of
 * the best. FlashAttention takes 0.85; measured on the H200
 * (docs/BENCHMARKS.md), 0.95 is 4-6% faster for one decode sequence: 16
 * splits of 8 kv heads fill 128 of 132 SMs where 0.85 gives 15 (120). */
#ifndef FA_SPLIT_EFFICIENCY /* -D for measurements */
#define FA_SPLIT_EFFICIENCY 0.95
#endif
int64_t fa_num_splits_heuristic(const fa_kernel *k, int64_t batch, int64_t sq,
                                int64_t hq, int64_t sk, int64_t sms);
/* The same rule on `tiles` (tiles per split) and `blocks` (key blocks of the
 * longest sequence): varlen / seqused_k count them from the tile table. */
int64_t fa_num_splits_for(int64_t tiles, int64_t blocks, int64_t sms);
/* The persistent kernels' grid for `units` work units (tiles x splits; 0
 * when unknown) on `sms` SMs: one CTA per SM, or one per unit when there
 * are fewer. Each unit is then some CTA's first, and the kernels, whose
 * loops start at blockIdx and stop past the last unit, need no more CTAs.
 * Measured on the H200 against a full grid whose extra CTAs find no unit:
 * 0.6-1.1% faster at decode batch 16 / 8k and batch 1 / 128k
 * (docs/BENCHMARKS.md, session 9). */
unsigned fa_launch_grid(int64_t units, unsigned sms);

#endif
