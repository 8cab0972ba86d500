/* An in-memory gRPC test harness: an nghttp2 client session wired to an
 * sl_grpc_conn, no sockets on either side. Used by the gRPC connection
 * tests (unary calls, server streaming). */
#ifndef SL_TEST_GRPC_FX_H
#define SL_TEST_GRPC_FX_H

#include <nghttp2/nghttp2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grpc/api.pb-c.h"
#include "grpc/grpc_conn.h"
#include "grpc/grpc_frame.h"

#define MAX_STREAMS 128
#define MAX_PENDING 128

typedef struct cstream {
    int32_t id;
    /* request body */
    const uint8_t *body;
    size_t len, off, chunk;
    uint8_t req[64]; /* the body of submit_version */
    bool end;
    /* response */
    int http;
    int header_blocks;
    bool trailers_only;
    int grpc_status; /* -1: none */
    char grpc_message[512];
    uint8_t *data;
    size_t dlen;
    bool closed;
    uint32_t close_code;
    bool got_rst;
    uint32_t rst_code;
} cstream;

typedef struct fixture {
    nghttp2_session *cli;
    bool manual_window; /* the client returns window credit only in gfx_consume */
    cstream s[MAX_STREAMS];
    int ns;
    int ping_acks;
    uint32_t server_max_streams;
    uint32_t goaway_code; /* of the last GOAWAY received */
    char goaway_debug[256];
    int goaways;
    /* server side */
    sl_grpc_config cfg;
    sl_grpc_conn_io io;
    sl_grpc_conn *conn;
    uint64_t now;
    int wakes;
    size_t split; /* bytes per server recv call, 0 = all */
    /* calls held by gfx_h_later */
    sl_grpc_call *pending[MAX_PENDING];
    int npending;
    int cancels;
    int handler_runs;
} fixture;

/* A connection for the method table m (arg: the fixture), receive limit
 * 4096, clock at 1000 ms. */
fixture *gfx_new(const sl_grpc_method *m, size_t n, bool manual_window);
/* Frees the connection (cancelling held calls), answers what the test
 * still holds, frees the client. */
void gfx_free(fixture *f);

/* Handler that keeps the call in f->pending (counting cancels). */
void gfx_h_later(sl_grpc_call *call, void *arg);

/* Client output to the server (in f->split pieces); returns bytes moved. */
size_t client_to_server(fixture *f);
/* Server output to the client; returns bytes moved. */
size_t server_to_client(fixture *f);
/* Both ways until nothing moves. */
void pump(fixture *f);
/* Returns n bytes of window credit for stream s (manual_window). */
void gfx_consume(fixture *f, const cstream *s, size_t n);

/* A Length-Prefixed-Message of m into out; returns its length. */
size_t lpm(uint8_t *out, const ProtobufCMessage *m);
size_t version_req(uint8_t *out, const char *v);

typedef struct req_opts {
    const char *method;       /* default POST */
    const char *content_type; /* default application/grpc */
    const char *timeout;      /* grpc-timeout or NULL */
    size_t chunk;             /* DATA frame size, 0 = as large as allowed */
    bool open;                /* do not end the stream */
} req_opts;

cstream *submit(fixture *f, const char *path, const uint8_t *body, size_t len, const req_opts *o);
/* A VersionRequest{version: v} to path, its bytes kept in the stream. */
cstream *submit_version(fixture *f, const char *path, const char *v, const req_opts *o);

void expect_status(const cstream *s, int code, const char *msg_part);
/* Decodes the single response message of s as type d. */
ProtobufCMessage *response(const cstream *s, const ProtobufCMessageDescriptor *d);
/* The i-th response message of s (caller frees), NULL when there are
 * fewer; *count gets how many whole messages s received. */
ProtobufCMessage *response_nth(const cstream *s, const ProtobufCMessageDescriptor *d, size_t i,
                               size_t *count);

#endif
