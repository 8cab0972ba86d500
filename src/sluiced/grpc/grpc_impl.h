/* Private structures shared by grpc_conn.c, grpc_call.c and grpc_stream.c. */
#ifndef SL_GRPC_IMPL_H
#define SL_GRPC_IMPL_H

#include <nghttp2/nghttp2.h>

#include "grpc/grpc_conn.h"

typedef enum call_state {
    CALL_HEADERS, /* request headers arriving */
    CALL_BODY,    /* headers accepted, reading the message */
    CALL_READY,   /* request complete, queued for its handler */
    CALL_HANDLER, /* the handler holds it (a stream: sending) */
    CALL_ANSWERED /* an answer is submitted (or the call was cut) */
} call_state;

struct sl_grpc_call {
    sl_grpc_conn *conn; /* NULL once the stream is gone */
    int32_t stream_id;
    sl_grpc_call *prev, *next; /* conn->calls */
    sl_grpc_call *ready_next;  /* conn's ready queue */
    call_state state;
    const sl_grpc_method *method;

    /* request headers */
    char *path;
    char *content_type;
    bool post;
    bool bad_timeout;
    bool headers_too_big;
    size_t header_bytes;
    uint64_t timeout_ms; /* UINT64_MAX: none */
    uint64_t deadline;   /* UINT64_MAX: none */

    /* request body */
    sl_grpc_decoder dec;
    uint8_t *msg;
    size_t msg_len;
    unsigned nmsg;
    ProtobufCMessage *req;

    /* response: prefix + protobuf, sent by the data provider */
    uint8_t *out;
    size_t out_len, out_off;

    /* server-streaming response (grpc_stream.c) */
    bool responding;  /* HEADERS submitted; the data provider reads sq */
    bool deferred;    /* the data provider waits for a message */
    bool ending;      /* the status follows once sq is sent */
    int end_code;     /* the status then */
    char *end_msg;    /* its grpc-message, percent-encoded; NULL: none */
    sl_bufq sq;       /* whole messages not yet handed to nghttp2 */
    size_t head_left; /* bytes of the message at sq's head still to send */
    size_t nqueued;   /* messages (partly) in sq */

    uint64_t start_ns; /* CLOCK_MONOTONIC at the request headers */
    bool reported;     /* cfg->on_end ran for it */

    bool handler_owned; /* the handler has not answered yet */
    bool cancelled;
    sl_grpc_cancel_fn on_cancel;
    void *cancel_arg;
};

struct sl_grpc_conn {
    nghttp2_session *h2;
    const sl_grpc_config *cfg;
    const sl_grpc_conn_io *io;
    sl_grpc_call *calls; /* every call with a live stream */
    sl_grpc_call *ready_head, *ready_tail;
    size_t ncalls;
    bool owner_flushes; /* inside recv/expire: the owner sends afterwards */
};

/* grpc_call.c */
sl_grpc_call *sl_grpc_call_new(sl_grpc_conn *c, int32_t stream_id);
void sl_grpc_call_free(sl_grpc_call *call);
/* Removes the call from its connection (stream gone); frees it unless a
 * handler holds it, which is then cancelled. */
void sl_grpc_call_detach(sl_grpc_call *call);
/* Fires on_cancel once, for a call a handler holds. May free the call. */
void sl_grpc_call_cancel(sl_grpc_call *call);
/* Trailers-Only answer with HTTP status http (200 for gRPC errors). */
void sl_grpc_call_answer_early(sl_grpc_call *call, int http, int code, const char *msg);
/* The handler gives the call back. Returns true when the answer should be
 * sent (the stream is still there and nothing was answered yet); frees a
 * call whose connection is gone. */
bool sl_grpc_call_take_back(sl_grpc_call *call);
/* Unlinks the call from the ready queue if it is there. */
void sl_grpc_call_unqueue(sl_grpc_call *call);
/* Tells cfg->on_end the call's status (once; later calls do nothing).
 * resp: the unary OK answer, else NULL. */
void sl_grpc_call_report(sl_grpc_call *call, int code, const char *msg,
                         const ProtobufCMessage *resp);
/* Tells the owner about output it would not otherwise send. */
void sl_grpc_conn_wake(sl_grpc_conn *c);

/* grpc_stream.c */
/* Ends a streaming call whose headers went out: status code and msg as
 * trailers once sq is sent (drop: sq is cut to the message being sent). */
void sl_grpc_stream_end(sl_grpc_call *call, int code, const char *msg, bool drop);

#endif
