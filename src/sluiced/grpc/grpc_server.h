/* The gRPC server on a unix socket: libuv I/O around sl_grpc_conn.
 *
 * Usage: sl_grpc_config_init(), set the method table, sl_grpc_server_new(),
 * sl_grpc_server_listen(); sl_grpc_server_close() at shutdown, then
 * sl_grpc_server_free() from (or after) its callback. Everything runs on the
 * loop thread. */
#ifndef SL_GRPC_SERVER_H
#define SL_GRPC_SERVER_H

#include <stddef.h>
#include <uv.h>

#include "grpc/grpc_conn.h"
#include "sys_error.h"

/* Pending connections in listen(). */
#define SL_GRPC_LISTEN_BACKLOG 128
/* Bytes read from the socket at once. */
#define SL_GRPC_READ_CHUNK 65536u
/* At shutdown, connections that did not take their GOAWAY within this are
 * cut. */
#define SL_GRPC_SHUTDOWN_TIMEOUT_MS 2000u

typedef struct sl_grpc_server sl_grpc_server;

/* cfg is copied (the method table it points to is borrowed and must outlive
 * the server). Returns SL_OK or SL_ERR_NOMEM. */
int sl_grpc_server_new(uv_loop_t *loop, const sl_grpc_config *cfg, sl_grpc_server **out);

/* Listens on the unix socket at path with file mode `mode`. A stale socket
 * file there is removed first; any other kind of file is an error. Returns
 * 0, or -1 with *e set. */
int sl_grpc_server_listen(sl_grpc_server *s, const char *path, unsigned mode, sl_error *e);

/* Open connections. */
size_t sl_grpc_server_connections(const sl_grpc_server *s);

/* Stops listening and removes the socket file, sends GOAWAY on every
 * connection and closes them (cutting those that do not drain within
 * SL_GRPC_SHUTDOWN_TIMEOUT_MS); calls still held by handlers are cancelled.
 * cb(s, arg) runs once every handle is closed. */
void sl_grpc_server_close(sl_grpc_server *s, void (*cb)(sl_grpc_server *s, void *arg), void *arg);
void sl_grpc_server_free(sl_grpc_server *s);

#endif
