/* Lifetime and answers of one call (the streaming part: grpc_stream.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grpc/grpc_impl.h"
#include "sluice/error.h"
#include "sys_error.h"

#define NV(n, v)                                                                                   \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE             \
    }

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sl_grpc_call_report(sl_grpc_call *call, int code, const char *msg,
                         const ProtobufCMessage *resp)
{
    /* A call without its complete request headers has no method to count. */
    if (call->reported || !call->conn || call->state == CALL_HEADERS)
        return;
    call->reported = true;
    const sl_grpc_config *cfg = call->conn->cfg;
    if (!cfg->on_end)
        return;
    sl_grpc_call_end end = {
        .path = call->path ? call->path : "",
        .method = call->method,
        .request = call->req,
        .response = resp,
        .code = code,
        .message = msg ? msg : "",
        .duration_ns = mono_ns() - call->start_ns,
    };
    cfg->on_end(&end, cfg->on_end_arg);
}

sl_grpc_call *sl_grpc_call_new(sl_grpc_conn *c, int32_t stream_id)
{
    sl_grpc_call *call = calloc(1, sizeof(*call));
    if (!call)
        return NULL;
    call->conn = c;
    call->stream_id = stream_id;
    call->timeout_ms = UINT64_MAX;
    call->deadline = UINT64_MAX;
    call->start_ns = mono_ns();
    sl_grpc_decoder_init(&call->dec, c->cfg->max_recv_message);
    sl_bufq_init(&call->sq);
    call->next = c->calls;
    if (c->calls)
        c->calls->prev = call;
    c->calls = call;
    c->ncalls++;
    return call;
}

void sl_grpc_call_free(sl_grpc_call *call)
{
    sl_grpc_decoder_fini(&call->dec);
    free(call->path);
    free(call->content_type);
    free(call->msg);
    if (call->req)
        protobuf_c_message_free_unpacked(call->req, NULL);
    free(call->out);
    sl_bufq_fini(&call->sq);
    free(call->end_msg);
    free(call);
}

void sl_grpc_call_unqueue(sl_grpc_call *call)
{
    sl_grpc_conn *c = call->conn;
    sl_grpc_call **pp = &c->ready_head, *prev = NULL;
    while (*pp && *pp != call) {
        prev = *pp;
        pp = &(*pp)->ready_next;
    }
    if (!*pp)
        return;
    *pp = call->ready_next;
    if (c->ready_tail == call)
        c->ready_tail = prev;
    call->ready_next = NULL;
}

void sl_grpc_call_cancel(sl_grpc_call *call)
{
    if (call->cancelled || !call->handler_owned)
        return;
    call->cancelled = true;
    if (call->on_cancel)
        call->on_cancel(call, call->cancel_arg); /* may answer, and so free */
}

void sl_grpc_call_detach(sl_grpc_call *call)
{
    sl_grpc_conn *c = call->conn;
    if (call->state == CALL_READY)
        sl_grpc_call_unqueue(call);
    if (call->prev)
        call->prev->next = call->next;
    else
        c->calls = call->next;
    if (call->next)
        call->next->prev = call->prev;
    c->ncalls--;
    if (call->state != CALL_ANSWERED)
        sl_grpc_call_report(call, SL_GRPC_CANCELLED, "the call ended before its answer", NULL);
    call->conn = NULL;
    call->prev = call->next = NULL;
    if (!call->handler_owned) {
        sl_grpc_call_free(call);
        return;
    }
    call->state = CALL_ANSWERED;
    sl_grpc_call_cancel(call);
}

void sl_grpc_conn_wake(sl_grpc_conn *c)
{
    if (!c->owner_flushes && c->io->wake)
        c->io->wake(c->io->data);
}

static void drop_request(sl_grpc_call *call)
{
    sl_grpc_decoder_fini(&call->dec);
    free(call->msg);
    call->msg = NULL;
}

void sl_grpc_call_answer_early(sl_grpc_call *call, int http, int code, const char *msg)
{
    if (call->responding) { /* a stream already answering: trailers */
        sl_grpc_stream_end(call, code, msg, true);
        return;
    }
    sl_grpc_call_report(call, code, msg, NULL);
    sl_grpc_conn *c = call->conn;
    char status[16], code_s[16];
    char *enc = msg && *msg ? sl_pct_encode_grpc(msg) : NULL;
    snprintf(status, sizeof(status), "%d", http);
    snprintf(code_s, sizeof(code_s), "%d", code);
    nghttp2_nv nva[] = {
        NV(":status", status),
        NV("content-type", "application/grpc"),
        NV("grpc-status", code_s),
        NV("grpc-message", enc ? enc : ""),
    };
    if (call->state == CALL_READY)
        sl_grpc_call_unqueue(call);
    call->state = CALL_ANSWERED;
    drop_request(call);
    /* On failure (only ENOMEM) the stream is reset so it cannot hang. */
    if (nghttp2_submit_response(c->h2, call->stream_id, nva, enc ? 4 : 3, NULL) != 0)
        nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, call->stream_id,
                                  NGHTTP2_INTERNAL_ERROR);
    free(enc);
    sl_grpc_conn_wake(c);
}

