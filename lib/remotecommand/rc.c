#include "remotecommand/rc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "util/bufq.h"
#include "util/rbuf.h"
#include "remotecommand/proc.h"
#include "remotecommand/rc_resize.h"
#include "remotecommand/rc_status.h"
#include "sluice/error.h"

/* One process endpoint watched with uv_poll. With a tty one pump carries
 * both directions (libuv allows one poll handle per fd). */
typedef struct pump {
    sl_rc *rc;
    uv_poll_t h;
    int fd;
    int out_ch;    /* output channel fed from this fd, or -1 */
    bool is_stdin; /* stdin bytes are written to this fd */
    bool out_eof;  /* reading ended */
    bool started;  /* uv_poll_init done */
    int events;    /* currently polled */
} pump;

struct sl_rc {
    uv_loop_t *loop;
    const sl_runtime *rt;
    sl_rc_params p;
    const sl_rc_transport *t;
    void *targ;
    sl_proc *proc;
    bool tty, want_in, want_out, want_err;

    pump pumps[3]; /* stdin, stdout, stderr; or [0] = pty */
    int npumps;
    pump *stdin_pump;
    sl_bufq stdin_q;
    bool stdin_eof;    /* peer closed stdin; close after the queue drains */
    bool stdin_closed; /* the process's stdin is closed */
    bool input_paused;

    sl_rc_resize resize;
    sl_term_size size;
    bool have_size;
    bool size_waiting; /* the start waits for the first size */
    uv_timer_t size_timer;

    bool started, ended, status_sent, closing;
    sl_rc_outcome outcome;
    int exit_code;
    char *message;

    uv_timer_t idle;
    uint64_t last_activity;
    int open_handles;
};

static void maybe_finish(sl_rc *rc);
static void pump_update(pump *pp);

static void touch(sl_rc *rc)
{
    rc->last_activity = uv_now(rc->loop);
}

static void idle_cb(uv_timer_t *h)
{
    sl_rc *rc = h->data;
    uint64_t quiet = uv_now(rc->loop) - rc->last_activity;
    if (quiet >= rc->p.idle_timeout_ms) {
        rc->t->abort(rc->targ, "stream idle timeout");
        return;
    }
    uv_timer_start(&rc->idle, idle_cb, rc->p.idle_timeout_ms - quiet, 0);
}

sl_rc *sl_rc_new(uv_loop_t *loop, const sl_runtime *rt, const sl_rc_params *p,
                 const sl_rc_transport *t, void *targ)
{
    sl_rc *rc = calloc(1, sizeof(*rc));
    sl_proc *proc = sl_proc_new(rt);
    if (!rc || !proc) {
        free(rc);
        free(proc);
        sl_stream_request_free(p->req);
        return NULL;
    }
    rc->loop = loop;
    rc->rt = rt;
    rc->p = *p;
    rc->t = t;
    rc->targ = targ;
    rc->proc = proc;
    proc->rc = rc;
    if (p->req->kind == SL_STREAM_EXEC) {
        const sl_exec_request *e = &p->req->u.exec;
        rc->tty = e->tty, rc->want_in = e->in, rc->want_out = e->out, rc->want_err = e->err;
    } else {
        const sl_attach_request *a = &p->req->u.attach;
        rc->tty = a->tty, rc->want_in = a->in, rc->want_out = a->out, rc->want_err = a->err;
    }
    if (rc->tty)
        rc->want_err = false; /* merged on the pty */
    sl_bufq_init(&rc->stdin_q);
    sl_rc_resize_init(&rc->resize);
    uv_timer_init(loop, &rc->idle);
    rc->idle.data = rc;
    uv_timer_init(loop, &rc->size_timer);
    rc->size_timer.data = rc;
    rc->open_handles = 2;
    touch(rc);
    if (p->idle_timeout_ms)
        uv_timer_start(&rc->idle, idle_cb, p->idle_timeout_ms, 0);
    return rc;
}

static void start_now(sl_rc *rc)
{
    const sl_term_size *initial = rc->have_size ? &rc->size : NULL;
    const sl_runtime_ops *ops = rc->rt->ops;
    sl_proc *proc = rc->proc;
    rc->size_waiting = false;
    uv_timer_stop(&rc->size_timer);
    proc->state = SL_PROC_STARTING;
    if (rc->p.req->kind == SL_STREAM_EXEC)
        ops->exec_start(rc->rt->data, proc, &rc->p.req->u.exec, initial);
    else
        ops->attach_start(rc->rt->data, proc, &rc->p.req->u.attach, initial);
}

