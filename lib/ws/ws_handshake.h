/* WebSocket opening handshake, server side (RFC 6455 §4.2), with the
 * Kubernetes subprotocol choice. I/O free. */
#ifndef SL_WS_HANDSHAKE_H
#define SL_WS_HANDSHAKE_H

#include "http/http_head.h"
#include "util/bufq.h"

/* True when the request asks for a WebSocket upgrade at all:
 * "Upgrade: websocket" (case-insensitive) and Connection containing "upgrade". */
int sl_ws_is_upgrade(const sl_http_request *r);

/* Validates the handshake of r (method GET, Upgrade/Connection, key of 16
 * bytes base64, Sec-WebSocket-Version 13) and chooses the subprotocol: the
 * first entry of the client's Sec-WebSocket-Protocol list (in the client's
 * order) that is in `allowed` (a NULL-terminated list whose entries may
 * include "" for "no subprotocol"; "" matches only a request with no
 * Sec-WebSocket-Protocol header).
 *
 * On success returns 0, sets *chosen to the matching entry of `allowed`, and
 * appends the 101 response to out. On failure returns the HTTP status to
 * send (400, 403, 405) and appends the complete error response to out:
 * 400 with a text body naming the problem (and "Sec-WebSocket-Version: 13"
 * for a wrong version), 405 for a method other than GET, 403 with an empty
 * body when no subprotocol matches. Returns -1 on ENOMEM. */
int sl_ws_handshake(const sl_http_request *r, const char *const *allowed, const char **chosen,
                    sl_bufq *out);

/* Computes the Sec-WebSocket-Accept value for key into out (29 bytes incl. NUL). */
void sl_ws_accept_key(const char *key, char out[29]);

#endif
