/* The monitor's single-threaded event loop: level-triggered watches of raw
 * fds (epoll event bits) plus millisecond timers, on a libuv loop that
 * libsluice's streaming sessions share (sl_mloop_uv). Watches and timers
 * freed during a callback are only marked dead and released after the
 * current round, so a callback never sees a freed watch. One fd has at
 * most one watch (libuv's rule), and watching makes it non-blocking. */
#ifndef SL_MON_LOOP_H
#define SL_MON_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <uv.h>

typedef struct sl_mloop sl_mloop;
typedef struct sl_mwatch sl_mwatch;
typedef struct sl_mtimer sl_mtimer;

/* events: the EPOLL* bits that fired: EPOLLIN, EPOLLOUT, EPOLLRDHUP with
 * EPOLLHUP (a hang-up, when EPOLLRDHUP was asked for), or EPOLLERR with the
 * watched EPOLLIN/EPOLLOUT (an error: the next read or write says which). A
 * hang-up without EPOLLRDHUP shows as EPOLLIN or EPOLLOUT. */
typedef void (*sl_mwatch_cb)(sl_mwatch *w, uint32_t events, void *data);
/* A timer fires once; it is released after the callback returns, so the
 * owner clears its pointer in the callback and never cancels it after. */
typedef void (*sl_mtimer_cb)(void *data);

/* NULL on ENOMEM or when the loop cannot be made (errno set). */
sl_mloop *sl_mloop_new(void);
/* Releases the loop, its watches and timers (fds are not closed). Other
 * handles on the loop must be closed first. */
void sl_mloop_free(sl_mloop *l);
/* The libuv loop underneath, for libsluice. */
uv_loop_t *sl_mloop_uv(sl_mloop *l);

/* Watches fd for events (EPOLLIN, EPOLLOUT, EPOLLRDHUP: 0 = registered but
 * paused, which also silences HUP). NULL on error (errno set). The fd stays
 * owned by the caller. */
sl_mwatch *sl_mloop_watch(sl_mloop *l, int fd, uint32_t events, sl_mwatch_cb cb, void *data);
/* Changes the events. Returns 0 or -1 (errno). */
int sl_mwatch_set(sl_mwatch *w, uint32_t events);
uint32_t sl_mwatch_events(const sl_mwatch *w);
int sl_mwatch_fd(const sl_mwatch *w);
/* Stops watching (before the caller closes the fd). NULL is a no-op. */
void sl_mwatch_free(sl_mwatch *w);
/* sl_mwatch_free and close the fd. */
void sl_mwatch_close(sl_mwatch *w);

/* A one-shot timer in ms. NULL on ENOMEM. */
sl_mtimer *sl_mloop_timer(sl_mloop *l, uint64_t ms, sl_mtimer_cb cb, void *data);
/* Cancels a pending timer. NULL is a no-op. */
void sl_mtimer_cancel(sl_mtimer *t);

/* Waits at most max_ms (-1 = until something happens) and dispatches one
 * round. Returns 0. */
int sl_mloop_run_once(sl_mloop *l, int max_ms);
/* Runs until sl_mloop_stop or until nothing is left to wait for. Returns 0. */
int sl_mloop_run(sl_mloop *l);
void sl_mloop_stop(sl_mloop *l);

/* CLOCK_MONOTONIC in ms and CLOCK_REALTIME in ns. */
uint64_t sl_mono_ms(void);
int64_t sl_real_ns(void);

#endif
