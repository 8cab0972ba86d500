/* Child processes run from the event loop: uv_spawn, the input written to
 * stdin, stdout (and optionally stderr) collected up to a bound, and a
 * deadline after which the child's whole process group is killed and
 * reaped. Nothing here waits: the loop goes on serving while a child runs,
 * and a callback reports the end.
 *
 * Every child runs in a session of its own (setsid), so a timeout kills
 * what it started too (a CNI plugin script and its `sleep`), and a
 * terminal's signals meant for sluiced never reach it. */
#ifndef SL_PROC_CHILD_H
#define SL_PROC_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "sys_error.h"

typedef struct sl_child sl_child;

typedef struct sl_child_opts {
    /* What runs, in words, for errors: "CNI plugin bridge (ADD)". */
    const char *what;
    const char *file;        /* executable: a path, or a name looked up in PATH */
    char *const *argv;       /* argv[0] included, NULL-terminated */
    char *const *env;        /* NULL: sluiced's own environment */
    const void *input;       /* written to stdin, then EOF; NULL: stdin is /dev/null */
    size_t input_len;        /* bytes of input */
    size_t max_output;       /* stdout bytes kept; a child printing more is killed */
    bool merge_stderr;       /* stderr goes into the output too (else: sluiced's stderr) */
    uint32_t timeout_ms;     /* 0: none */
    const char *timeout_key; /* the config key of the timeout, named in the error */
} sl_child_opts;

/* How a child ended. output is NUL-terminated and owned by the child:
 * valid during the callback only. */
typedef struct sl_child_result {
    bool ran;            /* false: it could not be started (error says why) */
    bool timed_out;      /* killed at the deadline (error says so) */
    bool too_much;       /* killed for printing more than max_output (error says so) */
    int64_t exit_status; /* when it exited */
    int term_signal;     /* when a signal ended it, else 0 */
    const char *output;
    size_t output_len;
    pid_t pid;
    sl_error error; /* set unless it ran to its own end (exit or signal) */
} sl_child_result;

/* Called once, on the loop, after the child exited (and was reaped) and
 * its output reached EOF, or it was killed for a timeout or too much
 * output. The child is freed after the callback returns. */
typedef void (*sl_child_done_fn)(void *arg, const sl_child_result *r);

/* Starts the child (the options are copied: the caller's strings may go
 * after the call). Returns 0, or -1 with *e when no callback will come:
 * the child could not be started (ENOENT, EACCES... naming o->what and the
 * file). On success *out (may be NULL) gets the handle, valid until the
 * callback. */
int sl_child_start(uv_loop_t *loop, const sl_child_opts *o, sl_child_done_fn done, void *arg,
                   sl_child **out, sl_error *e);

/* Kills the child's process group now (SIGKILL); the callback still comes,
 * with error "<what>: killed" and ran set. */
void sl_child_kill(sl_child *c);

/* "exited with status 3" / "was killed by signal 9 (Killed)" into buf. */
const char *sl_child_status_text(const sl_child_result *r, char *buf, size_t n);

#endif
