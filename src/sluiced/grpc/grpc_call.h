/* The handler side of a gRPC call: unary, or server-streaming (one
 * request, many response messages).
 *
 * A method table maps each path ("/runtime.v1.RuntimeService/Version") to
 * the request's protobuf-c descriptor and a handler. The server decodes the
 * request message before the handler runs (a malformed one never reaches
 * it: INVALID_ARGUMENT) and calls handler(call, arg) on the loop thread.
 *
 * Contract: a handler answers every call it was given exactly once, now or
 * later, with sl_grpc_call_reply() or sl_grpc_call_fail() (or _fail_error);
 * a server-streaming handler may first send any number of messages with
 * sl_grpc_call_send() and ends with sl_grpc_call_finish() (status OK) or
 * a fail. The call object stays valid until then, even after the client
 * cancelled it, the deadline passed or the connection closed; the answer is
 * then dropped. sl_grpc_call_on_cancel() lets a handler learn of such an
 * end early, to stop work it started. After the answer the call is gone.
 *
 * Streaming back-pressure: messages wait in the call until the client's
 * HTTP/2 flow-control window and the connection's output take them. A call
 * whose waiting messages would exceed the server's max_stream_backlog bytes
 * is ended by the server (see sl_grpc_call_send), so a client that does
 * not read costs at most that much. */
#ifndef SL_GRPC_CALL_H
#define SL_GRPC_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <protobuf-c/protobuf-c.h>

#include "grpc/grpc_status.h"

struct sl_error;

typedef struct sl_grpc_call sl_grpc_call;

typedef void (*sl_grpc_handler)(sl_grpc_call *call, void *arg);
typedef void (*sl_grpc_cancel_fn)(sl_grpc_call *call, void *arg);

typedef struct sl_grpc_method {
    const char *path;                          /* "/pkg.Service/Method" */
    const ProtobufCMessageDescriptor *request; /* NULL: known, not served */
    sl_grpc_handler handler;                   /* NULL: UNIMPLEMENTED */
    bool server_streaming;                     /* answers with send + finish */
} sl_grpc_method;

/* The decoded request, of the method's request type. Owned by the call. */
const ProtobufCMessage *sl_grpc_call_request(const sl_grpc_call *call);
/* The method's table entry. */
const sl_grpc_method *sl_grpc_call_method(const sl_grpc_call *call);
/* True once the call ended without the handler: client RST_STREAM,
 * deadline, connection gone, server shutdown, or (streaming) a client that
 * fell more than max_stream_backlog bytes behind. */
bool sl_grpc_call_cancelled(const sl_grpc_call *call);
/* The absolute deadline in the server clock (ms, uv_now on the loop), or
 * UINT64_MAX when the client set none. */
uint64_t sl_grpc_call_deadline(const sl_grpc_call *call);

/* fn(call, arg) runs once if the call is cancelled before it is answered.
 * The handler must still answer it afterwards (from fn or later). */
void sl_grpc_call_on_cancel(sl_grpc_call *call, sl_grpc_cancel_fn fn, void *arg);

/* Answers with status OK and resp (packed at once; the caller keeps resp).
 * Returns SL_OK; SL_ERR_NOMEM when packing failed (the client then gets
 * RESOURCE_EXHAUSTED). Either way the call is gone. On a server-streaming
 * call: sl_grpc_call_send(resp), then sl_grpc_call_finish(). */
int sl_grpc_call_reply(sl_grpc_call *call, const ProtobufCMessage *resp);

/* Server-streaming calls only. Submits the response headers now rather
 * than with the first message, so the client learns the call was accepted.
 * Returns SL_OK, SL_ERR_CLOSED when the call is already over, SL_ERR_STATE
 * for a unary call, SL_ERR_NOMEM. */
int sl_grpc_call_send_headers(sl_grpc_call *call);

/* Server-streaming calls only. Queues msg (packed at once; the caller
 * keeps it) as the next response message. Returns
 *   SL_OK            queued,
 *   SL_ERR_CLOSED    the call is over (client cancel, deadline, connection
 *                    gone, server shutdown): msg is dropped,
 *   SL_ERR_FULL      the client fell behind: msg would take the bytes
 *                    waiting beyond max_stream_backlog, so the waiting
 *                    messages not yet begun are dropped with msg and the
 *                    server ends the call with RESOURCE_EXHAUSTED right
 *                    after the one being sent (sl_grpc_call_cancelled()
 *                    turns true; on_cancel does not run),
 *   SL_ERR_TOO_LARGE / SL_ERR_NOMEM: msg is dropped, the call goes on,
 *   SL_ERR_STATE     a unary call.
 * Whatever it returns, the handler still ends the call (finish or fail),
 * which then only frees it. A message larger than the backlog is sent
 * when nothing else waits. */
int sl_grpc_call_send(sl_grpc_call *call, const ProtobufCMessage *msg);

/* Ends a server-streaming call with status OK once its queued messages are
 * sent (or frees it when it is already over). The call is gone after. */
void sl_grpc_call_finish(sl_grpc_call *call);

/* Answers with a non-OK status (SL_GRPC_OK is turned into UNKNOWN) and a
 * printf-style message sent as grpc-message. On a server-streaming call
 * whose headers went out, the status follows the queued messages as
 * trailers. The call is gone after. */
void sl_grpc_call_fail(sl_grpc_call *call, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* sl_grpc_call_fail with e->code as the status (INTERNAL when 0 or not a
 * gRPC code) and e->msg as the message. */
void sl_grpc_call_fail_error(sl_grpc_call *call, const struct sl_error *e);

#endif
