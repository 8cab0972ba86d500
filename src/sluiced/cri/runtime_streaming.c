/* Exec, Attach, PortForward (URLs from the streaming server) and
 * ExecSync (run through the pod monitor, output captured). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cri/cri_util.h"
#include "cri/stream_sess.h"

/* Each of stdout and stderr is kept up to this, the rest is discarded
 * (as the kubelet's CRI runtimes do since CVE-2022-1708). */
#define SL_EXECSYNC_MAX_OUTPUT (16u * 1024 * 1024)
#define SL_EXECSYNC_READ_CHUNK 65536

static sl_ctr *running_ctr(sl_grpc_call *call, sl_rt *rt, const char *id)
{
    if (!*id) {
        sl_grpc_call_fail(call, SL_GRPC_INVALID_ARGUMENT, "missing required container_id");
        return NULL;
    }
    sl_ctr *c = sl_model_ctr(&rt->model, id);
    if (!c) {
        sl_grpc_call_fail(call, SL_GRPC_NOT_FOUND, "container \"%s\" not found", id);
        return NULL;
    }
    sl_ctr_status st;
    sl_model_ctr_status(&rt->model, c, &st);
    if (st.state != RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING) {
        sl_grpc_call_fail(call, SL_GRPC_FAILED_PRECONDITION, "container \"%s\" is not running", id);
        return NULL;
    }
    return c;
}

static void reply_url(sl_grpc_call *call, int rc, char *url, const char *msg,
                      const ProtobufCMessageDescriptor *d)
{
    if (rc == SL_ERR_FULL) {
        sl_grpc_call_fail(call, SL_GRPC_RESOURCE_EXHAUSTED,
                          "maximum number of in-flight requests exceeded");
    } else if (rc < 0) {
        sl_grpc_call_fail(call, rc == SL_ERR_INVAL ? SL_GRPC_INVALID_ARGUMENT : SL_GRPC_INTERNAL,
                          "%s", msg ? msg : sl_strerror(rc));
    } else {
        /* Exec, Attach and PortForward responses are all {1: url}. */
        Runtime__V1__ExecResponse resp = RUNTIME__V1__EXEC_RESPONSE__INIT;
        resp.base.descriptor = d;
        resp.url = url;
        sl_grpc_call_reply(call, &resp.base);
    }
    free(url);
}

void sl_cri_exec(sl_grpc_call *call, void *arg)
{
    sl_cri *cri = arg;
    const Runtime__V1__ExecRequest *req = (const void *)sl_grpc_call_request(call);
    if (!running_ctr(call, &cri->rt, req->container_id))
        return;
    sl_exec_request r = {.container_id = req->container_id,
                         .cmd = (const char *const *)req->cmd,
                         .ncmd = req->n_cmd,
                         .tty = req->tty,
                         .in = req->stdin,
                         .out = req->stdout,
                         .err = req->stderr};
    char *url = NULL;
    const char *msg = NULL;
    int rc = sl_server_get_exec(cri->stream, &r, &url, &msg);
    reply_url(call, rc, url, msg, &runtime__v1__exec_response__descriptor);
}

void sl_cri_attach(sl_grpc_call *call, void *arg)
{
    sl_cri *cri = arg;
    const Runtime__V1__AttachRequest *req = (const void *)sl_grpc_call_request(call);
    if (!running_ctr(call, &cri->rt, req->container_id))
        return;
    sl_attach_request r = {.container_id = req->container_id,
                           .tty = req->tty,
                           .in = req->stdin,
                           .out = req->stdout,
                           .err = req->stderr};
    char *url = NULL;
    const char *msg = NULL;
    int rc = sl_server_get_attach(cri->stream, &r, &url, &msg);
    reply_url(call, rc, url, msg, &runtime__v1__attach_response__descriptor);
}

