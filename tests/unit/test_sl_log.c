/* The daemons' log lines: logfmt fields, quoting, levels, the journal's
 * priority prefix and its detection, the cut of an over-long line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sl_log.h"

static void test_levels(void **state)
{
    (void)state;
    assert_int_equal(sl_log_level_parse("error"), SL_LOG_ERROR);
    assert_int_equal(sl_log_level_parse("warn"), SL_LOG_WARN);
    assert_int_equal(sl_log_level_parse("warning"), SL_LOG_WARN);
    assert_int_equal(sl_log_level_parse("info"), SL_LOG_INFO);
    assert_int_equal(sl_log_level_parse("debug"), SL_LOG_DEBUG);
    assert_int_equal(sl_log_level_parse("INFO"), -1);
    assert_int_equal(sl_log_level_parse(""), -1);
    assert_string_equal(sl_log_level_name(SL_LOG_WARN), "warn");
    sl_log_set_level(SL_LOG_WARN);
    assert_true(sl_log_enabled(SL_LOG_ERROR));
    assert_true(sl_log_enabled(SL_LOG_WARN));
    assert_false(sl_log_enabled(SL_LOG_INFO));
    sl_log_set_level(9); /* ignored */
    assert_int_equal(sl_log_get_level(), SL_LOG_WARN);
    sl_log_set_level(SL_LOG_INFO);
}

static void test_plain_line(void **state)
{
    (void)state;
    char buf[512];
    const char *kv[] = {"method", "RunPodSandbox", "pod", "abc", "skipped", NULL};
    size_t n = sl_log_format(buf, sizeof(buf), SL_LOG_WARN, "2025-01-02T03:04:05.000006Z", false,
                             "CRI call failed", kv, 3);
    assert_string_equal(buf, "time=2025-01-02T03:04:05.000006Z level=warn msg=\"CRI call failed\" "
                             "method=RunPodSandbox pod=abc\n");
    assert_int_equal(n, strlen(buf));
}

static void test_journal_line(void **state)
{
    (void)state;
    char buf[256];
    sl_log_format(buf, sizeof(buf), SL_LOG_ERROR, NULL, true, "start failed", NULL, 0);
    assert_string_equal(buf, "<3>level=error msg=\"start failed\"\n");
    sl_log_format(buf, sizeof(buf), SL_LOG_DEBUG, NULL, true, "x", NULL, 0);
    assert_string_equal(buf, "<7>level=debug msg=x\n");
    sl_log_format(buf, sizeof(buf), SL_LOG_INFO, NULL, true, "x", NULL, 0);
    assert_string_equal(buf, "<6>level=info msg=x\n");
    sl_log_format(buf, sizeof(buf), SL_LOG_WARN, NULL, true, "x", NULL, 0);
    assert_string_equal(buf, "<4>level=warn msg=x\n");
}

/* A value is one field whatever it holds: quotes, escapes, no raw newline. */
static void test_quoting(void **state)
{
    (void)state;
    char buf[512];
    const char *kv[] = {
        "a", "", "b", "x=y", "c", "say \"hi\"\\", "d", "two\nlines\ttab\x01", "e", "plain/path:1"};
    sl_log_format(buf, sizeof(buf), SL_LOG_INFO, NULL, false, "m", kv, 5);
    assert_string_equal(buf, "level=info msg=m a=\"\" b=\"x=y\" c=\"say \\\"hi\\\"\\\\\" "
                             "d=\"two\\nlines\\ttab\\x01\" e=plain/path:1\n");
    assert_ptr_equal(strchr(buf, '\n'), buf + strlen(buf) - 1); /* one line */
}

static void test_cut(void **state)
{
    (void)state;
    char buf[64];
    char big[200];
    memset(big, 'v', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    const char *kv[] = {"k", big};
    size_t n = sl_log_format(buf, sizeof(buf), SL_LOG_INFO, NULL, false, "m", kv, 1);
    assert_int_equal(n, strlen(buf));
    assert_true(n < sizeof(buf));
    assert_string_equal(buf + n - 4, "...\n");
    /* a value beyond SL_LOG_VALUE_MAX is cut inside its quotes */
    char *huge = malloc(SL_LOG_VALUE_MAX + 10);
    memset(huge, ' ', SL_LOG_VALUE_MAX + 9);
    huge[SL_LOG_VALUE_MAX + 9] = '\0';
    char *line = malloc(SL_LOG_LINE_MAX);
    const char *kv2[] = {"k", huge};
    n = sl_log_format(line, SL_LOG_LINE_MAX, SL_LOG_INFO, NULL, false, "m", kv2, 1);
    assert_string_equal(line + n - 5, "...\"\n");
    free(huge);
    free(line);
}

static void test_timestamp(void **state)
{
    (void)state;
    char ts[32];
    sl_log_timestamp(1735787045000006000LL, ts);
    assert_string_equal(ts, "2025-01-02T03:04:05.000006Z");
}

/* JOURNAL_STREAM names DEV:INO of stderr when systemd connects it. */
static void test_journal_detection(void **state)
{
    (void)state;
    char path[] = "/tmp/test_sl_log.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    char v[64];
    snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    unsetenv("JOURNAL_STREAM");
    assert_false(sl_log_is_journal(fd));
    setenv("JOURNAL_STREAM", v, 1);
    assert_true(sl_log_is_journal(fd));
    snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino + 1);
    setenv("JOURNAL_STREAM", v, 1);
    assert_false(sl_log_is_journal(fd));
    setenv("JOURNAL_STREAM", "garbage", 1);
    assert_false(sl_log_is_journal(fd));
    unsetenv("JOURNAL_STREAM");
    /* sl_log writes whole lines to the fd it was given, NULL values left out */
    sl_log_setup(fd, true);
    sl_log(SL_LOG_INFO, "hello", "a", "1", "b", NULL, "c", "3", NULL);
    sl_log(SL_LOG_DEBUG, "not written", NULL);
    sl_log_setup(2, false);
    char got[128] = "";
    assert_true(pread(fd, got, sizeof(got) - 1, 0) > 0);
    assert_string_equal(got, "<6>level=info msg=hello a=1 c=3\n");
    close(fd);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels),
        cmocka_unit_test(test_plain_line),
        cmocka_unit_test(test_journal_line),
        cmocka_unit_test(test_quoting),
        cmocka_unit_test(test_cut),
        cmocka_unit_test(test_timestamp),
        cmocka_unit_test(test_journal_detection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
