/* sluice-mon: the per-pod container monitor (docs/mon-protocol.md).
 * Detaches from its starter (own session, stdio to a log in the run dir),
 * becomes the child subreaper of its containers and serves the control
 * socket <run-dir>/mon.sock until shutdown. The starting process exits 0
 * once the socket listens, printing the monitor's pid. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_move.h"
#include "mon.h"
#include "sl_log.h"

int mon_log_level = MON_INFO;

/* One logfmt line (sl_log.h) in the log file next to the pod's state. */
void mon_log(int level, const char *fmt, ...)
{
    if (level > mon_log_level)
        return;
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    sl_log(level, text, NULL);
}

typedef struct opts {
    const char *pod_id, *run_dir, *state_dir, *runtime;
    const char *netns;  /* the pod's network namespace, joined at start */
    const char *pid_ns; /* --pid-ns FILE: hold a pid namespace for the pod */
    const char *userns; /* --userns FILE: the pod's user namespace, which owns that one */
    const char *cgroup; /* --cgroup PATH: leave the starter's cgroup for it */
    bool foreground;
    bool adopt; /* --adopt: replaces a monitor that died (mon_adopt.c) */
} opts;

static void usage(FILE *f)
{
    fprintf(f, "usage: sluice-mon --pod-id ID --run-dir DIR --state-dir DIR --runtime PATH\n"
               "                  [--netns PATH] [--pid-ns FILE] [--userns FILE] [--cgroup PATH]\n"
               "                  [--log-level error|warn|info|debug] [--foreground] [--adopt]\n"
               "See sluice-mon(8).\n");
}

static int parse(int argc, char **argv, opts *o)
{
    static const struct option longs[] = {{"pod-id", required_argument, NULL, 'p'},
                                          {"run-dir", required_argument, NULL, 'r'},
                                          {"state-dir", required_argument, NULL, 's'},
                                          {"runtime", required_argument, NULL, 'R'},
                                          {"netns", required_argument, NULL, 'n'},
                                          {"pid-ns", required_argument, NULL, 'P'},
                                          {"userns", required_argument, NULL, 'U'},
                                          {"cgroup", required_argument, NULL, 'c'},
                                          {"log-level", required_argument, NULL, 'l'},
                                          {"foreground", no_argument, NULL, 'f'},
                                          {"adopt", no_argument, NULL, 'a'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (ch) {
        case 'p':
            o->pod_id = optarg;
            break;
        case 'r':
            o->run_dir = optarg;
            break;
        case 's':
            o->state_dir = optarg;
            break;
        case 'R':
            o->runtime = optarg;
            break;
        case 'n':
            o->netns = optarg;
            break;
        case 'P':
            o->pid_ns = optarg;
            break;
        case 'U':
            o->userns = optarg;
            break;
        case 'c':
            o->cgroup = optarg;
            break;
        case 'f':
            o->foreground = true;
            break;
        case 'a':
            o->adopt = true;
            break;
        case 'l':
            if ((mon_log_level = sl_log_level_parse(optarg)) < 0)
                return -1;
            sl_log_set_level(mon_log_level);
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            return -1;
        }
    }
    if (optind != argc || !o->pod_id || !o->run_dir || !o->state_dir || !o->runtime ||
        (o->pid_ns && o->pid_ns[0] != '/') || (o->userns && o->userns[0] != '/') ||
        (o->cgroup && o->cgroup[0] != '/'))
        return -1;
    return 0;
}

/* PATH lookup for a runtime given by name. malloc'd or NULL. */
static char *find_runtime(const char *name)
{
    if (strchr(name, '/'))
        return access(name, X_OK) == 0 ? strdup(name) : NULL;
    const char *path = getenv("PATH");
    char *copy =
        strdup(path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    char *save = NULL, *found = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
        char *p = sl_path_join(dir, name);
        if (p && access(p, X_OK) == 0)
            found = p;
        else
            free(p);
    }
    free(copy);
    return found;
}

static int setup_paths(mon *m, const opts *o, sl_error *e)
{
    if (!sl_mon_valid_id(o->pod_id))
        return sl_error_set(e, EINVAL, "invalid pod id '%s'", o->pod_id);
    if (o->run_dir[0] != '/' || o->state_dir[0] != '/')
        return sl_error_set(e, EINVAL, "--run-dir and --state-dir must be absolute");
    m->pod_id = strdup(o->pod_id);
    m->run_dir = strdup(o->run_dir);
    m->state_dir = strdup(o->state_dir);
    if (!(m->runtime = find_runtime(o->runtime)))
        return sl_error_set(e, ENOENT, "runtime %s", o->runtime);
    m->runc_root = sl_path_join(o->run_dir, "runc");
    m->sock_path = sl_path_join(o->run_dir, "mon.sock");
    m->pid_path = sl_path_join(o->run_dir, "mon.pid");
    char *ctrs = sl_path_join(o->state_dir, "containers");
    int rc = -1;
    if (!m->pod_id || !m->run_dir || !m->state_dir || !m->runc_root || !m->sock_path ||
        !m->pid_path || !ctrs)
        sl_error_set(e, ENOMEM, "paths");
    else if (sl_mkdir_p(m->runc_root, 0700, e) == 0 && sl_mkdir_p(ctrs, 0755, e) == 0)
        rc = 0;
    free(ctrs);
    return rc;
}

/* Own session, stdio to /dev/null and the log file. */
static int detach_stdio(mon *m, bool foreground, sl_error *e)
{
    if (setsid() < 0 && !foreground)
        return sl_error_set(e, errno, "setsid");
    if (chdir("/") < 0)
        return sl_error_set(e, errno, "chdir /");
    umask(022);
    m->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (m->devnull < 0)
        return sl_error_set(e, errno, "/dev/null");
    dup2(m->devnull, 0);
    if (foreground)
        return 0;
    /* With the pod's state (kept until the pod is removed), not on tmpfs. */
    SL_AUTOFREE char *pods = sl_path_join(m->state_dir, "pods");
    SL_AUTOFREE char *dir = pods ? sl_path_join(pods, m->pod_id) : NULL;
    SL_AUTOFREE char *log = dir ? sl_path_join(dir, SL_MON_LOG_NAME) : NULL;
    if (!log || sl_mkdir_p(dir, 0711, e) < 0)
        return log ? -1 : sl_error_set(e, ENOMEM, "log path");
    int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0)
        return sl_error_set(e, errno, "open %s", log);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    setvbuf(stderr, NULL, _IOLBF, 0);
    return 0;
}