static ssize_t read_out(nghttp2_session *h2, int32_t stream_id, uint8_t *buf, size_t length,
                        uint32_t *flags, nghttp2_data_source *src, void *user)
{
    (void)user;
    sl_grpc_call *call = src->ptr;
    size_t n = call->out_len - call->out_off;
    if (n > length)
        n = length;
    memcpy(buf, call->out + call->out_off, n);
    call->out_off += n;
    if (call->out_off == call->out_len) {
        nghttp2_nv trailers[] = {NV("grpc-status", "0")};
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        if (nghttp2_submit_trailer(h2, stream_id, trailers, 1) != 0)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return (ssize_t)n;
}

/* Packs resp behind a message prefix into call->out. */
static int pack(sl_grpc_call *call, const ProtobufCMessage *resp)
{
    size_t n = protobuf_c_message_get_packed_size(resp);
    if (n > UINT32_MAX - SL_GRPC_PREFIX_LEN)
        return SL_ERR_TOO_LARGE;
    call->out = malloc(SL_GRPC_PREFIX_LEN + n);
    if (!call->out)
        return SL_ERR_NOMEM;
    sl_grpc_frame_prefix(call->out, (uint32_t)n);
    protobuf_c_message_pack(resp, call->out + SL_GRPC_PREFIX_LEN);
    call->out_len = SL_GRPC_PREFIX_LEN + n;
    call->out_off = 0;
    return SL_OK;
}

bool sl_grpc_call_take_back(sl_grpc_call *call)
{
    call->handler_owned = false;
    if (!call->conn) {
        sl_grpc_call_free(call);
        return false;
    }
    return call->state == CALL_HANDLER;
}

int sl_grpc_call_reply(sl_grpc_call *call, const ProtobufCMessage *resp)
{
    if (call->method->server_streaming) {
        int rc = sl_grpc_call_send(call, resp);
        sl_grpc_call_finish(call);
        return rc == SL_ERR_CLOSED ? SL_OK : rc;
    }
    if (!sl_grpc_call_take_back(call))
        return SL_OK;
    int rc = pack(call, resp);
    if (rc < 0) {
        sl_grpc_call_answer_early(call, 200, SL_GRPC_RESOURCE_EXHAUSTED,
                                  rc == SL_ERR_NOMEM ? "out of memory packing the response"
                                                     : "response too large");
        return rc;
    }
    sl_grpc_call_report(call, SL_GRPC_OK, NULL, resp);
    sl_grpc_conn *c = call->conn;
    nghttp2_nv nva[] = {NV(":status", "200"), NV("content-type", "application/grpc")};
    nghttp2_data_provider prd = {.source.ptr = call, .read_callback = read_out};
    call->state = CALL_ANSWERED;
    drop_request(call);
    if (nghttp2_submit_response(c->h2, call->stream_id, nva, 2, &prd) != 0) {
        nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, call->stream_id,
                                  NGHTTP2_INTERNAL_ERROR);
        rc = SL_ERR_NOMEM;
    }
    sl_grpc_conn_wake(c);
    return rc;
}

static void fail_text(sl_grpc_call *call, int code, const char *msg)
{
    if (!sl_grpc_call_take_back(call))
        return;
    if (code <= SL_GRPC_OK || code > SL_GRPC_CODE_MAX)
        code = code == SL_GRPC_OK ? SL_GRPC_UNKNOWN : SL_GRPC_INTERNAL;
    if (call->responding) /* the messages sent so far go first */
        sl_grpc_stream_end(call, code, msg, false);
    else
        sl_grpc_call_answer_early(call, 200, code, msg);
}

void sl_grpc_call_fail(sl_grpc_call *call, int code, const char *fmt, ...)
{
    char buf[SL_SYS_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    fail_text(call, code, buf);
}

void sl_grpc_call_fail_error(sl_grpc_call *call, const sl_error *e)
{
    int code = e->code > SL_GRPC_OK && e->code <= SL_GRPC_CODE_MAX ? e->code : SL_GRPC_INTERNAL;
    fail_text(call, code, e->msg);
}

void sl_grpc_call_on_cancel(sl_grpc_call *call, sl_grpc_cancel_fn fn, void *arg)
{
    call->on_cancel = fn;
    call->cancel_arg = arg;
}

const ProtobufCMessage *sl_grpc_call_request(const sl_grpc_call *call)
{
    return call->req;
}

const sl_grpc_method *sl_grpc_call_method(const sl_grpc_call *call)
{
    return call->method;
}

bool sl_grpc_call_cancelled(const sl_grpc_call *call)
{
    return call->cancelled;
}

uint64_t sl_grpc_call_deadline(const sl_grpc_call *call)
{
    return call->deadline;
}
