#include "pod/netns.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "container/idmap.h"
#include "fsutil.h"
#include "grpc/grpc_status.h"
#include "pod/sysctl.h"

static const char *const kinds[] = {"net", "ipc", "uts", "user"};
#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

char *sl_pod_ns_path(const char *dir, const char *kind)
{
    char *p = sl_path_join(dir, kind);
    struct stat st;
    if (p && (stat(p, &st) < 0 || !S_ISREG(st.st_mode))) {
        free(p);
        return NULL;
    }
    return p;
}

static int loopback_up(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    strcpy(ifr.ifr_name, "lo");
    int rc = ioctl(fd, SIOCGIFFLAGS, &ifr);
    if (rc == 0) {
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        rc = ioctl(fd, SIOCSIFFLAGS, &ifr);
    }
    close(fd);
    return rc;
}

/* What the child tells the parent: step 0 when the namespaces are ready,
 * else the step that failed, its errno and, for a sysctl, which one. */
enum {
    STEP_READY = 0,
    STEP_UNSHARE,
    STEP_HOSTNAME,
    STEP_LOOPBACK,
    STEP_SYSCTL,
    STEP_USERNS,      /* unshare of the user namespace failed */
    STEP_USERNS_MADE, /* not a failure: the parent may write the id maps now */
};

typedef struct child_report {
    int step;
    int err;
    size_t index;
} child_report;

/* Writes one value to a /proc/sys file of the child's own namespaces:
 * /proc/sys resolves net.* and the IPC sysctls against the writer's. */
static int write_sysctl(const char *path, const char *value)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = strlen(value);
    ssize_t w = write(fd, value, len);
    int err = w < 0 ? errno : EIO; /* the kernel takes a value whole or fails */
    close(fd);
    errno = err;
    return w == (ssize_t)len ? 0 : -1;
}

/* The child (async-signal-safe calls only: it was forked from a threaded
 * process): unshare, set up, report, wait until the parent has pinned the
 * namespaces, exit. */
static void child(int flags, const sl_pod_ns_opts *o, char (*paths)[SL_SYSCTL_PATH_MAX],
                  int ready_w, int done_r)
{
    child_report r = {STEP_READY, 0, 0};
    char c;
    /* A user namespace first, mapped by the parent before the others are
     * made in it, so that it owns them. */
    if (o->uid_map) {
        r.step = unshare(CLONE_NEWUSER) < 0 ? STEP_USERNS : STEP_USERNS_MADE;
        r.err = errno;
        if (write(ready_w, &r, sizeof(r)) != (ssize_t)sizeof(r) || r.step != STEP_USERNS_MADE ||
            read(done_r, &c, 1) != 1)
            _exit(1);
        r = (child_report){STEP_READY, 0, 0};
    }
    if (unshare(flags) < 0)
        r.step = STEP_UNSHARE;
    else if ((flags & CLONE_NEWUTS) && o->hostname && *o->hostname &&
             sethostname(o->hostname, strlen(o->hostname)) < 0)
        r.step = STEP_HOSTNAME;
    else if ((flags & CLONE_NEWNET) && loopback_up() < 0)
        r.step = STEP_LOOPBACK;
    for (size_t i = 0; r.step == STEP_READY && i < o->n_sysctls; i++)
        if (write_sysctl(paths[i], o->sysctls[i].value) < 0)
            r = (child_report){STEP_SYSCTL, 0, i};
    if (r.step != STEP_READY)
        r.err = errno;
    if (write(ready_w, &r, sizeof(r)) != (ssize_t)sizeof(r) || r.step != STEP_READY)
        _exit(1);
    (void)!read(done_r, &c, 1);
    _exit(0);
}

static int pin(const char *dir, const char *kind, pid_t pid, sl_error *e)
{
    SL_AUTOFREE char *dst = sl_path_join(dir, kind);
    char src[64];
    snprintf(src, sizeof(src), "/proc/%d/ns/%s", (int)pid, kind);
    int fd = dst ? open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0444) : -1;
    if (fd < 0)
        return sl_error_set(e, dst ? errno : ENOMEM, "create %s", dst ? dst : kind);
    close(fd);
    if (mount(src, dst, NULL, MS_BIND, NULL) < 0)
        return sl_error_set(e, errno, "bind-mount %s on %s", src, dst);
    return 0;
}

/* A sysctl the kernel refused is the request's fault: INVALID_ARGUMENT. */
static int sysctl_error(const sl_pod_sysctl *s, const char *path, int err, sl_error *e)
{
    if (err == ENOENT)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "linux.sysctls[\"%s\"]: no such sysctl in the pod's namespaces (%s)",
                             s->name, path);
    return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                         "linux.sysctls[\"%s\"]: the kernel refused the value \"%s\" (%s): %s",
                         s->name, s->value, path, strerror(err));
}

static int report_error(const sl_pod_ns_opts *o, const child_report *r,
                        char (*paths)[SL_SYSCTL_PATH_MAX], sl_error *e)
{
    switch (r->step) {
    case STEP_UNSHARE:
        return sl_error_set(e, r->err, "cannot unshare the pod's namespaces");
    case STEP_USERNS:
        return sl_error_set(e, r->err, "cannot make the pod's user namespace");
    case STEP_HOSTNAME:
        return sl_error_set(e, r->err, "cannot set the hostname \"%s\"", o->hostname);
    case STEP_LOOPBACK:
        return sl_error_set(e, r->err, "cannot bring loopback up");
    case STEP_SYSCTL:
        if (r->index < o->n_sysctls)
            return sysctl_error(&o->sysctls[r->index], paths[r->index], r->err, e);
        break;
    }
    return sl_error_set(e, 0, "cannot prepare the pod's namespaces");
}

