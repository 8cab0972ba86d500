/* Container lifecycle through runc: create (pipes or a console socket),
 * start, stop (signals to the init process we reap), remove (runc delete),
 * exit records and events, shutdown of the whole pod. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup_host.h"
#include "mon.h"
#include "sluice/error.h"

static void advance(mon_ctr *c);
static void try_finalize(mon_ctr *c);

mon_ctr *mon_ctr_find(mon *m, const char *id)
{
    for (mon_ctr *c = m->ctrs; id && c; c = c->next)
        if (strcmp(c->id, id) == 0)
            return c;
    return NULL;
}

static unsigned count(const mon *m)
{
    unsigned n = 0;
    for (const mon_ctr *c = m->ctrs; c; c = c->next)
        n++;
    return n;
}

mon_ctr *mon_ctr_new(mon *m, const char *id, const char *bundle)
{
    mon_ctr *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->m = m;
    c->pidfd = -1;
    snprintf(c->id, sizeof(c->id), "%s", id);
    mon_io_init(&c->io, c);
    char *ctr_dir = sl_path_join(m->run_dir, "ctr");
    char *state = sl_path_join(m->state_dir, "containers");
    char *sdir = state ? sl_path_join(state, id) : NULL;
    c->bundle = strdup(bundle);
    c->dir = ctr_dir ? sl_path_join(ctr_dir, id) : NULL;
    c->pid_file = c->dir ? sl_path_join(c->dir, "pid") : NULL;
    c->status_path = sdir ? sl_path_join(sdir, "status.json") : NULL;
    free(ctr_dir);
    free(state);
    free(sdir);
    return c;
}

void mon_ctr_free(mon_ctr *c)
{
    for (mon_ctr **pp = &c->m->ctrs; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    }
    mon_job_cancel(c->job);
    mon_adopt_fini(c);
    mon_ctr_update_abort(c);
    mon_console_free(c->console);
    sl_mtimer_cancel(c->kill_timer);
    sl_mtimer_cancel(c->drain_timer);
    mon_io_fini(c, "container removed");
    if (c->create_req)
        mon_reply_err(c->m, c->create_req, "container removed");
    if (c->start_req)
        mon_reply_err(c->m, c->start_req, "container removed");
    mon_reply_all(c->m, &c->stop_waiters, NULL);
    mon_reply_all(c->m, &c->remove_waiters, NULL);
    free(c->bundle);
    free(c->dir);
    free(c->pid_file);
    free(c->status_path);
    free(c->create_err);
    free(c->oom_file);
    free(c->start_err);
    free(c->message);
    free(c);
}

/* ---- create ---- */

static pid_t read_pid(const char *path)
{
    char *text = NULL;
    size_t len;
    if (sl_read_file(path, 64, &text, &len, NULL) < 0)
        return -1;
    long v = strtol(text, NULL, 10);
    free(text);
    return v > 0 ? (pid_t)v : -1;
}

/* runc could not create the container from a bundle that exists (a
 * command that is not there, a mount that fails, ...). containerd runs
 * `runc create` at StartContainer, so the kubelet sees such a container
 * created, its start fail, and the container exited with a code and a
 * reason (and restarts it with back-off): the same here. */
static void create_unstartable(mon_ctr *c, const char *why)
{
    mon *m = c->m;
    char msg[SL_MON_ERR_TEXT];
    mon_runc_message(why, msg, sizeof(msg));
    mon_log(MON_WARN, "container %s cannot start: %s", c->id, msg);
    const char *args[] = {"delete", "--force", c->id, NULL};
    mon_runc(m, args, NULL, NULL, NULL, NULL); /* what runc may have left */
    mon_console_free(c->console);
    c->console = NULL;
    mon_io_fini(c, "container cannot start");
    c->pid = 0;
    c->start_err = strdup(*msg ? msg : "runc create failed");
    c->created_at = sl_real_ns();
    c->state = CTR_CREATED;
    mon_status_write(c);
    mon_reply(m, c->create_req, NULL, NULL, NULL, 0);
    c->create_req = NULL;
    advance(c);
}

