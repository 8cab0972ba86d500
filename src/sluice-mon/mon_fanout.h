/* Fan-out of a container's output to its attach sessions, and the session
 * objects themselves. No event loop here: the caller feeds bytes as the
 * container produces them and calls sl_mon_fanout_writable when a
 * session's fd can take more. Writes are non-blocking; each session queues
 * at most its backlog (both streams together) and is ended when it would
 * need more, so a slow client never slows the container, the log, or the
 * other sessions. (containerd does the opposite: its writer group writes
 * to every attach stream in turn, so one slow client holds the container's
 * output, the log and every other client.) A time allowance on top of the
 * byte bound would not spare more clients for the same memory: it could
 * only cut earlier. */
#ifndef SL_MON_FANOUT_H
#define SL_MON_FANOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/bufq.h"
#include "mon_proto.h"

#define SL_MON_WHY_MAX 160 /* bytes of an end reason */

typedef struct sl_mon_attach {
    struct sl_mon_attach *next;
    char session[SL_MON_MAX_ID + 1];
    int out_fd[2];      /* non-blocking write ends: stdout, stderr; -1 = none/closed */
    sl_bufq q[2];       /* bytes the fd has not taken yet */
    bool out_eof[2];    /* the source ended: close out_fd once q drained */
    int in_fd;          /* read end of the session's stdin; -1 = none/closed */
    bool had_stdin;     /* the session was created with stdin (stdin_once) */
    bool tty;           /* the client asked for a terminal */
    size_t backlog_max; /* bytes it may queue; 0 = the fan-out's */
    bool ending;        /* marked for ending in the current call */
    bool finishing;     /* sl_mon_fanout_finish: outputs close once drained */
    uint64_t detach_ms; /* the loop layer's: when its client's stdin ended, 0 */
    char why[SL_MON_WHY_MAX];
    void *watch[3]; /* the loop layer's handles for out_fd[0..1], in_fd */
    void *owner;    /* the loop layer's container */
} sl_mon_attach;

typedef struct sl_mon_fanout_ops {
    /* Session a's stream s wants (or no longer wants) write readiness. */
    void (*want_write)(sl_mon_attach *a, int s, bool want, void *ud);
    /* Session a's out_fd[s] is about to be closed (drained after EOF). */
    void (*out_closing)(sl_mon_attach *a, int s, void *ud);
    /* Session a is being ended with why; its fds are closed and it is freed
     * right after this returns. */
    void (*ended)(sl_mon_attach *a, const char *why, void *ud);
} sl_mon_fanout_ops;

typedef struct sl_mon_fanout {
    sl_mon_attach *head;
    size_t backlog_max;
    bool src_eof[2]; /* the container's stream s has ended */
    const sl_mon_fanout_ops *ops;
    void *ud;
} sl_mon_fanout;

/* backlog_max: the default per session, 0 = SL_MON_ATTACH_BACKLOG. ops may
 * be NULL (no callbacks). */
void sl_mon_fanout_init(sl_mon_fanout *f, size_t backlog_max, const sl_mon_fanout_ops *ops,
                        void *ud);
/* Ends every session (callbacks fire with why). */
void sl_mon_fanout_fini(sl_mon_fanout *f, const char *why);

/* A new session with no fds (set out_fd/in_fd, then add). NULL on ENOMEM
 * or an invalid id. */
sl_mon_attach *sl_mon_attach_new(const char *session);
/* Frees a session that was never added; closes its fds. */
void sl_mon_attach_free(sl_mon_attach *a);
/* Adds a (taking ownership). Outputs whose source already ended are closed
 * at once (EOF for the client). Returns false when that left nothing open:
 * a is then freed. Create the loop's watches after this. */
bool sl_mon_fanout_add(sl_mon_fanout *f, sl_mon_attach *a);
sl_mon_attach *sl_mon_fanout_find(const sl_mon_fanout *f, const char *session);

/* Container output on stream s (0 stdout, 1 stderr). */
void sl_mon_fanout_feed(sl_mon_fanout *f, int s, const void *data, size_t len);
/* The container's stream s ended: each session's fd closes once drained. */
void sl_mon_fanout_eof(sl_mon_fanout *f, int s);
/* a's out_fd[s] is writable (or in error). */
void sl_mon_fanout_writable(sl_mon_fanout *f, sl_mon_attach *a, int s);
/* Ends a with why ("ended" fires), closing its fds. */
void sl_mon_fanout_end(sl_mon_fanout *f, sl_mon_attach *a, const char *why);
/* Frees a without an "ended" callback when nothing is left open. Returns
 * true when a was freed. */
bool sl_mon_fanout_reap(sl_mon_fanout *f, sl_mon_attach *a);
/* Ends a without losing a byte: nothing more is queued for it, each out_fd
 * closes (EOF for the client) once it took what a holds, and a is freed
 * then, without an "ended" callback (an in_fd still open keeps it). Returns
 * true when a was freed already. */
bool sl_mon_fanout_finish(sl_mon_fanout *f, sl_mon_attach *a);

#endif
