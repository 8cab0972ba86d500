/* CRI log writer: RFC3339Nano timestamps, P/F records at every split of
 * the input, long lines, "\r\n", partial last lines, reopen after rotation;
 * a file that stops growing midway (a full disk; RLIMIT_FSIZE here) keeps
 * only whole records, the rest is counted, and writing resumes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mon_log.h"

#define TS 1475713029669794202LL /* 2016-10-06T00:17:09.669794202Z */

static char dir[] = "/tmp/test_mon_log.XXXXXX";

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/test_mon_log.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return sl_rm_rf(dir, NULL);
}

static char *path_of(const char *name)
{
    static char buf[256];
    snprintf(buf, sizeof(buf), "%s/%s", dir, name);
    return buf;
}

static char *slurp(const char *path, size_t *len)
{
    char *data = NULL;
    size_t n = 0;
    if (sl_read_file(path, 64u << 20, &data, &n, NULL) < 0)
        return NULL;
    if (len)
        *len = n;
    return data;
}

static void test_timestamps(void **state)
{
    (void)state;
    static const struct {
        int64_t ns;
        const char *want;
    } cases[] = {
        {0, "1970-01-01T00:00:00Z"},
        {TS, "2016-10-06T00:17:09.669794202Z"},
        {1475713029669794200LL, "2016-10-06T00:17:09.6697942Z"},
        {1475713029100000000LL, "2016-10-06T00:17:09.1Z"},
        {1475713029000000001LL, "2016-10-06T00:17:09.000000001Z"},
        {1475713029000000000LL, "2016-10-06T00:17:09Z"},
        {-1, "1969-12-31T23:59:59.999999999Z"},
        {4102444799999999999LL, "2099-12-31T23:59:59.999999999Z"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[SL_MON_LOG_TS_MAX];
        size_t n = sl_mon_log_timestamp(cases[i].ns, buf);
        assert_string_equal(buf, cases[i].want);
        assert_int_equal(n, strlen(cases[i].want));
    }
}

/* Writes chunks (lengths in cuts, 0-terminated) and returns the file. */
static char *log_of(const char *name, size_t line_max, const char *data, size_t len,
                    const size_t *cuts, size_t ncuts, int stream)
{
    sl_mon_log l;
    sl_error e;
    assert_int_equal(sl_mon_log_open(&l, path_of(name), line_max, &e), 0);
    size_t off = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : len;
        sl_mon_log_write(&l, stream, data + off, end - off, TS);
        off = end;
    }
    sl_mon_log_flush(&l, stream, TS);
    assert_int_equal(l.dropped, 0);
    sl_mon_log_close(&l);
    char *out = slurp(path_of(name), NULL);
    assert_non_null(out);
    unlink(path_of(name));
    return out;
}

#define R(tag, text) "2016-10-06T00:17:09.669794202Z stdout " tag " " text "\n"

static void test_records(void **state)
{
    (void)state;
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"abc\n", R("F", "abc")},
        {"\n", R("F", "")},
        {"a\r\nb\rc\n", R("F", "a") R("F", "b\rc")},
        {"12345678\n", R("F", "12345678")},              /* exactly line_max */
        {"123456789\n", R("P", "12345678") R("F", "9")}, /* one over */
        {"1234567812345678\n", R("P", "12345678") R("F", "12345678")},
        {"tail", R("P", "tail")}, /* partial last line */
        {"12345678", R("P", "12345678")},
        {"1234567\r\n", R("F", "1234567")},
        {"12345678\r\n", R("P", "12345678") R("F", "")}, /* \r past the limit */
        {"x\n\n y \n", R("F", "x") R("F", "") R("F", " y ")},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *out = log_of("r.log", 8, cases[i].in, strlen(cases[i].in), NULL, 0, 0);
        assert_string_equal(out, cases[i].want);
        free(out);
    }
}

/* The same records whatever the read boundaries were. */
static void test_every_split(void **state)
{
    (void)state;
    const char *in = "first\nsecond line is long\r\n\nab\r\ncdefghijklmnop\rq\nlast";
    size_t len = strlen(in);
    char *whole = log_of("w.log", 8, in, len, NULL, 0, 1);
    assert_non_null(strstr(whole, " stderr P last\n"));
    for (size_t cut = 1; cut < len; cut++) {
        char *out = log_of("s.log", 8, in, len, &cut, 1, 1);
        assert_string_equal(out, whole);
        free(out);
    }
    size_t cuts[128];
    for (size_t i = 0; i + 1 < len; i++)
        cuts[i] = i + 1;
    char *bytes = log_of("b.log", 8, in, len, cuts, len - 1, 1);
    assert_string_equal(bytes, whole);
    free(bytes);
    free(whole);
}

