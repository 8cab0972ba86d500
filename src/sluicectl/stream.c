/* exec/attach sessions on the libsluice client. Everything runs on one
 * libuv loop; CRI calls made from callbacks (the fallback's new URL) are
 * synchronous, which is fine for a CLI. */
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

#include "tty.h"

#define RELAY_CHUNK 4096

typedef struct run {
    ctl *c;
    const ctl_stream_req *req;
    uv_loop_t loop;
    sl_client_exec *h;
    sl_transport transport;
    uv_signal_t winch;
    bool winch_on;
    int rc;       /* the remote exit code, or -1 with err set */
    sl_error err; /* why the session failed */
    bool over;
    /* attach -i with detach keys: stdin → scan → pipe → library */
    int pipe_r, pipe_w;
    uv_poll_t in_poll, out_poll;
    bool relay_on, in_eof, out_closed;
    uint8_t pend[RELAY_CHUNK + CTL_DETACH_MAX];
    size_t npend, matched;
} run;

int ctl_parse_detach_keys(const char *s, uint8_t *out, size_t *n)
{
    *n = 0;
    while (*s) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (*n == CTL_DETACH_MAX)
            return -1;
        if (len == 1) {
            out[(*n)++] = (uint8_t)s[0];
        } else if (len == 6 && !strncmp(s, "ctrl-", 5)) {
            char k = s[5];
            if (k >= 'a' && k <= 'z')
                out[(*n)++] = (uint8_t)(k - 'a' + 1);
            else if (k >= '@' && k <= '_')
                out[(*n)++] = (uint8_t)(k - '@');
            else
                return -1;
        } else {
            return -1;
        }
        s += len;
        if (*s == ',' && !*++s)
            return -1;
    }
    return 0;
}

int ctl_parse_transport(ctl *c, const char *val, bool allow_legacy, sl_transport *out)
{
    if (!strcmp(val, "spdy"))
        *out = SL_TRANSPORT_SPDY;
    else if (!strcmp(val, "websocket"))
        *out = SL_TRANSPORT_WEBSOCKET;
    else if (allow_legacy && !strcmp(val, "legacy"))
        *out = SL_TRANSPORT_WEBSOCKET_LEGACY;
    else
        return ctl_usage(c, "unknown transport \"%s\": use spdy or websocket%s", val,
                         allow_legacy ? " (or legacy)" : "");
    return 0;
}

void ctl_stream_explain(const sl_client_error *e, char *out, size_t outlen)
{
    const char *m = e->message ? e->message : "";
    switch (e->kind) {
    case SL_CLIENT_ERR_CONNECT:
        snprintf(out, outlen, "cannot reach the streaming server: %s", m);
        break;
    case SL_CLIENT_ERR_UPGRADE:
        if (e->http_status == 404)
            snprintf(out, outlen,
                     "the streaming server does not know this session's URL (%s): its token "
                     "expired or was used already; run the command again",
                     m);
        else
            snprintf(out, outlen, "the streaming server refused the session: %s", m);
        break;
    case SL_CLIENT_ERR_PROTOCOL:
        snprintf(out, outlen, "the streaming server broke the protocol: %s", m);
        break;
    case SL_CLIENT_ERR_LOST:
        snprintf(out, outlen,
                 "lost the connection to the streaming server before the session ended (%s)", m);
        break;
    case SL_CLIENT_ERR_REMOTE:
        snprintf(out, outlen, "%s", m);
        break;
    case SL_CLIENT_ERR_TIMEOUT:
        snprintf(out, outlen, "the streaming server did not answer in time: %s", m);
        break;
    default:
        snprintf(out, outlen, "%s: %s", sl_client_err_kind_str(e->kind), m);
    }
}

/* ---- CRI ---- */

/* The streaming URL of a CRI Exec or Attach; NULL with e set. */
static char *get_url(ctl *c, const ctl_stream_req *r, sl_error *e)
{
    ProtobufCMessage *resp;
    char *url = NULL;
    if (r->attach) {
        Runtime__V1__AttachRequest q = RUNTIME__V1__ATTACH_REQUEST__INIT;
        q.container_id = (char *)r->ctr_id;
        q.tty = r->tty, q.stdin = r->stdin_on, q.stdout = true, q.stderr = !r->tty;
        resp = ctl_rt_call(c, "Attach", &q.base, &runtime__v1__attach_response__descriptor, e);
        if (resp)
            url = strdup(((Runtime__V1__AttachResponse *)resp)->url);
    } else {
        Runtime__V1__ExecRequest q = RUNTIME__V1__EXEC_REQUEST__INIT;
        q.container_id = (char *)r->ctr_id;
        q.cmd = (char **)r->cmd, q.n_cmd = r->ncmd;
        q.tty = r->tty, q.stdin = r->stdin_on, q.stdout = true, q.stderr = !r->tty;
        resp = ctl_rt_call(c, "Exec", &q.base, &runtime__v1__exec_response__descriptor, e);
        if (resp)
            url = strdup(((Runtime__V1__ExecResponse *)resp)->url);
    }
    if (resp && !url)
        sl_error_set(e, ENOMEM, "%s", r->attach ? "Attach" : "Exec");
    ctl_free_msg(resp);
    if (url && !*url) {
        sl_error_set(e, 0, "the runtime returned an empty streaming URL");
        free(url);
        url = NULL;
    }
    return url;
}

