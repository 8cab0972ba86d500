/* A container's stdio: reads its output as it comes (never waiting for
 * anyone), writes it to the CRI log and fans it out to attach sessions;
 * funnels the sessions' stdin into the container's stdin as its single
 * writer, with a bounded queue that pauses the sessions' input.
 *
 * Output from a pipe goes through the journal (mon_journal.h): taken into
 * a file, logged (an unfinished last line as a P record, as CRI-O does;
 * its end follows in the next record), then let go. A monitor killed at
 * any point leaves a chunk it had not logged whole in the journal, and
 * the rest in the pipe, for the monitor that adopts the container
 * (sluiced keeps a duplicate of the read end): nothing is lost and
 * nothing logged twice. A terminal's output is read: a kill can lose the
 * read in hand. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mon.h"

static char scratch[SL_MON_READ_CHUNK]; /* one thread: one read at a time */

void mon_io_init(mon_io *io, mon_ctr *c)
{
    memset(io, 0, sizeof(*io));
    io->out_fd[0] = io->out_fd[1] = io->in_fd = -1;
    io->log.fd = -1;
    mon_journal_init(&io->journal);
    sl_bufq_init(&io->in_q);
    sl_mon_fanout_init(&io->fo, SL_MON_ATTACH_BACKLOG, &mon_attach_ops, c);
}

/* The log_dropped event: the totals since the container started, the
 * error while records are dropped, update when nothing changed but the
 * totals. */
static void send_dropped(mon_ctr *c, bool update)
{
    const sl_mon_log *l = &c->io.log;
    json_t *ev = json_pack("{s:s, s:s, s:s, s:I, s:I}", "type", "log_dropped", "container_id",
                           c->id, "path", l->path, "dropped_bytes", (json_int_t)l->dropped,
                           "dropped_records", (json_int_t)l->dropped_records);
    if (ev && l->err)
        json_object_set_new(ev, "error", json_string(strerror(l->err)));
    if (ev && update)
        json_object_set_new(ev, "update", json_true());
    c->io.drop_sent = l->dropped;
    c->io.drop_sent_ms = sl_mono_ms();
    mon_event(c->m, ev);
}

/* Writes to the log failed for the first time, or work again: the
 * monitor's log, sluiced (event log_dropped) and the status record say so,
 * with what was dropped since the container started. */
static void log_health(mon_ctr *c, uint64_t bytes_before, uint64_t records_before)
{
    const sl_mon_log *l = &c->io.log;
    if (l->err) {
        mon_log(MON_WARN,
                "container %s: log %s: %s: dropping whole records until it can be written", c->id,
                l->path, strerror(l->err));
        c->io.drop_mark[0] = bytes_before;
        c->io.drop_mark[1] = records_before;
    } else {
        mon_log(MON_WARN,
                "container %s: log %s can be written again; %llu bytes (%llu records) "
                "were dropped",
                c->id, l->path, (unsigned long long)(l->dropped - c->io.drop_mark[0]),
                (unsigned long long)(l->dropped_records - c->io.drop_mark[1]));
    }
    if (l->torn)
        mon_log(MON_ERR, "container %s: log %s could not be cut back: it ends inside a record",
                c->id, l->path);
    send_dropped(c, false);
    mon_status_write(c);
}

/* While records are being dropped, sluiced hears the growing totals at
 * most every SL_MON_LOG_DROP_REPORT_MS (and at a stream's end), so its
 * drop counter moves with the loss rather than only when the disk
 * recovers. */
static void drop_update(mon_ctr *c, bool now)
{
    mon_io *io = &c->io;
    if (!io->log.err || io->log.dropped == io->drop_sent)
        return;
    if (now || sl_mono_ms() - io->drop_sent_ms >= SL_MON_LOG_DROP_REPORT_MS)
        send_dropped(c, true);
}

/* A journal file failed: stream s is read from now on. */
static void journal_failed(mon_ctr *c, int s, const char *what)
{
    mon_log(MON_WARN, "container %s: output journal: %s: %s; reading output directly", c->id, what,
            strerror(errno));
    c->io.journaled[s] = false;
}

/* Logs output of stream s (NULL: its end; cut: an unfinished last line
 * is logged now, as a P record), reporting when the log's writability
 * changes. The chunk in a journaled stream's journal is let go once its
 * records are written. */
