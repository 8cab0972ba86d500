/* UpdateRuntimeConfig's pod CIDR check (cri/runtime_config.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "cri/service.h"

static void test_valid(void **state)
{
    (void)state;
    const char *ok[] = {"",
                        "10.244.1.0/24",
                        "0.0.0.0/0",
                        "10.0.0.0/32",
                        "fd00:10:244::/64",
                        "10.244.1.0/24,fd00:10:244:1::/64",
                        "::/0"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        assert_true(sl_cri_valid_pod_cidr(ok[i]));
}

static void test_invalid(void **state)
{
    (void)state;
    const char *bad[] = {
        "10.244.1.0",    "10.244.1.0/",        "/24",         "10.244.1.0/33",
        "10.244.1.0/-1", "10.244.1.0/2x",      "fd00::/129",  "10.244.1/24",
        "host/24",       "10.0.0.0/8,",        ",10.0.0.0/8", "10.0.0.0/8,10.1.0.0/16,10.2.0.0/16",
        "10.0.0.0/8 ",   "10.0.0.0/8;rm -rf /"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (sl_cri_valid_pod_cidr(bad[i]))
            fail_msg("accepted \"%s\"", bad[i]);
    }
    char longer[300];
    memset(longer, '1', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    assert_false(sl_cri_valid_pod_cidr(longer));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
