/* The native exec path's processes (mon_nexec.h). The starter, forked by
 * the monitor, joins the container's cgroups (through the host's cgroup
 * mounts) and namespaces (setns on a pidfd of its init), then forks the
 * process, which is in the container's pid namespace. The process applies
 * the plan in the order of runc 1.1's setns init — session, console,
 * no_new_privs, seccomp (before the capabilities are dropped unless
 * no_new_privs), bounding set, user, cwd, capabilities, the program's
 * lookup as Go's exec.LookPath does it, seccomp (no_new_privs), execve —
 * and reports a failure with runc's words on a close-on-exec pipe. Nothing
 * in the children allocates: the monitor may have other threads. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "mon_nexec.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

#define START_ERR "exec failed: unable to start container process: "

/* Writes runc's kind of message to fd and ends the process. */
static __attribute__((noreturn, format(printf, 2, 3))) void die(int fd, const char *fmt, ...)
{
    char buf[MON_NEXEC_ERR_MAX];
    int n = snprintf(buf, sizeof(buf), "%s", START_ERR);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
    va_end(ap);
    ssize_t w = write(fd, buf, strlen(buf));
    (void)w;
    _exit(127);
}

/* Go's text of an errno: strerror's, lower-cased first letter. */
static const char *go_err(int err, char *buf, size_t len)
{
    snprintf(buf, len, "%s", strerror(err));
    if (buf[0] >= 'A' && buf[0] <= 'Z' && !(buf[1] >= 'A' && buf[1] <= 'Z'))
        buf[0] = (char)(buf[0] - 'A' + 'a');
    return buf;
}

static void default_signals(void)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            signal(s, SIG_DFL);
}

static void send_master(int sock, int master, int err_fd)
{
    char name[] = "/dev/ptmx";
    char ctl[CMSG_SPACE(sizeof(int))] = {0};
    struct iovec iov = {name, sizeof(name) - 1};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &master, sizeof(int));
    char eb[128];
    if (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0)
        die(err_fd, "failed to send the console: %s", go_err(errno, eb, sizeof(eb)));
}

/* A PTY of the container's devpts (its /dev/ptmx): the master goes to the
 * monitor, the slave becomes stdio and the controlling terminal. */
static void console(const mon_nexec_plan *p, int sock, int err_fd)
{
    char eb[128], slave[64];
    int n, unlock = 0;
    int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0 || ioctl(master, TIOCGPTN, &n) < 0 || ioctl(master, TIOCSPTLCK, &unlock) < 0)
        die(err_fd, "open /dev/ptmx: %s", go_err(errno, eb, sizeof(eb)));
    if (p->tty_w > 0 && p->tty_h > 0) {
        struct winsize ws = {.ws_row = (unsigned short)p->tty_h,
                             .ws_col = (unsigned short)p->tty_w};
        ioctl(master, TIOCSWINSZ, &ws);
    }
    send_master(sock, master, err_fd);
    close(master);
    close(sock);
    snprintf(slave, sizeof(slave), "/dev/pts/%d", n);
    int fd = open(slave, O_RDWR);
    if (fd < 0)
        die(err_fd, "open %s: %s", slave, go_err(errno, eb, sizeof(eb)));
    for (int i = 0; i < 3; i++)
        if (dup2(fd, i) < 0)
            die(err_fd, "dup2: %s", go_err(errno, eb, sizeof(eb)));
    if (fd > 2)
        close(fd);
    if (ioctl(0, TIOCSCTTY, 0) < 0)
        die(err_fd, "ioctl TIOCSCTTY: %s", go_err(errno, eb, sizeof(eb)));
}

static void stdio_in_place(const int stdio[3], int err_fd)
{
    char eb[128];
    for (int i = 0; i < 3; i++) {
        if (stdio[i] == i)
            fcntl(i, F_SETFD, 0);
        else if (dup2(stdio[i], i) < 0)
            die(err_fd, "dup2: %s", go_err(errno, eb, sizeof(eb)));
    }
}

static void load_seccomp(const mon_nexec_plan *p, int err_fd)
{
    char eb[128];
    if (p->seccomp.filter &&
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, (unsigned long)&p->seccomp, 0, 0) < 0)
        die(err_fd, "error loading seccomp filter: %s", go_err(errno, eb, sizeof(eb)));
}

static bool has_cap(uint64_t set, int cap)
{
    return set & ((uint64_t)1 << cap);
}

static void drop_bounding(const mon_nexec_plan *p, int err_fd)
{
    char eb[128];
    for (int cap = 0; cap <= p->last_cap; cap++)
        if (!has_cap(p->bounding, cap) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 &&
            errno != EINVAL)
            die(err_fd, "unable to apply bounding set: %s", go_err(errno, eb, sizeof(eb)));
}

