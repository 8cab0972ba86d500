/* HTTP/2 session of one gRPC connection: nghttp2 callbacks that turn
 * streams into calls, request checks, dispatch and deadlines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/grpc_impl.h"
#include "grpc/grpc_timeout.h"
#include "sluice/error.h"

/* Per RFC 9113 §6.5.2, each header field counts name + value + 32. */
#define HEADER_FIELD_OVERHEAD 32u

void sl_grpc_config_init(sl_grpc_config *c)
{
    memset(c, 0, sizeof(*c));
    c->max_recv_message = SL_GRPC_DEFAULT_MAX_RECV_MESSAGE;
    c->max_streams = SL_GRPC_DEFAULT_MAX_STREAMS;
    c->max_header_list = SL_GRPC_DEFAULT_MAX_HEADER_LIST;
    c->max_stream_backlog = SL_GRPC_DEFAULT_MAX_STREAM_BACKLOG;
    c->max_connections = SL_GRPC_DEFAULT_MAX_CONNECTIONS;
    c->idle_timeout_ms = SL_GRPC_DEFAULT_IDLE_TIMEOUT_MS;
}

const sl_grpc_method *sl_grpc_method_find(const sl_grpc_method *m, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(m[i].path, path) == 0)
            return &m[i];
    return NULL;
}

static uint64_t now(const sl_grpc_conn *c)
{
    return c->io->now(c->io->data);
}

static sl_grpc_call *stream_call(sl_grpc_conn *c, int32_t stream_id)
{
    return nghttp2_session_get_stream_user_data(c->h2, stream_id);
}

static int on_begin_headers(nghttp2_session *h2, const nghttp2_frame *f, void *user)
{
    sl_grpc_conn *c = user;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    sl_grpc_call *call = sl_grpc_call_new(c, f->hd.stream_id);
    if (!call)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* resets the stream */
    nghttp2_session_set_stream_user_data(h2, f->hd.stream_id, call);
    return 0;
}

/* application/grpc, application/grpc+proto, application/grpc;... */
static bool is_grpc_content_type(const char *v)
{
    static const char base[] = "application/grpc";
    size_t n = sizeof(base) - 1;
    return strncmp(v, base, n) == 0 && (v[n] == '\0' || v[n] == '+' || v[n] == ';');
}

static void store_header(sl_grpc_call *call, const char *name, const char *value, size_t vlen)
{
    if (strcmp(name, ":method") == 0)
        call->post = strcmp(value, "POST") == 0;
    else if (strcmp(name, ":path") == 0 && !call->path)
        call->path = strdup(value);
    else if (strcmp(name, "content-type") == 0 && !call->content_type)
        call->content_type = strdup(value);
    else if (strcmp(name, "grpc-timeout") == 0 &&
             sl_grpc_timeout_parse(value, vlen, &call->timeout_ms) < 0)
        call->bad_timeout = true;
}

static int on_header(nghttp2_session *h2, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user)
{
    (void)flags;
    (void)user;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0; /* client trailers carry nothing we use */
    sl_grpc_call *call = nghttp2_session_get_stream_user_data(h2, f->hd.stream_id);
    if (!call || call->headers_too_big)
        return 0;
    call->header_bytes += namelen + valuelen + HEADER_FIELD_OVERHEAD;
    if (call->header_bytes > call->conn->cfg->max_header_list) {
        call->headers_too_big = true;
        return 0;
    }
    /* nghttp2 NUL-terminates name and value. */
    store_header(call, (const char *)name, (const char *)value, valuelen);
    return 0;
}

/* Why the request headers cannot start a call: fills http, code and msg and
 * returns false; true when the call may go on. */
