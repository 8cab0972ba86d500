/* SPDY/3.1 upgrade negotiation (protocol notes §3): X-Stream-Protocol-
 * Version values in the client's order, first one we support wins. */
#ifndef SL_SPDY_UPGRADE_H
#define SL_SPDY_UPGRADE_H

#include "http/http_head.h"
#include "util/bufq.h"

/* Validates the upgrade headers of r and picks the protocol. On success
 * returns 0, sets *chosen (an entry of `supported`, NULL-terminated) and
 * appends the 101 response to out. Otherwise appends the error response
 * and returns its status: 400 without Connection/Upgrade headers or without
 * any X-Stream-Protocol-Version, 403 with one
 * X-Accepted-Stream-Protocol-Versions header per supported protocol when
 * nothing matches. Returns -1 on ENOMEM. */
int sl_spdy_upgrade(const sl_http_request *r, const char *const *supported, const char **chosen,
                    sl_bufq *out);

#endif
