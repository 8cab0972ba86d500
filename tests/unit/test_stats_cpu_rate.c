/* usage_nano_cores arithmetic (stats/cpu_rate.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "stats/cpu_rate.h"

#define S 1000000000LL
#define WINDOW S

static void test_first_sample_has_no_rate(void **state)
{
    (void)state;
    sl_cpu_rate r;
    memset(&r, 0, sizeof(r));
    uint64_t nc = 42;
    assert_false(sl_cpu_rate_update(&r, 10 * S, 5 * S, WINDOW, &nc));
    assert_int_equal(nc, 42); /* untouched */
}

static void test_one_core_busy(void **state)
{
    (void)state;
    sl_cpu_rate r;
    memset(&r, 0, sizeof(r));
    uint64_t nc;
    sl_cpu_rate_update(&r, 10 * S, 5 * S, WINDOW, &nc);
    /* 1.5 s of CPU over 1.5 s: one core */
    assert_true(sl_cpu_rate_update(&r, 10 * S + 3 * S / 2, 5 * S + 3 * S / 2, WINDOW, &nc));
    assert_int_equal(nc, 1000000000);
    /* 0.5 s of CPU over the next 2 s: a quarter core */
    assert_true(sl_cpu_rate_update(&r, 13 * S + S / 2, 7 * S, WINDOW, &nc));
    assert_int_equal(nc, 250000000);
}

static void test_short_window_keeps_last_rate_and_base(void **state)
{
    (void)state;
    sl_cpu_rate r;
    memset(&r, 0, sizeof(r));
    uint64_t nc;
    sl_cpu_rate_update(&r, 0 + 1, 0, WINDOW, &nc);
    /* 100 ms later: too short for a first rate */
    assert_false(sl_cpu_rate_update(&r, S / 10 + 1, S / 10, WINDOW, &nc));
    /* 1 s after the base (not after the short sample): 2 cores */
    assert_true(sl_cpu_rate_update(&r, S + 1, 2 * S, WINDOW, &nc));
    assert_int_equal(nc, 2000000000);
    /* a call 10 ms later repeats the last rate */
    assert_true(sl_cpu_rate_update(&r, S + S / 100 + 1, 2 * S + 1, WINDOW, &nc));
    assert_int_equal(nc, 2000000000);
    /* and the window still counts from the base at 1 s */
    assert_true(sl_cpu_rate_update(&r, 2 * S + 1, 2 * S + S / 2, WINDOW, &nc));
    assert_int_equal(nc, 500000000);
}

static void test_counter_reset_and_clock(void **state)
{
    (void)state;
    sl_cpu_rate r;
    memset(&r, 0, sizeof(r));
    uint64_t nc;
    sl_cpu_rate_update(&r, S, 10 * S, WINDOW, &nc);
    assert_true(sl_cpu_rate_update(&r, 2 * S, 10 * S + S / 2, WINDOW, &nc));
    /* a new cgroup under the same name: the counter went backwards */
    assert_false(sl_cpu_rate_update(&r, 3 * S, 1000, WINDOW, &nc));
    assert_true(sl_cpu_rate_update(&r, 4 * S, 1000 + S / 4, WINDOW, &nc));
    assert_int_equal(nc, 250000000);
    /* a time that did not advance restarts too, without a rate */
    assert_false(sl_cpu_rate_update(&r, 4 * S, 1000 + S / 2, WINDOW, &nc));
}

static void test_large_values(void **state)
{
    (void)state;
    sl_cpu_rate r;
    memset(&r, 0, sizeof(r));
    uint64_t nc;
    /* a year of CPU on 64 cores, then 10 s at 64 cores: no overflow */
    uint64_t year = 365ull * 24 * 3600 * S * 64;
    sl_cpu_rate_update(&r, 100 * S, year, WINDOW, &nc);
    assert_true(sl_cpu_rate_update(&r, 110 * S, year + 640ull * S, WINDOW, &nc));
    assert_int_equal(nc, 64000000000ull);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_sample_has_no_rate),
        cmocka_unit_test(test_one_core_busy),
        cmocka_unit_test(test_short_window_keeps_last_rate_and_base),
        cmocka_unit_test(test_counter_reset_and_clock),
        cmocka_unit_test(test_large_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
