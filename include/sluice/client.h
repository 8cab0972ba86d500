/* The libsluice streaming client: exec, attach and port-forward sessions
 * against a streaming URL (the answer of a CRI Exec, Attach or
 * PortForward call), over SPDY/3.1 or WebSocket.
 *
 * Everything runs on the caller's libuv loop; callbacks fire on the loop
 * thread, never from inside the function that created the handle. Handles
 * are opaque. Local file descriptors are pumped with back-pressure: a slow
 * local consumer holds back only its own stream where the peer uses flow
 * control, and the connection otherwise (see the limits below).
 *
 * Writes to a closed pipe raise SIGPIPE: a program using this API should
 * ignore SIGPIPE (sockets are written with MSG_NOSIGNAL). Local fds are
 * switched to non-blocking mode while in use and restored when the handle
 * is freed; regular files and /dev/null are read and written directly.
 * Only http:// (and ws://) URLs: no TLS.
 *
 * Threading: a handle belongs to the thread running its loop; every call
 * taking a handle must be made there (from a callback or not). Only
 * sl_client_err_kind_str and the _opts_init functions are safe on any
 * thread. Order: _opts_init, adjust, _new, then the loop runs the session;
 * _free ends it at any time (also from inside a callback), and is the
 * only way to release a handle: call it once per successful _new. */
#ifndef SLUICE_CLIENT_H
#define SLUICE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>
#include "sluice/common.h"
#include "sluice/error.h"

/* Defaults of the limits (each is also an options field, 0 = default). */
#define SL_CLIENT_DEFAULT_TIMEOUT_MS 30000u                /* connect and upgrade answer */
#define SL_CLIENT_DEFAULT_OUTPUT_HIGH_WATER (256u * 1024)  /* per local fd write queue */
#define SL_CLIENT_DEFAULT_MAX_BUFFERED (16u * 1024 * 1024) /* see sl_client_pf_opts */
#define SL_CLIENT_PING_INTERVAL_MS 5000u                   /* SPDY PING / WebSocket ping */
#define SL_CLIENT_PING_TIMEOUT_MS 61000u                   /* no pong this long: connection lost */
#define SL_CLIENT_MAX_STATUS (64u * 1024)                  /* status bytes kept (error stream) */
#define SL_CLIENT_MAX_WS_MESSAGE (32u * 1024 * 1024)       /* one received WebSocket message */
#define SL_CLIENT_MAX_HEADERS 32u                          /* caller's extra request headers */
/* A good SPDY receive window to announce (the spdy_window options). */
#define SL_CLIENT_SPDY_WINDOW (256u * 1024)

typedef enum sl_transport {
    SL_TRANSPORT_SPDY = 0,      /* exec/attach: v4..v1.channel.k8s.io; pf: portforward.k8s.io */
    SL_TRANSPORT_WEBSOCKET = 1, /* exec/attach: v5.channel.k8s.io, then v4.channel.k8s.io */
    SL_TRANSPORT_WEBSOCKET_TUNNEL = 2, /* pf: SPDY inside WebSocket, SPDY/3.1+portforward.k8s.io */
    SL_TRANSPORT_WEBSOCKET_LEGACY = 3, /* pf: v4.channel.k8s.io channels 2i / 2i+1 */
} sl_transport;

typedef enum sl_client_err_kind {
    SL_CLIENT_ERR_CONNECT = 1, /* bad URL, name resolution, TCP connect */
    /* The server did not upgrade: any answer but 101, or a 101 with the
     * wrong headers or a subprotocol we did not offer. http_status is the
     * status (0 for a bad 101). Another transport may work: for a 400 or
     * 403 to a WebSocket request, a caller may retry over SPDY with a new
     * URL (the token of this one is used up). */
    SL_CLIENT_ERR_UPGRADE = 2,
    SL_CLIENT_ERR_PROTOCOL = 3, /* the server broke the protocol after the upgrade */
    SL_CLIENT_ERR_LOST = 4,     /* the connection ended before the session did */
    SL_CLIENT_ERR_REMOTE = 5,   /* the server reported a failure that is not an exit code */
    SL_CLIENT_ERR_LOCAL = 6,    /* a local fd failed, or out of memory */
    SL_CLIENT_ERR_TIMEOUT = 7,  /* no answer in time (connect, upgrade, pings) */
} sl_client_err_kind;

/* Handed out by the library (valid during the callback); struct_size is
 * set by the library (SL_HAS_FIELD, sluice/common.h). */
