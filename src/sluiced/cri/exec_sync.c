/* ExecSync: the command runs through the pod monitor like a streaming
 * exec; sluiced reads its stdout and stderr pipes itself and answers once
 * the monitor reports the exit (which it does after the output closed, or
 * after its drain time when a background child keeps it open).
 *
 * Always answered on time: at the request's timeout the exec's whole
 * process group is killed and DEADLINE_EXCEEDED goes out at once, even if a
 * child that escaped the kill still holds the output open. The monitor
 * kills a runc exec still starting it too, and drops it unstarted while it
 * waits for admission (exec-max-concurrent-per-pod); a call that ends
 * early (cancelled, its gRPC deadline, its connection gone) is killed the
 * same way. A full admission queue (exec-queue-max) answers
 * RESOURCE_EXHAUSTED. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cri/cri_util.h"
#include "cri/stream_sess.h"

/* stdout and stderr together are kept up to this, so the answer stays under
 * the kubelet's 16 MiB gRPC message limit with room for the framing and
 * the note that says it was cut. */
#define SL_EXECSYNC_MAX_OUTPUT (16u * 1024 * 1024 - 64u * 1024)
#define SL_EXECSYNC_READ_CHUNK 65536

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
    sl_stream_sess *sess; /* NULL once the exec ended */
    capture out, err;
    uv_timer_t timer; /* the request's timeout */
    bool failed, timed_out, replied, exhausted;
    int code;
    size_t kept, dropped; /* output bytes, both streams */
    char msg[1024];
    int handles;
    int64_t timeout_s;
} sync_op;

static void handle_closed(uv_handle_t *h)
{
    sync_op *op = h->data;
    if (--op->handles > 0)
        return;
    free(op->out.buf);
    free(op->err.buf);
    free(op);
}

static void capture_closed(uv_handle_t *h)
{
    capture *c = h->data;
    handle_closed((uv_handle_t *)&c->op->timer);
}

static void capture_close(capture *c)
{
    if (!c->open)
        return;
    c->open = false;
    uv_close((uv_handle_t *)&c->h, capture_closed);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

/* Appends the note that says the output was cut, so the caller knows. */
static void note_dropped(sync_op *op)
{
    char note[160];
    int n = snprintf(note, sizeof(note),
                     "\nsluiced: ExecSync output cut at %zu bytes; %zu more bytes were dropped\n",
                     op->kept, op->dropped);
    capture *c = &op->err;
    uint8_t *nb = n > 0 ? realloc(c->buf, c->len + (size_t)n) : NULL;
    if (!nb)
        return;
    memcpy(nb + c->len, note, (size_t)n);
    c->buf = nb;
    c->len += (size_t)n;
}

static void reply(sync_op *op)
{
    op->replied = true;
    if (op->timed_out) {
        sl_grpc_call_fail(op->call, SL_GRPC_DEADLINE_EXCEEDED,
                          "command timed out after %lld seconds", (long long)op->timeout_s);
    } else if (op->failed) {
        sl_grpc_call_fail(op->call, op->exhausted ? SL_GRPC_RESOURCE_EXHAUSTED : SL_GRPC_UNKNOWN,
                          "failed to exec in container: %s", op->msg);
    } else {
        if (op->dropped)
            note_dropped(op);
        Runtime__V1__ExecSyncResponse resp = RUNTIME__V1__EXEC_SYNC_RESPONSE__INIT;
        resp.stdout = (ProtobufCBinaryData){op->out.len, op->out.buf};
        resp.stderr = (ProtobufCBinaryData){op->err.len, op->err.buf};
        resp.exit_code = op->code;
        sl_grpc_call_reply(op->call, &resp.base);
    }
    capture_close(&op->out);
    capture_close(&op->err);
}

/* Frees op once it replied and the exec ended (its session refers to op). */
static void maybe_free(sync_op *op)
{
    if (!op->replied || op->sess || uv_is_closing((uv_handle_t *)&op->timer))
        return;
    uv_close((uv_handle_t *)&op->timer, handle_closed);
}

static void keep(sync_op *op, capture *c, const uint8_t *b, size_t n)
{
    size_t room = SL_EXECSYNC_MAX_OUTPUT - op->kept, k = n < room ? n : room;
    if (k && c->len + k > c->cap) { /* grow geometrically: no quadratic copying */
        size_t cap = c->cap ? c->cap * 2 : SL_EXECSYNC_READ_CHUNK;
        while (cap < c->len + k)
            cap *= 2;
        uint8_t *nb = realloc(c->buf, cap);
        if (!nb)
            k = 0;
        else
            c->buf = nb, c->cap = cap;
    }
    if (k)
        memcpy(c->buf + c->len, b, k);
    c->len += k;
    op->kept += k;
    op->dropped += n - k;
}

/* Reads until the pipe is empty or at EOF. */
static void capture_read(capture *c)
{
    if (!c->open || c->eof)
        return;
    uint8_t tmp[SL_EXECSYNC_READ_CHUNK];
    for (;;) {
        ssize_t n = read(c->fd, tmp, sizeof(tmp));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            c->eof = true;
            uv_poll_stop(&c->h);
            return;
        }
        keep(c->op, c, tmp, (size_t)n);
    }
}