static bool check_headers(sl_grpc_call *call, int *http, int *code, char *msg, size_t cap)
{
    const sl_grpc_config *cfg = call->conn->cfg;
    *http = 200;
    if (call->headers_too_big) {
        *http = 431;
        *code = SL_GRPC_RESOURCE_EXHAUSTED;
        snprintf(msg, cap, "request header list larger than %u bytes", cfg->max_header_list);
    } else if (!call->post) {
        *http = 405;
        *code = SL_GRPC_INTERNAL;
        snprintf(msg, cap, "gRPC requests must use POST");
    } else if (!call->content_type || !is_grpc_content_type(call->content_type)) {
        *http = 415;
        *code = SL_GRPC_INVALID_ARGUMENT;
        snprintf(msg, cap, "invalid gRPC request content-type \"%.100s\"",
                 call->content_type ? call->content_type : "");
    } else if (call->bad_timeout) {
        *code = SL_GRPC_INTERNAL;
        snprintf(msg, cap, "malformed grpc-timeout");
    } else if (!(call->method = sl_grpc_method_find(cfg->methods, cfg->nmethods,
                                                    call->path ? call->path : ""))) {
        *code = SL_GRPC_UNIMPLEMENTED;
        snprintf(msg, cap, "unknown method %.200s", call->path ? call->path : "");
    } else if (!call->method->request || !call->method->handler) {
        *code = SL_GRPC_UNIMPLEMENTED;
        snprintf(msg, cap, "method %.200s is not implemented", call->path);
    } else {
        return true;
    }
    return false;
}

/* Checks the request headers; answers at once when the call cannot go on. */
static void headers_done(sl_grpc_call *call)
{
    char msg[256];
    int http, code;
    if (!check_headers(call, &http, &code, msg, sizeof(msg))) {
        sl_grpc_call_answer_early(call, http, code, msg);
        return;
    }
    if (call->timeout_ms != UINT64_MAX) {
        uint64_t t = now(call->conn);
        /* Saturate: a deadline never wraps into the past. */
        call->deadline = t + call->timeout_ms < t ? UINT64_MAX - 1 : t + call->timeout_ms;
    }
    call->state = CALL_BODY;
}

/* The client finished its request: exactly one whole message must be there. */
static void body_done(sl_grpc_call *call)
{
    sl_grpc_conn *c = call->conn;
    char msg[128];
    if (call->state != CALL_BODY)
        return;
    if (!sl_grpc_decoder_idle(&call->dec)) {
        size_t have, want;
        sl_grpc_decoder_progress(&call->dec, &have, &want);
        snprintf(msg, sizeof(msg), "request ended inside a message (%zu of %zu bytes)", have, want);
        sl_grpc_call_answer_early(call, 200, SL_GRPC_INTERNAL, msg);
        return;
    }
    if (call->nmsg == 0) {
        sl_grpc_call_answer_early(call, 200, SL_GRPC_INTERNAL, "no request message");
        return;
    }
    call->state = CALL_READY;
    if (c->ready_tail)
        c->ready_tail->ready_next = call;
    else
        c->ready_head = call;
    c->ready_tail = call;
}

static int on_frame_recv(nghttp2_session *h2, const nghttp2_frame *f, void *user)
{
    sl_grpc_conn *c = user;
    (void)h2;
    if (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA)
        return 0;
    sl_grpc_call *call = stream_call(c, f->hd.stream_id);
    if (!call)
        return 0;
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST)
        headers_done(call);
    if (f->hd.flags & NGHTTP2_FLAG_END_STREAM)
        body_done(call);
    return 0;
}

static void decode_error(sl_grpc_call *call, int err)
{
    char msg[128];
    int code = SL_GRPC_INTERNAL;
    switch (err) {
    case SL_ERR_UNSUPPORTED:
        code = SL_GRPC_UNIMPLEMENTED;
        snprintf(msg, sizeof(msg), "compression not supported");
        break;
    case SL_ERR_TOO_LARGE:
        code = SL_GRPC_RESOURCE_EXHAUSTED;
        snprintf(msg, sizeof(msg), "received message larger than max (%u vs. %u)",
                 (unsigned)call->dec.len, (unsigned)call->dec.max);
        break;
    case SL_ERR_NOMEM:
        code = SL_GRPC_RESOURCE_EXHAUSTED;
        snprintf(msg, sizeof(msg), "out of memory reading the request");
        break;
    default:
        snprintf(msg, sizeof(msg), "invalid message prefix (compressed flag %u)",
                 (unsigned)call->dec.prefix[0]);
        break;
    }
    sl_grpc_call_answer_early(call, 200, code, msg);
}

