/* A CRI streaming request parked under a token: a deep copy of the exec,
 * attach or port-forward request that owns all its strings. The public
 * sl_stream_request under its internal name. */
#ifndef SL_STREAM_REQ_H
#define SL_STREAM_REQ_H

#include "server/token_cache.h"
#include "sluice/server.h"

typedef sl_stream_request sl_stream_req;

/* Deep copies; NULL on ENOMEM. */
sl_stream_req *sl_stream_req_exec(const sl_exec_request *r);
sl_stream_req *sl_stream_req_attach(const sl_attach_request *r);
sl_stream_req *sl_stream_req_portforward(const sl_portforward_request *r);
/* Frees r and everything it owns; NULL is fine. */
void sl_stream_req_free(sl_stream_req *r);

#endif
