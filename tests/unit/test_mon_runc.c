/* mon_runc_message: the message of runc's log line (logrus text format,
 * Go-quoted), else the text trimmed; bounded by the output buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "mon.h"

/* main.c's logger is not part of mon_core. */
int mon_log_level = MON_ERR;
void mon_log(int level, const char *fmt, ...)
{
    (void)level;
    (void)fmt;
}

static void test_logrus_line(void **state)
{
    (void)state;
    char out[256];
    mon_runc_message("time=\"2026-12-01T15:23:52Z\" level=error msg=\"runc create failed: "
                     "unable to start container process: exec: \\\"nope-cmd\\\": executable "
                     "file not found in $PATH\"\n",
                     out, sizeof(out));
    assert_string_equal(out, "runc create failed: unable to start container process: exec: "
                             "\"nope-cmd\": executable file not found in $PATH");
}

static void test_last_msg_wins_and_escapes(void **state)
{
    (void)state;
    char out[64];
    mon_runc_message("level=warning msg=\"first\"\nlevel=error msg=\"a\\\\b\\tc\\nd\"", out,
                     sizeof(out));
    assert_string_equal(out, "a\\b\tc\nd");
    mon_runc_message("msg=\"unterminated", out, sizeof(out));
    assert_string_equal(out, "unterminated");
    mon_runc_message("msg=\"trailing backslash\\", out, sizeof(out));
    assert_string_equal(out, "trailing backslash\\");
}

static void test_plain_text_trimmed(void **state)
{
    (void)state;
    char out[64];
    mon_runc_message("  no terminal came on the console socket \n\n", out, sizeof(out));
    assert_string_equal(out, "no terminal came on the console socket");
    mon_runc_message("", out, sizeof(out));
    assert_string_equal(out, "");
    mon_runc_message(" \n ", out, sizeof(out));
    assert_string_equal(out, "");
}

static void test_bounded(void **state)
{
    (void)state;
    char out[8];
    mon_runc_message("msg=\"0123456789abcdef\"", out, sizeof(out));
    assert_string_equal(out, "0123456");
    mon_runc_message("0123456789abcdef", out, sizeof(out));
    assert_string_equal(out, "0123456");
    char one[1];
    mon_runc_message("msg=\"x\"", one, sizeof(one));
    assert_string_equal(one, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_logrus_line),
        cmocka_unit_test(test_last_msg_wins_and_escapes),
        cmocka_unit_test(test_plain_text_trimmed),
        cmocka_unit_test(test_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
