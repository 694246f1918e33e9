/*===- flashattn/runtime.h - the flashattn C runtime ---------------*- C -*-===*
 *
 * libflashattn_rt: loads compiled attention kernels (artifacts), checks a
 * call's inputs, launches on the host or on a CUDA device, merges split-KV
 * partials, and caches artifacts in memory and on disk. C11, no MLIR inside.
 *
 * Conventions
 * - Every function returns an fa_status; FA_OK is 0. Nothing aborts, nothing
 *   prints on an error path; the message of the last failure on a runtime is
 *   fa_runtime_last_error(). Set FLASHATTN_DEBUG=1 to log to stderr.
 * - Tensors are row-major and contiguous (fa_tensor); shapes follow
 *   FlashAttention (docs/SEMANTICS.md):
 *     dense   q [B, Sq, Hq, D]   k, v [B, Sk, Hkv, D|Dv]   out [B, Sq, Hq, Dv]
 *             lse [B, Hq, Sq] f32
 *     varlen  q [Tq, Hq, D] + cu_seqlens_q [B+1] i32;  k, v [Tk, Hkv, D]
 *             + cu_seqlens_k [B+1] i32;  lse [Hq, Tq]
 *     paged   k, v [num_pages, page_size, Hkv, D] + block_table [B, P] i32
 *             + seqused_k [B] i32
 *     append  k_new, v_new [B, S_new, Hkv, D] + cache_seqlens [B] i32 (keys
 *             in the cache before the append)
 * - Threads: a fa_runtime (and its kernels) is not thread-safe; use one
 *   runtime per thread, or serialize calls on a shared one.
 * - Devices: a runtime drives one GPU: the device whose context is current
 *   on the calling thread at the runtime's first CUDA use (after
 *   cudaSetDevice / torch.cuda.set_device), else device 0. An sm90 call
 *   whose tensors live on another device fails with
 *   FA_ERROR_INVALID_ARGUMENT and launches nothing: create one runtime per
 *   device. Calls leave the thread's current context as they found it. A
 *   context the runtime adopted (current at its first use) must outlive
 *   it; device 0's primary context, when taken, is retained and released
 *   by fa_runtime_destroy.
 * - CUDA graphs: an sm90 fa_attention_run may be captured (stream capture,
 *   e.g. torch.cuda.graph) once its kernel has run eagerly (the first
 *   launch loads the module). A replay repeats the captured call as
 *   captured: the host-read metadata (cu_seqlens, seqused_k,
 *   cache_seqlens, a host block_table) and the tile table built from it
 *   are those of capture time; a device block_table is read at each
 *   replay. What the captured nodes read belongs to the capture's graph
 *   (a CUDA user object, CUDA 11.3+ drivers): a copied host table is
 *   freed, and a merge counter slice (below) reused, once that graph and
 *   the executable graphs made from it are destroyed and their launches
 *   done. Where that hand-over is not possible (no user objects in the
 *   driver, the capture no longer active, a failing call) both are kept
 *   until fa_runtime_destroy. Destroy a runtime after the graphs that
 *   replay its calls (its modules and counters go with it), and keep
 *   libflashattn_rt loaded while such graphs exist (the driver calls the
 *   runtime's destructor when they go).
 * - Per-stream state: the runtime keeps, per stream handle (up to 64),
 *   the fused split-KV merge's counters and the device mirrors of host
 *   block_tables (4 mirrors per stream, each of device memory up to twice
 *   the largest table it has held, since it grows by doubling). The
 *   buffers they outgrow may still be read by pending launches: they stay
 *   allocated until fa_runtime_destroy, even after
 *   fa_cuda_release_stream. Calls on one stream
 *   never overlap, so they share them; a stream destroyed while its last
 *   call still runs must not hand its handle to a new stream of the same
 *   runtime before that call ends. fa_cuda_release_stream gives a
 *   stream's state back (before destroying the stream, or to make room).
 * - Split-KV on sm90: the partial kernel merges the splits itself (the
 *   work unit that finishes a tile's last split), counting on the
 *   stream's u32 array (zero between calls). A captured call counts on
 *   a slice of its own (its graph's, as above; zeroed again before it is
 *   reused), which each replay leaves at zero. Replays of one executable
 *   graph run in order, but executable graphs made from the same capture
 *   (instantiated twice, cloned, embedded as child graphs) share the
 *   slices and must not run at the same time: their merges would then be
 *   wrong. Calls on the per-thread
 *   default stream, calls on a 65th stream, calls whose out is not 8-byte
 *   aligned and captured calls where the driver cannot tell the capture
 *   status launch a separate combine kernel instead (same results).
 * - Cache directory: created 0700; a directory or entry that is not owned by
 *   this user or is group/world-writable is not used (its code could have
 *   been planted by someone else): the cache then runs in memory only.
 * - ABI: FA_RT_ABI_VERSION changes when a struct or signature changes; structs
 *   passed in carry their size (struct_size) so that older callers keep
 *   working.
 *
 *===----------------------------------------------------------------------===*/

