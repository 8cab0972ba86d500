/* A local file descriptor pumped on a libuv loop: reads delivered with
 * pause/resume, writes queued without a bound (the owner watches
 * sl_fdio_queued() and stops producing), half-close for sockets.
 *
 * Pollable fds (pipes, sockets, terminals) are switched to O_NONBLOCK
 * while in use and their flags restored at free. Fds epoll refuses
 * (regular files, /dev/null) are written directly (blocking, they are
 * always ready) and read one chunk per loop turn. Sockets are written
 * with MSG_NOSIGNAL; writing a closed pipe raises SIGPIPE unless the
 * program ignores it (include/sluice/client.h). */
#ifndef SL_CLIENT_FDIO_H
#define SL_CLIENT_FDIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define SL_FDIO_READ_CHUNK (32u * 1024) /* client-go's copy buffer */

typedef struct sl_fdio sl_fdio;

typedef struct sl_fdio_callbacks {
    /* Bytes read; valid during the call. */
    void (*on_read)(void *arg, const uint8_t *data, size_t len);
    /* Reading ended: err 0 for EOF, else an errno. No on_read follows. */
    void (*on_read_end)(void *arg, int err);
    /* n queued bytes were written. */
    void (*on_written)(void *arg, size_t n);
    /* Writing failed (EPIPE, ECONNRESET, ...): the queue is dropped and
     * later writes fail. */
    void (*on_write_error)(void *arg, int err);
} sl_fdio_callbacks;

/* Watches fd for reading (rd) and/or writing (wr). owned: close fd at
 * free. Reading starts paused. Returns SL_OK, SL_ERR_INVAL (bad fd),
 * SL_ERR_NOMEM, SL_ERR_SYS. On error an owned fd is NOT closed. */
int sl_fdio_new(uv_loop_t *loop, int fd, bool rd, bool wr, bool owned, const sl_fdio_callbacks *cb,
                void *arg, sl_fdio **out);
/* Pauses or resumes reading (no-op after the read end). */
void sl_fdio_read_pause(sl_fdio *f, bool pause);
/* Queues len bytes (copied) and writes what the fd takes now. Returns
 * SL_OK, SL_ERR_CLOSED (after a write error or shutdown), SL_ERR_NOMEM.
 * Callbacks may fire from inside (a write error). */
int sl_fdio_write(sl_fdio *f, const uint8_t *data, size_t len);
/* Bytes queued and not yet written. */
size_t sl_fdio_queued(const sl_fdio *f);
/* Once the queue is written: shutdown(SHUT_WR) for a socket (nothing for
 * other fds). Later writes fail. */
void sl_fdio_shutdown(sl_fdio *f);
/* For a socket: its close (at free) resets the connection (RST) instead
 * of ending it cleanly, so the peer sees an error, not a complete stream.
 * Nothing for other fds. */
void sl_fdio_reset(sl_fdio *f);
/* True once a write error happened. */
bool sl_fdio_failed(const sl_fdio *f);
/* Stops everything, restores the fd's flags, closes it if owned; the
 * memory goes once the loop closed the handles. No callback follows.
 * Safe from inside a callback of f. */
void sl_fdio_free(sl_fdio *f);

#endif