static void log_output(mon_ctr *c, int s, const char *p, size_t n, bool cut)
{
    sl_mon_log *l = &c->io.log;
    uint64_t bytes = l->dropped, records = l->dropped_records;
    int was = l->err;
    bool journal = p && c->io.journaled[s];
    if (p)
        sl_mon_log_add(l, s, p, n, sl_real_ns());
    if (!p || cut)
        sl_mon_log_cut(l, s, sl_real_ns());
    if (journal && mon_journal_pending(&c->io.journal, s, l->fd, sl_mon_log_queued(l)) < 0)
        journal_failed(c, s, "noting the log's end");
    sl_mon_log_push(l);
    if (journal && mon_journal_logged(&c->io.journal, s) < 0)
        journal_failed(c, s, "emptying it");
    if (!was != !l->err)
        log_health(c, bytes, records);
    else
        drop_update(c, p == NULL);
}

static void close_output(mon_ctr *c, int s)
{
    mon_io *io = &c->io;
    if (io->out_fd[s] < 0)
        return;
    if (io->out_w[s])
        sl_mwatch_close(io->out_w[s]);
    else
        close(io->out_fd[s]);
    io->out_w[s] = NULL;
    io->out_fd[s] = -1;
    log_output(c, s, NULL, 0, true);
    sl_mon_fanout_eof(&io->fo, s);
    if (io->out_fd[0] < 0 && io->out_fd[1] < 0)
        mon_ctr_outputs_done(c);
}

/* Keeps the tail of what runc printed while creating, for an error reply. */
static void keep_noise(mon_io *io, const char *p, size_t n)
{
    if (n >= sizeof(io->noise) - 1) {
        p += n - (sizeof(io->noise) - 1);
        n = sizeof(io->noise) - 1;
    }
    size_t keep =
        io->noise_len + n > sizeof(io->noise) - 1 ? sizeof(io->noise) - 1 - n : io->noise_len;
    memmove(io->noise, io->noise + io->noise_len - keep, keep);
    memcpy(io->noise + keep, p, n);
    io->noise_len = keep + n;
    io->noise[io->noise_len] = '\0';
}

static void output_read(mon_ctr *c, int s)
{
    mon_io *io = &c->io;
    for (int i = 0; i < SL_MON_READS_PER_WAKE && io->out_fd[s] >= 0; i++) {
        ssize_t n = read(io->out_fd[s], scratch, sizeof(scratch));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) { /* EOF, or EIO from a PTY master whose slave is gone */
            close_output(c, s);
            return;
        }
        if (io->discard) {
            keep_noise(io, scratch, (size_t)n);
            continue;
        }
        io->last_out_ms = sl_mono_ms();
        log_output(c, s, scratch, (size_t)n, false);
        sl_mon_fanout_feed(&io->fo, s, scratch, (size_t)n);
    }
}

/* Output of stream s from its pipe, through its journal: taken, logged
 * whole, let go, fanned out. */
static void output_journaled(mon_ctr *c, int s)
{
    mon_io *io = &c->io;
    ssize_t n = mon_journal_take(&io->journal, s, io->out_fd[s], scratch, sizeof(scratch));
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
    if (n < 0) { /* a pipe splice refuses: nothing was taken */
        journal_failed(c, s, "taking output");
        return;
    }
    if (n == 0) {
        close_output(c, s);
        return;
    }
    io->last_out_ms = sl_mono_ms();
    log_output(c, s, scratch, (size_t)n, true);
    sl_mon_fanout_feed(&io->fo, s, scratch, (size_t)n);
}

static void output(mon_ctr *c, int s)
{
    if (c->io.journaled[s] && !c->io.discard)
        output_journaled(c, s);
    else
        output_read(c, s);
}

static void out0_cb(sl_mwatch *w, uint32_t events, void *data)
{
    (void)w;
    (void)events;
    output(data, 0);
}

static void out1_cb(sl_mwatch *w, uint32_t events, void *data)
{
    (void)w;
    (void)events;
    output(data, 1);
}

static void close_stdin(mon_ctr *c)
{
    mon_io *io = &c->io;
    sl_bufq_consume(&io->in_q, sl_bufq_len(&io->in_q));
    if (io->in_w)
        sl_mwatch_close(io->in_w);
    else if (io->in_fd >= 0)
        close(io->in_fd);
    io->in_w = NULL;
    io->in_fd = -1;
}

static void stdin_flush(mon_ctr *c)
{
    mon_io *io = &c->io;
    while (io->in_fd >= 0 && sl_bufq_len(&io->in_q) > 0) {
        struct iovec iov[16];
        int n = sl_bufq_peek(&io->in_q, iov, 16);
        ssize_t w = writev(io->in_fd, iov, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            sl_mwatch_set(io->in_w, EPOLLOUT);
            return;
        }
        if (w < 0) { /* the container closed its stdin: input goes nowhere */
            close_stdin(c);
            break;
        }
        sl_bufq_consume(&io->in_q, (size_t)w);
    }
    if (io->in_w)
        sl_mwatch_set(io->in_w, 0);
    if (io->in_close_after && sl_bufq_len(&io->in_q) == 0) {
        io->in_close_after = false;
        if (c->tty) { /* a terminal's end of input is ^D, not a close */
            sl_bufq_append(&io->in_q, "\x04", 1);
            stdin_flush(c);
        } else {
            close_stdin(c);
        }
    }
    if (io->in_paused && sl_bufq_len(&io->in_q) < SL_MON_STDIN_HIGH_WATER)
        mon_attach_stdin_pause(c, false);
}

