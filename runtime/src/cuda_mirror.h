/*===- cuda_mirror.h - device mirrors of host block_tables ---------*- C -*-===*/

#ifndef FLASHATTN_RT_CUDA_MIRROR_H
#define FLASHATTN_RT_CUDA_MIRROR_H

#include "cuda_driver.h"

#include <stddef.h>
#include <stdint.h>

#include <xxhash.h>

/* Device mirrors of host block_tables kept per stream (block_table_mirror):
 * a decode step's layers share one table; a few more serve calls that
 * alternate between tables (e.g. a draft and a target model) without a
 * copy each. */
#define FA_MIRRORS_PER_STREAM 4
/* A mirror whose table changed in at most FA_MIRROR_SPANS runs of entries
 * (runs fewer than FA_MIRROR_GAP equal entries apart count as one) is
 * patched, run by run, instead of refilled. */
#define FA_MIRROR_SPANS 8
#define FA_MIRROR_GAP 16

/* One mirror (a slot of a stream, cuda_stream.h): address and capacity,
 * the size and XXH3-128 of the contents held (valid when bytes > 0), a host
 * copy of them (`shadow`, cap bytes: what a patch is found against and
 * copied from), and the stream's call count at its last use (the least
 * recent is refilled). */
typedef struct fa_table_mirror {
  uint64_t ptr;
  size_t cap, bytes;
  XXH128_hash_t hash;
  int32_t *shadow;
  uint64_t used;
} fa_table_mirror;

/* A host block_table's device mirror on `stream` (neither capturing nor the
 * per-thread default stream), in the runtime's context: its device address,
 * its contents those of `bt` once the copies enqueued on the stream land;
 * 0 when the stream has no slot or a driver call or allocation fails (the
 * caller copies the page lists with the tile table instead). */
uint64_t fa_cuda_block_table_mirror(fa_cuda *cu, void *stream, const fa_tensor *bt) FA_HIDDEN;

#endif
