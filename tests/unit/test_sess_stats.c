/* sluiced's streaming-session counts from the monitors' events and hello
 * (cri/sess_stats.c): live counts move with starts and ends and never go
 * below zero, hello replaces them, unknown labels are ignored, totals,
 * ends by reason (unknown: other) and bytes add up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cri/sess_stats.h"

static json_t *ev(const char *type, const char *op, const char *tr)
{
    return json_pack("{s:s, s:s, s:s, s:s}", "type", type, "operation", op, "transport", tr,
                     "protocol", "v5.channel.k8s.io");
}

static void test_live(void **state)
{
    (void)state;
    sl_sess_live l;
    memset(&l, 0, sizeof(l));
    json_t *start = ev("session_started", "exec", "websocket");
    json_t *end = ev("session_ended", "exec", "websocket");
    json_t *odd = ev("session_started", "exec", "carrier-pigeon");
    json_t *other = json_pack("{s:s}", "type", "exited");
    sl_sess_live_event(&l, start);
    sl_sess_live_event(&l, start);
    sl_sess_live_event(&l, odd);
    sl_sess_live_event(&l, other);
    assert_int_equal(l.n[0][1], 2);
    sl_sess_live_event(&l, end);
    sl_sess_live_event(&l, end);
    sl_sess_live_event(&l, end); /* an end without its start (before hello) */
    assert_int_equal(l.n[0][1], 0);
    json_t *hello = json_pack("{s:[{s:s, s:s, s:i}, {s:s, s:s, s:i}]}", "live_sessions",
                              "operation", "portforward", "transport", "spdy", "count", 3,
                              "operation", "nope", "transport", "spdy", "count", 9);
    sl_sess_live_event(&l, start);
    sl_sess_live_hello(&l, hello);
    assert_int_equal(l.n[0][1], 0); /* replaced */
    assert_int_equal(l.n[2][0], 3);
    uint32_t sum = 0;
    for (int i = 0; i < SL_SESS_OPS; i++)
        for (int j = 0; j < SL_SESS_TRANSPORTS; j++)
            sum += l.n[i][j];
    assert_int_equal(sum, 3);
    json_decref(start);
    json_decref(end);
    json_decref(odd);
    json_decref(other);
    json_decref(hello);
}

static void test_totals(void **state)
{
    (void)state;
    sl_sess_stats s;
    memset(&s, 0, sizeof(s));
    json_t *start = ev("session_started", "attach", "spdy");
    json_t *end = ev("session_ended", "attach", "spdy");
    json_object_set_new(end, "reason", json_string("client_closed"));
    json_object_set_new(end, "bytes_to_client", json_integer(1000));
    json_object_set_new(end, "bytes_from_client", json_integer(7));
    json_t *weird = json_deep_copy(end);
    json_object_set_new(weird, "reason", json_string("cosmic-ray"));
    json_object_set_new(weird, "bytes_to_client", json_integer(-5));
    sl_sess_stats_event(&s, start);
    sl_sess_stats_event(&s, end);
    sl_sess_stats_event(&s, weird);
    assert_int_equal(s.started[1][0], 1);
    assert_int_equal(s.ends[1][1], 1); /* client_closed */
    assert_int_equal(s.ends[1][SL_SESS_REASONS - 1], 1);
    assert_string_equal(sl_sess_reasons[SL_SESS_REASONS - 1], "other");
    assert_int_equal(s.bytes_to_client, 1000);
    assert_int_equal(s.bytes_from_client, 14);
    json_decref(start);
    json_decref(end);
    json_decref(weird);
}

static void test_local_observer(void **state)
{
    (void)state;
    sl_sess_stats s;
    memset(&s, 0, sizeof(s));
    sl_session_info i = {.struct_size = sizeof(sl_session_info),
                         .kind = SL_STREAM_PORTFORWARD,
                         .transport = "websocket-tunnel",
                         .protocol = "SPDY/3.1+portforward.k8s.io",
                         .target = "pod"};
    sl_sess_stats_observe(&s, &i);
    assert_int_equal(s.local.n[2][2], 1);
    assert_int_equal(s.started[2][2], 1);
    i.end_reason = "exit";
    i.bytes_to_client = 42;
    sl_sess_stats_observe(&s, &i);
    assert_int_equal(s.local.n[2][2], 0);
    assert_int_equal(s.ends[2][0], 1);
    assert_int_equal(s.bytes_to_client, 42);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_live),
        cmocka_unit_test(test_totals),
        cmocka_unit_test(test_local_observer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
