/* Signals through a signalfd, reaping every child until none is left
 * waiting (we are the subreaper of the pod's containers), and the
 * containers' exit records. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mon.h"

static const char *const state_names[] = {"created", "created", "running", "exited"};

static void remember(mon *m, pid_t pid, int status)
{
    /* A container init that died before we read its pid file. */
    mon_unclaimed *u = &m->unclaimed[m->nunclaimed++ % SL_MON_UNCLAIMED];
    u->pid = pid;
    u->status = status;
}

bool mon_unclaimed_take(mon *m, pid_t pid, int *status)
{
    for (unsigned i = 0; i < SL_MON_UNCLAIMED; i++) {
        if (m->unclaimed[i].pid == pid) {
            *status = m->unclaimed[i].status;
            m->unclaimed[i].pid = 0;
            return true;
        }
    }
    return false;
}

static void dispatch(mon *m, pid_t pid, int status)
{
    if (mon_pause_reaped(m, pid, status) || mon_jobs_reaped(m, pid, status) ||
        mon_exec_reaped(m, pid, status))
        return;
    for (mon_ctr *c = m->ctrs; c; c = c->next) {
        if (c->pid == pid && !c->reaped) {
            mon_ctr_reaped(c, status);
            return;
        }
    }
    mon_log(MON_DEBUG, "reaped orphan %d (exit %d)", (int)pid, mon_exit_code(status));
    remember(m, pid, status);
}

/* Until ECHILD (or nothing more has exited). */
static void reap(mon *m)
{
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid < 0 && errno == EINTR)
            continue;
        if (pid <= 0)
            return;
        dispatch(m, pid, status);
    }
}

static void sig_cb(sl_mwatch *w, uint32_t events, void *data)
{
    (void)w;
    (void)events;
    mon *m = data;
    struct signalfd_siginfo si;
    bool chld = false, term = false;
    while (read(m->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGCHLD)
            chld = true;
        else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
            term = true;
    }
    if (chld)
        reap(m);
    if (term && !m->shutting_down) {
        mon_log(MON_INFO, "signal: shutting down");
        mon_shutdown(m, NULL);
    }
}

int mon_signals_start(mon *m, sl_error *e)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
        return sl_error_set(e, errno, "sigprocmask");
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    m->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (m->sig_fd < 0)
        return sl_error_set(e, errno, "signalfd");
    if (!(m->sig_w = sl_mloop_watch(m->loop, m->sig_fd, EPOLLIN, sig_cb, m)))
        return sl_error_set(e, errno, "watch signalfd");
    reap(m);
    return 0;
}

void mon_signals_stop(mon *m)
{
    if (m->sig_w)
        sl_mwatch_close(m->sig_w);
    m->sig_w = NULL;
    m->sig_fd = -1;
}

static json_t *record(const mon_ctr *c)
{
    return json_pack("{s:s, s:i, s:i, s:I, s:I, s:I, s:s, s:s, s:I, s:I}", "state",
                     state_names[c->state], "pid", (int)c->pid, "exit_code", c->exit_code,
                     "created_at", (json_int_t)c->created_at, "started_at",
                     (json_int_t)c->started_at, "finished_at", (json_int_t)c->finished_at, "reason",
                     mon_ctr_reason(c), "message", c->message ? c->message : "",
                     "log_dropped_bytes", (json_int_t)c->io.log.dropped, "log_dropped_records",
                     (json_int_t)c->io.log.dropped_records);
}

json_t *mon_ctr_json(const mon_ctr *c)
{
    json_t *j = record(c);
    if (j)
        json_object_set_new(j, "id", json_string(c->id));
    return j;
}

int mon_status_write(mon_ctr *c)
{
    json_t *j = record(c);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!text)
        return -1;
    sl_error e;
    int rc = sl_write_file_atomic(c->status_path, text, strlen(text), 0644, &e);
    if (rc < 0)
        mon_log(MON_ERR, "container %s: %s", c->id, e.msg);
    free(text);
    return rc;
}
