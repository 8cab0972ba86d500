/* The libsluice streaming server: one HTTP/1.1 listener that serves the
 * URLs handed out by the CRI Exec, Attach and PortForward calls, upgraded to
 * WebSocket or SPDY/3.1.
 *
 * Order of calls: sl_server_config_init(), adjust, sl_server_new() on a
 * libuv loop, optionally sl_server_set_handoff() and
 * sl_server_set_session_observer(), sl_server_start(); then for each CRI
 * call sl_server_get_exec() (and friends) returns the URL; the loop serves
 * the connections. To end: sl_server_close(), run the loop until its
 * callback, sl_server_free().
 *
 * Threading: an sl_server belongs to the thread running its loop. Every
 * function here taking an sl_server (and sl_handoff_done) must be called
 * on that thread, outside or inside the library's callbacks; none is
 * thread-safe. sl_server_config_init, sl_stream_request_copy and
 * sl_stream_request_free touch no server and are safe on any thread.
 *
 * Errors are the negative sl_err codes of sluice/error.h; each function
 * lists every code it returns. */
#ifndef SLUICE_SERVER_H
#define SLUICE_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>
#include "sluice/common.h"
#include "sluice/error.h"
#include "sluice/runtime.h"

/* Defaults of every limit; each is also a field of sl_server_config. */
#define SL_DEFAULT_ADDRESS "127.0.0.1"
#define SL_DEFAULT_PORT 10010
#define SL_DEFAULT_TOKEN_TTL_MS 60000u
#define SL_DEFAULT_MAX_PENDING_TOKENS 1000u
#define SL_DEFAULT_IDLE_TIMEOUT_MS (4ull * 3600 * 1000)
#define SL_DEFAULT_CREATION_TIMEOUT_MS 30000u
#define SL_DEFAULT_HEAD_TIMEOUT_MS 30000u
#define SL_DEFAULT_MAX_REQUEST_LINE 8192u
#define SL_DEFAULT_MAX_HEADERS 64u
#define SL_DEFAULT_MAX_HEAD_SIZE 16384u
#define SL_DEFAULT_MAX_WS_MESSAGE (32u * 1024 * 1024)
#define SL_DEFAULT_MAX_SESSIONS 4096u
#define SL_DEFAULT_OUTPUT_HIGH_WATER (256u * 1024)
/* Connections open at once, upgraded or not: beyond, a new one is answered
 * 503 and closed at once, so a flood of idle connections costs the process
 * a bounded number of fds. */
#define SL_DEFAULT_MAX_CONNECTIONS 1024u
/* TCP keepalive on accepted connections: a peer silent for idle ms is
 * probed every interval ms; count unanswered probes end the connection
 * (with unacknowledged data, the same total as TCP_USER_TIMEOUT). The
 * defaults notice a vanished peer within a minute. */
#define SL_DEFAULT_KEEPALIVE_IDLE_MS 30000u
#define SL_DEFAULT_KEEPALIVE_INTERVAL_MS 10000u
#define SL_DEFAULT_KEEPALIVE_COUNT 3u
/* A tty exec or attach waits this long for the client's first terminal
 * size before it starts (clients send it right after the streams). */
#define SL_DEFAULT_TTY_SIZE_WAIT_MS 100u

/* Listen backlog of the streaming listener (connections accepted by the
 * kernel and not yet by the loop; the kernel caps it at
 * net.core.somaxconn). */
#define SL_DEFAULT_LISTEN_BACKLOG 511u
/* SPDY sessions (exec, attach, port-forward over SPDY/3.1). Our stream
 * window: the SPDY default, 64 KiB. A larger one lets a fast client send
 * more before it waits for credit; it is never smaller, because a peer that
 * uses flow control without SETTINGS assumes 64 KiB. It is announced in the
 * SETTINGS we answer a peer's INITIAL_WINDOW_SIZE with. */
