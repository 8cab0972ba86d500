/* The streaming-session families of /metrics: sessions active (the live
 * sessions of every monitor sluiced holds a connection to, plus those it
 * serves itself) and total by operation and transport, ends by operation
 * and reason, bytes by direction, tokens pending, connections refused by
 * reason. */
#ifndef SL_SESSION_METRICS_H
#define SL_SESSION_METRICS_H

#include <stdio.h>

#include "cri/rt.h"
#include "sluice/server.h"

/* stream may be NULL (no streaming server). */
void sl_session_metrics_write(FILE *f, const sl_rt *rt, const sl_server *stream);

#endif
