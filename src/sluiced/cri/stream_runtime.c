/* The libsluice runtime backend of sluiced: exec and attach run through
 * the pod monitor, which hands back plain fds (pipes or the PTY master);
 * port-forward connects from a thread that joined the pod's network
 * namespace. Monitor events end the sessions. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cri/cri_util.h"
#include "cri/stream_sess.h"
#include "fsutil.h"
#include "hp_connect.h"
#include "pod/netns.h"

/* ---- session registry ---- */

sl_stream_sess *sl_sess_new(sl_rt *rt, int kind, const char *pod_id, const char *ctr_id)
{
    sl_stream_sess *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->rt = rt;
    s->kind = kind;
    char id[SL_ID_HEX + 1];
    sl_model_new_id(id);
    snprintf(s->id, sizeof(s->id), "%.32s", id);
    snprintf(s->pod_id, sizeof(s->pod_id), "%s", pod_id);
    snprintf(s->ctr_id, sizeof(s->ctr_id), "%s", ctr_id);
    s->next = rt->sessions;
    rt->sessions = s;
    return s;
}

void sl_sess_free(sl_stream_sess *s)
{
    for (sl_stream_sess **pp = &s->rt->sessions; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    free(s);
}

/* Ends a streaming session (not ExecSync, which has its own end). */
static void end_proc(sl_stream_sess *s, bool failed, int code, const char *msg)
{
    sl_proc *proc = sl_sess_proc_take(&s->sp);
    if (!proc)
        return;
    sl_sess_free(s);
    sl_sess_proc_end(proc, failed, code, failed ? msg : NULL);
}

static void end_sess(sl_stream_sess *s, bool failed, int code, const char *msg)
{
    if (s->kind == SL_SESS_SYNC)
        s->on_end(s, failed, code, msg);
    else
        end_proc(s, failed, code, msg);
}

/* The monitor ended an attach session: with an error, or (none) because
 * its client's stdin ended and the client detached. */
static void attach_ended(sl_stream_sess *s, const char *error)
{
    if (error && *error) {
        fprintf(stderr, "sluiced: attach session %s to container %s ended: %s\n", s->id, s->ctr_id,
                error);
        end_sess(s, true, 0, error);
        return;
    }
    end_sess(s, false, 0, NULL);
}

void sl_rt_stream_event(sl_rt *rt, sl_pod *pod, const json_t *ev)
{
    const char *type = ev ? sl_mon_str(ev, "type") : NULL;
    const char *exec_id = ev ? sl_mon_str(ev, "exec_id") : NULL;
    const char *session = ev ? sl_mon_str(ev, "session") : NULL;
    const char *ctr = ev ? sl_mon_str(ev, "container_id") : NULL;
    int64_t code = ev ? json_integer_value(json_object_get(ev, "exit_code")) : 0;
    for (sl_stream_sess *s = rt->sessions, *next; s; s = next) {
        next = s->next;
        if (strcmp(s->pod_id, pod->id))
            continue;
        if (!ev)
            end_sess(s, true, 0, "the pod monitor went away");
        else if (!strcmp(type, "exec_exited") && exec_id && !strcmp(exec_id, s->id))
            end_sess(s, false, (int)code, NULL);
        else if (!strcmp(type, "attach_ended") && session && !strcmp(session, s->id))
            attach_ended(s, sl_mon_str(ev, "error"));
        else if (!strcmp(type, "exited") && ctr && s->kind == SL_SESS_ATTACH &&
                 !strcmp(ctr, s->ctr_id))
            end_sess(s, false, 0, NULL); /* attach ends with its container */
    }
}

/* ---- exec / attach ---- */

static int fd_named(const json_t *reply, const char *name, int *fds, size_t nfds)
{
    int i = sl_mon_fd_index(reply, name);
    if (i < 0 || (size_t)i >= nfds)
        return -1;
    int fd = fds[i];
    fds[i] = -1;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

static void send_simple(sl_rt *rt, sl_stream_sess *s, json_t *req);

static void started_cb(void *arg, const json_t *reply, int *fds, size_t nfds)
{
    sl_stream_sess *s = arg;
    const char *err = !reply ? "the pod monitor went away"
                      : json_is_true(json_object_get(reply, "ok"))
                          ? NULL
                          : json_string_value(json_object_get(reply, "error"));
    if (err || !s->sp.proc) {
        for (size_t i = 0; i < nfds; i++)
            close(fds[i]);
        if (s->sp.proc) {
            char msg[SL_MON_MAX_MESSAGE / 16]; /* the client sees it in an InternalError */
            sl_sess_proc_start_error(s->kind == SL_SESS_EXEC, err, msg, sizeof msg);
            end_proc(s, true, 0, msg);
            return;
        }
        /* cancelled meanwhile: an exec that did start must not linger */
        if (!err && s->kind == SL_SESS_EXEC)
            send_simple(s->rt, s, json_pack("{s:s, s:s}", "type", "kill_exec", "exec_id", s->id));
        sl_sess_free(s);
        return;
    }
    sl_proc_endpoints ep = {
        fd_named(reply, "stdin", fds, nfds), fd_named(reply, "stdout", fds, nfds),
        fd_named(reply, "stderr", fds, nfds), fd_named(reply, "tty", fds, nfds)};
    for (size_t i = 0; i < nfds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    sl_sess_proc_started(&s->sp, &ep);
}

/* Finds the running container and its monitor, or fails proc. */
static sl_monc *target(sl_rt *rt, sl_proc *proc, const char *ctr_id, sl_ctr **out)
{
    sl_ctr *c = sl_model_ctr(&rt->model, ctr_id);
    sl_pod *p = c ? sl_model_pod(&rt->model, c->pod_id) : NULL;
    sl_error e;
    sl_monc *m = p ? sl_rt_pod_mon(rt, p, &e) : NULL;
    if (!m) {
        sl_proc_failed(proc, c ? e.msg : "container not found");
        return NULL;
    }
    *out = c;
    return m;
}

static void send_start(sl_rt *rt, sl_proc *proc, sl_stream_sess *s, sl_monc *m, json_t *req)
{
    sl_error e;
    if (!s) {
        json_decref(req);
        sl_proc_failed(proc, "out of memory");
        return;
    }
    sl_sess_proc_bind(&s->sp, proc, s);
    (void)rt;
    if (sl_monc_request(m, req, NULL, 0, started_cb, s, &e) < 0)
        end_proc(s, true, 0, e.msg);
}

static void exec_start(void *arg, sl_proc *proc, const sl_exec_request *r, const sl_term_size *sz)
{
    sl_rt *rt = arg;
    sl_ctr *c;
    sl_monc *m = target(rt, proc, r->container_id, &c);
    if (!m)
        return;
    sl_stream_sess *s = sl_sess_new(rt, SL_SESS_EXEC, c->pod_id, c->id);
    json_t *cmd = json_array();
    for (size_t i = 0; i < r->ncmd; i++)
        json_array_append_new(cmd, json_string(r->cmd[i]));
    json_t *req = json_pack("{s:s, s:s, s:s, s:o, s:b, s:b, s:b, s:b, s:i, s:i}", "type", "exec",
                            "exec_id", s ? s->id : "", "container_id", c->id, "cmd", cmd, "tty",
                            r->tty, "stdin", r->in, "stdout", r->out, "stderr", r->err, "width",
                            sz ? sz->width : 0, "height", sz ? sz->height : 0);
    sl_cri_exec_limits(rt, req);
    send_start(rt, proc, s, m, req);
}

static void attach_start(void *arg, sl_proc *proc, const sl_attach_request *r,
                         const sl_term_size *sz)
{
    sl_rt *rt = arg;
    sl_ctr *c;
    sl_monc *m = target(rt, proc, r->container_id, &c);
    if (!m)
        return;
    sl_stream_sess *s = sl_sess_new(rt, SL_SESS_ATTACH, c->pod_id, c->id);
    json_t *req =
        json_pack("{s:s, s:s, s:s, s:b, s:b, s:b, s:b, s:i, s:i, s:I}", "type", "attach",
                  "container_id", c->id, "session", s ? s->id : "", "tty", r->tty, "stdin", r->in,
                  "stdout", r->out, "stderr", r->err, "width", sz ? sz->width : 0, "height",
                  sz ? sz->height : 0, "backlog", (json_int_t)rt->cfg->attach_backlog);
    send_start(rt, proc, s, m, req);
}

static void ignore_reply(void *arg, const json_t *reply, int *fds, size_t nfds)
{
    (void)arg;
    (void)reply;
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
}

static void send_simple(sl_rt *rt, sl_stream_sess *s, json_t *req)
{
    sl_pod *p = sl_model_pod(&rt->model, s->pod_id);
    sl_error e;
    sl_monc *m = p ? sl_rt_pod_mon(rt, p, &e) : NULL;
    if (!m || sl_monc_request(m, req, NULL, 0, ignore_reply, NULL, &e) < 0)
        if (!m)
            json_decref(req);
}

static void resize(void *arg, sl_proc *proc, sl_term_size size)
{
    sl_stream_sess *s = sl_proc_data(proc);
    if (!s)
        return;
    send_simple(arg, s,
                json_pack("{s:s, s:s, s:i, s:i}", "type", "resize",
                          s->kind == SL_SESS_EXEC ? "exec_id" : "session", s->id, "width",
                          size.width, "height", size.height));
}

static void cancel(void *arg, sl_proc *proc)
{
    sl_stream_sess *s = sl_proc_data(proc);
    if (!s)
        return;
    bool exec = s->kind == SL_SESS_EXEC;
    switch (sl_sess_proc_cancel(&s->sp, exec)) {
    case SL_SESS_CANCEL_END:
        end_proc(s, false, 0, NULL); /* an attach just goes away */
        break;
    case SL_SESS_CANCEL_EARLY: /* the start reply is still due: it frees s */
    case SL_SESS_CANCEL_KILL:
        if (exec)
            send_simple(arg, s, json_pack("{s:s, s:s}", "type", "kill_exec", "exec_id", s->id));
        break;
    }
}

static void release(void *arg, sl_proc *proc)
{
    (void)arg;
    sl_proc_set_data(proc, NULL);
}

/* ---- port-forward ---- */

typedef struct pf_job {
    const char *netns;
    uint16_t port;
    int fd;
    char err[256];
} pf_job;

/* Runs on its own thread: setns affects only the calling thread. */
static void *pf_thread(void *arg)
{
    pf_job *j = arg;
    int ns = j->netns ? open(j->netns, O_RDONLY | O_CLOEXEC) : -1;
    if (j->netns && (ns < 0 || setns(ns, CLONE_NEWNET) < 0)) {
        snprintf(j->err, sizeof(j->err), "cannot enter the pod network: %s", strerror(errno));
        if (ns >= 0)
            close(ns);
        return NULL;
    }
    if (ns >= 0)
        close(ns);
    j->fd = sl_hp_connect_loopback(j->port, j->err, sizeof(j->err));
    return NULL;
}

static void pf_connect(void *arg, sl_pfconn *conn, const char *sandbox_id, uint16_t port)
{
    sl_rt *rt = arg;
    sl_pod *p = sl_model_pod(&rt->model, sandbox_id);
    if (!p || !p->ready) {
        sl_pfconn_failed(conn, p ? "pod sandbox is not ready" : "pod sandbox not found");
        return;
    }
    SL_AUTOFREE char *netns = sl_rec_bool(p->rec, "host_network")
                                  ? NULL
                                  : sl_pod_ns_path(sl_rec_str(p->rec, "ns_dir"), "net");
    pf_job j = {.netns = netns, .port = port, .fd = -1};
    pthread_t t;
    /* A loopback connect finishes at once, so joining here is short. */
    if (pthread_create(&t, NULL, pf_thread, &j) != 0) {
        sl_pfconn_failed(conn, "cannot start the connect thread");
        return;
    }
    pthread_join(t, NULL);
    if (j.fd < 0)
        sl_pfconn_failed(conn, j.err);
    else
        sl_pfconn_connected(conn, j.fd);
}

static const sl_runtime_ops stream_ops = {
    .struct_size = SL_STRUCT_SIZE(sl_runtime_ops),
    .exec_start = exec_start,
    .attach_start = attach_start,
    .resize = resize,
    .cancel = cancel,
    .release = release,
    .portforward_connect = pf_connect,
    .portforward_cancel = NULL,
};

void sl_rt_stream_init(sl_rt *rt)
{
    rt->stream_rt.ops = &stream_ops;
    rt->stream_rt.data = rt;
}

const sl_runtime *sluiced_runtime(sl_cri *cri)
{
    return &cri->rt.stream_rt;
}
