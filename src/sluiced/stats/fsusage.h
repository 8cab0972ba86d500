/* Disk usage of a directory tree, counted the way `du` does: the blocks
 * (st_blocks * 512) and the number of distinct inodes of everything under
 * it, the top directory included, hard-linked files once, never following
 * symlinks or crossing into other file systems. Used for a container's
 * writable layer (its overlay upper directory). */
#ifndef SL_STATS_FSUSAGE_H
#define SL_STATS_FSUSAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "sys_error.h"

/* Hard-linked inodes remembered per walk to count them once; beyond, a
 * further link of one of them counts again (over-counts, never under). */
#define SL_FSUSAGE_MAX_LINKS 65536
/* Directory file descriptors nftw holds open at once. */
#define SL_FSUSAGE_OPEN_FDS 32

typedef struct sl_fsusage {
    uint64_t bytes;
    uint64_t inodes;
    bool partial; /* an entry could not be read; the figures are a floor */
} sl_fsusage;

/* Walks dir. Returns 0 (a vanished entry or a unreadable subdirectory sets
 * u->partial), or -1 (*e) when dir itself cannot be read. Thread-safe
 * (state is per thread); blocks for the walk: call it off the loop. */
int sl_fsusage_walk(const char *dir, sl_fsusage *u, sl_error *e);

#endif
