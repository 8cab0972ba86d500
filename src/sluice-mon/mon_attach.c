/* Attach sessions: per session fresh pipes whose sluiced ends travel with
 * the reply. Output reaches them through the container's fan-out; their
 * stdin is read here and funnelled into the container's stdin.
 *
 * The end of a client's stdin (as containerd and Docker treat it): with the
 * container's stdin_once and no terminal asked for, it closes the
 * container's stdin and the session goes on until the output ends;
 * otherwise the container's stdin stays open and the session ends, after a
 * short linger so that the answer to the client's last line reaches it. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "mon.h"
#include "sluice/error.h"

static char scratch[SL_MON_READ_CHUNK];

static void want_write(sl_mon_attach *a, int s, bool want, void *ud)
{
    (void)ud;
    if (a->watch[s])
        sl_mwatch_set(a->watch[s], want ? EPOLLOUT : 0);
}

static void out_closing(sl_mon_attach *a, int s, void *ud)
{
    (void)ud;
    sl_mwatch_free(a->watch[s]);
    a->watch[s] = NULL;
}

/* Whether a's end of stdin closes the container's stdin: stdin_once, for
 * an attach without a terminal (a terminal's input is never ended by a
 * client that leaves). */
static bool closes_stdin(const mon_ctr *c, const sl_mon_attach *a)
{
    return c->stdin_once && !a->tty;
}

static void ended(sl_mon_attach *a, const char *why, void *ud)
{
    mon_ctr *c = ud;
    for (int i = 0; i < 3; i++) {
        sl_mwatch_free(a->watch[i]);
        a->watch[i] = NULL;
    }
    mon_log(MON_INFO, "container %s: attach session %s ended: %s", c->id, a->session, why);
    mon_event(c->m, json_pack("{s:s, s:s, s:s}", "type", "attach_ended", "session", a->session,
                              "error", why));
    if (a->had_stdin && a->in_fd >= 0 && closes_stdin(c, a))
        mon_io_stdin_session_done(c);
}

const sl_mon_fanout_ops mon_attach_ops = {want_write, out_closing, ended};

/* ---- the end of a client's stdin ---- */

/* Ends a detached session: its client learns from the event that it ended
 * well, and gets EOF on its pipes after every byte queued for it. */
static void finish(mon_ctr *c, sl_mon_attach *a)
{
    mon_log(MON_INFO, "container %s: attach session %s detached", c->id, a->session);
    mon_event(c->m, json_pack("{s:s, s:s}", "type", "attach_ended", "session", a->session));
    sl_mon_fanout_finish(&c->io.fo, a);
}

/* When a detaching session may end (monotonic ms): once the container took
 * every stdin byte and its output was quiet for the linger time. */
static uint64_t due_ms(const mon_ctr *c, const sl_mon_attach *a, uint64_t now)
{
    uint64_t last = a->detach_ms, cap = a->detach_ms + SL_MON_ATTACH_LINGER_MAX_MS;
    if (c->io.last_out_ms > last)
        last = c->io.last_out_ms;
    bool taken = c->io.in_fd < 0 || sl_bufq_len(&c->io.in_q) == 0;
    uint64_t due = (taken ? last : now) + SL_MON_ATTACH_LINGER_MS;
    return due < cap ? due : cap;
}

static void linger_cb(void *data);

static void linger_arm(mon_ctr *c, uint64_t delay)
{
    if (!c->io.linger_timer)
        c->io.linger_timer = sl_mloop_timer(c->m->loop, delay, linger_cb, c);
}

static void linger_cb(void *data)
{
    mon_ctr *c = data;
    c->io.linger_timer = NULL;
    uint64_t now = sl_mono_ms(), next = UINT64_MAX;
    for (sl_mon_attach *a = c->io.fo.head, *n; a; a = n) {
        n = a->next; /* finish frees only a */
        if (!a->detach_ms || a->finishing)
            continue;
        uint64_t due = due_ms(c, a, now);
        if (due <= now)
            finish(c, a);
        else if (due < next)
            next = due;
    }
    if (next != UINT64_MAX)
        linger_arm(c, next - now);
}