#define SL_DEFAULT_SPDY_INITIAL_WINDOW 65536u
#define SL_SPDY_MIN_INITIAL_WINDOW 65536u
#define SL_SPDY_MAX_INITIAL_WINDOW 0x7FFFFFFFu /* 2^31-1, the protocol's largest */
/* Streams the client may have open at once; more are refused
 * (RST_STREAM REFUSED_STREAM). */
#define SL_DEFAULT_SPDY_MAX_STREAMS 1024u
/* Bytes of a decompressed header block, and name/value pairs in one; a
 * larger block ends the session (GOAWAY), more pairs reset the stream. */
#define SL_DEFAULT_SPDY_MAX_HEADER_BLOCK 65536u
#define SL_DEFAULT_SPDY_MAX_HEADER_PAIRS 64u
/* Payload bytes of one control frame (SYN_STREAM, HEADERS with their
 * compressed header block) and of one DATA frame; larger ends the session.
 * The data default is spdystream's maximum, 2^24-1. */
#define SL_DEFAULT_SPDY_MAX_CONTROL_FRAME 65536u
#define SL_DEFAULT_SPDY_MAX_DATA_FRAME 0xFFFFFFu
#define SL_SPDY_MAX_FRAME 0xFFFFFFu /* the 24-bit length field */

/* The server's configuration. struct_size first (the size rule of
 * sluice/common.h): sl_server_config_init() sets it and every default; a
 * program then changes the fields it wants. The library reads only the
 * fields inside struct_size and uses the defaults for the rest, so a
 * program built against an older header keeps working when fields are
 * added here. */
typedef struct sl_server_config {
    size_t struct_size;             /* sizeof(sl_server_config) of the caller */
    const char *address;            /* listen address, IPv4 or IPv6 literal */
    uint16_t port;                  /* 0 = any free port */
    const char *base_path;          /* URL path prefix, default "/" */
    const char *advertise_host;     /* host:port in URLs; NULL = the listener's */
    uint32_t token_ttl_ms;          /* a token is valid this long */
    uint32_t max_pending_tokens;    /* un-consumed tokens at most */
    uint64_t idle_timeout_ms;       /* no application data for this long ends a session */
    uint32_t creation_timeout_ms;   /* SPDY streams must all exist within this */
    uint32_t head_timeout_ms;       /* the request head must arrive within this */
    uint32_t max_request_line;      /* bytes */
    uint32_t max_headers;           /* header fields */
    uint32_t max_head_size;         /* bytes, request line included */
    uint32_t max_ws_message;        /* bytes of one reassembled WebSocket message */
    uint32_t max_sessions;          /* concurrent connections */
    uint32_t output_high_water;     /* queued output bytes before reading pauses */
    uint32_t keepalive_idle_ms;     /* TCP keepalive after this much silence; 0 = off */
    uint32_t keepalive_interval_ms; /* between unanswered probes (>= 1000 in effect) */
    uint32_t keepalive_count;       /* unanswered probes that end the connection */
    uint32_t max_connections;       /* accepted connections open at once; beyond, 503 */
    uint32_t tty_size_wait_ms;      /* tty: wait for the first size; 0 = start at once */
    /* added after 0.2.0; 0 in any of these = its default */
    uint32_t listen_backlog;         /* listen(2) backlog of the listener */
    uint32_t spdy_initial_window;    /* our SPDY stream window, 65536..2^31-1 */
    uint32_t spdy_max_streams;       /* SPDY streams the client has open at once */
    uint32_t spdy_max_header_block;  /* bytes of a decompressed SPDY header block */
    uint32_t spdy_max_header_pairs;  /* name/value pairs in one SPDY header block */
    uint32_t spdy_max_control_frame; /* payload bytes of a SPDY control frame */
    uint32_t spdy_max_data_frame;    /* payload bytes of a SPDY DATA frame, <= 2^24-1 */
} sl_server_config;

typedef struct sl_server sl_server;

