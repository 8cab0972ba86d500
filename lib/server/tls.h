/* TLS on the streaming listener. This kernel offers no kTLS, so the
 * process that accepts terminates TLS: OpenSSL on memory BIOs, all socket
 * I/O on the libuv loop. After the handshake each TLS connection is
 * proxied, as plaintext, to one end of a socketpair whose other end is
 * served as an ordinary connection (sl_conn) and can be handed off to
 * another process like a TCP socket; the TLS state stays here. */
#ifndef SL_SERVER_TLS_H
#define SL_SERVER_TLS_H

#include <stdbool.h>
#include <uv.h>

typedef struct sl_server sl_server;
typedef struct sl_tls_conn sl_tls_conn;

/* Plaintext queued toward one side before reading from the other pauses;
 * reading resumes below half of it. One read (64 KiB) may overshoot it. */
#define SL_TLS_PROXY_HIGH_WATER (256u * 1024)
#define SL_TLS_READ_BUF (64u * 1024)
/* After both directions ended on one side, the other has this long to
 * end too before the proxy closes (as SL_CONN_LINGER_MS). */
#define SL_TLS_LINGER_MS 5000u

/* Accepts one connection from the listener and starts its handshake,
 * which must finish within the server's head_timeout_ms. */
void sl_tls_accept(sl_server *srv, uv_stream_t *listener);
/* Ends every TLS connection (shutdown). */
void sl_tls_close_all(sl_server *srv);
/* Frees the server's SSL_CTX. */
void sl_tls_ctx_free(void *ctx);

/* Internal to server.c: a TLS connection's handles are all closed. */
void sl_server_tls_gone(sl_server *srv);
/* Internal to conn.c: serves fd (one end of the socketpair) as a freshly
 * accepted connection; fd is owned from this call on. */
void sl_conn_accept_fd(sl_server *srv, int fd);

#endif
