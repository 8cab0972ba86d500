#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "mon_proto.h"
#include "mon_session.h"

/* The `session` message's request and limits, both ways. */

static void roundtrip(const sl_stream_request *in, sl_stream_request *out, json_t **keep)
{
    json_t *j = sl_mon_session_request_json(in);
    assert_non_null(j);
    /* through text, as on the wire */
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    *keep = json_loads(text, 0, NULL);
    free(text);
    const char *why = NULL;
    assert_int_equal(sl_mon_session_request_parse(*keep, out, &why), 0);
}

static void test_exec(void **st)
{
    (void)st;
    const char *cmd[] = {"sh", "-c", "echo \"hi\"\n"};
    sl_stream_request in = {.struct_size = SL_STRUCT_SIZE(sl_stream_request),
                            .kind = SL_STREAM_EXEC};
    in.u.exec = (sl_exec_request){.struct_size = SL_STRUCT_SIZE(sl_exec_request),
                                  .container_id = "c1",
                                  .cmd = cmd,
                                  .ncmd = 3,
                                  .tty = true,
                                  .in = true,
                                  .out = true};
    sl_stream_request out;
    json_t *j;
    roundtrip(&in, &out, &j);
    assert_int_equal(out.kind, SL_STREAM_EXEC);
    /* parsed requests carry the sizes sl_server_adopt reads them by */
    assert_int_equal(out.struct_size, sizeof(sl_stream_request));
    assert_int_equal(out.u.exec.struct_size, sizeof(sl_exec_request));
    assert_string_equal(out.u.exec.container_id, "c1");
    assert_int_equal(out.u.exec.ncmd, 3);
    assert_string_equal(out.u.exec.cmd[2], "echo \"hi\"\n");
    assert_true(out.u.exec.tty && out.u.exec.in && out.u.exec.out && !out.u.exec.err);
    sl_mon_session_request_fini(&out);
    json_decref(j);
}

static void test_attach_and_portforward(void **st)
{
    (void)st;
    sl_stream_request a = {.struct_size = SL_STRUCT_SIZE(sl_stream_request),
                           .kind = SL_STREAM_ATTACH};
    a.u.attach = (sl_attach_request){
        .struct_size = SL_STRUCT_SIZE(sl_attach_request), .container_id = "c2", .err = true};
    sl_stream_request out;
    json_t *j;
    roundtrip(&a, &out, &j);
    assert_int_equal(out.kind, SL_STREAM_ATTACH);
    assert_int_equal(out.struct_size, sizeof(sl_stream_request));
    assert_int_equal(out.u.attach.struct_size, sizeof(sl_attach_request));
    assert_string_equal(out.u.attach.container_id, "c2");
    assert_true(out.u.attach.err && !out.u.attach.out);
    sl_mon_session_request_fini(&out);
    json_decref(j);
    uint16_t ports[] = {80, 65535};
    sl_stream_request p = {.struct_size = SL_STRUCT_SIZE(sl_stream_request),
                           .kind = SL_STREAM_PORTFORWARD};
    p.u.pf = (sl_portforward_request){.struct_size = SL_STRUCT_SIZE(sl_portforward_request),
                                      .pod_sandbox_id = "pod",
                                      .ports = ports,
                                      .nports = 2};
    roundtrip(&p, &out, &j);
    assert_int_equal(out.kind, SL_STREAM_PORTFORWARD);
    assert_int_equal(out.struct_size, sizeof(sl_stream_request));
    assert_int_equal(out.u.pf.struct_size, sizeof(sl_portforward_request));
    assert_string_equal(out.u.pf.pod_sandbox_id, "pod");
    assert_int_equal(out.u.pf.nports, 2);
    assert_int_equal(out.u.pf.ports[1], 65535);
    sl_mon_session_request_fini(&out);
    json_decref(j);
}

