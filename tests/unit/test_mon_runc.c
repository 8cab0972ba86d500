/* mon_runc_message: the message of runc's log line (logrus text format,
 * Go-quoted), else the text trimmed; bounded by the output buffer.
 * mon_status_of_code: the inverse of mon_exit_code for an exit record. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include <sys/wait.h>

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

static void test_status_of_code_round_trip(void **state)
{
    (void)state;
    for (int code = 0; code <= 255; code++)
        assert_int_equal(mon_exit_code(mon_status_of_code(code)), code);
    assert_true(WIFSIGNALED(mon_status_of_code(137)));
    assert_int_equal(WTERMSIG(mon_status_of_code(137)), 9);
    assert_true(WIFEXITED(mon_status_of_code(7)));
    assert_true(WIFEXITED(mon_status_of_code(128))); /* exit 128, no signal 0 */
    assert_true(WIFEXITED(mon_status_of_code(255))); /* beyond every signal */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_logrus_line),
        cmocka_unit_test(test_last_msg_wins_and_escapes),
        cmocka_unit_test(test_plain_text_trimmed),
        cmocka_unit_test(test_bounded),
        cmocka_unit_test(test_status_of_code_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