/* Port-forward connects start in the pod's network namespace; the monitor
 * needs no other network (its sockets are unix ones, bound by path). */
static int join_netns(const char *path, sl_error *e)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        return sl_error_set(e, err, "join the pod network namespace %s", path);
    }
    close(fd);
    return 0;
}

/* Out of the starter's (sluiced's) cgroup before any child is forked, so
 * the pause process, runc and the containers' processes never sit in it. */
static int leave_cgroup(const opts *o, sl_error *e)
{
    if (!o->cgroup)
        return 0;
    if (sl_cg_move_self(o->cgroup, e) < 0)
        return sl_error_wrap(e, "--cgroup %s", o->cgroup);
    return 0;
}

static int start(mon *m, const opts *o, sl_error *e)
{
    if (o->netns && join_netns(o->netns, e) < 0)
        return -1;
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
        return sl_error_set(e, errno, "PR_SET_CHILD_SUBREAPER");
    if (!(m->loop = sl_mloop_new()))
        return sl_error_set(e, errno, "event loop");
    /* --adopt: the pod's pid namespace holder outlived the monitor that
     * died; we keep it alive rather than start another. */
    m->adopt = o->adopt;
    if (o->adopt && o->pid_ns && m->pause_pipe[1] < 0 && mon_pause_lifeline_open(m, e) < 0)
        return -1;
    if (mon_signals_start(m, e) < 0 || mon_sess_start(m, e) < 0 || mon_server_start(m, e) < 0 ||
        (o->pid_ns && !o->adopt && mon_pause_start(m, o->pid_ns, o->userns, e) < 0) ||
        (o->pid_ns && o->adopt && mon_pause_adopt(m, o->pid_ns, e) < 0))
        return -1;
    char pid[32];
    int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    return sl_write_file_atomic(m->pid_path, pid, (size_t)n, 0644, e);
}

/* The reaper stays behind as our parent (mon_keeper.c); with --pid-ns it
 * keeps a write end of the holder's lifeline, made here for both of us. */
