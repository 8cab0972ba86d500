#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

void sl_freep(void *p)
{
    free(*(void **)p);
}

void sl_closep(int *fd)
{
    if (*fd >= 0)
        close(*fd);
}

char *sl_path_join(const char *a, const char *b)
{
    size_t la = strlen(a);
    while (la > 1 && a[la - 1] == '/')
        la--;
    while (*b == '/')
        b++;
    char *p = malloc(la + strlen(b) + 2);
    if (p)
        sprintf(p, "%.*s/%s", (int)la, a, b);
    return p;
}

static int fsync_dir_of(const char *path)
{
    SL_AUTOFREE char *copy = strdup(path);
    if (!copy)
        return -1;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int sl_write_file_atomic(const char *path, const void *data, size_t len, int mode, sl_error *e)
{
    size_t n = strlen(path) + 16;
    SL_AUTOFREE char *tmp = malloc(n);
    if (!tmp)
        return sl_error_set(e, ENOMEM, "write %s", path);
    snprintf(tmp, n, "%s.tmp%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return sl_error_set(e, errno, "create %s", tmp);
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            int err = errno;
            close(fd);
            unlink(tmp);
            return sl_error_set(e, err, "write %s", tmp);
        }
        p += w;
        len -= (size_t)w;
    }
    if (fsync(fd) < 0 || close(fd) < 0) {
        int err = errno;
        unlink(tmp);
        return sl_error_set(e, err, "sync %s", tmp);
    }
    if (rename(tmp, path) < 0) {
        int err = errno;
        unlink(tmp);
        return sl_error_set(e, err, "rename %s", path);
    }
    fsync_dir_of(path);
    return 0;
}

int sl_read_file(const char *path, size_t max, char **data, size_t *len, sl_error *e)
{
    SL_AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sl_error_set(e, errno, "open %s", path);
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf)
            return sl_error_set(e, ENOMEM, "read %s", path);
        if (n == cap) {
            if (cap >= max) {
                free(buf);
                return sl_error_set(e, EFBIG, "read %s", path);
            }
            cap = cap * 2 > max ? max : cap * 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb)
                free(buf);
            buf = nb;
            continue;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int err = errno;
            free(buf);
            return sl_error_set(e, err, "read %s", path);
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    *data = buf;
    if (len)
        *len = n;
    return 0;
}

int sl_mkdir_p(const char *path, int mode, sl_error *e)
{
    SL_AUTOFREE char *p = strdup(path);
    if (!p)
        return sl_error_set(e, ENOMEM, "mkdir %s", path);
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, (mode_t)mode) < 0 && errno != EEXIST)
            return sl_error_set(e, errno, "mkdir %s", p);
        *s = c;
        if (!c)
            break;
    }
    return 0;
}

/* The mount a directory entry is on: a bind mount of the same file system
 * has the same st_dev, so only the mount id tells that rm_at would leave
 * the tree it was asked to remove (e.g. a container's idmapped volume). */
static int mount_id(int parent, const char *name, struct stat *st, uint64_t *mnt)
{
    struct statx sx;
    if (statx(parent, name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_MNT_ID, &sx) < 0)
        return -1;
    st->st_mode = sx.stx_mode;
    st->st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
    *mnt = (sx.stx_mask & STATX_MNT_ID) ? sx.stx_mnt_id : 0;
    return 0;
}

static int rm_at(int parent, const char *name, dev_t dev, uint64_t mnt, sl_error *e)
{
    struct stat st;
    uint64_t here;
    if (mount_id(parent, name, &st, &here) < 0)
        return errno == ENOENT ? 0 : sl_error_set(e, errno, "stat %s", name);
    if (S_ISDIR(st.st_mode) && st.st_dev == dev && here == mnt) {
        int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return sl_error_set(e, errno, "open %s", name);
        DIR *d = fdopendir(fd);
        if (!d) {
            close(fd);
            return sl_error_set(e, errno, "opendir %s", name);
        }
        struct dirent *de;
        int rc = 0;
        while (rc == 0 && (de = readdir(d)))
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                rc = rm_at(dirfd(d), de->d_name, dev, mnt, e);
        closedir(d);
        if (rc < 0)
            return sl_error_wrap(e, "%s", name);
        if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
            return sl_error_set(e, errno, "rmdir %s", name);
        return 0;
    }
    if (S_ISDIR(st.st_mode)) /* something mounted here: leave it */
        return sl_error_set(e, EBUSY, "remove %s", name);
    if (unlinkat(parent, name, 0) < 0 && errno != ENOENT)
        return sl_error_set(e, errno, "unlink %s", name);
    return 0;
}

int sl_rm_rf(const char *path, sl_error *e)
{
    struct stat st;
    uint64_t mnt;
    if (mount_id(AT_FDCWD, path, &st, &mnt) < 0)
        return errno == ENOENT ? 0 : sl_error_set(e, errno, "stat %s", path);
    return rm_at(AT_FDCWD, path, st.st_dev, mnt, e);
}

void sl_raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

void sl_close_fds_except(int a, int b)
{
    int lo = a < b ? a : b, hi = a < b ? b : a;
    if (lo > 3)
        close_range(3, (unsigned)lo - 1, 0);
    if (hi > lo + 1)
        close_range((unsigned)lo + 1, (unsigned)hi - 1, 0);
    close_range((unsigned)hi + 1, ~0u, 0);
}

int sl_helper_pipes(int ready[2], int done[2], sl_error *e)
{
    if (pipe2(ready, O_CLOEXEC) < 0)
        return sl_error_set(e, errno, "pipe");
    if (pipe2(done, O_CLOEXEC) < 0) {
        int err = errno;
        close(ready[0]);
        close(ready[1]);
        return sl_error_set(e, err, "pipe");
    }
    return 0;
}
