/* /proc/net/dev parsing and the in-namespace read (stats/netdev.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "stats/netdev.h"

static const char *table =
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
    "drop fifo colls carrier compressed\n"
    "    lo: 1204024   11119    0    0    0     0          0         0  1204024   11119    0    "
    "0    0     0       0          0\n"
    "  eth0: 133227848    5294    3    0    0     0          0         0   371492    3868    7    "
    "0    0     0       0          0\n"
    /* a counter wider than its column leaves no space after the colon */
    "verylongname15:123456789012   1 2 3 4 5 6 7 98765432109 8 9 10 11 12 13 14\n";

static void test_parse(void **state)
{
    (void)state;
    sl_netdev d[8];
    size_t n = sl_netdev_parse(table, d, 8);
    assert_int_equal(n, 3);
    assert_string_equal(d[0].name, "lo");
    assert_int_equal(d[0].rx_bytes, 1204024);
    assert_string_equal(d[1].name, "eth0");
    assert_int_equal(d[1].rx_bytes, 133227848);
    assert_int_equal(d[1].rx_errors, 3);
    assert_int_equal(d[1].tx_bytes, 371492);
    assert_int_equal(d[1].tx_errors, 7);
    assert_string_equal(d[2].name, "verylongname15");
    assert_true(d[2].rx_bytes == 123456789012ull);
    assert_int_equal(d[2].rx_errors, 2);
    assert_true(d[2].tx_bytes == 98765432109ull);
    assert_int_equal(d[2].tx_errors, 9);
}

static void test_parse_bad_and_limits(void **state)
{
    (void)state;
    sl_netdev d[2];
    assert_int_equal(sl_netdev_parse("", d, 2), 0);
    assert_int_equal(sl_netdev_parse("h1\nh2\n", d, 2), 0);
    /* only one header line: the first interface line is taken as a header */
    assert_int_equal(sl_netdev_parse("h\n a: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n", d, 2), 0);
    const char *bad = "h1\nh2\n"
                      " noc 1 2 3\n"                                    /* no colon */
                      " short: 1 2 3\n"                                 /* 3 numbers */
                      " neg: -1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n" /* sign */
                      ": 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n"      /* no name */
                      " thisnameistoolong: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n"
                      " ok: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n"
                      " ok2: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n"
                      " ok3: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n";
    size_t n = sl_netdev_parse(bad, d, 2); /* bounded by max */
    assert_int_equal(n, 2);
    assert_string_equal(d[0].name, "ok");
    assert_int_equal(d[0].tx_bytes, 9);
    assert_string_equal(d[1].name, "ok2");
}

/* This process's own namespace through the thread path: the same names as
 * /proc/net/dev read directly. */
static void test_read_netns(void **state)
{
    (void)state;
    sl_netdev in[SL_NETDEV_MAX], direct[SL_NETDEV_MAX];
    sl_error e;
    int n = sl_netdev_read_netns("/proc/self/ns/net", in, SL_NETDEV_MAX, &e);
    assert_true(n > 0);
    char *text = NULL;
    assert_int_equal(sl_read_file("/proc/net/dev", SL_NETDEV_TEXT_MAX, &text, NULL, &e), 0);
    size_t m = sl_netdev_parse(text, direct, SL_NETDEV_MAX);
    free(text);
    assert_int_equal((size_t)n, m);
    for (size_t i = 0; i < m; i++)
        assert_string_equal(in[i].name, direct[i].name);
    assert_int_equal(sl_netdev_read_netns("/nonexistent/netns", in, SL_NETDEV_MAX, &e), -1);
    assert_int_equal(e.errnum, ENOENT);
    /* a file that is not a namespace */
    assert_int_equal(sl_netdev_read_netns("/proc/self/status", in, SL_NETDEV_MAX, &e), -1);
    assert_int_equal(e.errnum, EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_parse_bad_and_limits),
        cmocka_unit_test(test_read_netns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
