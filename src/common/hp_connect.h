/* Loopback connect: the port-forward of sluice-hostd's host backend, and of
 * the sessions sluiced serves itself (from inside the pod's netns). */
#ifndef SL_HP_CONNECT_H
#define SL_HP_CONNECT_H

#include <stddef.h>
#include <stdint.h>

/* Connects to 127.0.0.1:port, then [::1]:port. Returns a connected,
 * non-blocking socket, or -1 with a message in err. */
int sl_hp_connect_loopback(uint16_t port, char *err, size_t errlen);

#endif
