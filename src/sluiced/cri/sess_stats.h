/* Streaming sessions as sluiced sees them: the pod monitors serve them and
 * report each start and end (session_started, session_ended events; the
 * live ones in their hello reply), and sluiced serves those no monitor
 * takes (libsluice's session observer). Counted here for /metrics; labels
 * are bounded (operation, transport, reason: no ids). */
#ifndef SL_SESS_STATS_H
#define SL_SESS_STATS_H

#include <jansson.h>
#include <stdint.h>

#include "sluice/server.h"

#define SL_SESS_OPS 3        /* exec, attach, portforward */
#define SL_SESS_TRANSPORTS 3 /* spdy, websocket, websocket-tunnel */
#define SL_SESS_REASONS 6    /* exit, client_closed, idle_timeout, error, shutdown, other */

extern const char *const sl_sess_operations[SL_SESS_OPS];
extern const char *const sl_sess_transports[SL_SESS_TRANSPORTS];
extern const char *const sl_sess_reasons[SL_SESS_REASONS];

/* Live sessions by operation and transport. */
typedef struct sl_sess_live {
    uint32_t n[SL_SESS_OPS][SL_SESS_TRANSPORTS];
} sl_sess_live;

typedef struct sl_sess_stats {
    uint64_t started[SL_SESS_OPS][SL_SESS_TRANSPORTS];
    uint64_t ends[SL_SESS_OPS][SL_SESS_REASONS];
    uint64_t bytes_to_client, bytes_from_client;
    sl_sess_live local;       /* served by sluiced itself */
    uint64_t refused_monitor; /* the monitor said no (e.g. max-sessions live) */
    uint64_t refused_gone;    /* the monitor went away before it answered */
} sl_sess_stats;

/* A monitor event: session_started / session_ended move the live counts;
 * other events are ignored. */
void sl_sess_live_event(sl_sess_live *l, const json_t *ev);
/* Sets the live counts from a hello reply's `live_sessions`. */
void sl_sess_live_hello(sl_sess_live *l, const json_t *reply);

/* A monitor event counted in the totals (started, ends, bytes). */
void sl_sess_stats_event(sl_sess_stats *s, const json_t *ev);

/* libsluice's session observer for sluiced's own server (arg: the
 * sl_sess_stats): sessions served without a monitor, counted the same way
 * and logged at debug. */
void sl_sess_stats_observe(void *arg, const sl_session_info *info);

#endif
