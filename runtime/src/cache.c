/*===- cache.c - the artifact cache: in-memory LRU + a disk directory -----===*
 *
 * Disk entries are <dir>/<key>.faa, written atomically: a temporary file in
 * the same directory (mkstemp), fsync, then rename(2), so readers in other
 * processes see either no entry or a whole one and concurrent writers of the
 * same key simply replace each other's identical bytes. An entry that fails
 * validation (truncated, checksum, foreign key) is a miss and is rebuilt. A
 * directory that cannot be created or written turns the disk cache off for
 * this runtime (memory only); nothing fails because of it.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void unlink_lru(fa_runtime *rt, fa_kernel *k) {
  if (k->prev)
    k->prev->next = k->next;
  else
    rt->lru_head = k->next;
  if (k->next)
    k->next->prev = k->prev;
  else
    rt->lru_tail = k->prev;
  k->prev = k->next = NULL;
}

static void push_front(fa_runtime *rt, fa_kernel *k) {
  k->prev = NULL;
  k->next = rt->lru_head;
  if (rt->lru_head)
    rt->lru_head->prev = k;
  rt->lru_head = k;
  if (!rt->lru_tail)
    rt->lru_tail = k;
}

fa_kernel *fa_cache_lookup_memory(fa_runtime *rt, const char *key) {
  for (fa_kernel *k = rt->lru_head; k; k = k->next)
    if (strcmp(k->artifact.key, key) == 0) {
      unlink_lru(rt, k);
      push_front(rt, k);
      return k;
    }
  /* A kernel dropped from the LRU is still loaded: take it back rather than
   * loading a second copy. */
  for (fa_kernel **link = &rt->evicted; *link; link = &(*link)->next)
    if (strcmp((*link)->artifact.key, key) == 0) {
      fa_kernel *k = *link;
      *link = k->next;
      k->next = NULL;
      fa_cache_insert(rt, k, /*write=*/false);
      return k;
    }
  return NULL;
}

static void entry_path(fa_runtime *rt, const char *key, char *buf, size_t n) {
  snprintf(buf, n, "%s/%s.faa", rt->cache_dir, key);
}

fa_status fa_cache_lookup_disk(fa_runtime *rt, const char *key,
                               fa_kernel **kernel) {
  if (!rt->disk_enabled)
    return FA_ERROR_CACHE_MISS;
  char path[1200];
  entry_path(rt, key, path, sizeof(path));
  FILE *f = fopen(path, "rb");
  if (!f)
    return FA_ERROR_CACHE_MISS;
  /* Only our own entries are loaded: an entry another user could have
   * written (not ours, or group/world-writable) is never executed. */
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || st.st_uid != geteuid() ||
      (st.st_mode & (S_IWGRP | S_IWOTH)) || !S_ISREG(st.st_mode)) {
    fclose(f);
    fa_debug("ignoring %s: not a private regular file of this user", path);
    return FA_ERROR_CACHE_MISS;
  }
  void *bytes = NULL;
  long size = -1;
  if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 &&
      fseek(f, 0, SEEK_SET) == 0) {
    bytes = malloc(size > 0 ? (size_t)size : 1);
    if (bytes && fread(bytes, 1, (size_t)size, f) != (size_t)size) {
      free(bytes);
      bytes = NULL;
    }
  }
  fclose(f);
  if (!bytes)
    return FA_ERROR_CACHE_MISS;
  fa_status status = fa_kernel_create(rt, bytes, (size_t)size, key, kernel);
  if (status != FA_OK) {
    /* Corrupt, foreign, or not loadable here: rebuild it. */
    fa_debug("disk entry %s is unusable (%s): rebuilding", path, rt->error);
    rt->stats.rebuilt_corrupt++;
    return FA_ERROR_CACHE_MISS;
  }
  return FA_OK;
}

static bool write_all(int fd, const void *p, size_t n) {
  const char *c = (const char *)p;
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    c += w;
    n -= (size_t)w;
  }
  return true;
}

static void write_disk(fa_runtime *rt, fa_kernel *k) {
  if (!rt->disk_enabled)
    return;
  char tmp[1200], path[1200];
  snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", rt->cache_dir, k->artifact.key);
  entry_path(rt, k->artifact.key, path, sizeof(path));
  int fd = mkstemp(tmp); /* mode 0600 */
  if (fd < 0) {
    fa_debug("cache directory %s is not writable (%s): memory only",
             rt->cache_dir, strerror(errno));
    rt->stats.disk_write_failures++;
    rt->disk_enabled = false;
    return;
  }
  bool ok = write_all(fd, k->bytes, k->size) && fsync(fd) == 0;
  ok = (close(fd) == 0) && ok;
  if (ok)
    ok = rename(tmp, path) == 0;
  if (!ok) {
    unlink(tmp);
    rt->stats.disk_write_failures++;
    fa_debug("writing cache entry %s failed: %s", path, strerror(errno));
    return;
  }
  rt->stats.disk_writes++;
}

void fa_cache_insert(fa_runtime *rt, fa_kernel *k, bool write) {
  push_front(rt, k);
  rt->memory_count++;
  if (write)
    write_disk(rt, k);
  while (rt->memory_count > rt->memory_capacity && rt->lru_tail != k) {
    /* Evicted kernels stay valid (callers may hold them) until the runtime
     * is destroyed; they are only dropped from the lookup list. */
    fa_kernel *old = rt->lru_tail;
    unlink_lru(rt, old);
    rt->memory_count--;
    old->next = rt->evicted;
    rt->evicted = old;
  }
}

void fa_cache_destroy(fa_runtime *rt) {
  for (fa_kernel *lists[2] = {rt->lru_head, rt->evicted}, **l = lists;
       l < lists + 2; ++l)
    for (fa_kernel *k = *l; k;) {
      fa_kernel *next = k->next;
      fa_kernel_destroy(k);
      k = next;
    }
  rt->lru_head = rt->lru_tail = rt->evicted = NULL;
  rt->memory_count = 0;
}
