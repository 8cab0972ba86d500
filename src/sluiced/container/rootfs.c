#include "container/rootfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "fsutil.h"

/* The kernel takes at most one page of mount options. */
#define MOUNT_DATA_MAX 4096

static int is_mounted(const char *path)
{
    struct stat a, b;
    SL_AUTOFREE char *parent = sl_path_join(path, "..");
    if (!parent || stat(path, &a) < 0 || stat(parent, &b) < 0)
        return 0;
    return a.st_dev != b.st_dev;
}

char *sl_rootfs_upper_dir(const char *dir)
{
    return sl_path_join(dir, "upper");
}

int sl_rootfs_mount(const char *dir, const char *const *layers, size_t n, sl_error *e)
{
    SL_AUTOFREE char *upper = sl_rootfs_upper_dir(dir);
    SL_AUTOFREE char *work = sl_path_join(dir, "work");
    SL_AUTOFREE char *rootfs = sl_path_join(dir, "rootfs");
    SL_AUTOFREE char *empty = sl_path_join(dir, "empty");
    if (!upper || !work || !rootfs || !empty)
        return sl_error_set(e, ENOMEM, "rootfs");
    if (sl_mkdir_p(upper, 0755, e) < 0 || sl_mkdir_p(work, 0700, e) < 0 ||
        sl_mkdir_p(rootfs, 0755, e) < 0)
        return -1;
    if (is_mounted(rootfs))
        return 0;
    char data[MOUNT_DATA_MAX];
    if (n == 0 && sl_mkdir_p(empty, 0755, e) < 0)
        return -1;
    size_t off = (size_t)snprintf(data, sizeof(data), "lowerdir=");
    if (n == 0)
        off += (size_t)snprintf(data + off, sizeof(data) - off, "%s", empty);
    for (size_t i = n; i-- > 0 && off < sizeof(data);)
        off += (size_t)snprintf(data + off, sizeof(data) - off, "%s%s", layers[i], i ? ":" : "");
    if (off < sizeof(data))
        off += (size_t)snprintf(data + off, sizeof(data) - off, ",upperdir=%s,workdir=%s", upper,
                                work);
    if (off >= sizeof(data))
        return sl_error_set(e, 0, "overlay options for %zu layers exceed %d bytes", n,
                            MOUNT_DATA_MAX);
    if (mount("overlay", rootfs, "overlay", 0, data) < 0)
        return sl_error_set(e, errno, "mount overlay on %s", rootfs);
    return 0;
}

int sl_rootfs_umount(const char *dir, sl_error *e)
{
    SL_AUTOFREE char *rootfs = sl_path_join(dir, "rootfs");
    if (!rootfs)
        return sl_error_set(e, ENOMEM, "rootfs");
    if (umount2(rootfs, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
        return sl_error_set(e, errno, "unmount %s", rootfs);
    return 0;
}