static void create_maybe_done(mon_ctr *c)
{
    if (!c->create_exited || (c->tty && c->console && c->create_status == 0))
        return; /* runc still runs, or the PTY master is on its way */
    mon_io_drain_noise(c);
    const char *why = c->create_err && *c->create_err ? c->create_err : c->io.noise;
    if (c->create_status != 0 || (c->tty && c->io.out_fd[0] < 0) ||
        (c->pid = read_pid(c->pid_file)) <= 0) {
        if (c->create_status == 0)
            why = c->tty && c->io.out_fd[0] < 0 ? "no terminal came on the console socket"
                                                : "runc wrote no pid file";
        create_unstartable(c, why);
        return;
    }
    c->io.discard = false;
    c->io.noise_len = 0;
    if (!(c->oom_file = sl_cg_oom_file(c->pid)))
        mon_log(MON_WARN, "container %s: no memory cgroup found, OOM kills go unnoticed", c->id);
    c->created_at = sl_real_ns();
    c->state = CTR_CREATED;
    mon_status_write(c);
    mon_log(MON_INFO, "container %s created, pid %d", c->id, (int)c->pid);
    mon_reply(c->m, c->create_req, NULL, NULL, NULL, 0);
    c->create_req = NULL;
    int status;
    if (mon_unclaimed_take(c->m, c->pid, &status))
        mon_ctr_reaped(c, status);
    else
        advance(c);
}

static void create_done(mon *m, int status, const char *err, void *data)
{
    (void)m;
    mon_ctr *c = data;
    c->job = NULL;
    c->create_exited = true;
    c->create_status = status;
    c->create_err = strdup(err);
    create_maybe_done(c);
}

static void console_cb(mon *m, int master, void *data)
{
    (void)m;
    mon_ctr *c = data;
    mon_console_free(c->console);
    c->console = NULL;
    if (master >= 0) {
        fcntl(master, F_SETFL, O_NONBLOCK);
        c->io.out_fd[0] = master;
        if (c->stdin)
            c->io.in_fd = fcntl(master, F_DUPFD_CLOEXEC, 3);
        sl_error e;
        if (mon_io_start(c, &e) < 0)
            mon_log(MON_ERR, "container %s: %s", c->id, e.msg);
    }
    create_maybe_done(c);
}

/* Pipes for a non-tty container: child[] gets runc's (and so the
 * container's) stdio, ours are non-blocking. Returns 0 or -1 (errno). */
static int make_stdio(mon_ctr *c, int child[3])
{
    int p[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
    child[0] = -1;
    if (c->stdin && pipe2(p[0], O_CLOEXEC) < 0)
        return -1;
    if (pipe2(p[1], O_CLOEXEC) < 0 || pipe2(p[2], O_CLOEXEC) < 0) {
        int err = errno;
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 2; k++)
                if (p[i][k] >= 0)
                    close(p[i][k]);
        errno = err;
        return -1;
    }
    child[0] = c->stdin ? p[0][0] : c->m->devnull;
    child[1] = p[1][1];
    child[2] = p[2][1];
    c->io.in_fd = p[0][1];
    c->io.out_fd[0] = p[1][0];
    c->io.out_fd[1] = p[2][0];
    if (c->io.in_fd >= 0)
        fcntl(c->io.in_fd, F_SETFL, O_NONBLOCK);
    fcntl(c->io.out_fd[0], F_SETFL, O_NONBLOCK);
    fcntl(c->io.out_fd[1], F_SETFL, O_NONBLOCK);
    return 0;
}

static int create_parse(const json_t *msg, mon_ctr *tmpl, const char **log_path, const char **why)
{
    const char *id = sl_mon_str(msg, "container_id");
    const char *bundle = sl_mon_str(msg, "bundle");
    *log_path = sl_mon_str(msg, "log_path");
    if (!sl_mon_valid_id(id))
        return *why = "invalid container_id", -1;
    if (!bundle || bundle[0] != '/')
        return *why = "bundle must be an absolute path", -1;
    if (*log_path && **log_path && **log_path != '/')
        return *why = "log_path must be absolute", -1;
    if (sl_mon_bool(msg, "tty", false, &tmpl->tty) ||
        sl_mon_bool(msg, "stdin", false, &tmpl->stdin) ||
        sl_mon_bool(msg, "stdin_once", false, &tmpl->stdin_once))
        return *why = "tty, stdin and stdin_once must be booleans", -1;
    return 0;
}

