/* Carries a server-side SPDY session over an upgraded connection: plain
 * (the session writes straight into the connection's queue) or tunnelled
 * in binary WebSocket messages (SPDY/3.1+portforward.k8s.io). */
#ifndef SL_SPDY_PIPE_H
#define SL_SPDY_PIPE_H

#include <stdbool.h>
#include "server/conn.h"
#include "spdy/spdy_session.h"
#include "ws/ws_conn.h"

typedef struct sl_spdy_pipe {
    sl_conn *c;
    sl_spdy_session *s;
    sl_ws_conn *ws; /* tunnel only */
    sl_bufq tbuf;   /* tunnel only: session output not yet in messages */
    size_t high_water;
    bool dead; /* fatal session error: flush and close */
} sl_spdy_pipe;

/* Creates the session (server role). ws: NULL for plain SPDY. Returns
 * SL_OK or SL_ERR_NOMEM. */
int sl_spdy_pipe_init(sl_spdy_pipe *p, sl_conn *c, sl_ws_conn *ws, const sl_spdy_callbacks *cb,
                      void *arg, size_t high_water);
void sl_spdy_pipe_fini(sl_spdy_pipe *p);
/* Feeds SPDY bytes from the peer, then pumps. A fatal error finishes the
 * connection after the GOAWAY went out. */
void sl_spdy_pipe_recv(sl_spdy_pipe *p, const uint8_t *data, size_t len);
/* Moves queued stream data towards the socket, within the high-water mark. */
void sl_spdy_pipe_pump(sl_spdy_pipe *p);
/* True while the socket side is above the high-water mark. */
bool sl_spdy_pipe_congested(const sl_spdy_pipe *p);

#endif
