/* The libsluice side of a streaming exec or attach session, kept the same
 * way by sluiced's runtime (sluiced/cri/stream_runtime.c) and the
 * monitor's (sluice-mon/mon_sess.c). Each keeps its sessions in its own
 * list and reaches the monitor its own way; how a session holds its
 * sl_proc, ends it and answers a cancel is this one file. */
#ifndef SL_SESS_PROC_H
#define SL_SESS_PROC_H

#include <stdbool.h>
#include <stddef.h>

#include "sluice/runtime.h"

typedef struct sl_sess_proc {
    sl_proc *proc; /* NULL once ended or cancelled */
    bool running;  /* the exec or attach has started */
} sl_sess_proc;

/* The session sess now serves proc (sl_proc_data(proc) gives sess). */
void sl_sess_proc_bind(sl_sess_proc *sp, sl_proc *proc, void *sess);

/* The process runs: hands ep to libsluice (which owns its fds). */
void sl_sess_proc_started(sl_sess_proc *sp, const sl_proc_endpoints *ep);

/* Unbinds the session's proc and returns it, or NULL when the session has
 * no proc any more (ended or cancelled). The caller frees the session,
 * then ends the proc with sl_sess_proc_end: libsluice's calls that follow
 * (release) find no session. */
sl_proc *sl_sess_proc_take(sl_sess_proc *sp);
/* failed: sl_proc_failed with msg ("failed" when NULL); else
 * sl_proc_exited with code and msg (NULL: libsluice's default). */
void sl_sess_proc_end(sl_proc *proc, bool failed, int code, const char *msg);

/* The client's text for a start the monitor refused (err, NULL: "failed"):
 * "failed to exec in container: ERR" for an exec, ERR for an attach. */
void sl_sess_proc_start_error(bool exec, const char *err, char *out, size_t len);

/* What a cancel (the client went away, or the session timed out) asks of
 * the runtime. */
typedef enum sl_sess_cancel {
    /* a running exec: kill it (kill_exec); its exec_exited ends the session */
    SL_SESS_CANCEL_KILL,
    /* not started yet: proc is ended (137, "cancelled") and unbound here,
     * the start reply frees the session; an exec must still be killed, so
     * that one waiting for admission or starting never runs */
    SL_SESS_CANCEL_EARLY,
    /* a running attach: end the session now (its client went away) */
    SL_SESS_CANCEL_END,
} sl_sess_cancel;
sl_sess_cancel sl_sess_proc_cancel(sl_sess_proc *sp, bool exec);

#endif