static int fork_reaper(mon *m, const opts *o, sl_error *e)
{
    if (o->pid_ns && o->adopt && mon_pause_lifeline_open(m, e) < 0)
        return -1;
    if (o->pid_ns && !o->adopt && pipe2(m->pause_pipe, O_CLOEXEC) < 0)
        return sl_error_set(e, errno, "pipe");
    return mon_reaper_fork(m->run_dir, m->pause_pipe[1], e);
}

static void free_paths(mon *m)
{
    free(m->pod_id);
    free(m->run_dir);
    free(m->state_dir);
    free(m->runtime);
    free(m->runc_root);
    free(m->sock_path);
    free(m->pid_path);
}

static void finish(mon *m)
{
    mon_sess_stop(m); /* while the execs and containers it uses still exist */
    mon_exec_release_all(m);
    mon_ctr_release_all(m);
    mon_jobs_release_all(m);
    mon_server_stop(m);
    mon_pause_stop(m);
    if (m->pid_path)
        unlink(m->pid_path);
    mon_signals_stop(m);
    sl_mloop_free(m->loop);
    free_paths(m);
    if (m->devnull >= 0)
        close(m->devnull);
}

/* The starter waits for "ok" (or an error text) from the monitor. */
static int wait_ready(int fd)
{
    char buf[SL_SYS_ERROR_MAX + 8];
    ssize_t n, got = 0;
    while ((n = read(fd, buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
        got += n;
    buf[got] = '\0';
    /* "ok PID": the monitor is the reaper's child, not ours */
    if (strncmp(buf, "ok ", 3) == 0) {
        printf("%s\n", buf + 3);
        return 0;
    }
    fprintf(stderr, "sluice-mon: %s\n", got ? buf : "monitor exited during start-up");
    return 1;
}

int main(int argc, char **argv)
{
    if (argc == 1 && !strcmp(argv[0], MON_PAUSE_NAME))
        return mon_pause_main();
    if (argc == 3 && !strcmp(argv[0], MON_REAPER_NAME))
        return mon_reaper_main(argv[1], argv[2]);
    opts o = {0};
    if (parse(argc, argv, &o) < 0) {
        usage(stderr);
        return 2;
    }
    mon m = {
        .listen_fd = -1, .sig_fd = -1, .devnull = -1, .pause_life = -1, .pause_pipe = {-1, -1}};
    sl_error e = {0};
    int ready[2] = {-1, -1};
    if (setup_paths(&m, &o, &e) < 0 || (!o.foreground && pipe2(ready, O_CLOEXEC) < 0)) {
        fprintf(stderr, "sluice-mon: %s\n", e.msg[0] ? e.msg : strerror(errno));
        free_paths(&m);
        return 1;
    }
    if (!o.foreground) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid != 0) {
            close(ready[1]);
            free_paths(&m);
            int rc = pid < 0 ? 1 : wait_ready(ready[0]);
            close(ready[0]);
            /* A monitor that failed exits right after its error: wait, so
             * that when sluiced reports the failure none of the pod's
             * processes is left (under a sanitizer the exit takes long). */
            if (rc != 0 && pid > 0)
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                    ;
            return rc;
        }
        close(ready[0]);
    }
    sl_raise_nofile();
    int rc = detach_stdio(&m, o.foreground, &e) < 0 || leave_cgroup(&o, &e) < 0 ||
                     (!o.foreground && fork_reaper(&m, &o, &e) < 0) || start(&m, &o, &e) < 0
                 ? -1
                 : 0;
    char ok[32];
    snprintf(ok, sizeof(ok), "ok %d", (int)getpid());
    const char *msg = rc < 0 ? e.msg : ok;
    if (ready[1] >= 0) {
        if (write(ready[1], msg, strlen(msg)) < 0)
            rc = -1;
        close(ready[1]);
    }
    if (rc < 0) {
        mon_log(MON_ERR, "start-up: %s", e.msg);
        finish(&m);
        return 1;
    }
    mon_log(MON_INFO, "pod %s: listening on %s", m.pod_id, m.sock_path);
    if (sl_mloop_run(m.loop) < 0)
        mon_log(MON_ERR, "event loop: %s", strerror(errno));
    finish(&m);
    mon_log(MON_INFO, "exiting");
    return m.exit_status;
}