/* ---- session ---- */

static void finish(run *x, int rc);
static int start(run *x);

static void on_upgraded(void *arg, const char *protocol)
{
    run *x = arg;
    ctl_debug(x->c, "streaming session upgraded: %s", protocol ? protocol : "(none)");
}

static void on_exit_cb(void *arg, int code, const char *message)
{
    run *x = arg;
    if (code)
        ctl_debug(x->c, "remote command ended with exit code %d: %s", code, message ? message : "");
    finish(x, code);
}

static void on_error_cb(void *arg, const sl_client_error *e)
{
    run *x = arg;
    if (x->transport == SL_TRANSPORT_WEBSOCKET && e->kind == SL_CLIENT_ERR_UPGRADE &&
        (e->http_status == 400 || e->http_status == 403)) {
        /* The URL's token is used up: a new Exec/Attach for the SPDY try. */
        ctl_debug(x->c, "WebSocket refused (%s); falling back to SPDY with a new URL",
                  e->message ? e->message : "");
        sl_client_exec_free(x->h);
        x->h = NULL;
        x->transport = SL_TRANSPORT_SPDY;
        if (start(x) < 0)
            finish(x, -1);
        return;
    }
    char msg[1200];
    ctl_stream_explain(e, msg, sizeof msg);
    sl_error_set(&x->err, 0, "%s", msg);
    finish(x, -1);
}

/* A CRI call for a URL and a client session on it; -1 with x->err set. */
static int start(run *x)
{
    char *url = get_url(x->c, x->req, &x->err);
    if (!url)
        return -1;
    ctl_debug(x->c, "streaming URL %s, transport %s", url,
              x->transport == SL_TRANSPORT_SPDY ? "spdy" : "websocket");
    sl_client_exec_opts o = {.struct_size = SL_STRUCT_SIZE(sl_client_exec_opts),
                             .url = url,
                             .transport = x->transport,
                             .tty = x->req->tty,
                             .stdin_fd = -1,
                             .stdout_fd = STDOUT_FILENO,
                             .stderr_fd = x->req->tty ? -1 : STDERR_FILENO};
    if (x->req->stdin_on)
        o.stdin_fd = x->relay_on ? x->pipe_r : STDIN_FILENO;
    if (x->req->tty)
        ctl_tty_size(&o.width, &o.height);
    static const sl_client_exec_cb cb = {SL_STRUCT_SIZE(sl_client_exec_cb), on_upgraded, on_exit_cb,
                                         on_error_cb};
    int rc = sl_client_exec_new(&x->loop, &o, &cb, x, &x->h);
    free(url);
    if (rc != SL_OK) {
        x->h = NULL;
        return sl_error_set(&x->err, 0, "cannot start the streaming session: %s", sl_strerror(rc));
    }
    return 0;
}

static void close_cb(uv_handle_t *h)
{
    (void)h;
}

static void pipe_w_closed(uv_handle_t *h);

static void close_out(run *x)
{
    if (x->out_closed)
        return;
    x->out_closed = true;
    uv_close((uv_handle_t *)&x->out_poll, pipe_w_closed);
}

static void pipe_w_closed(uv_handle_t *h)
{
    run *x = h->data;
    close(x->pipe_w);
    x->pipe_w = -1;
}

static void finish(run *x, int rc)
{
    if (x->over)
        return;
    x->over = true;
    x->rc = rc;
    if (x->h)
        sl_client_exec_free(x->h);
    x->h = NULL;
    if (x->winch_on)
        uv_close((uv_handle_t *)&x->winch, close_cb);
    if (x->relay_on) {
        uv_close((uv_handle_t *)&x->in_poll, close_cb);
        close_out(x);
    }
}

static void on_winch(uv_signal_t *s, int sig)
{
    run *x = s->data;
    uint16_t w, h;
    (void)sig;
    if (x->h && ctl_tty_size(&w, &h))
        sl_client_exec_resize(x->h, w, h);
}

