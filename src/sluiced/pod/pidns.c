#include "pod/pidns.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "fsutil.h"

#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif

char *sl_pod_pidns_file(const char *ns_dir)
{
    return ns_dir && *ns_dir ? sl_path_join(ns_dir, "pid") : NULL;
}

char *sl_pod_pidns_path(const char *ns_dir)
{
    char *p = sl_pod_pidns_file(ns_dir);
    struct statfs fs;
    /* Only a mounted namespace counts: the bare file would join nothing. */
    if (p && (statfs(p, &fs) < 0 || fs.f_type != NSFS_MAGIC)) {
        free(p);
        return NULL;
    }
    return p;
}

int sl_pod_pidns_release(const char *ns_dir, sl_error *e)
{
    SL_AUTOFREE char *p = sl_pod_pidns_file(ns_dir);
    if (!p)
        return 0;
    int rc = 0;
    if (umount2(p, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
        rc = sl_error_set(e, errno, "unmount %s", p);
    if (unlink(p) < 0 && errno != ENOENT)
        rc = sl_error_set(e, errno, "remove %s", p);
    return rc;
}
