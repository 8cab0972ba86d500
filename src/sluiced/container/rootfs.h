/* Container root file systems: an overlayfs over the image's unpacked
 * layers, with the container's writable layer in its own directory. */
#ifndef SL_ROOTFS_H
#define SL_ROOTFS_H

#include <stddef.h>
#include <sys/types.h>
#include "sys_error.h"

/* For a container in a user namespace of its pod: the namespace (an open
 * fd) and the host ids its root maps to. */
typedef struct sl_rootfs_userns {
    int fd;
    uid_t root_uid;
    gid_t root_gid;
} sl_rootfs_userns;

/* Mounts <dir>/rootfs as overlay of layers (lowest first) with
 * <dir>/upper and <dir>/work; an empty image gets an empty lower layer.
 * With userns, the layers are idmapped through it (the image's root-owned
 * files are the container root's, as its other ids are the container's),
 * and the upper layer belongs to the container's root, so what it creates
 * and copies up is stored under the host ids it maps to. Mounting an
 * already mounted rootfs is fine. Returns 0 or -1 (*e). */
int sl_rootfs_mount(const char *dir, const char *const *layers, size_t n,
                    const sl_rootfs_userns *userns, sl_error *e);
/* The writable layer of the rootfs at dir (<dir>/upper), malloc'd; NULL on
 * ENOMEM. */
char *sl_rootfs_upper_dir(const char *dir);
/* Where idmapped mounts of the container are attached (<dir>/idmap):
 * sl_rootfs_umount detaches whatever is left there. malloc'd. */
char *sl_rootfs_idmap_dir(const char *dir);
/* Unmounts <dir>/rootfs and the mounts under <dir>/idmap (lazily; not
 * mounted is fine). Returns 0 or -1. */
int sl_rootfs_umount(const char *dir, sl_error *e);

#endif
