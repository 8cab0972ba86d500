#include "pod/netns.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
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

#include "fsutil.h"

static const char *const kinds[] = {"net", "ipc", "uts"};

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

/* The child: unshare, tell the parent, wait until it has pinned the
 * namespaces, exit. Exit codes name the failing step for the parent. */
static void child(int flags, const char *hostname, int ready_w, int done_r)
{
    if (unshare(flags) < 0)
        _exit(10);
    if ((flags & CLONE_NEWUTS) && hostname && *hostname &&
        sethostname(hostname, strlen(hostname)) < 0)
        _exit(11);
    if ((flags & CLONE_NEWNET) && loopback_up() < 0)
        _exit(12);
    char c = 1;
    if (write(ready_w, &c, 1) != 1)
        _exit(13);
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

static const char *step_text(int code)
{
    switch (code) {
    case 10:
        return "unshare the namespaces";
    case 11:
        return "set the hostname";
    case 12:
        return "bring loopback up";
    default:
        return "prepare the namespaces";
    }
}

int sl_pod_ns_create(const sl_pod_ns_opts *o, sl_error *e)
{
    int flags =
        (o->host_network ? 0 : CLONE_NEWNET | CLONE_NEWUTS) | (o->host_ipc ? 0 : CLONE_NEWIPC);
    if (flags == 0)
        return 0;
    if (sl_mkdir_p(o->dir, 0755, e) < 0)
        return -1;
    int ready[2], done[2];
    if (pipe2(ready, O_CLOEXEC) < 0)
        return sl_error_set(e, errno, "pipe");
    if (pipe2(done, O_CLOEXEC) < 0) {
        close(ready[0]);
        close(ready[1]);
        return sl_error_set(e, errno, "pipe");
    }
    pid_t pid = fork();
    if (pid == 0) {
        /* Only the parent's end may keep "done" open, or the child never
         * sees EOF on it. */
        close(ready[0]);
        close(done[1]);
        child(flags, o->hostname, ready[1], done[0]);
    }
    close(ready[1]);
    close(done[0]);
    int rc = 0;
    char c;
    if (pid < 0)
        rc = sl_error_set(e, errno, "fork");
    else if (read(ready[0], &c, 1) != 1)
        rc = -1; /* the child failed: its exit code says where */
    for (size_t i = 0; rc == 0 && i < 3; i++)
        if ((flags & (i == 0 ? CLONE_NEWNET : i == 1 ? CLONE_NEWIPC : CLONE_NEWUTS)))
            rc = pin(o->dir, kinds[i], pid, e);
    close(done[1]);
    close(ready[0]);
    int status = 0;
    if (pid > 0)
        waitpid(pid, &status, 0);
    if (rc == 0)
        return 0;
    if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) >= 10)
        sl_error_set(e, 0, "cannot %s", step_text(WEXITSTATUS(status)));
    sl_error tmp;
    sl_pod_ns_remove(o->dir, &tmp);
    return -1;
}

int sl_pod_ns_remove(const char *dir, sl_error *e)
{
    int rc = 0;
    for (size_t i = 0; i < 3; i++) {
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