static void apply_caps(const mon_nexec_plan *p, int err_fd)
{
    char eb[128];
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    for (int i = 0; i < 2; i++) {
        d[i].effective = (uint32_t)(p->effective >> (32 * i));
        d[i].permitted = (uint32_t)(p->permitted >> (32 * i));
        d[i].inheritable = (uint32_t)(p->inheritable >> (32 * i));
    }
    if (syscall(SYS_capset, &h, d) < 0)
        die(err_fd, "unable to apply caps: %s", go_err(errno, eb, sizeof(eb)));
    /* runc raises ambient capabilities one by one and only warns about one
     * it cannot raise (EPERM: not both permitted and inheritable), so the
     * exec runs without it; runc spec's own bundle lists such ones. */
    for (int cap = 0; cap <= p->last_cap; cap++) {
        if (has_cap(p->ambient, cap)) {
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0);
            continue;
        }
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, cap, 0, 0) < 0 && errno != EINVAL)
            die(err_fd, "unable to apply caps: %s", go_err(errno, eb, sizeof(eb)));
    }
}

/* HOME from the container's /etc/passwd when the env has none (runc's
 * setupUser); p's scratch is this process's own copy. */
static void set_home(mon_nexec_plan *p)
{
    if (p->has_home)
        return;
    ssize_t n = 0;
    int fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
        n = read(fd, p->passwd, sizeof(p->passwd) - 1);
        close(fd);
    }
    p->passwd[n > 0 ? n : 0] = '\0';
    char home[MON_NEXEC_PATH_MAX];
    mon_nexec_passwd_home(p->passwd, p->uid, home, sizeof(home));
    snprintf(p->home, sizeof(p->home), "HOME=%s", home);
    size_t i = 0;
    while (p->envp[i])
        i++;
    p->envp[i] = p->home; /* the spare slot */
}

/* runc's fixStdioPermissions: stdio other than /dev/null owned by the user. */
static void fix_stdio(const mon_nexec_plan *p)
{
    struct stat null, st;
    if (stat("/dev/null", &null) < 0)
        return;
    for (int i = 0; i < 3; i++) {
        if (fstat(i, &st) < 0 || (S_ISCHR(st.st_mode) && st.st_rdev == null.st_rdev) ||
            st.st_uid == p->uid)
            continue;
        if (fchown(i, p->uid, p->gid) < 0 && errno != EINVAL && errno != EPERM && errno != EROFS)
            return;
    }
}

static void set_user(const mon_nexec_plan *p, int err_fd)
{
    char eb[128];
    if (setgroups(p->ngids, p->gids) < 0)
        die(err_fd, "setgroups: %s", go_err(errno, eb, sizeof(eb)));
    if (setgid(p->gid) < 0)
        die(err_fd, "setgid: %s", go_err(errno, eb, sizeof(eb)));
    if (setuid(p->uid) < 0)
        die(err_fd, "setuid: %s", go_err(errno, eb, sizeof(eb)));
}

/* runc's finalizeNamespace: bounding set, user (cwd before it when root
 * may enter it, else after), capabilities. */
static void finalize(mon_nexec_plan *p, int err_fd)
{
    char eb[128];
    bool chdir_later = false;
    if (chdir(p->cwd) < 0) {
        if (errno != EACCES && errno != EPERM)
            die(err_fd, "chdir to cwd (\"%s\") set in config.json failed: %s", p->cwd,
                go_err(errno, eb, sizeof(eb)));
        chdir_later = true;
    }
    drop_bounding(p, err_fd);
    if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
        die(err_fd, "prctl keepcaps: %s", go_err(errno, eb, sizeof(eb)));
    set_home(p);
    fix_stdio(p);
    set_user(p, err_fd);
    if (chdir_later && chdir(p->cwd) < 0)
        die(err_fd, "chdir to cwd (\"%s\") set in config.json failed: %s", p->cwd,
            go_err(errno, eb, sizeof(eb)));
    if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
        die(err_fd, "prctl keepcaps: %s", go_err(errno, eb, sizeof(eb)));
    apply_caps(p, err_fd);
}

/* Go's findExecutable: 0, or the errno (EACCES: not an executable file). */
static int find_exec(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return errno;
    return !S_ISDIR(st.st_mode) && (st.st_mode & 0111) ? 0 : EACCES;
}

/* Go 1.19's exec.LookPath with the container's PATH. */
static void look_path(const mon_nexec_plan *p, char *out, size_t outlen, int err_fd)
{
    const char *file = p->argv[0];
    char eb[128];
    if (strchr(file, '/')) {
        int err = find_exec(file);
        if (err == EACCES)
            die(err_fd, "exec: \"%s\": permission denied", file);
        if (err)
            die(err_fd, "exec: \"%s\": stat %s: %s", file, file, go_err(err, eb, sizeof(eb)));
        snprintf(out, outlen, "%s", file);
        return;
    }
    for (const char *d = p->path && *p->path ? p->path : NULL; d;) {
        const char *colon = strchr(d, ':');
        int dlen = colon ? (int)(colon - d) : (int)strlen(d);
        while (dlen > 1 && d[dlen - 1] == '/')
            dlen--;
        if (dlen == 0 || (dlen == 1 && d[0] == '.'))
            snprintf(out, outlen, "%s", file);
        else
            snprintf(out, outlen, "%.*s%s%s", dlen, d, d[dlen - 1] == '/' ? "" : "/", file);
        if (find_exec(out) == 0) {
            if (out[0] != '/')
                die(err_fd,
                    "exec: \"%s\": cannot run executable found relative to current "
                    "directory",
                    file);
            return;
        }
        d = colon ? colon + 1 : NULL;
    }
    die(err_fd, "exec: \"%s\": executable file not found in $PATH", file);
}

