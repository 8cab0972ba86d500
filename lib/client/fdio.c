/* Local fd pump (see fdio.h). sl_fdio_write() writes at once when nothing
 * is queued, but errors surface only from loop callbacks, so no callback
 * ever fires from inside sl_fdio_write(). */
#include "client/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/bufq.h"
#include "sluice/error.h"

#define READ_ROUNDS 16 /* reads per readiness event, so one fd cannot starve the loop */
#define WRITE_IOV 16

struct sl_fdio {
    uv_loop_t *loop;
    int fd;
    bool rd, wr, owned, pollable, is_socket;
    int orig_flags; /* -1: unchanged */
    uv_poll_t poll;
    uv_idle_t idle; /* direct mode */
    bool poll_init, idle_init, idle_on;
    int events;
    sl_bufq q;
    bool read_paused, read_done, write_failed, shut_req, shut_done, freed;
    int handles;
    sl_fdio_callbacks cb;
    void *arg;
    uint8_t *rbuf;
};

static void update(sl_fdio *f);

static void read_end(sl_fdio *f, int err)
{
    f->read_done = true;
    if (f->cb.on_read_end)
        f->cb.on_read_end(f->arg, err);
}

/* Reads up to `rounds` chunks; stops when paused, done or freed. */
static void do_read(sl_fdio *f, int rounds)
{
    for (int i = 0; i < rounds && !f->read_paused && !f->read_done && !f->freed; i++) {
        ssize_t n = read(f->fd, f->rbuf, SL_FDIO_READ_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            read_end(f, n < 0 ? errno : 0);
            return;
        }
        if (f->cb.on_read)
            f->cb.on_read(f->arg, f->rbuf, (size_t)n);
    }
}

static ssize_t write_some(sl_fdio *f, struct iovec *iov, int n)
{
    if (!f->is_socket)
        return writev(f->fd, iov, n);
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    return sendmsg(f->fd, &m, MSG_NOSIGNAL);
}

