/* Server-streaming calls on the gRPC connection core, in memory: many
 * messages then trailers, headers before the first message, errors after
 * messages, a client that does not read (the backlog bound, RESOURCE_
 * EXHAUSTED, only whole messages delivered), cancellation by RST_STREAM,
 * by connection loss and by deadline, and GOAWAY with a text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_fx.h"
#include "sluice/error.h"

#define BACKLOG 4096u
#define MSG_TEXT 1000u /* bytes of text per streamed message */

/* A VersionResponse whose version is "<i>:" padded with 'x' to len. */
static void send_nth(sl_grpc_call *call, int i, size_t len, int want)
{
    char *text = malloc(len + 1);
    assert_non_null(text);
    memset(text, 'x', len);
    text[len] = '\0';
    int n = snprintf(text, len + 1, "%d:", i);
    if ((size_t)n < len)
        text[n] = 'x';
    Runtime__V1__VersionResponse m = RUNTIME__V1__VERSION_RESPONSE__INIT;
    m.version = text;
    assert_int_equal(sl_grpc_call_send(call, &m.base), want);
    free(text);
}

/* Stream: 50 short messages, then OK. */
static void h_stream(sl_grpc_call *call, void *arg)
{
    (void)arg;
    for (int i = 0; i < 50; i++)
        send_nth(call, i, 8, SL_OK);
    sl_grpc_call_finish(call);
}

static void h_empty(sl_grpc_call *call, void *arg)
{
    (void)arg;
    sl_grpc_call_finish(call);
}

static void h_reply(sl_grpc_call *call, void *arg)
{
    (void)arg;
    Runtime__V1__VersionResponse m = RUNTIME__V1__VERSION_RESPONSE__INIT;
    m.version = "only";
    assert_int_equal(sl_grpc_call_reply(call, &m.base), SL_OK);
}

/* Unary: streaming calls are refused. */
static void h_unary(sl_grpc_call *call, void *arg)
{
    (void)arg;
    Runtime__V1__VersionResponse m = RUNTIME__V1__VERSION_RESPONSE__INIT;
    assert_int_equal(sl_grpc_call_send_headers(call), SL_ERR_STATE);
    assert_int_equal(sl_grpc_call_send(call, &m.base), SL_ERR_STATE);
    sl_grpc_call_reply(call, &m.base);
}

#define S(p, h)                                                                                    \
    {                                                                                              \
        .path = p, .request = &runtime__v1__version_request__descriptor, .handler = h,             \
        .server_streaming = true                                                                   \
    }

static const sl_grpc_method methods[] = {
    S("/t.S/Stream", h_stream),
    S("/t.S/Empty", h_empty),
    S("/t.S/Reply", h_reply),
    S("/t.S/Hold", gfx_h_later),
    {.path = "/t.S/Unary",
     .request = &runtime__v1__version_request__descriptor,
     .handler = h_unary},
};
#define NMETHODS (sizeof(methods) / sizeof(methods[0]))

static int setup(void **state)
{
    fixture *f = gfx_new(methods, NMETHODS, false);
    *state = f;
    return 0;
}

/* A client that returns window credit only when told to. */
static int setup_manual(void **state)
{
    fixture *f = gfx_new(methods, NMETHODS, true);
    f->cfg.max_stream_backlog = BACKLOG;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    gfx_free(*state);
    return 0;
}

/* The i-th message of s: its index prefix and length. */
static void expect_nth(const cstream *s, size_t i, size_t len)
{
    Runtime__V1__VersionResponse *m =
        (void *)response_nth(s, &runtime__v1__version_response__descriptor, i, NULL);
    assert_non_null(m);
    char want[24];
    snprintf(want, sizeof(want), "%zu:", i);
    assert_int_equal(strncmp(m->version, want, strlen(want)), 0);
    assert_int_equal(strlen(m->version), len);
    protobuf_c_message_free_unpacked(&m->base, NULL);
}

static size_t messages(const cstream *s)
{
    size_t n;
    ProtobufCMessage *m = response_nth(s, &runtime__v1__version_response__descriptor, 0, &n);
    if (m)
        protobuf_c_message_free_unpacked(m, NULL);
    return n;
}

static sl_grpc_call *hold(fixture *f, cstream **s)
{
    *s = submit_version(f, "/t.S/Hold", "", NULL);
    pump(f);
    assert_int_equal(f->npending, 1);
    return f->pending[0];
}

static void release(fixture *f, int i)
{
    sl_grpc_call_finish(f->pending[i]);
    f->pending[i] = NULL;
}

/* ---- tests ----------------------------------------------------------------- */