#ifndef FLASHATTN_RUNTIME_H
#define FLASHATTN_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FA_RT_ABI_VERSION 1

/*---------------------------------------------------------------------------*
 * Status codes
 *---------------------------------------------------------------------------*/
typedef enum fa_status {
  FA_OK = 0,
  FA_ERROR_INVALID_ARGUMENT = 1, /* null pointer, bad enum, bad struct_size */
  FA_ERROR_SHAPE_MISMATCH = 2,   /* a tensor does not match the kernel */
  FA_ERROR_BAD_INPUT = 3,        /* cu_seqlens, block_table, seqused_k, append;
                                    a tensor's address or strides that TMA or
                                    k_new / v_new cannot take (alignment) */
  FA_ERROR_OUT_OF_MEMORY = 4,
  FA_ERROR_IO = 5,                /* file or directory operation failed */
  FA_ERROR_CORRUPT_ARTIFACT = 6,  /* bad magic, checksum, truncation, key */
  FA_ERROR_CACHE_MISS = 7,        /* not cached and no compiler available */
  FA_ERROR_COMPILE_FAILED = 8,    /* the compiler library reported an error */
  FA_ERROR_NO_DRIVER = 9,         /* libcuda.so.1 could not be loaded */
  FA_ERROR_CUDA = 10,             /* a CUDA driver call failed */
  FA_ERROR_UNSUPPORTED = 11,      /* valid request this build cannot serve */
  FA_ERROR_LOAD_FAILED = 12       /* the artifact's code could not be loaded */
} fa_status;

/* A static, human-readable name of a status ("FA_OK", ...). Never NULL. */
const char *fa_status_string(fa_status status);

/* FA_RT_ABI_VERSION of the library actually loaded. */
uint32_t fa_runtime_abi_version(void);

/*---------------------------------------------------------------------------*
 * Configuration of one specialised attention (the cache key's source)
 *---------------------------------------------------------------------------*/
typedef enum fa_dtype { FA_F32 = 0, FA_F16 = 1, FA_BF16 = 2 } fa_dtype;
typedef enum fa_causal {
  FA_CAUSAL_NONE = 0,
  FA_CAUSAL_TOP_LEFT = 1,
  FA_CAUSAL_BOTTOM_RIGHT = 2
} fa_causal;
typedef enum fa_target { FA_TARGET_HOST = 0, FA_TARGET_SM90 = 1 } fa_target;

/* Layout and feature flags of fa_attention_config.flags. */
enum {
  FA_VARLEN_Q = 1u << 0,         /* q packed [Tq, Hq, D] with cu_seqlens_q */
  FA_VARLEN_K = 1u << 1,         /* k, v packed with cu_seqlens_k */
  FA_SEQUSED_K = 1u << 2,        /* seqused_k given */
  FA_PAGED = 1u << 3,            /* block_table (needs FA_SEQUSED_K) */
  FA_APPEND = 1u << 4,           /* k_new, v_new, cache_seqlens */
  FA_WITH_LSE = 1u << 5,         /* lse output */
  FA_ALIBI = 1u << 6,            /* alibi_slopes [Hq] f32 */
  FA_ALIBI_PER_BATCH = 1u << 7   /* alibi_slopes [B, Hq] f32 (with FA_ALIBI) */
};

