/* sluicectl's CRI call layer (rpc.c): a failed call comes back as one
 * sl_error for the command to print (the method, the gRPC status kept in
 * e->code, a hint where one helps) and nothing is printed on the way; an
 * unreachable runtime says how to choose the endpoint. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"

#define NOWHERE "unix:///tmp/test_ctl_rpc.no-such.sock"

/* stderr goes to a file while a test runs: the layer must print nothing. */
typedef struct fx {
    char path[64];
    int saved;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    snprintf(f->path, sizeof f->path, "/tmp/test_ctl_rpc.XXXXXX");
    int fd = mkstemp(f->path);
    assert_true(fd >= 0);
    fflush(stderr);
    f->saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    fflush(stderr);
    dup2(f->saved, STDERR_FILENO);
    close(f->saved);
    unlink(f->path);
    free(f);
    return 0;
}

static void assert_nothing_printed(const fx *f)
{
    struct stat st;
    fflush(stderr);
    assert_int_equal(stat(f->path, &st), 0);
    assert_int_equal(st.st_size, 0);
}

static void check_call_error(ctl *c, int code, bool local, const char *want)
{
    sl_error ce = {.code = code, .errnum = local ? ECONNRESET : 0};
    snprintf(ce.msg, sizeof ce.msg, "the cause");
    sl_error e;
    ctl_call_error(c, "ListPodSandbox", &ce, &e);
    assert_string_equal(e.msg, want);
    assert_int_equal(e.code, code);
    assert_int_equal(e.errnum, 0);
}

static void test_call_errors_name_method_and_hint(void **state)
{
    fx *f = *state;
    ctl c = {.timeout_ms = 700, .rt_endpoint_used = "unix:///r.sock"};
    check_call_error(&c, SL_CRI_UNAVAILABLE, true,
                     "ListPodSandbox: lost the runtime at unix:///r.sock: the cause");
    check_call_error(&c, SL_CRI_DEADLINE_EXCEEDED, true,
                     "ListPodSandbox: the cause (the runtime at unix:///r.sock is slow or stuck; "
                     "raise --timeout)");
    check_call_error(&c, SL_CRI_UNIMPLEMENTED, false,
                     "ListPodSandbox: the runtime at unix:///r.sock does not implement it: the "
                     "cause");
    check_call_error(&c, SL_CRI_NOT_FOUND, false, "ListPodSandbox: the cause");
    check_call_error(&c, SL_CRI_INVALID_ARGUMENT, false,
                     "ListPodSandbox failed: the cause (InvalidArgument)");
    c.rt_endpoint_used = NULL;
    check_call_error(&c, SL_CRI_UNAVAILABLE, true,
                     "ListPodSandbox: lost the runtime at the runtime: the cause");
    assert_nothing_printed(f);
}

static void test_unreachable_runtime(void **state)
{
    fx *f = *state;
    ctl c = {.timeout_ms = 700, .runtime_endpoint = NOWHERE, .config_path = "/x/sluicectl.yaml"};
    Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
    sl_error e;
    sl_error_clear(&e);
    assert_null(
        ctl_rt_call(&c, "Version", &req.base, &runtime__v1__version_response__descriptor, &e));
    assert_int_equal(e.code, SL_CRI_UNAVAILABLE);
    assert_true(strncmp(e.msg, "runtime not reachable: " NOWHERE ": ", 23 + strlen(NOWHERE) + 2) ==
                0);
    assert_non_null(strstr(e.msg, "No such file or directory"));
    assert_non_null(strstr(e.msg, "-r/--runtime-endpoint, $CONTAINER_RUNTIME_ENDPOINT or "
                                  "runtime-endpoint in /x/sluicectl.yaml."));
    /* the raw call says "not connected" apart from a runtime's answer */
    sl_error ce;
    ProtobufCMessage *r;
    sl_error_clear(&e);
    assert_int_equal(ctl_call_raw(&c, true, "ImageFsInfo", &req.base,
                                  &runtime__v1__image_fs_info_response__descriptor, &r, 700, &ce,
                                  &e),
                     CTL_NOT_CONNECTED);
    assert_null(r);
    assert_true(sl_cri_transport_failed(&ce)); /* the raw error is local, not an answer */
    assert_string_equal(ce.msg, "not connected");
    assert_non_null(strstr(e.msg, "runtime not reachable: " NOWHERE));
    sl_error_clear(&e);
    assert_null(ctl_resolve_ctr(&c, "abc", &e));
    assert_non_null(strstr(e.msg, "runtime not reachable: " NOWHERE));
    sl_error_clear(&e);
    assert_null(ctl_image_endpoint(&c, &e));
    assert_non_null(strstr(e.msg, "runtime not reachable: " NOWHERE));
    ctl_disconnect(&c);
    assert_nothing_printed(f);
}

static void test_fail_prints_once_with_the_command(void **state)
{
    fx *f = *state;
    ctl c = {.cmd = "ps"};
    sl_error e;
    sl_error_set(&e, 2, "log file /x");
    assert_int_equal(ctl_fail(&c, &e), CTL_EXIT_FAIL);
    fflush(stderr);
    char buf[256] = {0};
    FILE *in = fopen(f->path, "r");
    assert_non_null(in);
    assert_non_null(fgets(buf, sizeof buf, in));
    fclose(in);
    assert_string_equal(buf, "sluicectl ps: log file /x: No such file or directory\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_call_errors_name_method_and_hint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreachable_runtime, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fail_prints_once_with_the_command, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
