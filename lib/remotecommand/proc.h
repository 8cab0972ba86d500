/* The library side of sl_proc, the handle a runtime gets for one
 * exec/attach. It outlives its session when the client vanishes first:
 * the runtime still reports the exit, and only then is it released. */
#ifndef SL_PROC_H
#define SL_PROC_H

#include "remotecommand/rc_status.h"
#include "sluice/runtime.h"

typedef struct sl_rc sl_rc;

typedef enum sl_proc_state {
    SL_PROC_NEW,
    SL_PROC_STARTING,
    SL_PROC_RUNNING,
    SL_PROC_ENDED,
} sl_proc_state;

struct sl_proc {
    sl_rc *rc; /* NULL once the session is gone */
    const sl_runtime *rt;
    void *data;
    sl_proc_state state;
};

sl_proc *sl_proc_new(const sl_runtime *rt);
/* The session goes away: cancel the process if it may still run, and
 * release the handle now if the runtime is done with it. */
void sl_proc_detach(sl_proc *p);

/* Session-side notifications, called by sl_proc_* entry points. */
void sl_rc_proc_started(sl_rc *rc, const sl_proc_endpoints *ep);
void sl_rc_proc_ended(sl_rc *rc, sl_rc_outcome outcome, int code, const char *message);

#endif