typedef struct fa_attention_config {
  uint32_t struct_size; /* sizeof(fa_attention_config) */
  fa_target target;
  fa_dtype dtype;       /* q, k, v (and k_new, v_new) */
  fa_dtype out_dtype;   /* out: dtype or FA_F32 */
  int32_t num_q_heads, num_kv_heads, head_dim, head_dim_v;
  uint32_t flags;
  int32_t page_size;    /* keys per page when FA_PAGED, else 0 */
  fa_causal causal;
  /* Keys a query sees to its left / right of the diagonal; -1 =
   * unbounded. On sm90 a side of 2^30 or more is unbounded too, and a call
   * whose tensors allow 2^30 queries or keys a sequence is then
   * FA_ERROR_UNSUPPORTED. */
  int32_t window_left, window_right;
  float softcap;        /* 0 = off */
  float scale;          /* 0 = 1/sqrt(head_dim) */
  int32_t num_splits;   /* 0 = automatic, 1 = none */
  int32_t pack_gqa;     /* -1 = automatic, 0, 1 */
  /* Optional region text pasted into the op, e.g.
   * "mask(%b: index, %h: index, %i: index, %j: index) { ... }"; it may use
   * constants only (no values from outside). NULL when absent. */
  const char *regions;
} fa_attention_config;

/* A config with every field at its default (dense, f16, no mask). */
fa_attention_config fa_attention_config_default(void);

/* Whether a config is valid: FA_OK, or FA_ERROR_INVALID_ARGUMENT with the
 * reason (e.g. "num_splits must be in [0, 256]") written into why
 * (NUL-terminated, truncated to why_size; why may be NULL when why_size is
 * 0). The rules are those every other entry point applies. */
fa_status fa_config_validate(const fa_attention_config *config, char *why,
                             size_t why_size);

/* The canonical text of a config (what the cache key hashes), written into
 * buf (NUL-terminated). Returns the length it needs, excluding the NUL, or
 * -1 on an invalid config; truncates when buf_size is too small. */
int fa_config_canonical(const fa_attention_config *config, char *buf,
                        size_t buf_size);

/* The cache key: 32 lowercase hex digits of XXH3-128 over the canonical
 * text and the compiler version. key must hold 33 bytes. */
fa_status fa_config_key(const fa_attention_config *config,
                        const char *compiler_version, char key[33]);

/*---------------------------------------------------------------------------*
 * Runtime, cache and kernels
 *---------------------------------------------------------------------------*/
typedef struct fa_runtime fa_runtime; /* opaque */
typedef struct fa_kernel fa_kernel;   /* opaque, owned by the runtime */

typedef struct fa_runtime_options {
  uint32_t struct_size;       /* sizeof(fa_runtime_options) */
  /* Disk cache directory; NULL = $FLASHATTN_CACHE_DIR, else
   * $XDG_CACHE_HOME/flashattn, else $HOME/.cache/flashattn. A path over
   * 1023 characters turns the disk cache off (memory only; the last error
   * says so). Entries that are not private regular files (a link, a FIFO)
   * are misses. */
  const char *cache_dir;
  int32_t disable_disk_cache; /* 1: memory only */
  int32_t memory_entries;     /* LRU capacity; 0 = 64 */
  /* Compiler library for compiling on a miss; NULL =
   * $FLASHATTN_COMPILER_LIB, else libflashattn_compiler.so in this
   * runtime's directory (or ../lib of an executable it is built into),
   * else "libflashattn_compiler.so" through the dynamic loader's search
   * path. "" disables compilation. */
  const char *compiler_library;
  /* The compiler runs in a child process (fork), so that an abort, crash
   * or hang inside it is a status (FA_ERROR_COMPILE_FAILED) and not the
   * caller's end: a compile may take this many seconds before the child is
   * killed. 0 = $FLASHATTN_COMPILE_TIMEOUT, else 600; negative: compile in
   * the calling process. (A struct_size of the options without this field
   * is accepted, as 0.) */
  int32_t compile_timeout_s;
} fa_runtime_options;

