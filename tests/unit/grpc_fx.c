/* The in-memory gRPC harness (see grpc_fx.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_fx.h"
#include "grpc/grpc_status.h"
#include "util/bufq.h"
#include "sluice/error.h"

/* ---- client side ------------------------------------------------------- */

static cstream *find_stream(fixture *f, int32_t id)
{
    for (int i = 0; i < f->ns; i++)
        if (f->s[i].id == id)
            return &f->s[i];
    return NULL;
}

static int c_on_header(nghttp2_session *h2, const nghttp2_frame *fr, const uint8_t *name,
                       size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags, void *user)
{
    (void)h2, (void)nlen, (void)flags;
    cstream *s = find_stream(user, fr->hd.stream_id);
    if (!s)
        return 0;
    if (strcmp((const char *)name, ":status") == 0)
        s->http = atoi((const char *)value);
    else if (strcmp((const char *)name, "grpc-status") == 0)
        s->grpc_status = atoi((const char *)value);
    else if (strcmp((const char *)name, "grpc-message") == 0)
        sl_pct_decode((const char *)value, vlen, s->grpc_message, sizeof s->grpc_message, 0);
    return 0;
}

static int c_on_frame_recv(nghttp2_session *h2, const nghttp2_frame *fr, void *user)
{
    (void)h2;
    fixture *f = user;
    if (fr->hd.type == NGHTTP2_PING && (fr->hd.flags & NGHTTP2_FLAG_ACK))
        f->ping_acks++;
    if (fr->hd.type == NGHTTP2_GOAWAY) {
        f->goaways++;
        f->goaway_code = fr->goaway.error_code;
        size_t n = fr->goaway.opaque_data_len;
        n = n < sizeof(f->goaway_debug) - 1 ? n : sizeof(f->goaway_debug) - 1;
        if (n)
            memcpy(f->goaway_debug, fr->goaway.opaque_data, n);
        f->goaway_debug[n] = '\0';
    }
    if (fr->hd.type == NGHTTP2_SETTINGS && !(fr->hd.flags & NGHTTP2_FLAG_ACK))
        for (size_t i = 0; i < fr->settings.niv; i++)
            if (fr->settings.iv[i].settings_id == NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
                f->server_max_streams = fr->settings.iv[i].value;
    cstream *s = find_stream(f, fr->hd.stream_id);
    if (!s)
        return 0;
    if (fr->hd.type == NGHTTP2_HEADERS) {
        s->header_blocks++;
        if (s->header_blocks == 1 && (fr->hd.flags & NGHTTP2_FLAG_END_STREAM))
            s->trailers_only = true;
    }
    if (fr->hd.type == NGHTTP2_RST_STREAM) {
        s->got_rst = true;
        s->rst_code = fr->rst_stream.error_code;
    }
    return 0;
}

static int c_on_data(nghttp2_session *h2, uint8_t flags, int32_t id, const uint8_t *data,
                     size_t len, void *user)
{
    (void)h2, (void)flags;
    cstream *s = find_stream(user, id);
    if (!s)
        return 0;
    s->data = realloc(s->data, s->dlen + len);
    assert_non_null(s->data);
    memcpy(s->data + s->dlen, data, len);
    s->dlen += len;
    return 0;
}

static int c_on_close(nghttp2_session *h2, int32_t id, uint32_t code, void *user)
{
    (void)h2;
    cstream *s = find_stream(user, id);
    if (s) {
        s->closed = true;
        s->close_code = code;
    }
    return 0;
}

static ssize_t c_read(nghttp2_session *h2, int32_t id, uint8_t *buf, size_t length, uint32_t *flags,
                      nghttp2_data_source *src, void *user)
{
    (void)h2, (void)id, (void)user;
    cstream *s = src->ptr;
    size_t n = s->len - s->off;
    if (n > length)
        n = length;
    if (s->chunk && n > s->chunk)
        n = s->chunk;
    if (n)
        memcpy(buf, s->body + s->off, n);
    s->off += n;
    if (s->off == s->len) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (!s->end)
            *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    }
    return (ssize_t)n;
}

