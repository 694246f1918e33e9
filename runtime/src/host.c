/*===- host.c - the host backend ------------------------------------------===*
 *
 * A host artifact's payload is an ELF shared object exporting the packed
 * entry `void entry(void **args)`: one pointer per field of each argument's
 * strided-memref descriptor (allocated, aligned, offset, sizes..., strides...)
 * in the order of the metadata's "args". It is loaded from an anonymous
 * memory file (memfd_create) with dlopen, never written to disk.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
#include "internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

fa_status fa_host_load(fa_runtime *rt, fa_kernel *k) {
  int fd = memfd_create("flashattn-artifact", MFD_CLOEXEC);
  if (fd < 0)
    return fa_fail(rt, FA_ERROR_LOAD_FAILED, "memfd_create failed");
  k->memfd = fd;
  const unsigned char *p = k->artifact.payload;
  size_t left = k->artifact.payload_size;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w <= 0)
      return fa_fail(rt, FA_ERROR_LOAD_FAILED, "writing the shared object failed");
    p += w;
    left -= (size_t)w;
  }
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  k->dl_handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!k->dl_handle)
    return fa_fail(rt, FA_ERROR_LOAD_FAILED, "dlopen of the artifact failed: %s",
                   dlerror());
  *(void **)(&k->host_entry) = dlsym(k->dl_handle, k->artifact.entry);
  if (!k->host_entry)
    return fa_fail(rt, FA_ERROR_LOAD_FAILED, "the artifact lacks entry '%s'",
                   k->artifact.entry);
  return FA_OK;
}

typedef struct {
  void *allocated, *aligned;
  int64_t offset, sizes[4], strides[4];
} descriptor;

fa_status fa_host_launch(fa_runtime *rt, fa_kernel *k,
                         const fa_tensor *const *tensors, int n) {
  (void)rt;
  descriptor d[FA_MAX_ARGS];
  void *args[FA_MAX_ARGS * 11];
  int a = 0;
  for (int i = 0; i < n; ++i) {
    const fa_tensor *t = tensors[i];
    d[i].allocated = d[i].aligned = t->data;
    d[i].offset = 0;
    int64_t stride = 1;
    for (int r = t->rank - 1; r >= 0; --r) {
      d[i].sizes[r] = t->shape[r];
      d[i].strides[r] = stride;
      stride *= t->shape[r];
    }
    args[a++] = &d[i].allocated;
    args[a++] = &d[i].aligned;
    args[a++] = &d[i].offset;
    for (int r = 0; r < t->rank; ++r)
      args[a++] = &d[i].sizes[r];
    for (int r = 0; r < t->rank; ++r)
      args[a++] = &d[i].strides[r];
  }
  k->host_entry(args);
  return FA_OK;
}