fa_status fa_runtime_create(const fa_runtime_options *options,
                            fa_runtime **runtime);
void fa_runtime_destroy(fa_runtime *runtime);
/* The message of the last failure on this runtime ("" when none). */
const char *fa_runtime_last_error(const fa_runtime *runtime);

/* Cache statistics since creation. */
typedef struct fa_cache_stats {
  uint64_t memory_hits, disk_hits, misses, compiles, rebuilt_corrupt,
      disk_writes, disk_write_failures;
  int32_t disk_enabled; /* 0 after the directory proved unusable */
} fa_cache_stats;
fa_status fa_runtime_cache_stats(const fa_runtime *runtime,
                                 fa_cache_stats *stats);

/* The kernel for a config: memory cache, then disk cache, then the compiler
 * library (the result is stored in both caches). FA_ERROR_CACHE_MISS when
 * not cached and no compiler is available. */
fa_status fa_kernel_get(fa_runtime *runtime, const fa_attention_config *config,
                        fa_kernel **kernel);

/* Loads an artifact (bytes in the artifact container format) and stores it
 * in the caches under its key. */
fa_status fa_kernel_load_artifact(fa_runtime *runtime, const void *bytes,
                                  size_t size, fa_kernel **kernel);
/* The same from a file, which must be a regular file (a link to one is
 * followed): anything else (a directory, a FIFO, a device) is FA_ERROR_IO,
 * refused before it is read and without blocking. */
fa_status fa_kernel_load_artifact_file(fa_runtime *runtime, const char *path,
                                       fa_kernel **kernel);

/* The config and key of a loaded kernel. */
const fa_attention_config *fa_kernel_config(const fa_kernel *kernel);
const char *fa_kernel_key(const fa_kernel *kernel);

/*---------------------------------------------------------------------------*
 * Running
 *---------------------------------------------------------------------------*/
typedef struct fa_tensor {
  void *data;       /* host or device memory, per the kernel's target */
  int32_t rank;     /* 0 = absent */
  int64_t shape[4]; /* row-major, contiguous */
} fa_tensor;

typedef struct fa_attention_args {
  uint32_t struct_size; /* sizeof(fa_attention_args) */
  fa_tensor q, k, v, out, lse;
  fa_tensor cu_seqlens_q, cu_seqlens_k, seqused_k, block_table, alibi_slopes;
  fa_tensor k_new, v_new, cache_seqlens;
  void *stream;         /* CUstream for FA_TARGET_SM90; ignored on host */
} fa_attention_args;