static int create_setup(mon_ctr *c, const char *log_path, int child[3], sl_error *e)
{
    SL_AUTOFREE char *sdir = strdup(c->status_path);
    SL_AUTOFREE char *config = sl_path_join(c->bundle, "config.json");
    if (!sdir || !config)
        return sl_error_set(e, ENOMEM, "create");
    /* A bundle that is not there is the caller's error, not a start error. */
    if (access(config, R_OK) < 0)
        return sl_error_set(e, errno, "bundle %s", config);
    if (sl_mkdir_p(c->dir, 0700, e) < 0 || sl_mkdir_p(dirname(sdir), 0755, e) < 0)
        return -1;
    unlink(c->pid_file);
    if (sl_mon_log_open(&c->io.log, log_path, SL_MON_LOG_LINE_MAX, e) < 0)
        return -1;
    c->io.discard = true;
    if (c->tty)
        c->console = mon_console_new(c->m, console_cb, c, e);
    else if (make_stdio(c, child) < 0)
        return sl_error_set(e, errno, "stdio pipes");
    if (c->tty && !c->console)
        return -1;
    return mon_io_start(c, e);
}

/* Whether the container has a pid namespace of its own (an unreadable
 * config counts as shared, as in containerd's shim: runc will say more).
 * Joining the pod's namespace after its holder ended cannot work. */
static int check_pidns(mon *m, const char *bundle, bool *shared, char *why, size_t cap)
{
    mon_pidns_kind kind = MON_PIDNS_HOST;
    SL_AUTOFREE char *path = NULL;
    sl_error e;
    if (mon_bundle_pidns(bundle, &kind, &path, &e) < 0)
        mon_log(MON_WARN, "%s", e.msg);
    *shared = kind != MON_PIDNS_OWN;
    if (kind == MON_PIDNS_JOIN && path && m->pidns_file && !strcmp(path, m->pidns_file) &&
        !mon_pause_alive(m)) {
        snprintf(why, cap, "the pod's pid namespace is gone: its holder (%s) exited",
                 MON_PAUSE_NAME);
        return -1;
    }
    return 0;
}

static void close_child_ends(mon *m, int child[3])
{
    for (int i = 0; i < 3; i++)
        if (child[i] >= 0 && child[i] != m->devnull)
            close(child[i]);
}

void mon_ctr_create(mon *m, mon_req *r, const json_t *msg)
{
    mon_ctr tmpl = {0};
    const char *log_path, *why = NULL;
    if (create_parse(msg, &tmpl, &log_path, &why) < 0) {
        mon_reply_err(m, r, "%s", why);
        return;
    }
    const char *id = sl_mon_str(msg, "container_id");
    if (mon_ctr_find(m, id) || count(m) >= SL_MON_MAX_CONTAINERS) {
        mon_reply_err(m, r, mon_ctr_find(m, id) ? "container exists" : "too many containers");
        return;
    }
    bool shared_pidns;
    char pid_why[256];
    if (check_pidns(m, sl_mon_str(msg, "bundle"), &shared_pidns, pid_why, sizeof(pid_why)) < 0) {
        mon_reply_err(m, r, "create %s: %s", id, pid_why);
        return;
    }
    mon_ctr *c = mon_ctr_new(m, id, sl_mon_str(msg, "bundle"));
    if (!c || !c->bundle || !c->status_path) {
        mon_reply_err(m, r, "out of memory");
        if (c)
            mon_ctr_free(c);
        return;
    }
    c->tty = tmpl.tty;
    c->stdin = tmpl.stdin;
    c->stdin_once = tmpl.stdin_once;
    c->shared_pidns = shared_pidns;
    c->next = m->ctrs;
    m->ctrs = c;
    int child[3] = {-1, -1, -1};
    sl_error e;
    if (create_setup(c, log_path, child, &e) == 0) {
        const char *args[10] = {"create", "--bundle", c->bundle, "--pid-file", c->pid_file};
        int n = 5;
        if (c->console) {
            args[n++] = "--console-socket";
            args[n++] = mon_console_path(c->console);
        }
        args[n++] = c->id;
        args[n] = NULL;
        c->job = mon_runc(m, args, c->tty ? NULL : child, create_done, c, &e);
    }
    close_child_ends(m, child);
    if (!c->job) {
        mon_reply_err(m, r, "create %s: %s", id, e.msg);
        mon_ctr_free(c);
        return;
    }
    c->create_req = r;
    mon_log(MON_INFO, "container %s: creating (tty %d, stdin %d)", id, c->tty, c->stdin);
}

