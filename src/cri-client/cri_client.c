/* Synchronous CRI gRPC client over HTTP/2 (prior knowledge) on a unix
 * socket. nghttp2 does the framing; this file only moves bytes between it
 * and the socket with poll() until the call's stream closes or its
 * deadline passes. */
#include "cri_client.h"

#include <errno.h>
#include <fcntl.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "pct.h"

#define READ_CHUNK 65536u
#define OUT_BATCH 65536u  /* bytes gathered from nghttp2 before writing */
#define LPM_HEADER 5u     /* gRPC length-prefixed message header */
#define IDLE_READS_MAX 16 /* reads that sl_cri_client_usable gives what came meanwhile */

typedef struct call {
    int32_t stream_id;
    const char *path;
    uint8_t *req; /* length-prefixed request message */
    size_t req_len, req_off;
    int http_status;
    char content_type[64];
    int grpc_status; /* -1 = not seen */
    char grpc_msg[SL_CRI_MAX_ERR];
    uint8_t *body;
    size_t body_len, body_cap;
    bool too_large, closed;
    uint32_t rst_code;
    /* server streaming: messages go to scb as they complete */
    const sl_cri_stream_cb *scb;
    const ProtobufCMessageDescriptor *desc;
    sl_error stream_err; /* why delivery stopped, when it did */
    bool stream_failed, stream_stopped;
} call;

struct sl_cri_client {
    char *endpoint;
    int fd;
    nghttp2_session *h2;
    call *cur;
    bool broken;
    sl_error broken_err;
    uint8_t *obuf; /* bytes from nghttp2 not yet written */
    size_t olen, ooff, ocap;
};

/* Fills *err with a gRPC code and a complete message (the errno text is in
 * the format where it helps); errnum is 0 for the runtime's answers. */