/* The kind of a parked request, and of the URL that names it. */
typedef enum sl_stream_kind {
    SL_STREAM_EXEC = 1,
    SL_STREAM_ATTACH = 2,
    SL_STREAM_PORTFORWARD = 3,
} sl_stream_kind;

/* A parked exec, attach or port-forward request: what a token stands for;
 * a tagged union of the requests of sluice/runtime.h.
 *
 * Sizes: struct_size is the caller's sizeof(sl_stream_request)
 * (SL_STRUCT_SIZE); the member that kind names carries its own struct_size
 * (SL_STRUCT_SIZE of its type) and is read by that, as when it is passed
 * alone, so each request type grows on its own. The member must fit:
 * offsetof(sl_stream_request, u) + its struct_size <= struct_size, else
 * SL_ERR_INVAL. A request growing grows the union at the end (never with
 * a field aligned more strictly than a pointer), so kind and u never move
 * and sl_stream_request itself never gains a field: what is new about a
 * request goes into its member.
 *
 *   sl_stream_request r = {
 *       .struct_size = SL_STRUCT_SIZE(sl_stream_request),
 *       .kind = SL_STREAM_EXEC,
 *       .u.exec = {.struct_size = SL_STRUCT_SIZE(sl_exec_request), ...},
 *   };
 *
 * One the library hands out (the hand-off function, a copy) has both sizes
 * set to the library's: test SL_HAS_FIELD(&r->u.exec, sl_exec_request, f)
 * before reading a member field added after 0.3.0. A copy made by
 * sl_stream_request_copy() owns every string and array. */
typedef struct sl_stream_request {
    size_t struct_size; /* SL_STRUCT_SIZE(sl_stream_request) */
    sl_stream_kind kind;
    union {
        sl_exec_request exec;      /* SL_STREAM_EXEC */
        sl_attach_request attach;  /* SL_STREAM_ATTACH */
        sl_portforward_request pf; /* SL_STREAM_PORTFORWARD */
    } u;
} sl_stream_request;

/* Makes *out a deep copy of r (NULL strings become ""), owned by the
 * caller, who frees it with sl_stream_request_free(); its sizes are this
 * library's (so it may be larger than the caller's struct). r is only
 * read, at its sizes (the size rule above); *out is set only on SL_OK. Any
 * thread.
 * Returns:
 *   SL_OK;
 *   SL_ERR_INVAL: r or out NULL, an unknown kind, a member struct_size
 *     below 0.3.0's, or an r->struct_size too small to hold the member
 *     (0 included);
 *   SL_ERR_UNSUPPORTED: r's member, from a newer header, sets a field
 *     this library does not know;
 *   SL_ERR_NOMEM. */
SL_EXPORT int sl_stream_request_copy(const sl_stream_request *r, sl_stream_request **out);
/* Frees a copy made by sl_stream_request_copy() and everything it owns
 * (never a struct the caller built); NULL is fine. Any thread. */
SL_EXPORT void sl_stream_request_free(sl_stream_request *r);

/* Fills c: struct_size and every default above (address 127.0.0.1, port
 * 10010, base path "/", no advertise_host). The default strings are
 * static. Cannot fail; any thread. */
SL_EXPORT void sl_server_config_init(sl_server_config *c);

/* Creates a server on loop (not started: nothing is bound yet). cfg, rt
 * and rt->ops are copied (strings too): none need outlive the call;
 * rt->data is the caller's and must outlive the server. On the loop's
 * thread; *out is set only on SL_OK.
 * Returns:
 *   SL_OK;
 *   SL_ERR_INVAL: cfg, rt or rt->ops NULL, a struct_size below 0.2.0's,
 *     no address, max_pending_tokens, max_headers or max_connections 0,
 *     max_head_size < 64, a required op (exec_start, attach_start,
 *     portforward_connect) NULL, spdy_initial_window outside
 *     65536..2^31-1 or a SPDY frame limit above 2^24-1 (0 = default);
 *   SL_ERR_UNSUPPORTED: cfg or ops from a newer header sets a field this
 *     library does not know (sluice/common.h);
 *   SL_ERR_NOMEM. */
