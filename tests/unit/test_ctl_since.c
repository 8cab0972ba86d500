/* sluicectl logs --since (since.c), read as crictl reads it: Go durations
 * back from now cut to whole seconds, RFC 3339 dates and times with or
 * without zone (local time, here with TZ=UTC and TZ=IST-5:30), Unix
 * seconds; anything else refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <time.h>

#include "ctl.h"

#define S 1000000000LL
#define NOW (10000 * S + 700000000LL) /* 10000.7 s after the epoch */

static int64_t since(const char *v)
{
    int64_t ns = -1;
    if (ctl_parse_since_at(v, NOW, &ns) < 0)
        fail_msg("\"%s\" refused", v);
    return ns;
}

static void test_durations(void **state)
{
    (void)state;
    assert_int_equal(since("42m"), 7480 * S);
    assert_int_equal(since("1h30m"), 4600 * S);
    assert_int_equal(since("1.5h"), 4600 * S);
    assert_int_equal(since("500ms"), 10000 * S); /* 10000.2 s, cut to the second */
    assert_int_equal(since("-5s"), 10005 * S);   /* in the future: nothing shows */
    assert_int_equal(since("10us"), 10000 * S);
    assert_int_equal(since("0"), 0); /* not a duration: Unix time 0 */
}

static void test_times(void **state)
{
    (void)state;
    setenv("TZ", "UTC", 1);
    tzset();
    assert_int_equal(since("2013-01-02T13:23:37Z"), 1357133017 * S);
    assert_int_equal(since("2013-01-02T13:23:37+01:00"), 1357129417 * S);
    assert_int_equal(since("2013-01-02T13:23:37.5Z"), 1357133017 * S + 500000000);
    assert_int_equal(since("2013-01-02T13:23:37"), 1357133017 * S);
    assert_int_equal(since("2013-01-02T13:23"), 1357132980 * S);
    assert_int_equal(since("2013-01-02T13"), 1357131600 * S);
    assert_int_equal(since("2013-01-02"), 1357084800 * S);
    assert_int_equal(since("2013-01-02Z"), 1357084800 * S);
    setenv("TZ", "IST-5:30", 1); /* POSIX rule, no tz database needed: +05:30 */
    tzset();
    assert_int_equal(since("2013-01-02T13:23:37"), (1357133017 - 19800) * S);
    setenv("TZ", "UTC", 1);
    tzset();
    assert_int_equal(since("1700000000"), 1700000000 * S);
    assert_int_equal(since("1700000000.25"), 1700000000 * S + 250000000);
}

static void test_refused(void **state)
{
    (void)state;
    const char *bad[] = {"",
                         "soon",
                         "1h5",
                         "2013-13-02",
                         "2013-01-02T25",
                         "12-3",
                         "T13",
                         "2013-01-02T13:23:37+0100",
                         "1700000000.5x",
                         "5 m"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ns;
        if (ctl_parse_since_at(bad[i], NOW, &ns) == 0)
            fail_msg("\"%s\" taken (%lld)", bad[i], (long long)ns);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
