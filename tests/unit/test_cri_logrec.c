/* CRI log records and RFC 3339 times (src/cri-client/cri_log.c), as the
 * kubelet reads them: streams, P/F tags (and later tags), lines that are
 * not records, times with any fraction and any offset, invalid dates, and
 * the kubelet's nine-digit output format; the start of the last N lines
 * of a file (P records join their F record), across read blocks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cri_log.h"

static int parse(const char *s, sl_cri_log_rec *r)
{
    return sl_cri_log_parse(s, strlen(s), r);
}

static void test_records(void **state)
{
    (void)state;
    sl_cri_log_rec r;
    assert_int_equal(parse("2016-10-06T00:17:09.669794202Z stdout P log content 1", &r), 0);
    assert_false(r.is_stderr);
    assert_true(r.partial);
    assert_int_equal(r.content_len, 13);
    assert_memory_equal(r.content, "log content 1", 13);
    assert_int_equal(r.ts_len, 30);
    assert_int_equal(r.ts_ns, 1475713029669794202LL);
    assert_int_equal(parse("2016-10-06T00:17:09Z stderr F:x y", &r), 0);
    assert_true(r.is_stderr);
    assert_false(r.partial);
    assert_memory_equal(r.content, "y", 1);
    assert_int_equal(parse("2016-10-06T00:17:09Z stdout F ", &r), 0);
    assert_int_equal(r.content_len, 0);
    assert_int_equal(parse("2016-10-06T00:17:09Z stdout Px a", &r), 0);
    assert_false(r.partial); /* the tag is "Px", not P */
}

