/* sl_mon_restart_take: monitor-restart-max new monitors per pod within
 * SL_MON_RESTART_WINDOW_MS, counted from the first; 0 allows none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cri/mon_adopt.h"
#include "cri/mon_spawn.h"

static void test_max_per_window(void **state)
{
    (void)state;
    uint64_t window = 0;
    uint32_t n = 0;
    for (int i = 0; i < 3; i++)
        assert_true(sl_mon_restart_take(&window, &n, 5000 + (uint64_t)i, 3));
    assert_false(sl_mon_restart_take(&window, &n, 5003, 3));
    assert_false(sl_mon_restart_take(&window, &n, 5000 + SL_MON_RESTART_WINDOW_MS - 1, 3));
    assert_int_equal(n, 3);
    /* the window has passed: a new one starts at that moment */
    assert_true(sl_mon_restart_take(&window, &n, 5000 + SL_MON_RESTART_WINDOW_MS, 3));
    assert_int_equal(window, 5000 + SL_MON_RESTART_WINDOW_MS);
    assert_int_equal(n, 1);
}

static void test_zero_allows_none(void **state)
{
    (void)state;
    uint64_t window = 0;
    uint32_t n = 0;
    assert_false(sl_mon_restart_take(&window, &n, 1, 0));
    assert_false(sl_mon_restart_take(&window, &n, 10 * SL_MON_RESTART_WINDOW_MS, 0));
}

static void test_loop_time_zero(void **state)
{
    (void)state; /* uv_now may read 0 at start: the window still counts */
    uint64_t window = 0;
    uint32_t n = 0;
    assert_true(sl_mon_restart_take(&window, &n, 0, 1));
    assert_false(sl_mon_restart_take(&window, &n, 0, 1));
    assert_int_not_equal(window, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max_per_window),
        cmocka_unit_test(test_zero_allows_none),
        cmocka_unit_test(test_loop_time_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
