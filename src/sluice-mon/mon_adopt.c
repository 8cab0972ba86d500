/* Taking over the containers of a monitor that died (docs/mon-protocol.md,
 * `stdio` and `adopt`). sluiced keeps duplicates of every container's
 * output fds (`stdio`), so the pipes keep a reader and what the container
 * writes meanwhile waits in them; a new monitor (--adopt) gets them back
 * with the container's init (`adopt`), reads on and appends to the same
 * CRI log. The init is not our child (the dead monitor's reaper adopted
 * it), so its end is seen through a pidfd and its status read from the
 * reaper's record <run-dir>/exits/<pid>. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_host.h"
#include "mon.h"

#define RECORD_TEXT_MAX 64
#define NO_RECORD_CODE 255 /* the reaper left no status: unknown */

void mon_ctr_signal(mon_ctr *c, int sig)
{
    /* An adopted init is not our child: its pid may name another process
     * once its reaper reaped it (or it was never the one sluiced meant),
     * its pidfd cannot; without one it has ended. */
    if (c->pid <= 0 || c->reaped || (c->adopted && c->pidfd < 0))
        return;
    int rc = c->adopted ? (int)syscall(SYS_pidfd_send_signal, c->pidfd, sig, NULL, 0)
                        : kill(c->pid, sig);
    if (rc < 0)
        mon_log(MON_WARN, "container %s: kill %d: %s", c->id, sig, strerror(errno));
}

/* ---- stdio: duplicates for sluiced ---- */

void mon_ctr_stdio(mon *m, mon_req *r, const json_t *msg)
{
    mon_ctr *c = mon_ctr_find(m, sl_mon_str(msg, "container_id"));
    if (!c || c->state == CTR_CREATING) {
        mon_reply_err(m, r, c ? "container is being created" : "no such container");
        return;
    }
    static const char *const pipes[] = {"stdout", "stderr"}, *const tty[] = {"tty"};
    int fds[2];
    size_t n = 0;
    for (int s = 0; s < (c->tty ? 1 : 2); s++) {
        if (c->io.out_fd[s] < 0)
            continue;
        if ((fds[n] = fcntl(c->io.out_fd[s], F_DUPFD_CLOEXEC, 3)) < 0)
            break;
        n++;
    }
    if (n != (c->tty ? 1u : 2u)) { /* output ended (or a dup failed): nothing to keep */
        for (size_t i = 0; i < n; i++)
            close(fds[i]);
        mon_reply_err(m, r, "container %s has no open output", c->id);
        return;
    }
    mon_reply(m, r, NULL, fds, c->tty ? tty : pipes, n);
}

/* ---- the end of an adopted init ---- */

/* The reaper's record of the init: "<code> <start ticks>". */
static bool record_code(const mon_ctr *c, int *code)
{
    char name[32], text[RECORD_TEXT_MAX];
    snprintf(name, sizeof(name), "%s/%d", MON_EXITS_DIR, (int)c->pid);
    SL_AUTOFREE char *path = sl_path_join(c->m->run_dir, name);
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0)
        return false;
    ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    unsigned long long start;
    text[n > 0 ? n : 0] = '\0';
    return sscanf(text, "%d %llu", code, &start) == 2 && start == c->start_ticks;
}

static void record_cb(void *data);

static void look_for_record(mon_ctr *c)
{
    int code;
    if (record_code(c, &code)) {
        mon_ctr_reaped(c, mon_status_of_code(code));
        return;
    }
    if (c->record_tries++ < SL_MON_EXIT_RECORD_WAIT_MS / SL_MON_EXIT_RECORD_STEP_MS &&
        (c->record_timer = sl_mloop_timer(c->m->loop, SL_MON_EXIT_RECORD_STEP_MS, record_cb, c)))
        return;
    mon_log(MON_WARN, "container %s: no exit record of pid %d", c->id, (int)c->pid);
    c->message = strdup("the pod's reaper recorded no exit status");
    mon_ctr_reaped(c, mon_status_of_code(NO_RECORD_CODE));
}

