/* The monitor's single-threaded event loop: level-triggered epoll over raw
 * fds plus millisecond timers. Watches and timers freed while a batch of
 * events is being dispatched are only marked dead and released after the
 * batch, so a callback never sees a freed watch. */
#ifndef SL_MON_LOOP_H
#define SL_MON_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#define SL_MLOOP_BATCH 64 /* epoll events per wake-up */

typedef struct sl_mloop sl_mloop;
typedef struct sl_mwatch sl_mwatch;
typedef struct sl_mtimer sl_mtimer;

/* events: the EPOLL* bits that fired (EPOLLHUP/EPOLLERR always count). */
typedef void (*sl_mwatch_cb)(sl_mwatch *w, uint32_t events, void *data);
/* A timer fires once; it is released after the callback returns, so the
 * owner clears its pointer in the callback and never cancels it after. */
typedef void (*sl_mtimer_cb)(void *data);

/* NULL on ENOMEM or when epoll_create1 fails (errno set). */
sl_mloop *sl_mloop_new(void);
/* Releases the loop, its watches and timers (fds are not closed). */
void sl_mloop_free(sl_mloop *l);

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
 * batch. Returns 0 or -1 (errno) when epoll_wait fails. */
int sl_mloop_run_once(sl_mloop *l, int max_ms);
/* Runs until sl_mloop_stop. Returns 0 or -1 (errno). */
int sl_mloop_run(sl_mloop *l);
void sl_mloop_stop(sl_mloop *l);

/* CLOCK_MONOTONIC in ms and CLOCK_REALTIME in ns. */
uint64_t sl_mono_ms(void);
int64_t sl_real_ns(void);

#endif