/* ---- detach-key relay ---- */

static void on_in(uv_poll_t *p, int status, int events);
static void on_out(uv_poll_t *p, int status, int events);

static void relay_flush(run *x)
{
    while (x->npend) {
        ssize_t n = write(x->pipe_w, x->pend, x->npend);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        if (n < 0) { /* the session no longer reads: drop */
            x->npend = 0;
            break;
        }
        memmove(x->pend, x->pend + n, x->npend - (size_t)n);
        x->npend -= (size_t)n;
    }
    if (x->over || x->out_closed)
        return;
    if (x->npend) {
        uv_poll_stop(&x->in_poll);
        uv_poll_start(&x->out_poll, UV_WRITABLE, on_out);
        return;
    }
    uv_poll_stop(&x->out_poll);
    if (x->in_eof)
        close_out(x); /* EOF for the session */
    else
        uv_poll_start(&x->in_poll, UV_READABLE, on_in);
}

static void on_out(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    relay_flush(p->data);
}

static void detach(run *x)
{
    ctl_tty_restore();
    fputs("\nread escape sequence\n", stderr);
    finish(x, 0);
}

/* Copies input to pend, holding back a possible detach sequence. */
static bool scan(run *x, const uint8_t *b, size_t n)
{
    const ctl_stream_req *r = x->req;
    for (size_t i = 0; i < n; i++) {
        if (r->ndetach && b[i] == r->detach[x->matched]) {
            if (++x->matched == r->ndetach)
                return true;
            continue;
        }
        if (x->matched) {
            memcpy(x->pend + x->npend, r->detach, x->matched);
            x->npend += x->matched;
            x->matched = 0;
            if (r->ndetach && b[i] == r->detach[0]) {
                x->matched = 1;
                continue;
            }
        }
        x->pend[x->npend++] = b[i];
    }
    return false;
}

static void on_in(uv_poll_t *p, int status, int events)
{
    run *x = p->data;
    uint8_t buf[RELAY_CHUNK];
    (void)events;
    ssize_t n = status < 0 ? -1 : read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        x->in_eof = true;
        uv_poll_stop(&x->in_poll);
        memcpy(x->pend + x->npend, x->req->detach, x->matched);
        x->npend += x->matched;
        x->matched = 0;
    } else if (scan(x, buf, (size_t)n)) {
        detach(x);
        return;
    }
    relay_flush(x);
}

/* Sets the relay up when stdin can be polled (a tty or pipe; not a file). */
static void relay_setup(run *x)
{
    int pfd[2];
    if (!x->req->attach || !x->req->stdin_on || !x->req->ndetach)
        return;
    if (uv_poll_init(&x->loop, &x->in_poll, STDIN_FILENO) != 0)
        return;
    if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0) {
        uv_close((uv_handle_t *)&x->in_poll, close_cb);
        return;
    }
    x->pipe_r = pfd[0];
    x->pipe_w = pfd[1];
    uv_poll_init(&x->loop, &x->out_poll, x->pipe_w);
    x->in_poll.data = x->out_poll.data = x;
    fcntl(STDIN_FILENO, F_SETFL, fcntl(STDIN_FILENO, F_GETFL) | O_NONBLOCK);
    uv_poll_start(&x->in_poll, UV_READABLE, on_in);
    x->relay_on = true;
}

int ctl_stream_run(ctl *c, const ctl_stream_req *req, sl_error *e)
{
    run x = {.c = c, .req = req, .transport = req->transport, .pipe_r = -1, .pipe_w = -1};
    ctl_tty_guard();
    if (uv_loop_init(&x.loop) != 0)
        return sl_error_set(e, 0, "cannot set up the event loop");
    if (req->tty && req->stdin_on && isatty(STDIN_FILENO) && ctl_tty_raw(STDIN_FILENO) < 0)
        ctl_warn(c, "cannot put the terminal into raw mode: %s", strerror(errno));
    if (req->tty && !isatty(STDIN_FILENO))
        ctl_debug(c, "stdin is not a terminal: remote tty without local raw mode");
    relay_setup(&x);
    if (req->tty && uv_signal_init(&x.loop, &x.winch) == 0) {
        x.winch.data = &x;
        uv_signal_start(&x.winch, on_winch, SIGWINCH);
        x.winch_on = true;
    }
    if (start(&x) < 0)
        finish(&x, -1);
    uv_run(&x.loop, UV_RUN_DEFAULT);
    if (x.pipe_r >= 0)
        close(x.pipe_r);
    uv_loop_close(&x.loop);
    ctl_tty_restore(); /* before the caller prints why it failed */
    if (x.rc < 0)
        *e = x.err;
    return x.rc;
}
