/* sluiced hands every streaming connection to its pod's monitor once the
 * token is consumed: the socket, the bytes read and the request go over
 * the control socket (`session`, docs/mon-protocol.md), and the session
 * lives in the monitor from then on, so it outlives sluiced. A monitor
 * that does not serve sessions (started by an older sluiced), a pod
 * without a monitor, or a request that does not fit one message is served
 * here instead, as before. */
#ifndef SL_STREAM_HANDOFF_H
#define SL_STREAM_HANDOFF_H

#include "cri/rt.h"
#include "sluice/server.h"

typedef struct sl_stream_handoff sl_stream_handoff;

/* Sets srv's hand-off; cfg holds the session limits sent with every
 * hand-off (copied). rt must outlive the returned object. NULL on ENOMEM. */
sl_stream_handoff *sl_stream_handoff_enable(sl_server *srv, sl_rt *rt, const sl_server_config *cfg,
                                            uint32_t pf_connect_timeout_ms);
void sl_stream_handoff_free(sl_stream_handoff *h);

#endif
