/* Private structures of the gRPC server, shared by grpc_server.c (I/O,
 * connection lifetime) and grpc_limits.c (connection limit, idle timeout). */
#ifndef SL_GRPC_SERVER_IMPL_H
#define SL_GRPC_SERVER_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "grpc/grpc_server.h"

typedef struct gconn gconn;
typedef struct refused refused;

struct sl_grpc_server {
    uv_loop_t *loop;
    sl_grpc_config cfg;
    uv_pipe_t listener;
    bool listening;
    char *path;   /* socket file, removed at close */
    gconn *conns; /* every connection, closing ones too */
    size_t nconns;
    /* Open connections (no GOAWAY sent, not closing), most recently
     * active first: the tail is the longest idle. Only these count
     * against cfg.max_connections. */
    gconn *lru_head, *lru_tail;
    size_t nopen;
    uv_timer_t idle_timer; /* fires when the LRU tail may be idle too long */
    refused *lingering;    /* refused connections waiting for their peer */
    size_t nlingering;
    size_t ngoaway; /* connections with a GOAWAY sent, not closed yet */
    sl_grpc_server_stats stats;
    uint64_t refusal_logged; /* uv_now of the last refusal log line, 0: never */
    bool closing;
    bool listener_closed;
    bool idle_timer_closed;
    void (*close_cb)(sl_grpc_server *s, void *arg);
    void *close_arg;
    /* Shared by every connection: each read is consumed before the next. */
    char rbuf[SL_GRPC_READ_CHUNK];
};

struct gconn {
    sl_grpc_server *srv;
    gconn *prev, *next;         /* srv->conns */
    gconn *lru_prev, *lru_next; /* srv->lru_head, while in_lru */
    bool in_lru;
    uint64_t last_active; /* uv_now: accepted, last bytes read or written */
    uv_pipe_t pipe;
    uv_timer_t timer; /* call deadlines; the cut-off after a GOAWAY */
    uv_idle_t idle;   /* output from a handler that answered later */
    sl_grpc_conn *core;
    sl_grpc_conn_io io;
    sl_bufq out;
    uv_write_t wreq;
    size_t inflight; /* bytes handed to uv_write */
    bool reading;
    bool failed; /* protocol error: send what is queued, then close */
    bool goaway; /* GOAWAY queued: linger once it is written */
    bool shut;   /* GOAWAY written, our side shut down: wait for EOF */
    uv_shutdown_t sreq;
    bool closing;
    int open_handles;
};

/* grpc_server.c */
void sl_gconn_pump(gconn *g);
void sl_gconn_close(gconn *g);
/* Graceful end: queues GOAWAY(error_code, debug) and leaves the LRU; once
 * it is written, shuts our side down and reads (dropping) until the peer
 * closes, so a peer that was still writing reads the GOAWAY instead of
 * failing its write; cut off after SL_GRPC_SHUTDOWN_TIMEOUT_MS. */
void sl_gconn_goaway(gconn *g, uint32_t error_code, const char *debug);
/* Immediate end, when SL_GRPC_MAX_LINGERING connections already linger:
 * GOAWAY(NO_ERROR, debug) written if the socket takes it now, closed. */
void sl_gconn_evict(gconn *g, const char *debug);

/* grpc_limits.c */
void sl_gsrv_limits_init(sl_grpc_server *s);
/* Closes the idle timer; cb(handle) runs when it is closed. */
void sl_gsrv_limits_close(sl_grpc_server *s, uv_close_cb cb);
/* A new connection: now the most recently active. */
void sl_gsrv_lru_add(gconn *g);
/* Leaves the LRU (closing, or a GOAWAY sent): no longer counted. */
void sl_gsrv_lru_remove(gconn *g);
/* Bytes moved on g: it is the most recently active. */
void sl_gsrv_touch(gconn *g);
/* Makes room for one more connection: true when below the limit or once
 * the longest-idle connection is evicted; false when every open
 * connection is busy. */
bool sl_gsrv_make_room(sl_grpc_server *s);
/* cfg.max_connections kept to 1/SL_GRPC_FD_SHARE of the open-file limit. */
uint32_t sl_gsrv_fd_bound(uint32_t want);

#endif
