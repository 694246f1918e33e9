/*===- fuzz_runtime.c - a mutation fuzzer of artifacts and runtime calls --===*
 *
 * Usage: fuzz_runtime ITERATIONS SEED LAST_INPUT SEED_ARTIFACT...
 *
 * Each iteration takes one of the seed artifacts (dense configs: host or
 * sm90, the sm90 ones over the stand-in driver fake_cuda.c), mutates its
 * metadata (a number or a string replaced by an edge value, a span deleted
 * or duplicated, bytes flipped), rewrites the sizes and the checksum so that
 * the mutation reaches the parser and the launch packing, loads it into a
 * fresh runtime and, when it loads, runs it with valid tensors and then with
 * one shape, rank or pointer perturbed. Every answer must be a status; a
 * crash, an ASan / UBSan report or a hang (the driver's timeout) is a
 * finding, and the input that caused it is in LAST_INPUT (written before
 * each load). Built under ASan and UBSan where the compiler has them
 * (scripts/fuzz.py runs it: a bounded run in make check, long runs in make
 * fuzz).
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
#include "common.h"
#include "flashattn/artifact.h"

#include <stdbool.h>

#include <xxhash.h>

static uint64_t rng_state;
static uint64_t rnd(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static size_t pick(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

static const char *edge_numbers[] = {"0", "1", "-1", "2", "3", "7", "63", "64", "65", "128",
                                     "255", "256", "1023", "2048", "4096", "65535", "65536",
                                     "2147483647", "2147483648", "-2147483648",
                                     "4294967296", "9223372036854775807", "1e300", "-0.5",
                                     "1.5", "null", "true", "\"\""};
static const char *edge_strings[] = {"\"\"", "\"q\"", "\"k\"", "\"v\"", "\"out\"", "\"lse\"",
                                     "\"ptr\"", "\"dims\"", "\"tma\"", "\"tile_table\"",
                                     "\"page_table\"", "\"tile_counter\"", "\"merge_out\"",
                                     "\"x\"", "0", "[]", "{}", "null"};

typedef struct {
  unsigned char *data;
  size_t size;
} bytes;

/* The metadata of artifact `a` replaced by `meta` (m bytes): a new buffer
 * with the sizes and the checksum that match. */
static bytes with_metadata(bytes a, const char *meta, size_t m) {
  uint64_t old_m, p;
  memcpy(&old_m, a.data + 48, 8);
  memcpy(&p, a.data + 56, 8);
  bytes out = {malloc(FA_ARTIFACT_HEADER_SIZE + m + p), FA_ARTIFACT_HEADER_SIZE + m + p};
  memcpy(out.data, a.data, 48);
  uint64_t mm = m;
  memcpy(out.data + 48, &mm, 8);
  memcpy(out.data + 56, &p, 8);
  memcpy(out.data + FA_ARTIFACT_HEADER_SIZE, meta, m);
  memcpy(out.data + FA_ARTIFACT_HEADER_SIZE + m, a.data + FA_ARTIFACT_HEADER_SIZE + old_m, p);
  uint64_t sum = XXH3_64bits(out.data + FA_ARTIFACT_HEADER_SIZE, m + p);
  memcpy(out.data + 64, &sum, 8);
  return out;
}

/* [*at, *end) of a random token of the metadata: a number, or a string
 * with its quotes. */
static bool find_token(const char *s, size_t n, bool number, size_t *at, size_t *end) {
  for (int tries = 0; tries < 64; ++tries) {
    size_t i = pick(n);
    if (number && (s[i] == '-' || (s[i] >= '0' && s[i] <= '9')) &&
        (i == 0 || !((s[i - 1] >= '0' && s[i - 1] <= '9') || s[i - 1] == '.' ||
                     s[i - 1] == '"' || (s[i - 1] >= 'a' && s[i - 1] <= 'z')))) {
      size_t j = i + 1;
      while (j < n && ((s[j] >= '0' && s[j] <= '9') || s[j] == '.' || s[j] == 'e'))
        ++j;
      *at = i, *end = j;
      return true;
    }
    if (!number && s[i] == '"') {
      size_t j = i + 1;
      while (j < n && s[j] != '"')
        ++j;
      if (j < n) {
        *at = i, *end = j + 1;
        return true;
      }
    }
  }
  return false;
}

