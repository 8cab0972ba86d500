/* Reports of the streaming sessions a monitor serves (mon_sess_report.c). */
#ifndef SL_MON_SESS_REPORT_H
#define SL_MON_SESS_REPORT_H

#include <jansson.h>
#include <stdint.h>

#include "sluice/server.h"

typedef struct mon mon;

#define MON_SESS_OPS 3        /* exec, attach, portforward */
#define MON_SESS_TRANSPORTS 3 /* spdy, websocket, websocket-tunnel */

/* Live sessions by operation and transport. */
typedef struct mon_sess_live {
    uint32_t n[MON_SESS_OPS][MON_SESS_TRANSPORTS];
} mon_sess_live;

/* A session started or ended (libsluice's observer): counted in live,
 * logged at debug and sent to sluiced as session_started/session_ended. */
void mon_sess_report(mon *m, mon_sess_live *live, const sl_session_info *info);

/* hello's `live_sessions`: [{operation, transport, count}] for counts > 0. */
json_t *mon_sess_live_json(const mon_sess_live *live);

#endif