void sl_cri_port_forward(sl_grpc_call *call, void *arg)
{
    sl_cri *cri = arg;
    const Runtime__V1__PortForwardRequest *req = (const void *)sl_grpc_call_request(call);
    if (*req->pod_sandbox_id && !sl_cri_ready_pod(call, &cri->rt, req->pod_sandbox_id))
        return;
    uint16_t ports[128];
    size_t n = 0;
    for (size_t i = 0; i < req->n_port && n < 128; i++) {
        if (req->port[i] < 1 || req->port[i] > 65535) {
            sl_grpc_call_fail(call, SL_GRPC_INVALID_ARGUMENT, "invalid port %d", req->port[i]);
            return;
        }
        ports[n++] = (uint16_t)req->port[i];
    }
    sl_portforward_request r = {.pod_sandbox_id = req->pod_sandbox_id, .ports = ports, .nports = n};
    char *url = NULL;
    const char *msg = NULL;
    int rc = sl_server_get_portforward(cri->stream, &r, &url, &msg);
    reply_url(call, rc, url, msg, &runtime__v1__port_forward_response__descriptor);
}

/* ---- ExecSync ---- */

typedef struct capture {
    uv_poll_t h;
    int fd;
    uint8_t *buf;
    size_t len, cap;
    bool eof, open;
    struct sync_op *op;
} capture;

typedef struct sync_op {
    sl_grpc_call *call;
    sl_stream_sess *sess;
    capture out, err;
    uv_timer_t timer;
    bool ended, failed, timed_out, replied;
    int code;
    char msg[1024];
    int handles;
    int64_t timeout_s;
} sync_op;

static void timer_free_cb(uv_handle_t *h)
{
    sync_op *op = h->data;
    if (--op->handles > 0)
        return;
    free(op->out.buf);
    free(op->err.buf);
    free(op);
}

static void capture_free_cb(uv_handle_t *h)
{
    capture *c = h->data;
    timer_free_cb((uv_handle_t *)&c->op->timer);
}

/* Answers once the exec ended and both outputs reached EOF. */
static void sync_maybe_done(sync_op *op)
{
    if (op->replied || !op->ended || (op->out.open && !op->out.eof) ||
        (op->err.open && !op->err.eof))
        return;
    op->replied = true;
    if (op->timed_out) {
        sl_grpc_call_fail(op->call, SL_GRPC_DEADLINE_EXCEEDED,
                          "command timed out after %lld seconds", (long long)op->timeout_s);
    } else if (op->failed) {
        sl_grpc_call_fail(op->call, SL_GRPC_UNKNOWN, "failed to exec in container: %s", op->msg);
    } else {
        Runtime__V1__ExecSyncResponse resp = RUNTIME__V1__EXEC_SYNC_RESPONSE__INIT;
        resp.stdout = (ProtobufCBinaryData){op->out.len, op->out.buf};
        resp.stderr = (ProtobufCBinaryData){op->err.len, op->err.buf};
        resp.exit_code = op->code;
        sl_grpc_call_reply(op->call, &resp.base);
    }
    uv_close((uv_handle_t *)&op->timer, timer_free_cb);
    if (op->out.open)
        uv_close((uv_handle_t *)&op->out.h, capture_free_cb);
    if (op->err.open)
        uv_close((uv_handle_t *)&op->err.h, capture_free_cb);
}

static void capture_cb(uv_poll_t *h, int status, int events)
{
    capture *c = h->data;
    (void)status;
    (void)events;
    uint8_t tmp[SL_EXECSYNC_READ_CHUNK];
    for (;;) {
        ssize_t n = read(c->fd, tmp, sizeof(tmp));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            c->eof = true;
            uv_poll_stop(h);
            close(c->fd);
            c->fd = -1;
            sync_maybe_done(c->op);
            return;
        }
        size_t keep = c->len < SL_EXECSYNC_MAX_OUTPUT ? SL_EXECSYNC_MAX_OUTPUT - c->len : 0;
        if (keep > (size_t)n)
            keep = (size_t)n;
        if (keep && c->len + keep > c->cap) { /* grow geometrically: no quadratic copying */
            size_t cap = c->cap ? c->cap * 2 : SL_EXECSYNC_READ_CHUNK;
            while (cap < c->len + keep)
                cap *= 2;
            uint8_t *nb = realloc(c->buf, cap);
            if (nb) {
                c->buf = nb;
                c->cap = cap;
            } else {
                keep = 0;
            }
        }
        if (keep) {
            memcpy(c->buf + c->len, tmp, keep);
            c->len += keep;
        }
    }
}

static void sync_end(sl_stream_sess *s, bool failed, int code, const char *msg)
{
    sync_op *op = s->data;
    sl_sess_free(s);
    op->sess = NULL;
    op->ended = true;
    op->failed = failed;
    op->code = code;
    snprintf(op->msg, sizeof(op->msg), "%.1000s", msg ? msg : "");
    sync_maybe_done(op);
}