/* ---- start ---- */

static void start_done(mon *m, int status, const char *err, void *data)
{
    mon_ctr *c = data;
    c->job = NULL;
    if (status == 0) {
        c->started_at = c->start_issued_at;
        if (c->state == CTR_CREATED)
            c->state = CTR_RUNNING;
        mon_status_write(c);
        mon_log(MON_INFO, "container %s started", c->id);
        mon_reply(m, c->start_req, json_pack("{s:I}", "started_at", (json_int_t)c->started_at),
                  NULL, NULL, 0);
    } else {
        mon_reply_err(m, c->start_req, "runc start %s: %s", c->id, *err ? err : "failed");
    }
    c->start_req = NULL;
    mon_ctr_outputs_done(c); /* an exit that came first was waiting for this */
}

static mon_ctr *lookup(mon *m, mon_req *r, const json_t *msg)
{
    mon_ctr *c = mon_ctr_find(m, sl_mon_str(msg, "container_id"));
    if (!c)
        mon_reply_err(m, r, "no such container");
    return c;
}

/* The start of a container runc could not create fails, and it exits. */
static void start_unstartable(mon *m, mon_ctr *c, mon_req *r)
{
    char msg[SL_MON_ERR_TEXT];
    snprintf(msg, sizeof(msg), "%s", c->start_err);
    c->reaped = true; /* there is no process */
    c->exit_code = SL_MON_START_ERROR_CODE;
    c->finished_at = sl_real_ns();
    c->reason = "StartError";
    c->message = strdup(msg);
    try_finalize(c); /* the record says exited before the reply goes */
    mon_reply_err(m, r, "%s", msg);
}

void mon_ctr_start(mon *m, mon_req *r, const json_t *msg)
{
    mon_ctr *c = lookup(m, r, msg);
    if (!c)
        return;
    if (c->start_err && !c->reaped && !c->removing) {
        start_unstartable(m, c, r);
        return;
    }
    if (c->state != CTR_CREATED || c->job || c->reaped || c->removing) {
        mon_reply_err(m, r, "container %s cannot be started in its state", c->id);
        return;
    }
    const char *args[] = {"start", c->id, NULL};
    sl_error e;
    c->start_issued_at = sl_real_ns();
    if (!(c->job = mon_runc(m, args, NULL, start_done, c, &e))) {
        mon_reply_err(m, r, "start %s: %s", c->id, e.msg);
        return;
    }
    c->start_req = r;
}

/* ---- exit ---- */

static void drain_cb(void *data)
{
    mon_ctr *c = data;
    c->drain_timer = NULL;
    mon_log(MON_WARN, "container %s: output still open %d ms after exit", c->id, SL_MON_DRAIN_MS);
    mon_io_close_outputs(c);
}

/* The kernel counts OOM kills per memory cgroup (v1 memory.oom_control
 * since 4.13, v2 memory.events); the container's cgroup lives until runc
 * delete, so the counter is still there. Any kill in it counts, as with
 * containerd, which marks a container once an OOM event came. */
static bool oom_killed(const mon_ctr *c)
{
    uint64_t n = 0;
    return c->oom_file && sl_cg_oom_kills(c->oom_file, &n) == 0 && n > 0;
}