/* Checks every input against the kernel and docs/SEMANTICS.md (null
 * pointers, which only an empty tensor may have, as PyTorch gives them;
 * shapes (each dim in [0, 2^31 - 1], at most 2^60 elements a tensor:
 * FA_ERROR_SHAPE_MISMATCH), cu_seqlens monotone and inside the
 * tensor, block_table entries inside the pool, seqused_k and appends within
 * capacity), then runs. Nothing is read or written when a check fails. The
 * integer metadata (cu_seqlens, seqused_k, block_table, cache_seqlens) is
 * checked on the host, so it must be host-readable (plain, pinned or
 * managed memory), except block_table on sm90: for varlen, seqused_k, paged
 * and append kernels the runtime builds a tile table from it (one entry per
 * block_m packed rows of a sequence, serving every head, longest first;
 * the append starts) and copies that to the device on the call's stream,
 * so the values must be final when the call is made (synchronize first if
 * the stream is still writing them). A host-readable block_table is
 * checked and copied into a device mirror of the call's stream, which the
 * kernels read; the copy is skipped when one of the stream's last 4
 * tables had the same contents (XXH3-128), as decode layers and steps
 * pass the same table until a sequence takes a new page. The caller may
 * change its table once the call returns (the runtime copies from a
 * buffer of its own: pageable, or page-locked on devices that read
 * pageable memory themselves, HMM/ATS, where the driver may read a
 * pageable source after the copy call returns; FLASHATTN_PINNED_STAGING=1
 * or 0 forces the choice). Under stream capture, on the per-thread default
 * stream and past 64 streams the page lists are copied with the tile
 * table at every call instead. A block_table in
 * device memory (cudaMalloc, as FlashAttention's callers pass it) is read
 * by the kernels where it is, on the stream, and is not checked: a page
 * index outside the pool reads zeros and an append to it is dropped (no
 * memory outside k and v is touched). Device memory is told from host
 * memory with cuPointerGetAttribute. Other metadata in device memory (or
 * a device block_table for a kernel that cannot take one: the host path,
 * a cubin without "page_table" in its metadata) is FA_ERROR_BAD_INPUT,
 * where the driver can tell (sm90 cubins; host artifacts once the
 * runtime has loaded the driver); so are q, k, v, out, lse, alibi_slopes,
 * k_new and v_new in device memory for a host artifact there.
 * A call with no output row (B, Sq or total_q 0) does nothing after the
 * checks (but an append of rows). A call with no key at all (k of 0 rows,
 * or a pool of 0 pages) writes out 0 and lse -inf, as every row is empty.
 * With FA_APPEND, the keys of sequence b are cache_seqlens[b] + S_new and
 * seqused_k is only checked, not used; with a host block_table, an append
 * whose new rows of two sequences (or of one, twice) land on the same cache
 * row, through block_table rows naming the same page, is
 * FA_ERROR_BAD_INPUT naming the sequences and the row (not checked for a
 * device block_table). Rows of a packed out past
 * cu_seqlens_q[B] are not part of the result: their contents are
 * unspecified (some kernels leave them, some write out 0, lse -inf). Keys
 * past a sequence's length (the rest of a cache after seqused_k or
 * cache_seqlens + S_new, the rest of a last page, unused pages, the next
 * sequence of a packed k) may hold anything, NaN included: they never
 * reach the output (the sm90 kernels zero those v rows in shared memory). */
fa_status fa_attention_run(fa_runtime *runtime, fa_kernel *kernel,
                           const fa_attention_args *args);

/*---------------------------------------------------------------------------*
 * Split-KV combine on the host (docs/SEMANTICS.md)
 *---------------------------------------------------------------------------*/
/* partial_out [num_splits, rows, head_dim_v] f32, partial_lse
 * [num_splits, rows] f32 -> out [rows, head_dim_v] of out_dtype and lse
 * [rows] f32 (lse may be NULL):
 *   lse = log sum_s exp(lse_s),  out = sum_s exp(lse_s - lse) out_s;
 * splits with lse_s = -inf weigh 0; all empty gives out 0 and lse -inf. */
fa_status fa_combine_host(const float *partial_out, const float *partial_lse,
                          int64_t num_splits, int64_t rows, int64_t head_dim_v,
                          fa_dtype out_dtype, void *out, float *lse);

/*---------------------------------------------------------------------------*
 * CUDA backend
 *---------------------------------------------------------------------------*/
/* Loads libcuda.so.1 (dlopen) and initializes the driver. FA_ERROR_NO_DRIVER
 * when the library or a device is missing. Called by fa_attention_run for
 * sm90 kernels; exposed so that callers can probe. The first call binds the
 * runtime to its device (the one current on the thread, else device 0);
 * num_sms (may be NULL) receives that device's SM count. */
fa_status fa_cuda_probe(fa_runtime *runtime, int32_t *num_sms);

/* Frees what the runtime keeps for `stream` (a CUstream: the fused split-KV
 * merge's counters and the device mirrors of host block_tables) and its
 * slot among the 64, for a caller about to destroy the stream or done
 * with it. It synchronizes the stream first. A later call on the stream
 * starts afresh. FA_OK also when the runtime keeps nothing for the stream
 * or has not loaded the driver; FA_ERROR_CUDA when the synchronization
 * fails (nothing freed) or a free fails (the slot is released). Buffers
 * the stream outgrew are freed by fa_runtime_destroy. */
fa_status fa_cuda_release_stream(fa_runtime *runtime, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* FLASHATTN_RUNTIME_H */