static void sync_timeout_cb(uv_timer_t *t)
{
    sync_op *op = t->data;
    if (!op->sess)
        return;
    op->timed_out = true;
    sl_rt *rt = op->sess->rt;
    sl_pod *p = sl_model_pod(&rt->model, op->sess->pod_id);
    sl_error e;
    sl_monc *m = p ? sl_rt_pod_mon(rt, p, &e) : NULL;
    if (m)
        sl_monc_request(m, json_pack("{s:s, s:s}", "type", "kill_exec", "exec_id", op->sess->id),
                        NULL, 0, NULL, NULL, &e);
}

static void capture_start(sync_op *op, capture *c, uv_loop_t *loop, int fd)
{
    c->op = op;
    c->fd = fd;
    if (fd < 0) {
        c->eof = true;
        return;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    uv_poll_init(loop, &c->h, fd);
    c->h.data = c;
    c->open = true;
    op->handles++;
    uv_poll_start(&c->h, UV_READABLE | UV_DISCONNECT, capture_cb);
}

static void sync_started(void *arg, const json_t *reply, int *fds, size_t nfds)
{
    sync_op *op = arg;
    sl_stream_sess *s = op->sess;
    const char *err = !reply ? "the pod monitor went away"
                      : json_is_true(json_object_get(reply, "ok"))
                          ? NULL
                          : json_string_value(json_object_get(reply, "error"));
    int out = -1, errfd = -1;
    if (!err) {
        int io = sl_mon_fd_index(reply, "stdout"), ie = sl_mon_fd_index(reply, "stderr");
        if (io >= 0 && (size_t)io < nfds)
            out = fds[io], fds[io] = -1;
        if (ie >= 0 && (size_t)ie < nfds)
            errfd = fds[ie], fds[ie] = -1;
    }
    for (size_t i = 0; i < nfds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    capture_start(op, &op->out, s->rt->loop, out);
    capture_start(op, &op->err, s->rt->loop, errfd);
    s->running = true;
    if (err)
        sync_end(s, true, 0, err);
}

void sl_cri_exec_sync(sl_grpc_call *call, void *arg)
{
    sl_rt *rt = cri_rt(arg);
    const Runtime__V1__ExecSyncRequest *req = (const void *)sl_grpc_call_request(call);
    sl_ctr *c = running_ctr(call, rt, req->container_id);
    if (!c)
        return;
    if (req->n_cmd == 0) {
        sl_grpc_call_fail(call, SL_GRPC_INVALID_ARGUMENT, "missing required cmd");
        return;
    }
    sl_pod *p = sl_model_pod(&rt->model, c->pod_id);
    sl_error e;
    sl_monc *m = p ? sl_rt_pod_mon(rt, p, &e) : NULL;
    sync_op *op = m ? calloc(1, sizeof(*op)) : NULL;
    sl_stream_sess *s = op ? sl_sess_new(rt, SL_SESS_SYNC, c->pod_id, c->id) : NULL;
    if (!s) {
        free(op);
        sl_grpc_call_fail(call, SL_GRPC_UNAVAILABLE, "%s", m ? "out of memory" : e.msg);
        return;
    }
    op->call = call;
    op->sess = s;
    op->timeout_s = req->timeout;
    s->on_end = sync_end;
    s->data = op;
    uv_timer_init(rt->loop, &op->timer);
    op->timer.data = op;
    op->handles = 1;
    if (req->timeout > 0)
        uv_timer_start(&op->timer, sync_timeout_cb, (uint64_t)req->timeout * 1000, 0);
    json_t *cmd = json_array();
    for (size_t i = 0; i < req->n_cmd; i++)
        json_array_append_new(cmd, json_string(req->cmd[i]));
    json_t *mreq = json_pack("{s:s, s:s, s:s, s:o, s:b, s:b, s:b, s:b}", "type", "exec", "exec_id",
                             s->id, "container_id", c->id, "cmd", cmd, "tty", false, "stdin", false,
                             "stdout", true, "stderr", true);
    if (sl_monc_request(m, mreq, NULL, 0, sync_started, op, &e) < 0)
        sync_end(s, true, 0, e.msg);
}
