#include "container/idmap.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsutil.h"

static int write_map(pid_t pid, const char *file, const sl_idmap *m, sl_error *e)
{
    char path[64], text[64];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    int n = snprintf(text, sizeof(text), "%u %u %u\n", m->container_id, m->host_id, m->length);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return sl_error_set(e, errno, "open %s", path);
    ssize_t w = write(fd, text, (size_t)n);
    int err = errno;
    close(fd);
    if (w != n)
        return sl_error_set(e, w < 0 ? err : EIO, "write \"%u %u %u\" to %s", m->container_id,
                            m->host_id, m->length, path);
    return 0;
}

int sl_idmap_write(pid_t pid, const sl_idmap *uid, const sl_idmap *gid, sl_error *e)
{
    return write_map(pid, "uid_map", uid, e) < 0 || write_map(pid, "gid_map", gid, e) < 0 ? -1 : 0;
}

int sl_userns_open(const sl_idmap *uid, const sl_idmap *gid, sl_error *e)
{
    int ready[2], done[2];
    if (sl_helper_pipes(ready, done, e) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) { /* async-signal-safe calls only: forked from a threaded process */
        sl_close_fds_except(ready[1], done[0]);
        char r = unshare(CLONE_NEWUSER) < 0 ? 1 : 0, c;
        if (write(ready[1], &r, 1) != 1 || r)
            _exit(1);
        (void)!read(done[0], &c, 1); /* EOF: the parent has what it needs */
        _exit(0);
    }
    close(ready[1]);
    close(done[0]);
    int fd = -1;
    char r = 1;
    if (pid < 0)
        sl_error_set(e, errno, "fork");
    else if (read(ready[0], &r, 1) != 1 || r)
        sl_error_set(e, 0, "cannot make a user namespace (unshare failed)");
    else if (sl_idmap_write(pid, uid, gid, e) == 0) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
            sl_error_set(e, errno, "open %s", path);
    }
    close(done[1]);
    close(ready[0]);
    if (pid > 0)
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
    return fd;
}

int sl_idmap_mount(const char *src, const char *dst, int userns_fd, bool recursive, sl_error *e)
{
    int tree = open_tree(AT_FDCWD, src,
                         OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0));
    if (tree < 0)
        return sl_error_set(e, errno, "clone the mount of %s", src);
    struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)userns_fd};
    int rc = 0;
    if (mount_setattr(tree, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr,
                      sizeof(attr)) < 0)
        rc = sl_error_set(e, errno, "idmap the mount of %s", src);
    else if (move_mount(tree, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        rc = sl_error_set(e, errno, "attach the idmapped mount of %s at %s", src, dst);
    close(tree);
    return rc;
}

bool sl_idmap_supported(const char *path, char *why, size_t why_size)
{
    /* any mapping will do: only whether the kernel and file system take it */
    sl_idmap m = {.container_id = 0, .host_id = 65536, .length = 65536};
    sl_error e;
    int ns = sl_userns_open(&m, &m, &e);
    int tree = ns < 0 ? -1 : open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    bool ok = false;
    if (ns < 0)
        snprintf(why, why_size, "%s", e.msg);
    else if (tree < 0)
        snprintf(why, why_size, "open_tree(%s): %s", path, strerror(errno));
    else {
        struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)ns};
        ok = mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof(attr)) == 0;
        if (!ok)
            snprintf(why, why_size, "idmapped mounts of %s: %s", path, strerror(errno));
    }
    if (tree >= 0)
        close(tree); /* never attached: the clone goes with the fd */
    if (ns >= 0)
        close(ns);
    return ok;
}