static void test_not_records(void **state)
{
    (void)state;
    sl_cri_log_rec r;
    const char *bad[] = {"",
                         "plain text",
                         "2016-10-06T00:17:09Z stdin F x",
                         "2016-10-06T00:17:09Z stdout F",
                         "2016-10-06 stdout F x",
                         "2016-13-06T00:17:09Z stdout F x",
                         "2016-10-06T00:17:09 stdout F x",
                         "{\"log\":\"docker\\n\",\"stream\":\"stdout\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (parse(bad[i], &r) == 0)
            fail_msg("\"%s\" taken for a record", bad[i]);
}

static int64_t t(const char *s)
{
    int64_t ns = -42;
    assert_int_equal(sl_cri_time_parse(s, strlen(s), &ns), 0);
    return ns;
}

static void test_times(void **state)
{
    (void)state;
    assert_int_equal(t("1970-01-01T00:00:00Z"), 0);
    assert_int_equal(t("2016-10-06T00:17:09Z"), 1475713029LL * 1000000000);
    assert_int_equal(t("2016-10-06T02:17:09+02:00"), 1475713029LL * 1000000000);
    assert_int_equal(t("2016-10-05T23:47:09.5-00:30"), 1475713029500000000LL);
    assert_int_equal(t("2016-10-06T00:17:09.1234567891234Z"), 1475713029123456789LL);
    assert_int_equal(t("2024-02-29T12:00:00Z"), 1709208000LL * 1000000000);
    assert_int_equal(t("1969-12-31T23:59:59Z"), -1000000000LL);
    /* years beyond int64 nanoseconds saturate (found by fuzz_kube_logs: a
     * sinceTime of year 1 or 9999 overflowed) */
    assert_int_equal(t("0001-01-01T00:00:00Z"), INT64_MIN);
    assert_int_equal(t("9999-12-31T23:59:59.999999999-23:59"), INT64_MAX);
    assert_int_equal(t("2262-04-11T23:47:16.854775807Z"), INT64_MAX);
    assert_int_equal(t("2262-04-11T23:47:16.854775806Z"), INT64_MAX - 1);
    assert_int_equal(t("1677-09-21T00:12:43.145224192Z"), INT64_MIN);
    assert_int_equal(t("1677-09-21T00:12:44Z"), -9223372036000000000LL);
    const char *bad[] = {"2023-02-29T00:00:00Z",     "2016-10-06T24:00:00Z",
                         "2016-10-06T00:17:09.Z",    "2016-10-06T00:17:09+0200",
                         "2016-10-06T00:17:09Zjunk", "2016-1-6T0:1:9Z"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ns;
        if (sl_cri_time_parse(bad[i], strlen(bad[i]), &ns) == 0)
            fail_msg("\"%s\" taken for a time", bad[i]);
    }
}

static void test_format(void **state)
{
    (void)state;
    char out[40];
    sl_cri_time_format(1475713029669794202LL, out);
    assert_string_equal(out, "2016-10-06T00:17:09.669794202Z");
    sl_cri_time_format(t("2016-10-06T02:17:09.5+02:00"), out);
    assert_string_equal(out, "2016-10-06T00:17:09.500000000Z");
    char fixed[64];
    sl_cri_time_fixed("2016-10-06T00:17:09.5+02:00", 27, fixed);
    assert_string_equal(fixed, "2016-10-06T00:17:09.500000000+02:00");
    sl_cri_time_fixed("2016-10-06T00:17:09Z", 20, fixed);
    assert_string_equal(fixed, "2016-10-06T00:17:09.000000000Z");
    sl_cri_time_format(-1, out);
    assert_string_equal(out, "1969-12-31T23:59:59.999999999Z");
    sl_cri_time_format(INT64_MIN, out);
    assert_string_equal(out, "1677-09-21T00:12:43.145224192Z");
    sl_cri_time_format(INT64_MAX, out);
    assert_string_equal(out, "2262-04-11T23:47:16.854775807Z");
    for (int64_t s = -100000000; s < 5000000000; s += 7777777) { /* round trips */
        sl_cri_time_format(s * 1000000000 + 123, out);
        assert_int_equal(t(out), s * 1000000000 + 123);
    }
}

#define TS "2016-10-06T00:17:09Z "

static void test_tail_offset(void **state)
{
    (void)state;
    char path[] = "/tmp/cri-logrec-XXXXXX";
    int fd = mkstemp(path);
    const char *recs[] = {TS "stdout F a\n", TS "stdout P b1\n", TS "stderr F x\n",
                          TS "stdout F b2\n", TS "stdout F c\n"};
    off_t at[5], off = 0;
    for (int i = 0; i < 5; i++) {
        at[i] = off;
        off += (off_t)strlen(recs[i]);
        assert_int_equal(write(fd, recs[i], strlen(recs[i])), (ssize_t)strlen(recs[i]));
    }
    assert_int_equal(sl_cri_log_tail_offset(fd, 0), off);
    assert_int_equal(sl_cri_log_tail_offset(fd, 1), at[4]);
    assert_int_equal(sl_cri_log_tail_offset(fd, 2), at[3]);
    /* "b1" (P) is not a line end: the stderr line and b1 go together */
    assert_int_equal(sl_cri_log_tail_offset(fd, 3), at[1]);
    assert_int_equal(sl_cri_log_tail_offset(fd, 4), 0);
    assert_int_equal(sl_cri_log_tail_offset(fd, 99), 0);
    assert_int_equal(sl_cri_log_tail_offset(fd, -1), 0);
    /* many blocks: 100000 lines of 32 bytes */
    assert_int_equal(ftruncate(fd, 0), 0);
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    char line[64];
    FILE *f = fdopen(dup(fd), "w");
    for (int i = 0; i < 100000; i++)
        fprintf(f, TS "stdout F %09d\n", i);
    fclose(f);
    int len = snprintf(line, sizeof line, TS "stdout F %09d\n", 0);
    assert_int_equal(sl_cri_log_tail_offset(fd, 1), (off_t)len * 99999);
    assert_int_equal(sl_cri_log_tail_offset(fd, 54321), (off_t)len * (100000 - 54321));
    close(fd);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records),     cmocka_unit_test(test_not_records),
        cmocka_unit_test(test_times),       cmocka_unit_test(test_format),
        cmocka_unit_test(test_tail_offset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
