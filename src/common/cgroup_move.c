/* sluice-mon's move out of sluiced's cgroup (see cgroup_move.h). */
#include "cgroup_move.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup_host.h"
#include "fsutil.h"

int sl_cg_first_controller(const char *list, size_t len, char *out, size_t cap)
{
    const char *comma = memchr(list, ',', len);
    size_t n = comma ? (size_t)(comma - list) : len;
    if (n >= cap)
        return -1;
    memcpy(out, list, n);
    out[n] = '\0';
    return 0;
}

static int write_text(const char *path, const char *text, sl_error *e)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return sl_error_set(e, errno, "open %s", path);
    ssize_t n = write(fd, text, strlen(text));
    int err = errno;
    close(fd);
    return n < 0 ? sl_error_set(e, err, "write %s", path) : 0;
}

/* A new cpuset level is empty: it takes its parent's cpus or mems. */
static int fill_cpuset(const char *dir, const char *parent, const char *file, sl_error *e)
{
    char *mine = NULL, *theirs = NULL;
    SL_AUTOFREE char *p1 = sl_path_join(dir, file);
    SL_AUTOFREE char *p2 = sl_path_join(parent, file);
    int rc = 0;
    if (p1 && p2 && sl_read_file(p1, 4096, &mine, NULL, e) == 0 && mine[strspn(mine, " \n")] == 0)
        rc = sl_read_file(p2, 4096, &theirs, NULL, e) == 0 ? write_text(p1, theirs, e) : -1;
    free(mine);
    free(theirs);
    return rc;
}

/* mkdir -p of mnt + path, one level at a time (cpuset levels filled). */
static int make_levels(const char *mnt, const char *path, bool cpuset, sl_error *e)
{
    char dir[PATH_MAX], parent[PATH_MAX];
    if ((size_t)snprintf(dir, sizeof(dir), "%s", mnt) >= sizeof(dir))
        return sl_error_set(e, ENAMETOOLONG, "%s", mnt);
    for (const char *p = path; *p;) {
        p += strspn(p, "/");
        size_t n = strcspn(p, "/");
        if (!n)
            break;
        snprintf(parent, sizeof(parent), "%s", dir);
        size_t len = strlen(dir);
        if (len + 1 + n >= sizeof(dir))
            return sl_error_set(e, ENAMETOOLONG, "%s%s", mnt, path);
        snprintf(dir + len, sizeof(dir) - len, "/%.*s", (int)n, p);
        p += n;
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
            return sl_error_set(e, errno, "mkdir %s", dir);
        if (cpuset && (fill_cpuset(dir, parent, "cpuset.cpus", e) < 0 ||
                       fill_cpuset(dir, parent, "cpuset.mems", e) < 0))
            return -1;
    }
    return 0;
}

/* Joins one hierarchy (mount point mnt) unless an earlier line did. */
static int join(const char *mnt, const char *path, bool cpuset, char done[][PATH_MAX],
                size_t *ndone, sl_error *e)
{
    for (size_t i = 0; i < *ndone; i++)
        if (!strcmp(done[i], mnt))
            return 0;
    if (*ndone >= SL_CG_MOVE_MAX_HIERARCHIES)
        return sl_error_set(e, E2BIG, "more than %d cgroup hierarchies",
                            SL_CG_MOVE_MAX_HIERARCHIES);
    snprintf(done[(*ndone)++], PATH_MAX, "%s", mnt);
    if (make_levels(mnt, path, cpuset, e) < 0)
        return -1;
    char procs[PATH_MAX];
    if ((size_t)snprintf(procs, sizeof(procs), "%s%s/cgroup.procs", mnt, path) >= sizeof(procs))
        return sl_error_set(e, ENAMETOOLONG, "%s%s", mnt, path);
    return write_text(procs, "0", e) < 0 ? -1 : 1; /* "0": the writer itself */
}

/* One line "ID:CONTROLLERS:PATH" of /proc/self/cgroup. */
static int move_line(const char *line, const char *end, const char *mountinfo, const char *path,
                     char done[][PATH_MAX], size_t *ndone, sl_error *e)
{
    const char *c1 = memchr(line, ':', (size_t)(end - line));
    const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
    char ctrl[256], mnt[PATH_MAX], root[PATH_MAX];
    if (!c2 || sl_cg_first_controller(c1 + 1, (size_t)(c2 - c1 - 1), ctrl, sizeof(ctrl)) < 0)
        return 0;
    if (sl_cg_mountinfo_find(mountinfo, ctrl[0] ? ctrl : NULL, mnt, sizeof(mnt), root,
                             sizeof(root)) < 0)
        return 0; /* not mounted here */
    int rc = join(mnt, path, !strcmp(ctrl, "cpuset"), done, ndone, e);
    return rc < 0 ? sl_error_wrap(e, "cgroup %s", ctrl[0] ? ctrl : "v2") : rc;
}

int sl_cg_move_self(const char *path, sl_error *e)
{
    char *self = NULL, *mountinfo = NULL;
    if (sl_read_file("/proc/self/cgroup", SL_CG_FILE_MAX, &self, NULL, e) < 0 ||
        sl_read_file("/proc/self/mountinfo", SL_CG_MOVE_MOUNTINFO_MAX, &mountinfo, NULL, e) < 0) {
        free(self);
        return -1;
    }
    char(*done)[PATH_MAX] = calloc(SL_CG_MOVE_MAX_HIERARCHIES, PATH_MAX);
    size_t ndone = 0;
    if (!done) {
        free(self);
        free(mountinfo);
        return sl_error_set(e, ENOMEM, "cgroup");
    }
    int joined = 0;
    for (const char *line = self; line && *line;) {
        const char *nl = strchr(line, '\n');
        const char *end = nl ? nl : line + strlen(line);
        int rc = move_line(line, end, mountinfo, path, done, &ndone, e);
        if (rc < 0) {
            joined = -1;
            break;
        }
        joined += rc;
        line = nl ? nl + 1 : NULL;
    }
    free(done);
    free(self);
    free(mountinfo);
    return joined;
}