static int fail(sl_error *err, int code, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(sl_error *err, int code, int errnum, const char *fmt, ...)
{
    err->code = code;
    err->errnum = errnum;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool sl_cri_is_local(const sl_error *err)
{
    return err->errnum != 0;
}

bool sl_cri_transport_failed(const sl_error *err)
{
    return err->errnum != 0 && err->code == SL_CRI_UNAVAILABLE;
}

const char *sl_cri_code_name(int code)
{
    return sl_grpc_code_go_name(code);
}

int sl_cri_http_to_code(int http_status)
{
    switch (http_status) {
    case 400:
        return SL_CRI_INTERNAL;
    case 401:
        return SL_CRI_UNAUTHENTICATED;
    case 403:
        return SL_CRI_PERMISSION_DENIED;
    case 404:
        return SL_CRI_UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
        return SL_CRI_UNAVAILABLE;
    default:
        return SL_CRI_UNKNOWN;
    }
}

void sl_cri_format_timeout(uint64_t ms, char out[10])
{
    /* At most 8 digits (gRPC spec): move to a coarser unit when needed. */
    static const struct {
        uint64_t div;
        char unit;
    } units[] = {{1, 'm'}, {1000, 'S'}, {60000, 'M'}, {3600000, 'H'}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        uint64_t v = (ms + units[i].div - 1) / units[i].div;
        if (v <= 99999999u) {
            snprintf(out, 10, "%llu%c", (unsigned long long)v, units[i].unit);
            return;
        }
    }
    snprintf(out, 10, "99999999H");
}

/* ---- nghttp2 callbacks --------------------------------------------------- */

static call *cur_call(void *user_data, int32_t stream_id)
{
    sl_cri_client *c = user_data;
    if (!c->cur || c->cur->stream_id != stream_id)
        return NULL;
    return c->cur;
}

static bool name_is(const uint8_t *name, size_t len, const char *want)
{
    return len == strlen(want) && memcmp(name, want, len) == 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user_data)
{
    (void)s;
    (void)flags;
    call *cl = cur_call(user_data, frame->hd.stream_id);
    if (!cl)
        return 0;
    char v[32];
    size_t n = valuelen < sizeof v - 1 ? valuelen : sizeof v - 1;
    memcpy(v, value, n);
    v[n] = '\0';
    if (name_is(name, namelen, ":status"))
        cl->http_status = atoi(v);
    else if (name_is(name, namelen, "content-type"))
        snprintf(cl->content_type, sizeof cl->content_type, "%.*s", (int)valuelen,
                 (const char *)value);
    else if (name_is(name, namelen, "grpc-status"))
        cl->grpc_status = atoi(v);
    else if (name_is(name, namelen, "grpc-message"))
        sl_pct_decode((const char *)value, valuelen, cl->grpc_msg, sizeof cl->grpc_msg, 0);
    return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t stream_id, const uint8_t *data,
                   size_t len, void *user_data)
{
    (void)flags;
    call *cl = cur_call(user_data, stream_id);
    if (!cl || cl->too_large)
        return 0;
    /* A stream's body holds at most one partial message plus one read. */
    size_t slack = cl->scb ? READ_CHUNK : 0;
    if (cl->body_len + len > SL_CRI_MAX_RECV_MESSAGE + LPM_HEADER + slack) {
        cl->too_large = true;
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
        return 0;
    }
    if (cl->body_len + len > cl->body_cap) {
        size_t cap = cl->body_cap ? cl->body_cap : 4096;
        while (cap < cl->body_len + len)
            cap *= 2;
        uint8_t *nb = realloc(cl->body, cap);
        if (!nb)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        cl->body = nb;
        cl->body_cap = cap;
    }
    memcpy(cl->body + cl->body_len, data, len);
    cl->body_len += len;
    return 0;
}

static int on_close(nghttp2_session *s, int32_t stream_id, uint32_t error_code, void *user_data)
{
    (void)s;
    call *cl = cur_call(user_data, stream_id);
    if (cl) {
        cl->closed = true;
        cl->rst_code = error_code;
    }
    return 0;
}

static ssize_t read_req(nghttp2_session *s, int32_t stream_id, uint8_t *buf, size_t length,
                        uint32_t *data_flags, nghttp2_data_source *source, void *user_data)
{
    (void)s;
    (void)stream_id;
    (void)user_data;
    call *cl = source->ptr;
    size_t n = cl->req_len - cl->req_off;
    if (n > length)
        n = length;
    memcpy(buf, cl->req + cl->req_off, n);
    cl->req_off += n;
    if (cl->req_off == cl->req_len)
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* ---- socket pump --------------------------------------------------------- */

static void mark_broken(sl_cri_client *c, const sl_error *err)
{
    c->broken = true;
    c->broken_err = *err;
}

/* Gathers pending frames from nghttp2 into obuf. */
static int gather(sl_cri_client *c, sl_error *err)
{
    if (c->ooff == c->olen)
        c->ooff = c->olen = 0;
    while (c->olen < OUT_BATCH) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(c->h2, &data);
        if (n < 0) {
            fail(err, SL_CRI_INTERNAL, EPROTO, "HTTP/2 error: %s", nghttp2_strerror((int)n));
            return -1;
        }
        if (n == 0)
            break;
        if (c->olen + (size_t)n > c->ocap) {
            size_t cap = c->olen + (size_t)n > 2 * c->ocap ? c->olen + (size_t)n : 2 * c->ocap;
            uint8_t *nb = realloc(c->obuf, cap);
            if (!nb) {
                fail(err, SL_CRI_INTERNAL, ENOMEM, "out of memory");
                return -1;
            }
            c->obuf = nb;
            c->ocap = cap;
        }
        memcpy(c->obuf + c->olen, data, (size_t)n);
        c->olen += (size_t)n;
    }
    return 0;
}

static int write_some(sl_cri_client *c, sl_error *err)
{
    ssize_t n = send(c->fd, c->obuf + c->ooff, c->olen - c->ooff, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
        fail(err, SL_CRI_UNAVAILABLE, errno,
             "the runtime at %s closed the connection (%s; did it stop or restart?)", c->endpoint,
             strerror(errno));
        return -1;
    }
    if (n < 0) {
        fail(err, SL_CRI_UNAVAILABLE, errno, "writing to %s: %s", c->endpoint, strerror(errno));
        return -1;
    }
    c->ooff += (size_t)n;
    return 0;
}

static int read_some(sl_cri_client *c, sl_error *err)
{
    uint8_t buf[READ_CHUNK];
    ssize_t n = recv(c->fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n <= 0) {
        fail(err, SL_CRI_UNAVAILABLE, n < 0 ? errno : ECONNRESET,
             "the runtime at %s closed the connection%s%s (did it stop or restart?)", c->endpoint,
             n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
        return -1;
    }
    ssize_t rv = nghttp2_session_mem_recv(c->h2, buf, (size_t)n);
    if (rv < 0) {
        fail(err, SL_CRI_INTERNAL, EPROTO, "the runtime at %s broke HTTP/2: %s", c->endpoint,
             nghttp2_strerror((int)rv));
        return -1;
    }
    return 0;
}

/* ---- server streaming ---------------------------------------------------- */

static size_t lpm_len(const uint8_t *p)
{
    return (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
}

static void stream_fail(call *cl, int code, const char *fmt, size_t n)
{
    cl->stream_failed = true;
    fail(&cl->stream_err, code, 0, fmt, cl->path, n);
}

/* Hands every complete message in cl->body to the stream's callback and
 * keeps the rest (a message not complete yet). */
static void deliver(call *cl)
{
    size_t off = 0;
    while (!cl->stream_failed && !cl->stream_stopped && cl->http_status == 200 &&
           cl->body_len - off >= LPM_HEADER) {
        const uint8_t *p = cl->body + off;
        size_t n = lpm_len(p);
        if (p[0] != 0) {
            stream_fail(cl, SL_CRI_INTERNAL,
                        "a message of %s is compressed (%zu bytes), which this client does not "
                        "support",
                        n);
            break;
        }
        if (n > SL_CRI_MAX_RECV_MESSAGE) {
            stream_fail(cl, SL_CRI_RESOURCE_EXHAUSTED,
                        "a message of %s is larger than the limit (%zu bytes)", n);
            break;
        }
        if (cl->body_len - off - LPM_HEADER < n)
            break;
        ProtobufCMessage *m = protobuf_c_message_unpack(cl->desc, NULL, n, p + LPM_HEADER);
        if (!m) {
            stream_fail(cl, SL_CRI_INTERNAL, "could not decode a message of %s (%zu bytes)", n);
            break;
        }
        if (cl->scb->on_msg(cl->scb->arg, m) != 0)
            cl->stream_stopped = true;
        protobuf_c_message_free_unpacked(m, NULL);
        off += LPM_HEADER + n;
    }
    if (off == 0)
        return; /* nothing delivered (the body may not even exist yet) */
    memmove(cl->body, cl->body + off, cl->body_len - off);
    cl->body_len -= off;
}

/* True when the stream must end now: its callback asked, or delivery failed. */
static bool stream_halted(call *cl)
{
    if (!cl->stream_stopped && cl->scb->stop && cl->scb->stop(cl->scb->arg))
        cl->stream_stopped = true;
    return cl->stream_stopped || cl->stream_failed;
}

/* Runs I/O until cl closes (or, with cl NULL, until everything is written),
 * the deadline passes (returns 1), a stream is halted (2) or the
 * connection fails (-1, *err). */
static int pump(sl_cri_client *c, call *cl, int64_t deadline, sl_error *err)
{
    for (;;) {
        if (cl && cl->scb && stream_halted(cl))
            return 2;
        if (cl && cl->closed)
            return 0;
        if (gather(c, err) < 0)
            return -1;
        bool pending = c->ooff < c->olen;
        if (!cl && !pending)
            return 0;
        if (!pending && !nghttp2_session_want_read(c->h2)) {
            fail(err, SL_CRI_UNAVAILABLE, ECONNRESET,
                 "the runtime at %s ended the HTTP/2 session (GOAWAY)", c->endpoint);
            return -1;
        }
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return 1;
        struct pollfd p = {.fd = c->fd, .events = (short)(POLLIN | (pending ? POLLOUT : 0))};
        int64_t cap = cl && cl->scb ? SL_CRI_STREAM_TICK_MS : 60000;
        int r = poll(&p, 1, (int)(left > cap ? cap : left));
        if (r < 0 && errno != EINTR) {
            fail(err, SL_CRI_INTERNAL, errno, "poll: %s", strerror(errno));
            return -1;
        }
        if (r <= 0)
            continue;
        if ((p.revents & (POLLOUT | POLLERR)) && pending && write_some(c, err) < 0)
            return -1;
        if ((p.revents & (POLLIN | POLLHUP | POLLERR)) && read_some(c, err) < 0)
            return -1;
        if (cl && cl->scb)
            deliver(cl);
    }
}

/* ---- connect ------------------------------------------------------------- */

static const char *endpoint_path(const char *ep)
{
    if (strncmp(ep, "unix://", 7) == 0)
        return ep + 7;
    if (strncmp(ep, "unix:", 5) == 0)
        return ep + 5;
    if (ep[0] == '/')
        return ep;
    return NULL;
}

static int wait_connected(int fd, const char *ep, uint32_t timeout_ms, sl_error *err)
{
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int r;
    do
        r = poll(&p, 1, (int)timeout_ms);
    while (r < 0 && errno == EINTR);
    if (r == 0) {
        fail(err, SL_CRI_UNAVAILABLE, ETIMEDOUT, "connecting to %s: timed out after %u ms", ep,
             timeout_ms);
        return -1;
    }
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
        fail(err, SL_CRI_UNAVAILABLE, soerr ? soerr : errno, "connecting to %s: %s", ep,
             strerror(soerr ? soerr : errno));
        return -1;
    }
    return 0;
}

static int open_socket(const char *ep, uint32_t timeout_ms, sl_error *err)
{
    const char *path = endpoint_path(ep);
    if (!path || path[0] != '/') {
        fail(err, SL_CRI_UNAVAILABLE, EINVAL,
             "endpoint %s: only unix sockets are supported (unix:///path/to/socket)", ep);
        return -1;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) > SL_CRI_MAX_SOCKET_PATH) {
        fail(err, SL_CRI_UNAVAILABLE, ENAMETOOLONG, "endpoint %s: socket path longer than %u bytes",
             ep, SL_CRI_MAX_SOCKET_PATH);
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fail(err, SL_CRI_UNAVAILABLE, errno, "socket: %s", strerror(errno));
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        if (errno != EINPROGRESS && errno != EAGAIN) {
            fail(err, SL_CRI_UNAVAILABLE, errno, "connecting to %s: %s", ep, strerror(errno));
            close(fd);
            return -1;
        }
        if (wait_connected(fd, ep, timeout_ms, err) < 0) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

static int start_session(sl_cri_client *c, sl_error *err)
{
    nghttp2_session_callbacks *cbs;
    if (nghttp2_session_callbacks_new(&cbs) != 0) {
        fail(err, SL_CRI_INTERNAL, ENOMEM, "out of memory");
        return -1;
    }
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_close);
    int rv = nghttp2_session_client_new(&c->h2, cbs, c);
    nghttp2_session_callbacks_del(cbs);
    if (rv != 0) {
        fail(err, SL_CRI_INTERNAL, EPROTO, "nghttp2: %s", nghttp2_strerror(rv));
        return -1;
    }
    const nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, SL_CRI_WINDOW_SIZE},
    };
    rv = nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof iv[0]);
    if (rv == 0)
        rv = nghttp2_session_set_local_window_size(c->h2, NGHTTP2_FLAG_NONE, 0,
                                                   (int32_t)SL_CRI_WINDOW_SIZE);
    if (rv != 0) {
        fail(err, SL_CRI_INTERNAL, EPROTO, "nghttp2: %s", nghttp2_strerror(rv));
        return -1;
    }
    return 0;
}

