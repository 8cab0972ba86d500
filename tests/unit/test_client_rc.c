#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/crc.h"
#include "client/status.h"
#include "spdy/spdy_session.h"
#include "ws/ws_conn.h"

/* The client side of exec/attach (lib/client/crc.c) against in-memory
 * server sessions: our own SPDY session and WebSocket connection in the
 * server role, driven by the test as a streaming server would. */

#define MAXS 8

static const char EXIT3[] =
    "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated with non-zero "
    "exit code: exit status 3\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{"
    "\"reason\":\"ExitCode\",\"message\":\"3\"}]}}";
static const char SUCCESS[] = "{\"metadata\":{},\"status\":\"Success\"}";

/* ---- status decoding --------------------------------------------------------- */

static void expect_status(int version, const char *payload, int exited, int code,
                          const char *msg_part)
{
    sl_status st;
    sl_status_decode(version, (const uint8_t *)payload, strlen(payload), &st);
    assert_int_equal(st.exited, exited);
    if (exited)
        assert_int_equal(st.exit_code, code);
    if (msg_part && !strstr(st.message, msg_part))
        fail_msg("v%d %s: message \"%s\" lacks \"%s\"", version, payload, st.message, msg_part);
}

static void test_status_decode(void **st)
{
    (void)st;
    expect_status(4, "", 1, 0, NULL);
    expect_status(2, "", 1, 0, NULL);
    expect_status(4, SUCCESS, 1, 0, NULL);
    expect_status(5, EXIT3, 1, 3, "exit status 3");
    expect_status(4,
                  "{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"details\":{"
                  "\"causes\":[{\"reason\":\"Other\",\"message\":\"9\"},{\"reason\":"
                  "\"ExitCode\",\"message\":\"255\"}]}}",
                  1, 255, NULL);
    expect_status(4, "{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\"}", 0, 0,
                  "details must be set");
    expect_status(4, "{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"details\":{}}", 0, 0,
                  "no ExitCode cause given");
    expect_status(4,
                  "{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"details\":{"
                  "\"causes\":[{\"reason\":\"ExitCode\",\"message\":\"256\"}]}}",
                  0, 0, "invalid exit code value 256");
    expect_status(4,
                  "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Internal error "
                  "occurred: error executing command in container: boom\",\"reason\":"
                  "\"InternalError\",\"code\":500}",
                  0, 0, "Internal error occurred: error executing command in container: boom");
    expect_status(4, "{not json", 0, 0, "error stream protocol error");
    expect_status(4, "[1]", 0, 0, "not a Status object");
    expect_status(3, "command terminated with non-zero exit code: exit status 2", 0, 0,
                  "exit status 2");
    expect_status(1, "bad\x1b[31m", 0, 0, "bad?[31m"); /* no control bytes pass */
}

static void test_resize_format(void **st)
{
    (void)st;
    char b[SL_RESIZE_MSG_MAX];
    assert_int_equal(sl_resize_format(b, 80, 24), strlen("{\"Width\":80,\"Height\":24}\n"));
    assert_string_equal(b, "{\"Width\":80,\"Height\":24}\n");
    sl_resize_format(b, 65535, 65535);
    assert_string_equal(b, "{\"Width\":65535,\"Height\":65535}\n");
}

/* ---- the client's view ------------------------------------------------------ */

typedef struct cli {
    sl_crc *c;
    sl_bufq out;
    sl_bufq got[3]; /* stdout, stderr by channel */
    int nend, nstdin_closed, npong;
    sl_crc_end end;
    char end_msg[600];
} cli;

static void c_output(void *arg, int ch, const uint8_t *data, size_t len)
{
    cli *x = arg;
    assert_true(ch == SL_CRC_STDOUT || ch == SL_CRC_STDERR);
    sl_bufq_append(&x->got[ch], data, len);
    sl_crc_consumed(x->c, ch, len);
}

static void c_stdin_closed(void *arg)
{
    ((cli *)arg)->nstdin_closed++;
}

static void c_pong(void *arg)
{
    ((cli *)arg)->npong++;
}

static void c_end(void *arg, const sl_crc_end *e)
{
    cli *x = arg;
    x->nend++;
    x->end = *e;
    snprintf(x->end_msg, sizeof(x->end_msg), "%s", e->message ? e->message : "");
    x->end.message = x->end_msg;
}

static const sl_crc_callbacks CCB = {
    .on_output = c_output, .on_stdin_closed = c_stdin_closed, .on_pong = c_pong, .on_end = c_end};