static __attribute__((noreturn)) void process(mon_nexec_plan *p, const int stdio[3], int console_fd,
                                              int err_fd)
{
    char eb[128], path[MON_NEXEC_PATH_MAX];
    default_signals();
    if (setsid() < 0)
        die(err_fd, "setsid: %s", go_err(errno, eb, sizeof(eb)));
    if (p->tty)
        console(p, console_fd, err_fd);
    else
        stdio_in_place(stdio, err_fd);
    for (size_t i = 0; i < p->nrlimits; i++)
        if (setrlimit((__rlimit_resource_t)p->rlimits[i].resource, &p->rlimits[i].lim) < 0)
            die(err_fd, "error setting rlimit type %d: %s", p->rlimits[i].resource,
                go_err(errno, eb, sizeof(eb)));
    if (p->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        die(err_fd, "prctl no_new_privs: %s", go_err(errno, eb, sizeof(eb)));
    if (!p->no_new_privs)
        load_seccomp(p, err_fd);
    finalize(p, err_fd);
    if (p->has_umask)
        umask(p->umask);
    look_path(p, path, sizeof(path), err_fd);
    if (faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) < 0)
        die(err_fd, "exec %s: %s", path, go_err(errno, eb, sizeof(eb)));
    if (p->no_new_privs)
        load_seccomp(p, err_fd);
    syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
    execve(path, p->argv, p->envp);
    die(err_fd, "exec %s: %s", path, go_err(errno, eb, sizeof(eb)));
}

static __attribute__((noreturn)) void starter_fail(int log_fd, const char *what, int err)
{
    char buf[MON_NEXEC_ERR_MAX], eb[128];
    int n = snprintf(buf, sizeof(buf), START_ERR "%s: %s", what, go_err(err, eb, sizeof(eb)));
    ssize_t w = write(log_fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
    (void)w;
    _exit(1);
}

static void write_file(const char *path, const char *text, int log_fd)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, text, strlen(text)) < 0)
        starter_fail(log_fd, path, errno);
    close(fd);
}

/* The starter: cgroups, oom_score_adj, namespaces, then the process. */
static __attribute__((noreturn)) void starter(mon_nexec_plan *p, const int stdio[3], int console_fd,
                                              int pid_fd, int log_fd, int pidfd)
{
    char buf[MON_NEXEC_ERR_MAX];
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (size_t i = 0; i < p->ncgroups; i++)
        write_file(p->cgroup_procs[i], "0", log_fd);
    if (p->has_oom) {
        snprintf(buf, sizeof(buf), "%d", p->oom_score_adj);
        write_file("/proc/self/oom_score_adj", buf, log_fd);
    }
    if (p->ns_flags && setns(pidfd, p->ns_flags) < 0)
        starter_fail(log_fd, "setns", errno);
    int sync[2];
    if (pipe2(sync, O_CLOEXEC) < 0)
        starter_fail(log_fd, "pipe", errno);
    pid_t pid = fork();
    if (pid < 0)
        starter_fail(log_fd, "fork", errno);
    if (pid == 0) {
        close(sync[0]);
        process(p, stdio, console_fd, sync[1]);
    }
    close(sync[1]);
    size_t len = 0;
    ssize_t n;
    while ((n = read(sync[0], buf + len, sizeof(buf) - 1 - len)) > 0 || (n < 0 && errno == EINTR))
        len += n > 0 ? (size_t)n : 0;
    if (len > 0) {
        ssize_t w = write(log_fd, buf, len);
        (void)w;
        waitpid(pid, NULL, 0);
        _exit(1);
    }
    int m = snprintf(buf, sizeof(buf), "%d", (int)pid);
    if (write(pid_fd, buf, (size_t)m) != m)
        starter_fail(log_fd, "pid file", errno);
    _exit(0);
}

pid_t mon_nexec_spawn(const mon_nexec_plan *p, const int stdio[3], int console_fd, int pid_fd,
                      int log_fd, sl_error *e)
{
    int pidfd = (int)syscall(SYS_pidfd_open, p->init, 0);
    if (pidfd < 0 && (errno == ENOSYS || errno == EPERM))
        return sl_error_set(e, 0, "no pidfd of the container's init (%s)", strerror(errno)), -1;
    if (pidfd < 0)
        return sl_error_set(e, errno, "pidfd of the container's init %d", (int)p->init), -1;
    pid_t pid = fork();
    if (pid == 0)
        starter((mon_nexec_plan *)p, stdio, console_fd, pid_fd, log_fd, pidfd);
    int err = errno;
    close(pidfd);
    if (pid < 0)
        return sl_error_set(e, err, "fork"), -1;
    return pid;
}
