/*===- test_launch.c - the sm90 launch path over a stand-in driver --------===*
 *
 * Runs real sm90 artifacts (compiled here by fa-compile; skipped, 77, where
 * ptxas is missing) through fa_attention_run against libfake_cuda.so
 * (fake_cuda.c), which records launches instead of running them, and checks
 * what the runtime asks of the driver (runtime/src/cuda_*.c):
 *   - the grid: one CTA per work unit below the SM count, one per SM above
 *     (fa_launch_grid); the tile counter zeroed only when the kernel takes
 *     more units than CTAs;
 *   - a host block_table's per-stream device mirrors (4, least recently
 *     used refilled), copied only when the table is not among them (not
 *     under capture), and the tile table's copies;
 *   - the split-KV merge fused into the partial kernel (one launch, a
 *     counter array allocated and zeroed once per stream; under stream
 *     capture a slice of its own, from a chunk zeroed once, handed to the
 *     capture's graph as a user object and reused, zeroed again and
 *     smallest fit first, once the graph is destroyed; a refused hand-over
 *     keeps a copied table in the runtime; a graph may outlive the
 *     runtime: runtime.launch_asan runs this test under ASan, LSan and
 *     UBSan), and the
 *     separate combine kernel where the fused merge cannot run: the
 *     per-thread default stream, a 65th stream (until
 *     fa_cuda_release_stream gives a slot back);
 *   - the k / v tensor maps of paged decode (the fake records each
 *     cuTensorMapEncodeTiled): the page panel view for the one-head twins,
 *     the pool's own dims for the kernels with 4 kv heads a box;
 *   - a cache of no key: out 0 and lse -inf by memsets, no kernel; a pool
 *     of no page holds no key whatever the block_table's width; an empty
 *     host block_table with null data;
 *   - a host kernel with q .. out in device memory: refused;
 *   - a window side of 2^30 or more (no bound in the kernels): refused
 *     where the tensors allow 2^30 keys;
 *   - numbers of an artifact's config out of their fields' ranges: a
 *     corrupt artifact;
 *   - a split-KV kernel without a dense entry: a call with no query rows
 *     launches nothing (with an append, the append kernel alone), and the
 *     counter is zeroed by work units (tiles x splits), not tiles;
 *   - failing driver calls: a failing cuMemsetD32Async under stream capture
 *     with a copied tile table (the runtime keeps that table for the graph)
 *     and a failing cuLaunchKernel answer FA_ERROR_CUDA with a message, and
 *     the next call runs; a failing cuMemAllocAsync is out of memory only
 *     when the driver says so.
 * Tensors live at addresses the fake calls device memory; nothing reads them.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <unistd.h>

#include "abi_stub.h"
#include "common.h"
#include "fake_cuda.h"
#include "flashattn/artifact.h"
#include "flashattn/version.h"

#include <xxhash.h>

static fake_cuda_state *fake;
static fake_graph_destroy_fn fake_graph_destroy;
static uint64_t next_device = 0x100000000000ull;

/* A tensor at fresh fake device addresses (256-byte aligned). */
static fa_tensor device_tensor(int32_t rank, int64_t d0, int64_t d1, int64_t d2, int64_t d3,
                               int64_t elem_bytes) {
  fa_tensor t = {(void *)(uintptr_t)next_device, rank, {d0, d1, d2, d3}};
  int64_t n = elem_bytes;
  for (int i = 0; i < rank; ++i)
    n *= t.shape[i];
  next_device += ((uint64_t)n + 255) / 256 * 256 + 256;
  return t;
}

static fa_tensor host_i32(int32_t *data, int64_t n) {
  fa_tensor t = {data, 1, {n, 0, 0, 0}};
  return t;
}

/* fa-compile ARGS -o PATH (ARGS name the target); 77 (skip) when ptxas is missing, 1 on another
 * failure, 0 when the artifact was written. */
static int compile(const char *dir, const char *name, const char *args, char *path,
                   size_t size) {
  snprintf(path, size, "%s/%s.faa", dir, name);
  char cmd[1024], log[512];
  snprintf(log, sizeof(log), "%s/%s.log", dir, name);
  snprintf(cmd, sizeof(cmd), "'%s' %s -o '%s' > '%s' 2>&1", FA_TEST_FA_COMPILE,
           args, path, log);
  if (system(cmd) == 0)
    return 0;
  char text[4096] = {0};
  FILE *f = fopen(log, "r");
  if (f) {
    size_t got = fread(text, 1, sizeof(text) - 1, f);
    text[got] = 0;
    fclose(f);
  }
  if (strstr(text, "ptxas not found")) {
    printf("skipped: %s", text);
    return 77;
  }
  fprintf(stderr, "fa-compile %s failed:\n%s\n", args, text);
  return 1;
}


static void clear_launches(void) { fake->num_launches = 0; }

/* Dense tensors (2-byte elements): q / out [b, sq, hq, d], k / v [b, sk,
 * hkv, d], lse [b, hq, sq] f32. */
static fa_attention_args dense_args(int64_t b, int64_t sq, int64_t sk, int64_t hq,
                                    int64_t hkv, int64_t d, void *stream) {
  fa_attention_args a = {0};
  a.struct_size = sizeof(a);
  a.q = device_tensor(4, b, sq, hq, d, 2);
  a.k = device_tensor(4, b, sk, hkv, d, 2);
  a.v = device_tensor(4, b, sk, hkv, d, 2);
  a.out = device_tensor(4, b, sq, hq, d, 2);
  a.lse = device_tensor(3, b, hq, sq, 0, 4);
  a.stream = stream;
  return a;
}

/* Decode tensors: q [b, 1, 32, 128] bf16, k / v [b, keys, 8, 128], lse [b, 32, 1]. */
static fa_attention_args decode_args(int64_t b, int64_t keys, void *stream) {
  return dense_args(b, 1, keys, 32, 8, 128, stream);
}

/* Varlen: 70 sequences of one query and 1000 keys (seqused_k 1000), one
 * head of 64: a tile table too large for the kernels' inline parameter,
 * copied to the device (and kept for the graph under capture). */
static fa_attention_args varlen_args(void *stream) {
  enum { B = 70 };
  static int32_t cu_q[B + 1], cu_k[B + 1], used[B];
  for (int b = 0; b <= B; ++b) {
    cu_q[b] = b;
    cu_k[b] = 1000 * b;
  }
  for (int b = 0; b < B; ++b)
    used[b] = 1000;
  fa_attention_args a = {0};
  a.struct_size = sizeof(a);
  a.q = device_tensor(3, B, 1, 64, 0, 2);
  a.k = device_tensor(3, 1000 * B, 1, 64, 0, 2);
  a.v = device_tensor(3, 1000 * B, 1, 64, 0, 2);
  a.out = device_tensor(3, B, 1, 64, 0, 2);
  a.lse = device_tensor(2, 1, B, 0, 0, 4);
  a.cu_seqlens_q = (fa_tensor){cu_q, 1, {B + 1, 0, 0, 0}};
  a.cu_seqlens_k = (fa_tensor){cu_k, 1, {B + 1, 0, 0, 0}};
  a.seqused_k = (fa_tensor){used, 1, {B, 0, 0, 0}};
  a.stream = stream;
  return a;
}

/* Paged decode over 16-key pages, batch b / `keys` keys: k / v [b x keys /
 * 16, 16, 8, 128] bf16, seqused_k `used` [b], the host block_table `bt`
 * [b, keys / 16]. */
static fa_attention_args paged_args(int64_t b, int64_t keys, int32_t *bt, int32_t *used,
                                    void *stream) {
  fa_attention_args a = decode_args(b, keys, stream);
  a.k = device_tensor(4, b * keys / 16, 16, 8, 128, 2);
  a.v = device_tensor(4, b * keys / 16, 16, 8, 128, 2);
  a.seqused_k = host_i32(used, b);
  a.block_table = (fa_tensor){bt, 2, {b, keys / 16, 0, 0}};
  return a;
}

/* Paged decode over 16-key pages, batch 16 / 8k keys (seqused_k 8192), the
 * host block_table [16, 512] the pages in order. */
static fa_attention_args paged16_args(void *stream) {
  enum { B = 16, KEYS = 8192, PAGES = KEYS / 16 };
  static int32_t bt[B * PAGES], used[B];
  for (int i = 0; i < B * PAGES; ++i)
    bt[i] = i;
  for (int b = 0; b < B; ++b)
    used[b] = KEYS;
  return paged_args(B, KEYS, bt, used, stream);
}

