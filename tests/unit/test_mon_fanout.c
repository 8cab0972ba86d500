/* Attach fan-out: a client that never reads is ended at the backlog bound
 * while a fast client and the log get every byte; EOF after draining;
 * a client that closed its end; late sessions after the source ended; a
 * session finished (its client detached) gets what was queued, then EOF;
 * a session's own backlog; what a client read meanwhile makes room at the
 * next feed, without waiting for the loop's writable callback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mon_fanout.h"
#include "mon_log.h"

typedef struct events {
    int ended;
    char why[SL_MON_WHY_MAX];
    char ended_session[SL_MON_MAX_ID + 1];
    int want_on, want_off, closing;
} events;

static void want_write(sl_mon_attach *a, int s, bool want, void *ud)
{
    (void)a;
    (void)s;
    events *ev = ud;
    if (want)
        ev->want_on++;
    else
        ev->want_off++;
}

static void out_closing(sl_mon_attach *a, int s, void *ud)
{
    (void)a;
    (void)s;
    ((events *)ud)->closing++;
}

static void ended(sl_mon_attach *a, const char *why, void *ud)
{
    events *ev = ud;
    ev->ended++;
    snprintf(ev->why, sizeof(ev->why), "%s", why);
    snprintf(ev->ended_session, sizeof(ev->ended_session), "%s", a->session);
}

static const sl_mon_fanout_ops ops = {want_write, out_closing, ended};

/* A session with an output pipe on stream s; *rd gets the client end. */
static sl_mon_attach *session(const char *id, int s, int *rd)
{
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    sl_mon_attach *a = sl_mon_attach_new(id);
    assert_non_null(a);
    a->out_fd[s] = p[1];
    *rd = p[0];
    return a;
}

/* Reads what is there; appends to buf. Returns false at EOF. */
static bool drain(int fd, char *buf, size_t *len, size_t cap)
{
    for (;;) {
        ssize_t n = read(fd, buf + *len, cap - *len);
        if (n > 0) {
            *len += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EAGAIN)
            return true;
        assert_true(n == 0);
        return false;
    }
}

static void fill(char *p, size_t off, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t k = off + i;
        /* lines of varying length with a counter, so loss or reorder shows */
        p[i] = (k % 61 == 60) ? '\n' : (char)('A' + (k / 61) % 26);
    }
}