typedef struct sl_client_error {
    size_t struct_size;
    sl_client_err_kind kind;
    int http_status;     /* SL_CLIENT_ERR_UPGRADE: the answer's status, else 0 */
    const char *message; /* one line, valid during the callback */
} sl_client_error;

/* An extra request header (e.g. Authorization). No CR or LF. */
typedef struct sl_client_header {
    const char *name;
    const char *value;
} sl_client_header;

/* ---- exec / attach ----------------------------------------------------- */

/* struct_size first (sluice/common.h): sl_client_exec_opts_init() sets it
 * and the defaults (no fd, 0 = default limits). */
typedef struct sl_client_exec_opts {
    size_t struct_size;     /* sizeof(sl_client_exec_opts) of the caller */
    const char *url;        /* http://host:port/exec/TOKEN or /attach/TOKEN */
    sl_transport transport; /* SL_TRANSPORT_SPDY or SL_TRANSPORT_WEBSOCKET */
    bool tty;               /* the request was made with tty: no stderr stream */
    /* Local ends; -1 = channel not requested. They must match the CRI
     * request the URL came from (the server waits for exactly those
     * streams). Not closed by the library. stdin EOF is sent on: WebSocket
     * v5 as CLOSE, SPDY as FIN; WebSocket v4 cannot signal it (protocol
     * notes §6.2): the session then ends only with the process. */
    int stdin_fd, stdout_fd, stderr_fd;
    uint16_t width, height; /* initial terminal size (tty); 0 = none sent */
    const sl_client_header *headers;
    size_t nheaders;
    uint32_t timeout_ms;        /* connect + upgrade answer */
    uint32_t output_high_water; /* per output fd: queued bytes before reading pauses */
    /* SPDY: the receive window to announce per stream (SETTINGS
     * INITIAL_WINDOW_SIZE) so that a server enforcing it holds back only a
     * stream whose local consumer is slow, and enforces its own windows on
     * us (spdystream ignores both); 0 = announce nothing. */
    uint32_t spdy_window;
} sl_client_exec_opts;

typedef struct sl_client_exec sl_client_exec;

/* struct_size first: `.struct_size = SL_STRUCT_SIZE(sl_client_exec_cb)`;
 * a callback past it is taken as NULL. */
typedef struct sl_client_exec_cb {
    size_t struct_size;
    /* The upgrade succeeded with this subprotocol. May be NULL. */
    void (*on_upgraded)(void *arg, const char *protocol);
    /* The remote command ended with exit_code (0..255); every output byte
     * was written to its fd first. message: the status text for a non-zero
     * code (NULL for 0). */
    void (*on_exit)(void *arg, int exit_code, const char *message);
    /* The session failed. Exactly one of on_exit / on_error fires. */
    void (*on_error)(void *arg, const sl_client_error *err);
} sl_client_exec_cb;

/* Sets o->struct_size and every default: no fd (-1), no header, 0 (the
 * default) for each limit, SPDY. Never fails. */
SL_EXPORT void sl_client_exec_opts_init(sl_client_exec_opts *o);

/* Starts connecting (nothing happens before the loop runs; no callback
 * fires from inside this call). o, its strings and headers, and cb are
 * copied: none need outlive the call. The fds stay the caller's (never
 * closed by the library) and must stay open until the handle is freed.
 * arg is the caller's, passed to every callback.
 * Returns:
 *   SL_OK: *out is the handle;
 *   SL_ERR_INVAL: o or cb NULL or with a struct_size below 0.2.0's, a bad
 *     transport, no fd at all, stderr_fd with tty, a header with CR or
 *     LF, more than SL_CLIENT_MAX_HEADERS headers;
 *   SL_ERR_UNSUPPORTED: o or cb from a newer header sets a field this
 *     library does not know;
 *   SL_ERR_NOMEM.
 * On an error *out is untouched and nothing needs freeing. A bad URL,
 * refused connection or failed upgrade is reported later through
 * on_error (SL_CLIENT_ERR_CONNECT, _UPGRADE). */
SL_EXPORT int sl_client_exec_new(uv_loop_t *loop, const sl_client_exec_opts *o,
                                 const sl_client_exec_cb *cb, void *arg, sl_client_exec **out);
/* Sends a terminal size (tty sessions of v3+; queued until upgraded).
 * Returns SL_OK, SL_ERR_STATE (no tty, or a protocol without resize),
 * SL_ERR_CLOSED (the session ended), SL_ERR_NOMEM. */
