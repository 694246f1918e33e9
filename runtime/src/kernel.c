/*===- kernel.c - kernels: an artifact plus its loaded code ---------------===*/

#define _GNU_SOURCE
#include "internal.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

fa_status fa_kernel_create(fa_runtime *rt, void *bytes, size_t size,
                           const char *expected_key, fa_kernel **out) {
  fa_kernel *k = (fa_kernel *)calloc(1, sizeof(*k));
  if (!k) {
    free(bytes);
    return fa_fail(rt, FA_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  k->bytes = bytes;
  k->size = size;
  k->memfd = -1;
  fa_status st = fa_artifact_parse(rt, bytes, size, &k->artifact);
  if (st == FA_OK && expected_key && strcmp(expected_key, k->artifact.key) != 0)
    st = fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT,
                 "foreign artifact: key %s where %s was expected",
                 k->artifact.key, expected_key);
  if (st == FA_OK &&
      (k->artifact.config.target == FA_TARGET_HOST) !=
          (k->artifact.kind == FA_ARTIFACT_HOST_SO))
    st = fa_fail(rt, FA_ERROR_CORRUPT_ARTIFACT,
                 "the payload kind does not match the config's target");
  if (st == FA_OK && k->artifact.kind == FA_ARTIFACT_CUBIN &&
      strcmp(k->artifact.grid, "persistent") != 0)
    st = fa_fail(rt, FA_ERROR_UNSUPPORTED,
                 "grid policy '%s': this runtime launches persistent grids only",
                 k->artifact.grid);
  /* Host code loads now; a cubin loads at its first launch, after the
   * call's inputs have been checked (so that checks need no driver). */
  if (st == FA_OK && k->artifact.kind == FA_ARTIFACT_HOST_SO)
    st = fa_host_load(rt, k);
  if (st != FA_OK) {
    fa_kernel_destroy(k);
    return st;
  }
  *out = k;
  return FA_OK;
}

void fa_kernel_destroy(fa_kernel *k) {
  if (!k)
    return;
  fa_cuda_unload(k);
  if (k->dl_handle)
    dlclose(k->dl_handle);
  if (k->memfd >= 0)
    close(k->memfd);
  fa_artifact_release(&k->artifact);
  free(k->bytes);
  free(k);
}

const fa_attention_config *fa_kernel_config(const fa_kernel *kernel) {
  return kernel ? &kernel->artifact.config : NULL;
}

const char *fa_kernel_key(const fa_kernel *kernel) {
  return kernel ? kernel->artifact.key : NULL;
}
