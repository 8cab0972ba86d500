#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "sluice/error.h"

/* sl_strerror and sl_err_is_fatal: every code has its own text, unknown
 * codes get one too, and only the peer band (-100..-199) is fatal. */

static const int CODES[] = {
    SL_OK,
    SL_ERR_NOMEM,
    SL_ERR_INVAL,
    SL_ERR_FULL,
    SL_ERR_NOTFOUND,
    SL_ERR_SYS,
    SL_ERR_WOULDBLOCK,
    SL_ERR_CLOSED,
    SL_ERR_STATE,
    SL_ERR_PROTO,
    SL_ERR_TOO_LARGE,
    SL_ERR_UNSUPPORTED,
    SL_ERR_COMPRESSION,
};
#define NCODES (sizeof(CODES) / sizeof(CODES[0]))

static void test_every_code_has_its_own_text(void **state)
{
    (void)state;
    for (size_t i = 0; i < NCODES; i++) {
        const char *t = sl_strerror(CODES[i]);
        assert_non_null(t);
        assert_true(strlen(t) > 0);
        assert_string_not_equal(t, "unknown error");
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(t, sl_strerror(CODES[j]));
    }
    assert_string_equal(sl_strerror(SL_OK), "success");
    assert_string_equal(sl_strerror(SL_ERR_NOMEM), "out of memory");
}

static void test_unknown_codes(void **state)
{
    (void)state;
    assert_string_equal(sl_strerror(-9), "unknown error");
    assert_string_equal(sl_strerror(1), "unknown error");
    assert_string_equal(sl_strerror(-104), "unknown error");
}

static void test_fatal_band(void **state)
{
    (void)state;
    assert_true(sl_err_is_fatal(SL_ERR_PROTO));
    assert_true(sl_err_is_fatal(SL_ERR_COMPRESSION));
    assert_true(sl_err_is_fatal(-199));
    assert_false(sl_err_is_fatal(-200));
    assert_false(sl_err_is_fatal(SL_OK));
    assert_false(sl_err_is_fatal(SL_ERR_NOMEM));
    assert_false(sl_err_is_fatal(SL_ERR_STATE));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_code_has_its_own_text),
        cmocka_unit_test(test_unknown_codes),
        cmocka_unit_test(test_fatal_band),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
