/*===- test_cache.c - the artifact cache ----------------------------------===*
 *
 * Miss + compile + disk write, memory hit, disk hit in a new runtime without
 * a compiler, miss without a compiler (status), corrupt / truncated / foreign
 * entries detected and rebuilt, a read-only directory degrading to memory
 * only, directories and entries others can write being ignored, two
 * processes filling one directory at once, and files that are no regular
 * file (a FIFO entry, a link, a directory as an artifact path) or a cache
 * directory too long for the runtime refused without blocking or guessing.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
#include "common.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static fa_runtime *make_rt(const char *dir, int with_compiler) {
  fa_runtime_options o = {0};
  o.struct_size = sizeof(o);
  o.cache_dir = dir;
  o.compiler_library = with_compiler ? FA_TEST_COMPILER_LIB : "";
  fa_runtime *rt = NULL;
  if (fa_runtime_create(&o, &rt) != FA_OK)
    return NULL;
  return rt;
}

static fa_cache_stats stats(fa_runtime *rt) {
  fa_cache_stats s;
  fa_runtime_cache_stats(rt, &s);
  return s;
}

static fa_attention_config config_a(void) {
  fa_attention_config c = fa_attention_config_default();
  c.num_q_heads = 2; c.num_kv_heads = 1; c.head_dim = c.head_dim_v = 64;
  c.causal = FA_CAUSAL_BOTTOM_RIGHT;
  return c;
}
static fa_attention_config config_b(void) {
  fa_attention_config c = config_a();
  c.causal = FA_CAUSAL_TOP_LEFT;
  return c;
}

static int count_temp_files(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    n += e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  if (d)
    closedir(d);
  return n;
}

int main(void) {
  char dir[] = "/tmp/fa-rt-cache-XXXXXX";
  if (!mkdtemp(dir))
    return 1;
  fa_attention_config a = config_a(), b = config_b();
  char path[512];

  /* 1. Miss, compile, write; then a memory hit. */
  fa_runtime *rt = make_rt(dir, 1);
  fa_kernel *k = NULL;
  CHECK_STATUS(fa_kernel_get(rt, &a, &k), FA_OK, rt);
  fa_cache_stats s = stats(rt);
  CHECK(s.misses == 1 && s.compiles == 1 && s.disk_writes == 1, "first get: misses %llu compiles %llu writes %llu",
        (unsigned long long)s.misses, (unsigned long long)s.compiles, (unsigned long long)s.disk_writes);
  fa_kernel *k2 = NULL;
  CHECK_STATUS(fa_kernel_get(rt, &a, &k2), FA_OK, rt);
  CHECK(k2 == k && stats(rt).memory_hits == 1, "second get is not a memory hit");
  CHECK(k && run_small(rt, k), "compiled kernel does not run");
  snprintf(path, sizeof(path), "%s/%s.faa", dir, fa_kernel_key(k));
  char key_a[64];
  snprintf(key_a, sizeof(key_a), "%s", k ? fa_kernel_key(k) : "");
  fa_runtime_destroy(rt);

  /* 2. Another runtime without a compiler: served from disk. */
  rt = make_rt(dir, 0);
  CHECK_STATUS(fa_kernel_get(rt, &a, &k), FA_OK, rt);
  CHECK(stats(rt).disk_hits == 1 && stats(rt).compiles == 0, "not a disk hit");
  CHECK(k && run_small(rt, k), "disk kernel does not run");
  /* 3. A config nobody compiled: a miss reported as a status. */
  CHECK_STATUS(fa_kernel_get(rt, &b, &k), FA_ERROR_CACHE_MISS, rt);
  CHECK(strstr(fa_runtime_last_error(rt), "not cached") != NULL, "miss message: %s", fa_runtime_last_error(rt));
  fa_runtime_destroy(rt);

  /* 4. Corrupt entry (one payload byte flipped): detected, rebuilt. */
  struct stat st;
  CHECK(stat(path, &st) == 0, "no entry at %s", path);
  FILE *f = fopen(path, "r+b");
  if (f) {
    fseek(f, st.st_size - 100, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, st.st_size - 100, SEEK_SET);
    fputc(ch ^ 0x5A, f);
    fclose(f);
  }
  rt = make_rt(dir, 0);
  CHECK_STATUS(fa_kernel_get(rt, &a, &k), FA_ERROR_CACHE_MISS, rt);
  CHECK(stats(rt).rebuilt_corrupt == 1, "corrupt entry not detected");
  fa_runtime_destroy(rt);
  rt = make_rt(dir, 1);
  CHECK_STATUS(fa_kernel_get(rt, &a, &k), FA_OK, rt);
  CHECK(stats(rt).rebuilt_corrupt == 1 && stats(rt).compiles == 1 && stats(rt).disk_writes == 1,
        "corrupt entry not rebuilt");
  fa_runtime_destroy(rt);
  rt = make_rt(dir, 0);
  CHECK_STATUS(fa_kernel_get(rt, &a, &k), FA_OK, rt);
  CHECK(stats(rt).disk_hits == 1, "rebuilt entry not served");
  fa_runtime_destroy(rt);

  /* 5. Truncated entry. */
  CHECK(truncate(path, st.st_size / 2) == 0, "truncate");
  rt = make_rt(dir, 1);
  CHECK_STATUS(fa_kernel_get(rt, &a, &k), FA_OK, rt);
  CHECK(stats(rt).rebuilt_corrupt == 1 && stats(rt).compiles == 1, "truncated entry not rebuilt");
  fa_runtime_destroy(rt);

  /* 6. Foreign entry: config b's artifact stored under a's key. */
  rt = make_rt(dir, 1);
  CHECK_STATUS(fa_kernel_get(rt, &b, &k), FA_OK, rt);
  char pathb[512];
  snprintf(pathb, sizeof(pathb), "%s/%s.faa", dir, fa_kernel_key(k));
  fa_runtime_destroy(rt);
  CHECK(rename(pathb, path) == 0, "rename");
  rt = make_rt(dir, 0);
  CHECK_STATUS(fa_kernel_get(rt, &a, &k), FA_ERROR_CACHE_MISS, rt);
  CHECK(stats(rt).rebuilt_corrupt == 1, "foreign entry not detected");
  fa_runtime_destroy(rt);

  /* 7. Read-only directory: memory only, and everything still works. */
  const char *ro = "/proc/self"; /* not writable, even by root */
  char rodir[] = "/tmp/fa-rt-ro-XXXXXX";
  if (geteuid() != 0 && mkdtemp(rodir) && chmod(rodir, 0555) == 0)
    ro = rodir;
  rt = make_rt(ro, 1);
  CHECK_STATUS(fa_kernel_get(rt, &a, &k), FA_OK, rt);
  s = stats(rt);
  CHECK(s.disk_enabled == 0 && s.disk_write_failures == 1 && s.compiles == 1,
        "read-only dir: enabled %d failures %llu", s.disk_enabled, (unsigned long long)s.disk_write_failures);
  CHECK_STATUS(fa_kernel_get(rt, &a, &k2), FA_OK, rt);
  CHECK(k2 == k && stats(rt).memory_hits == 1, "memory cache not used");
  CHECK(k && run_small(rt, k), "kernel does not run from memory");
  fa_runtime_destroy(rt);

  /* 7b. A directory others can write is not used (its entries could be
   * planted code): memory only. So is an entry others can write. */
  char open_dir[] = "/tmp/fa-rt-open-XXXXXX";
  CHECK(mkdtemp(open_dir) && chmod(open_dir, 0777) == 0, "open dir");
  rt = make_rt(open_dir, 1);
  CHECK(stats(rt).disk_enabled == 0, "a world-writable cache directory was used");
  fa_runtime_destroy(rt);
  rmdir(open_dir);
  rt = make_rt(dir, 1); /* a valid private entry for a again */
  CHECK_STATUS(fa_kernel_get(rt, &a, &k), FA_OK, rt);
  fa_runtime_destroy(rt);
  rt = make_rt(dir, 0);
  CHECK_STATUS(fa_kernel_get(rt, &a, &k), FA_OK, rt);
  CHECK(stats(rt).disk_hits == 1, "the private entry was not served");
  fa_runtime_destroy(rt);
  CHECK(chmod(path, 0666) == 0, "chmod entry");
  rt = make_rt(dir, 0);
  CHECK_STATUS(fa_kernel_get(rt, &a, &k), FA_ERROR_CACHE_MISS, rt);
  CHECK(stats(rt).disk_hits == 0, "a world-writable entry was loaded");
  fa_runtime_destroy(rt);
  chmod(path, 0600);

  /* 8. Two processes fill a fresh directory at once. */
  char shared[] = "/tmp/fa-rt-mp-XXXXXX";
  CHECK(mkdtemp(shared) != NULL, "mkdtemp");
  pid_t pids[2];
  for (int i = 0; i < 2; ++i) {
    pids[i] = fork();
    if (pids[i] == 0) {
      /* Each process compiles (or finds) the entry, then 20 times rewrites
       * it from its bytes and reads it back in a fresh runtime: readers must
       * never see a torn entry while the other process writes. */
      fa_runtime *crt = make_rt(shared, 1);
      fa_kernel *ck = NULL;
      int ok = crt && fa_kernel_get(crt, &a, &ck) == FA_OK;
      char entry[512];
      if (ok)
        snprintf(entry, sizeof(entry), "%s/%s.faa", shared, fa_kernel_key(ck));
      for (int r = 0; ok && r < 20; ++r) {
        FILE *ef = fopen(entry, "rb");
        static char buf[1 << 20];
        size_t n = ef ? fread(buf, 1, sizeof(buf), ef) : 0;
        if (ef)
          fclose(ef);
        fa_runtime *writer = make_rt(shared, 0);
        fa_kernel *w = NULL;
        ok = n > 0 && fa_kernel_load_artifact(writer, buf, n, &w) == FA_OK;
        fa_runtime_destroy(writer);
        fa_runtime *reader = make_rt(shared, 0);
        fa_kernel *again = NULL;
        ok = ok && fa_kernel_get(reader, &a, &again) == FA_OK;
        fa_runtime_destroy(reader);
      }
      fa_runtime_destroy(crt);
      _exit(ok ? 0 : 1);
    }
  }
  for (int i = 0; i < 2; ++i) {
    int status = 0;
    waitpid(pids[i], &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "process %d failed", i);
  }
  rt = make_rt(shared, 0);
  CHECK_STATUS(fa_kernel_get(rt, &a, &k), FA_OK, rt);
  CHECK(stats(rt).disk_hits == 1 && k && run_small(rt, k), "shared entry unusable");
  CHECK(count_temp_files(shared) == 0, "temporary files left in %s", shared);
  fa_runtime_destroy(rt);

  /* 9. Entries that are no regular file are misses, found without
   * blocking (a FIFO was opened before it was checked: fa_kernel_get waited
   * for a writer forever) and without following a link; the alarm turns a
   * hang into a failure. */
  alarm(60);
  char odd[] = "/tmp/fa-rt-odd-XXXXXX";
  CHECK(mkdtemp(odd) != NULL, "mkdtemp");
  char entry[512];
  snprintf(entry, sizeof(entry), "%s/%s.faa", odd, key_a);
  CHECK(mkfifo(entry, 0600) == 0, "mkfifo %s", entry);
  rt = make_rt(odd, 0);
  CHECK_STATUS(fa_kernel_get(rt, &a, &k), FA_ERROR_CACHE_MISS, rt);
  CHECK(stats(rt).disk_hits == 0, "a FIFO entry was a hit");
  fa_runtime_destroy(rt);
  rt = make_rt(odd, 1); /* compiles and replaces the FIFO by an entry */
  CHECK_STATUS(fa_kernel_get(rt, &a, &k), FA_OK, rt);
  CHECK(stats(rt).compiles == 1 && stats(rt).disk_writes == 1, "FIFO entry not replaced");
  fa_runtime_destroy(rt);
  char moved[600];
  snprintf(moved, sizeof(moved), "%s/real.faa", odd);
  CHECK(rename(entry, moved) == 0 && symlink(moved, entry) == 0, "symlink entry");
  rt = make_rt(odd, 0);
  CHECK_STATUS(fa_kernel_get(rt, &a, &k), FA_ERROR_CACHE_MISS, rt);
  CHECK(stats(rt).disk_hits == 0, "an entry that is a symbolic link was followed");
  /* An artifact path is the caller's choice (a link is followed), but a
   * directory (once malloc(2^63 - 1): it seeks to LONG_MAX) or a FIFO is
   * an I/O error, not a block or an allocation. */
  CHECK_STATUS(fa_kernel_load_artifact_file(rt, odd, &k), FA_ERROR_IO, rt);
  CHECK(strstr(fa_runtime_last_error(rt), "is not a regular file") != NULL,
        "directory artifact: %s", fa_runtime_last_error(rt));
  char fifo[600];
  snprintf(fifo, sizeof(fifo), "%s/fifo.faa", odd);
  CHECK(mkfifo(fifo, 0600) == 0, "mkfifo %s", fifo);
  CHECK_STATUS(fa_kernel_load_artifact_file(rt, fifo, &k), FA_ERROR_IO, rt);
  CHECK(strstr(fa_runtime_last_error(rt), "is not a regular file") != NULL,
        "FIFO artifact: %s", fa_runtime_last_error(rt));
  CHECK_STATUS(fa_kernel_load_artifact_file(rt, entry, &k), FA_OK, rt);
  fa_runtime_destroy(rt);
  alarm(0);

  /* 10. A cache directory longer than the runtime's 1023 characters was
   * cut, and the cache written to the directory the prefix named: now the
   * disk cache is off (memory only), said in the last error and the stats,
   * and nothing is created. */
  char base[] = "/tmp/fa-rt-long-XXXXXX";
  CHECK(mkdtemp(base) != NULL, "mkdtemp");
  char longdir[1400];
  int used = snprintf(longdir, sizeof(longdir), "%s", base);
  while (used < 1100)
    used += snprintf(longdir + used, sizeof(longdir) - (size_t)used, "/%0200d", 0);
  rt = make_rt(longdir, 1);
  CHECK(rt != NULL, "a long cache directory failed the runtime");
  if (rt) {
    CHECK(stats(rt).disk_enabled == 0 &&
              strstr(fa_runtime_last_error(rt), "more than 1023: disk cache off") != NULL,
          "long cache directory: enabled %d, '%s'", stats(rt).disk_enabled,
          fa_runtime_last_error(rt));
    CHECK_STATUS(fa_kernel_get(rt, &a, &k), FA_OK, rt);
    CHECK(stats(rt).disk_writes == 0 && k && run_small(rt, k), "memory-only kernel");
    fa_runtime_destroy(rt);
  }
  CHECK(rmdir(base) == 0, "%s is not empty: the cut directory was created", base);

  char cmd[256];
  snprintf(cmd, sizeof(cmd), "rm -rf %s %s %s", dir, shared, odd);
  if (system(cmd) != 0)
    fprintf(stderr, "warning: cleanup failed\n");
  printf("%s\n", g_failures ? "FAILED" : "all checks passed");
  return g_failures ? 1 : 0;
}