/* "/proc/sys/<path>" of every sysctl, computed before the fork. */
static char (*sysctl_paths(const sl_pod_ns_opts *o, sl_error *e))[SL_SYSCTL_PATH_MAX]
{
    char(*paths)[SL_SYSCTL_PATH_MAX] = calloc(o->n_sysctls + 1, sizeof(*paths));
    if (!paths) {
        sl_error_set(e, ENOMEM, "sysctls");
        return NULL;
    }
    for (size_t i = 0; i < o->n_sysctls; i++) {
        char rel[SL_SYSCTL_NAME_MAX + 1];
        if (sl_sysctl_path(o->sysctls[i].name, rel, sizeof(rel)) < 0) {
            sl_error_code(e, SL_GRPC_INVALID_ARGUMENT, "linux.sysctls[\"%s\"]: not a sysctl name",
                          o->sysctls[i].name);
            free(paths);
            return NULL;
        }
        snprintf(paths[i], sizeof(paths[i]), "/proc/sys/%s", rel);
    }
    return paths;
}

static int ns_flags(const sl_pod_ns_opts *o)
{
    return (o->host_network ? 0 : CLONE_NEWNET | CLONE_NEWUTS) | (o->host_ipc ? 0 : CLONE_NEWIPC);
}

/* The child's report, within SL_POD_NS_TIMEOUT_MS (the kernel can take
 * long to set up a network namespace while many are being torn down); a
 * child that takes longer is killed. */
static int read_report(int fd, pid_t pid, child_report *r, sl_error *e)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n;
    while ((n = poll(&p, 1, SL_POD_NS_TIMEOUT_MS)) < 0 && errno == EINTR)
        ;
    if (n == 0) {
        kill(pid, SIGKILL);
        return sl_error_set(e, 0, "the pod's namespaces were not ready within %d ms: killed",
                            SL_POD_NS_TIMEOUT_MS);
    }
    ssize_t got;
    while ((got = read(fd, r, sizeof(*r))) < 0 && errno == EINTR)
        ;
    if (got != (ssize_t)sizeof(*r))
        return sl_error_set(e, 0, "cannot prepare the pod's namespaces (the helper process died)");
    return 0;
}

/* The child made its user namespace: maps the ids and lets it go on. */
static int map_userns(const sl_pod_ns_opts *o, int ready_r, int done_w, pid_t pid, sl_error *e)
{
    child_report r;
    if (read_report(ready_r, pid, &r, e) < 0)
        return -1;
    if (r.step != STEP_USERNS_MADE)
        return sl_error_set(e, r.err, "cannot make the pod's user namespace");
    if (sl_idmap_write(pid, o->uid_map, o->gid_map, e) < 0)
        return sl_error_wrap(e, "map the pod's user namespace");
    if (write(done_w, "", 1) != 1)
        return sl_error_set(e, errno, "cannot make the pod's user namespace");
    return 0;
}

/* Forks the child, waits for its report, pins what it made. Runs on a
 * worker thread (never on sluiced's loop). */
static int create_in_child(const sl_pod_ns_opts *o, char (*paths)[SL_SYSCTL_PATH_MAX], sl_error *e)
{
    int flags = ns_flags(o);
    int ready[2], done[2];
    if (sl_helper_pipes(ready, done, e) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        /* Only the parent's end may keep "done" open, or the child never
         * sees EOF on it: that includes the copies this child inherited of
         * other pods' pipes, forked at the same time from other worker
         * threads (two such children held each other's "done" open and
         * waited for good). */
        sl_close_fds_except(ready[1], done[0]);
        child(flags, o, paths, ready[1], done[0]);
    }
    close(ready[1]);
    close(done[0]);
    int rc = 0;
    child_report r;
    if (pid < 0)
        rc = sl_error_set(e, errno, "fork");
    else if (o->uid_map && map_userns(o, ready[0], done[1], pid, e) < 0)
        rc = -1;
    else if (read_report(ready[0], pid, &r, e) < 0)
        rc = -1;
    else if (r.step != STEP_READY)
        rc = report_error(o, &r, paths, e);
    const int made[N_KINDS] = {flags & CLONE_NEWNET, flags & CLONE_NEWIPC, flags & CLONE_NEWUTS,
                               o->uid_map != NULL};
    for (size_t i = 0; rc == 0 && i < N_KINDS; i++)
        if (made[i])
            rc = pin(o->dir, kinds[i], pid, e);
    close(done[1]);
    close(ready[0]);
    if (pid > 0)
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
    return rc;
}

int sl_pod_ns_create(const sl_pod_ns_opts *o, sl_error *e)
{
    if (ns_flags(o) == 0)
        return o->n_sysctls ? sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                                            "linux.sysctls: the pod has no namespace of its own")
                            : 0;
    if (sl_mkdir_p(o->dir, 0755, e) < 0)
        return -1;
    char(*paths)[SL_SYSCTL_PATH_MAX] = sysctl_paths(o, e);
    if (!paths)
        return -1;
    int rc = create_in_child(o, paths, e);
    free(paths);
    if (rc < 0) {
        sl_error tmp;
        sl_pod_ns_remove(o->dir, &tmp);
    }
    return rc;
}

int sl_pod_ns_remove(const char *dir, sl_error *e)
{
    int rc = 0;
    for (size_t i = 0; i < N_KINDS; i++) {
        SL_AUTOFREE char *p = sl_path_join(dir, kinds[i]);
        if (!p)
            return sl_error_set(e, ENOMEM, "remove namespaces");
        if (umount2(p, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
            rc = sl_error_set(e, errno, "unmount %s", p);
        if (unlink(p) < 0 && errno != ENOENT)
            rc = sl_error_set(e, errno, "remove %s", p);
    }
    return rc;
}