static void test_slow_client_ended_fast_and_log_complete(void **state)
{
    (void)state;
    events ev = {0};
    sl_mon_fanout f;
    sl_mon_fanout_init(&f, 0, &ops, &ev);
    assert_int_equal(f.backlog_max, SL_MON_ATTACH_BACKLOG);
    int fast_rd, slow_rd;
    sl_mon_attach *fast = session("fast", 0, &fast_rd);
    sl_mon_attach *slow = session("slow", 0, &slow_rd);
    assert_true(sl_mon_fanout_add(&f, fast));
    assert_true(sl_mon_fanout_add(&f, slow));

    char logpath[] = "/tmp/test_mon_fanout.XXXXXX";
    int lfd = mkstemp(logpath);
    assert_true(lfd >= 0);
    close(lfd);
    sl_mon_log log;
    sl_error e;
    assert_int_equal(sl_mon_log_open(&log, logpath, 0, &e), 0);

    const size_t total = 3 * SL_MON_ATTACH_BACKLOG, chunk = 65536 + 123;
    char *sent = malloc(total), *got = malloc(total);
    size_t got_len = 0, off = 0;
    size_t ended_at = 0;
    while (off < total) {
        size_t n = total - off < chunk ? total - off : chunk;
        fill(sent + off, off, n);
        sl_mon_log_write(&log, 0, sent + off, n, 1);
        sl_mon_fanout_feed(&f, 0, sent + off, n);
        off += n;
        if (ev.ended && !ended_at)
            ended_at = off;
        /* the fast client reads everything, the loop flushes it */
        drain(fast_rd, got, &got_len, total);
        sl_mon_fanout_writable(&f, fast, 0);
        drain(fast_rd, got, &got_len, total);
    }
    sl_mon_fanout_eof(&f, 0);
    while (drain(fast_rd, got, &got_len, total))
        if (sl_mon_fanout_find(&f, "fast")) /* gone once drained and closed */
            sl_mon_fanout_writable(&f, fast, 0);
    /* the fast client got every byte, in order, then EOF */
    assert_int_equal(got_len, total);
    assert_memory_equal(got, sent, total);

    /* the slow one was ended once, at the bound, with the reason */
    assert_int_equal(ev.ended, 1);
    assert_string_equal(ev.ended_session, "slow");
    char want[SL_MON_WHY_MAX];
    snprintf(want, sizeof(want), "attach client fell more than %u bytes behind (attach-backlog)",
             SL_MON_ATTACH_BACKLOG);
    assert_string_equal(ev.why, want);
    assert_true(ended_at > SL_MON_ATTACH_BACKLOG);
    assert_true(ended_at <= SL_MON_ATTACH_BACKLOG + 2 * chunk + 1024 * 1024);
    /* it can read what its pipe took (a prefix of the stream), then EOF */
    size_t slow_len = 0;
    assert_false(drain(slow_rd, got, &slow_len, total));
    assert_true(slow_len > 0);
    assert_memory_equal(got, sent, slow_len);
    assert_null(f.head); /* the fast session closed after EOF and went away */

    /* the log has every line */
    sl_mon_log_flush(&log, 0, 1);
    sl_mon_log_close(&log);
    char *text = NULL;
    size_t tlen;
    assert_int_equal(sl_read_file(logpath, 64u << 20, &text, &tlen, NULL), 0);
    size_t lines = 0, content = 0;
    for (char *p = text; *p;) {
        char *nl = strchr(p, '\n');
        assert_non_null(nl);
        /* every line is F but the unterminated last one, which is P */
        size_t plen = strlen("1970-01-01T00:00:00.000000001Z stdout F ");
        bool last = content + (size_t)(nl - p) - plen >= total;
        const char *prefix = last ? "1970-01-01T00:00:00.000000001Z stdout P "
                                  : "1970-01-01T00:00:00.000000001Z stdout F ";
        assert_memory_equal(p, prefix, strlen(prefix));
        size_t clen = (size_t)(nl - p) - strlen(prefix);
        assert_memory_equal(p + strlen(prefix), sent + content, clen);
        content += clen + 1;
        lines++;
        p = nl + 1;
    }
    assert_int_equal(lines, total / 61 + (total % 61 ? 1 : 0));
    free(text);
    unlink(logpath);
    free(sent);
    free(got);
    close(fast_rd);
    close(slow_rd);
}

static void test_queue_then_eof(void **state)
{
    (void)state;
    events ev = {0};
    sl_mon_fanout f;
    sl_mon_fanout_init(&f, 1 << 20, &ops, &ev);
    int rd;
    sl_mon_attach *a = session("a", 1, &rd);
    assert_true(sl_mon_fanout_add(&f, a));
    static char big[200000];
    memset(big, 'x', sizeof(big));
    sl_mon_fanout_feed(&f, 0, "stdout only\n", 12); /* a has no stdout */
    sl_mon_fanout_feed(&f, 1, big, sizeof(big));
    assert_int_equal(ev.want_on, 1);
    assert_true(sl_bufq_len(&a->q[1]) > 0);
    sl_mon_fanout_eof(&f, 1);
    assert_int_equal(ev.closing, 0); /* queued bytes first */
    static char got[sizeof(big) + 1];
    size_t len = 0;
    while (len < sizeof(big)) {
        drain(rd, got, &len, sizeof(got));
        if (f.head) /* freed once drained and closed */
            sl_mon_fanout_writable(&f, a, 1);
    }
    assert_false(drain(rd, got, &len, sizeof(got)));
    assert_int_equal(len, sizeof(big));
    assert_int_equal(ev.want_off, 1);
    assert_int_equal(ev.closing, 1);
    assert_int_equal(ev.ended, 0); /* a normal end, no event */
    assert_null(f.head);
    close(rd);
}