SL_EXPORT int sl_server_new(uv_loop_t *loop, const sl_server_config *cfg, const sl_runtime *rt,
                            sl_server **out);

/* Makes the listener speak TLS (1.2 at least) instead of plain HTTP; the
 * URLs then start with https://. Call at most once, before
 * sl_server_start(), on the thread that owns the loop.
 *
 * cert_file: PEM certificate, optionally followed by its chain; key_file:
 * its PEM private key (unencrypted); client_ca_file: NULL or "" = no client
 * certificate is asked for; else PEM CA certificates, and a client must
 * present a certificate signed by one of them or the handshake fails. The
 * files are read during the call (not kept open, not re-read: a new
 * certificate takes a new server); the paths are not kept.
 *
 * Returns SL_OK; SL_ERR_NOMEM; or SL_ERR_INVAL with *errmsg set to static
 * text starting with the parameter at fault ("cert_file: ", "key_file: ",
 * "client_ca_file: ") when a file cannot be read or parsed, the key does
 * not match the certificate or one of cert_file/key_file is missing, or
 * naming the misuse (called twice or after sl_server_start). On failure
 * the server is unchanged (still plain HTTP). *errmsg is NULL on success.
 *
 * TLS is terminated in this process (the kernel has no kTLS to hand the
 * session state to another): a connection passed to the hand-off function
 * is then one end of a socketpair carrying plaintext, which this server
 * feeds from the TLS connection as long as it lives; sl_server_close()
 * ends those sessions too. */
SL_EXPORT int sl_server_set_tls(sl_server *s, const char *cert_file, const char *key_file,
                                const char *client_ca_file, const char **errmsg);

/* Binds and listens on cfg.address and cfg.port, then builds the base URL.
 * Call once, after sl_server_new(), on the loop's thread.
 * Returns:
 *   SL_OK;
 *   SL_ERR_SYS: bind or listen failed; errno is libuv's code negated
 *     (EADDRINUSE, EACCES, EADDRNOTAVAIL, ...);
 *   SL_ERR_INVAL: address is not an IPv4 or IPv6 literal, or advertise_host
 *     or base_path cannot form a URL;
 *   SL_ERR_NOMEM;
 *   SL_ERR_STATE: called before, and that call got as far as bind (it
 *     succeeded, or bind or listen failed).
 * On every error sl_server_errmsg() says why in one line, libuv's text
 * included ("bind 127.0.0.1 port 10010: address already in use").
 * After a failed start the listener may be open: end the server as any
 * other, sl_server_close() (the loop must run until the callback), then
 * sl_server_free(). */
SL_EXPORT int sl_server_start(sl_server *s);

/* Why the last sl_server_start() failed; "" after a success or before any
 * start. Owned by s, valid until the next start or sl_server_free(). */
SL_EXPORT const char *sl_server_errmsg(const sl_server *s);

/* "http://host:port" + base path, owned by s, valid until
 * sl_server_free(); NULL before a successful sl_server_start(). */
SL_EXPORT const char *sl_server_base_url(const sl_server *s);
/* The bound port once started (useful with port 0); before, the
 * configured one. */
SL_EXPORT uint16_t sl_server_port(const sl_server *s);

/* Validate req (as the kubelet library does), park a deep copy of it under
 * a new single-use token (valid token_ttl_ms) and return the absolute URL.
 * req is only read, at its struct_size (sluice/runtime.h: the caller sets
 * it with SL_STRUCT_SIZE); the caller keeps it. url and errmsg must not be
 * NULL. Only after a successful sl_server_start(); loop thread.
 * Returns:
 *   SL_OK: *url is the URL (malloc'd, the caller frees it), *errmsg NULL;
 *   SL_ERR_INVAL: the request is refused; *errmsg (static text, the
 *     kubelet's words, e.g. "missing required container_id", or
 *     "struct_size below this library's first version" for req NULL or a
 *     struct_size below 0.3.0's) says why;
 *   SL_ERR_UNSUPPORTED: req, from a newer header, sets a field this
 *     library does not know; *errmsg says so;
 *   SL_ERR_FULL: max_pending_tokens unconsumed tokens exist;
 *   SL_ERR_SYS: getrandom() failed for the token (errno);
 *   SL_ERR_STATE: the server was not started;
 *   SL_ERR_NOMEM.
 * On every error *url is NULL and nothing is parked. */
