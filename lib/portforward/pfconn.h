/* The library side of sl_pfconn: one "connect me to port P" request to
 * the runtime. The runtime answers exactly once (connected or failed);
 * if the asking session went away meanwhile, the answer's fd is closed and
 * the handle freed. */
#ifndef SL_PFCONN_H
#define SL_PFCONN_H

#include <stdint.h>
#include "sluice/runtime.h"

/* fd >= 0 on success (ownership passes to the callee), else err says why. */
typedef void (*sl_pfconn_result_fn)(void *owner, int fd, const char *err);

struct sl_pfconn {
    const sl_runtime *rt;
    void *data;  /* the runtime's */
    void *owner; /* NULL once the asker is gone */
    sl_pfconn_result_fn on_result;
};

/* Asks the runtime; the result may arrive before this returns. Returns the
 * handle (for sl_pfconn_abandon) or NULL when the answer already came. */
sl_pfconn *sl_pfconn_request(const sl_runtime *rt, const char *sandbox, uint16_t port,
                             sl_pfconn_result_fn fn, void *owner);
/* The asker is gone: drop the pending answer (tells the runtime). */
void sl_pfconn_abandon(sl_pfconn *c);

#endif