static void client_new(fixture *f)
{
    nghttp2_session_callbacks *cb;
    assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
    nghttp2_session_callbacks_set_on_header_callback(cb, c_on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, c_on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, c_on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, c_on_close);
    nghttp2_option *opt;
    assert_int_equal(nghttp2_option_new(&opt), 0);
    nghttp2_option_set_no_auto_window_update(opt, f->manual_window);
    assert_int_equal(nghttp2_session_client_new2(&f->cli, cb, f, opt), 0);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cb);
    assert_int_equal(nghttp2_submit_settings(f->cli, NGHTTP2_FLAG_NONE, NULL, 0), 0);
}

/* ---- server side ------------------------------------------------------- */

static uint64_t fx_now(void *data)
{
    return ((fixture *)data)->now;
}

static void fx_wake(void *data)
{
    ((fixture *)data)->wakes++;
}

static void on_cancel(sl_grpc_call *call, void *arg)
{
    (void)call;
    ((fixture *)arg)->cancels++;
}

void gfx_h_later(sl_grpc_call *call, void *arg)
{
    fixture *f = arg;
    f->handler_runs++;
    assert_true(f->npending < MAX_PENDING);
    f->pending[f->npending++] = call;
    sl_grpc_call_on_cancel(call, on_cancel, f);
}

fixture *gfx_new(const sl_grpc_method *m, size_t n, bool manual_window)
{
    fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->manual_window = manual_window;
    sl_grpc_config_init(&f->cfg);
    f->cfg.methods = m;
    f->cfg.nmethods = n;
    f->cfg.arg = f;
    f->cfg.max_recv_message = 4096;
    f->io = (sl_grpc_conn_io){.now = fx_now, .wake = fx_wake, .data = f};
    f->now = 1000;
    assert_int_equal(sl_grpc_conn_new(&f->cfg, &f->io, &f->conn), SL_OK);
    client_new(f);
    return f;
}

void gfx_free(fixture *f)
{
    sl_grpc_conn_free(f->conn);
    /* Calls the handler still held were cancelled; answering frees them. */
    for (int i = 0; i < f->npending; i++)
        if (f->pending[i])
            sl_grpc_call_fail(f->pending[i], SL_GRPC_CANCELLED, "test over");
    nghttp2_session_del(f->cli);
    for (int i = 0; i < f->ns; i++)
        free(f->s[i].data);
    free(f);
}

size_t client_to_server(fixture *f)
{
    size_t moved = 0;
    const uint8_t *p;
    ssize_t n;
    while ((n = nghttp2_session_mem_send(f->cli, &p)) > 0) {
        size_t step = f->split ? f->split : (size_t)n;
        for (size_t off = 0; off < (size_t)n; off += step) {
            size_t k = (size_t)n - off < step ? (size_t)n - off : step;
            assert_int_equal(sl_grpc_conn_recv(f->conn, p + off, k), SL_OK);
        }
        moved += (size_t)n;
    }
    assert_true(n == 0);
    return moved;
}

size_t server_to_client(fixture *f)
{
    sl_bufq out;
    sl_bufq_init(&out);
    assert_int_equal(sl_grpc_conn_send(f->conn, &out, SIZE_MAX), SL_OK);
    size_t moved = sl_bufq_len(&out);
    while (sl_bufq_len(&out)) {
        struct iovec iov[1];
        sl_bufq_peek(&out, iov, 1);
        ssize_t r = nghttp2_session_mem_recv(f->cli, iov[0].iov_base, iov[0].iov_len);
        assert_int_equal(r, (ssize_t)iov[0].iov_len);
        sl_bufq_consume(&out, iov[0].iov_len);
    }
    sl_bufq_fini(&out);
    return moved;
}

void pump(fixture *f)
{
    for (int i = 0; i < 100000; i++)
        if (client_to_server(f) + server_to_client(f) == 0)
            return;
    fail_msg("no quiescence");
}

/* ---- requests ------------------------------------------------------------ */

