/* sluiced's side of a pod monitor (docs/mon-protocol.md): an asynchronous
 * request/reply connection on the loop (starting one: mon_spawn.h). */
#ifndef SL_MON_CLIENT_H
#define SL_MON_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>
#include <uv.h>

#include "cri/sess_stats.h"
#include "mon_proto.h"
#include "sys_error.h"

typedef struct sl_monc sl_monc;

/* The reply to a request (borrowed), with its fds (the callee owns them);
 * reply is NULL when the connection went away first. */
typedef void (*sl_monc_reply_fn)(void *arg, const json_t *reply, int *fds, size_t nfds);
/* An event (exited, exec_exited, attach_ended), borrowed; NULL when the
 * connection is lost. */
typedef void (*sl_monc_event_fn)(void *arg, const json_t *event);

/* Connects to <run_dir>/mon.sock. Returns the connection or NULL (*e). */
sl_monc *sl_monc_connect(uv_loop_t *loop, const char *run_dir, sl_monc_event_fn on_event,
                         void *event_arg, sl_error *e);

/* Sends req (a new object with "type"; the id is added; ownership of req and
 * of the fds passes to the call) and calls fn (may be NULL) with the reply
 * later. Returns 0, or -1 (*e) when the connection is gone (fn is then not
 * called). */
int sl_monc_request(sl_monc *m, json_t *req, const int *fds, size_t nfds, sl_monc_reply_fn fn,
                    void *arg, sl_error *e);

/* True while the connection works. */
bool sl_monc_alive(const sl_monc *m);

/* True once the monitor's hello reply said it serves streaming sessions
 * (`session`); a monitor started by an older sluiced does not. */
bool sl_monc_serves_sessions(const sl_monc *m);

/* The sessions this monitor serves now, by operation and transport (its
 * hello reply, then its session events); NULL when the connection is
 * lost: a dead monitor's sessions are not live. */
const sl_sess_live *sl_monc_live_sessions(const sl_monc *m);

/* Closes the connection; pending requests get a NULL reply now. */
void sl_monc_close(sl_monc *m);

#endif