static void test_client_closed_its_end(void **state)
{
    (void)state;
    events ev = {0};
    sl_mon_fanout f;
    sl_mon_fanout_init(&f, 0, &ops, &ev);
    int rd, rd2;
    sl_mon_attach *a = session("gone", 0, &rd);
    sl_mon_attach *b = session("stays", 0, &rd2);
    assert_true(sl_mon_fanout_add(&f, a));
    assert_true(sl_mon_fanout_add(&f, b));
    close(rd);
    sl_mon_fanout_feed(&f, 0, "hello\n", 6);
    assert_int_equal(ev.ended, 1);
    assert_string_equal(ev.ended_session, "gone");
    assert_non_null(strstr(ev.why, "closed its stdout"));
    assert_ptr_equal(sl_mon_fanout_find(&f, "stays"), b);
    assert_null(sl_mon_fanout_find(&f, "gone"));
    char buf[16];
    size_t len = 0;
    drain(rd2, buf, &len, sizeof(buf));
    assert_int_equal(len, 6);
    sl_mon_fanout_fini(&f, "container removed");
    assert_int_equal(ev.ended, 2);
    assert_string_equal(ev.why, "container removed");
    assert_false(drain(rd2, buf, &len, sizeof(buf))); /* closed */
    close(rd2);
}

static void test_backlog_counts_both_streams(void **state)
{
    (void)state;
    events ev = {0};
    sl_mon_fanout f;
    sl_mon_fanout_init(&f, 100000, &ops, &ev);
    int p0[2], p1[2];
    assert_int_equal(pipe2(p0, O_CLOEXEC | O_NONBLOCK), 0);
    assert_int_equal(pipe2(p1, O_CLOEXEC | O_NONBLOCK), 0);
    sl_mon_attach *a = sl_mon_attach_new("two");
    a->out_fd[0] = p0[1];
    a->out_fd[1] = p1[1];
    assert_true(sl_mon_fanout_add(&f, a));
    static char blob[70000];
    memset(blob, 'b', sizeof(blob));
    /* fill both pipes first (their capacity is not backlog) */
    while (ev.ended == 0 && sl_bufq_len(&a->q[0]) == 0)
        sl_mon_fanout_feed(&f, 0, blob, 1000);
    while (ev.ended == 0 && sl_bufq_len(&a->q[1]) == 0)
        sl_mon_fanout_feed(&f, 1, blob, 1000);
    sl_mon_fanout_feed(&f, 0, blob, 60000);
    assert_int_equal(ev.ended, 0);
    sl_mon_fanout_feed(&f, 1, blob, 60000); /* 120000 queued > 100000 */
    assert_int_equal(ev.ended, 1);
    assert_null(f.head);
    close(p0[0]);
    close(p1[0]);
}

static void test_per_session_backlog(void **state)
{
    (void)state;
    events ev = {0};
    sl_mon_fanout f;
    sl_mon_fanout_init(&f, 1 << 20, &ops, &ev);
    int rd_small, rd_big;
    sl_mon_attach *small = session("small", 0, &rd_small);
    sl_mon_attach *big = session("big", 0, &rd_big);
    small->backlog_max = 100000;
    assert_true(sl_mon_fanout_add(&f, small));
    assert_true(sl_mon_fanout_add(&f, big));
    static char blob[10000];
    memset(blob, 'z', sizeof(blob));
    size_t fed = 0;
    while (!ev.ended && fed < (4u << 20)) {
        sl_mon_fanout_feed(&f, 0, blob, sizeof(blob));
        fed += sizeof(blob);
    }
    assert_int_equal(ev.ended, 1);
    assert_string_equal(ev.ended_session, "small");
    assert_string_equal(ev.why,
                        "attach client fell more than 100000 bytes behind (attach-backlog)");
    assert_true(fed < (1u << 20)); /* long before the fan-out's own bound */
    assert_ptr_equal(sl_mon_fanout_find(&f, "big"), big);
    sl_mon_fanout_fini(&f, "done");
    close(rd_small);
    close(rd_big);
}

static void test_feed_drains_what_the_client_took(void **state)
{
    (void)state;
    events ev = {0};
    sl_mon_fanout f;
    sl_mon_fanout_init(&f, 0, &ops, &ev);
    int rd;
    sl_mon_attach *a = session("reader", 0, &rd);
    assert_true(sl_mon_fanout_add(&f, a));
    const size_t total = 8u << 20, chunk = 65536;
    char *sent = malloc(total), *got = malloc(total);
    size_t got_len = 0, max_queued = 0;
    for (size_t off = 0; off < total; off += chunk) {
        fill(sent + off, off, chunk);
        sl_mon_fanout_feed(&f, 0, sent + off, chunk);
        size_t q = sl_bufq_len(&a->q[0]);
        max_queued = q > max_queued ? q : max_queued;
        drain(rd, got, &got_len, total); /* the client keeps up; no writable callback */
    }
    /* twice the backlog went through a client that reads between feeds:
     * never more than one feed queued, never ended */
    assert_int_equal(ev.ended, 0);
    assert_true(max_queued <= chunk);
    sl_mon_fanout_writable(&f, a, 0);
    drain(rd, got, &got_len, total);
    assert_int_equal(got_len, total);
    assert_memory_equal(got, sent, total);
    sl_mon_fanout_fini(&f, "done");
    free(sent);
    free(got);
    close(rd);
}