size_t lpm(uint8_t *out, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_pack(m, out + SL_GRPC_PREFIX_LEN);
    sl_grpc_frame_prefix(out, (uint32_t)n);
    return SL_GRPC_PREFIX_LEN + n;
}

size_t version_req(uint8_t *out, const char *v)
{
    Runtime__V1__VersionRequest r = RUNTIME__V1__VERSION_REQUEST__INIT;
    r.version = (char *)v;
    return lpm(out, &r.base);
}

cstream *submit(fixture *f, const char *path, const uint8_t *body, size_t len, const req_opts *o)
{
    static const req_opts none;
    if (!o)
        o = &none;
    const char *method = o->method ? o->method : "POST";
    const char *ct = o->content_type ? o->content_type : "application/grpc";
#define HDR(n, v) {(uint8_t *)(n), (uint8_t *)(v), strlen(n), strlen(v), NGHTTP2_NV_FLAG_NONE}
    nghttp2_nv nva[] = {
        HDR(":method", method),
        HDR(":scheme", "http"),
        HDR(":path", path),
        HDR(":authority", "localhost"),
        HDR("content-type", ct),
        HDR("te", "trailers"),
        HDR("grpc-timeout", o->timeout ? o->timeout : ""),
    };
    assert_true(f->ns < MAX_STREAMS);
    cstream *s = &f->s[f->ns++];
    memset(s, 0, sizeof(*s));
    s->grpc_status = -1;
    s->body = body;
    s->len = len;
    s->chunk = o->chunk;
    s->end = !o->open;
    nghttp2_data_provider prd = {.source.ptr = s, .read_callback = c_read};
    s->id = nghttp2_submit_request(f->cli, NULL, nva, o->timeout ? 7 : 6, &prd, NULL);
    assert_true(s->id > 0);
    return s;
}

cstream *submit_version(fixture *f, const char *path, const char *v, const req_opts *o)
{
    uint8_t body[sizeof(((cstream *)0)->req)];
    size_t n = version_req(body, v);
    assert_true(n <= sizeof(body));
    cstream *s = submit(f, path, body, n, o);
    memcpy(s->req, body, n);
    s->body = s->req; /* read from the next pump on */
    return s;
}

void expect_status(const cstream *s, int code, const char *msg_part)
{
    assert_true(s->closed);
    assert_int_equal(s->grpc_status, code);
    if (msg_part && !strstr(s->grpc_message, msg_part))
        fail_msg("grpc-message \"%s\" lacks \"%s\"", s->grpc_message, msg_part);
}

ProtobufCMessage *response(const cstream *s, const ProtobufCMessageDescriptor *d)
{
    assert_true(s->dlen >= SL_GRPC_PREFIX_LEN);
    assert_int_equal(s->data[0], 0);
    uint32_t n = (uint32_t)s->data[1] << 24 | (uint32_t)s->data[2] << 16 |
                 (uint32_t)s->data[3] << 8 | s->data[4];
    assert_int_equal(s->dlen, SL_GRPC_PREFIX_LEN + n);
    ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, n, s->data + SL_GRPC_PREFIX_LEN);
    assert_non_null(m);
    return m;
}

void gfx_consume(fixture *f, const cstream *s, size_t n)
{
    assert_int_equal(nghttp2_session_consume(f->cli, s->id, n), 0);
}

ProtobufCMessage *response_nth(const cstream *s, const ProtobufCMessageDescriptor *d, size_t i,
                               size_t *count)
{
    ProtobufCMessage *m = NULL;
    size_t off = 0, k = 0;
    while (s->dlen - off >= SL_GRPC_PREFIX_LEN) {
        const uint8_t *p = s->data + off;
        uint32_t n = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
        assert_int_equal(p[0], 0);
        if (s->dlen - off - SL_GRPC_PREFIX_LEN < n)
            break;
        if (k == i) {
            m = protobuf_c_message_unpack(d, NULL, n, p + SL_GRPC_PREFIX_LEN);
            assert_non_null(m);
        }
        off += SL_GRPC_PREFIX_LEN + n;
        k++;
    }
    assert_int_equal(off, s->dlen); /* only whole messages arrived */
    if (count)
        *count = k;
    return m;
}