static void cli_open(cli *x, sl_transport t, int version, bool tty, bool in, bool out, bool err)
{
    memset(x, 0, sizeof(*x));
    sl_bufq_init(&x->out);
    for (int i = 0; i < 3; i++)
        sl_bufq_init(&x->got[i]);
    sl_crc_params p = {
        .transport = t, .version = version, .tty = tty, .in = in, .out = out, .err = err};
    x->c = sl_crc_new(&p, &CCB, x, &x->out);
    assert_non_null(x->c);
    assert_int_equal(sl_crc_start(x->c), SL_OK);
}

static void cli_close(cli *x)
{
    sl_crc_free(x->c);
    sl_bufq_fini(&x->out);
    for (int i = 0; i < 3; i++)
        sl_bufq_fini(&x->got[i]);
}

static int got_is(const sl_bufq *q, const char *s)
{
    char buf[256] = {0};
    if (sl_bufq_len(q) != strlen(s))
        return 0;
    sl_bufq_copyout(q, buf, sizeof(buf) - 1);
    return strcmp(buf, s) == 0;
}

/* ---- a SPDY server session ------------------------------------------------- */

typedef struct srv {
    sl_spdy_session *s;
    sl_bufq out;
    int n;
    uint32_t id[MAXS];
    char type[MAXS][16];
    sl_bufq data[MAXS];
    bool fin[MAXS];
    int ngoaway;
} srv;

static int srv_index(srv *v, uint32_t id)
{
    for (int i = 0; i < v->n; i++)
        if (v->id[i] == id)
            return i;
    return -1;
}

static void s_open(void *arg, uint32_t id, const sl_spdy_nv *nv, size_t n, bool fin, bool uni)
{
    srv *v = arg;
    (void)fin;
    (void)uni;
    assert_true(v->n < MAXS);
    assert_int_equal(n, 1); /* only streamtype, as client-go sends */
    assert_memory_equal(nv[0].name, "streamtype", 10);
    v->id[v->n] = id;
    snprintf(v->type[v->n], sizeof(v->type[0]), "%.*s", (int)nv[0].value_len, nv[0].value);
    v->n++;
}

static void s_data(void *arg, uint32_t id, const uint8_t *data, size_t len)
{
    srv *v = arg;
    int i = srv_index(v, id);
    assert_true(i >= 0);
    sl_bufq_append(&v->data[i], data, len);
    sl_spdy_stream_consumed(v->s, id, len);
}

static void s_fin(void *arg, uint32_t id)
{
    srv *v = arg;
    v->fin[srv_index(v, id)] = true;
}

static void s_goaway(void *arg, uint32_t last, uint32_t status)
{
    (void)last;
    (void)status;
    ((srv *)arg)->ngoaway++;
}

static const sl_spdy_callbacks SCB = {
    .on_stream_open = s_open, .on_data = s_data, .on_fin = s_fin, .on_goaway = s_goaway};

static void srv_open(srv *v)
{
    memset(v, 0, sizeof(*v));
    sl_bufq_init(&v->out);
    for (int i = 0; i < MAXS; i++)
        sl_bufq_init(&v->data[i]);
    v->s = sl_spdy_session_new(SL_SPDY_SERVER, &SCB, v, &v->out, NULL);
    assert_non_null(v->s);
}

static void srv_close(srv *v)
{
    sl_spdy_session_free(v->s);
    sl_bufq_fini(&v->out);
    for (int i = 0; i < MAXS; i++)
        sl_bufq_fini(&v->data[i]);
}

static uint32_t sid(srv *v, const char *type)
{
    for (int i = 0; i < v->n; i++)
        if (!strcmp(v->type[i], type))
            return v->id[i];
    fail_msg("no %s stream", type);
    return 0;
}

/* client -> server, whole */
static void to_server(cli *x, srv *v)
{
    assert_int_equal(sl_crc_flush(x->c, 1 << 20), SL_OK);
    size_t n = sl_bufq_len(&x->out);
    uint8_t *b = malloc(n + 1);
    sl_bufq_copyout(&x->out, b, n);
    sl_bufq_consume(&x->out, n);
    assert_int_equal(sl_spdy_session_recv(v->s, b, n), SL_OK);
    free(b);
}

