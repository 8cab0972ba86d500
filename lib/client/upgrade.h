/* Client side of the upgrade (protocol notes §3, §6.1, §6.4, §8.2): URL
 * parsing, the request head, and the check of the server's answer. I/O
 * free. */
#ifndef SL_CLIENT_UPGRADE_H
#define SL_CLIENT_UPGRADE_H

#include <stddef.h>
#include <stdint.h>

#include "http/http_resp.h"
#include "util/bufq.h"
#include "sluice/client.h"

#define SL_URL_MAX_HOST 255
#define SL_URL_MAX_TARGET 8192 /* path and query */
#define SL_UPGRADE_MAX_OFFERS 5

typedef struct sl_client_url {
    char host[SL_URL_MAX_HOST + 1]; /* without brackets for IPv6 */
    uint16_t port;
    char *target; /* "/path?query", owned */
    int ipv6;     /* host is an IPv6 literal */
} sl_client_url;

/* Parses http://host[:port]/path[?query] (ws:// too). Returns SL_OK,
 * SL_ERR_UNSUPPORTED (https/wss: no TLS), SL_ERR_INVAL (malformed; *why
 * says what), SL_ERR_NOMEM. */
int sl_client_url_parse(sl_client_url *u, const char *url, const char **why);
void sl_client_url_fini(sl_client_url *u);

/* What is being asked for. */
typedef enum sl_upgrade_kind {
    SL_UPGRADE_RC = 0, /* exec/attach */
    SL_UPGRADE_PF = 1, /* port-forward */
} sl_upgrade_kind;

typedef struct sl_upgrade {
    sl_transport transport;
    sl_upgrade_kind kind;
    const char *offers[SL_UPGRADE_MAX_OFFERS + 1]; /* NULL-terminated, preference order */
    char key[25];                                  /* Sec-WebSocket-Key (WebSocket) */
    char accept[29]; /* the Sec-WebSocket-Accept it must come back with */
} sl_upgrade;

/* Prepares u: the protocols to offer for (transport, kind) and, for
 * WebSocket, a random key. Returns SL_OK, SL_ERR_INVAL (combination not
 * supported: WEBSOCKET for port-forward, TUNNEL/LEGACY for exec) or
 * SL_ERR_SYS (no randomness). */
int sl_upgrade_init(sl_upgrade *u, sl_transport transport, sl_upgrade_kind kind);

/* Appends the request head to out. Headers must have been checked with
 * sl_upgrade_headers_ok(). Returns SL_OK or SL_ERR_NOMEM. */
int sl_upgrade_write_request(const sl_upgrade *u, const sl_client_url *url,
                             const sl_client_header *h, size_t n, sl_bufq *out);
/* True when every header name is a token and no value has CR, LF or NUL. */
int sl_upgrade_headers_ok(const sl_client_header *h, size_t n);
/* Copies n headers (names and values) into a new array *out. *nout
 * counts the entries sl_upgrade_headers_free() must free, also on
 * failure. Returns SL_OK or SL_ERR_NOMEM. */
int sl_upgrade_headers_dup(const sl_client_header *h, size_t n, sl_client_header **out,
                           size_t *nout);
/* Frees what sl_upgrade_headers_dup() made (h may be NULL). */
void sl_upgrade_headers_free(sl_client_header *h, size_t n);

/* Checks a complete response. On success returns 0 and sets *chosen to
 * the negotiated protocol (an entry of u->offers). Otherwise returns -1
 * and writes a one-line message to msg (always NUL-terminated): for a
 * non-101 the status, the server's text (metav1.Status message, or the
 * body's first line) and, when the server lists them, the protocols it
 * accepts; for a 101 what is wrong with it. */
int sl_upgrade_check(const sl_upgrade *u, const sl_http_response *r, const char **chosen, char *msg,
                     size_t cap);

/* Version of a remote-command protocol name: 1..5. */
int sl_upgrade_rc_version(const char *proto);

#endif
