/*===- compile.c - the compiler on a cache miss, out of process -----------===*
 *
 * A failure inside the compiler (an LLVM abort, a crash, a compile that
 * never ends) must not take down the process that asked for a kernel. The
 * compiler library's function runs in a forked child; the artifact comes
 * back through a pipe, and the parent waits at most compile_timeout_s
 * seconds (then kills the child). A child killed by a signal, or one that
 * ends without a whole answer, is FA_ERROR_COMPILE_FAILED with the reason.
 * compile_timeout_s < 0 calls the compiler in the calling process instead.
 *
 * The child runs only the compiler (no CUDA, no runtime state) and leaves
 * with _exit. The parent sees one answer: a header (status, size, message)
 * then the artifact's bytes.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE /* pipe2, strsignal */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What the child writes before the artifact's bytes. */
typedef struct {
  int32_t status;
  uint32_t reserved;
  uint64_t size;
  char error[FA_ERROR_SIZE];
} answer_header;

/* The child: compile, answer, leave. */
static void run_child(int fd, fa_compiler_compile_fn fn, const fa_attention_config *config) {
  answer_header h = {0};
  void *bytes = NULL;
  size_t size = 0;
  h.status = fn(config, &bytes, &size, h.error, sizeof(h.error));
  h.size = h.status == FA_OK ? size : 0;
  bool ok = fa_write_all(fd, &h, sizeof(h)) && (h.size == 0 || fa_write_all(fd, bytes, size));
  _exit(ok ? 0 : 1);
}

static int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Reads the child's answer until EOF or the deadline. *buf (malloc) holds
 * *len bytes; false on the deadline or an allocation / read failure. */
static bool read_answer(int fd, int64_t deadline_ms, char **buf, size_t *len, bool *late) {
  size_t cap = 1 << 16;
  *buf = malloc(cap);
  *len = 0;
  *late = false;
  if (!*buf)
    return false;
  for (;;) {
    int64_t left = deadline_ms - now_ms();
    if (left <= 0) {
      *late = true;
      return false;
    }
    struct pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return false;
    if (r == 0)
      continue;
    if (*len == cap) {
      char *grown = realloc(*buf, cap * 2);
      if (!grown)
        return false;
      *buf = grown;
      cap *= 2;
    }
    ssize_t n = read(fd, *buf + *len, cap - *len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return false;
    if (n == 0)
      return true;
    *len += (size_t)n;
  }
}

/* Why a child that gave no whole answer ended. */
static fa_status child_failure(fa_runtime *rt, const char *key, pid_t pid, bool late,
                               int timeout_s) {
  int ws = 0;
  if (late) {
    kill(pid, SIGKILL);
    waitpid(pid, &ws, 0);
    return fa_fail(rt, FA_ERROR_COMPILE_FAILED,
                   "compiling %s did not finish within %d s (the compiler's process was "
                   "killed; FLASHATTN_COMPILE_TIMEOUT or compile_timeout_s sets the limit)",
                   key, timeout_s);
  }
  if (waitpid(pid, &ws, 0) == pid && WIFSIGNALED(ws))
    return fa_fail(rt, FA_ERROR_COMPILE_FAILED,
                   "the compiler crashed compiling %s (its process ended with signal %d, %s)",
                   key, WTERMSIG(ws), strsignal(WTERMSIG(ws)));
  return fa_fail(rt, FA_ERROR_COMPILE_FAILED,
                 "the compiler's process ended without an answer compiling %s", key);
}

/* Turns the child's answer into bytes or a status. */
static fa_status take_answer(fa_runtime *rt, const char *key, char *buf, size_t len,
                             void **bytes, size_t *size) {
  answer_header h;
  memcpy(&h, buf, sizeof(h));
  h.error[sizeof(h.error) - 1] = '\0';
  if (h.status != FA_OK)
    return fa_fail(rt, FA_ERROR_COMPILE_FAILED, "compiling %s failed: %s", key, h.error);
  if (len - sizeof(h) != h.size)
    return fa_fail(rt, FA_ERROR_COMPILE_FAILED,
                   "the compiler's process sent %zu of %llu artifact bytes compiling %s",
                   len - sizeof(h), (unsigned long long)h.size, key);
  *size = (size_t)h.size;
  *bytes = malloc(*size ? *size : 1);
  if (!*bytes)
    return fa_fail(rt, FA_ERROR_OUT_OF_MEMORY, "out of memory for a %zu-byte artifact", *size);
  memcpy(*bytes, buf + sizeof(h), *size);
  return FA_OK;
}

static fa_status compile_in_process(fa_runtime *rt, fa_compiler_compile_fn fn,
                                    const fa_attention_config *config, const char *key,
                                    void **bytes, size_t *size) {
  char error[FA_ERROR_SIZE] = "";
  int st = fn(config, bytes, size, error, sizeof(error));
  if (st == FA_OK)
    return FA_OK;
  free(*bytes);
  *bytes = NULL;
  return fa_fail(rt, FA_ERROR_COMPILE_FAILED, "compiling %s failed: %s", key, error);
}

fa_status fa_compile_artifact(fa_runtime *rt, fa_compiler_compile_fn fn,
                              const fa_attention_config *config, const char *key,
                              void **bytes, size_t *size) {
  *bytes = NULL;
  *size = 0;
  if (rt->compile_timeout_s < 0)
    return compile_in_process(rt, fn, config, key, bytes, size);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return fa_fail(rt, FA_ERROR_COMPILE_FAILED, "no pipe for the compiler's process: %s",
                   strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return fa_fail(rt, FA_ERROR_COMPILE_FAILED, "cannot start the compiler's process: %s",
                   strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    run_child(fds[1], fn, config);
  }
  close(fds[1]);
  char *buf = NULL;
  size_t len = 0;
  bool late = false;
  bool done = read_answer(fds[0], now_ms() + (int64_t)rt->compile_timeout_s * 1000, &buf, &len,
                          &late);
  close(fds[0]);
  fa_status st;
  if (!done || len < sizeof(answer_header)) {
    st = child_failure(rt, key, pid, late, rt->compile_timeout_s);
  } else {
    waitpid(pid, NULL, 0);
    st = take_answer(rt, key, buf, len, bytes, size);
  }
  free(buf);
  return st;
}