/* server -> client, byte by byte (every split point) */
static void to_client(srv *v, cli *x)
{
    assert_int_equal(sl_spdy_session_flush(v->s, 1 << 20), SL_OK);
    size_t n = sl_bufq_len(&v->out);
    uint8_t *b = malloc(n + 1);
    sl_bufq_copyout(&v->out, b, n);
    sl_bufq_consume(&v->out, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(sl_crc_recv(x->c, b + i, 1), SL_OK);
    free(b);
}

static void send_str(srv *v, const char *type, const char *s, bool fin)
{
    assert_int_equal(sl_spdy_stream_send(v->s, sid(v, type), (const uint8_t *)s, strlen(s), fin),
                     SL_OK);
}

static void reply_all(srv *v)
{
    for (int i = 0; i < v->n; i++)
        assert_int_equal(sl_spdy_stream_reply(v->s, v->id[i], NULL, 0, false), SL_OK);
}

static void test_spdy_exec_streams_io_and_exit_code(void **st)
{
    (void)st;
    cli x;
    srv v;
    cli_open(&x, SL_TRANSPORT_SPDY, 4, false, true, true, true);
    srv_open(&v);
    /* stdin before any reply is held back by the session */
    assert_int_equal(sl_crc_stdin(x.c, (const uint8_t *)"hello\n", 6), SL_OK);
    assert_int_equal(sl_crc_stdin_pending(x.c), 6);
    to_server(&x, &v);
    assert_int_equal(v.n, 4);
    assert_string_equal(v.type[0], "error");
    assert_string_equal(v.type[1], "stdin");
    assert_string_equal(v.type[2], "stdout");
    assert_string_equal(v.type[3], "stderr");
    assert_int_equal(sl_bufq_len(&v.data[1]), 0);
    reply_all(&v);
    to_client(&v, &x);
    to_server(&x, &v);
    assert_true(got_is(&v.data[1], "hello\n"));
    /* stdin EOF is a FIN */
    assert_int_equal(sl_crc_stdin_eof(x.c), SL_OK);
    to_server(&x, &v);
    assert_true(v.fin[1]);
    assert_int_equal(sl_crc_stdin(x.c, (const uint8_t *)"x", 1), SL_ERR_STATE);
    /* output, then the status in two pieces; the end waits for every stream */
    send_str(&v, "stdout", "out\n", true);
    send_str(&v, "stderr", "err\n", false);
    send_str(&v, "error", "{\"metadata\":{},\"status\":\"Fail", false);
    to_client(&v, &x);
    assert_true(got_is(&x.got[1], "out\n"));
    assert_true(got_is(&x.got[2], "err\n"));
    send_str(&v, "error", EXIT3 + 29, true);
    to_client(&v, &x);
    assert_int_equal(x.nend, 0); /* stderr still open */
    assert_int_equal(sl_spdy_stream_close(v.s, sid(&v, "stderr")), SL_OK);
    to_client(&v, &x);
    assert_int_equal(x.nend, 1);
    assert_true(x.end.exited);
    assert_int_equal(x.end.exit_code, 3);
    assert_non_null(strstr(x.end.message, "exit status 3"));
    /* the server's RST + GOAWAY + close afterwards change nothing */
    sl_spdy_stream_reset(v.s, sid(&v, "stdin"), SL_SPDY_CANCEL);
    sl_spdy_goaway(v.s, SL_SPDY_GOAWAY_OK);
    to_client(&v, &x);
    sl_crc_eof(x.c);
    assert_int_equal(x.nend, 1);
    sl_crc_close(x.c);
    to_server(&x, &v);
    assert_int_equal(v.ngoaway, 1);
    cli_close(&x);
    srv_close(&v);
}

static void test_spdy_tty_resize_and_ping(void **st)
{
    (void)st;
    cli x;
    srv v;
    cli_open(&x, SL_TRANSPORT_SPDY, 4, true, true, true, true);
    srv_open(&v);
    assert_int_equal(sl_crc_resize(x.c, 100, 30), SL_OK);
    to_server(&x, &v);
    assert_int_equal(v.n, 4); /* no stderr with tty */
    assert_string_equal(v.type[3], "resize");
    reply_all(&v);
    to_client(&v, &x);
    assert_int_equal(sl_crc_resize(x.c, 81, 25), SL_OK);
    assert_int_equal(sl_crc_ping(x.c), SL_OK);
    to_server(&x, &v);
    assert_true(
        got_is(&v.data[3], "{\"Width\":100,\"Height\":30}\n{\"Width\":81,\"Height\":25}\n"));
    to_client(&v, &x); /* the PING echo */
    assert_int_equal(x.npong, 1);
    /* stdin reset by the server: the client is told */
    sl_spdy_stream_reset(v.s, sid(&v, "stdin"), SL_SPDY_CANCEL);
    to_client(&v, &x);
    assert_int_equal(x.nstdin_closed, 1);
    send_str(&v, "stdout", "", true);
    send_str(&v, "error", SUCCESS, true);
    to_client(&v, &x);
    assert_int_equal(x.nend, 1);
    assert_true(x.end.exited);
    assert_int_equal(x.end.exit_code, 0);
    cli_close(&x);
    srv_close(&v);
}

static void test_spdy_v2_text_status_and_no_resize(void **st)
{
    (void)st;
    cli x;
    srv v;
    cli_open(&x, SL_TRANSPORT_SPDY, 2, true, false, true, false);
    srv_open(&v);
    assert_int_equal(sl_crc_resize(x.c, 1, 1), SL_ERR_STATE); /* resize is v3+ */
    to_server(&x, &v);
    assert_int_equal(v.n, 2);
    reply_all(&v);
    send_str(&v, "stdout", "", true);
    send_str(&v, "error", "command terminated with non-zero exit code: exit status 7", true);
    to_client(&v, &x);
    assert_int_equal(x.nend, 1);
    assert_false(x.end.exited);
    assert_int_equal(x.end.kind, SL_CLIENT_ERR_REMOTE);
    assert_non_null(strstr(x.end.message, "exit status 7"));
    cli_close(&x);
    srv_close(&v);
}

static void test_spdy_connection_end_cases(void **st)
{
    (void)st;
    cli x;
    srv v;
    /* EOF with streams open and no GOAWAY: lost */
    cli_open(&x, SL_TRANSPORT_SPDY, 4, false, false, true, false);
    sl_crc_eof(x.c);
    assert_int_equal(x.nend, 1);
    assert_int_equal(x.end.kind, SL_CLIENT_ERR_LOST);
    cli_close(&x);
    /* GOAWAY, then EOF: the server is done (spdystream's way), empty = success */
    cli_open(&x, SL_TRANSPORT_SPDY, 3, false, false, true, false);
    srv_open(&v);
    to_server(&x, &v);
    reply_all(&v);
    send_str(&v, "stdout", "x", false);
    sl_spdy_goaway(v.s, SL_SPDY_GOAWAY_OK);
    to_client(&v, &x);
    sl_crc_eof(x.c);
    assert_int_equal(x.nend, 1);
    assert_true(x.end.exited);
    assert_int_equal(x.end.exit_code, 0);
    srv_close(&v);
    cli_close(&x);
    /* garbage from the server: protocol error, GOAWAY queued */
    cli_open(&x, SL_TRANSPORT_SPDY, 4, false, false, true, false);
    static const uint8_t junk[] = {0x80, 0x02, 0x00, 0x01, 0, 0, 0, 0};
    assert_true(sl_crc_recv(x.c, junk, sizeof(junk)) < 0);
    assert_int_equal(x.nend, 1);
    assert_int_equal(x.end.kind, SL_CLIENT_ERR_PROTOCOL);
    cli_close(&x);
}

/* ---- a WebSocket server connection ----------------------------------------- */

typedef struct wsrv {
    sl_ws_conn *ws;
    sl_bufq out;
    int n;
    uint8_t msg[MAXS][128];
    size_t len[MAXS];
    int nclose;
    uint16_t code;
} wsrv;

static void w_msg(void *arg, int is_text, uint8_t *data, size_t len)
{
    wsrv *w = arg;
    assert_false(is_text);
    assert_true(w->n < MAXS && len <= 128);
    memcpy(w->msg[w->n], data, len);
    w->len[w->n++] = len;
}

static void w_close(void *arg, uint16_t code)
{
    wsrv *w = arg;
    w->nclose++;
    w->code = code;
}

static const sl_ws_callbacks WCB = {.on_msg = w_msg, .on_close = w_close};

static void wsrv_open(wsrv *w)
{
    memset(w, 0, sizeof(*w));
    sl_bufq_init(&w->out);
    w->ws = sl_ws_conn_new(&WCB, w, &w->out, 1 << 20);
    assert_non_null(w->ws);
}

static void wsrv_close(wsrv *w)
{
    sl_ws_conn_free(w->ws);
    sl_bufq_fini(&w->out);
}

static void wsend(wsrv *w, uint8_t ch, const char *s, int text)
{
    uint8_t b[512];
    b[0] = ch;
    memcpy(b + 1, s, strlen(s));
    assert_int_equal(
        sl_ws_conn_send_msg(w->ws, text ? WSLAY_TEXT_FRAME : WSLAY_BINARY_FRAME, b, strlen(s) + 1),
        SL_OK);
}

static void w_to_server(cli *x, wsrv *w)
{
    size_t n = sl_bufq_len(&x->out);
    uint8_t *b = malloc(n + 1);
    sl_bufq_copyout(&x->out, b, n);
    sl_bufq_consume(&x->out, n);
    assert_int_equal(sl_ws_conn_recv(w->ws, b, n), SL_OK);
    free(b);
}

static void w_to_client(wsrv *w, cli *x)
{
    assert_int_equal(sl_ws_conn_flush(w->ws), SL_OK);
    size_t n = sl_bufq_len(&w->out);
    uint8_t *b = malloc(n + 1);
    sl_bufq_copyout(&w->out, b, n);
    sl_bufq_consume(&w->out, n);
    for (size_t i = 0; i < n; i++)
        sl_crc_recv(x->c, b + i, 1);
    free(b);
}

static void test_ws_v5_exec(void **st)
{
    (void)st;
    cli x;
    wsrv w;
    cli_open(&x, SL_TRANSPORT_WEBSOCKET, 5, true, true, true, false);
    wsrv_open(&w);
    assert_int_equal(sl_crc_stdin(x.c, (const uint8_t *)"ls\n", 3), SL_OK);
    assert_int_equal(sl_crc_resize(x.c, 80, 24), SL_OK);
    assert_int_equal(sl_crc_stdin_eof(x.c), SL_OK);
    w_to_server(&x, &w);
    assert_int_equal(w.n, 3);
    assert_int_equal(w.len[0], 4);
    assert_memory_equal(w.msg[0], "\x00ls\n", 4);
    assert_memory_equal(w.msg[1], "\x04{\"Width\":80,\"Height\":24}\n", w.len[1]);
    assert_int_equal(w.len[2], 2);
    assert_memory_equal(w.msg[2], "\xff\x00", 2); /* v5 CLOSE of stdin */
    wsend(&w, 1, "", 0);                          /* the "connected" message */
    wsend(&w, 1, "a\n", 0);
    wsend(&w, 2, "ignored: no stderr requested", 0);
    wsend(&w, 3, EXIT3, 0);
    assert_int_equal(sl_ws_conn_close(w.ws, 1000, ""), SL_OK);
    w_to_client(&w, &x);
    assert_true(got_is(&x.got[1], "a\n"));
    assert_int_equal(sl_bufq_len(&x.got[2]), 0);
    assert_int_equal(x.nend, 1);
    assert_true(x.end.exited);
    assert_int_equal(x.end.exit_code, 3);
    /* our close echo reaches the server */
    w_to_server(&x, &w);
    assert_int_equal(w.nclose, 1);
    assert_int_equal(w.code, 1000);
    cli_close(&x);
    wsrv_close(&w);
}

static void test_ws_v4_and_bad_ends(void **st)
{
    (void)st;
    cli x;
    wsrv w;
    cli_open(&x, SL_TRANSPORT_WEBSOCKET, 4, false, true, true, true);
    wsrv_open(&w);
    assert_int_equal(sl_crc_stdin_eof(x.c), SL_ERR_UNSUPPORTED); /* v4 has no CLOSE */
    assert_int_equal(sl_crc_ping(x.c), SL_OK);
    w_to_server(&x, &w);
    w_to_client(&w, &x);
    assert_int_equal(x.npong, 1);
    assert_int_equal(sl_ws_conn_close(w.ws, 1001, "idle timeout"), SL_OK);
    w_to_client(&w, &x);
    assert_int_equal(x.nend, 1);
    assert_int_equal(x.end.kind, SL_CLIENT_ERR_LOST);
    assert_non_null(strstr(x.end.message, "code 1001"));
    cli_close(&x);
    wsrv_close(&w);
    /* a text message is a protocol error */
    cli_open(&x, SL_TRANSPORT_WEBSOCKET, 5, false, false, true, false);
    wsrv_open(&w);
    wsend(&w, '1', "Zm9v", 1);
    w_to_client(&w, &x);
    assert_int_equal(x.nend, 1);
    assert_int_equal(x.end.kind, SL_CLIENT_ERR_PROTOCOL);
    cli_close(&x);
    wsrv_close(&w);
    /* EOF without a close frame */
    cli_open(&x, SL_TRANSPORT_WEBSOCKET, 5, false, false, true, false);
    sl_crc_eof(x.c);
    assert_int_equal(x.end.kind, SL_CLIENT_ERR_LOST);
    cli_close(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_decode),
        cmocka_unit_test(test_resize_format),
        cmocka_unit_test(test_spdy_exec_streams_io_and_exit_code),
        cmocka_unit_test(test_spdy_tty_resize_and_ping),
        cmocka_unit_test(test_spdy_v2_text_status_and_no_resize),
        cmocka_unit_test(test_spdy_connection_end_cases),
        cmocka_unit_test(test_ws_v5_exec),
        cmocka_unit_test(test_ws_v4_and_bad_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
