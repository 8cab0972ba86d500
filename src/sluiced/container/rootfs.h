/* Container root file systems: an overlayfs over the image's unpacked
 * layers, with the container's writable layer in its own directory. */
#ifndef SL_ROOTFS_H
#define SL_ROOTFS_H

#include <stddef.h>
#include "sys_error.h"

/* Mounts <dir>/rootfs as overlay of layers (lowest first) with
 * <dir>/upper and <dir>/work; an empty image gets an empty lower layer.
 * Mounting an already mounted rootfs is fine. Returns 0 or -1 (*e). */
int sl_rootfs_mount(const char *dir, const char *const *layers, size_t n, sl_error *e);
/* The writable layer of the rootfs at dir (<dir>/upper), malloc'd; NULL on
 * ENOMEM. */
char *sl_rootfs_upper_dir(const char *dir);
/* Unmounts <dir>/rootfs (lazily; not mounted is fine). Returns 0 or -1. */
int sl_rootfs_umount(const char *dir, sl_error *e);

#endif