const char *mon_ctr_reason(const mon_ctr *c)
{
    if (c->reason) /* StartError */
        return c->reason;
    return c->finalized && c->oom_killed ? "OOMKilled" : "";
}

/* Exited: reaped, its output read to the end, no runc start pending. */
static void try_finalize(mon_ctr *c)
{
    if (c->finalized || !c->reaped || c->state == CTR_CREATING || c->job)
        return;
    if (c->io.out_fd[0] >= 0 || c->io.out_fd[1] >= 0) {
        if (!c->drain_timer)
            c->drain_timer = sl_mloop_timer(c->m->loop, SL_MON_DRAIN_MS, drain_cb, c);
        return;
    }
    sl_mtimer_cancel(c->drain_timer);
    c->drain_timer = NULL;
    c->finalized = true;
    c->state = CTR_EXITED;
    c->oom_killed = oom_killed(c);
    mon_status_write(c);
    mon_log(MON_INFO, "container %s exited %d%s", c->id, c->exit_code,
            c->oom_killed ? " (OOM kill)" : "");
    mon_event(c->m,
              json_pack("{s:s, s:s, s:i, s:I, s:s, s:s}", "type", "exited", "container_id", c->id,
                        "exit_code", c->exit_code, "finished_at", (json_int_t)c->finished_at,
                        "reason", mon_ctr_reason(c), "message", c->message ? c->message : ""));
    json_t *f = json_pack("{s:i, s:I}", "exit_code", c->exit_code, "finished_at",
                          (json_int_t)c->finished_at);
    mon_reply_all(c->m, &c->stop_waiters, f);
    json_decref(f);
    advance(c);
}

/* In a pid namespace it does not own, the end of a container's init ends
 * nothing else: kill what is left in its cgroup, as containerd's shim
 * does, so the container is over (and its output reaches EOF). */
static void kill_rest(mon_ctr *c)
{
    const char *args[] = {"kill", "--all", c->id, "KILL", NULL};
    sl_error e;
    if (!mon_runc(c->m, args, NULL, NULL, NULL, &e))
        mon_log(MON_WARN, "container %s: runc kill --all: %s", c->id, e.msg);
}

void mon_ctr_reaped(mon_ctr *c, int status)
{
    if (c->shared_pidns)
        kill_rest(c);
    c->reaped = true;
    c->exit_code = mon_exit_code(status);
    c->finished_at = sl_real_ns();
    sl_mtimer_cancel(c->kill_timer);
    c->kill_timer = NULL;
    try_finalize(c);
}

void mon_ctr_outputs_done(mon_ctr *c)
{
    try_finalize(c);
}

/* ---- stop ---- */

static void kill_cb(void *data)
{
    mon_ctr *c = data;
    c->kill_timer = NULL;
    mon_log(MON_INFO, "container %s: stop timeout, SIGKILL", c->id);
    mon_ctr_signal(c, SIGKILL);
}

void mon_ctr_stop(mon *m, mon_req *r, const json_t *msg)
{
    int64_t timeout;
    if (sl_mon_int(msg, "timeout", 0, SL_MON_MAX_STOP_TIMEOUT, 0, &timeout) != SL_OK) {
        mon_reply_err(m, r, "timeout must be 0..%d seconds", SL_MON_MAX_STOP_TIMEOUT);
        return;
    }
    mon_ctr *c = lookup(m, r, msg);
    if (!c)
        return;
    if (c->state == CTR_CREATING) {
        mon_reply_err(m, r, "container %s is being created", c->id);
        return;
    }
    if (c->finalized || (c->start_err && !c->reaped)) { /* no process to stop */
        mon_reply(m, r,
                  json_pack("{s:i, s:I}", "exit_code", c->exit_code, "finished_at",
                            (json_int_t)c->finished_at),
                  NULL, NULL, 0);
        return;
    }
    r->next = c->stop_waiters;
    c->stop_waiters = r;
    if (timeout == 0 || c->stopping) {
        if (timeout == 0)
            mon_ctr_signal(c, SIGKILL);
        return;
    }
    c->stopping = true;
    mon_ctr_signal(c, SIGTERM);
    c->kill_timer = sl_mloop_timer(m->loop, (uint64_t)timeout * 1000, kill_cb, c);
}