static void record_cb(void *data)
{
    mon_ctr *c = data;
    c->record_timer = NULL;
    look_for_record(c);
}

static void pidfd_cb(sl_mwatch *w, uint32_t events, void *data)
{
    (void)events;
    mon_ctr *c = data;
    sl_mwatch_close(w);
    c->pidfd_w = NULL;
    c->pidfd = -1;
    look_for_record(c);
}

void mon_adopt_fini(mon_ctr *c)
{
    sl_mtimer_cancel(c->record_timer);
    c->record_timer = NULL;
    if (c->pidfd_w)
        sl_mwatch_close(c->pidfd_w);
    else if (c->pidfd >= 0)
        close(c->pidfd);
    c->pidfd_w = NULL;
    c->pidfd = -1;
}

/* ---- adopt ---- */

typedef struct adopt_req {
    const char *id, *bundle, *log_path;
    bool tty, stdin, stdin_once;
    bool created; /* state "created": runc's init waits for `start` */
    int64_t pid, created_at, started_at;
    unsigned long long start;
} adopt_req;

static const char *adopt_parse(const json_t *msg, adopt_req *a)
{
    a->id = sl_mon_str(msg, "container_id");
    a->bundle = sl_mon_str(msg, "bundle");
    a->log_path = sl_mon_str(msg, "log_path");
    const char *start = sl_mon_str(msg, "start");
    char *end = NULL;
    if (!sl_mon_valid_id(a->id))
        return "invalid container_id";
    if (!a->bundle || a->bundle[0] != '/')
        return "bundle must be an absolute path";
    if (a->log_path && *a->log_path && *a->log_path != '/')
        return "log_path must be absolute";
    if (sl_mon_bool(msg, "tty", false, &a->tty) || sl_mon_bool(msg, "stdin", false, &a->stdin) ||
        sl_mon_bool(msg, "stdin_once", false, &a->stdin_once))
        return "tty, stdin and stdin_once must be booleans";
    const char *state = sl_mon_str(msg, "state");
    if (state && strcmp(state, "running") && strcmp(state, "created"))
        return "state must be running or created";
    a->created = state && !strcmp(state, "created");
    if (sl_mon_int(msg, "pid", 1, INT32_MAX, 0, &a->pid) || a->pid == 0)
        return "pid must be a process id";
    if (!start || (a->start = strtoull(start, &end, 10), *end) || !*start)
        return "start must be the init's start time in clock ticks (a decimal string)";
    if (sl_mon_int(msg, "created_at", 0, INT64_MAX, 0, &a->created_at) ||
        sl_mon_int(msg, "started_at", 0, INT64_MAX, 0, &a->started_at))
        return "created_at and started_at must be ns since the epoch";
    return NULL;
}

/* The fds named stdout and stderr (pipes) or tty (the master); none at
 * all when sluiced held none (it restarted while no monitor ran: the
 * output is lost, the container is still ours to watch and stop). */
static const char *adopt_fds(const json_t *msg, const adopt_req *a, int *fds, size_t nfds,
                             int out[2])
{
    const char *names[2] = {a->tty ? "tty" : "stdout", a->tty ? NULL : "stderr"};
    out[0] = out[1] = -1;
    if (nfds == 0)
        return NULL;
    for (int s = 0; s < 2; s++) {
        int i = names[s] ? sl_mon_fd_index(msg, names[s]) : -1;
        out[s] = i >= 0 && (size_t)i < nfds ? fds[i] : -1;
        if (names[s] && out[s] < 0)
            return a->tty ? "fd tty missing" : "fds stdout and stderr missing";
    }
    return NULL;
}

/* The init as sluiced saw it: a pidfd of the process with that pid and
 * start time, or -1 when it ended already. */