static void test_many_messages_then_ok(void **state)
{
    fixture *f = *state;
    cstream *s = submit_version(f, "/t.S/Stream", "", NULL);
    pump(f);
    expect_status(s, SL_GRPC_OK, NULL);
    assert_int_equal(s->header_blocks, 2); /* headers, trailers */
    assert_int_equal(messages(s), 50);
    for (size_t i = 0; i < 50; i++)
        expect_nth(s, i, 8);
    assert_int_equal(sl_grpc_conn_calls(f->conn), 0);
}

static void test_empty_stream_is_trailers_only(void **state)
{
    fixture *f = *state;
    cstream *s = submit_version(f, "/t.S/Empty", "", NULL);
    pump(f);
    expect_status(s, SL_GRPC_OK, NULL);
    assert_true(s->trailers_only);
    assert_int_equal(s->dlen, 0);
}

static void test_reply_on_stream(void **state)
{
    fixture *f = *state;
    cstream *s = submit_version(f, "/t.S/Reply", "", NULL);
    pump(f);
    expect_status(s, SL_GRPC_OK, NULL);
    assert_int_equal(messages(s), 1);
}

static void test_unary_method_refuses_send(void **state)
{
    fixture *f = *state;
    cstream *s = submit_version(f, "/t.S/Unary", "", NULL);
    pump(f);
    expect_status(s, SL_GRPC_OK, NULL);
}

/* Headers on their own tell the client it is subscribed; messages sent
 * later (outside recv) wake the owner and arrive one by one. */
static void test_headers_then_messages_later(void **state)
{
    fixture *f = *state;
    cstream *s;
    sl_grpc_call *call = hold(f, &s);
    assert_true(sl_grpc_conn_busy(f->conn));
    assert_int_equal(sl_grpc_call_send_headers(call), SL_OK);
    assert_int_equal(sl_grpc_call_send_headers(call), SL_OK); /* once only */
    pump(f);
    assert_int_equal(s->http, 200);
    assert_int_equal(s->header_blocks, 1);
    assert_false(s->closed);
    for (int i = 0; i < 3; i++) {
        int wakes = f->wakes;
        send_nth(call, i, 20, SL_OK);
        assert_true(f->wakes > wakes);
        pump(f);
        assert_int_equal(messages(s), (size_t)i + 1);
    }
    release(f, 0);
    assert_false(sl_grpc_conn_busy(f->conn));
    pump(f);
    expect_status(s, SL_GRPC_OK, NULL);
    assert_int_equal(s->header_blocks, 2);
}

static void test_fail_after_messages(void **state)
{
    fixture *f = *state;
    cstream *s;
    sl_grpc_call *call = hold(f, &s);
    send_nth(call, 0, 30, SL_OK);
    send_nth(call, 1, 30, SL_OK);
    sl_grpc_call_fail(call, SL_GRPC_NOT_FOUND, "pod %s gone", "p1");
    f->pending[0] = NULL;
    pump(f);
    assert_int_equal(messages(s), 2);
    expect_status(s, SL_GRPC_NOT_FOUND, "pod p1 gone");
    assert_false(s->trailers_only);
}

/* The client stops returning window credit: the connection window
 * (65535) fills, then BACKLOG bytes wait in the call, then the next send
 * ends it. The client, reading again, gets only whole messages, in
 * order, then RESOURCE_EXHAUSTED. */
static void test_slow_client_bounded(void **state)
{
    fixture *f = *state;
    cstream *s;
    sl_grpc_call *call = hold(f, &s);
    int sent = 0;
    for (; sent < 1000; sent++) {
        char text[MSG_TEXT + 1];
        memset(text, 'x', MSG_TEXT);
        text[MSG_TEXT] = '\0';
        int n = snprintf(text, sizeof(text), "%d:", sent);
        text[n] = 'x';
        Runtime__V1__VersionResponse m = RUNTIME__V1__VERSION_RESPONSE__INIT;
        m.version = text;
        int rc = sl_grpc_call_send(call, &m.base);
        pump(f);
        if (rc == SL_ERR_FULL)
            break;
        assert_int_equal(rc, SL_OK);
    }
    /* 65535 / 1005 whole messages in flight, BACKLOG / 1005 waiting. */
    size_t per = MSG_TEXT + 3 + SL_GRPC_PREFIX_LEN;
    assert_true(sent >= (int)(NGHTTP2_INITIAL_WINDOW_SIZE / per));
    assert_true(sent <= (int)((NGHTTP2_INITIAL_WINDOW_SIZE + BACKLOG) / per) + 2);
    assert_true(sl_grpc_call_cancelled(call));
    assert_int_equal(f->cancels, 0); /* the handler learns it from send */
    send_nth(call, 9999, 10, SL_ERR_CLOSED);
    release(f, 0);
    assert_false(s->closed);
    /* The client reads again. */
    for (int i = 0; i < 100 && !s->closed; i++) {
        gfx_consume(f, s, s->dlen);
        pump(f);
    }
    expect_status(s, SL_GRPC_RESOURCE_EXHAUSTED, "the client fell behind");
    size_t got = messages(s);
    /* What was in the window, and the message cut by it (finished). */
    assert_true(got >= NGHTTP2_INITIAL_WINDOW_SIZE / per);
    assert_true(got <= NGHTTP2_INITIAL_WINDOW_SIZE / per + 1);
    for (size_t i = 0; i < got; i++)
        expect_nth(s, i, MSG_TEXT);
    assert_int_equal(sl_grpc_conn_calls(f->conn), 0);
}

