#include "container/rootfs.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/idmap.h"
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

char *sl_rootfs_idmap_dir(const char *dir)
{
    return sl_path_join(dir, "idmap");
}

/* Detaches and removes every mount point under <dir>/idmap whose name
 * starts with prefix ("" for all). */
static int detach_idmapped(const char *dir, const char *prefix, sl_error *e)
{
    SL_AUTOFREE char *idmap = sl_rootfs_idmap_dir(dir);
    DIR *d = idmap ? opendir(idmap) : NULL;
    if (!d)
        return !idmap            ? sl_error_set(e, ENOMEM, "rootfs")
               : errno == ENOENT ? 0
                                 : sl_error_set(e, errno, "open %s", idmap);
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || strncmp(de->d_name, prefix, strlen(prefix)))
            continue;
        SL_AUTOFREE char *p = sl_path_join(idmap, de->d_name);
        if (!p)
            rc = sl_error_set(e, ENOMEM, "rootfs");
        else if (umount2(p, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
            rc = sl_error_set(e, errno, "unmount %s", p);
        else if (rmdir(p) < 0 && errno != ENOENT)
            rc = sl_error_set(e, errno, "remove %s", p);
    }
    closedir(d);
    return rc;
}

/* Each layer idmapped at <dir>/idmap/layer-N, for the overlay's lowerdir:
 * the overlay keeps its own references, so these are detached after. */
static int idmap_layers(const char *dir, const char *const *layers, size_t n, int userns_fd,
                        char **out, sl_error *e)
{
    SL_AUTOFREE char *idmap = sl_rootfs_idmap_dir(dir);
    /* 0711: runc binds from here as the container's root */
    if (!idmap || sl_mkdir_p(idmap, 0711, e) < 0)
        return idmap ? -1 : sl_error_set(e, ENOMEM, "rootfs");
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof(name), "layer-%zu", i);
        if (!(out[i] = sl_path_join(idmap, name)))
            return sl_error_set(e, ENOMEM, "rootfs");
        if (mkdir(out[i], 0700) < 0 && errno != EEXIST)
            return sl_error_set(e, errno, "mkdir %s", out[i]);
        if (sl_idmap_mount(layers[i], out[i], userns_fd, false, e) < 0)
            return -1;
    }
    return 0;
}

/* <dir>/rootfs as overlay of layers over <dir>/upper and <dir>/work (the
 * three paths already made by the caller). */
static int overlay(const char *dir, const char *upper, const char *work, const char *rootfs,
                   const char *const *layers, size_t n, sl_error *e)
{
    SL_AUTOFREE char *empty = sl_path_join(dir, "empty");
    if (!empty)
        return sl_error_set(e, ENOMEM, "rootfs");
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

int sl_rootfs_mount(const char *dir, const char *const *layers, size_t n,
                    const sl_rootfs_userns *userns, sl_error *e)
{
    SL_AUTOFREE char *upper = sl_rootfs_upper_dir(dir);
    SL_AUTOFREE char *work = sl_path_join(dir, "work");
    SL_AUTOFREE char *rootfs = sl_path_join(dir, "rootfs");
    if (!upper || !work || !rootfs)
        return sl_error_set(e, ENOMEM, "rootfs");
    if (sl_mkdir_p(upper, 0755, e) < 0 || sl_mkdir_p(work, 0700, e) < 0 ||
        sl_mkdir_p(rootfs, 0755, e) < 0)
        return -1;
    if (is_mounted(rootfs))
        return 0;
    if (!userns)
        return overlay(dir, upper, work, rootfs, layers, n, e);
    /* the overlay's root directory is the upper one's: the container's root
     * owns it, as it owns / of an image through the idmapped layers */
    if (chown(upper, userns->root_uid, userns->root_gid) < 0)
        return sl_error_set(e, errno, "chown %s", upper);
    char **mapped = calloc(n + 1, sizeof(*mapped));
    if (!mapped)
        return sl_error_set(e, ENOMEM, "rootfs");
    int rc = idmap_layers(dir, layers, n, userns->fd, mapped, e);
    if (rc == 0)
        rc = overlay(dir, upper, work, rootfs, (const char *const *)mapped, n, e);
    sl_error ignored;
    detach_idmapped(dir, "layer-", rc < 0 ? &ignored : e);
    for (size_t i = 0; i < n; i++)
        free(mapped[i]);
    free(mapped);
    return rc;
}

int sl_rootfs_umount(const char *dir, sl_error *e)
{
    SL_AUTOFREE char *rootfs = sl_path_join(dir, "rootfs");
    if (!rootfs)
        return sl_error_set(e, ENOMEM, "rootfs");
    if (umount2(rootfs, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
        return sl_error_set(e, errno, "unmount %s", rootfs);
    return detach_idmapped(dir, "", e);
}
