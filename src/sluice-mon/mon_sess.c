/* Streaming sessions served by the monitor: sluiced hands over a
 * connection whose token it consumed (`session`: the socket, the bytes it
 * read, the request), and libsluice serves it here on the monitor's loop,
 * so the session outlives sluiced. The runtime behind it runs the same
 * requests sluiced would send (exec, attach, resize, kill_exec) in-process,
 * and learns from the same events how they end. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "mon.h"
#include "mon_pf.h"
#include "mon_sess_report.h"
#include "mon_session.h"
#include "sess_proc.h"
#include "sluice/error.h"
#include "sluice/server.h"

/* Rounds of the loop mon_sess_stop waits for the sessions to close. */
#define SL_MON_SESS_CLOSE_ROUNDS 200

typedef struct sess {
    struct sess *next;
    mon *m;
    sl_stream_kind kind; /* exec or attach */
    char id[33];         /* exec_id or attach session: 32 hex digits, as sluiced's */
    char ctr_id[SL_MON_MAX_ID + 1];
    sl_sess_proc sp; /* its libsluice process */
} sess;

struct mon_sess_state {
    sl_server *srv;
    sl_runtime rt;
    sess *list;
    uint64_t next_id;
    uint32_t pf_timeout_ms;
    uint32_t attach_backlog;                      /* sluiced's attach-backlog, 0: the default */
    uint32_t exec_max_concurrent, exec_queue_max; /* the last hand-off's */
    uint32_t exec_stdin_pipe_size;
    bool exec_native;
    bool closed;
    mon_sess_live live; /* sessions by operation and transport (hello) */
};

/* ---- registry ---- */

/* Random like sluiced's session ids (so neither side's ids collide and
 * messages read the same); a counter when the kernel has no entropy. */