static void test_default_line_max(void **state)
{
    (void)state;
    size_t n = 2 * SL_MON_LOG_LINE_MAX + 100;
    char *in = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        in[i] = (char)('a' + i % 26);
    in[n] = '\n';
    char *out = log_of("d.log", 0, in, n + 1, NULL, 0, 0);
    const char *prefix = "2016-10-06T00:17:09.669794202Z stdout ";
    size_t plen = strlen(prefix);
    const char *p = out;
    const char tags[3] = {'P', 'P', 'F'};
    size_t sizes[3] = {SL_MON_LOG_LINE_MAX, SL_MON_LOG_LINE_MAX, 100};
    size_t off = 0;
    for (int r = 0; r < 3; r++) {
        assert_memory_equal(p, prefix, plen);
        assert_int_equal(p[plen], tags[r]);
        assert_memory_equal(p + plen + 2, in + off, sizes[r]);
        assert_int_equal(p[plen + 2 + sizes[r]], '\n');
        off += sizes[r];
        p += plen + 2 + sizes[r] + 1;
    }
    assert_int_equal(*p, '\0');
    free(out);
    free(in);
}

static void test_streams_interleave(void **state)
{
    (void)state;
    sl_mon_log l;
    sl_error e;
    assert_int_equal(sl_mon_log_open(&l, path_of("i.log"), 0, &e), 0);
    sl_mon_log_write(&l, 0, "out-", 4, TS);
    sl_mon_log_write(&l, 1, "err-", 4, TS);
    sl_mon_log_write(&l, 0, "a\n", 2, TS);
    sl_mon_log_write(&l, 1, "b\n", 2, TS + 1);
    sl_mon_log_write(&l, 2, "bad stream\n", 11, TS); /* ignored */
    sl_mon_log_close(&l);
    char *out = slurp(path_of("i.log"), NULL);
    assert_string_equal(out, "2016-10-06T00:17:09.669794202Z stdout F out-a\n"
                             "2016-10-06T00:17:09.669794203Z stderr F err-b\n");
    free(out);
}

/* In steps: queued is exactly what push writes (the output journal notes
 * the log's end before the write from it). */
static void test_queued_then_pushed(void **state)
{
    (void)state;
    sl_mon_log l;
    sl_error e;
    size_t len = 0;
    assert_int_equal(sl_mon_log_open(&l, path_of("q.log"), 4, &e), 0);
    sl_mon_log_add(&l, 0, "ab\r\nlonger\ntail", 15, TS);
    sl_mon_log_cut(&l, 0, TS);
    size_t queued = sl_mon_log_queued(&l);
    char *out = slurp(path_of("q.log"), &len);
    assert_int_equal(len, 0);
    free(out);
    sl_mon_log_push(&l);
    assert_int_equal(sl_mon_log_queued(&l), 0);
    sl_mon_log_close(&l);
    out = slurp(path_of("q.log"), &len);
    assert_int_equal(len, queued);
    assert_string_equal(out, "2016-10-06T00:17:09.669794202Z stdout F ab\n"
                             "2016-10-06T00:17:09.669794202Z stdout P long\n"
                             "2016-10-06T00:17:09.669794202Z stdout F er\n"
                             "2016-10-06T00:17:09.669794202Z stdout P tail\n");
    free(out);
}

static void test_reopen_after_rotation(void **state)
{
    (void)state;
    char sub[256];
    snprintf(sub, sizeof(sub), "%s/pod/ctr/0.log", dir); /* parents are created */
    sl_mon_log l;
    sl_error e;
    assert_int_equal(sl_mon_log_open(&l, sub, 0, &e), 0);
    sl_mon_log_write(&l, 0, "before\nhalf", 11, TS);
    char rotated[300];
    snprintf(rotated, sizeof(rotated), "%s.1", sub);
    assert_int_equal(rename(sub, rotated), 0);
    sl_mon_log_write(&l, 0, "still old\n", 10, TS); /* lands in the renamed file */
    assert_int_equal(sl_mon_log_reopen(&l, &e), 0);
    sl_mon_log_write(&l, 0, "after\n", 6, TS);
    sl_mon_log_close(&l);
    char *old = slurp(rotated, NULL), *cur = slurp(sub, NULL);
    assert_string_equal(old, R("F", "before") R("F", "halfstill old"));
    assert_string_equal(cur, R("F", "after"));
    free(old);
    free(cur);
}

static void test_reopen_failure_keeps_file(void **state)
{
    (void)state;
    sl_mon_log l;
    sl_error e;
    char sub[256];
    snprintf(sub, sizeof(sub), "%s/gone/x.log", dir);
    assert_int_equal(sl_mon_log_open(&l, sub, 0, &e), 0);
    char gone[256];
    snprintf(gone, sizeof(gone), "%s/gone", dir);
    assert_int_equal(sl_rm_rf(gone, NULL), 0);
    int fd = creat(gone, 0400); /* a file where the directory was */
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(sl_mon_log_reopen(&l, &e), -1);
    assert_true(l.fd >= 0);
    sl_mon_log_close(&l);
}

