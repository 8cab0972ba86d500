#include "mon_fanout.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WRITEV_MAX 64

static const char *const out_names[2] = {"stdout", "stderr"};

void sl_mon_fanout_init(sl_mon_fanout *f, size_t backlog_max, const sl_mon_fanout_ops *ops,
                        void *ud)
{
    memset(f, 0, sizeof(*f));
    f->backlog_max = backlog_max ? backlog_max : SL_MON_ATTACH_BACKLOG;
    f->ops = ops;
    f->ud = ud;
}

sl_mon_attach *sl_mon_attach_new(const char *session)
{
    if (!sl_mon_valid_id(session))
        return NULL;
    sl_mon_attach *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    snprintf(a->session, sizeof(a->session), "%s", session);
    a->out_fd[0] = a->out_fd[1] = a->in_fd = -1;
    sl_bufq_init(&a->q[0]);
    sl_bufq_init(&a->q[1]);
    return a;
}

void sl_mon_attach_free(sl_mon_attach *a)
{
    if (!a)
        return;
    for (int s = 0; s < 2; s++) {
        if (a->out_fd[s] >= 0)
            close(a->out_fd[s]);
        sl_bufq_fini(&a->q[s]);
    }
    if (a->in_fd >= 0)
        close(a->in_fd);
    free(a);
}

static void unlink_attach(sl_mon_fanout *f, sl_mon_attach *a)
{
    for (sl_mon_attach **pp = &f->head; *pp; pp = &(*pp)->next) {
        if (*pp == a) {
            *pp = a->next;
            return;
        }
    }
}

void sl_mon_fanout_end(sl_mon_fanout *f, sl_mon_attach *a, const char *why)
{
    unlink_attach(f, a);
    if (f->ops && f->ops->ended)
        f->ops->ended(a, why, f->ud);
    sl_mon_attach_free(a);
}

bool sl_mon_fanout_reap(sl_mon_fanout *f, sl_mon_attach *a)
{
    if (a->out_fd[0] >= 0 || a->out_fd[1] >= 0 || a->in_fd >= 0)
        return false;
    unlink_attach(f, a);
    sl_mon_attach_free(a);
    return true;
}

void sl_mon_fanout_fini(sl_mon_fanout *f, const char *why)
{
    while (f->head)
        sl_mon_fanout_end(f, f->head, why);
}

static void mark(sl_mon_attach *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mark(sl_mon_attach *a, const char *fmt, ...)
{
    if (a->ending)
        return;
    a->ending = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->why, sizeof(a->why), fmt, ap);
    va_end(ap);
}

static void end_marked(sl_mon_fanout *f)
{
    sl_mon_attach *a = f->head;
    while (a) {
        sl_mon_attach *next = a->next;
        if (a->ending)
            sl_mon_fanout_end(f, a, a->why);
        a = next;
    }
}

/* Closes a's out_fd[s] (drained after EOF); frees a when nothing is left
 * (returns true then). */
static bool close_out(sl_mon_fanout *f, sl_mon_attach *a, int s)
{
    if (f->ops && f->ops->out_closing)
        f->ops->out_closing(a, s, f->ud);
    close(a->out_fd[s]);
    a->out_fd[s] = -1;
    sl_bufq_consume(&a->q[s], sl_bufq_len(&a->q[s]));
    return sl_mon_fanout_reap(f, a);
}

static void want(sl_mon_fanout *f, sl_mon_attach *a, int s, bool on)
{
    if (f->ops && f->ops->want_write)
        f->ops->want_write(a, s, on, f->ud);
}

/* A write error other than EAGAIN: the client closed its end. */
static void write_failed(sl_mon_attach *a, int s, int err)
{
    mark(a, "attach client closed its %s (%s)", out_names[s], strerror(err));
}