/* Feeds request bytes to the call's decoder; answers on any error. */
static void feed_body(sl_grpc_call *call, const uint8_t *data, size_t len)
{
    size_t off = 0, used;
    while (call->state == CALL_BODY && off < len) {
        int rc = sl_grpc_decoder_feed(&call->dec, data + off, len - off, &used);
        off += used;
        if (rc < 0) {
            decode_error(call, rc);
        } else if (rc == 1 && ++call->nmsg > 1) {
            sl_grpc_call_answer_early(call, 200, SL_GRPC_INTERNAL,
                                      "more than one request message for a unary method");
        } else if (rc == 1) {
            sl_grpc_decoder_take(&call->dec, &call->msg, &call->msg_len);
        }
    }
}

static int on_data_chunk(nghttp2_session *h2, uint8_t flags, int32_t stream_id, const uint8_t *data,
                         size_t len, void *user)
{
    (void)h2;
    (void)flags;
    sl_grpc_call *call = stream_call(user, stream_id);
    if (call)
        feed_body(call, data, len);
    return 0;
}

static int on_stream_close(nghttp2_session *h2, int32_t stream_id, uint32_t error_code, void *user)
{
    (void)error_code;
    (void)user;
    sl_grpc_call *call = nghttp2_session_get_stream_user_data(h2, stream_id);
    if (call) {
        nghttp2_session_set_stream_user_data(h2, stream_id, NULL);
        sl_grpc_call_detach(call);
    }
    return 0;
}

/* Like grpc-go: once our answer ended the stream but the client is still
 * sending, RST_STREAM(NO_ERROR) tells it to stop. */
static int on_frame_send(nghttp2_session *h2, const nghttp2_frame *f, void *user)
{
    (void)user;
    if (f->hd.type == NGHTTP2_HEADERS && (f->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
        nghttp2_session_get_stream_remote_close(h2, f->hd.stream_id) == 0)
        nghttp2_submit_rst_stream(h2, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_NO_ERROR);
    return 0;
}

static int new_session(sl_grpc_conn *c)
{
    nghttp2_session_callbacks *cb;
    nghttp2_option *opt;
    if (nghttp2_session_callbacks_new(&cb) != 0)
        return SL_ERR_NOMEM;
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
    int rc = nghttp2_option_new(&opt);
    if (rc == 0) {
        /* Closed streams are not kept for priority bookkeeping. */
        nghttp2_option_set_no_closed_streams(opt, 1);
        rc = nghttp2_session_server_new2(&c->h2, cb, c, opt);
        nghttp2_option_del(opt);
    }
    nghttp2_session_callbacks_del(cb);
    return rc == 0 ? SL_OK : SL_ERR_NOMEM;
}

int sl_grpc_conn_new(const sl_grpc_config *cfg, const sl_grpc_conn_io *io, sl_grpc_conn **out)
{
    sl_grpc_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return SL_ERR_NOMEM;
    c->cfg = cfg;
    c->io = io;
    if (new_session(c) < 0) {
        free(c);
        return SL_ERR_NOMEM;
    }
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, cfg->max_streams},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, cfg->max_header_list},
    };
    if (nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, 2) != 0) {
        sl_grpc_conn_free(c);
        return SL_ERR_NOMEM;
    }
    *out = c;
    return SL_OK;
}

/* Decodes each complete request and hands it to its handler. */
static void dispatch(sl_grpc_conn *c)
{
    sl_grpc_call *call;
    while ((call = c->ready_head)) {
        c->ready_head = call->ready_next;
        if (!c->ready_head)
            c->ready_tail = NULL;
        call->ready_next = NULL;
        if (call->deadline <= now(c)) {
            sl_grpc_call_answer_early(call, 200, SL_GRPC_DEADLINE_EXCEEDED, "deadline exceeded");
            continue;
        }
        const ProtobufCMessageDescriptor *d = call->method->request;
        call->req = protobuf_c_message_unpack(d, NULL, call->msg_len, call->msg);
        free(call->msg);
        call->msg = NULL;
        if (!call->req) {
            char msg[160];
            snprintf(msg, sizeof(msg), "cannot decode the request as %.100s", d->name);
            sl_grpc_call_answer_early(call, 200, SL_GRPC_INVALID_ARGUMENT, msg);
            continue;
        }
        call->state = CALL_HANDLER;
        call->handler_owned = true;
        call->method->handler(call, c->cfg->arg);
    }
}

