/* One HTTP/2 connection of the gRPC server, without I/O.
 *
 * nghttp2's server session does the HTTP/2 part (preface, SETTINGS and
 * their ACK, PING ACK, flow control, HPACK); this layer turns streams into
 * calls: header checks, Length-Prefixed-Message reassembly, request
 * decoding, deadlines, and the answer (HEADERS, one DATA message or, for a
 * server-streaming method, a bounded queue of them, trailers; Trailers-Only
 * for early errors).
 *
 * The owner feeds bytes with sl_grpc_conn_recv(), pulls output with
 * sl_grpc_conn_send(), arms a timer for sl_grpc_conn_next_deadline() and
 * calls sl_grpc_conn_expire() when it fires. Handlers run from
 * sl_grpc_conn_recv() (never from inside nghttp2 callbacks); when one
 * answers later, io->wake() tells the owner that output is pending. */
#ifndef SL_GRPC_CONN_H
#define SL_GRPC_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grpc/grpc_call.h"
#include "grpc/grpc_frame.h"
#include "util/bufq.h"

/* Concurrent calls per connection (SETTINGS_MAX_CONCURRENT_STREAMS). */
#define SL_GRPC_DEFAULT_MAX_STREAMS 100u
/* Bytes of one request header block (SETTINGS_MAX_HEADER_LIST_SIZE, name +
 * value + 32 per field as RFC 9113 counts); beyond it the stream is reset. */
#define SL_GRPC_DEFAULT_MAX_HEADER_LIST (16u * 1024)
/* Open connections at once (the server also keeps it to half the
 * open-file limit). At the limit a new connection takes the place of the
 * longest-idle one, or is refused with a GOAWAY when none is idle. */
#define SL_GRPC_DEFAULT_MAX_CONNECTIONS 4096u
/* A connection with no call in progress and no bytes read or written for
 * this long is closed with GOAWAY(NO_ERROR). 0: never. */
#define SL_GRPC_DEFAULT_IDLE_TIMEOUT_MS (5u * 60 * 1000)
/* Bytes of response messages a server-streaming call may have waiting for
 * the client; beyond it the call ends with RESOURCE_EXHAUSTED. */
#define SL_GRPC_DEFAULT_MAX_STREAM_BACKLOG (1024u * 1024)
/* Queued output bytes of a connection before it stops producing and
 * reading (back-pressure). */
#define SL_GRPC_OUTPUT_HIGH_WATER (256u * 1024)

/* A call whose status is decided, for logs and metrics (see on_end). */
typedef struct sl_grpc_call_end {
    const char *path;                 /* the request's :path, "" when none */
    const sl_grpc_method *method;     /* NULL: not in the method table */
    const ProtobufCMessage *request;  /* NULL when it was not decoded */
    const ProtobufCMessage *response; /* a unary OK answer, else NULL */
    int code;                         /* SL_GRPC_* */
    const char *message;              /* grpc-message, "" when none */
    uint64_t duration_ns;             /* request headers to the answer */
} sl_grpc_call_end;

/* Called once per call that got complete request headers, when its status
 * is decided: the answer (OK or not) is submitted, or the call ended
 * without one (CANCELLED: client reset, connection gone, shutdown). Runs
 * on the loop thread; must not touch the call. */
typedef void (*sl_grpc_end_fn)(const sl_grpc_call_end *end, void *arg);

typedef struct sl_grpc_config {
    const sl_grpc_method *methods; /* the method table (borrowed) */
    size_t nmethods;
    void *arg;                   /* passed to every handler */
    uint32_t max_recv_message;   /* SL_GRPC_DEFAULT_MAX_RECV_MESSAGE */
    uint32_t max_streams;        /* SL_GRPC_DEFAULT_MAX_STREAMS */
    uint32_t max_header_list;    /* SL_GRPC_DEFAULT_MAX_HEADER_LIST */
    uint32_t max_stream_backlog; /* SL_GRPC_DEFAULT_MAX_STREAM_BACKLOG */
    uint32_t max_connections;    /* SL_GRPC_DEFAULT_MAX_CONNECTIONS (server) */
    uint64_t idle_timeout_ms;    /* SL_GRPC_DEFAULT_IDLE_TIMEOUT_MS (server) */
    sl_grpc_end_fn on_end;       /* NULL: none */
    void *on_end_arg;
} sl_grpc_config;

/* Fills c with the defaults and an empty method table. */
void sl_grpc_config_init(sl_grpc_config *c);

/* What the connection needs from its owner. */
typedef struct sl_grpc_conn_io {
    uint64_t (*now)(void *data); /* monotonic ms */
    void (*wake)(void *data);    /* output became pending outside recv */
    void *data;
} sl_grpc_conn_io;

typedef struct sl_grpc_conn sl_grpc_conn;

/* cfg and io are borrowed and must outlive the connection. Returns SL_OK
 * or SL_ERR_NOMEM. Our SETTINGS are queued at once. */
int sl_grpc_conn_new(const sl_grpc_config *cfg, const sl_grpc_conn_io *io, sl_grpc_conn **out);

/* Feeds bytes from the peer and runs the handlers of completed requests.
 * Returns SL_OK, or SL_ERR_PROTO when the peer broke HTTP/2 (bad preface,
 * flood, ...; a GOAWAY may still be queued: send it, then close), or
 * SL_ERR_NOMEM. */
int sl_grpc_conn_recv(sl_grpc_conn *c, const uint8_t *data, size_t len);

/* Appends pending output to out until it holds at least `limit` bytes or
 * nothing is pending. Returns SL_OK, SL_ERR_NOMEM or SL_ERR_PROTO. */
int sl_grpc_conn_send(sl_grpc_conn *c, sl_bufq *out, size_t limit);

bool sl_grpc_conn_want_read(const sl_grpc_conn *c);
bool sl_grpc_conn_want_write(const sl_grpc_conn *c);

/* Earliest call deadline (ms), UINT64_MAX when none. */
uint64_t sl_grpc_conn_next_deadline(const sl_grpc_conn *c);
/* Answers DEADLINE_EXCEEDED to every unanswered call whose deadline is
 * <= now and cancels its handler. */
void sl_grpc_conn_expire(sl_grpc_conn *c, uint64_t now);

/* Queues a GOAWAY with error_code (an HTTP/2 error code) and debug (a
 * text for the peer's logs, may be NULL), naming the last stream we
 * processed. The session goes on reading; the owner closes once it is
 * sent. Returns SL_OK or SL_ERR_NOMEM. */
int sl_grpc_conn_goaway(sl_grpc_conn *c, uint32_t error_code, const char *debug);

/* Calls on this connection (streams alive or handlers running). */
size_t sl_grpc_conn_calls(const sl_grpc_conn *c);

/* True while a handler holds one of its calls (a unary call not answered
 * yet, an open server stream): such a connection is never idle. */
bool sl_grpc_conn_busy(const sl_grpc_conn *c);

/* Frees the connection. Calls still held by handlers are cancelled (their
 * on_cancel runs) and detached; they are freed when answered. */
void sl_grpc_conn_free(sl_grpc_conn *c);

/* Looks path up in the table; NULL when unknown. */
const sl_grpc_method *sl_grpc_method_find(const sl_grpc_method *m, size_t n, const char *path);

#endif