/* ---- remove and shutdown ---- */

static void delete_done(mon *m, int status, const char *err, void *data)
{
    mon_ctr *c = data;
    c->job = NULL;
    if (status != 0)
        mon_log(MON_WARN, "runc delete %s: %s", c->id, err);
    unlink(c->status_path);
    sl_rm_rf(c->dir, NULL);
    mon_log(MON_INFO, "container %s removed", c->id);
    mon_ctr_free(c); /* answers the remove waiters */
    mon_shutdown_check(m);
}

/* Moves a container that is being removed (or shut down) one step on. */
static void advance(mon_ctr *c)
{
    if (!(c->removing || c->m->shutting_down) || c->state == CTR_CREATING)
        return;
    if (c->start_err && !c->job && !c->deleting) { /* runc holds nothing of it */
        c->deleting = true;
        delete_done(c->m, 0, "", c);
        return;
    }
    if (!c->finalized) {
        if (!c->killed) {
            c->killed = true;
            mon_ctr_signal(c, SIGKILL);
            mon_exec_kill_all(c->m, c->id);
        }
        return;
    }
    if (c->job || c->deleting)
        return;
    c->deleting = true;
    const char *args[] = {"delete", "--force", c->id, NULL};
    sl_error e;
    if (!(c->job = mon_runc(c->m, args, NULL, delete_done, c, &e)))
        delete_done(c->m, -1, e.msg, c);
}

void mon_ctr_remove(mon *m, mon_req *r, const json_t *msg)
{
    mon_ctr *c = mon_ctr_find(m, sl_mon_str(msg, "container_id"));
    if (!c) {
        mon_reply(m, r, NULL, NULL, NULL, 0); /* idempotent */
        return;
    }
    if (c->state == CTR_CREATING) {
        mon_reply_err(m, r, "container %s is being created", c->id);
        return;
    }
    r->next = c->remove_waiters;
    c->remove_waiters = r;
    c->removing = true;
    advance(c);
}

void mon_ctr_reopen_log(mon *m, mon_req *r, const json_t *msg)
{
    mon_ctr *c = lookup(m, r, msg);
    if (!c)
        return;
    sl_error e;
    if (sl_mon_log_reopen(&c->io.log, &e) < 0) {
        mon_reply_err(m, r, "%s", e.msg);
        return;
    }
    mon_reply(m, r, NULL, NULL, NULL, 0);
}

static void shutdown_timeout_cb(void *data)
{
    mon *m = data;
    m->shutdown_timer = NULL;
    mon_log(MON_ERR, "shutdown: gave up waiting after %d ms", SL_MON_SHUTDOWN_MS);
    if (m->shutdown_req)
        mon_reply_err(m, m->shutdown_req, "shutdown timed out");
    m->shutdown_req = NULL;
    m->exit_status = 1;
    sl_mloop_stop(m->loop);
}

void mon_shutdown(mon *m, mon_req *r)
{
    m->shutting_down = true;
    m->shutdown_req = r;
    m->shutdown_timer = sl_mloop_timer(m->loop, SL_MON_SHUTDOWN_MS, shutdown_timeout_cb, m);
    mon_exec_kill_all(m, NULL);
    mon_ctr *c = m->ctrs;
    while (c) {
        mon_ctr *next = c->next;
        advance(c);
        c = next;
    }
    mon_shutdown_check(m);
}

void mon_shutdown_check(mon *m)
{
    if (!m->shutting_down || m->ctrs || m->execs)
        return;
    sl_mtimer_cancel(m->shutdown_timer);
    m->shutdown_timer = NULL;
    if (m->shutdown_req)
        mon_reply(m, m->shutdown_req, NULL, NULL, NULL, 0);
    m->shutdown_req = NULL;
    mon_log(MON_INFO, "shutdown complete");
    sl_mloop_stop(m->loop);
}

void mon_ctr_release_all(mon *m)
{
    while (m->ctrs)
        mon_ctr_free(m->ctrs);
}
