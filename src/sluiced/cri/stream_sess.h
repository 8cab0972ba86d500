/* A session that runs through a pod monitor: a streaming exec or attach
 * (owned by a libsluice sl_proc) or an ExecSync. Monitor events find it
 * by its id (the exec_id or attach session of the protocol). */
#ifndef SL_STREAM_SESS_H
#define SL_STREAM_SESS_H

#include <stdbool.h>

#include "cri/rt.h"
#include "sess_proc.h"

enum { SL_SESS_EXEC, SL_SESS_ATTACH, SL_SESS_SYNC };

struct sl_stream_sess {
    struct sl_stream_sess *next;
    sl_rt *rt;
    int kind;
    char id[33];
    char pod_id[SL_ID_HEX + 1];
    char ctr_id[SL_ID_HEX + 1];
    sl_sess_proc sp; /* streaming sessions' libsluice process; sp.running: the
                        monitor has started it (an ExecSync too) */
    /* ExecSync: called once when the exec ends or its monitor goes away. */
    void (*on_end)(sl_stream_sess *s, bool failed, int code, const char *msg);
    void *data;
};

/* Registers a session with a fresh id. NULL on ENOMEM. */
sl_stream_sess *sl_sess_new(sl_rt *rt, int kind, const char *pod_id, const char *ctr_id);
void sl_sess_free(sl_stream_sess *s);
/* Adds the exec admission limits of the configuration (exec-max-
 * concurrent-per-pod, exec-queue-max) to an `exec` request (exec_sync.c). */
void sl_cri_exec_limits(const sl_rt *rt, json_t *req);

#endif