static void size_timer_cb(uv_timer_t *h)
{
    sl_rc *rc = h->data;
    if (rc->size_waiting && !rc->closing)
        start_now(rc); /* no size came: the runtime's default */
}

/* Clients send the size right after setting up the streams, but a process
 * started before it arrives reads a 0x0 terminal (`stty size` fails): the
 * kubelet's runtimes have that race, we wait for the size instead. */
void sl_rc_start(sl_rc *rc)
{
    if (rc->tty && !rc->have_size && rc->p.tty_size_wait_ms > 0) {
        rc->size_waiting = true;
        uv_timer_start(&rc->size_timer, size_timer_cb, rc->p.tty_size_wait_ms, 0);
        return;
    }
    start_now(rc);
}

/* ---- process endpoints ---- */

static void apply_size(sl_rc *rc)
{
    if (!rc->started || !rc->have_size || !rc->tty)
        return;
    if (rc->rt->ops->resize) {
        rc->rt->ops->resize(rc->rt->data, rc->proc, rc->size);
    } else if (rc->npumps > 0) {
        struct winsize ws = {.ws_row = rc->size.height, .ws_col = rc->size.width};
        (void)ioctl(rc->pumps[0].fd, TIOCSWINSZ, &ws);
    }
}

/* Frees the session once its last libuv handle has closed. */
static void handle_released(sl_rc *rc)
{
    if (--rc->open_handles > 0)
        return;
    sl_bufq_fini(&rc->stdin_q);
    sl_stream_request_free(rc->p.req);
    free(rc->message);
    free(rc);
}

static void pump_closed_cb(uv_handle_t *h)
{
    pump *pp = h->data;
    close(pp->fd);
    pp->fd = -1;
    handle_released(pp->rc);
}

static void pump_close(pump *pp)
{
    if (pp->fd < 0 || uv_is_closing((uv_handle_t *)&pp->h))
        return;
    uv_poll_stop(&pp->h);
    uv_close((uv_handle_t *)&pp->h, pump_closed_cb);
}

/* Reads until EAGAIN, EOF or congestion. */
static void pump_read(pump *pp)
{
    sl_rc *rc = pp->rc;
    uint8_t *buf = sl_rbuf_get(SL_RBUF_PROC); /* the send below copies */
    if (!buf) {
        rc->t->abort(rc->targ, "out of memory");
        return;
    }
    for (int rounds = 0; rounds < 16 && !pp->out_eof; rounds++) {
        if (rc->t->congested(rc->targ, pp->out_ch))
            break;
        ssize_t n = read(pp->fd, buf, SL_RBUF_SIZE);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) { /* EOF, or EIO on a pty whose slave side is gone */
            pp->out_eof = true;
            rc->t->close_channel(rc->targ, pp->out_ch);
            break;
        }
        touch(rc);
        if (rc->t->send(rc->targ, pp->out_ch, buf, (size_t)n) < 0) {
            rc->t->abort(rc->targ, "transport send failed");
            return;
        }
    }
    if (pp->out_eof && pp->is_stdin && !rc->stdin_closed) {
        rc->stdin_closed = true; /* the pty is gone: stdin cannot go anywhere */
        sl_bufq_consume(&rc->stdin_q, sl_bufq_len(&rc->stdin_q));
    }
    pump_update(pp);
    maybe_finish(rc);
}

/* An attach shares the container's stdin and terminal with the container
 * and other clients: this client's end is the runtime's call (runtime.h). */
static void attach_stdin_close(sl_rc *rc)
{
    pump *pp = rc->stdin_pump;
    if (pp->out_ch < 0)
        pump_close(pp); /* its own stdin fd: EOF for the runtime */
    if (rc->rt->ops->attach_stdin_eof)
        rc->rt->ops->attach_stdin_eof(rc->rt->data, rc->proc);
}

static void stdin_close_now(sl_rc *rc)
{
    rc->stdin_closed = true;
    pump *pp = rc->stdin_pump;
    if (rc->p.req->kind == SL_STREAM_ATTACH) {
        attach_stdin_close(rc);
        return;
    }
    if (rc->tty) {
        /* The master also carries output: signal EOF the way a terminal
         * user would (VEOF, ^D) instead of closing it. */
        static const uint8_t eot = 4;
        (void)!write(pp->fd, &eot, 1);
        return;
    }
    pump_close(pp);
}