SL_EXPORT int sl_server_get_exec(sl_server *s, const sl_exec_request *req, char **url,
                                 const char **errmsg);
SL_EXPORT int sl_server_get_attach(sl_server *s, const sl_attach_request *req, char **url,
                                   const char **errmsg);
SL_EXPORT int sl_server_get_portforward(sl_server *s, const sl_portforward_request *req, char **url,
                                        const char **errmsg);

/* ---- hand-off: serving a session in another process ----
 *
 * With a hand-off function set, a connection whose request head was read
 * and whose token was consumed is not served here: fn gets a duplicate of
 * its socket, every byte read from it so far and the request. The server
 * reads nothing more from the connection and keeps its own copy of the
 * socket, writing nothing, until sl_handoff_done() says what became of it.
 * Connections whose route, method or token is wrong are answered here as
 * without a hand-off. */
typedef struct sl_handoff sl_handoff;

/* Runs on the server's loop thread. fd: a duplicate of the connection's
 * socket (non-blocking, close-on-exec), owned by fn from now on whatever
 * happens. head, len: every byte read from the connection (the request
 * head and whatever followed it), valid during the call. req: valid during
 * the call (sl_stream_request_copy() to keep it), its sizes the library's
 * (see sl_stream_request). fn (now or later, on the
 * loop thread) calls sl_handoff_done(h, ...) exactly once. */
typedef void (*sl_server_handoff_fn)(void *arg, sl_handoff *h, int fd, const uint8_t *head,
                                     size_t len, const sl_stream_request *req);

/* Sets (or, with fn NULL, clears) the hand-off for connections whose head
 * is complete from now on; arg is the caller's (passed to fn). Loop
 * thread, any time before sl_server_close(). Cannot fail. */
SL_EXPORT void sl_server_set_handoff(sl_server *s, sl_server_handoff_fn fn, void *arg);

/* Outcomes of a hand-off. Any other outcome must be an HTTP status
 * 500..599: the receiver did not take the connection and wrote nothing on
 * it; the server answers with that status and `message` (copied; NULL = a
 * generic text) and closes. */
#define SL_HANDOFF_TAKEN 0 /* the receiver serves it: the server closes its copy */
#define SL_HANDOFF_LOCAL 1 /* serve it here, as if no hand-off were set */

/* Ends a hand-off: call exactly once per h, on the loop thread; h is
 * freed by it. Valid until called, even after the server was closed (then
 * the connection is already gone and only h is freed), but not after
 * sl_server_free(). outcome: SL_HANDOFF_TAKEN, SL_HANDOFF_LOCAL or a
 * status 500..599 (any other value answers 500). message is copied. */
SL_EXPORT void sl_handoff_done(sl_handoff *h, int outcome, const char *message);

/* Serves a connection another process accepted and whose token it
 * consumed: fd is a connected stream socket (owned by the server from this
 * call on, on every return), head/len every byte read from it so far (a
 * complete request head and what followed; copied), req what its token
 * stood for (copied, read at its sizes as sl_stream_request_copy() reads
 * it). limits, when not NULL, replace the server's session
 * limits for this connection (the SL_LIMIT_SESSION fields of
 * sluice/limits.h: idle_timeout_ms, creation_timeout_ms, max_request_line,
 * max_headers, max_head_size, max_ws_message, output_high_water,
 * tty_size_wait_ms and the spdy_* fields; the other fields are ignored). The
 * server need not listen. Returns SL_OK once the server owns the
 * conversation with the client: it upgrades the connection, or answers
 * with an HTTP error (503 when max_sessions sessions are live, 400 when the head does not parse).
 * On any other return nothing was written and fd is closed (except
 * fd < 0):
 *   SL_ERR_INVAL: a bad fd; head NULL with len > 0; req NULL, of an
 *     unknown kind or refused by the size rule (as sl_stream_request_copy);
 *     a limits struct_size below 0.2.0's or a spdy_* limit out of range;
 *   SL_ERR_UNSUPPORTED: req's member or limits, from a newer header, sets
 *     a field this library does not know;
 *   SL_ERR_NOMEM;
 *   SL_ERR_CLOSED: the server is closing.
 * Loop thread. */
