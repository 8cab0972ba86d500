/* The programs' one gRPC status table (src/common/grpc_code.c): both
 * spellings of every code, and the text outside the range. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "grpc_code.h"

static void test_spec_names(void **state)
{
    (void)state;
    assert_string_equal(sl_grpc_code_name(SL_GRPC_OK), "OK");
    assert_string_equal(sl_grpc_code_name(SL_GRPC_INVALID_ARGUMENT), "INVALID_ARGUMENT");
    assert_string_equal(sl_grpc_code_name(SL_GRPC_UNIMPLEMENTED), "UNIMPLEMENTED");
    assert_string_equal(sl_grpc_code_name(SL_GRPC_UNAUTHENTICATED), "UNAUTHENTICATED");
    assert_string_equal(sl_grpc_code_name(17), "UNKNOWN");
    assert_string_equal(sl_grpc_code_name(-1), "UNKNOWN");
}

static void test_go_names(void **state)
{
    (void)state;
    assert_string_equal(sl_grpc_code_go_name(SL_GRPC_CANCELLED), "Canceled");
    assert_string_equal(sl_grpc_code_go_name(SL_GRPC_NOT_FOUND), "NotFound");
    assert_string_equal(sl_grpc_code_go_name(SL_GRPC_DEADLINE_EXCEEDED), "DeadlineExceeded");
    assert_string_equal(sl_grpc_code_go_name(17), "Code(?)");
    assert_string_equal(sl_grpc_code_go_name(-1), "Code(?)");
}

/* Every code has both names, and they spell the same words: the Go name is
 * the spec name in CamelCase (CANCELLED, spelled Canceled by Go, aside). */
static void test_every_code_both_names(void **state)
{
    (void)state;
    for (int c = 0; c <= SL_GRPC_CODE_MAX; c++) {
        const char *spec = sl_grpc_code_name(c), *go = sl_grpc_code_go_name(c);
        assert_non_null(spec);
        assert_non_null(go);
        if (c == SL_GRPC_CANCELLED)
            continue;
        char camel[32];
        size_t n = 0;
        for (const char *p = spec; *p && n + 1 < sizeof camel; p++) {
            if (*p == '_')
                continue;
            bool first = p == spec || p[-1] == '_';
            camel[n++] = first || c == SL_GRPC_OK ? *p : (char)(*p - 'A' + 'a');
        }
        camel[n] = '\0';
        assert_string_equal(go, camel);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_names),
        cmocka_unit_test(test_go_names),
        cmocka_unit_test(test_every_code_both_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