static void pump_write(pump *pp)
{
    sl_rc *rc = pp->rc;
    while (sl_bufq_len(&rc->stdin_q) > 0) {
        struct iovec iov[16];
        int n = sl_bufq_peek(&rc->stdin_q, iov, 16);
        ssize_t w = writev(pp->fd, iov, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (w < 0) { /* EPIPE: the process closed its stdin; drop input */
            sl_bufq_consume(&rc->stdin_q, sl_bufq_len(&rc->stdin_q));
            rc->stdin_eof = true;
            break;
        }
        sl_bufq_consume(&rc->stdin_q, (size_t)w);
    }
    if (rc->input_paused && sl_bufq_len(&rc->stdin_q) <= rc->p.stdin_high_water / 2) {
        rc->input_paused = false;
        rc->t->pause_input(rc->targ, SL_CH_STDIN, false);
    }
    if (sl_bufq_len(&rc->stdin_q) == 0 && rc->stdin_eof && !rc->stdin_closed)
        stdin_close_now(rc);
    else
        pump_update(pp);
}

static void pump_cb(uv_poll_t *h, int status, int events)
{
    pump *pp = h->data;
    if (status < 0)
        events = UV_READABLE | UV_WRITABLE; /* let read/write see the error */
    if ((events & UV_WRITABLE) && pp->is_stdin && !pp->rc->stdin_closed)
        pump_write(pp);
    if (pp->fd >= 0 && (events & (UV_READABLE | UV_DISCONNECT)) && pp->out_ch >= 0)
        pump_read(pp);
}

static void pump_update(pump *pp)
{
    sl_rc *rc = pp->rc;
    if (pp->fd < 0 || uv_is_closing((uv_handle_t *)&pp->h))
        return;
    int ev = 0;
    if (pp->out_ch >= 0 && !pp->out_eof && !rc->t->congested(rc->targ, pp->out_ch))
        ev |= UV_READABLE;
    if (pp->is_stdin && !rc->stdin_closed && sl_bufq_len(&rc->stdin_q) > 0)
        ev |= UV_WRITABLE;
    if (ev == pp->events)
        return;
    pp->events = ev;
    if (ev)
        uv_poll_start(&pp->h, ev, pump_cb);
    else
        uv_poll_stop(&pp->h);
}

static void pump_add(sl_rc *rc, int fd, int out_ch, bool is_stdin)
{
    pump *pp = &rc->pumps[rc->npumps];
    memset(pp, 0, sizeof(*pp));
    pp->rc = rc;
    pp->fd = fd;
    pp->out_ch = out_ch;
    pp->is_stdin = is_stdin;
    if (uv_poll_init(rc->loop, &pp->h, fd) < 0) {
        close(fd);
        pp->fd = -1;
        pp->out_eof = true;
        return;
    }
    pp->h.data = pp;
    pp->started = true;
    rc->npumps++;
    rc->open_handles++;
    if (is_stdin)
        rc->stdin_pump = pp;
}

static void close_unwanted(int fd)
{
    if (fd >= 0)
        close(fd);
}

static void attach_endpoints(sl_rc *rc, const sl_proc_endpoints *ep)
{
    if (rc->tty && ep->pty_fd >= 0) {
        pump_add(rc, ep->pty_fd, rc->want_out ? SL_CH_STDOUT : -1, rc->want_in);
        close_unwanted(ep->stdin_fd);
        close_unwanted(ep->stdout_fd);
        close_unwanted(ep->stderr_fd);
    } else {
        close_unwanted(ep->pty_fd);
        if (rc->want_in && ep->stdin_fd >= 0)
            pump_add(rc, ep->stdin_fd, -1, true);
        else
            close_unwanted(ep->stdin_fd);
        if (rc->want_out && ep->stdout_fd >= 0)
            pump_add(rc, ep->stdout_fd, SL_CH_STDOUT, false);
        else
            close_unwanted(ep->stdout_fd);
        if (rc->want_err && ep->stderr_fd >= 0)
            pump_add(rc, ep->stderr_fd, SL_CH_STDERR, false);
        else
            close_unwanted(ep->stderr_fd);
    }
    if (!rc->stdin_pump)
        rc->stdin_closed = true;
}

void sl_rc_proc_started(sl_rc *rc, const sl_proc_endpoints *ep)
{
    rc->started = true;
    attach_endpoints(rc, ep);
    apply_size(rc);
    for (int i = 0; i < rc->npumps; i++)
        pump_update(&rc->pumps[i]);
    if (rc->stdin_pump && rc->stdin_eof && sl_bufq_len(&rc->stdin_q) == 0)
        stdin_close_now(rc);
    else if (rc->stdin_pump)
        pump_write(rc->stdin_pump);
}

void sl_rc_proc_ended(sl_rc *rc, sl_rc_outcome outcome, int code, const char *message)
{
    rc->ended = true;
    rc->outcome = outcome;
    rc->exit_code = code;
    free(rc->message);
    rc->message = message ? strdup(message) : NULL;
    maybe_finish(rc);
}

/* The status goes out once the process ended and every output reached EOF. */
static void maybe_finish(sl_rc *rc)
{
    if (!rc->ended || rc->status_sent || rc->closing)
        return;
    for (int i = 0; i < rc->npumps; i++)
        if (rc->pumps[i].out_ch >= 0 && !rc->pumps[i].out_eof)
            return;
    rc->status_sent = true;
    char *st;
    size_t len;
    int attach = rc->p.req->kind == SL_STREAM_ATTACH;
    if (sl_rc_status_format(rc->p.json_status, attach, rc->outcome, rc->exit_code, rc->message, &st,
                            &len) < 0) {
        rc->t->abort(rc->targ, "out of memory");
        return;
    }
    if (st)
        rc->t->send(rc->targ, SL_CH_ERROR, (const uint8_t *)st, len);
    free(st);
    rc->t->close_channel(rc->targ, SL_CH_ERROR);
    rc->t->done(rc->targ);
}

/* ---- peer input ---- */

static void on_size(void *arg, sl_term_size size)
{
    sl_rc *rc = arg;
    if (rc->closing || size.width == 0 || size.height == 0)
        return; /* the kubelet skips empty sizes too */
    rc->size = size;
    rc->have_size = true;
    if (rc->size_waiting)
        start_now(rc);
    else
        apply_size(rc);
}

void sl_rc_input(sl_rc *rc, int ch, const uint8_t *data, size_t len)
{
    if (rc->closing)
        return;
    touch(rc);
    if (ch == SL_CH_RESIZE) {
        if (rc->tty)
            (void)sl_rc_resize_feed(&rc->resize, data, len, on_size, rc);
        return;
    }
    if (ch != SL_CH_STDIN || !rc->want_in || rc->stdin_eof || (rc->started && rc->stdin_closed))
        return;
    /* Nothing queued: straight to the process, and only what it does not
     * take now is queued (one copy fewer while it keeps up). An error is
     * left to pump_write, which meets it again and handles it. */
    if (rc->stdin_pump && rc->stdin_pump->fd >= 0 && !rc->stdin_closed &&
        sl_bufq_len(&rc->stdin_q) == 0 && len > 0) {
        ssize_t w;
        do
            w = write(rc->stdin_pump->fd, data, len);
        while (w < 0 && errno == EINTR);
        if (w > 0) {
            data += w;
            len -= (size_t)w;
            if (len == 0)
                return;
        }
    }
    if (sl_bufq_append(&rc->stdin_q, data, len) < 0) {
        rc->t->abort(rc->targ, "out of memory");
        return;
    }
    if (!rc->input_paused && sl_bufq_len(&rc->stdin_q) > rc->p.stdin_high_water) {
        rc->input_paused = true;
        rc->t->pause_input(rc->targ, SL_CH_STDIN, true);
    }
    if (rc->stdin_pump)
        pump_write(rc->stdin_pump);
}

void sl_rc_input_eof(sl_rc *rc, int ch)
{
    if (ch != SL_CH_STDIN || rc->stdin_eof || rc->closing)
        return;
    rc->stdin_eof = true;
    if (rc->stdin_pump && !rc->stdin_closed && sl_bufq_len(&rc->stdin_q) == 0)
        stdin_close_now(rc);
}

void sl_rc_output_drained(sl_rc *rc)
{
    if (rc->closing)
        return;
    for (int i = 0; i < rc->npumps; i++) {
        pump *pp = &rc->pumps[i];
        if (pp->out_ch >= 0 && !pp->out_eof && pp->fd >= 0)
            pump_read(pp); /* read what is there now, then re-arm */
    }
}

static void timer_closed_cb(uv_handle_t *h)
{
    handle_released(h->data);
}

void sl_rc_close(sl_rc *rc)
{
    if (rc->closing)
        return;
    rc->closing = true;
    sl_proc_detach(rc->proc); /* cancels it if it still runs */
    rc->proc = NULL;
    for (int i = 0; i < rc->npumps; i++)
        pump_close(&rc->pumps[i]);
    uv_close((uv_handle_t *)&rc->idle, timer_closed_cb);
    uv_close((uv_handle_t *)&rc->size_timer, timer_closed_cb);
}
