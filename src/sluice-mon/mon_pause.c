/* The pod's shared PID namespace (--pid-ns FILE). A PID namespace lives only
 * while its init does, so the monitor starts one: sluice-pause, this same
 * executable run under that name, as pid 1 of a new namespace. It reaps the
 * orphans of the pod's containers (they join its namespace through FILE,
 * where the monitor bind-mounts it) and does nothing else: signals from
 * inside the namespace cannot end it (an init without handlers ignores
 * them), and it exits when the monitor and its reaper let go of it (its
 * lifeline pipe reaches EOF: the reaper holds a write end too, so the
 * namespace outlives a monitor that dies, mon_keeper.c) or is SIGKILLed.
 * The kernel then kills every process left in the namespace, as it does
 * when a pause container ends. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mon.h"

/* The holder: pid 1 of the pod's namespace. fd MON_PAUSE_LIFELINE_FD is the
 * read end of a pipe whose write ends the monitor and its reaper hold. */
int mon_pause_main(void)
{
    prctl(PR_SET_NAME, MON_PAUSE_NAME);
    /* Whatever the monitor inherited without CLOEXEC stays out of here. */
    close_range(MON_PAUSE_LIFELINE_FD + 1, ~0U, 0);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    /* Only SIGCHLD is blocked: TERM and INT stay at their defaults, which
     * the kernel drops for a namespace's init. */
    if (sigprocmask(SIG_SETMASK, &set, NULL) < 0)
        return 1;
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    int sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0)
        return 1;
    struct pollfd p[2] = {{.fd = MON_PAUSE_LIFELINE_FD, .events = POLLIN},
                          {.fd = sfd, .events = POLLIN}};
    for (;;) {
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        if (p[0].revents)
            return 0; /* EOF: the monitor is gone */
        struct signalfd_siginfo si;
        while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
            ;
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
    }
}

/* In the child of the clone: pid 1 of the new namespace. */
static void exec_holder(int life)
{
    if (life == MON_PAUSE_LIFELINE_FD)
        fcntl(life, F_SETFD, 0);
    else if (dup2(life, MON_PAUSE_LIFELINE_FD) < 0)
        _exit(127);
    char *const argv[] = {MON_PAUSE_NAME, NULL};
    execv("/proc/self/exe", argv);
    _exit(127);
}

/* fork() into a new PID namespace. The raw system call, as glibc has no
 * fork with flags; the child only execs. */
static pid_t fork_newpid(void)
{
    return (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL);
}

/* The same in the user namespace at path: an intermediate child joins it
 * (setns needs a single thread), unshares the pid namespace there, and
 * forks the holder as our child (CLONE_PARENT), whose pid it sends back. */
static pid_t fork_newpid_in(const char *userns, int life)
{
    int ns = open(userns, O_RDONLY | O_CLOEXEC);
    int p[2];
    if (ns < 0 || pipe2(p, O_CLOEXEC) < 0) {
        if (ns >= 0)
            close(ns);
        return -1;
    }
    pid_t mid = fork();
    if (mid == 0) {
        pid_t pid = -1;
        if (setns(ns, CLONE_NEWUSER) == 0 && unshare(CLONE_NEWPID) == 0)
            pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, NULL);
        if (pid == 0) {
            close(p[0]);
            close(p[1]);
            exec_holder(life);
        }
        int err = errno;
        pid_t msg[2] = {pid, err};
        _exit(write(p[1], msg, sizeof(msg)) == (ssize_t)sizeof(msg) ? 0 : 1);
    }
    close(ns);
    close(p[1]);
    pid_t msg[2] = {-1, EIO};
    if (mid > 0 && read(p[0], msg, sizeof(msg)) != (ssize_t)sizeof(msg))
        msg[1] = EIO;
    close(p[0]);
    if (mid > 0)
        while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
            ;
    if (msg[0] < 0)
        errno = msg[1];
    return mid < 0 ? -1 : msg[0];
}

static int pin(pid_t pid, const char *file, sl_error *e)
{
    SL_AUTOFREE char *dir = strdup(file);
    if (!dir || sl_mkdir_p(dirname(dir), 0755, e) < 0)
        return dir ? -1 : sl_error_set(e, ENOMEM, "pid namespace");
    int fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0444);
    if (fd < 0)
        return sl_error_set(e, errno, "create %s", file);
    close(fd);
    char src[64];
    snprintf(src, sizeof(src), "/proc/%d/ns/pid", (int)pid);
    if (mount(src, file, NULL, MS_BIND, NULL) < 0)
        return sl_error_set(e, errno, "bind-mount %s on %s", src, file);
    return 0;
}