static void detach(mon_ctr *c, sl_mon_attach *a)
{
    if (a->out_fd[0] < 0 && a->out_fd[1] < 0) {
        finish(c, a); /* nothing to wait for */
        return;
    }
    a->detach_ms = sl_mono_ms();
    linger_arm(c, SL_MON_ATTACH_LINGER_MS);
}

static void stdin_eof(mon_ctr *c, sl_mon_attach *a)
{
    sl_mwatch_free(a->watch[2]);
    a->watch[2] = NULL;
    close(a->in_fd);
    a->in_fd = -1;
    if (closes_stdin(c, a)) {
        mon_io_stdin_session_done(c);
        if (a->out_fd[0] >= 0 || a->out_fd[1] >= 0)
            return; /* on until the container's output ends */
    }
    detach(c, a);
}

static void stdin_cb(sl_mwatch *w, uint32_t events, void *data)
{
    (void)w;
    (void)events;
    sl_mon_attach *a = data;
    mon_ctr *c = a->owner;
    for (int i = 0; i < SL_MON_READS_PER_WAKE && !c->io.in_paused; i++) {
        ssize_t n = read(a->in_fd, scratch, sizeof(scratch));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            stdin_eof(c, a);
            return;
        }
        if (!mon_io_stdin_push(c, scratch, (size_t)n))
            mon_attach_stdin_pause(c, true);
    }
}

static void out_cb(sl_mon_attach *a, int s)
{
    mon_ctr *c = a->owner;
    sl_mon_fanout_writable(&c->io.fo, a, s);
}

static void out0_cb(sl_mwatch *w, uint32_t events, void *data)
{
    (void)w;
    (void)events;
    out_cb(data, 0);
}

static void out1_cb(sl_mwatch *w, uint32_t events, void *data)
{
    (void)w;
    (void)events;
    out_cb(data, 1);
}

void mon_attach_stdin_pause(mon_ctr *c, bool pause)
{
    c->io.in_paused = pause;
    for (sl_mon_attach *a = c->io.fo.head; a; a = a->next)
        if (a->watch[2])
            sl_mwatch_set(a->watch[2], pause ? 0 : EPOLLIN);
}

static unsigned count_sessions(const mon_ctr *c)
{
    unsigned n = 0;
    for (sl_mon_attach *a = c->io.fo.head; a; a = a->next)
        n++;
    return n;
}

/* Checks an attach request against its container; NULL or why not. */
static const char *check(const mon_ctr *c, const char *session, bool in, bool out, bool err)
{
    if (c->state != CTR_CREATED && c->state != CTR_RUNNING)
        return "container is not created or running";
    if (!sl_mon_valid_id(session))
        return "invalid session id";
    if (!in && !out && !err)
        return "one of stdin, stdout and stderr is required";
    if (c->tty && err)
        return "a tty container has no separate stderr";
    if (in && !c->stdin)
        return "container was created without stdin";
    if (sl_mon_fanout_find(&c->io.fo, session))
        return "attach session exists";
    if (count_sessions(c) >= SL_MON_MAX_SESSIONS)
        return "too many attach sessions";
    return NULL;
}

/* Our end non-blocking, both close-on-exec; an output pipe (ours = 1)
 * sized to one wakeup's reads (best effort: pipe-max-size may be lower). */
static int make_pipe(int p[2], int ours)
{
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    fcntl(p[ours], F_SETFL, O_NONBLOCK);
    if (ours == 1)
        (void)fcntl(p[1], F_SETPIPE_SZ, (int)SL_MON_ATTACH_PIPE_SIZE);
    return 0;
}

static bool watch_session(mon_ctr *c, sl_mon_attach *a)
{
    static const sl_mwatch_cb cbs[2] = {out0_cb, out1_cb};
    for (int s = 0; s < 2; s++)
        if (a->out_fd[s] >= 0 &&
            !(a->watch[s] = sl_mloop_watch(c->m->loop, a->out_fd[s], 0, cbs[s], a)))
            return false;
    if (a->in_fd >= 0 && !(a->watch[2] = sl_mloop_watch(
                               c->m->loop, a->in_fd, c->io.in_paused ? 0 : EPOLLIN, stdin_cb, a)))
        return false;
    return true;
}