/* The artifact `bytes` (flashattn/artifact.h layout) with the first `from`
 * in its metadata replaced by `to`: sizes and checksum rewritten, so that
 * only the metadata's meaning changes. NULL when `from` is absent. */
static unsigned char *patched_artifact(const unsigned char *bytes, size_t size,
                                       const char *from, const char *to, size_t *out_size) {
  uint64_t m, p;
  memcpy(&m, bytes + 48, 8);
  memcpy(&p, bytes + 56, 8);
  const unsigned char *meta = bytes + FA_ARTIFACT_HEADER_SIZE;
  size_t at = 0, nf = strlen(from), nt = strlen(to);
  while (at + nf <= m && memcmp(meta + at, from, nf) != 0)
    ++at;
  if (at + nf > m)
    return NULL;
  uint64_t m2 = m - nf + nt;
  *out_size = FA_ARTIFACT_HEADER_SIZE + m2 + p;
  unsigned char *out = (unsigned char *)malloc(*out_size);
  if (!out)
    return NULL;
  memcpy(out, bytes, 48);
  memcpy(out + 48, &m2, 8);
  memcpy(out + 56, &p, 8);
  unsigned char *body = out + FA_ARTIFACT_HEADER_SIZE;
  memcpy(body, meta, at);
  memcpy(body + at, to, nt);
  memcpy(body + at + nt, meta + at + nf, m - at - nf + p);
  uint64_t sum = XXH3_64bits(body, m2 + p);
  memcpy(out + 64, &sum, 8);
  return out;
}

/* The bytes of the file at `path` (malloc), or NULL. */
static unsigned char *file_bytes(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = n > 0 ? (unsigned char *)malloc((size_t)n) : NULL;
  *size = b && fread(b, 1, (size_t)n, f) == (size_t)n ? (size_t)n : 0;
  fclose(f);
  return b;
}

/* Metadata the fuzzer (runtime/tests/fuzz_runtime.c) found the parser
 * trusting, each patched into a real artifact (checksum rewritten): a
 * corrupt artifact, with no overflow or read past a list on the way. */
