/* A small synchronous CRI (runtime.v1) gRPC client: HTTP/2 with prior
 * knowledge on a unix socket (nghttp2 client session driven through
 * mem_recv/mem_send), messages with protobuf-c. One call at a time; each
 * call blocks until the answer, an error or its deadline (sent to the
 * server as grpc-timeout). Server-streaming calls deliver each message as it
 * arrives. Used by sluicectl and the kube front.
 *
 * Errors never leave the caller with a bare "EOF": every failure fills the
 * caller's sl_error (src/common/sys_error.h) with the gRPC status in
 * e->code and one complete line in e->msg, for the caller to wrap and its
 * main to print once. e->errnum tells whose failure it is: non-zero when
 * it is ours or the connection's (the errno, or a stand-in: ETIMEDOUT for
 * a deadline, ECANCELED for a stream the caller ended, EMSGSIZE for a
 * message over a limit, EPROTO for broken HTTP/2, ECONNRESET for a closed
 * connection), 0 when it is the runtime's answer. Transport failures use
 * UNAVAILABLE (cannot connect, connection lost) or DEADLINE_EXCEEDED, as
 * grpc-go reports them.
 *
 * No globals: distinct clients may be used from distinct threads at once;
 * one client is used by one thread at a time. Writes use MSG_NOSIGNAL. */
#ifndef SL_CRI_CLIENT_H
#define SL_CRI_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <protobuf-c/protobuf-c.h>
#include "grpc_code.h"
#include "sys_error.h"

#define SL_CRI_DEFAULT_TIMEOUT_MS 2000u
/* Largest response message accepted (the kubelet's cri-client limit). */
#define SL_CRI_MAX_RECV_MESSAGE (16u * 1024 * 1024)
/* Largest request message sent (grpc-go's default server receive limit). */
#define SL_CRI_MAX_SEND_MESSAGE (16u * 1024 * 1024)
/* HTTP/2 windows we advertise, so a 16 MiB answer needs few round trips. */
#define SL_CRI_WINDOW_SIZE (16u * 1024 * 1024)
/* Bytes of a runtime's grpc-message kept (an sl_error's message size). */
#define SL_CRI_MAX_ERR SL_SYS_ERROR_MAX
/* Longest endpoint path (sockaddr_un.sun_path less the NUL). */
#define SL_CRI_MAX_SOCKET_PATH 107u
#define SL_CRI_USER_AGENT "sluice-cri-client/0.1"

/* gRPC status codes: the programs' one table (src/common/grpc_code.h),
 * under the names this client's callers use. */
enum {
    SL_CRI_OK = SL_GRPC_OK,
    SL_CRI_CANCELLED = SL_GRPC_CANCELLED,
    SL_CRI_UNKNOWN = SL_GRPC_UNKNOWN,
    SL_CRI_INVALID_ARGUMENT = SL_GRPC_INVALID_ARGUMENT,
    SL_CRI_DEADLINE_EXCEEDED = SL_GRPC_DEADLINE_EXCEEDED,
    SL_CRI_NOT_FOUND = SL_GRPC_NOT_FOUND,
    SL_CRI_ALREADY_EXISTS = SL_GRPC_ALREADY_EXISTS,
    SL_CRI_PERMISSION_DENIED = SL_GRPC_PERMISSION_DENIED,
    SL_CRI_RESOURCE_EXHAUSTED = SL_GRPC_RESOURCE_EXHAUSTED,
    SL_CRI_FAILED_PRECONDITION = SL_GRPC_FAILED_PRECONDITION,
    SL_CRI_ABORTED = SL_GRPC_ABORTED,
    SL_CRI_OUT_OF_RANGE = SL_GRPC_OUT_OF_RANGE,
    SL_CRI_UNIMPLEMENTED = SL_GRPC_UNIMPLEMENTED,
    SL_CRI_INTERNAL = SL_GRPC_INTERNAL,
    SL_CRI_UNAVAILABLE = SL_GRPC_UNAVAILABLE,
    SL_CRI_DATA_LOSS = SL_GRPC_DATA_LOSS,
    SL_CRI_UNAUTHENTICATED = SL_GRPC_UNAUTHENTICATED,
};

