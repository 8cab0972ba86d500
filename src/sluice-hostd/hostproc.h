/* A runtime backend that runs commands on the host, for sluice-hostd, the
 * library's test server (it is not the product runtime: no containers, no
 * isolation). It uses libsluice's public runtime interface only; it left the
 * library (issue 15): examples/exec-server.c shows the same from outside.
 *
 * exec runs the request's argv on the host (the container id is ignored);
 * a tty exec gets a new PTY (openpty) as its controlling terminal. attach
 * runs, for each session, the argv registered for that container id; as
 * that process is the session's own, the end of the client's stdin ends
 * its input (a closed pipe, or ^D on its terminal).
 * port-forward connects to 127.0.0.1:port, then [::1]:port. */
#ifndef SLUICE_HOSTPROC_H
#define SLUICE_HOSTPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>
#include "sluice/runtime.h"

typedef struct sl_hostproc sl_hostproc;

/* Returns NULL on ENOMEM. */
sl_hostproc *sl_hostproc_new(uv_loop_t *loop);
/* The runtime to pass to sl_server_new(); valid while hp lives. */
const sl_runtime *sl_hostproc_runtime(sl_hostproc *hp);
/* Registers container `id` for attach. Returns SL_OK or SL_ERR_NOMEM. */
int sl_hostproc_add_container(sl_hostproc *hp, const char *id, const char *const *argv, bool tty);
/* Processes started and not yet reaped. */
size_t sl_hostproc_running(const sl_hostproc *hp);
/* Frees hp; call after the server using it is closed and every process
 * has been reaped (sl_hostproc_running() == 0). */
void sl_hostproc_free(sl_hostproc *hp);

#endif