/* One mutation of `meta` (n bytes) into a new malloc'd string. */
static char *mutate(const char *meta, size_t n, size_t *out_n) {
  char *out = malloc(2 * n + 64);
  /* Half the mutations replace a number, which keeps the JSON valid. */
  size_t at = 0, end = 0, k = 0, r = pick(10);
  int choice = r < 5 ? 0 : r < 7 ? 1 : (int)r - 5;
  switch (choice) {
  case 0: /* a number -> an edge value */
  case 1: { /* a string -> an edge string */
    bool number = choice == 0;
    if (find_token(meta, n, number, &at, &end)) {
      const char *to = number ? edge_numbers[pick(sizeof(edge_numbers) / sizeof(*edge_numbers))]
                              : edge_strings[pick(sizeof(edge_strings) / sizeof(*edge_strings))];
      memcpy(out, meta, at);
      k = at + strlen(to);
      memcpy(out + at, to, strlen(to));
      memcpy(out + k, meta + end, n - end);
      *out_n = k + n - end;
      return out;
    }
    break;
  }
  case 2: { /* delete a span */
    at = pick(n), end = at + 1 + pick(32);
    end = end > n ? n : end;
    memcpy(out, meta, at);
    memcpy(out + at, meta + end, n - end);
    *out_n = n - (end - at);
    return out;
  }
  case 3: { /* duplicate a span */
    at = pick(n), end = at + 1 + pick(48);
    end = end > n ? n : end;
    memcpy(out, meta, end);
    memcpy(out + end, meta + at, end - at);
    memcpy(out + end + (end - at), meta + end, n - end);
    *out_n = n + (end - at);
    return out;
  }
  default: /* flip a byte */
    break;
  }
  memcpy(out, meta, n);
  out[pick(n)] ^= (char)(1u << pick(8));
  *out_n = n;
  return out;
}

static uint64_t next_device = 0x100000000000ull;

/* A tensor of `shape`: host memory (zeros) for a host kernel, a fake device
 * address for a cubin. */
static fa_tensor tensor(bool device, int rank, const int64_t *shape, size_t elem) {
  fa_tensor t = {0};
  t.rank = rank;
  int64_t n = 1;
  for (int i = 0; i < rank; ++i)
    n *= (t.shape[i] = shape[i]);
  if (device) {
    t.data = (void *)(uintptr_t)next_device;
    next_device += (uint64_t)(n * (int64_t)elem + 511) / 256 * 256;
  } else {
    t.data = calloc((size_t)n ? (size_t)n : 1, elem);
  }
  return t;
}

/* Runs `k` on B = 2, Sq = 3, Sk = 5 dense tensors, then once more with one
 * field perturbed. Statuses only; the results are not checked. */