static void test_late_session(void **state)
{
    (void)state;
    events ev = {0};
    sl_mon_fanout f;
    sl_mon_fanout_init(&f, 0, &ops, &ev);
    sl_mon_fanout_eof(&f, 0);
    int rd;
    sl_mon_attach *a = session("late", 0, &rd);
    assert_false(sl_mon_fanout_add(&f, a)); /* nothing left open: freed */
    char buf[4];
    size_t len = 0;
    assert_false(drain(rd, buf, &len, sizeof(buf))); /* EOF at once */
    close(rd);
    int in[2];
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    a = session("late-with-stdin", 0, &rd);
    a->in_fd = in[0];
    assert_true(sl_mon_fanout_add(&f, a));
    assert_int_equal(a->out_fd[0], -1);
    assert_false(sl_mon_fanout_reap(&f, a)); /* stdin still open */
    close(a->in_fd);
    a->in_fd = -1;
    assert_true(sl_mon_fanout_reap(&f, a));
    assert_null(f.head);
    assert_null(sl_mon_attach_new("bad/id"));
    close(in[1]);
    close(rd);
}

/* finish: what is queued still arrives, then EOF on both streams; nothing
 * fed afterwards; freed without an "ended" event; at once when drained. */
static void test_finish_drains_then_eof(void **state)
{
    (void)state;
    events ev = {0};
    sl_mon_fanout f;
    sl_mon_fanout_init(&f, 1 << 20, &ops, &ev);
    int rd, rd_err, in[2], p1[2];
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(p1, O_CLOEXEC | O_NONBLOCK), 0);
    sl_mon_attach *a = session("fin", 0, &rd);
    a->out_fd[1] = p1[1];
    rd_err = p1[0];
    a->in_fd = in[0];
    assert_true(sl_mon_fanout_add(&f, a));
    static char big[150000];
    memset(big, 'f', sizeof(big));
    sl_mon_fanout_feed(&f, 0, big, sizeof(big)); /* more than the pipe holds */
    assert_true(sl_bufq_len(&a->q[0]) > 0);
    close(a->in_fd); /* the loop layer closes the client's stdin first */
    a->in_fd = -1;
    assert_false(sl_mon_fanout_finish(&f, a)); /* stdout still holds bytes */
    assert_int_equal(ev.closing, 1);           /* the empty stderr closed at once */
    sl_mon_fanout_feed(&f, 0, "late\n", 5);    /* not for a finishing session */
    static char got[sizeof(big) + 16];
    size_t len = 0;
    while (f.head) {
        drain(rd, got, &len, sizeof(got));
        sl_mon_fanout_writable(&f, a, 0);
    }
    assert_false(drain(rd, got, &len, sizeof(got)));
    assert_int_equal(len, sizeof(big));
    char c;
    assert_int_equal(read(rd_err, &c, 1), 0); /* EOF */
    assert_int_equal(ev.ended, 0);
    assert_int_equal(ev.closing, 2);
    /* nothing queued: freed right away */
    int rd2;
    sl_mon_attach *b = session("fin2", 0, &rd2);
    assert_true(sl_mon_fanout_add(&f, b));
    sl_mon_fanout_feed(&f, 0, "hi\n", 3);
    assert_true(sl_mon_fanout_finish(&f, b));
    assert_null(f.head);
    len = 0;
    assert_false(drain(rd2, got, &len, sizeof(got)));
    assert_int_equal(len, 3);
    close(rd);
    close(rd_err);
    close(rd2);
    close(in[1]);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slow_client_ended_fast_and_log_complete),
        cmocka_unit_test(test_queue_then_eof),
        cmocka_unit_test(test_client_closed_its_end),
        cmocka_unit_test(test_backlog_counts_both_streams),
        cmocka_unit_test(test_per_session_backlog),
        cmocka_unit_test(test_feed_drains_what_the_client_took),
        cmocka_unit_test(test_late_session),
        cmocka_unit_test(test_finish_drains_then_eof),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
