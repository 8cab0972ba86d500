/* A CRI streaming request parked under a token: a deep copy of the exec,
 * attach or port-forward request that owns all its strings. The public
 * sl_stream_request under its internal name; its sizes (struct_size of the
 * struct and of its member) are always this library's. */
#ifndef SL_STREAM_REQ_H
#define SL_STREAM_REQ_H

#include "server/token_cache.h"
#include "sluice/server.h"

typedef sl_stream_request sl_stream_req;

/* Reads the caller's request of kind (an sl_exec_request,
 * sl_attach_request or sl_portforward_request) at its struct_size into dst,
 * a struct of that type: fields beyond the caller's size are 0 (their
 * default), dst's struct_size is this library's. Nothing is copied deeper:
 * dst points to the caller's strings. Returns SL_OK, SL_ERR_INVAL (an
 * unknown kind, src NULL or its struct_size below 0.3.0's),
 * SL_ERR_UNSUPPORTED (a field this library does not know is set). */
int sl_stream_req_read(sl_stream_kind kind, void *dst, const void *src);

/* Reads req as sl_stream_req_read() does and makes a deep copy of it into
 * *out (set only on SL_OK). Returns what sl_stream_req_read returns, or
 * SL_ERR_NOMEM. */
int sl_stream_req_new(sl_stream_kind kind, const void *req, sl_stream_req **out);

/* Frees r and everything it owns; NULL is fine. */
void sl_stream_req_free(sl_stream_req *r);

#endif
