/*===- cache.c - the artifact cache: in-memory LRU + a disk directory -----===*
 *
 * Disk entries are <dir>/<key>.faa, written atomically: a temporary file in
 * the same directory (mkstemp), fsync, then rename(2), so readers in other
 * processes see either no entry or a whole one and concurrent writers of the
 * same key simply replace each other's identical bytes. An entry that fails
 * validation (truncated, checksum, foreign key) is a miss and is rebuilt, and
 * so is one that is not a private regular file (a link, a FIFO, a device:
 * opened with O_NOFOLLOW | O_NONBLOCK and checked before a byte is read). A
 * directory that cannot be created or written turns the disk cache off for
 * this runtime (memory only); nothing fails because of it.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
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

void *fa_read_regular_file(const char *path, bool nofollow, struct stat *st,
                           size_t *size, fa_status *status, char *why, size_t n) {
  *status = FA_ERROR_IO;
  *size = 0;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
  if (fd < 0) {
    int e = errno;
    snprintf(why, n, "cannot open %s: %s", path,
             nofollow && e == ELOOP ? "a symbolic link" : strerror(e));
    errno = e;
    return NULL;
  }
  void *bytes = NULL;
  if (fstat(fd, st) != 0) {
    snprintf(why, n, "cannot stat %s: %s", path, strerror(errno));
  } else if (!S_ISREG(st->st_mode)) {
    snprintf(why, n, "%s is not a regular file", path);
  } else if ((uintmax_t)st->st_size > SIZE_MAX / 2) {
    snprintf(why, n, "%s is too large (%jd bytes)", path, (intmax_t)st->st_size);
  } else if (!(bytes = malloc(st->st_size > 0 ? (size_t)st->st_size : 1))) {
    *status = FA_ERROR_OUT_OF_MEMORY;
    snprintf(why, n, "out of memory for %s (%jd bytes)", path, (intmax_t)st->st_size);
  } else {
    size_t want = (size_t)st->st_size, got = 0;
    while (got < want) {
      ssize_t r = read(fd, (char *)bytes + got, want - got);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0) {
        snprintf(why, n, "cannot read %s: %s", path,
                 r < 0 ? strerror(errno) : "shorter than its size (changed while read)");
        free(bytes);
        bytes = NULL;
        break;
      }
      got += (size_t)r;
    }
    if (bytes) {
      *size = want;
      *status = FA_OK;
    }
  }
  close(fd);
  return bytes;
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
  /* Not through a link, nor a FIFO or device (it would block the caller),
   * and only our own entries: an entry another user could have written (not
   * ours, or group/world-writable) is never executed. */
  struct stat st;
  size_t size = 0;
  fa_status read_status;
  char why[1400];
  void *bytes = fa_read_regular_file(path, /*nofollow=*/true, &st, &size, &read_status,
                                     why, sizeof(why));
  if (!bytes) {
    if (errno != ENOENT)
      fa_debug("ignoring cache entry: %s", why);
    return FA_ERROR_CACHE_MISS;
  }
  if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
    free(bytes);
    fa_debug("ignoring %s: not a private regular file of this user", path);
    return FA_ERROR_CACHE_MISS;
  }
  fa_status status = fa_kernel_create(rt, bytes, size, key, kernel);
  if (status != FA_OK) {
    /* Corrupt, foreign, or not loadable here: rebuild it. */
    fa_debug("disk entry %s is unusable (%s): rebuilding", path, rt->error);
    rt->stats.rebuilt_corrupt++;
    return FA_ERROR_CACHE_MISS;
  }
  return FA_OK;
}

bool fa_write_all(int fd, const void *p, size_t n) {
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
  bool ok = fa_write_all(fd, k->bytes, k->size) && fsync(fd) == 0;
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
