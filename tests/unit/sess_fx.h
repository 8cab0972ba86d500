/* A streaming server and the libsluice client on one libuv loop, talking
 * over loopback TCP inside the test process, with a runtime the test
 * supplies: the session glue (lib/server, lib/remotecommand,
 * lib/portforward, lib/client) end to end without any other process. */
#ifndef SESS_FX_H
#define SESS_FX_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>
#include "sluice/server.h"

#define SESS_WAIT_MS 5000

typedef struct sess_fx {
    uv_loop_t loop;
    sl_runtime rt;
    sl_server *srv;
} sess_fx;

/* Bytes read so far from a non-blocking fd, and whether it ended. */
typedef struct sess_acc {
    char buf[65536];
    size_t len;
    bool eof;
} sess_acc;

/* Starts a server on 127.0.0.1, any port; cfg NULL = the defaults. */
void sess_fx_start(sess_fx *f, const sl_runtime_ops *ops, void *data, const sl_server_config *cfg);
/* Closes the server, runs the loop until every handle is closed. */
void sess_fx_stop(sess_fx *f);
/* Runs the loop until done(arg) or SESS_WAIT_MS; true when done. */
bool sess_pump(sess_fx *f, bool (*done)(void *arg), void *arg);
/* Runs the loop for about ms (lets things happen that must not). */
void sess_run_for(sess_fx *f, unsigned ms);
/* Reads what fd has now into a (fd made non-blocking by the caller). */
void sess_drain(int fd, sess_acc *a);
/* A pipe, both ends non-blocking and close-on-exec. */
void sess_pipe(int p[2]);
/* A stream socketpair, both ends non-blocking and close-on-exec. */
void sess_socketpair(int sv[2]);

#endif