static void in_cb(sl_mwatch *w, uint32_t events, void *data)
{
    (void)w;
    (void)events;
    stdin_flush(data);
}

bool mon_io_stdin_push(mon_ctr *c, const void *data, size_t len)
{
    mon_io *io = &c->io;
    if (io->in_fd < 0)
        return true; /* no stdin (any more): the bytes are dropped */
    if (sl_bufq_append(&io->in_q, data, len) != 0)
        return false;
    stdin_flush(c);
    return sl_bufq_len(&io->in_q) < SL_MON_STDIN_HIGH_WATER;
}

void mon_io_stdin_session_done(mon_ctr *c)
{
    if (!c->stdin_once || c->stdin_once_done)
        return;
    c->stdin_once_done = true;
    c->io.in_close_after = true;
    stdin_flush(c);
}

/* Output a dead monitor took and had not logged whole (mon_journal.h):
 * logged now, before anything newer. */
static void recover_output(mon_ctr *c)
{
    mon_io *io = &c->io;
    for (int s = 0; s < 2; s++) {
        size_t cut;
        ssize_t n =
            mon_journal_recover(&io->journal, s, io->log.fd, scratch, sizeof(scratch), &cut);
        if (n < 0) {
            journal_failed(c, s, "recovering it");
            continue;
        }
        if (n == 0)
            continue;
        mon_log(MON_INFO,
                "container %s: %zd bytes of %s the last monitor took are logged now "
                "(%zu bytes of their records it had written were cut off)",
                c->id, n, s ? "stderr" : "stdout", cut);
        log_output(c, s, scratch, (size_t)n, true);
    }
}

/* Journals output pipes when there is a log to protect. */
static void journal_start(mon_ctr *c)
{
    mon_io *io = &c->io;
    bool pipes = false;
    for (int s = 0; s < 2; s++) {
        struct stat st;
        io->journaled[s] = io->out_fd[s] >= 0 && fstat(io->out_fd[s], &st) == 0 &&
                           S_ISFIFO(st.st_mode) && io->log.fd >= 0;
        pipes = pipes || io->journaled[s];
    }
    sl_error je;
    if (!pipes)
        return;
    if (!c->dir || mon_journal_open(&io->journal, c->dir, c->adopted, &je) < 0) {
        mon_log(MON_WARN, "container %s: no output journal (%s); reading output directly", c->id,
                c->dir ? je.msg : "no directory");
        io->journaled[0] = io->journaled[1] = false;
        return;
    }
    if (c->adopted)
        recover_output(c);
}

int mon_io_start(mon_ctr *c, sl_error *e)
{
    mon_io *io = &c->io;
    static const sl_mwatch_cb cbs[2] = {out0_cb, out1_cb};
    journal_start(c);
    for (int s = 0; s < 2; s++) {
        if (io->out_fd[s] < 0)
            continue;
        io->out_w[s] = sl_mloop_watch(c->m->loop, io->out_fd[s], EPOLLIN, cbs[s], c);
        if (!io->out_w[s])
            return sl_error_set(e, errno, "watch output");
    }
    if (io->in_fd >= 0 && !(io->in_w = sl_mloop_watch(c->m->loop, io->in_fd, 0, in_cb, c)))
        return sl_error_set(e, errno, "watch stdin");
    return 0;
}

void mon_io_close_outputs(mon_ctr *c)
{
    for (int s = 0; s < 2; s++)
        close_output(c, s);
}

void mon_io_fini(mon_ctr *c, const char *why)
{
    mon_io *io = &c->io;
    sl_mtimer_cancel(io->linger_timer);
    io->linger_timer = NULL;
    sl_mon_fanout_fini(&io->fo, why);
    for (int s = 0; s < 2; s++) {
        if (io->out_w[s])
            sl_mwatch_close(io->out_w[s]);
        else if (io->out_fd[s] >= 0)
            close(io->out_fd[s]);
        io->out_w[s] = NULL;
        io->out_fd[s] = -1;
    }
    close_stdin(c);
    mon_journal_close(&io->journal);
    sl_bufq_fini(&io->in_q);
    if (io->log.pend[0])
        sl_mon_log_close(&io->log);
}

void mon_io_drain_noise(mon_ctr *c)
{
    for (int s = 0; s < 2; s++)
        if (c->io.out_fd[s] >= 0)
            output(c, s);
}
