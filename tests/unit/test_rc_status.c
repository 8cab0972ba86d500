#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "remotecommand/rc_status.h"
#include "sluice/error.h"

static void expect(int json, int attach, sl_rc_outcome o, int code, const char *msg,
                   const char *want)
{
    char *out;
    size_t len;
    assert_int_equal(sl_rc_status_format(json, attach, o, code, msg, &out, &len), SL_OK);
    if (!want) {
        assert_null(out);
        assert_int_equal(len, 0);
        return;
    }
    assert_non_null(out);
    assert_int_equal(len, strlen(want));
    assert_string_equal(out, want);
    free(out);
}

/* Byte-exact against what Go's encoding/json writes (protocol notes §5.3). */
static void v4_json(void **state)
{
    (void)state;
    expect(1, 0, SL_RC_EXITED, 0, NULL, "{\"metadata\":{},\"status\":\"Success\"}");
    expect(1, 0, SL_RC_EXITED, 42, NULL,
           "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated with non-zero "
           "exit code: exit status 42\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{"
           "\"reason\":\"ExitCode\",\"message\":\"42\"}]}}");
    expect(1, 0, SL_RC_INTERNAL, 0, "boom",
           "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Internal error occurred: error "
           "executing command in container: boom\",\"reason\":\"InternalError\",\"details\":{"
           "\"causes\":[{\"message\":\"error executing command in container: boom\"}]},\"code\":"
           "500}");
    expect(1, 1, SL_RC_INTERNAL, 0, "gone",
           "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Internal error occurred: error "
           "attaching to container: gone\",\"reason\":\"InternalError\",\"details\":{\"causes\":[{"
           "\"message\":\"error attaching to container: gone\"}]},\"code\":500}");
}

static void v1_text(void **state)
{
    (void)state;
    expect(0, 0, SL_RC_EXITED, 0, NULL, NULL);
    expect(0, 0, SL_RC_EXITED, 255, NULL,
           "command terminated with non-zero exit code: exit status 255");
    expect(0, 0, SL_RC_INTERNAL, 0, NULL,
           "Internal error occurred: error executing command in container: unknown error");
}

static void message_is_escaped(void **state)
{
    (void)state;
    expect(1, 0, SL_RC_EXITED, 1, "a \"quoted\"\nline",
           "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated with non-zero "
           "exit code: a \\\"quoted\\\"\\nline\",\"reason\":\"NonZeroExitCode\",\"details\":{"
           "\"causes\":[{\"reason\":\"ExitCode\",\"message\":\"1\"}]}}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(v4_json),
        cmocka_unit_test(v1_text),
        cmocka_unit_test(message_is_escaped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