int sl_cri_client_connect(const char *endpoint, uint32_t timeout_ms, sl_cri_client **out,
                          sl_error *err)
{
    sl_error_clear(err);
    *out = NULL;
    if (timeout_ms == 0)
        timeout_ms = SL_CRI_DEFAULT_TIMEOUT_MS;
    int64_t deadline = now_ms() + timeout_ms;
    sl_cri_client *c = calloc(1, sizeof *c);
    if (c)
        c->fd = -1;
    if (!c || !(c->endpoint = strdup(endpoint))) {
        fail(err, SL_CRI_INTERNAL, ENOMEM, "out of memory");
        sl_cri_client_free(c);
        return -1;
    }
    c->fd = open_socket(endpoint, timeout_ms, err);
    if (c->fd < 0 || start_session(c, err) < 0) {
        sl_cri_client_free(c);
        return -1;
    }
    int r = pump(c, NULL, deadline, err);
    if (r != 0) {
        if (r > 0)
            fail(err, SL_CRI_UNAVAILABLE, ETIMEDOUT, "connecting to %s: timed out after %u ms",
                 endpoint, timeout_ms);
        sl_cri_client_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

bool sl_cri_client_usable(sl_cri_client *c)
{
    if (c->broken)
        return false;
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    sl_error err;
    for (int i = 0; i < IDLE_READS_MAX && poll(&p, 1, 0) > 0; i++)
        if (!(p.revents & POLLIN) || read_some(c, &err) < 0)
            return false; /* closed, or an error while it idled */
    return nghttp2_session_check_request_allowed(c->h2) != 0; /* 0 after a GOAWAY */
}

const char *sl_cri_client_endpoint(const sl_cri_client *c)
{
    return c->endpoint;
}

void sl_cri_client_free(sl_cri_client *c)
{
    if (!c)
        return;
    if (c->h2 && !c->broken && c->fd >= 0) {
        /* Best effort: tell the server we are done, without waiting. */
        sl_error e;
        nghttp2_session_terminate_session(c->h2, NGHTTP2_NO_ERROR);
        if (gather(c, &e) == 0 && c->ooff < c->olen)
            (void)write_some(c, &e);
    }
    nghttp2_session_del(c->h2);
    if (c->fd >= 0)
        close(c->fd);
    free(c->obuf);
    free(c->endpoint);
    free(c);
}

/* ---- calls --------------------------------------------------------------- */

static int make_request(call *cl, const ProtobufCMessage *req, sl_error *err)
{
    size_t n = protobuf_c_message_get_packed_size(req);
    if (n > SL_CRI_MAX_SEND_MESSAGE) {
        fail(err, SL_CRI_RESOURCE_EXHAUSTED, EMSGSIZE,
             "request to %s is %zu bytes, more than the %u allowed", cl->path, n,
             SL_CRI_MAX_SEND_MESSAGE);
        return -1;
    }
    cl->req = malloc(LPM_HEADER + n + 1);
    if (!cl->req) {
        fail(err, SL_CRI_INTERNAL, ENOMEM, "out of memory");
        return -1;
    }
    cl->req[0] = 0;
    cl->req[1] = (uint8_t)(n >> 24);
    cl->req[2] = (uint8_t)(n >> 16);
    cl->req[3] = (uint8_t)(n >> 8);
    cl->req[4] = (uint8_t)n;
    protobuf_c_message_pack(req, cl->req + LPM_HEADER);
    cl->req_len = LPM_HEADER + n;
    return 0;
}

#define NV(n, v)                                                                                   \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NO_COPY_NAME     \
    }

static int submit(sl_cri_client *c, call *cl, uint32_t timeout_ms, sl_error *err)
{
    char tmo[10];
    sl_cri_format_timeout(timeout_ms, tmo);
    const nghttp2_nv hdrs[] = {
        NV(":method", "POST"),
        NV(":scheme", "http"),
        NV(":path", cl->path),
        NV(":authority", "localhost"),
        NV("content-type", "application/grpc"),
        NV("te", "trailers"),
        NV("user-agent", SL_CRI_USER_AGENT),
        NV("grpc-timeout", tmo), /* last: left out when there is no deadline */
    };
    size_t nh = sizeof hdrs / sizeof hdrs[0] - (timeout_ms ? 0 : 1);
    nghttp2_data_provider dp = {.source.ptr = cl, .read_callback = read_req};
    int32_t id = nghttp2_submit_request(c->h2, NULL, hdrs, nh, &dp, c);
    if (id < 0) {
        fail(err, SL_CRI_INTERNAL, EPROTO, "submitting %s: %s", cl->path, nghttp2_strerror(id));
        return -1;
    }
    cl->stream_id = id;
    return 0;
}

static int rst_to_code(uint32_t rst)
{
    switch (rst) {
    case NGHTTP2_REFUSED_STREAM:
        return SL_CRI_UNAVAILABLE;
    case NGHTTP2_CANCEL:
        return SL_CRI_CANCELLED;
    case NGHTTP2_ENHANCE_YOUR_CALM:
    case NGHTTP2_INADEQUATE_SECURITY:
        return SL_CRI_RESOURCE_EXHAUSTED;
    default:
        return SL_CRI_INTERNAL;
    }
}

/* Checks the answer's headers; 0 when it is a gRPC answer with a status. */
static int check_answer(const call *cl, sl_error *err)
{
    if (cl->too_large) {
        fail(err, SL_CRI_RESOURCE_EXHAUSTED, EMSGSIZE, "the answer to %s is larger than %u bytes",
             cl->path, SL_CRI_MAX_RECV_MESSAGE);
        return -1;
    }
    if (cl->grpc_status < 0 && cl->rst_code != NGHTTP2_NO_ERROR) {
        fail(err, rst_to_code(cl->rst_code), 0, "the runtime reset the %s call (HTTP/2 %s)",
             cl->path, nghttp2_http2_strerror(cl->rst_code));
        return -1;
    }
    if (cl->http_status != 200) {
        fail(err, sl_cri_http_to_code(cl->http_status), 0,
             "the runtime answered %s with HTTP status %d instead of gRPC (is the endpoint a "
             "CRI socket?)",
             cl->path, cl->http_status);
        return -1;
    }
    if (strncmp(cl->content_type, "application/grpc", 16) != 0) {
        fail(err, SL_CRI_UNKNOWN, 0,
             "the answer to %s has content-type \"%s\", not application/grpc", cl->path,
             cl->content_type);
        return -1;
    }
    if (cl->grpc_status < 0) {
        fail(err, SL_CRI_INTERNAL, 0, "the answer to %s carries no grpc-status", cl->path);
        return -1;
    }
    return 0;
}

static int decode(const call *cl, const ProtobufCMessageDescriptor *desc, ProtobufCMessage **resp,
                  sl_error *err)
{
    if (cl->body_len < LPM_HEADER) {
        fail(err, SL_CRI_INTERNAL, 0, "the answer to %s has no message", cl->path);
        return -1;
    }
    if (cl->body[0] != 0) {
        fail(err, SL_CRI_INTERNAL, 0,
             "the answer to %s is compressed, which this client does not support", cl->path);
        return -1;
    }
    size_t n = (size_t)cl->body[1] << 24 | (size_t)cl->body[2] << 16 | (size_t)cl->body[3] << 8 |
               cl->body[4];
    if (n != cl->body_len - LPM_HEADER) {
        fail(err, SL_CRI_INTERNAL, 0,
             "the answer to %s is malformed: message of %zu bytes in %zu bytes of data", cl->path,
             n, cl->body_len - LPM_HEADER);
        return -1;
    }
    *resp = protobuf_c_message_unpack(desc, NULL, n, cl->body + LPM_HEADER);
    if (!*resp) {
        fail(err, SL_CRI_INTERNAL, 0, "could not decode the answer to %s (%zu bytes)", cl->path, n);
        return -1;
    }
    return 0;
}

static int finish(call *cl, const ProtobufCMessageDescriptor *desc, ProtobufCMessage **resp,
                  sl_error *err)
{
    if (check_answer(cl, err) < 0)
        return err->code;
    if (cl->grpc_status != SL_CRI_OK) {
        fail(err, cl->grpc_status, 0, "%s",
             cl->grpc_msg[0] ? cl->grpc_msg : sl_cri_code_name(cl->grpc_status));
        return err->code;
    }
    if (decode(cl, desc, resp, err) < 0)
        return err->code;
    return SL_CRI_OK;
}

/* Cancels the call's stream after a deadline, flushing what we can now. */
static void cancel(sl_cri_client *c, call *cl)
{
    sl_error e;
    if (!cl->closed)
        nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, cl->stream_id, NGHTTP2_CANCEL);
    if (gather(c, &e) == 0 && c->ooff < c->olen)
        (void)write_some(c, &e);
}

