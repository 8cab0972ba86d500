/* grpc-timeout header parsing: every unit, rounding, limits, malformed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "grpc/grpc_timeout.h"
#include "sluice/error.h"

static uint64_t ok(const char *s)
{
    uint64_t ms = 12345;
    assert_int_equal(sl_grpc_timeout_parse(s, strlen(s), &ms), SL_OK);
    return ms;
}

static void bad(const char *s, size_t len)
{
    uint64_t ms = 777;
    assert_int_equal(sl_grpc_timeout_parse(s, len, &ms), SL_ERR_PROTO);
    assert_int_equal(ms, 777); /* untouched on error */
}

static void test_units(void **state)
{
    (void)state;
    assert_int_equal(ok("2H"), 2u * 3600 * 1000);
    assert_int_equal(ok("3M"), 3u * 60 * 1000);
    assert_int_equal(ok("10S"), 10000u);
    assert_int_equal(ok("250m"), 250u);
    assert_int_equal(ok("2000u"), 2u);
    assert_int_equal(ok("5000000n"), 5u);
}

static void test_rounding_up(void **state)
{
    (void)state;
    assert_int_equal(ok("1n"), 1);
    assert_int_equal(ok("999999n"), 1);
    assert_int_equal(ok("1000000n"), 1);
    assert_int_equal(ok("1000001n"), 2);
    assert_int_equal(ok("1u"), 1);
    assert_int_equal(ok("1000u"), 1);
    assert_int_equal(ok("1001u"), 2);
    assert_int_equal(ok("0n"), 0);
    assert_int_equal(ok("0S"), 0);
    assert_int_equal(ok("00000001S"), 1000);
}

/* The largest values of every unit fit without overflow. */
static void test_limits(void **state)
{
    (void)state;
    assert_int_equal(ok("99999999H"), UINT64_C(99999999) * 3600000);
    assert_int_equal(ok("99999999M"), UINT64_C(99999999) * 60000);
    assert_int_equal(ok("99999999S"), UINT64_C(99999999) * 1000);
    assert_int_equal(ok("99999999m"), UINT64_C(99999999));
    assert_int_equal(ok("99999999u"), UINT64_C(100000));
    assert_int_equal(ok("99999999n"), UINT64_C(100));
    /* 9 digits are too many, whatever their value. */
    bad("100000000H", 10);
    bad("000000001S", 10);
    bad("18446744073709551617n", 21);
}

static void test_malformed(void **state)
{
    (void)state;
    bad("", 0);
    bad("S", 1);
    bad("1", 1);
    bad("10", 2);
    bad("1x", 2);
    bad("1h", 2); /* units are case-sensitive */
    bad("1s", 2);
    bad("-1S", 3);
    bad("+1S", 3);
    bad(" 1S", 3);
    bad("1 S", 3);
    bad("1S ", 3);
    bad("1.5S", 4);
    bad("1SS", 3);
    bad("0x1S", 4);
    bad("1\0S", 3);
}

/* Only len bytes count: the header value need not be NUL-terminated. */
static void test_length_bounded(void **state)
{
    (void)state;
    uint64_t ms;
    assert_int_equal(sl_grpc_timeout_parse("15mjunk", 3, &ms), SL_OK);
    assert_int_equal(ms, 15);
    assert_int_equal(sl_grpc_timeout_parse("15m", 2, &ms), SL_ERR_PROTO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units),          cmocka_unit_test(test_rounding_up),
        cmocka_unit_test(test_limits),         cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_length_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