/* The container's terminal takes the attaching client's size (0 = none). */
static void initial_size(mon_ctr *c, int w, int h)
{
    int fd = c->io.out_fd[0] >= 0 ? c->io.out_fd[0] : c->io.in_fd;
    if (c->tty && w > 0 && h > 0 && fd >= 0)
        (void)mon_set_winsize(fd, w, h);
}

void mon_attach(mon *m, mon_req *r, const json_t *msg)
{
    mon_ctr *c = mon_ctr_find(m, sl_mon_str(msg, "container_id"));
    bool in, out, err, tty;
    int64_t w, h, backlog;
    if (sl_mon_bool(msg, "stdin", false, &in) || sl_mon_bool(msg, "stdout", false, &out) ||
        sl_mon_bool(msg, "stderr", false, &err) || sl_mon_bool(msg, "tty", c && c->tty, &tty)) {
        mon_reply_err(m, r, "stdin, stdout, stderr and tty must be booleans");
        return;
    }
    if (sl_mon_int(msg, "width", 0, 65535, 0, &w) || sl_mon_int(msg, "height", 0, 65535, 0, &h)) {
        mon_reply_err(m, r, "width and height must be 0..65535");
        return;
    }
    if (sl_mon_int(msg, "backlog", SL_MON_ATTACH_BACKLOG_MIN, SL_MON_ATTACH_BACKLOG_MAX,
                   SL_MON_ATTACH_BACKLOG, &backlog)) {
        mon_reply_err(m, r, "backlog must be %u..%u bytes", SL_MON_ATTACH_BACKLOG_MIN,
                      SL_MON_ATTACH_BACKLOG_MAX);
        return;
    }
    if (!c) {
        mon_reply_err(m, r, "no such container");
        return;
    }
    const char *session = sl_mon_str(msg, "session");
    const char *why = check(c, session, in, out, err);
    if (why) {
        mon_reply_err(m, r, "%s", why);
        return;
    }
    sl_mon_attach *a = sl_mon_attach_new(session);
    int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1};
    if (!a || (in && make_pipe(pin, 0) < 0) || (out && make_pipe(pout, 1) < 0) ||
        (err && make_pipe(perr, 1) < 0)) {
        int e = errno;
        int all[6] = {pin[0], pin[1], pout[0], pout[1], perr[0], perr[1]};
        for (int i = 0; i < 6; i++)
            if (all[i] >= 0)
                close(all[i]);
        sl_mon_attach_free(a);
        {
            mon_reply_err(m, r, "attach pipes: %s", strerror(e));
            return;
        }
    }
    a->owner = c;
    a->in_fd = pin[0];
    a->had_stdin = in;
    a->tty = tty;
    a->backlog_max = (size_t)backlog;
    a->out_fd[0] = pout[1];
    a->out_fd[1] = perr[1];
    initial_size(c, (int)w, (int)h);
    int fds[3];
    const char *names[3];
    size_t n = 0;
    if (in)
        fds[n] = pin[1], names[n++] = "stdin";
    if (out)
        fds[n] = pout[0], names[n++] = "stdout";
    if (err)
        fds[n] = perr[0], names[n++] = "stderr";
    mon_reply(m, r, NULL, fds, names, n);
    if (!sl_mon_fanout_add(&c->io.fo, a))
        return;
    if (!watch_session(c, a))
        sl_mon_fanout_end(&c->io.fo, a, "cannot watch the session's pipes");
}

int mon_attach_resize(mon *m, const char *session, int w, int h, const char **err)
{
    for (mon_ctr *c = m->ctrs; c; c = c->next) {
        if (!sl_mon_fanout_find(&c->io.fo, session))
            continue;
        if (!c->tty) {
            *err = "the container has no terminal";
            return -1;
        }
        int fd = c->io.out_fd[0] >= 0 ? c->io.out_fd[0] : c->io.in_fd;
        if (fd >= 0 && mon_set_winsize(fd, w, h) < 0) {
            *err = "TIOCSWINSZ failed";
            return -1;
        }
        return 0;
    }
    *err = "no such attach session";
    return -1;
}