int sl_cri_client_call(sl_cri_client *c, const char *path, const ProtobufCMessage *req,
                       const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp,
                       uint32_t timeout_ms, sl_error *err)
{
    *resp = NULL;
    sl_error_clear(err);
    if (c->broken) {
        *err = c->broken_err;
        return err->code;
    }
    if (timeout_ms == 0)
        timeout_ms = SL_CRI_DEFAULT_TIMEOUT_MS;
    int64_t deadline = now_ms() + timeout_ms;
    call cl = {.path = path, .grpc_status = -1};
    int rc;
    if (make_request(&cl, req, err) < 0 || submit(c, &cl, timeout_ms, err) < 0) {
        free(cl.req);
        return err->code;
    }
    c->cur = &cl;
    int r = pump(c, &cl, deadline, err);
    if (r < 0) {
        mark_broken(c, err);
        rc = err->code;
    } else if (r > 0) {
        cancel(c, &cl);
        fail(err, SL_CRI_DEADLINE_EXCEEDED, ETIMEDOUT, "%s: no answer within %u ms", path,
             timeout_ms);
        rc = err->code;
    } else {
        rc = finish(&cl, resp_desc, resp, err);
    }
    c->cur = NULL;
    free(cl.req);
    free(cl.body);
    return rc;
}