SL_EXPORT int sl_server_adopt(sl_server *s, int fd, const uint8_t *head, size_t len,
                              const sl_stream_request *req, const sl_server_config *limits);

/* ---- session observer: what each session was, for logs and metrics ---- */

/* A session (an upgraded connection). Strings are valid during the call.
 * Handed out by the library: struct_size is set by it (SL_HAS_FIELD). */
typedef struct sl_session_info {
    size_t struct_size;
    sl_stream_kind kind;
    const char *transport; /* "spdy", "websocket", "websocket-tunnel" (SPDY port-forward
                              inside WebSocket) */
    const char *protocol;  /* the negotiated subprotocol, e.g. "v5.channel.k8s.io"; "" none */
    const char *target;    /* the container id (exec, attach) or pod sandbox id */
    uint64_t bytes_to_client, bytes_from_client; /* on the wire after the request head */
    uint64_t duration_ms;                        /* since the upgrade */
    /* At the end: "exit" (the session ended its own way: the process ended
     * or the port-forward was done), "client_closed" (the peer closed or
     * reset the connection), "idle_timeout" (idle-timeout-ms passed),
     * "error" (a write failed, a protocol error), "shutdown" (the server
     * closed); NULL at the start. */
    const char *end_reason;
} sl_session_info;

/* Called on the loop thread when a session starts (end_reason NULL) and
 * when it ends, once each. info is valid during the call only. fn must not
 * call sl_server_close() or sl_server_free(). */
typedef void (*sl_server_session_fn)(void *arg, const sl_session_info *info);

/* Sets (or, with fn NULL, clears) the observer for sessions upgraded from
 * now on; arg is the caller's. Loop thread. Cannot fail. */
SL_EXPORT void sl_server_set_session_observer(sl_server *s, sl_server_session_fn fn, void *arg);

/* Tokens issued and neither consumed nor expired. The counters below are
 * read on the loop thread and cannot fail. */
SL_EXPORT size_t sl_server_pending_tokens(const sl_server *s);

/* Number of live sessions (upgraded connections). */
SL_EXPORT size_t sl_server_session_count(const sl_server *s);
/* Connections open (sessions, heads being read, hand-offs in flight), and
 * how many were answered 503 at accept because max_connections were open. */
SL_EXPORT size_t sl_server_connection_count(const sl_server *s);
SL_EXPORT uint64_t sl_server_refused_count(const sl_server *s);

/* Stops listening, ends every session (ops->cancel for their processes,
 * ops->release for each) and every hand-off, then calls cb(s, arg) once
 * all handles are closed: later, from the loop, or from inside this call
 * when nothing was open. cb may be NULL (then run the loop until it has
 * nothing left of s). Call once, on the loop thread, also after a failed
 * or no sl_server_start(); not from inside the server's callbacks. After
 * it, only sl_server_free() and pending sl_handoff_done() calls are valid
 * (the get and adopt calls return errors). */
SL_EXPORT void sl_server_close(sl_server *s, void (*cb)(sl_server *s, void *arg), void *arg);
/* Frees s: after close's callback, or right after sl_server_new() when s
 * was neither started nor given a connection. NULL is fine. The runtime's
 * data and the loop are the caller's and are not touched. */
SL_EXPORT void sl_server_free(sl_server *s);

#endif
