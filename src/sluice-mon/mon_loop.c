/* sl_mloop on a libuv loop: a watch is a uv_poll_t, a timer a uv_timer_t.
 * The monitor's logic keeps its epoll-style interface while libsluice's
 * streaming sessions run on the same loop (sl_mloop_uv). libuv stops a
 * poll handle that reported an error; a watch restarts it after its
 * callback, so an error is reported again while it lasts, as a
 * level-triggered epoll would. */
#include "mon_loop.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Rounds of the loop sl_mloop_free runs to finish closing handles. */
#define SL_MLOOP_CLOSE_ROUNDS 64

struct sl_mwatch {
    uv_poll_t h;
    sl_mloop *loop;
    int fd;
    uint32_t events;
    bool dead;
    bool failed; /* libuv stopped the handle after an error */
    sl_mwatch_cb cb;
    void *data;
    sl_mwatch *prev, *next; /* live watches */
};

struct sl_mtimer {
    uv_timer_t h;
    sl_mloop *loop;
    bool dead;
    sl_mtimer_cb cb;
    void *data;
    sl_mtimer *prev, *next; /* pending timers */
};

struct sl_mloop {
    uv_loop_t uv;
    bool stop;
    sl_mwatch *watches;
    sl_mtimer *timers;
};

uint64_t sl_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int64_t sl_real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

sl_mloop *sl_mloop_new(void)
{
    sl_mloop *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    int rc = uv_loop_init(&l->uv);
    if (rc < 0) {
        free(l);
        errno = -rc;
        return NULL;
    }
    return l;
}

uv_loop_t *sl_mloop_uv(sl_mloop *l)
{
    return &l->uv;
}

static void watch_closed_cb(uv_handle_t *h)
{
    free(h->data);
}

static void timer_closed_cb(uv_handle_t *h)
{
    free(h->data);
}

void sl_mloop_free(sl_mloop *l)
{
    if (!l)
        return;
    while (l->watches)
        sl_mwatch_free(l->watches);
    while (l->timers)
        sl_mtimer_cancel(l->timers);
    for (int i = 0; i < SL_MLOOP_CLOSE_ROUNDS && uv_loop_close(&l->uv) == UV_EBUSY; i++)
        uv_run(&l->uv, UV_RUN_NOWAIT);
    free(l);
}

static uint32_t from_uv(int uvev)
{
    uint32_t ev = 0;
    if (uvev & UV_READABLE)
        ev |= EPOLLIN;
    if (uvev & UV_WRITABLE)
        ev |= EPOLLOUT;
    if (uvev & UV_DISCONNECT)
        ev |= EPOLLRDHUP | EPOLLHUP;
    return ev;
}

static void poll_cb(uv_poll_t *h, int status, int uvev);

static int apply(sl_mwatch *w, uint32_t events)
{
    int uvev = ((events & EPOLLIN) ? UV_READABLE : 0) | ((events & EPOLLOUT) ? UV_WRITABLE : 0) |
               ((events & EPOLLRDHUP) ? UV_DISCONNECT : 0);
    int rc = uvev ? uv_poll_start(&w->h, uvev, poll_cb) : uv_poll_stop(&w->h);
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    w->events = events;
    w->failed = false;
    return 0;
}

static void poll_cb(uv_poll_t *h, int status, int uvev)
{
    sl_mwatch *w = h->data;
    if (w->dead)
        return;
    uint32_t ev = from_uv(uvev);
    if (status < 0) {
        w->failed = true;
        ev = EPOLLERR | (w->events & (EPOLLIN | EPOLLOUT));
    }
    w->cb(w, ev, w->data);
    if (!w->dead && w->failed && w->events)
        apply(w, w->events);
}

sl_mwatch *sl_mloop_watch(sl_mloop *l, int fd, uint32_t events, sl_mwatch_cb cb, void *data)
{
    sl_mwatch *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    int rc = uv_poll_init(&l->uv, &w->h, fd);
    if (rc < 0) {
        free(w);
        errno = -rc;
        return NULL;
    }
    w->h.data = w;
    w->loop = l;
    w->fd = fd;
    w->cb = cb;
    w->data = data;
    if (apply(w, events) < 0) {
        int err = errno;
        uv_close((uv_handle_t *)&w->h, watch_closed_cb);
        errno = err;
        return NULL;
    }
    w->next = l->watches;
    if (w->next)
        w->next->prev = w;
    l->watches = w;
    return w;
}

int sl_mwatch_set(sl_mwatch *w, uint32_t events)
{
    if (w->events == events && !w->failed)
        return 0;
    return apply(w, events);
}

uint32_t sl_mwatch_events(const sl_mwatch *w)
{
    return w->events;
}

int sl_mwatch_fd(const sl_mwatch *w)
{
    return w->fd;
}

void sl_mwatch_free(sl_mwatch *w)
{
    if (!w || w->dead)
        return;
    w->dead = true;
    uv_poll_stop(&w->h);
    if (w->prev)
        w->prev->next = w->next;
    else
        w->loop->watches = w->next;
    if (w->next)
        w->next->prev = w->prev;
    uv_close((uv_handle_t *)&w->h, watch_closed_cb); /* freed after this round */
}

void sl_mwatch_close(sl_mwatch *w)
{
    if (!w)
        return;
    int fd = w->fd;
    sl_mwatch_free(w);
    close(fd);
}

static void timer_release(sl_mtimer *t)
{
    t->dead = true;
    if (t->prev)
        t->prev->next = t->next;
    else
        t->loop->timers = t->next;
    if (t->next)
        t->next->prev = t->prev;
    uv_close((uv_handle_t *)&t->h, timer_closed_cb);
}

static void timer_cb(uv_timer_t *h)
{
    sl_mtimer *t = h->data;
    if (t->dead)
        return;
    t->cb(t->data);
    if (!t->dead)
        timer_release(t);
}

sl_mtimer *sl_mloop_timer(sl_mloop *l, uint64_t ms, sl_mtimer_cb cb, void *data)
{
    sl_mtimer *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    uv_timer_init(&l->uv, &t->h);
    t->h.data = t;
    t->loop = l;
    t->cb = cb;
    t->data = data;
    t->next = l->timers;
    if (t->next)
        t->next->prev = t;
    l->timers = t;
    /* Due ms from now, not from when this round of the loop began. */
    uv_update_time(&l->uv);
    uv_timer_start(&t->h, timer_cb, ms, 0);
    return t;
}

void sl_mtimer_cancel(sl_mtimer *t)
{
    if (!t || t->dead)
        return;
    uv_timer_stop(&t->h);
    timer_release(t);
}

static void bound_cb(uv_timer_t *h)
{
    (void)h; /* only ends the wait */
}

int sl_mloop_run_once(sl_mloop *l, int max_ms)
{
    uv_timer_t bound;
    if (max_ms >= 0) {
        uv_timer_init(&l->uv, &bound);
        uv_timer_start(&bound, bound_cb, (uint64_t)max_ms, 0);
    }
    uv_run(&l->uv, UV_RUN_ONCE);
    if (max_ms >= 0) {
        uv_close((uv_handle_t *)&bound, NULL);
        uv_run(&l->uv, UV_RUN_NOWAIT); /* bound lives on this stack */
    }
    return 0;
}

int sl_mloop_run(sl_mloop *l)
{
    l->stop = false;
    while (!l->stop && uv_run(&l->uv, UV_RUN_ONCE) != 0)
        ;
    return 0;
}

void sl_mloop_stop(sl_mloop *l)
{
    l->stop = true;
    uv_stop(&l->uv);
}