static void do_write(sl_fdio *f)
{
    size_t written = 0;
    while (sl_bufq_len(&f->q) > 0 && !f->write_failed) {
        struct iovec iov[WRITE_IOV];
        int n = sl_bufq_peek(&f->q, iov, WRITE_IOV);
        ssize_t w = write_some(f, iov, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (w < 0) {
            int err = errno;
            f->write_failed = true;
            sl_bufq_fini(&f->q);
            if (f->cb.on_write_error)
                f->cb.on_write_error(f->arg, err);
            return;
        }
        sl_bufq_consume(&f->q, (size_t)w);
        written += (size_t)w;
    }
    if (sl_bufq_len(&f->q) == 0 && f->shut_req && !f->shut_done) {
        f->shut_done = true;
        if (f->is_socket)
            shutdown(f->fd, SHUT_WR);
    }
    if (written && f->cb.on_written)
        f->cb.on_written(f->arg, written);
}

static void poll_cb(uv_poll_t *h, int status, int events)
{
    sl_fdio *f = h->data;
    if (status < 0) /* let read/write find the error */
        events = UV_READABLE | UV_WRITABLE;
    if ((events & UV_WRITABLE) && !f->freed)
        do_write(f);
    if ((events & (UV_READABLE | UV_DISCONNECT)) && !f->freed)
        do_read(f, READ_ROUNDS);
    if (!f->freed)
        update(f);
}

/* Direct mode: files are always ready; one step per loop turn. */
static void idle_cb(uv_idle_t *h)
{
    sl_fdio *f = h->data;
    if (sl_bufq_len(&f->q) > 0 || (f->shut_req && !f->shut_done))
        do_write(f);
    if (!f->freed)
        do_read(f, 1);
    if (!f->freed)
        update(f);
}

static bool want_read(const sl_fdio *f)
{
    return f->rd && !f->read_paused && !f->read_done;
}

static bool want_write(const sl_fdio *f)
{
    return f->wr && !f->write_failed && (sl_bufq_len(&f->q) > 0 || (f->shut_req && !f->shut_done));
}

static void update(sl_fdio *f)
{
    if (f->freed)
        return;
    if (!f->pollable) {
        bool on = want_read(f) || want_write(f);
        if (on && !f->idle_on)
            uv_idle_start(&f->idle, idle_cb);
        else if (!on && f->idle_on)
            uv_idle_stop(&f->idle);
        f->idle_on = on;
        return;
    }
    int ev = (want_read(f) ? UV_READABLE : 0) | (want_write(f) ? UV_WRITABLE : 0);
    if (ev == f->events)
        return;
    f->events = ev;
    if (ev)
        uv_poll_start(&f->poll, ev, poll_cb);
    else
        uv_poll_stop(&f->poll);
}

static int setup(sl_fdio *f)
{
    struct stat st;
    if (fstat(f->fd, &st) < 0)
        return SL_ERR_INVAL;
    f->is_socket = S_ISSOCK(st.st_mode);
    f->orig_flags = -1;
    if (uv_poll_init(f->loop, &f->poll, f->fd) == 0) {
        f->poll_init = f->pollable = true;
        f->poll.data = f;
        f->handles++;
        int fl = fcntl(f->fd, F_GETFL);
        if (fl >= 0 && !(fl & O_NONBLOCK) && fcntl(f->fd, F_SETFL, fl | O_NONBLOCK) == 0)
            f->orig_flags = fl;
        return SL_OK;
    }
    /* epoll refuses regular files and some devices: read and write them
     * directly, they never block for long */
    if (uv_idle_init(f->loop, &f->idle) != 0)
        return SL_ERR_SYS;
    f->idle_init = true;
    f->idle.data = f;
    f->handles++;
    return SL_OK;
}

int sl_fdio_new(uv_loop_t *loop, int fd, bool rd, bool wr, bool owned, const sl_fdio_callbacks *cb,
                void *arg, sl_fdio **out)
{
    if (fd < 0)
        return SL_ERR_INVAL;
    sl_fdio *f = calloc(1, sizeof(*f));
    if (!f)
        return SL_ERR_NOMEM;
    f->rbuf = rd ? malloc(SL_FDIO_READ_CHUNK) : NULL;
    if (rd && !f->rbuf) {
        free(f);
        return SL_ERR_NOMEM;
    }
    f->loop = loop;
    f->fd = fd;
    f->rd = rd;
    f->wr = wr;
    f->cb = *cb;
    f->arg = arg;
    f->read_paused = true;
    sl_bufq_init(&f->q);
    int rc = setup(f);
    if (rc != SL_OK) {
        free(f->rbuf);
        free(f);
        return rc;
    }
    f->owned = owned;
    *out = f;
    return SL_OK;
}

void sl_fdio_read_pause(sl_fdio *f, bool pause)
{
    if (f->freed || f->read_paused == pause)
        return;
    f->read_paused = pause;
    update(f);
}

/* With nothing queued, write at once: no copy and no queue chunk for a
 * reader that keeps up. Only full success or EAGAIN ends it here; any
 * error leaves the bytes queued, so do_write meets it again and reports
 * it through the callback, outside this call. */
static size_t write_direct(sl_fdio *f, const uint8_t *data, size_t len)
{
    size_t done = 0;
    while (done < len && sl_bufq_len(&f->q) == 0) {
        struct iovec iov = {.iov_base = (void *)(data + done), .iov_len = len - done};
        ssize_t w = write_some(f, &iov, 1);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    return done;
}

int sl_fdio_write(sl_fdio *f, const uint8_t *data, size_t len)
{
    if (f->freed || f->write_failed || f->shut_req || !f->wr)
        return SL_ERR_CLOSED;
    size_t done = write_direct(f, data, len);
    if (done == len)
        return SL_OK;
    int rc = sl_bufq_append(&f->q, data + done, len - done);
    if (rc == SL_OK)
        update(f);
    return rc;
}

size_t sl_fdio_queued(const sl_fdio *f)
{
    return sl_bufq_len(&f->q);
}

void sl_fdio_shutdown(sl_fdio *f)
{
    if (f->freed || f->shut_req)
        return;
    f->shut_req = true;
    update(f);
}

void sl_fdio_reset(sl_fdio *f)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    if (!f->freed && f->is_socket)
        setsockopt(f->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

bool sl_fdio_failed(const sl_fdio *f)
{
    return f->write_failed;
}

static void closed_cb(uv_handle_t *h)
{
    sl_fdio *f = h->data;
    if (--f->handles > 0)
        return;
    if (f->owned)
        close(f->fd);
    sl_bufq_fini(&f->q);
    free(f->rbuf);
    free(f);
}

void sl_fdio_free(sl_fdio *f)
{
    if (!f || f->freed)
        return;
    f->freed = true;
    if (f->orig_flags >= 0 && !f->owned)
        fcntl(f->fd, F_SETFL, f->orig_flags);
    if (f->poll_init)
        uv_close((uv_handle_t *)&f->poll, closed_cb);
    if (f->idle_init)
        uv_close((uv_handle_t *)&f->idle, closed_cb);
}