static void capture_cb(uv_poll_t *h, int status, int events)
{
    (void)status;
    (void)events;
    capture_read(h->data);
}

static void sync_end(sl_stream_sess *s, bool failed, int code, const char *msg)
{
    sync_op *op = s->data;
    sl_sess_free(s);
    op->sess = NULL;
    op->failed = failed;
    op->code = code;
    snprintf(op->msg, sizeof(op->msg), "%.1000s", msg ? msg : "");
    if (op->replied) {
        maybe_free(op);
        return;
    }
    /* What is still in the pipes belongs to the answer; a writer left
     * behind (a background child) does not hold it up. */
    capture_read(&op->out);
    capture_read(&op->err);
    reply(op);
    maybe_free(op);
}

/* Asks the monitor to kill the exec (or drop it, still queued). */
static void kill_exec(sync_op *op)
{
    sl_rt *rt = op->sess->rt;
    sl_pod *p = sl_model_pod(&rt->model, op->sess->pod_id);
    sl_error e;
    sl_monc *m = p ? sl_rt_pod_mon(rt, p, &e) : NULL;
    if (m)
        sl_monc_request(m, json_pack("{s:s, s:s}", "type", "kill_exec", "exec_id", op->sess->id),
                        NULL, 0, NULL, NULL, &e);
}

static void timeout_cb(uv_timer_t *t)
{
    sync_op *op = t->data;
    if (!op->sess || op->replied)
        return;
    op->timed_out = true;
    kill_exec(op);
    reply(op); /* on time, whatever the killed process's children do */
}

/* The call ended before its answer: nobody waits for the exec any more. */
static void cancel_cb(sl_grpc_call *call, void *arg)
{
    (void)call;
    sync_op *op = arg;
    if (!op->sess || op->replied)
        return;
    op->timed_out = true; /* the answer is dropped: any will do */
    kill_exec(op);
    reply(op);
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

static int take_fd(const json_t *reply, const char *name, int *fds, size_t nfds)
{
    int i = sl_mon_fd_index(reply, name), fd = -1;
    if (i >= 0 && (size_t)i < nfds)
        fd = fds[i], fds[i] = -1;
    return fd;
}

static void sync_started(void *arg, const json_t *rep, int *fds, size_t nfds)
{
    sync_op *op = arg;
    sl_stream_sess *s = op->sess;
    const char *err = !rep ? "the pod monitor went away"
                      : json_is_true(json_object_get(rep, "ok"))
                          ? NULL
                          : json_string_value(json_object_get(rep, "error"));
    const char *code = err && rep ? sl_mon_str(rep, "code") : NULL;
    op->exhausted = code && !strcmp(code, SL_MON_ERR_EXHAUSTED);
    int out = err ? -1 : take_fd(rep, "stdout", fds, nfds);
    int errfd = err ? -1 : take_fd(rep, "stderr", fds, nfds);
    for (size_t i = 0; i < nfds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (op->replied) { /* timed out before the monitor answered */
        if (out >= 0)
            close(out);
        if (errfd >= 0)
            close(errfd);
    } else {
        capture_start(op, &op->out, s->rt->loop, out);
        capture_start(op, &op->err, s->rt->loop, errfd);
    }
    s->sp.running = true;
    if (err)
        sync_end(s, true, 0, err);
}

void sl_cri_exec_limits(const sl_rt *rt, json_t *req)
{
    if (!req)
        return;
    json_object_set_new(req, "max_concurrent", json_integer(rt->cfg->exec_max_concurrent));
    json_object_set_new(req, "queue_max", json_integer(rt->cfg->exec_queue_max));
    json_object_set_new(req, "stdin_pipe_size", json_integer(rt->cfg->exec_stdin_pipe_size));
    json_object_set_new(req, "exec_mode", json_string(rt->cfg->exec_mode));
}

static json_t *exec_message(const sl_stream_sess *s, const Runtime__V1__ExecSyncRequest *req)
{
    json_t *cmd = json_array();
    for (size_t i = 0; i < req->n_cmd; i++)
        json_array_append_new(cmd, json_string(req->cmd[i]));
    json_t *msg = json_pack("{s:s, s:s, s:s, s:o, s:b, s:b, s:b, s:b}", "type", "exec", "exec_id",
                            s->id, "container_id", s->ctr_id, "cmd", cmd, "tty", false, "stdin",
                            false, "stdout", true, "stderr", true);
    sl_cri_exec_limits(s->rt, msg);
    return msg;
}

void sl_cri_exec_sync(sl_grpc_call *call, void *arg)
{
    sl_rt *rt = cri_rt(arg);
    const Runtime__V1__ExecSyncRequest *req = (const void *)sl_grpc_call_request(call);
    sl_ctr *c = sl_cri_running_ctr(call, rt, req->container_id);
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
        uv_timer_start(&op->timer, timeout_cb, (uint64_t)req->timeout * 1000, 0);
    sl_grpc_call_on_cancel(call, cancel_cb, op);
    if (sl_monc_request(m, exec_message(s, req), NULL, 0, sync_started, op, &e) < 0)
        sync_end(s, true, 0, e.msg);
}