/* The end of a stream that closed: what is left must be nothing, and the
 * status is the server's. */
static int stream_finish(call *cl, sl_error *err)
{
    deliver(cl);
    if (cl->stream_failed) {
        *err = cl->stream_err;
        return err->code;
    }
    if (check_answer(cl, err) < 0)
        return err->code;
    if (cl->grpc_status != SL_CRI_OK) {
        fail(err, cl->grpc_status, 0, "%s",
             cl->grpc_msg[0] ? cl->grpc_msg : sl_cri_code_name(cl->grpc_status));
        return err->code;
    }
    if (cl->body_len) {
        fail(err, SL_CRI_INTERNAL, 0,
             "the stream of %s ended inside a message (%zu bytes of it came)", cl->path,
             cl->body_len);
        return err->code;
    }
    return SL_CRI_OK;
}

int sl_cri_client_stream(sl_cri_client *c, const char *path, const ProtobufCMessage *req,
                         const ProtobufCMessageDescriptor *resp_desc, const sl_cri_stream_cb *cb,
                         uint32_t timeout_ms, sl_error *err)
{
    sl_error_clear(err);
    if (c->broken) {
        *err = c->broken_err;
        return err->code;
    }
    int64_t deadline = timeout_ms ? now_ms() + timeout_ms : INT64_MAX;
    call cl = {.path = path, .grpc_status = -1, .scb = cb, .desc = resp_desc};
    int rc;
    if (make_request(&cl, req, err) < 0 || submit(c, &cl, timeout_ms, err) < 0) {
        free(cl.req);
        return err->code;
    }
    c->cur = &cl;
    int r = pump(c, &cl, deadline, err);
    if (r < 0) {
        mark_broken(c, err);
        rc = err->code;
    } else if (r == 1) {
        cancel(c, &cl);
        fail(err, SL_CRI_DEADLINE_EXCEEDED, ETIMEDOUT, "%s: not over within %u ms", path,
             timeout_ms);
        rc = err->code;
    } else if (r == 2 && cl.stream_failed) {
        cancel(c, &cl);
        *err = cl.stream_err;
        rc = err->code;
    } else if (r == 2) {
        cancel(c, &cl);
        fail(err, SL_CRI_CANCELLED, ECANCELED, "%s: ended by the client", path);
        rc = err->code;
    } else {
        rc = stream_finish(&cl, err);
    }
    c->cur = NULL;
    free(cl.req);
    free(cl.body);
    return rc;
}
