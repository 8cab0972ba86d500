/* Read buffers shared by every connection and every process pump of a
 * thread: the bytes of one read are parsed, or copied into an output
 * queue, before its callback returns, so one buffer per thread and kind
 * serves them all. A buffer per session (64 KiB each for the socket and
 * the process's output) cost every live session a touched page or more
 * even while idle, and all 64 KiB once data had flowed (issue 16). */
#ifndef SL_RBUF_H
#define SL_RBUF_H

#include <stdint.h>

#define SL_RBUF_SIZE (64u * 1024) /* bytes of each buffer: one read at most */

/* Separate buffers for reads that may run inside each other's callbacks
 * (a socket's bytes can make a process pump read, spdy_rc.c p_recv). */
typedef enum sl_rbuf_kind { SL_RBUF_CONN, SL_RBUF_PROC, SL_RBUF_KINDS } sl_rbuf_kind;

/* The calling thread's buffer of that kind, SL_RBUF_SIZE bytes, valid
 * until the thread exits (freed then); NULL when out of memory. Its
 * contents are the caller's only until it returns to the loop. */
uint8_t *sl_rbuf_get(sl_rbuf_kind kind);

#endif