static void run_kernel(fa_runtime *rt, fa_kernel *k) {
  const fa_attention_config *c = fa_kernel_config(k);
  bool device = c->target == FA_TARGET_SM90;
  size_t e = c->dtype == FA_F32 ? 4 : 2, oe = c->out_dtype == FA_F32 ? 4 : 2;
  int64_t hq = c->num_q_heads, hkv = c->num_kv_heads, d = c->head_dim, dv = c->head_dim_v;
  if (hq <= 0 || hkv <= 0 || d <= 0 || dv <= 0 || hq > 64 || d > 512 || dv > 512)
    return;
  fa_attention_args a = empty_args();
  a.q = tensor(device, 4, (int64_t[]){2, 3, hq, d}, e);
  a.k = tensor(device, 4, (int64_t[]){2, 5, hkv, d}, e);
  a.v = tensor(device, 4, (int64_t[]){2, 5, hkv, dv}, e);
  a.out = tensor(device, 4, (int64_t[]){2, 3, hq, dv}, oe);
  if (c->flags & FA_WITH_LSE)
    a.lse = tensor(device, 3, (int64_t[]){2, hq, 3}, 4);
  (void)fa_attention_run(rt, k, &a);
  fa_attention_args b = a;
  fa_tensor *fields[] = {&b.q, &b.k, &b.v, &b.out, &b.lse};
  fa_tensor *f = fields[pick(5)];
  static const int64_t dims[] = {0, 1, -1, 2, 7, 65536, 2147483647, 2147483648ll,
                                 (int64_t)1 << 62};
  switch (pick(4)) {
  case 0: f->shape[pick(4)] = dims[pick(sizeof(dims) / sizeof(*dims))]; break;
  case 1: f->rank = (int32_t)pick(6) - 1; break;
  case 2: f->data = NULL; break;
  default: b.struct_size = (uint32_t)pick(2 * sizeof(b)); break;
  }
  (void)fa_attention_run(rt, k, &b);
  if (!device) {
    free(a.q.data), free(a.k.data), free(a.v.data), free(a.out.data);
    free(a.lse.data);
  }
}

static bytes read_file(const char *path) {
  bytes b = {0};
  FILE *f = fopen(path, "rb");
  if (!f)
    return b;
  fseek(f, 0, SEEK_END);
  b.size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  b.data = malloc(b.size ? b.size : 1);
  if (fread(b.data, 1, b.size, f) != b.size)
    b.size = 0;
  fclose(f);
  return b;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: fuzz_runtime ITERATIONS SEED LAST_INPUT SEED_ARTIFACT...\n");
    return 2;
  }
  long iterations = strtol(argv[1], NULL, 10);
  rng_state = strtoull(argv[2], NULL, 10);
  const char *last = argv[3];
  int nseeds = argc - 4;
  bytes seeds[16];
  for (int i = 0; i < nseeds && i < 16; ++i) {
    seeds[i] = read_file(argv[4 + i]);
    if (seeds[i].size < FA_ARTIFACT_HEADER_SIZE) {
      fprintf(stderr, "fuzz_runtime: %s is no artifact\n", argv[4 + i]);
      return 2;
    }
  }
  setenv("FLASHATTN_LIBCUDA", FA_TEST_FAKE_CUDA, 1);
  long loaded = 0;
  for (long it = 0; it < iterations; ++it) {
    bytes s = seeds[pick((size_t)(nseeds < 16 ? nseeds : 16))];
    uint64_t m;
    memcpy(&m, s.data + 48, 8);
    const char *meta = (const char *)s.data + FA_ARTIFACT_HEADER_SIZE;
    size_t mn = 0;
    char *mut = mutate(meta, (size_t)m, &mn);
    for (int extra = (int)pick(2); extra > 0; --extra) {
      size_t n2;
      char *again = mutate(mut, mn, &n2);
      free(mut);
      mut = again, mn = n2;
    }
    bytes art = with_metadata(s, mut, mn);
    free(mut);
    FILE *f = fopen(last, "wb");
    if (f) {
      fwrite(art.data, 1, art.size, f);
      fclose(f);
    }
    fa_runtime_options o = {0};
    o.struct_size = sizeof(o);
    o.disable_disk_cache = 1;
    o.compiler_library = "";
    fa_runtime *rt = NULL;
    if (fa_runtime_create(&o, &rt) != FA_OK)
      return 1;
    fa_kernel *k = NULL;
    if (fa_kernel_load_artifact(rt, art.data, art.size, &k) == FA_OK) {
      ++loaded;
      run_kernel(rt, k);
    }
    fa_runtime_destroy(rt);
    free(art.data);
  }
  printf("fuzz_runtime: %ld iterations, %ld mutated artifacts loaded and run\n", iterations,
         loaded);
  for (int i = 0; i < nseeds && i < 16; ++i)
    free(seeds[i].data);
  return 0;
}