static void new_id(struct mon_sess_state *st, char out[33])
{
    uint8_t b[16];
    ++st->next_id;
    if (getrandom(b, sizeof(b), GRND_NONBLOCK) != (ssize_t)sizeof(b)) {
        snprintf(out, 33, "%016llx%016llx", (unsigned long long)getpid(),
                 (unsigned long long)st->next_id);
        return;
    }
    for (size_t i = 0; i < sizeof(b); i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static sess *sess_new(mon *m, sl_stream_kind kind, const char *ctr_id)
{
    struct mon_sess_state *st = m->sess;
    sess *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->m = m;
    s->kind = kind;
    snprintf(s->ctr_id, sizeof(s->ctr_id), "%s", ctr_id);
    new_id(st, s->id);
    s->next = st->list;
    st->list = s;
    return s;
}

static void sess_free(sess *s)
{
    for (sess **pp = &s->m->sess->list; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    free(s);
}

static void end_proc(sess *s, bool failed, int code, const char *msg)
{
    sl_proc *proc = sl_sess_proc_take(&s->sp);
    if (!proc)
        return;
    sess_free(s);
    sl_sess_proc_end(proc, failed, code, msg);
}

void mon_sess_event(mon *m, const json_t *ev)
{
    if (!m->sess)
        return;
    const char *type = sl_mon_str(ev, "type");
    const char *exec_id = sl_mon_str(ev, "exec_id"), *session = sl_mon_str(ev, "session");
    const char *ctr = sl_mon_str(ev, "container_id");
    int code = (int)json_integer_value(json_object_get(ev, "exit_code"));
    for (sess *s = m->sess->list, *next; s && type; s = next) {
        next = s->next;
        if (!strcmp(type, "exec_exited") && exec_id && !strcmp(exec_id, s->id)) {
            end_proc(s, false, code, sl_mon_str(ev, "message"));
        } else if (!strcmp(type, "attach_ended") && session && !strcmp(session, s->id)) {
            const char *err = sl_mon_str(ev, "error");
            end_proc(s, err && *err, 0, err);
        } else if (!strcmp(type, "exited") && ctr && s->kind == SL_STREAM_ATTACH &&
                   !strcmp(ctr, s->ctr_id)) {
            end_proc(s, false, 0, NULL); /* an attach ends with its container */
        }
    }
}

/* ---- requests run in-process ---- */

static void ignore_reply(mon *m, void *arg, bool ok, const json_t *fields, int *fds,
                         const char *const *names, size_t nfds, const char *err)
{
    (void)m, (void)arg, (void)ok, (void)fields, (void)names, (void)err;
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
}

static void run_simple(mon *m, json_t *msg)
{
    if (msg)
        mon_local_request(m, msg, ignore_reply, NULL);
    json_decref(msg);
}

static int take_fd(const char *name, int *fds, const char *const *names, size_t nfds)
{
    for (size_t i = 0; i < nfds; i++) {
        if (fds[i] >= 0 && !strcmp(names[i], name)) {
            int fd = fds[i];
            fds[i] = -1;
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
            return fd;
        }
    }
    return -1;
}

static void started_cb(mon *m, void *arg, bool ok, const json_t *fields, int *fds,
                       const char *const *names, size_t nfds, const char *err)
{
    (void)fields;
    sess *s = arg;
    if (!ok || !s->sp.proc) {
        ignore_reply(m, NULL, ok, NULL, fds, names, nfds, NULL);
        if (s->sp.proc) {
            char msg[SL_MON_ERR_TEXT + 512];
            sl_sess_proc_start_error(s->kind == SL_STREAM_EXEC, err, msg, sizeof msg);
            end_proc(s, true, 0, msg);
            return;
        }
        /* cancelled meanwhile: an exec that did start must not linger */
        if (ok && s->kind == SL_STREAM_EXEC)
            run_simple(
                m, json_pack("{s:s, s:i, s:s}", "type", "kill_exec", "id", 0, "exec_id", s->id));
        sess_free(s);
        return;
    }
    sl_proc_endpoints ep = {take_fd("stdin", fds, names, nfds), take_fd("stdout", fds, names, nfds),
                            take_fd("stderr", fds, names, nfds), take_fd("tty", fds, names, nfds)};
    ignore_reply(m, NULL, ok, NULL, fds, names, nfds, NULL); /* any other */
    sl_sess_proc_started(&s->sp, &ep);
}

static void start(mon *m, sl_proc *proc, sess *s, json_t *msg)
{
    if (!s || !msg) {
        if (s)
            sess_free(s);
        json_decref(msg);
        sl_proc_failed(proc, "out of memory");
        return;
    }
    sl_sess_proc_bind(&s->sp, proc, s);
    mon_local_request(m, msg, started_cb, s);
    json_decref(msg);
}

/* ---- the runtime ---- */

static void exec_start(void *arg, sl_proc *proc, const sl_exec_request *r, const sl_term_size *sz)
{
    mon *m = arg;
    sess *s = sess_new(m, SL_STREAM_EXEC, r->container_id);
    json_t *cmd = json_array();
    for (size_t i = 0; cmd && i < r->ncmd; i++)
        json_array_append_new(cmd, json_string(r->cmd[i]));
    json_t *msg =
        json_pack("{s:s, s:i, s:s, s:s, s:o, s:b, s:b, s:b, s:b, s:i, s:i}", "type", "exec", "id",
                  0, "exec_id", s ? s->id : "", "container_id", r->container_id, "cmd", cmd, "tty",
                  r->tty, "stdin", r->in, "stdout", r->out, "stderr", r->err, "width",
                  sz ? sz->width : 0, "height", sz ? sz->height : 0);
    if (msg) {
        json_object_set_new(msg, "max_concurrent", json_integer(m->sess->exec_max_concurrent));
        json_object_set_new(msg, "queue_max", json_integer(m->sess->exec_queue_max));
        json_object_set_new(msg, "stdin_pipe_size", json_integer(m->sess->exec_stdin_pipe_size));
        json_object_set_new(msg, "exec_mode",
                            json_string(m->sess->exec_native ? "native" : "runc"));
    }
    start(m, proc, s, msg);
}

static void attach_start(void *arg, sl_proc *proc, const sl_attach_request *r,
                         const sl_term_size *sz)
{
    mon *m = arg;
    sess *s = sess_new(m, SL_STREAM_ATTACH, r->container_id);
    json_t *msg = json_pack("{s:s, s:i, s:s, s:s, s:b, s:b, s:b, s:b, s:i, s:i}", "type", "attach",
                            "id", 0, "container_id", r->container_id, "session", s ? s->id : "",
                            "tty", r->tty, "stdin", r->in, "stdout", r->out, "stderr", r->err,
                            "width", sz ? sz->width : 0, "height", sz ? sz->height : 0);
    if (msg && m->sess->attach_backlog)
        json_object_set_new(msg, "backlog", json_integer(m->sess->attach_backlog));
    start(m, proc, s, msg);
}

static void resize(void *arg, sl_proc *proc, sl_term_size size)
{
    sess *s = sl_proc_data(proc);
    if (!s)
        return;
    run_simple(arg, json_pack("{s:s, s:i, s:s, s:i, s:i}", "type", "resize", "id", 0,
                              s->kind == SL_STREAM_EXEC ? "exec_id" : "session", s->id, "width",
                              size.width, "height", size.height));
}

static void cancel(void *arg, sl_proc *proc)
{
    sess *s = sl_proc_data(proc);
    if (!s)
        return;
    bool exec = s->kind == SL_STREAM_EXEC;
    switch (sl_sess_proc_cancel(&s->sp, exec)) {
    case SL_SESS_CANCEL_END:
        /* An attach client that went away: its pipes close with the
         * session, and the monitor ends it as for any client (mon_attach.c). */
        end_proc(s, false, 0, NULL);
        break;
    case SL_SESS_CANCEL_EARLY: /* the start reply is still due: it frees s */
    case SL_SESS_CANCEL_KILL:
        if (exec)
            run_simple(
                arg, json_pack("{s:s, s:i, s:s}", "type", "kill_exec", "id", 0, "exec_id", s->id));
        break;
    }
}

static void release(void *arg, sl_proc *proc)
{
    (void)arg;
    sl_proc_set_data(proc, NULL);
}

static void pf_connect(void *arg, sl_pfconn *conn, const char *sandbox_id, uint16_t port)
{
    mon *m = arg;
    if (strcmp(sandbox_id, m->pod_id) != 0) {
        sl_pfconn_failed(conn, "pod sandbox not found");
        return;
    }
    mon_pf_connect(m, conn, port, m->sess->pf_timeout_ms);
}

static void pf_cancel(void *arg, sl_pfconn *conn)
{
    (void)arg;
    mon_pf_cancel(conn);
}

static const sl_runtime_ops sess_ops = {
    .struct_size = SL_STRUCT_SIZE(sl_runtime_ops),
    .exec_start = exec_start,
    .attach_start = attach_start,
    .resize = resize,
    .cancel = cancel,
    .release = release,
    .portforward_connect = pf_connect,
    .portforward_cancel = pf_cancel,
};

/* ---- the `session` request ---- */

/* Reads len bytes from the start of fd (a memfd). */
static uint8_t *read_bytes(int fd, size_t len)
{
    uint8_t *buf = malloc(len ? len : 1);
    size_t got = 0;
    while (buf && got < len) {
        ssize_t n = pread(fd, buf + got, len - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            free(buf);
            return NULL;
        }
        got += (size_t)n;
    }
    return buf;
}

typedef struct handoff {
    int conn, bytes;
    int64_t len;
    sl_stream_request req;
    sl_mon_session_limits lim;
} handoff;

static const char *parse(mon *m, const json_t *msg, int *fds, size_t nfds, handoff *h)
{
    const char *why = NULL;
    int ci = sl_mon_fd_index(msg, "conn"), bi = sl_mon_fd_index(msg, "bytes");
    h->conn = ci >= 0 && (size_t)ci < nfds ? fds[ci] : -1;
    h->bytes = bi >= 0 && (size_t)bi < nfds ? fds[bi] : -1;
    for (size_t i = 0; i < nfds; i++)
        if (fds[i] != h->conn && fds[i] != h->bytes)
            close(fds[i]);
    if (h->conn < 0 || h->bytes < 0)
        return "a session carries the fds conn and bytes";
    if (sl_mon_int(msg, "bytes", 0, SL_MON_MAX_HANDOFF_BYTES, -1, &h->len) != SL_OK || h->len < 0)
        return "bytes must be the number of bytes read (at most 1 MiB)";
    if (sl_mon_session_limits_parse(json_object_get(msg, "limits"), &h->lim, &why) < 0 ||
        sl_mon_session_request_parse(json_object_get(msg, "request"), &h->req, &why) < 0)
        return why;
    if (h->req.kind == SL_STREAM_PORTFORWARD && strcmp(h->req.u.pf.pod_sandbox_id, m->pod_id))
        return "the port-forward is for another pod";
    if (sl_server_session_count(m->sess->srv) >= h->lim.stream.max_sessions)
        return "too many streaming sessions";
    return NULL;
}

void mon_sess_request(mon *m, mon_req *r, const json_t *msg, int *fds, size_t nfds)
{
    handoff h = {0};
    const char *why = m->sess ? parse(m, msg, fds, nfds, &h) : "sessions are not served here";
    uint8_t *buf = why ? NULL : read_bytes(h.bytes, (size_t)h.len);
    if (!why && !buf)
        why = "cannot read the bytes of the connection";
    if (h.bytes >= 0)
        close(h.bytes);
    int rc = SL_ERR_INVAL;
    if (!why) {
        m->sess->pf_timeout_ms = h.lim.pf_connect_timeout_ms;
        m->sess->attach_backlog = h.lim.attach_backlog;
        m->sess->exec_max_concurrent = h.lim.exec_max_concurrent;
        m->sess->exec_queue_max = h.lim.exec_queue_max;
        m->sess->exec_stdin_pipe_size = h.lim.exec_stdin_pipe_size;
        m->sess->exec_native = h.lim.exec_native;
        rc = sl_server_adopt(m->sess->srv, h.conn, buf, (size_t)h.len, &h.req, &h.lim.stream);
        h.conn = -1; /* adopted or closed */
    }
    if (h.conn >= 0)
        close(h.conn);
    free(buf);
    sl_mon_session_request_fini(&h.req);
    if (why)
        mon_reply_err(m, r, "session: %s", why);
    else if (rc != SL_OK)
        mon_reply_err(m, r, "session: %s", sl_strerror(rc));
    else
        mon_reply(m, r, NULL, NULL, NULL, 0);
}

/* ---- start, stop ---- */

static void observe(void *arg, const sl_session_info *info)
{
    mon *m = arg;
    if (m->sess)
        mon_sess_report(m, &m->sess->live, info);
}

json_t *mon_sess_live_sessions(const mon *m)
{
    static const mon_sess_live none;
    return mon_sess_live_json(m->sess ? &m->sess->live : &none);
}

int mon_sess_start(mon *m, sl_error *e)
{
    struct mon_sess_state *st = calloc(1, sizeof(*st));
    if (!st)
        return sl_error_set(e, ENOMEM, "sessions");
    st->rt.ops = &sess_ops;
    st->rt.data = m;
    st->pf_timeout_ms = SL_MON_PF_CONNECT_TIMEOUT_MS;
    st->exec_max_concurrent = SL_MON_EXEC_MAX_CONCURRENT;
    st->exec_queue_max = SL_MON_EXEC_QUEUE_MAX;
    st->exec_stdin_pipe_size = SL_MON_EXEC_STDIN_PIPE_SIZE;
    sl_server_config cfg;
    sl_server_config_init(&cfg);
    cfg.max_sessions = UINT32_MAX; /* each hand-off brings sluiced's limit */
    int rc = sl_server_new(sl_mloop_uv(m->loop), &cfg, &st->rt, &st->srv);
    if (rc != SL_OK) {
        free(st);
        return sl_error_set(e, ENOMEM, "streaming sessions: %s", sl_strerror(rc));
    }
    m->sess = st;
    sl_server_set_session_observer(st->srv, observe, m);
    return 0;
}

static void closed_cb(sl_server *s, void *arg)
{
    (void)s;
    struct mon_sess_state *st = arg;
    st->closed = true;
}

void mon_sess_stop(mon *m)
{
    struct mon_sess_state *st = m->sess;
    if (!st)
        return;
    sl_server_close(st->srv, closed_cb, st);
    for (int i = 0; i < SL_MON_SESS_CLOSE_ROUNDS && !st->closed; i++)
        sl_mloop_run_once(m->loop, 10);
    if (st->closed)
        sl_server_free(st->srv);
    else
        mon_log(MON_WARN, "streaming sessions did not close in time");
    while (st->list)
        sess_free(st->list);
    m->sess = NULL;
    free(st);
}