static void check_fuzz_findings(fa_runtime *rt, const char *host_path, const char *decode_path,
                                const char *append_path) {
  const struct {
    const char *path, *from, *to;
  } bad[] = {
      /* Host args that are not the config's tensors (out missing, lse
       * twice): the kernel would have read its parameters wrong. */
      {host_path, "\"args\":[\"q\",\"k\",\"v\",\"out\",\"lse\"]",
       "\"args\":[\"q\",\"k\",\"v\",\"lse\",\"lse\"]"},
      /* One pointer more than the entry's tensors. */
      {decode_path, "{\"arg\":\"lse\",\"kind\":\"ptr\"}",
       "{\"arg\":\"lse\",\"kind\":\"ptr\"},{\"arg\":\"lse\",\"kind\":\"ptr\"}"},
      /* Hq = G x Hkv checked without an int overflow. */
      {append_path, "\"num_kv_heads\":2", "\"num_kv_heads\":2147483647"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
    size_t size = 0, n = 0;
    unsigned char *bytes = file_bytes(bad[i].path, &size);
    unsigned char *b = bytes ? patched_artifact(bytes, size, bad[i].from, bad[i].to, &n) : NULL;
    CHECK(b != NULL, "patching %s", bad[i].from);
    if (b) {
      fa_kernel *k = NULL;
      CHECK_STATUS(fa_kernel_load_artifact(rt, b, n, &k), FA_ERROR_CORRUPT_ARTIFACT, rt);
      CHECK(k == NULL, "%s: a kernel came back", bad[i].to);
    }
    free(b);
    free(bytes);
  }
}

/* Without FLASHATTN_COMPILER_LIB the runtime finds the compiler library
 * beside itself (or in ../lib of this executable, when the runtime is built
 * in: runtime.launch_asan, where ASan's dlopen interceptor hides the
 * caller's $ORIGIN RUNPATH) and compiles a host kernel on a miss. */
static void check_default_compiler(void) {
  char *saved = getenv("FLASHATTN_COMPILER_LIB") ? strdup(getenv("FLASHATTN_COMPILER_LIB")) : NULL;
  unsetenv("FLASHATTN_COMPILER_LIB");
  fa_runtime_options o = {0};
  o.struct_size = sizeof(o);
  o.disable_disk_cache = 1;
  fa_runtime *rt = NULL;
  CHECK_STATUS(fa_runtime_create(&o, &rt), FA_OK, rt);
  if (rt) {
    fa_attention_config c = fa_attention_config_default();
    c.num_q_heads = 2;
    c.num_kv_heads = 1;
    c.head_dim = c.head_dim_v = 32;
    fa_kernel *k = NULL;
    CHECK_STATUS(fa_kernel_get(rt, &c, &k), FA_OK, rt);
    fa_runtime_destroy(rt);
  }
  if (saved) {
    setenv("FLASHATTN_COMPILER_LIB", saved, 1);
    free(saved);
  }
}

static bool launched(int i, const char *name, unsigned grid) {
  return i < fake->num_launches && !strcmp(fake->launches[i].name, name) &&
         fake->launches[i].grid == grid;
}

static void print_launches(void) {
  for (int i = 0; i < fake->num_launches; ++i)
    fprintf(stderr, "  launch %d: %s grid %u block %u stream %p\n", i, fake->launches[i].name,
            fake->launches[i].grid, fake->launches[i].block, fake->launches[i].stream);
}

int main(void) {
  char dir[] = "/tmp/fa_test_launch_XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  char decode_path[512], varlen_path[512], paged_path[512], append_path[512], window_path[512],
      host_path[512];
  const struct {
    const char *name, *args;
    char *path;
  } artifacts[] = {
      {"decode",
       "--target sm90 --lse --d 128 --dtype bf16 --causal bottom_right --hq 32 --hkv 8 --pack-gqa 1 "
       "--num-splits 0",
       decode_path},
      {"varlen",
       "--target sm90 --lse --d 64 --dtype f16 --causal none --hq 1 --hkv 1 --num-splits 0 --varlen-q "
       "--varlen-k --seqused-k",
       varlen_path},
      {"paged",
       "--target sm90 --lse --d 128 --dtype bf16 --causal bottom_right --hq 32 --hkv 8 --pack-gqa 1 "
       "--num-splits 0 --seqused-k --page-size 16",
       paged_path},
      {"append_split",
       "--target sm90 --lse --d 128 --dtype bf16 --causal bottom_right --hq 8 --hkv 2 --append "
       "--num-splits 2",
       append_path},
      {"window_huge",
       "--target sm90 --lse --d 64 --dtype f16 --causal bottom_right --hq 4 --hkv 2 --window-left "
       "1073741824",
       window_path},
      {"host_dense", "--target host --lse --d 64 --dtype f16 --hq 4 --hkv 2", host_path},
  };
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < sizeof(artifacts) / sizeof(artifacts[0]); ++i)
    rc = compile(dir, artifacts[i].name, artifacts[i].args, artifacts[i].path, 512);
  if (rc != 0)
    return rc;

  setenv("FLASHATTN_LIBCUDA", FA_TEST_FAKE_CUDA, 1);
  void *lib = dlopen(FA_TEST_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
  CHECK(lib != NULL, "dlopen %s: %s", FA_TEST_FAKE_CUDA, dlerror());
  if (!lib)
    return 1;
  fake = (fake_cuda_state *)dlsym(lib, "fake_state");
  fake_graph_destroy = (fake_graph_destroy_fn)dlsym(lib, "fake_graph_destroy");
  fake->device_lo = next_device;
  fake->device_hi = next_device + (1ull << 44);

  fa_runtime *rt = artifact_only_runtime();
  fa_kernel *dec = NULL, *var = NULL, *pag = NULL;
  CHECK_STATUS(fa_kernel_load_artifact_file(rt, decode_path, &dec), FA_OK, rt);
  CHECK_STATUS(fa_kernel_load_artifact_file(rt, varlen_path, &var), FA_OK, rt);
  CHECK_STATUS(fa_kernel_load_artifact_file(rt, paged_path, &pag), FA_OK, rt);
  if (!dec || !var || !pag)
    return 1;
  void *s1 = (void *)(uintptr_t)0x5001;

  /* Batch 16 / 8k: 128 tiles of one split, fewer than the 132 SMs: the dense
   * entry on 128 CTAs, nothing zeroed (the counter is never read). */
  {
    fa_attention_args a = decode_args(16, 8192, s1);
    clear_launches();
    int memsets = fake->num_memsets;
    CHECK_STATUS(fa_attention_run(rt, dec, &a), FA_OK, rt);
    CHECK(fake->num_launches == 1 && launched(0, "fa_sm90_0_dense", 128) &&
              fake->launches[0].block == 384,
          "batch 16 / 8k: want fa_sm90_0_dense on 128 CTAs of 384 threads");
    CHECK(fake->num_memsets == memsets, "batch 16: %d memsets", fake->num_memsets - memsets);
    if (g_failures)
      print_launches();
  }
  /* Batch 64 / 4k: 512 tiles, more than the SMs: 132 CTAs and the dynamic
   * scheduler's counter zeroed on the stream. */
  {
    fa_attention_args a = decode_args(64, 4096, s1);
    clear_launches();
    int memsets = fake->num_memsets;
    CHECK_STATUS(fa_attention_run(rt, dec, &a), FA_OK, rt);
    CHECK(fake->num_launches == 1 && launched(0, "fa_sm90_0_dense", 132),
          "batch 64 / 4k: want fa_sm90_0_dense on 132 CTAs");
    CHECK(fake->num_memsets == memsets + 1, "batch 64: %d memsets (the tile counter)",
          fake->num_memsets - memsets);
  }
  /* Batch 1 / 32k: 16 splits of 8 kv heads, 128 units: the partial kernel
   * alone (the merge fused) on 128 CTAs; the stream's counter array is
   * allocated and zeroed at its first use only. */
  {
    fa_attention_args a = decode_args(1, 32768, s1);
    int allocs = fake->num_allocs, memsets = fake->num_memsets;
    for (int call = 0; call < 2; ++call) {
      clear_launches();
      CHECK_STATUS(fa_attention_run(rt, dec, &a), FA_OK, rt);
      CHECK(fake->num_launches == 1 && launched(0, "fa_sm90_0", 128),
            "batch 1 / 32k call %d: want fa_sm90_0 alone on 128 CTAs", call);
    }
    CHECK(fake->num_allocs == allocs + 1, "counter arrays allocated: %d",
          fake->num_allocs - allocs);
    CHECK(fake->num_memsets == memsets + 1, "counter zeroings: %d",
          fake->num_memsets - memsets);
    if (g_failures)
      print_launches();
  }
  /* A capturing stream: the fused merge on the launch's own counters, a
   * slice of a chunk allocated and zeroed (on the runtime's own stream) at
   * the first captured call only; never the combine kernel. */
  {
    void *cap = (void *)(uintptr_t)0x5002;
    fake->capturing_stream = cap;
    int allocs = fake->num_allocs, memsets = fake->num_memsets;
    for (int call = 0; call < 3; ++call) {
      fa_attention_args a = decode_args(1, 32768, cap);
      clear_launches();
      CHECK_STATUS(fa_attention_run(rt, dec, &a), FA_OK, rt);
      CHECK(fake->num_launches == 1 && launched(0, "fa_sm90_0", 128),
            "captured call %d: want fa_sm90_0 alone on 128 CTAs", call);
    }
    CHECK(fake->num_allocs == allocs + 1 && fake->num_memsets == memsets + 1 &&
              fake->num_streams_created == 1,
          "captured calls: %d chunks allocated, %d zeroed, %d streams created",
          fake->num_allocs - allocs, fake->num_memsets - memsets,
          fake->num_streams_created);
    CHECK(fake->capture_mode == 0, "capture mode left at %d, not restored",
          fake->capture_mode);
    fake->capturing_stream = NULL;
  }
  /* Graph lifetimes: a captured call hands its counter slice (and a copied
   * table) to the capture's graph as a user object; once the graph is
   * destroyed the slice comes back and a later capture reuses it. Five
   * rounds of 300 captured calls (64 words each, 256 slices a chunk), each
   * ending with the graph destroyed, take at most two chunks; without the
   * hand-over they would take six. Then, with cuGraphRetainUserObject
   * failing, the calls still run (the slices stay the runtime's), and
   * every user object made was destroyed. */
  {
    void *cap = (void *)(uintptr_t)0x5004;
    fake_graph_destroy(); /* the three calls above */
    fake->capturing_stream = cap;
    int allocs = fake->num_allocs;
    fa_attention_args a = decode_args(1, 32768, cap);
    for (int round = 0; round < 5; ++round) {
      for (int call = 0; call < 300; ++call) {
        clear_launches();
        CHECK_STATUS(fa_attention_run(rt, dec, &a), FA_OK, rt);
        CHECK(fake->num_launches == 1 && launched(0, "fa_sm90_0", 128),
              "round %d, captured call %d: want fa_sm90_0 alone", round, call);
      }
      fake_graph_destroy();
    }
    CHECK(fake->num_allocs - allocs <= 2,
          "1500 captured calls in 5 destroyed graphs: %d chunks allocated",
          fake->num_allocs - allocs);
    CHECK(fake->num_retained == fake->num_user_objects &&
              fake->num_destroyed == fake->num_user_objects,
          "user objects: %d made, %d retained by the graph, %d destroyed",
          fake->num_user_objects, fake->num_retained, fake->num_destroyed);
    fake->fail_retain = 1;
    allocs = fake->num_allocs;
    for (int call = 0; call < 600; ++call) {
      clear_launches();
      CHECK_STATUS(fa_attention_run(rt, dec, &a), FA_OK, rt);
    }
    /* (The first ~300 reuse the slices given back above.) */
    CHECK(fake->num_allocs - allocs >= 1,
          "600 calls whose graph would not take their slices: %d chunks allocated",
          fake->num_allocs - allocs);
    CHECK(fake->num_destroyed == fake->num_user_objects,
          "user objects the graph refused: %d made, %d destroyed", fake->num_user_objects,
          fake->num_destroyed);
    fake->fail_retain = 0;
    fake->fail_create = 1;
    clear_launches();
    CHECK_STATUS(fa_attention_run(rt, dec, &a), FA_OK, rt);
    CHECK(fake->num_launches == 1, "cuUserObjectCreate failing: %d launches",
          fake->num_launches);
    fake->fail_create = 0;
    fake_graph_destroy();
    fake->capturing_stream = NULL;
  }
  /* Smallest fit, and re-zeroed reuse, on a runtime of its own: a 64-word
   * and a 128-word slice given back (batch 1 and batch 10 over 32k keys:
   * 8 and 80 tiles, split; the destroyed graph gives the 128-word one back
   * first). Then batch 1 takes the 64-word slice and batch 10 the other,
   * each zeroed again first (two memsets); nothing is carved or
   * allocated. Batch 10's 80 tiles of 8 splits (fa_num_splits_for: the
   * first count within 0.95 of the best wave efficiency, 640 / 132 = 4.85
   * of 5 waves) are more work units than SMs, so the partial kernel's tile
   * counter (the lpt schedule's) is zeroed too: a third memset; batch 1's
   * 128 units are not. */
  {
    void *cap = (void *)(uintptr_t)0x5007;
    fa_runtime *rt2 = artifact_only_runtime();
    fa_kernel *dec2 = NULL;
    CHECK_STATUS(fa_kernel_load_artifact_file(rt2, decode_path, &dec2), FA_OK, rt2);
    fa_attention_args a1 = decode_args(1, 32768, cap), a10 = decode_args(10, 32768, cap);
    fake->capturing_stream = cap;
    CHECK_STATUS(fa_attention_run(rt2, dec2, &a1), FA_OK, rt2);
    CHECK_STATUS(fa_attention_run(rt2, dec2, &a10), FA_OK, rt2);
    fake_graph_destroy();
    int allocs = fake->num_allocs, memsets = fake->num_memsets;
    clear_launches();
    CHECK_STATUS(fa_attention_run(rt2, dec2, &a1), FA_OK, rt2);
    CHECK_STATUS(fa_attention_run(rt2, dec2, &a10), FA_OK, rt2);
    CHECK(fake->num_launches == 2 && launched(0, "fa_sm90_0", 128),
          "batch 1 and 10 under capture: want two fused launches");
    CHECK(fake->num_memsets - memsets == 3 && fake->num_allocs == allocs,
          "reused slices and a tile counter: %d zeroed (want 3), %d chunks allocated (want 0)",
          fake->num_memsets - memsets, fake->num_allocs - allocs);
    fake_graph_destroy();
    fake->capturing_stream = NULL;
    fa_runtime_destroy(rt2);
  }
  /* An invalidated capture (its end gives no graph, so nothing recorded
   * runs): the call's slice goes back at once, and the next capture reuses
   * it (zeroed again: one memset, nothing carved); its copied table is
   * freed (ASan). On a runtime of its own. */
  {
    void *cap = (void *)(uintptr_t)0x5009;
    fa_runtime *rt6 = artifact_only_runtime();
    fa_kernel *dec6 = NULL, *var6 = NULL;
    CHECK_STATUS(fa_kernel_load_artifact_file(rt6, decode_path, &dec6), FA_OK, rt6);
    CHECK_STATUS(fa_kernel_load_artifact_file(rt6, varlen_path, &var6), FA_OK, rt6);
    fa_attention_args d = decode_args(1, 32768, cap), v = varlen_args(cap);
    fake->capturing_stream = cap;
    fake->capture_invalidated = 1;
    int made = fake->num_user_objects;
    CHECK_STATUS(fa_attention_run(rt6, dec6, &d), FA_OK, rt6);
    CHECK_STATUS(fa_attention_run(rt6, var6, &v), FA_OK, rt6);
    CHECK(fake->num_user_objects == made, "invalidated capture: %d user objects made",
          fake->num_user_objects - made);
    fake->capture_invalidated = 0;
    int memsets = fake->num_memsets, allocs = fake->num_allocs;
    CHECK_STATUS(fa_attention_run(rt6, dec6, &d), FA_OK, rt6);
    CHECK(fake->num_memsets - memsets == 1 && fake->num_allocs == allocs,
          "capture after an invalidated one: %d zeroed (want 1: the slice given back), "
          "%d chunks allocated",
          fake->num_memsets - memsets, fake->num_allocs - allocs);
    fake_graph_destroy();
    fake->capturing_stream = NULL;
    fa_runtime_destroy(rt6);
  }
  /* A refused hand-over with a copied table (varlen, 70 sequences): the
   * runtime keeps the table (freed at its release, once: ASan). */
  {
    void *cap = (void *)(uintptr_t)0x5006;
    fake->capturing_stream = cap;
    fake->fail_retain = 1;
    fa_attention_args a = varlen_args(cap);
    int made = fake->num_user_objects;
    CHECK_STATUS(fa_attention_run(rt, var, &a), FA_OK, rt);
    CHECK(fake->num_user_objects == made + 1 && fake->num_destroyed == fake->num_user_objects,
          "refused varlen hand-over: %d user objects made, %d of %d destroyed",
          fake->num_user_objects - made, fake->num_destroyed, fake->num_user_objects);
    fake->fail_retain = 0;
    fake->capturing_stream = NULL;
  }
  /* The per-thread default stream (one handle for every thread's stream):
   * the combine kernel follows, no counter array. */
  {
    void *per_thread = (void *)(uintptr_t)2; /* CU_STREAM_PER_THREAD */
    fa_attention_args a = decode_args(1, 32768, per_thread);
    int allocs = fake->num_allocs;
    clear_launches();
    CHECK_STATUS(fa_attention_run(rt, dec, &a), FA_OK, rt);
    CHECK(fake->num_launches == 2 && launched(0, "fa_sm90_0", 128) &&
              !strcmp(fake->launches[1].name, "fa_sm90_0_combine"),
          "per-thread stream: want fa_sm90_0 then fa_sm90_0_combine");
    CHECK(fake->num_allocs == allocs, "per-thread stream: a counter array was allocated");
  }
  /* Counter arrays for 64 streams (s1 holds the first), then the combine
   * kernel on a 65th. */
  {
    int allocs = fake->num_allocs;
    for (int i = 1; i <= 64; ++i) {
      fa_attention_args a = decode_args(1, 32768, (void *)(uintptr_t)(0x6000 + i));
      clear_launches();
      CHECK_STATUS(fa_attention_run(rt, dec, &a), FA_OK, rt);
      int want = i < 64 ? 1 : 2;
      CHECK(fake->num_launches == want, "stream %d of 65: %d launches, want %d", i + 1,
            fake->num_launches, want);
    }
    CHECK(fake->num_allocs == allocs + 63, "counter arrays for streams 2-64: %d",
          fake->num_allocs - allocs);
    /* fa_cuda_release_stream frees a stream's counters and its slot: the
     * 65th stream then gets one (the fused merge, one launch). A stream
     * the runtime keeps nothing for is FA_OK. */
    int frees = fake->num_frees;
    CHECK_STATUS(fa_cuda_release_stream(rt, (void *)(uintptr_t)0x6001), FA_OK, rt);
    CHECK(fake->num_frees == frees + 1, "release: %d frees", fake->num_frees - frees);
    CHECK_STATUS(fa_cuda_release_stream(rt, (void *)(uintptr_t)0x6001), FA_OK, rt);
    CHECK_STATUS(fa_cuda_release_stream(NULL, s1), FA_ERROR_INVALID_ARGUMENT, rt);
    fa_attention_args a = decode_args(1, 32768, (void *)(uintptr_t)(0x6000 + 64));
    clear_launches();
    CHECK_STATUS(fa_attention_run(rt, dec, &a), FA_OK, rt);
    CHECK(fake->num_launches == 1, "the 65th stream after a release: %d launches",
          fake->num_launches);
  }
  /* Varlen split-KV under capture with a copied tile table (70 sequences
   * need more than the kernels' inline parameter; one head, so that 70
   * tiles are split) and an out that sends it to the combine kernel: the
   * first memset (the
   * partial lse's -inf) fails. The call answers FA_ERROR_CUDA and the
   * runtime keeps the table (a graph may still hold the copy); the next
   * call runs. */
  {
    void *cap = (void *)(uintptr_t)0x5003;
    fake->capturing_stream = cap;
    for (int call = 0; call < 2; ++call) {
      fa_attention_args a = varlen_args(cap);
      /* Not 8-byte aligned: the combine kernel, and before it the memset
       * of the partial lse to -inf. */
      a.out.data = (char *)a.out.data + 2;
      fake->fail_memset_at = call == 0 ? fake->num_memsets : -1;
      clear_launches();
      fa_status st = fa_attention_run(rt, var, &a);
      if (call == 0) {
        CHECK(st == FA_ERROR_CUDA && fake->num_launches == 0,
              "failing memset under capture: %s, %d launches", fa_status_string(st),
              fake->num_launches);
        CHECK(strstr(fa_runtime_last_error(rt), "preparing the launch failed") != NULL,
              "message: %s", fa_runtime_last_error(rt));
      } else {
        CHECK_STATUS(st, FA_OK, rt);
        CHECK(fake->num_launches == 2, "varlen under capture: %d launches, want 2",
              fake->num_launches);
      }
    }
    fake->capturing_stream = NULL;
    CHECK(fake->num_async_allocs == fake->num_async_frees,
          "stream-ordered scratch: %d allocations, %d frees", fake->num_async_allocs,
          fake->num_async_frees);
  }
  /* Paged decode over 16-key pages, batch 128 / 2048 keys; the tile
   * entries (4 KB) do not fit the kernels' parameter and are copied each
   * call. A host block_table (64 KB): copied into the stream's device
   * mirror at the first call, not again while its contents stay the same.
   * Changed entries are patched into it, run by run: two swapped entries
   * (one run of 8 bytes), swapped back (the mirror's hash follows its
   * patches), two far apart (two runs; one at entry 15 of a 64-byte
   * block), two 10 or 16 entries apart (one run), two 17 apart (two runs),
   * exactly 8 runs. Nine runs, or changes over more than a quarter of the
   * table, refill it whole. On a capturing stream (no
   * mirror) its page lists travel with the tile table (68 KB, in two
   * pieces). A device block_table: only the entries are copied. */
  {
    enum { B = 128, KEYS = 2048, PAGES = KEYS / 16 };
    static int32_t bt[B * PAGES], used[B];
    for (int i = 0; i < B * PAGES; ++i)
      bt[i] = (i * 7919) % (B * PAGES); /* a permutation of the pool */
    for (int b = 0; b < B; ++b)
      used[b] = KEYS;
    const size_t entries = 32 * (B + 1), mirror = sizeof(bt);
    uint64_t mirror_at = 0; /* the device mirror holding the table */
    struct {
      const char *what;
      int device, change, capture;
      int copies;
      size_t bytes;
    } steps[] = {
        {"host, first call", 0, 0, 0, 2, mirror + entries},
        {"host, same table", 0, 0, 0, 1, entries},
        {"host, same table again", 0, 0, 0, 1, entries},
        {"host, two entries swapped", 0, 1, 0, 2, 8 + entries},
        {"host, the two entries swapped back", 0, 1, 0, 2, 8 + entries},
        {"host, two runs far apart", 0, 2, 0, 3, 8 + entries},
        {"host, two changes joined in one run", 0, 3, 0, 2, 44 + entries},
        {"host, the same table after the patches", 0, 0, 0, 1, entries},
        {"host, changes 16 entries apart: one run", 0, 6, 0, 2, 68 + entries},
        {"host, changes 17 entries apart: two runs", 0, 7, 0, 3, 8 + entries},
        {"host, entry 15 of a 64-byte block", 0, 8, 0, 3, 8 + entries},
        {"host, eight runs", 0, 9, 0, 9, 64 + entries},
        {"host, nine runs", 0, 4, 0, 2, mirror + entries},
        {"host, a third of the entries changed", 0, 5, 0, 2, mirror + entries},
        {"host, under capture", 0, 0, 1, 2, mirror + entries},
        {"device", 1, 0, 0, 1, entries},
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); ++i) {
      fa_attention_args a = paged_args(B, KEYS, bt, used, s1);
      /* Swaps entries x and y of the table. */
#define SWAP_ENTRIES(x, y)                                                     \
  do {                                                                         \
    int32_t t_ = bt[x];                                                        \
    bt[x] = bt[y];                                                             \
    bt[y] = t_;                                                                \
  } while (0)
      switch (steps[i].change) {
      case 1: SWAP_ENTRIES(0, 1); break;
      case 2: SWAP_ENTRIES(5, B * PAGES - 3); break;
      case 3: SWAP_ENTRIES(100, 110); break;
      case 4:
        for (int r = 0; r < 9; ++r)
          SWAP_ENTRIES(1000 * r, 1000 * r + 1);
        break;
      case 5:
        for (int e = 0; e < B * PAGES / 3; e += 2)
          SWAP_ENTRIES(e, e + 1);
        break;
      case 6: SWAP_ENTRIES(200, 216); break;
      case 7: SWAP_ENTRIES(300, 317); break;
      case 8: SWAP_ENTRIES(415, 2000); break;
      case 9:
        for (int r = 0; r < 8; ++r)
          SWAP_ENTRIES(3000 + 100 * r, 3000 + 100 * r + 1);
        break;
      }
#undef SWAP_ENTRIES
      if (steps[i].device) /* the same values at a device address */
        a.block_table.data = device_tensor(2, B, PAGES, 0, 0, 4).data;
      fake->capturing_stream = steps[i].capture ? s1 : NULL;
      int copies = fake->num_copies;
      size_t bytes = fake->copied_bytes;
      clear_launches();
      CHECK_STATUS(fa_attention_run(rt, pag, &a), FA_OK, rt);
      CHECK(fake->num_copies - copies == steps[i].copies &&
                fake->copied_bytes - bytes == steps[i].bytes,
            "paged, %s: %d copies of %zu bytes, want %d of %zu", steps[i].what,
            fake->num_copies - copies, fake->copied_bytes - bytes, steps[i].copies,
            steps[i].bytes);
      CHECK(fake->num_launches == 1 && fake->launches[0].grid == 132,
            "paged batch 128, %s: %d launches, grid %u", steps[i].what, fake->num_launches,
            fake->num_launches ? fake->launches[0].grid : 0);
      /* The mirror in use holds the table: a refill's buffer is its
       * call's first copy; patches write into it. */
      if (!steps[i].device && !steps[i].capture) {
        if (fake->copied_bytes - bytes >= mirror)
          mirror_at = fake->copy_dst[copies % 8];
        CHECK(mirror_at && memcmp((const void *)(uintptr_t)mirror_at, bt, sizeof(bt)) == 0,
              "paged, %s: the mirror does not hold the call's table", steps[i].what);
      }
    }
    /* A patch whose first copy fails: the call still runs (its page lists
     * travel with the tile table), and the next call with that table
     * refills a mirror whole and finds it right. */
    {
      fa_attention_args a = paged_args(B, KEYS, bt, used, s1);
      CHECK_STATUS(fa_attention_run(rt, pag, &a), FA_OK, rt); /* a mirror holds bt */
      int32_t t = bt[7];
      bt[7] = bt[5000];
      bt[5000] = t;
      fake->fail_copy_at = fake->num_copies; /* the patch's first run */
      CHECK_STATUS(fa_attention_run(rt, pag, &a), FA_OK, rt);
      fake->fail_copy_at = -1;
      int copies = fake->num_copies;
      size_t bytes = fake->copied_bytes;
      CHECK_STATUS(fa_attention_run(rt, pag, &a), FA_OK, rt);
      CHECK(fake->num_copies - copies == 2 && fake->copied_bytes - bytes == mirror + entries,
            "after a failed patch: %d copies of %zu bytes, want a refill (2 of %zu)",
            fake->num_copies - copies, fake->copied_bytes - bytes, mirror + entries);
      uint64_t at = fake->copy_dst[copies % 8];
      CHECK(memcmp((const void *)(uintptr_t)at, bt, sizeof(bt)) == 0,
            "after a failed patch: the refilled mirror does not hold the table");
    }
    /* Tables larger than the stream's mirrors (128 KB): the least
     * recently used one grows each time (its host copy too: ASan). */
    {
      enum { KEYS2 = 4096, PAGES2 = KEYS2 / 16 };
      static int32_t bt2[B * PAGES2], used2[B];
      for (int e = 0; e < B * PAGES2; ++e)
        bt2[e] = (e * 7919) % (B * PAGES2);
      for (int b = 0; b < B; ++b)
        used2[b] = KEYS2;
      fa_attention_args a = paged_args(B, KEYS2, bt2, used2, s1);
      /* Three different tables: the later ones grow mirrors that held
       * 64 KB tables (their old host copies freed). */
      for (int round = 0; round < 3; ++round) {
        for (int e = 0; e < B * PAGES2; ++e)
          bt2[e] = (e * 7919 + 31 * round) % (B * PAGES2);
        int copies = fake->num_copies;
        CHECK_STATUS(fa_attention_run(rt, pag, &a), FA_OK, rt);
        uint64_t at = fake->copy_dst[copies % 8];
        CHECK(memcmp((const void *)(uintptr_t)at, bt2, sizeof(bt2)) == 0,
              "a larger table, round %d: the grown mirror does not hold it", round);
      }
    }
    fake->capturing_stream = NULL;
  }
  /* Batch 16 / 8k over host block_tables: the tile entries fit the
   * kernels' parameter, so once a mirror holds a table a call copies
   * nothing. Two tables in turn (calls 0-3), then 4 new ones: the stream
   * keeps 4 mirrors, the least recently used is refilled (call 8 takes
   * table 0 again after it was dropped). */
  {
    enum { B = 16, KEYS = 8192, PAGES = KEYS / 16 };
    static int32_t bt[6][B * PAGES], used[B];
    for (int t = 0; t < 6; ++t)
      for (int i = 0; i < B * PAGES; ++i)
        bt[t][i] = (i * 7919 + 13 * t) % (B * PAGES);
    for (int b = 0; b < B; ++b)
      used[b] = KEYS - 3;
    const int order[] = {0, 1, 0, 1, 2, 3, 4, 5, 0, 5};
    const int copies_want[] = {1, 1, 0, 0, 1, 1, 1, 1, 1, 0};
    for (int call = 0; call < 10; ++call) {
      fa_attention_args a = paged_args(B, KEYS, bt[order[call]], used, s1);
      int copies = fake->num_copies;
      clear_launches();
      CHECK_STATUS(fa_attention_run(rt, pag, &a), FA_OK, rt);
      CHECK(fake->num_copies - copies == copies_want[call],
            "paged batch 16, call %d (table %d): %d copies, want %d", call, order[call],
            fake->num_copies - copies, copies_want[call]);
    }
  }
  /* The k / v tensor maps of paged decode. Batch 16 / 8k runs the one-head
   * twin (too few tiles of 4 heads): one box per 16-key page through the
   * page panel view of the pool [8192, 16, 8, 128] (sm90PagePanels): dims
   * {64, 8, 16 panels, 2 row groups, 8192 pages}, strides {a row of 2048
   * bytes, 128, 8 rows, a page}, box {64, 8, 2, 2, 1}. Batch 64 / 4k runs
   * the kernel with 4 kv heads a box: the pool's own dims {128, 8, 16,
   * pages}, box {64, 4, 16, 1}. Maps are encoded in the metadata's order:
   * q, k, v. */
  {
    static int32_t bt[64 * 256], used[64];
    for (int i = 0; i < 64 * 256; ++i)
      bt[i] = i;
    struct {
      int64_t b, keys;
      const char *kernel;
      unsigned rank;
      uint64_t dims[5], strides[4];
      unsigned box[5];
    } want[] = {{16, 8192, "kv1", 5, {64, 8, 16, 2, 8192}, {2048, 128, 16384, 32768},
                 {64, 8, 2, 2, 1}},
                {64, 4096, NULL, 4, {128, 8, 16, 16384}, {256, 2048, 32768},
                 {64, 4, 16, 1}}};
    for (int c = 0; c < 2; ++c) {
      for (int b = 0; b < want[c].b; ++b)
        used[b] = (int32_t)want[c].keys;
      fa_attention_args a = paged_args(want[c].b, want[c].keys, bt, used, s1);
      clear_launches();
      int encodes = fake->num_tma_encodes;
      CHECK_STATUS(fa_attention_run(rt, pag, &a), FA_OK, rt);
      int n = fake->num_tma_encodes - encodes;
      const char *name = fake->num_launches ? fake->launches[fake->num_launches - 1].name : "";
      CHECK(n == 3 && (want[c].kernel ? strstr(name, want[c].kernel) != NULL
                                      : strstr(name, "kv1") == NULL),
            "paged batch %lld: %d maps encoded for %s", (long long)want[c].b, n, name);
      for (int m = 1; m <= 2 && n == 3; ++m) {
        int at = (fake->num_tma_encodes - 3 + m) % 8;
        bool same = fake->tma[at].rank == want[c].rank;
        for (unsigned d = 0; same && d < want[c].rank; ++d)
          same = fake->tma[at].dims[d] == want[c].dims[d] &&
                 fake->tma[at].box[d] == want[c].box[d] &&
                 (d == 0 || fake->tma[at].strides[d - 1] == want[c].strides[d - 1]);
        CHECK(same,
              "paged batch %lld, map %d: rank %u, dims {%llu, %llu, %llu, %llu, %llu}, "
              "strides {%llu, %llu, %llu, %llu}, box {%u, %u, %u, %u, %u}",
              (long long)want[c].b, m, fake->tma[at].rank,
              (unsigned long long)fake->tma[at].dims[0], (unsigned long long)fake->tma[at].dims[1],
              (unsigned long long)fake->tma[at].dims[2], (unsigned long long)fake->tma[at].dims[3],
              (unsigned long long)fake->tma[at].dims[4],
              (unsigned long long)fake->tma[at].strides[0],
              (unsigned long long)fake->tma[at].strides[1],
              (unsigned long long)fake->tma[at].strides[2],
              (unsigned long long)fake->tma[at].strides[3], fake->tma[at].box[0],
              fake->tma[at].box[1], fake->tma[at].box[2], fake->tma[at].box[3],
              fake->tma[at].box[4]);
      }
    }
  }
  /* Releasing s1, which holds counters and block_table mirrors: they are
   * freed, and the next paged call there fills a mirror again. */
  {
    int frees = fake->num_frees;
    CHECK_STATUS(fa_cuda_release_stream(rt, s1), FA_OK, rt);
    CHECK(fake->num_frees >= frees + 2, "release of s1: %d frees", fake->num_frees - frees);
    CHECK(fake->capture_mode == 0, "capture mode left at %d", fake->capture_mode);
    fa_attention_args a = paged16_args(s1);
    int copies = fake->num_copies;
    CHECK_STATUS(fa_attention_run(rt, pag, &a), FA_OK, rt);
    CHECK(fake->num_copies == copies + 1, "after the release: %d copies",
          fake->num_copies - copies);
  }
  /* A failing launch: FA_ERROR_CUDA with the driver's message; then a call
   * that runs. */
  {
    fa_attention_args a = decode_args(16, 8192, s1);
    fake->fail_launch_at = fake->num_launches_total;
    CHECK_STATUS(fa_attention_run(rt, dec, &a), FA_ERROR_CUDA, rt);
    CHECK(strstr(fa_runtime_last_error(rt), "cuLaunchKernel failed") != NULL,
          "message: %s", fa_runtime_last_error(rt));
    fake->fail_launch_at = -1;
    CHECK_STATUS(fa_attention_run(rt, dec, &a), FA_OK, rt);
  }

  /* On a device that reads pageable memory itself (HMM, ATS: attribute
   * 88, here set in the stand-in), eager host-to-device copies go through
   * the runtime's page-locked blocks (staged_copy), so that a caller may
   * change its table at once: on a runtime of its own, varlen calls (a copied tile table) and a paged call with a host
   * block_table (its mirror's refill) copy from pinned memory and record an
   * event. While the GPU keeps up (events reached) one block serves every
   * call; while copies stay pending new blocks are made, up to
   * FA_PINNED_BLOCKS (32), past which a call waits for the next block's
   * copy (cuEventSynchronize). Without pinned memory the copy is a
   * pageable one; under capture it reads the table kept for the graph. */
  {
    void *st = (void *)(uintptr_t)0x5008;
    fake->pageable_access = 1; /* read when a runtime first loads the driver */
    fa_runtime *rt3 = artifact_only_runtime();
    fa_kernel *var3 = NULL;
    CHECK_STATUS(fa_kernel_load_artifact_file(rt3, varlen_path, &var3), FA_OK, rt3);
    fa_attention_args a = varlen_args(st);
    int allocs = fake->num_host_allocs, pinned = fake->num_pinned_copies,
        records = fake->num_event_records, syncs = fake->num_event_syncs;
    for (int call = 0; call < 5; ++call)
      CHECK_STATUS(fa_attention_run(rt3, var3, &a), FA_OK, rt3);
    CHECK(fake->num_pinned_copies - pinned == 5 && fake->num_event_records - records == 5 &&
              fake->num_host_allocs - allocs == 1 && fake->num_event_syncs == syncs,
          "5 eager varlen calls: %d pinned copies, %d events recorded, %d blocks made, "
          "%d waits (want 5, 5, 1, 0)",
          fake->num_pinned_copies - pinned, fake->num_event_records - records,
          fake->num_host_allocs - allocs, fake->num_event_syncs - syncs);
    fake->events_pending = 1;
    for (int call = 0; call < 40; ++call)
      CHECK_STATUS(fa_attention_run(rt3, var3, &a), FA_OK, rt3);
    CHECK(fake->num_host_allocs - allocs == 32 && fake->num_event_syncs - syncs == 9,
          "40 calls with their copies pending: %d blocks made (want 32), %d waits for a "
          "block's last copy (want 9)",
          fake->num_host_allocs - allocs, fake->num_event_syncs - syncs);
    fake->events_pending = 0;
    /* The paged kernel with a host block_table: the mirror's refill. */
    fa_kernel *pag3 = NULL;
    CHECK_STATUS(fa_kernel_load_artifact_file(rt3, paged_path, &pag3), FA_OK, rt3);
    fa_attention_args p = paged16_args(st);
    pinned = fake->num_pinned_copies;
    int copies = fake->num_copies;
    CHECK_STATUS(fa_attention_run(rt3, pag3, &p), FA_OK, rt3);
    CHECK(fake->num_copies - copies == 1 && fake->num_pinned_copies - pinned == 1,
          "paged call with a host block_table: %d copies, %d from pinned memory (want 1, 1)",
          fake->num_copies - copies, fake->num_pinned_copies - pinned);
    /* Two entries changed far apart: one pinned copy from the first to the
     * last, and the mirror holds the table. */
    {
      int32_t *bt = (int32_t *)p.block_table.data;
      int32_t t = bt[3];
      bt[3] = bt[4000];
      bt[4000] = t;
      pinned = fake->num_pinned_copies;
      copies = fake->num_copies;
      CHECK_STATUS(fa_attention_run(rt3, pag3, &p), FA_OK, rt3);
      CHECK(fake->num_copies - copies == 1 && fake->num_pinned_copies - pinned == 1,
            "patch on an HMM device: %d copies, %d from pinned memory (want 1, 1)",
            fake->num_copies - copies, fake->num_pinned_copies - pinned);
      uint64_t at = fake->copy_dst[copies % 8] - 3 * sizeof(int32_t);
      CHECK(memcmp((const void *)(uintptr_t)at, bt, 16 * 512 * sizeof(int32_t)) == 0,
            "patch on an HMM device: the mirror does not hold the table");
      bt[4000] = bt[3];
      bt[3] = t;
    }
    fa_runtime_destroy(rt3);
    /* No pinned memory: a pageable copy, and the call runs. */
    fa_runtime *rt4 = artifact_only_runtime();
    fa_kernel *var4 = NULL;
    CHECK_STATUS(fa_kernel_load_artifact_file(rt4, varlen_path, &var4), FA_OK, rt4);
    fake->fail_host_alloc = 1;
    pinned = fake->num_pinned_copies;
    copies = fake->num_copies;
    int stream_syncs = fake->num_stream_syncs;
    CHECK_STATUS(fa_attention_run(rt4, var4, &a), FA_OK, rt4);
    /* (Waited for: on such a device the driver may read the source late.) */
    CHECK(fake->num_copies - copies == 1 && fake->num_pinned_copies == pinned &&
              fake->num_stream_syncs - stream_syncs == 1,
          "without pinned memory: %d copies, %d pinned, %d stream waits (want 1, 0, 1)",
          fake->num_copies - copies, fake->num_pinned_copies - pinned,
          fake->num_stream_syncs - stream_syncs);
    fake->fail_host_alloc = 0;
    /* Under capture: the kept table, not a pinned block. */
    fake->capturing_stream = st;
    pinned = fake->num_pinned_copies;
    CHECK_STATUS(fa_attention_run(rt4, var4, &a), FA_OK, rt4);
    CHECK(fake->num_pinned_copies == pinned, "captured copy from a pinned block");
    fake->capturing_stream = NULL;
    fa_runtime_destroy(rt4);
    fake_graph_destroy();
    /* Elsewhere the driver stages the pageable copy itself. */
    fake->pageable_access = 0;
    fa_runtime *rt5 = artifact_only_runtime();
    fa_kernel *var5 = NULL;
    CHECK_STATUS(fa_kernel_load_artifact_file(rt5, varlen_path, &var5), FA_OK, rt5);
    pinned = fake->num_pinned_copies;
    copies = fake->num_copies;
    allocs = fake->num_host_allocs;
    CHECK_STATUS(fa_attention_run(rt5, var5, &a), FA_OK, rt5);
    CHECK(fake->num_copies - copies == 1 && fake->num_pinned_copies == pinned &&
              fake->num_host_allocs == allocs,
          "without pageable access: %d copies, %d pinned, %d blocks (want 1, 0, 0)",
          fake->num_copies - copies, fake->num_pinned_copies - pinned,
          fake->num_host_allocs - allocs);
    fa_runtime_destroy(rt5);
  }
  /* A split-KV kernel without a dense entry (fixed num_splits 4; a stand-in
   * artifact built here, whose metadata also asks for the tile counter,
   * which the compiler never emits on the partial form): 2 heads of 64,
   * block_m 128. */
  {
    fa_attention_config c = fa_attention_config_default();
    c.target = FA_TARGET_SM90;
    c.num_q_heads = c.num_kv_heads = 2;
    c.head_dim = c.head_dim_v = 64;
    c.flags = FA_WITH_LSE;
    c.num_splits = 4;
    static const char payload[] = "not a real cubin";
    void *bytes = NULL;
    size_t size = 0;
    fa_kernel *sk = NULL;
    char *meta = abi_stub_add(
        "{\"entry\":\"p\",\"args\":[\"q\",\"k\",\"v\",\"out\",\"lse\"],"
        "\"block\":[384,1,1],\"smem\":1024,\"grid\":\"persistent\","
        "\"combine_entry\":\"c\",\"tile_counter\":true,"
        "\"block_m\":128,\"block_n\":128}");
    CHECK(fa_artifact_build(&c, FA_COMPILER_VERSION, FA_ARTIFACT_CUBIN, meta, payload,
                            sizeof(payload), &bytes, &size) == FA_OK,
          "building the split-KV stand-in");
    free(meta);
    CHECK_STATUS(fa_kernel_load_artifact(rt, bytes, size, &sk), FA_OK, rt);
    fa_artifact_free(bytes);
    if (sk) {
      /* No query rows (Sq 0): nothing to write, nothing launched; the
       * partial kernel's parameters (its partial buffers) would not exist. */
      fa_attention_args a = dense_args(1, 0, 300, 2, 2, 64, s1);
      clear_launches();
      int async_allocs = fake->num_async_allocs;
      CHECK_STATUS(fa_attention_run(rt, sk, &a), FA_OK, rt);
      CHECK(fake->num_launches == 0 && fake->num_async_allocs == async_allocs,
            "split-KV with Sq 0: %d launches, %d scratch allocations (want none)",
            fake->num_launches, fake->num_async_allocs - async_allocs);
      /* Sq 2560: 40 tiles x 4 splits = 160 work units on 132 SMs. The
       * counter is read (more units than CTAs), so it is zeroed, although
       * there are fewer tiles than SMs. */
      a = dense_args(1, 2560, 300, 2, 2, 64, s1);
      clear_launches();
      int memsets = fake->num_memsets;
      CHECK_STATUS(fa_attention_run(rt, sk, &a), FA_OK, rt);
      CHECK(fake->num_launches == 2 && launched(0, "p", 132) && !strcmp(fake->launches[1].name, "c"),
            "split-KV, 160 units: want p on 132 CTAs, then the combine c");
      CHECK(fake->num_memsets == memsets + 1, "160 units over 40 tiles: %d memsets (want the counter)",
            fake->num_memsets - memsets);
      if (g_failures)
        print_launches();
      /* A failing scratch allocation: out of memory only when the driver
       * says so (CUDA_ERROR_OUT_OF_MEMORY = 2), else the driver's error
       * (801: CUDA_ERROR_NOT_SUPPORTED, as without memory pools). */
      fake->fail_async_alloc = 2;
      CHECK_STATUS(fa_attention_run(rt, sk, &a), FA_ERROR_OUT_OF_MEMORY, rt);
      fake->fail_async_alloc = 801;
      CHECK_STATUS(fa_attention_run(rt, sk, &a), FA_ERROR_CUDA, rt);
      CHECK(strstr(fa_runtime_last_error(rt), "launch scratch") != NULL, "message: %s",
            fa_runtime_last_error(rt));
      fake->fail_async_alloc = 0;
      CHECK_STATUS(fa_attention_run(rt, sk, &a), FA_OK, rt);
    }
  }
  /* Decode over a cache of no key (PyTorch's empty k / v: null data):
   * out 0 and lse -inf, written by two memsets on the stream, no kernel. */
  {
    fa_attention_args a = decode_args(4, 0, s1);
    a.k = (fa_tensor){NULL, 4, {4, 0, 8, 128}};
    a.v = (fa_tensor){NULL, 4, {4, 0, 8, 128}};
    uint16_t *o = (uint16_t *)malloc(4 * 32 * 128 * 2);
    float *l = (float *)malloc(4 * 32 * sizeof(float));
    memset(o, 0x7f, 4 * 32 * 128 * 2);
    memset(l, 0x7f, 4 * 32 * sizeof(float));
    a.out.data = o;
    a.lse.data = l;
    clear_launches();
    int memsets = fake->num_memsets;
    CHECK_STATUS(fa_attention_run(rt, dec, &a), FA_OK, rt);
    int bad = 0;
    for (int i = 0; i < 4 * 32 * 128; ++i)
      bad += o[i] != 0;
    for (int i = 0; i < 4 * 32; ++i)
      bad += !(isinf(l[i]) && l[i] < 0);
    CHECK(bad == 0 && fake->num_launches == 0 && fake->num_memsets == memsets + 2,
          "no key: %d values wrong, %d launches, %d memsets (want 0, 0, 2)", bad,
          fake->num_launches, fake->num_memsets - memsets);
    free(o);
    free(l);
  }
  /* Paged decode over empty extents. A pool of no page holds no key,
   * whatever a device block_table's width: seqused_k claiming keys is bad
   * input, not rows silently left empty. A host block_table of no column
   * (null data, as PyTorch gives it) over a real pool, with no key used,
   * runs (and copies no page list from the null table). */
  {
    static int32_t used[2] = {20, 5};
    fa_attention_args a = decode_args(2, 32, s1);
    a.k = (fa_tensor){NULL, 4, {0, 16, 8, 128}};
    a.v = (fa_tensor){NULL, 4, {0, 16, 8, 128}};
    a.seqused_k = host_i32(used, 2);
    a.block_table = device_tensor(2, 2, 2, 0, 0, 4);
    clear_launches();
    CHECK_STATUS(fa_attention_run(rt, pag, &a), FA_ERROR_BAD_INPUT, rt);
    CHECK(strstr(fa_runtime_last_error(rt), "seqused_k[0] = 20 is outside [0, 0]") &&
              fake->num_launches == 0,
          "pool of no page: %s", fa_runtime_last_error(rt));
    used[0] = used[1] = 0;
    a = decode_args(2, 64, s1);
    a.k = device_tensor(4, 4, 16, 8, 128, 2);
    a.v = device_tensor(4, 4, 16, 8, 128, 2);
    a.seqused_k = host_i32(used, 2);
    a.block_table = (fa_tensor){NULL, 2, {2, 0}};
    CHECK_STATUS(fa_attention_run(rt, pag, &a), FA_OK, rt);
  }
  /* A host kernel once the driver is loaded: q .. out in device memory
   * (which the kernel would read on the host) is refused, nothing run. */
  {
    fa_kernel *hk = NULL;
    CHECK_STATUS(fa_kernel_load_artifact_file(rt, host_path, &hk), FA_OK, rt);
    fa_attention_args a = dense_args(1, 4, 16, 4, 2, 64, s1);
    if (hk)
      CHECK_STATUS(fa_attention_run(rt, hk, &a), FA_ERROR_BAD_INPUT, rt);
    CHECK(strstr(fa_runtime_last_error(rt), "'q' is in device memory") != NULL,
          "host kernel, device q: %s", fa_runtime_last_error(rt));
  }
  /* A window side of 2^30 or more is no bound in the sm90 kernels: exact
   * below 2^30 keys a sequence, refused (nothing launched) where the
   * tensors allow 2^30 keys. */
  {
    fa_kernel *wk = NULL;
    CHECK_STATUS(fa_kernel_load_artifact_file(rt, window_path, &wk), FA_OK, rt);
    fa_attention_args a = dense_args(1, 4, 4096, 4, 2, 64, s1);
    clear_launches();
    if (wk)
      CHECK_STATUS(fa_attention_run(rt, wk, &a), FA_OK, rt);
    CHECK(fake->num_launches == 1, "huge window, 4096 keys: %d launches", fake->num_launches);
    a = dense_args(1, 4, 1 << 30, 4, 2, 64, s1);
    clear_launches();
    if (wk)
      CHECK_STATUS(fa_attention_run(rt, wk, &a), FA_ERROR_UNSUPPORTED, rt);
    CHECK(strstr(fa_runtime_last_error(rt), "2^30") && fake->num_launches == 0,
          "huge window, 2^30 keys: %s, %d launches", fa_runtime_last_error(rt),
          fake->num_launches);
  }
  /* kv-cache append with split-KV and no query rows: the append still
   * writes k_new / v_new into the cache (only the attention has nothing
   * to do). */
  {
    fa_kernel *ak = NULL;
    CHECK_STATUS(fa_kernel_load_artifact_file(rt, append_path, &ak), FA_OK, rt);
    static int32_t cache_seqlens[2] = {10, 50};
    fa_attention_args a = dense_args(2, 0, 256, 8, 2, 128, s1);
    a.k_new = device_tensor(4, 2, 3, 2, 128, 2);
    a.v_new = device_tensor(4, 2, 3, 2, 128, 2);
    a.cache_seqlens = host_i32(cache_seqlens, 2);
    clear_launches();
    if (ak)
      CHECK_STATUS(fa_attention_run(rt, ak, &a), FA_OK, rt);
    CHECK(fake->num_launches == 1 && strstr(fake->launches[0].name, "append"),
          "append + split-KV with Sq 0: want the append kernel alone, got %d launches",
          fake->num_launches);
    if (g_failures)
      print_launches();
  }
  /* Numbers of the metadata's config outside their field's range, or
   * fractional where the field is an integer: a corrupt artifact, found
   * before any conversion (runtime.launch_asan runs this under UBSan's
   * float-cast-overflow). The untouched artifact loads. */
  {
    fa_attention_config c = fa_attention_config_default();
    c.target = FA_TARGET_SM90;
    c.num_q_heads = c.num_kv_heads = 2;
    c.head_dim = c.head_dim_v = 128;
    static const char payload[] = "not a real cubin";
    void *bytes = NULL;
    size_t size = 0;
    char *meta = abi_stub_add("{\"entry\":\"k\",\"args\":[\"q\",\"k\",\"v\",\"out\"]}");
    CHECK(fa_artifact_build(&c, FA_COMPILER_VERSION, FA_ARTIFACT_CUBIN, meta, payload,
                            sizeof(payload), &bytes, &size) == FA_OK,
          "building the config stand-in");
    free(meta);
    fa_kernel *ck = NULL;
    CHECK_STATUS(fa_kernel_load_artifact(rt, bytes, size, &ck), FA_OK, rt);
    const char *bad[][2] = {{"\"head_dim\":128", "\"head_dim\":3e9"},
                            {"\"head_dim\":128", "\"head_dim\":128.5"},
                            {"\"head_dim\":128", "\"head_dim\":-3e9"},
                            {"\"flags\":", "\"flags\":-7,\"unused\":"},
                            {"\"target\":", "\"target\":-1,\"unused\":"},
                            {"\"causal\":", "\"causal\":-2,\"unused\":"},
                            {"\"scale\":", "\"scale\":1e300,\"unused\":"}};
    for (size_t i = 0; bytes && i < sizeof(bad) / sizeof(bad[0]); ++i) {
      size_t n = 0;
      unsigned char *b = patched_artifact((const unsigned char *)bytes, size, bad[i][0],
                                          bad[i][1], &n);
      CHECK(b != NULL, "patching %s", bad[i][0]);
      if (!b)
        continue;
      ck = NULL;
      CHECK_STATUS(fa_kernel_load_artifact(rt, b, n, &ck), FA_ERROR_CORRUPT_ARTIFACT, rt);
      CHECK(ck == NULL, "config %s: a kernel came back", bad[i][1]);
      free(b);
    }
    fa_artifact_free(bytes);
  }
  check_fuzz_findings(rt, host_path, decode_path, append_path);
  check_default_compiler();
  /* A graph that outlives the runtime: a copied table (varlen, 70
   * sequences) and a counter slice (decode) are released after
   * fa_runtime_destroy, which must then free nothing twice (run under
   * ASan), touch nothing freed and leak no record (LSan: the stand-in
   * forgets its pointers once a destructor ran). */
  {
    void *cap = (void *)(uintptr_t)0x5005;
    fake->capturing_stream = cap;
    fa_attention_args a = varlen_args(cap);
    fa_attention_args d = decode_args(1, 32768, cap);
    int made = fake->num_user_objects;
    CHECK_STATUS(fa_attention_run(rt, var, &a), FA_OK, rt);
    CHECK_STATUS(fa_attention_run(rt, dec, &d), FA_OK, rt);
    CHECK(fake->num_user_objects == made + 2, "varlen and decode under capture: %d user objects",
          fake->num_user_objects - made);
    fake->capturing_stream = NULL;
  }

  int allocs = fake->num_allocs;
  fa_runtime_destroy(rt);
  fake_graph_destroy();
  CHECK(fake->num_destroyed == fake->num_user_objects,
        "user objects: %d made, %d destroyed", fake->num_user_objects, fake->num_destroyed);
  CHECK(fake->num_host_frees == fake->num_host_allocs, "pinned blocks: %d made, %d freed",
        fake->num_host_allocs, fake->num_host_frees);
  CHECK(fake->num_frees == allocs, "counter arrays: %d allocated, %d freed", allocs,
        fake->num_frees);
  CHECK(fake->num_streams_destroyed == fake->num_streams_created,
        "streams: %d created, %d destroyed", fake->num_streams_created,
        fake->num_streams_destroyed);
  char cmd[600];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
  if (g_failures) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("launch path over the stand-in driver: all checks passed\n");
  return 0;
}