/* Writes what a's fd takes of its queue now. -1 after a write error. */
static int drain(sl_mon_attach *a, int s)
{
    while (sl_bufq_len(&a->q[s]) > 0) {
        struct iovec iov[WRITEV_MAX];
        int n = sl_bufq_peek(&a->q[s], iov, WRITEV_MAX);
        ssize_t w = writev(a->out_fd[s], iov, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (w < 0) {
            write_failed(a, s, errno);
            return -1;
        }
        sl_bufq_consume(&a->q[s], (size_t)w);
    }
    return 0;
}

static void feed_one(sl_mon_fanout *f, sl_mon_attach *a, int s, const char *p, size_t len)
{
    size_t done = 0;
    /* The client's reader works while we read the container: what it took
     * since the last wakeup makes room now, not only at the next one. */
    if (sl_bufq_len(&a->q[s]) > 0 && drain(a, s) < 0)
        return;
    if (sl_bufq_len(&a->q[s]) == 0) {
        ssize_t w = write(a->out_fd[s], p, len);
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            write_failed(a, s, errno);
            return;
        }
        done = w > 0 ? (size_t)w : 0;
    }
    if (done == len)
        return;
    size_t behind = sl_bufq_len(&a->q[0]) + sl_bufq_len(&a->q[1]);
    size_t max = a->backlog_max ? a->backlog_max : f->backlog_max;
    if (behind + (len - done) > max) {
        mark(a, "attach client fell more than %zu bytes behind (attach-backlog)", max);
        return;
    }
    bool was_empty = sl_bufq_len(&a->q[s]) == 0;
    if (sl_bufq_append(&a->q[s], p + done, len - done) != 0) {
        mark(a, "out of memory queueing attach output");
        return;
    }
    if (was_empty)
        want(f, a, s, true);
}

void sl_mon_fanout_feed(sl_mon_fanout *f, int s, const void *data, size_t len)
{
    if ((s != 0 && s != 1) || len == 0)
        return;
    for (sl_mon_attach *a = f->head; a; a = a->next)
        if (a->out_fd[s] >= 0 && !a->out_eof[s] && !a->ending)
            feed_one(f, a, s, data, len);
    end_marked(f);
}

void sl_mon_fanout_writable(sl_mon_fanout *f, sl_mon_attach *a, int s)
{
    if ((s != 0 && s != 1) || a->out_fd[s] < 0)
        return;
    if (drain(a, s) < 0) {
        end_marked(f);
        return;
    }
    if (sl_bufq_len(&a->q[s]) > 0)
        return;
    want(f, a, s, false);
    if (a->out_eof[s])
        close_out(f, a, s);
}

void sl_mon_fanout_eof(sl_mon_fanout *f, int s)
{
    if (s != 0 && s != 1)
        return;
    f->src_eof[s] = true;
    sl_mon_attach *a = f->head;
    while (a) {
        sl_mon_attach *next = a->next;
        if (a->out_fd[s] >= 0) {
            a->out_eof[s] = true;
            if (sl_bufq_len(&a->q[s]) == 0)
                close_out(f, a, s);
        }
        a = next;
    }
}

bool sl_mon_fanout_finish(sl_mon_fanout *f, sl_mon_attach *a)
{
    a->finishing = true;
    for (int s = 0; s < 2; s++)
        if (a->out_fd[s] >= 0)
            a->out_eof[s] = true;
    for (int s = 0; s < 2; s++)
        if (a->out_fd[s] >= 0 && sl_bufq_len(&a->q[s]) == 0 && close_out(f, a, s))
            return true;
    return sl_mon_fanout_reap(f, a);
}

bool sl_mon_fanout_add(sl_mon_fanout *f, sl_mon_attach *a)
{
    for (int s = 0; s < 2; s++) {
        if (f->src_eof[s] && a->out_fd[s] >= 0) {
            close(a->out_fd[s]); /* no watch exists yet */
            a->out_fd[s] = -1;
        }
    }
    if (a->out_fd[0] < 0 && a->out_fd[1] < 0 && a->in_fd < 0) {
        sl_mon_attach_free(a);
        return false;
    }
    a->next = f->head;
    f->head = a;
    return true;
}

sl_mon_attach *sl_mon_fanout_find(const sl_mon_fanout *f, const char *session)
{
    for (sl_mon_attach *a = f->head; a; a = a->next)
        if (strcmp(a->session, session) == 0)
            return a;
    return NULL;
}