typedef struct sl_cri_client sl_cri_client;

/* Connects to endpoint ("unix:///abs/path", "unix:/abs/path" or "/abs/path")
 * within timeout_ms (0 = SL_CRI_DEFAULT_TIMEOUT_MS) and sends the HTTP/2
 * preface. Returns 0 and *out, or -1 with *err (UNAVAILABLE, local: bad
 * endpoint, no socket, refused; the message names the endpoint). */
int sl_cri_client_connect(const char *endpoint, uint32_t timeout_ms, sl_cri_client **out,
                          sl_error *err);

/* Calls the unary method path ("/runtime.v1.RuntimeService/Version") with
 * req and waits up to timeout_ms (0 = SL_CRI_DEFAULT_TIMEOUT_MS) for the
 * answer. On SL_CRI_OK *resp is the decoded answer (free it with
 * protobuf_c_message_free_unpacked(*resp, NULL)) and *err is clear;
 * otherwise *resp is NULL. Returns the gRPC status, also stored in
 * err->code with the message. After a transport failure
 * (sl_cri_transport_failed) the client is broken: every later call fails
 * the same way. */
int sl_cri_client_call(sl_cri_client *c, const char *path, const ProtobufCMessage *req,
                       const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp,
                       uint32_t timeout_ms, sl_error *err);

/* A server-streaming call (GetContainerEvents): on_msg gets every message
 * as it is decoded (the client frees it when on_msg returns; a non-zero
 * return ends the call); stop, when set, is asked whenever the client
 * wakes up (at least every SL_CRI_STREAM_TICK_MS, and at once after a
 * signal interrupted its wait): true ends the call. */
#define SL_CRI_STREAM_TICK_MS 250u
typedef struct sl_cri_stream_cb {
    int (*on_msg)(void *arg, const ProtobufCMessage *msg);
    bool (*stop)(void *arg);
    void *arg;
} sl_cri_stream_cb;

/* Calls the server-streaming method path with req and delivers the answer
 * messages to cb until the server ends the stream, cb ends it, or
 * timeout_ms pass (0 = no deadline, and no grpc-timeout is sent). Returns
 * the final gRPC status: SL_CRI_OK when the server ended the stream with
 * OK; SL_CRI_CANCELLED (err->errnum ECANCELED) when cb ended it (the stream is reset,
 * the connection stays usable); otherwise as sl_cri_client_call. A
 * message larger than SL_CRI_MAX_RECV_MESSAGE ends the call with
 * RESOURCE_EXHAUSTED. */
int sl_cri_client_stream(sl_cri_client *c, const char *path, const ProtobufCMessage *req,
                         const ProtobufCMessageDescriptor *resp_desc, const sl_cri_stream_cb *cb,
                         uint32_t timeout_ms, sl_error *err);

/* Whether err is ours or the connection's rather than the runtime's
 * answer (err->errnum != 0). */
bool sl_cri_is_local(const sl_error *err);
/* Whether err broke the connection (local and UNAVAILABLE): the client
 * that returned it can only be freed. */
bool sl_cri_transport_failed(const sl_error *err);

/* Whether a client that sat idle can take a call: not after a transport
 * failure, nor once the runtime closed the connection or sent GOAWAY
 * meanwhile (sluiced does both to connections idle for
 * grpc-idle-timeout-ms). Reads what arrived without blocking. */
bool sl_cri_client_usable(sl_cri_client *c);

/* The endpoint as given to connect. */
const char *sl_cri_client_endpoint(const sl_cri_client *c);

/* Closes the connection (GOAWAY, best effort) and frees. NULL is fine. */
void sl_cri_client_free(sl_cri_client *c);

/* "NotFound", "Unavailable", ... as grpc-go names codes; "Code(?)" else
 * (the table: src/common/grpc_code.c). */
const char *sl_cri_code_name(int code);

/* Formats a grpc-timeout value for ms ("2000m", or a coarser unit when ms
 * needs more than 8 digits). out must hold 10 bytes. */
void sl_cri_format_timeout(uint64_t ms, char out[10]);

/* Maps an HTTP status of a non-gRPC answer to a gRPC code, as gRPC does. */
int sl_cri_http_to_code(int http_status);

#endif