int sl_grpc_conn_recv(sl_grpc_conn *c, const uint8_t *data, size_t len)
{
    c->owner_flushes = true;
    ssize_t n = nghttp2_session_mem_recv(c->h2, data, len);
    dispatch(c);
    c->owner_flushes = false;
    if (n == NGHTTP2_ERR_NOMEM)
        return SL_ERR_NOMEM;
    return n < 0 ? SL_ERR_PROTO : SL_OK;
}

int sl_grpc_conn_send(sl_grpc_conn *c, sl_bufq *out, size_t limit)
{
    while (sl_bufq_len(out) < limit) {
        const uint8_t *p;
        ssize_t n = nghttp2_session_mem_send(c->h2, &p);
        if (n < 0)
            return n == NGHTTP2_ERR_NOMEM ? SL_ERR_NOMEM : SL_ERR_PROTO;
        if (n == 0)
            break;
        if (sl_bufq_append(out, p, (size_t)n) < 0)
            return SL_ERR_NOMEM;
    }
    return SL_OK;
}

bool sl_grpc_conn_want_read(const sl_grpc_conn *c)
{
    return nghttp2_session_want_read(c->h2) != 0;
}

bool sl_grpc_conn_want_write(const sl_grpc_conn *c)
{
    return nghttp2_session_want_write(c->h2) != 0;
}

static bool expirable(const sl_grpc_call *call)
{
    return call->state == CALL_BODY || call->state == CALL_READY || call->state == CALL_HANDLER;
}

uint64_t sl_grpc_conn_next_deadline(const sl_grpc_conn *c)
{
    uint64_t next = UINT64_MAX;
    for (const sl_grpc_call *call = c->calls; call; call = call->next)
        if (expirable(call) && call->deadline < next)
            next = call->deadline;
    return next;
}

void sl_grpc_conn_expire(sl_grpc_conn *c, uint64_t t)
{
    c->owner_flushes = true;
    for (sl_grpc_call *call = c->calls, *next; call; call = next) {
        next = call->next;
        if (!expirable(call) || call->deadline > t)
            continue;
        /* The stream stays open until the answer is sent, so cancelling
         * (which may answer) cannot unlink anything from the list. */
        sl_grpc_call_answer_early(call, 200, SL_GRPC_DEADLINE_EXCEEDED, "deadline exceeded");
        sl_grpc_call_cancel(call);
    }
    c->owner_flushes = false;
}

int sl_grpc_conn_goaway(sl_grpc_conn *c, uint32_t error_code, const char *debug)
{
    int32_t last = nghttp2_session_get_last_proc_stream_id(c->h2);
    size_t n = debug ? strlen(debug) : 0;
    int rc = nghttp2_submit_goaway(c->h2, NGHTTP2_FLAG_NONE, last, error_code,
                                   (const uint8_t *)debug, n);
    return rc == 0 ? SL_OK : SL_ERR_NOMEM;
}

size_t sl_grpc_conn_calls(const sl_grpc_conn *c)
{
    return c->ncalls;
}

bool sl_grpc_conn_busy(const sl_grpc_conn *c)
{
    for (const sl_grpc_call *call = c->calls; call; call = call->next)
        if (call->handler_owned)
            return true;
    return false;
}

void sl_grpc_conn_free(sl_grpc_conn *c)
{
    if (!c)
        return;
    while (c->calls) {
        sl_grpc_call *call = c->calls;
        nghttp2_session_set_stream_user_data(c->h2, call->stream_id, NULL);
        sl_grpc_call_detach(call);
    }
    nghttp2_session_del(c->h2);
    free(c);
}
