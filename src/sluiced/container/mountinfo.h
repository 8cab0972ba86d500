/* /proc/self/mountinfo: which mount holds a path, and its propagation
 * (proc(5): "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 ..."; the
 * optional fields before "-" carry shared:N and master:N). */
#ifndef SL_MOUNTINFO_H
#define SL_MOUNTINFO_H

#include <stdbool.h>
#include <stddef.h>

#include "sys_error.h"

/* Bytes of /proc/self/mountinfo sluiced reads at most. */
#define SL_MOUNTINFO_MAX (16u << 20)
/* Bytes of a mount point path. */
#define SL_MOUNTINFO_PATH_MAX 4096

typedef struct sl_mount_prop {
    char mountpoint[SL_MOUNTINFO_PATH_MAX]; /* unescaped */
    bool shared;                            /* in a peer group (shared:N) */
    bool slave;                             /* receives from a master (master:N) */
} sl_mount_prop;

/* The mount that holds path (absolute, without symlinks): the entry with
 * the longest mount point that is path or a parent directory of it, the
 * last such entry when several are stacked. Returns 0, or -1 when the
 * text has none (a malformed line is skipped). */
int sl_mountinfo_find(const char *text, const char *path, sl_mount_prop *out);

/* Reads /proc/self/mountinfo and finds path. Returns 0 or -1 (*e). */
int sl_mountinfo_lookup(const char *path, sl_mount_prop *out, sl_error *e);

#endif
