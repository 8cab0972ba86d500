/* Port-forward connects from the monitor, which lives in its pod's network
 * namespace: non-blocking, IPv4 loopback then IPv6, with a timeout, and a
 * real cancel. */
#ifndef SL_MON_PF_H
#define SL_MON_PF_H

#include <stdint.h>

#include "mon.h"
#include "sluice/runtime.h"

/* Connects to localhost:port and answers conn (sl_pfconn_connected or
 * sl_pfconn_failed) later, or now when the answer is known at once; gives
 * up after timeout_ms. */
void mon_pf_connect(mon *m, sl_pfconn *conn, uint16_t port, uint32_t timeout_ms);
/* The forwarded connection is gone before the answer: stop connecting. */
void mon_pf_cancel(sl_pfconn *conn);

#endif
