/* Admin endpoint of sluice-hostd (see admin.c). */
#ifndef SLUICE_HOSTD_ADMIN_H
#define SLUICE_HOSTD_ADMIN_H

#include <stdint.h>
#include <uv.h>
#include "hostproc.h"
#include "sluice/server.h"

typedef struct sl_admin {
    uv_tcp_t listener;
    sl_server *server;
    sl_hostproc *hp;
    uint16_t port;
} sl_admin;

/* Listens on address:port (0 = any); a->port gets the bound port. */
int sl_admin_start(sl_admin *a, uv_loop_t *loop, const char *address, uint16_t port);
void sl_admin_close(sl_admin *a);

#endif
