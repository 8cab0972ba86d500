/* Client side of a port-forward session after the upgrade. I/O free:
 * socket bytes in with sl_cpf_recv(), every byte to write appended to
 * `out` (stream data once sl_cpf_flush() runs).
 *
 * SPDY (portforward.k8s.io, protocol notes §7) and the same inside binary
 * WebSocket messages (SPDY/3.1+portforward.k8s.io, §8.2): each forwarded
 * connection is an error stream (streamtype=error, port, requestid from 0;
 * half-closed by us at once, only the server writes on it) and a data
 * stream (streamtype=data, same port and requestid). Local EOF is a FIN on
 * the data stream; the server's FIN is reported as on_remote_eof. A
 * connection ends when both its streams are gone; its error text, if
 * any, ends that connection only.
 *
 * Legacy WebSocket (v4.channel.k8s.io, §8.1): the ports are those of the
 * PortForward request; the server announces port P of index i with a
 * 2-byte little-endian prefix on channels 2i (data) and 2i+1 (error),
 * stripped here. One connection per port for the whole session; no
 * half-close either way (sl_cpf_shutdown does nothing). Bytes the server
 * sends for a port before a connection is bound to it are held (see
 * sl_cpf_unbound) and delivered when one is.
 *
 * Callbacks fire from inside sl_cpf_recv, sl_cpf_eof, sl_cpf_ready and
 * sl_cpf_close (on_end only), never from sl_cpf_open; they may call any
 * function here except sl_cpf_free. */
#ifndef SL_CLIENT_CPF_H
#define SL_CLIENT_CPF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/bufq.h"
#include "sluice/client.h"

#define SL_CPF_MAX_ERROR 1024u /* bytes of one connection's error text kept */

typedef struct sl_cpf sl_cpf;
typedef struct sl_cpf_conn sl_cpf_conn;

typedef struct sl_cpf_params {
    sl_transport transport; /* SPDY, WEBSOCKET_TUNNEL or WEBSOCKET_LEGACY */
    size_t max_ws_message;  /* 0 = SL_CLIENT_MAX_WS_MESSAGE */
    uint32_t spdy_window;   /* SPDY receive window to announce; 0 = none */
} sl_cpf_params;

typedef struct sl_cpf_callbacks {
    /* Bytes from the server for the connection opened with `user`. Call
     * sl_cpf_consumed() as they leave (flow-control credit). */
    void (*on_data)(void *arg, void *user, const uint8_t *data, size_t len);
    /* The server half-closed the connection: no more on_data. */
    void (*on_remote_eof)(void *arg, void *user);
    /* The connection is over; the core forgets it. err: the server's
     * error text or a reason (NULL after a clean end). aborted: the server
     * reset it (local bytes still queued need not be delivered). */
    void (*on_conn_end)(void *arg, void *user, const char *err, bool aborted);
    /* An answer to sl_cpf_ping(). */
    void (*on_pong)(void *arg);
    /* The session is over (every connection ended first). kind 0: a clean
     * end (server close 1000, or after our own sl_cpf_close). */
    void (*on_end)(void *arg, int kind, const char *msg);
} sl_cpf_callbacks;

/* Returns NULL on ENOMEM or a bad transport. out must outlive it. */
sl_cpf *sl_cpf_new(const sl_cpf_params *p, const sl_cpf_callbacks *cb, void *arg, sl_bufq *out);
void sl_cpf_free(sl_cpf *c);

/* Opens a connection to remote port `port` for `user`. Returns SL_OK and
 * *conn, SL_ERR_INVAL (port 0), SL_ERR_CLOSED (session over or GOAWAY),
 * SL_ERR_FULL (legacy: port already used; SPDY: stream ids exhausted),
 * SL_ERR_NOMEM. Legacy: a port the server has not announced yet stays
 * pending until it does. */
int sl_cpf_open(sl_cpf *c, uint16_t port, void *user, sl_cpf_conn **conn);
/* The caller has stored *conn: callbacks for it may fire from now on
 * (legacy: bytes and error text held for its port are delivered here). */
void sl_cpf_ready(sl_cpf *c, sl_cpf_conn *k);
/* Queues bytes for the server (copied). SL_ERR_CLOSED once the
 * connection's sending side is over. */
int sl_cpf_send(sl_cpf *c, sl_cpf_conn *k, const uint8_t *data, size_t len);
/* Local EOF: half-close (SPDY FIN after the queued bytes). */
int sl_cpf_shutdown(sl_cpf *c, sl_cpf_conn *k);
/* The local side is gone: reset the connection and forget it (no
 * on_conn_end). */
void sl_cpf_abort(sl_cpf *c, sl_cpf_conn *k);
/* n bytes delivered by on_data left locally. */
void sl_cpf_consumed(sl_cpf *c, sl_cpf_conn *k, size_t n);
/* Bytes accepted by sl_cpf_send and not yet in out. */
size_t sl_cpf_pending(const sl_cpf *c, const sl_cpf_conn *k);
/* Legacy: bytes held for ports with no connection yet. */
size_t sl_cpf_unbound(const sl_cpf *c);
/* True when the server holds back per connection (SPDY flow control in
 * use), so withholding credit never stalls the other connections. */
bool sl_cpf_flow_control(const sl_cpf *c);

/* Socket bytes. Returns SL_OK, or a negative sl_err once the session
 * failed (on_end fired; flush out, then close). */
int sl_cpf_recv(sl_cpf *c, const uint8_t *data, size_t len);
/* The socket ended: every connection and then the session end. */
void sl_cpf_eof(sl_cpf *c);
/* Moves queued data into out while it is under high_water. */
int sl_cpf_flush(sl_cpf *c, size_t high_water);
int sl_cpf_ping(sl_cpf *c);
/* Ends the session from our side: every connection is reset (no
 * on_conn_end), GOAWAY / close 1000 is queued, on_end(0) fires. */
void sl_cpf_close(sl_cpf *c);
bool sl_cpf_ended(const sl_cpf *c);

#endif
