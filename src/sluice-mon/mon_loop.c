#include "mon_loop.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct sl_mwatch {
    sl_mloop *loop;
    int fd;
    uint32_t events;
    bool registered;
    bool dead;
    sl_mwatch_cb cb;
    void *data;
    sl_mwatch *next; /* live list, then garbage list */
};

struct sl_mtimer {
    sl_mloop *loop;
    uint64_t due;
    bool dead;
    sl_mtimer_cb cb;
    void *data;
    sl_mtimer *next;
};

struct sl_mloop {
    int epfd;
    bool stop;
    sl_mwatch *watches;
    sl_mwatch *garbage;
    sl_mtimer *timers; /* pending, sorted by due time */
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
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0) {
        free(l);
        return NULL;
    }
    return l;
}

static void free_list(sl_mwatch *w)
{
    while (w) {
        sl_mwatch *n = w->next;
        free(w);
        w = n;
    }
}

void sl_mloop_free(sl_mloop *l)
{
    if (!l)
        return;
    free_list(l->watches);
    free_list(l->garbage);
    while (l->timers) {
        sl_mtimer *n = l->timers->next;
        free(l->timers);
        l->timers = n;
    }
    close(l->epfd);
    free(l);
}

static int apply(sl_mwatch *w, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = w};
    if (events == 0) {
        if (w->registered && epoll_ctl(w->loop->epfd, EPOLL_CTL_DEL, w->fd, NULL) < 0)
            return -1;
        w->registered = false;
    } else if (epoll_ctl(w->loop->epfd, w->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, w->fd, &ev) <
               0) {
        return -1;
    } else {
        w->registered = true;
    }
    w->events = events;
    return 0;
}

sl_mwatch *sl_mloop_watch(sl_mloop *l, int fd, uint32_t events, sl_mwatch_cb cb, void *data)
{
    sl_mwatch *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    *w = (sl_mwatch){.loop = l, .fd = fd, .cb = cb, .data = data};
    if (apply(w, events) < 0) {
        int err = errno;
        free(w);
        errno = err;
        return NULL;
    }
    w->next = l->watches;
    l->watches = w;
    return w;
}

int sl_mwatch_set(sl_mwatch *w, uint32_t events)
{
    if (w->events == events)
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
    apply(w, 0);
    w->dead = true;
    sl_mwatch **pp = &w->loop->watches;
    while (*pp && *pp != w)
        pp = &(*pp)->next;
    if (*pp)
        *pp = w->next;
    w->next = w->loop->garbage;
    w->loop->garbage = w;
}

void sl_mwatch_close(sl_mwatch *w)
{
    if (!w)
        return;
    int fd = w->fd;
    sl_mwatch_free(w);
    close(fd);
}

sl_mtimer *sl_mloop_timer(sl_mloop *l, uint64_t ms, sl_mtimer_cb cb, void *data)
{
    sl_mtimer *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    *t = (sl_mtimer){.loop = l, .due = sl_mono_ms() + ms, .cb = cb, .data = data};
    sl_mtimer **pp = &l->timers;
    while (*pp && (*pp)->due <= t->due)
        pp = &(*pp)->next;
    t->next = *pp;
    *pp = t;
    return t;
}

void sl_mtimer_cancel(sl_mtimer *t)
{
    if (!t)
        return;
    for (sl_mtimer **pp = &t->loop->timers; *pp; pp = &(*pp)->next) {
        if (*pp == t) {
            *pp = t->next;
            free(t);
            return;
        }
    }
    t->dead = true; /* in the batch being fired: released there */
}

static int next_timeout(sl_mloop *l, int max_ms)
{
    if (!l->timers)
        return max_ms;
    uint64_t now = sl_mono_ms();
    int wait = l->timers->due <= now ? 0 : (int)(l->timers->due - now);
    return (max_ms >= 0 && max_ms < wait) ? max_ms : wait;
}

/* Fires due timers; a timer added by a callback waits for the next round. */
static void run_timers(sl_mloop *l)
{
    uint64_t now = sl_mono_ms();
    sl_mtimer *due = NULL, **tail = &due;
    while (l->timers && l->timers->due <= now) {
        sl_mtimer *t = l->timers;
        l->timers = t->next;
        t->next = NULL;
        *tail = t;
        tail = &t->next;
    }
    while (due) {
        sl_mtimer *t = due;
        due = t->next;
        if (!t->dead)
            t->cb(t->data);
        free(t);
    }
}

int sl_mloop_run_once(sl_mloop *l, int max_ms)
{
    struct epoll_event evs[SL_MLOOP_BATCH];
    int n = epoll_wait(l->epfd, evs, SL_MLOOP_BATCH, next_timeout(l, max_ms));
    if (n < 0 && errno != EINTR)
        return -1;
    for (int i = 0; i < n; i++) {
        sl_mwatch *w = evs[i].data.ptr;
        if (!w->dead)
            w->cb(w, evs[i].events, w->data);
    }
    run_timers(l);
    free_list(l->garbage);
    l->garbage = NULL;
    return 0;
}

int sl_mloop_run(sl_mloop *l)
{
    l->stop = false;
    while (!l->stop)
        if (sl_mloop_run_once(l, -1) < 0)
            return -1;
    return 0;
}

void sl_mloop_stop(sl_mloop *l)
{
    l->stop = true;
}