static void test_no_log_and_full_disk(void **state)
{
    (void)state;
    sl_mon_log l;
    sl_error e;
    assert_int_equal(sl_mon_log_open(&l, NULL, 0, &e), 0);
    sl_mon_log_write(&l, 0, "x\n", 2, TS);
    assert_int_equal(sl_mon_log_reopen(&l, &e), 0);
    sl_mon_log_close(&l);
    assert_int_equal(sl_mon_log_open(&l, "/dev/full", 0, &e), 0);
    sl_mon_log_write(&l, 0, "lost\n", 5, TS);
    assert_int_equal(l.dropped, strlen(R("F", "lost")));
    assert_int_equal(l.dropped_records, 1);
    assert_int_equal(l.err, ENOSPC);
    sl_mon_log_close(&l);
}

/* Lets the calling process's files grow to `limit` bytes (RLIM_INFINITY:
 * back to `old`); writes beyond it are cut short, then fail (EFBIG). */
static void file_limit(rlim_t limit, const struct rlimit *old)
{
    struct rlimit r = *old;
    if (limit != RLIM_INFINITY)
        r.rlim_cur = limit;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &r), 0);
}

static void test_short_write_cut_back(void **state)
{
    (void)state;
    struct rlimit old;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, SIG_IGN);
    sl_mon_log l;
    sl_error e;
    assert_int_equal(sl_mon_log_open(&l, path_of("short.log"), 0, &e), 0);
    sl_mon_log_write(&l, 0, "first\n", 6, TS);
    const size_t first = strlen(R("F", "first"));
    file_limit(first + 10, &old); /* the next record gets 10 bytes in */
    sl_mon_log_write(&l, 0, "second line\nthird\n", 18, TS);
    file_limit(RLIM_INFINITY, &old);
    char *got = slurp(path_of("short.log"), NULL);
    assert_string_equal(got, R("F", "first")); /* cut back: no half record */
    free(got);
    assert_int_equal(l.err, EFBIG);
    assert_false(l.torn);
    assert_int_equal(l.dropped_records, 2);
    assert_int_equal(l.dropped, strlen(R("F", "second line") R("F", "third")));
    sl_mon_log_write(&l, 0, "fourth\n", 7, TS); /* room again: logging resumes */
    assert_int_equal(l.err, 0);
    got = slurp(path_of("short.log"), NULL);
    assert_string_equal(got, R("F", "first") R("F", "fourth"));
    free(got);
    sl_mon_log_close(&l);
}

/* The same across many queue chunks and iovecs: the file ends on a record
 * boundary, and kept + dropped records are all of them. */
static void test_short_write_across_chunks(void **state)
{
    (void)state;
    struct rlimit old;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, SIG_IGN);
    const size_t lines = 20000, limit = 333333;
    char *text = malloc(lines * 8 + 1); /* snprintf's last NUL */
    for (size_t i = 0; i < lines; i++)
        snprintf(text + i * 8, 9, "l%06zu\n", i);
    sl_mon_log l;
    sl_error e;
    assert_int_equal(sl_mon_log_open(&l, path_of("chunks.log"), 0, &e), 0);
    file_limit(limit, &old);
    sl_mon_log_write(&l, 0, text, lines * 8, TS);
    file_limit(RLIM_INFINITY, &old);
    size_t len;
    char *got = slurp(path_of("chunks.log"), &len);
    const size_t rec = strlen(R("F", "l000000"));
    assert_true(len <= limit && len > limit - rec);
    assert_int_equal(len % rec, 0);
    for (size_t i = 0; i < len / rec; i++) {
        char want[64];
        snprintf(want, sizeof(want), "2016-10-06T00:17:09.669794202Z stdout F l%06zu\n", i);
        assert_memory_equal(got + i * rec, want, rec);
    }
    assert_int_equal(len / rec + l.dropped_records, lines);
    assert_int_equal(len + l.dropped, lines * rec);
    free(got);
    free(text);
    sl_mon_log_close(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timestamps),
        cmocka_unit_test(test_records),
        cmocka_unit_test(test_every_split),
        cmocka_unit_test(test_default_line_max),
        cmocka_unit_test(test_streams_interleave),
        cmocka_unit_test(test_queued_then_pushed),
        cmocka_unit_test(test_reopen_after_rotation),
        cmocka_unit_test(test_reopen_failure_keeps_file),
        cmocka_unit_test(test_no_log_and_full_disk),
        cmocka_unit_test(test_short_write_cut_back),
        cmocka_unit_test(test_short_write_across_chunks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
