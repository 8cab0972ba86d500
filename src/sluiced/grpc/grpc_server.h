/* The gRPC server on a unix socket: libuv I/O around sl_grpc_conn.
 *
 * Usage: sl_grpc_config_init(), set the method table, sl_grpc_server_new(),
 * sl_grpc_server_listen(); sl_grpc_server_close() at shutdown, then
 * sl_grpc_server_free() from (or after) its callback. Everything runs on the
 * loop thread.
 *
 * Connections: at most cfg.max_connections are open (kept to half the
 * open-file limit). A new connection at the limit takes the place of the
 * longest-idle open one, which gets GOAWAY(NO_ERROR) and is closed; when
 * every open connection is busy (a handler holds one of its calls) the
 * new one gets our SETTINGS and GOAWAY(REFUSED_STREAM) with a text, then
 * is closed: no client is ever accepted and dropped silently. A connection
 * that is not busy and moves no bytes for cfg.idle_timeout_ms gets
 * GOAWAY(NO_ERROR) and is closed once that is written. */
#ifndef SL_GRPC_SERVER_H
#define SL_GRPC_SERVER_H

#include <stddef.h>
#include <uv.h>

#include "grpc/grpc_conn.h"
#include "sys_error.h"

/* Pending connections in listen() (the kernel caps it at somaxconn). */
#define SL_GRPC_LISTEN_BACKLOG 4096
/* Open connections take at most 1/SL_GRPC_FD_SHARE of the open-file soft
 * limit; the rest is for pods, monitors and streaming sessions. */
#define SL_GRPC_FD_SHARE 2
/* A refused connection is logged at most once per this long. */
#define SL_GRPC_REFUSAL_LOG_MS 10000u
/* A refused connection stays open (reading and dropping) until its peer
 * closes, at most this long, so a peer still sending its preface reads
 * our GOAWAY instead of losing it to a failed write. */
#define SL_GRPC_REFUSED_LINGER_MS 1000u
/* Refused connections, and connections closed to make room, that linger
 * so at once; beyond it they are closed at once (the GOAWAY written only
 * if the socket takes it then). */
#define SL_GRPC_MAX_LINGERING 64u
/* Bytes read from the socket at once. */
#define SL_GRPC_READ_CHUNK 65536u
/* Connections that did not take their GOAWAY (shutdown, idle) within this
 * are cut. */
#define SL_GRPC_SHUTDOWN_TIMEOUT_MS 2000u

typedef struct sl_grpc_server sl_grpc_server;

typedef struct sl_grpc_server_stats {
    size_t connections; /* open now, closing ones included */
    size_t open;        /* those counted against the limit (no GOAWAY yet) */
    size_t evicted;     /* closed at the limit to make room */
    size_t refused;     /* new connections refused at the limit */
    size_t idle_closed; /* closed by the idle timeout */
} sl_grpc_server_stats;

/* cfg is copied (the method table it points to is borrowed and must outlive
 * the server). Returns SL_OK or SL_ERR_NOMEM. */
int sl_grpc_server_new(uv_loop_t *loop, const sl_grpc_config *cfg, sl_grpc_server **out);

/* Listens on the unix socket at path with file mode `mode`. A stale socket
 * file there is removed first; any other kind of file is an error. Returns
 * 0, or -1 with *e set. */
int sl_grpc_server_listen(sl_grpc_server *s, const char *path, unsigned mode, sl_error *e);

/* Takes new limits from cfg (a reload): max_recv_message (calls that
 * start from now on), max_stream_backlog, max_connections (kept to the
 * fd bound; a lower limit closes no connection at once, it makes room
 * at the next accept) and idle_timeout_ms (the idle sweep is re-armed).
 * The other fields are kept. */
void sl_grpc_server_set_limits(sl_grpc_server *s, const sl_grpc_config *cfg);

/* Open connections. */
size_t sl_grpc_server_connections(const sl_grpc_server *s);
/* The connection limit in force (cfg.max_connections or the fd bound). */
uint32_t sl_grpc_server_max_connections(const sl_grpc_server *s);
void sl_grpc_server_get_stats(const sl_grpc_server *s, sl_grpc_server_stats *out);

/* Stops listening and removes the socket file, sends GOAWAY on every
 * connection and closes each once everything before and with its GOAWAY is
 * written (the peer's close is not awaited; cut at
 * SL_GRPC_SHUTDOWN_TIMEOUT_MS if the writing does not finish); calls still
 * held by handlers are cancelled.
 * cb(s, arg) runs once every handle is closed. */
void sl_grpc_server_close(sl_grpc_server *s, void (*cb)(sl_grpc_server *s, void *arg), void *arg);
void sl_grpc_server_free(sl_grpc_server *s);

#endif
