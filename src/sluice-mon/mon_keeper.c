/* sluice-reaper: the process that outlives a pod's monitor. The monitor
 * forks at start; the parent becomes the reaper (this executable run as
 * MON_REAPER_NAME), the child goes on as the monitor. Both are child
 * subreapers, so while the monitor lives nothing changes: orphans of the
 * pod's containers reparent to the monitor, the nearest one. When the
 * monitor dies, its children (container inits, exec'd processes, the pod's
 * pid-namespace holder) reparent to the reaper, which reaps them and
 * records each status in <run-dir>/exits/<pid> so that whoever adopts them
 * learns how they ended. It holds a write end of the pid-namespace holder's
 * lifeline, so a POD-mode pid namespace survives the monitor; it lets go
 * once the holder is its only child left, and exits when it has no child
 * left after the monitor ended. No libuv: poll on a signalfd. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mon.h"

#define PROC_TEXT_MAX 4096

typedef struct keeper {
    const char *run_dir;
    pid_t monitor; /* 0 once reaped */
    int life;      /* write end of the holder's lifeline, -1 */
} keeper;

static ssize_t read_small(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return n;
}

static bool is_holder(pid_t pid)
{
    char path[64], comm[64];
    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    return read_small(path, comm, sizeof(comm)) > 0 && !strcmp(comm, MON_PAUSE_NAME "\n");
}

/* "<exit code> <start ticks>\n", written atomically: the start time tells
 * a reader that the pid is the process it knew, not a later one. */
static void record(const keeper *k, pid_t pid, int status, unsigned long long start)
{
    SL_AUTOFREE char *dir = sl_path_join(k->run_dir, MON_EXITS_DIR);
    char name[32], text[64];
    snprintf(name, sizeof(name), "%d", (int)pid);
    SL_AUTOFREE char *path = dir ? sl_path_join(dir, name) : NULL;
    if (!path || (mkdir(dir, 0755) < 0 && errno != EEXIST))
        return; /* the pod's run dir is gone: nobody will ask */
    int n = snprintf(text, sizeof(text), "%d %llu\n", mon_exit_code(status), start);
    sl_error e;
    if (sl_write_file_atomic(path, text, (size_t)n, 0644, &e) < 0)
        fprintf(stderr, "sluice-reaper: %s\n", e.msg);
}

/* Reaps what has exited; each status but the monitor's is recorded. */
static void reap(keeper *k)
{
    for (;;) {
        siginfo_t si = {0};
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
            return;
        pid_t pid = si.si_pid;
        unsigned long long start = 0; /* 0 if gone; a zombie keeps its stat */
        mon_proc_starttime(pid, &start);
        int status;
        if (waitpid(pid, &status, 0) < 0)
            return;
        if (pid == k->monitor)
            k->monitor = 0;
        else
            record(k, pid, status, start);
    }
}

/* Children other than the pid-namespace holder; -1 when none is left. */
static int others_left(void)
{
    char path[64], text[PROC_TEXT_MAX];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)getpid(), (int)getpid());
    if (read_small(path, text, sizeof(text)) < 0)
        return 1; /* cannot tell: keep the lifeline */
    int n = 0, all = 0;
    for (char *save = NULL, *t = strtok_r(text, " \n", &save); t;
         t = strtok_r(NULL, " \n", &save)) {
        all++;
        if (!is_holder((pid_t)atoi(t)))
            n++;
    }
    return all ? n : -1;
}

int mon_reaper_main(const char *run_dir, const char *monitor)
{
    prctl(PR_SET_NAME, MON_REAPER_NAME);
    keeper k = {.run_dir = run_dir, .monitor = (pid_t)atoi(monitor)};
    k.life = fcntl(MON_REAPER_LIFE_FD, F_GETFD) >= 0 ? MON_REAPER_LIFE_FD : -1;
    close_range(MON_REAPER_LIFE_FD + 1, ~0U, 0);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    if (sigprocmask(SIG_SETMASK, &set, NULL) < 0)
        return 1;
    int sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0)
        return 1;
    for (;;) {
        reap(&k);
        int left = k.monitor ? 1 : others_left();
        if (left <= 0 && k.life >= 0) { /* only the holder: let it go */
            close(k.life);
            k.life = -1;
        }
        if (left < 0)
            return 0;
        struct pollfd p = {.fd = sfd, .events = POLLIN};
        if (poll(&p, 1, -1) < 0 && errno != EINTR)
            return 1;
        struct signalfd_siginfo si;
        while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
            ; /* TERM, INT, HUP: ignored, the monitor decides */
    }
}

/* In the starter's child: forks the monitor (returns 0 there) and becomes
 * the reaper (never returns). life: the holder's lifeline write end, or -1. */
int mon_reaper_fork(const char *run_dir, int life, sl_error *e)
{
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
        return sl_error_set(e, errno, "PR_SET_CHILD_SUBREAPER");
    pid_t pid = fork();
    if (pid < 0)
        return sl_error_set(e, errno, "fork the monitor");
    if (pid == 0)
        return 0;
    char monitor[32];
    snprintf(monitor, sizeof(monitor), "%d", (int)pid);
    if (life == MON_REAPER_LIFE_FD)
        fcntl(life, F_SETFD, 0);
    else if (life >= 0 && dup2(life, MON_REAPER_LIFE_FD) < 0)
        _exit(1);
    if (life < 0)
        close(MON_REAPER_LIFE_FD);
    char *const argv[] = {MON_REAPER_NAME, (char *)run_dir, monitor, NULL};
    execv("/proc/self/exe", argv);
    _exit(1); /* the monitor goes on, without a reaper behind it */
}
