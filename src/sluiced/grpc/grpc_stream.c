/* Server-streaming responses: a bounded queue of packed messages per call,
 * drained by an nghttp2 data provider as the client's flow-control window
 * allows, then the status as trailers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/grpc_impl.h"
#include "sluice/error.h"

#define NV(n, v)                                                                                   \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE             \
    }

/* Wakes the data provider if it was waiting for bytes or for the end. */
static void resume(sl_grpc_call *call)
{
    if (call->deferred) {
        call->deferred = false;
        nghttp2_session_resume_data(call->conn->h2, call->stream_id);
    }
    sl_grpc_conn_wake(call->conn);
}

/* The length of the message starting at sq's head (its prefix is there:
 * messages are queued whole). */
static size_t head_message_len(const sl_grpc_call *call)
{
    uint8_t p[SL_GRPC_PREFIX_LEN];
    sl_bufq_copyout(&call->sq, p, sizeof(p));
    uint32_t n = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
    return SL_GRPC_PREFIX_LEN + (size_t)n;
}

/* Drops n bytes from sq, keeping count of message boundaries. */
static void consume(sl_grpc_call *call, size_t n)
{
    while (n > 0) {
        if (call->head_left == 0)
            call->head_left = head_message_len(call);
        size_t k = n < call->head_left ? n : call->head_left;
        sl_bufq_consume(&call->sq, k);
        call->head_left -= k;
        n -= k;
        if (call->head_left == 0)
            call->nqueued--;
    }
}

static int submit_trailers(nghttp2_session *h2, sl_grpc_call *call)
{
    char code[16];
    snprintf(code, sizeof(code), "%d", call->end_code);
    nghttp2_nv nva[] = {NV("grpc-status", code),
                        NV("grpc-message", call->end_msg ? call->end_msg : "")};
    return nghttp2_submit_trailer(h2, call->stream_id, nva, call->end_msg ? 2 : 1);
}

static ssize_t read_stream(nghttp2_session *h2, int32_t stream_id, uint8_t *buf, size_t length,
                           uint32_t *flags, nghttp2_data_source *src, void *user)
{
    (void)stream_id;
    (void)user;
    sl_grpc_call *call = src->ptr;
    size_t n = sl_bufq_len(&call->sq);
    if (n == 0 && !call->ending) {
        call->deferred = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    if (n == 0) {
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        return submit_trailers(h2, call) == 0 ? 0 : NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    if (n > length)
        n = length;
    sl_bufq_copyout(&call->sq, buf, n);
    consume(call, n);
    return (ssize_t)n;
}

static int submit_headers(sl_grpc_call *call)
{
    nghttp2_nv nva[] = {NV(":status", "200"), NV("content-type", "application/grpc")};
    nghttp2_data_provider prd = {.source.ptr = call, .read_callback = read_stream};
    if (nghttp2_submit_response(call->conn->h2, call->stream_id, nva, 2, &prd) != 0)
        return SL_ERR_NOMEM;
    call->responding = true;
    sl_grpc_conn_wake(call->conn);
    return SL_OK;
}

/* The call still takes messages from its handler. */
static int open_state(const sl_grpc_call *call)
{
    if (!call->method->server_streaming)
        return SL_ERR_STATE;
    return call->conn && call->state == CALL_HANDLER ? SL_OK : SL_ERR_CLOSED;
}

int sl_grpc_call_send_headers(sl_grpc_call *call)
{
    int rc = open_state(call);
    if (rc < 0 || call->responding)
        return rc;
    return submit_headers(call);
}

/* Cuts sq to the rest of the message being sent (a message cannot stop
 * half-way); returns how many messages were dropped. */
static size_t drop_waiting(sl_grpc_call *call)
{
    size_t keep = call->head_left, dropped = call->nqueued - (keep ? 1 : 0);
    uint8_t *rest = keep ? malloc(keep) : NULL;
    if (rest)
        sl_bufq_copyout(&call->sq, rest, keep);
    sl_bufq_fini(&call->sq);
    sl_bufq_init(&call->sq);
    call->head_left = call->nqueued = 0;
    if (rest && sl_bufq_append(&call->sq, rest, keep) == SL_OK) {
        call->head_left = keep;
        call->nqueued = 1;
    } else if (keep) { /* no memory for the rest: the stream cannot go on */
        nghttp2_submit_rst_stream(call->conn->h2, NGHTTP2_FLAG_NONE, call->stream_id,
                                  NGHTTP2_INTERNAL_ERROR);
    }
    free(rest);
    return dropped;
}

void sl_grpc_stream_end(sl_grpc_call *call, int code, const char *msg, bool drop)
{
    sl_grpc_call_report(call, code, msg, NULL);
    if (drop)
        drop_waiting(call);
    free(call->end_msg);
    call->end_msg = msg && *msg ? sl_pct_encode_grpc(msg) : NULL;
    call->end_code = code;
    call->ending = true;
    call->state = CALL_ANSWERED;
    resume(call);
}

/* The client fell behind: the server ends the call, the handler learns it
 * from sl_grpc_call_send's return. */
static void overflow(sl_grpc_call *call)
{
    char msg[200];
    size_t waiting = sl_bufq_len(&call->sq);
    size_t dropped = drop_waiting(call) + 1;
    snprintf(msg, sizeof(msg),
             "the client fell behind: %zu bytes of messages waiting, limit %u bytes; "
             "%zu messages dropped",
             waiting, call->conn->cfg->max_stream_backlog, dropped);
    call->cancelled = true;
    sl_grpc_stream_end(call, SL_GRPC_RESOURCE_EXHAUSTED, msg, false);
}

/* Packs msg behind its prefix into sq, contiguous, so a failure leaves no
 * partial message behind. */
static int enqueue(sl_grpc_call *call, const ProtobufCMessage *msg, size_t n)
{
    size_t avail;
    uint8_t *p = sl_bufq_reserve(&call->sq, SL_GRPC_PREFIX_LEN + n, &avail);
    if (!p)
        return SL_ERR_NOMEM;
    sl_grpc_frame_prefix(p, (uint32_t)n);
    protobuf_c_message_pack(msg, p + SL_GRPC_PREFIX_LEN);
    sl_bufq_commit(&call->sq, SL_GRPC_PREFIX_LEN + n);
    call->nqueued++;
    return SL_OK;
}

int sl_grpc_call_send(sl_grpc_call *call, const ProtobufCMessage *msg)
{
    int rc = open_state(call);
    if (rc < 0)
        return rc;
    size_t n = protobuf_c_message_get_packed_size(msg);
    if (n > UINT32_MAX - SL_GRPC_PREFIX_LEN)
        return SL_ERR_TOO_LARGE;
    size_t waiting = sl_bufq_len(&call->sq);
    if (waiting > 0 && waiting + SL_GRPC_PREFIX_LEN + n > call->conn->cfg->max_stream_backlog) {
        overflow(call);
        return SL_ERR_FULL;
    }
    if (!call->responding && (rc = submit_headers(call)) < 0)
        return rc;
    if ((rc = enqueue(call, msg, n)) < 0)
        return rc;
    resume(call);
    return SL_OK;
}

void sl_grpc_call_finish(sl_grpc_call *call)
{
    if (!call->method->server_streaming) {
        sl_grpc_call_fail(call, SL_GRPC_INTERNAL, "no response message");
        return;
    }
    if (!sl_grpc_call_take_back(call))
        return;
    if (call->responding)
        sl_grpc_stream_end(call, SL_GRPC_OK, NULL, false);
    else /* no message at all: Trailers-Only */
        sl_grpc_call_answer_early(call, 200, SL_GRPC_OK, NULL);
}