static void test_bad_requests(void **st)
{
    (void)st;
    const char *bad[] = {
        "{}",
        "{\"kind\":\"shell\",\"container_id\":\"c\"}",
        "{\"kind\":\"exec\",\"cmd\":[\"x\"]}",
        "{\"kind\":\"exec\",\"container_id\":\"c\",\"cmd\":[]}",
        "{\"kind\":\"exec\",\"container_id\":\"c\",\"cmd\":[1]}",
        "{\"kind\":\"exec\",\"container_id\":\"c\",\"cmd\":[\"x\"],\"tty\":1}",
        "{\"kind\":\"attach\",\"container_id\":7}",
        "{\"kind\":\"portforward\",\"ports\":[1]}",
        "{\"kind\":\"portforward\",\"pod_sandbox_id\":\"p\",\"ports\":[0]}",
        "{\"kind\":\"portforward\",\"pod_sandbox_id\":\"p\",\"ports\":[65536]}",
        "{\"kind\":\"portforward\",\"pod_sandbox_id\":\"p\",\"ports\":\"80\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *j = json_loads(bad[i], 0, NULL);
        sl_stream_request r;
        const char *why = NULL;
        if (sl_mon_session_request_parse(j, &r, &why) == 0)
            fail_msg("accepted %s", bad[i]);
        assert_non_null(why);
        sl_mon_session_request_fini(&r);
        json_decref(j);
    }
}

static void test_limits(void **st)
{
    (void)st;
    sl_mon_session_limits in = {0};
    sl_server_config_init(&in.stream);
    in.exec_native = true;
    in.stream.idle_timeout_ms = 5000;
    in.stream.output_high_water = 1234;
    in.stream.max_sessions = 7;
    in.stream.tty_size_wait_ms = 0; /* start at once: 0 must survive */
    in.pf_connect_timeout_ms = 99;
    in.attach_backlog = 8u << 20;
    in.exec_max_concurrent = 3;
    in.exec_queue_max = 0; /* 0 must survive: refuse every exec that would wait */
    in.exec_stdin_pipe_size = 4096;
    json_t *j = sl_mon_session_limits_json(&in);
    sl_mon_session_limits out;
    const char *why = NULL;
    assert_int_equal(sl_mon_session_limits_parse(j, &out, &why), 0);
    assert_int_equal(out.stream.idle_timeout_ms, 5000);
    assert_int_equal(out.stream.output_high_water, 1234);
    assert_int_equal(out.stream.max_sessions, 7);
    assert_int_equal(out.pf_connect_timeout_ms, 99);
    assert_int_equal(out.stream.tty_size_wait_ms, 0);
    assert_int_equal(out.attach_backlog, 8u << 20);
    assert_int_equal(out.exec_max_concurrent, 3);
    assert_int_equal(out.exec_queue_max, 0);
    assert_int_equal(out.exec_stdin_pipe_size, 4096);
    assert_true(out.exec_native);
    assert_int_equal(out.stream.max_ws_message, SL_DEFAULT_MAX_WS_MESSAGE);
    json_decref(j);
    /* absent: the defaults */
    assert_int_equal(sl_mon_session_limits_parse(NULL, &out, &why), 0);
    assert_int_equal(out.stream.creation_timeout_ms, SL_DEFAULT_CREATION_TIMEOUT_MS);
    assert_int_equal(out.pf_connect_timeout_ms, SL_MON_PF_CONNECT_TIMEOUT_MS);
    assert_int_equal(out.stream.tty_size_wait_ms, SL_DEFAULT_TTY_SIZE_WAIT_MS);
    assert_int_equal(out.attach_backlog, 0); /* the monitor's default */
    assert_false(out.exec_native);           /* runc unless asked */
    assert_int_equal(out.exec_max_concurrent, SL_MON_EXEC_MAX_CONCURRENT);
    assert_int_equal(out.exec_queue_max, SL_MON_EXEC_QUEUE_MAX);
    assert_int_equal(out.exec_stdin_pipe_size, SL_MON_EXEC_STDIN_PIPE_SIZE);
    const char *bad[] = {"[]",
                         "{\"idle_timeout_ms\":0}",
                         "{\"max_head_size\":10}",
                         "{\"output_high_water\":\"1\"}",
                         "{\"max_sessions\":4294967296}",
                         "{\"tty_size_wait_ms\":-1}",
                         "{\"attach_backlog\":\"8M\"}",
                         "{\"exec_max_concurrent\":0}",
                         "{\"exec_stdin_pipe_size\":4095}",
                         "{\"exec_stdin_pipe_size\":1048577}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *b = json_loads(bad[i], 0, NULL);
        if (sl_mon_session_limits_parse(b, &out, &why) == 0)
            fail_msg("accepted %s", bad[i]);
        json_decref(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exec),
        cmocka_unit_test(test_attach_and_portforward),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