/* A message larger than the backlog goes when nothing else waits. */
static void test_large_message_alone(void **state)
{
    fixture *f = *state;
    cstream *s;
    sl_grpc_call *call = hold(f, &s);
    send_nth(call, 0, 3 * BACKLOG, SL_OK);
    pump(f); /* it fits the window: nothing waits */
    send_nth(call, 1, 3 * BACKLOG, SL_OK);
    pump(f);
    release(f, 0);
    pump(f);
    expect_status(s, SL_GRPC_OK, NULL);
    assert_int_equal(messages(s), 2);
    expect_nth(s, 1, 3 * BACKLOG);
}

/* Messages not begun are dropped at the overflow, not only the new one. */
static void test_overflow_drops_waiting(void **state)
{
    fixture *f = *state;
    cstream *s;
    sl_grpc_call *call = hold(f, &s);
    send_nth(call, 0, 3 * BACKLOG, SL_OK);
    send_nth(call, 1, 10, SL_ERR_FULL); /* the big one still waits */
    release(f, 0);
    pump(f);
    expect_status(s, SL_GRPC_RESOURCE_EXHAUSTED, "2 messages dropped");
    assert_int_equal(messages(s), 0);
    assert_int_equal(s->header_blocks, 2);
}

static void test_client_cancel(void **state)
{
    fixture *f = *state;
    cstream *s;
    sl_grpc_call *call = hold(f, &s);
    send_nth(call, 0, 10, SL_OK);
    pump(f);
    nghttp2_submit_rst_stream(f->cli, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_CANCEL);
    pump(f);
    assert_int_equal(f->cancels, 1);
    assert_true(sl_grpc_call_cancelled(call));
    assert_int_equal(sl_grpc_conn_calls(f->conn), 0);
    assert_false(sl_grpc_conn_busy(f->conn));
    send_nth(call, 1, 10, SL_ERR_CLOSED);
    assert_int_equal(sl_grpc_call_send_headers(call), SL_ERR_CLOSED);
    release(f, 0); /* frees it */
}

static void test_conn_free_cancels_stream(void **state)
{
    fixture *f = *state;
    cstream *s;
    sl_grpc_call *call = hold(f, &s);
    send_nth(call, 0, 10, SL_OK);
    sl_grpc_conn_free(f->conn);
    f->conn = NULL;
    assert_int_equal(f->cancels, 1);
    send_nth(call, 1, 10, SL_ERR_CLOSED);
    release(f, 0);
}

/* A deadline on an answering stream ends it with trailers. */
static void test_deadline_on_stream(void **state)
{
    fixture *f = *state;
    cstream *s = submit_version(f, "/t.S/Hold", "", &(req_opts){.timeout = "100m"});
    pump(f);
    send_nth(f->pending[0], 0, 10, SL_OK);
    pump(f);
    f->now += 100;
    sl_grpc_conn_expire(f->conn, f->now);
    pump(f);
    expect_status(s, SL_GRPC_DEADLINE_EXCEEDED, "deadline exceeded");
    assert_false(s->trailers_only);
    assert_int_equal(messages(s), 1);
    assert_int_equal(f->cancels, 1);
    release(f, 0);
}

static void test_goaway_with_text(void **state)
{
    fixture *f = *state;
    cstream *s;
    hold(f, &s);
    assert_int_equal(sl_grpc_conn_goaway(f->conn, NGHTTP2_NO_ERROR, "idle for 5 ms"), SL_OK);
    pump(f);
    assert_int_equal(f->goaways, 1);
    assert_int_equal(f->goaway_code, NGHTTP2_NO_ERROR);
    assert_string_equal(f->goaway_debug, "idle for 5 ms");
    /* The stream below the GOAWAY's last id still finishes. */
    release(f, 0);
    pump(f);
    expect_status(s, SL_GRPC_OK, NULL);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define TM(fn) cmocka_unit_test_setup_teardown(fn, setup_manual, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_many_messages_then_ok),
        T(test_empty_stream_is_trailers_only),
        T(test_reply_on_stream),
        T(test_unary_method_refuses_send),
        T(test_headers_then_messages_later),
        T(test_fail_after_messages),
        TM(test_slow_client_bounded),
        TM(test_large_message_alone),
        TM(test_overflow_drops_waiting),
        T(test_client_cancel),
        T(test_conn_free_cancels_stream),
        T(test_deadline_on_stream),
        T(test_goaway_with_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