SL_EXPORT int sl_client_exec_resize(sl_client_exec *h, uint16_t width, uint16_t height);
/* Stops everything (no callback follows, the connection is cut) and frees
 * the handle once its libuv handles are closed (the loop must run; h must
 * not be used after this call). Safe from any callback of this handle;
 * NULL is not accepted. */
SL_EXPORT void sl_client_exec_free(sl_client_exec *h);

/* ---- port-forward ------------------------------------------------------- */

/* struct_size first: sl_client_pf_opts_init() sets it and the defaults. */
typedef struct sl_client_pf_opts {
    size_t struct_size;     /* sizeof(sl_client_pf_opts) of the caller */
    const char *url;        /* http://host:port/portforward/TOKEN */
    sl_transport transport; /* SPDY, WEBSOCKET_TUNNEL or WEBSOCKET_LEGACY */
    const sl_client_header *headers;
    size_t nheaders;
    uint32_t timeout_ms;        /* connect + upgrade answer */
    uint32_t output_high_water; /* per connection: local write queue before credit stops */
    /* Per connection: bytes held for a slow local consumer when the server
     * cannot be held back per stream (no flow control, or WebSocket
     * channels); above it reading the connection pauses, which holds every
     * forwarded connection. */
    uint32_t max_buffered;
    uint32_t spdy_window; /* SPDY and tunnel: as in sl_client_exec_opts */
} sl_client_pf_opts;

typedef struct sl_client_pf sl_client_pf;

/* struct_size first, as sl_client_exec_cb. */
typedef struct sl_client_pf_cb {
    size_t struct_size;
    void (*on_upgraded)(void *arg, const char *protocol); /* may be NULL */
    /* Forwarded connection conn_id ended; its local fd is closed. err is
     * NULL after a clean end, else why (the server's error-stream text, or
     * a local reason). Other connections go on. May be NULL. */
    void (*on_conn_end)(void *arg, uint64_t conn_id, const char *err);
    /* The session ended: err NULL after sl_client_pf_close() completed or
     * when the server closed normally, else why. No callback follows. */
    void (*on_end)(void *arg, const sl_client_error *err);
} sl_client_pf_cb;

/* Sets o->struct_size and every default (no header, SPDY, 0 limits). */
SL_EXPORT void sl_client_pf_opts_init(sl_client_pf_opts *o);

/* Starts connecting. Same contract as sl_client_exec_new (SL_ERR_INVAL:
 * a transport other than SPDY, WEBSOCKET_TUNNEL or WEBSOCKET_LEGACY, or
 * a bad header). */
SL_EXPORT int sl_client_pf_new(uv_loop_t *loop, const sl_client_pf_opts *o,
                               const sl_client_pf_cb *cb, void *arg, sl_client_pf **out);
/* Forwards local_fd (a connected stream socket or pipe; ownership passes
 * to the library, even on error) to remote_port: one connection per call,
 * any number at once (legacy WebSocket: one per port of the PortForward
 * request, for the whole session). Local EOF becomes a half-close (SPDY
 * FIN; legacy: nothing can be sent, the connection stays open for the
 * server's bytes); the server's half-close becomes shutdown(SHUT_WR).
 * Returns SL_OK and *conn_id (may be NULL; ids count from 0),
 * SL_ERR_INVAL (port 0, bad fd), SL_ERR_CLOSED (session over), SL_ERR_FULL
 * (legacy: port already used), SL_ERR_NOMEM. */
SL_EXPORT int sl_client_pf_forward(sl_client_pf *h, uint16_t remote_port, int local_fd,
                                   uint64_t *conn_id);
/* Number of forwarded connections not yet ended. Cannot fail. */
SL_EXPORT size_t sl_client_pf_active(const sl_client_pf *h);
/* Ends the session gracefully: open connections are cut (reset; their
 * on_conn_end fires), the server is told (GOAWAY / close 1000), then
 * on_end(NULL), later from the loop. A second call, or one after on_end,
 * does nothing. The handle still needs sl_client_pf_free(). */
SL_EXPORT void sl_client_pf_close(sl_client_pf *h);
/* Stops everything at once (no callback follows) and frees the handle
 * once its libuv handles are closed. Safe from any callback. */
SL_EXPORT void sl_client_pf_free(sl_client_pf *h);

/* Text for an error kind ("upgrade refused", ...): static, never NULL
 * (an unknown kind has a text too). Any thread. */
SL_EXPORT const char *sl_client_err_kind_str(sl_client_err_kind k);

#endif