int mon_pause_start(mon *m, const char *file, const char *userns, sl_error *e)
{
    int life[2] = {m->pause_pipe[0], m->pause_pipe[1]};
    m->pause_pipe[0] = m->pause_pipe[1] = -1;
    if (life[0] < 0 && pipe2(life, O_CLOEXEC) < 0)
        return sl_error_set(e, errno, "pipe");
    pid_t pid = userns ? fork_newpid_in(userns, life[0]) : fork_newpid();
    if (pid == 0) {
        close(life[1]);
        exec_holder(life[0]);
    }
    close(life[0]);
    if (pid < 0) {
        close(life[1]);
        return sl_error_set(e, errno, "start the pid namespace holder%s%s", userns ? " in " : "",
                            userns ? userns : "");
    }
    m->pause_pid = pid;
    m->pause_life = life[1];
    if (!(m->pidns_file = strdup(file)))
        return sl_error_set(e, ENOMEM, "pid namespace");
    if (pin(pid, file, e) < 0)
        return sl_error_wrap(e, "pin the pod's pid namespace");
    /* for a monitor that adopts the pod after we died (--adopt) */
    SL_AUTOFREE char *pid_path = sl_path_join(m->run_dir, MON_PAUSE_PID_FILE);
    char text[32];
    int n = snprintf(text, sizeof(text), "%d\n", (int)pid);
    if (!pid_path || sl_write_file_atomic(pid_path, text, (size_t)n, 0644, e) < 0)
        return pid_path ? -1 : sl_error_set(e, ENOMEM, "pid namespace");
    mon_log(MON_INFO, "pod pid namespace: %s, pid %d", file, (int)pid);
    return 0;
}

/* The holder a dead monitor started, verified by its name. */
static pid_t find_holder(const mon *m, sl_error *e)
{
    SL_AUTOFREE char *path = sl_path_join(m->run_dir, MON_PAUSE_PID_FILE);
    SL_AUTOFREE char *text = NULL;
    if (!path || sl_read_file(path, 64, &text, NULL, e) < 0)
        return path ? -1 : sl_error_set(e, ENOMEM, "pid namespace");
    pid_t pid = (pid_t)atoi(text);
    char comm_path[64];
    snprintf(comm_path, sizeof(comm_path), "/proc/%d/comm", (int)pid);
    SL_AUTOFREE char *comm = NULL;
    if (pid <= 0 || sl_read_file(comm_path, 64, &comm, NULL, e) < 0 ||
        strcmp(comm, MON_PAUSE_NAME "\n") != 0)
        return sl_error_set(e, ESRCH, "the pod's pid namespace holder (pid %d) is gone", (int)pid);
    return pid;
}

/* Opening a pipe's end through /proc/PID/fd for writing gives a new write
 * end of the same pipe: the holder sees EOF only once we let go too. */
int mon_pause_lifeline_open(mon *m, sl_error *e)
{
    pid_t pid = find_holder(m, e);
    if (pid < 0)
        return -1;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, MON_PAUSE_LIFELINE_FD);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return sl_error_set(e, errno, "open the pid namespace holder's lifeline %s", path);
    m->pause_pipe[1] = fd;
    m->pause_pid = pid;
    return 0;
}

int mon_pause_adopt(mon *m, const char *file, sl_error *e)
{
    m->pause_life = m->pause_pipe[1];
    m->pause_pipe[1] = -1;
    if (m->pause_life < 0)
        return sl_error_set(e, EBADF, "no lifeline of the pid namespace holder");
    if (!(m->pidns_file = strdup(file)))
        return sl_error_set(e, ENOMEM, "pid namespace");
    mon_log(MON_INFO, "pod pid namespace: %s, adopted holder pid %d", file, (int)m->pause_pid);
    return 0;
}

bool mon_pause_alive(const mon *m)
{
    return m->pause_pid > 0;
}

bool mon_pause_reaped(mon *m, pid_t pid, int status)
{
    if (pid <= 0 || pid != m->pause_pid)
        return false;
    m->pause_pid = 0;
    mon_log(MON_ERR, "the pod's pid namespace holder exited (%d): the containers in it were killed",
            mon_exit_code(status));
    return true;
}

void mon_pause_stop(mon *m)
{
    if (m->pause_life >= 0)
        close(m->pause_life);
    m->pause_life = -1;
    if (m->pause_pid > 0) {
        kill(m->pause_pid, SIGKILL);
        while (waitpid(m->pause_pid, NULL, 0) < 0 && errno == EINTR)
            ;
        m->pause_pid = 0;
    }
    if (m->pidns_file) {
        if (umount2(m->pidns_file, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
            mon_log(MON_WARN, "unmount %s: %s", m->pidns_file, strerror(errno));
        unlink(m->pidns_file);
    }
    free(m->pidns_file);
    m->pidns_file = NULL;
}