static int open_init(const adopt_req *a)
{
    int fd = (int)syscall(SYS_pidfd_open, (pid_t)a->pid, 0);
    unsigned long long t = 0;
    if (fd >= 0 && (mon_proc_starttime((pid_t)a->pid, &t) < 0 || t != a->start)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static int adopt_setup(mon_ctr *c, const adopt_req *a, int out[2], sl_error *e)
{
    mon_pidns_kind kind = MON_PIDNS_HOST;
    SL_AUTOFREE char *ns = NULL;
    sl_error be;
    if (mon_bundle_pidns(a->bundle, &kind, &ns, &be) < 0)
        mon_log(MON_WARN, "%s", be.msg);
    c->shared_pidns = kind != MON_PIDNS_OWN;
    c->tty = a->tty;
    c->stdin = a->stdin;
    c->stdin_once = a->stdin_once;
    c->pid = (pid_t)a->pid;
    c->start_ticks = a->start;
    c->created_at = a->created_at;
    c->started_at = a->started_at;
    c->state = a->created ? CTR_CREATED : CTR_RUNNING;
    c->adopted = true;
    c->oom_file = sl_cg_oom_file(c->pid);
    for (int s = 0; s < 2; s++) {
        if (out[s] >= 0)
            fcntl(out[s], F_SETFL, O_NONBLOCK);
        c->io.out_fd[s] = out[s];
        out[s] = -1;
    }
    /* A terminal's input is its master; a stdin pipe ended with the
     * monitor that held its only write end. */
    if (c->tty && c->stdin)
        c->io.in_fd = fcntl(c->io.out_fd[0], F_DUPFD_CLOEXEC, 3);
    /* The container runs already: one whose log cannot be opened (removed
     * directory, a full disk) is still ours to watch, stop and exec in. */
    sl_error le;
    if (sl_mon_log_open(&c->io.log, a->log_path, SL_MON_LOG_LINE_MAX, &le) < 0) {
        mon_log(MON_ERR, "container %s: adopted without its CRI log: %s", c->id, le.msg);
        if (sl_mon_log_open(&c->io.log, NULL, SL_MON_LOG_LINE_MAX, e) < 0)
            return -1;
    }
    if (mon_io_start(c, e) < 0)
        return -1;
    c->pidfd = open_init(a);
    if (c->pidfd >= 0 && !(c->pidfd_w = sl_mloop_watch(c->m->loop, c->pidfd, EPOLLIN, pidfd_cb, c)))
        return sl_error_set(e, errno, "watch the init's pidfd");
    return 0;
}

void mon_ctr_adopt(mon *m, mon_req *r, const json_t *msg, int *fds, size_t nfds)
{
    adopt_req a = {0};
    int out[2] = {-1, -1};
    const char *why = adopt_parse(msg, &a);
    if (!why)
        why = adopt_fds(msg, &a, fds, nfds, out);
    if (!why && mon_ctr_find(m, a.id))
        why = "container exists";
    unsigned n = 0;
    for (const mon_ctr *k = m->ctrs; k; k = k->next)
        n++;
    if (!why && n >= SL_MON_MAX_CONTAINERS)
        why = "too many containers";
    for (size_t i = 0; i < nfds; i++)
        if (why || (fds[i] != out[0] && fds[i] != out[1]))
            close(fds[i]);
    if (why) {
        mon_reply_err(m, r, "adopt: %s", why);
        return;
    }
    mon_ctr *c = mon_ctr_new(m, a.id, a.bundle);
    sl_error e = {0};
    if (!c || !c->bundle || !c->status_path) {
        sl_error_set(&e, ENOMEM, "out of memory");
    } else {
        c->next = m->ctrs;
        m->ctrs = c;
        adopt_setup(c, &a, out, &e);
    }
    for (int s = 0; s < 2; s++)
        if (out[s] >= 0)
            close(out[s]);
    if (e.msg[0]) {
        mon_reply_err(m, r, "adopt %s: %s", a.id, e.msg);
        if (c)
            mon_ctr_free(c);
        return;
    }
    mon_status_write(c);
    mon_log(MON_INFO, "container %s adopted, pid %d%s%s", c->id, (int)c->pid,
            c->pidfd < 0 ? " (already ended)" : "",
            c->io.out_fd[0] < 0 ? " (without its output: lost)" : "");
    mon_reply(m, r, NULL, NULL, NULL, 0);
    if (c->pidfd < 0)
        look_for_record(c);
}
