#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "sluice/version.h"

/* sl_version(): the running library says the version its header names. */

static void test_version_matches_header(void **state)
{
    (void)state;
    assert_string_equal(sl_version(), SLUICE_VERSION);
    char want[32];
    snprintf(want, sizeof(want), "%d.%d.%d", SLUICE_VERSION_MAJOR, SLUICE_VERSION_MINOR,
             SLUICE_VERSION_PATCH);
    assert_string_equal(sl_version(), want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_matches_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
