#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sess_fx.h"
#include "sluice/client.h"
#include "sluice/server.h"

/* Port-forward sessions end to end on one loop: the libsluice client
 * (SPDY, SPDY inside WebSocket, legacy WebSocket channels) against the
 * server (spdy_pf, ws_pf, spdy_pipe, the forwarding core pf.c) and a
 * runtime whose "pod port" is a socketpair the test serves: bytes both
 * ways, half-close in both directions, a refused port, a client that
 * goes away. */

#define PORT_OK 7001      /* connected at once */
#define PORT_REFUSED 7002 /* the runtime cannot connect */
#define PORT_LATER 7003   /* answered when the test says so */
#define MAX_APPS 4

/* ---- the runtime: the pod's side of each forwarded connection ---- */

typedef struct app {
    int fd; /* the pod's socket, served by the test */
    sess_acc got;
} app;

typedef struct prt {
    app apps[MAX_APPS];
    int napps, connects, cancels;
    sl_pfconn *later;
} prt;

static void pf_connect(void *rt, sl_pfconn *conn, const char *sandbox, uint16_t port)
{
    prt *r = rt;
    r->connects++;
    assert_string_equal(sandbox, "pod-1");
    if (port == PORT_REFUSED) {
        sl_pfconn_failed(conn, "connect: Connection refused");
        return;
    }
    if (port == PORT_LATER) {
        r->later = conn;
        return;
    }
    assert_int_equal(port, PORT_OK);
    assert_true(r->napps < MAX_APPS);
    int sv[2];
    sess_socketpair(sv);
    r->apps[r->napps++] = (app){.fd = sv[1]};
    sl_pfconn_connected(conn, sv[0]);
}

static void pf_cancel(void *rt, sl_pfconn *conn)
{
    prt *r = rt;
    r->cancels++;
    if (r->later == conn) {
        r->later = NULL;
        sl_pfconn_failed(conn, "cancelled");
    }
}

static void no_exec(void *rt, sl_proc *proc, const sl_exec_request *req,
                    const sl_term_size *initial)
{
    (void)rt;
    (void)req;
    (void)initial;
    sl_proc_failed(proc, "no exec here");
}

static void no_attach(void *rt, sl_proc *proc, const sl_attach_request *req,
                      const sl_term_size *initial)
{
    (void)rt;
    (void)req;
    (void)initial;
    sl_proc_failed(proc, "no attach here");
}

static void cancel(void *rt, sl_proc *proc)
{
    (void)rt;
    sl_proc_exited(proc, 137, NULL);
}

static void release(void *rt, sl_proc *proc)
{
    (void)rt;
    (void)proc;
}

static const sl_runtime_ops ops = {
    .struct_size = SL_STRUCT_SIZE(sl_runtime_ops),
    .exec_start = no_exec,
    .attach_start = no_attach,
    .cancel = cancel,
    .release = release,
    .portforward_connect = pf_connect,
    .portforward_cancel = pf_cancel,
};

/* ---- the client ---- */

typedef struct ended_conn {
    uint64_t id;
    char err[256];
    bool clean;
} ended_conn;

typedef struct cli {
    sess_fx fx;
    prt rt;
    sl_client_pf *h;
    char protocol[64];
    bool upgraded, ended;
    bool end_clean;
    char end_err[256];
    ended_conn conns[MAX_APPS];
    int nconns;
    int local[MAX_APPS]; /* the test's end of each local connection */
    sess_acc back[MAX_APPS];
} cli;

static void on_upgraded(void *arg, const char *protocol)
{
    cli *c = arg;
    c->upgraded = true;
    snprintf(c->protocol, sizeof(c->protocol), "%s", protocol);
}

static void on_conn_end(void *arg, uint64_t id, const char *err)
{
    cli *c = arg;
    assert_true(c->nconns < MAX_APPS);
    ended_conn *e = &c->conns[c->nconns++];
    e->id = id;
    e->clean = err == NULL;
    snprintf(e->err, sizeof(e->err), "%s", err ? err : "");
}

static void on_end(void *arg, const sl_client_error *err)
{
    cli *c = arg;
    c->ended = true;
    c->end_clean = err == NULL;
    snprintf(c->end_err, sizeof(c->end_err), "%s", err && err->message ? err->message : "");
}

static const sl_client_pf_cb cbs = {SL_STRUCT_SIZE(sl_client_pf_cb), on_upgraded, on_conn_end,
                                    on_end};

static int setup(void **state)
{
    cli *c = calloc(1, sizeof(*c));
    for (int i = 0; i < MAX_APPS; i++)
        c->local[i] = c->rt.apps[i].fd = -1;
    sess_fx_start(&c->fx, &ops, &c->rt, NULL);
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    cli *c = *state;
    if (c->h)
        sl_client_pf_free(c->h);
    sess_fx_stop(&c->fx);
    for (int i = 0; i < MAX_APPS; i++) {
        if (c->local[i] >= 0)
            close(c->local[i]);
        if (c->rt.apps[i].fd >= 0)
            close(c->rt.apps[i].fd);
    }
    free(c);
    return 0;
}

static bool upgraded(void *arg)
{
    return ((cli *)arg)->upgraded;
}

static void open_session(cli *c, sl_transport tr, const char *protocol)
{
    static const uint16_t ports[] = {PORT_OK};
    sl_portforward_request req = {SL_STRUCT_SIZE(sl_portforward_request), "pod-1", ports, 1};
    char *url = NULL;
    const char *why = NULL;
    assert_int_equal(sl_server_get_portforward(c->fx.srv, &req, &url, &why), SL_OK);
    sl_client_pf_opts o = {
        .struct_size = SL_STRUCT_SIZE(sl_client_pf_opts), .url = url, .transport = tr};
    assert_int_equal(sl_client_pf_new(&c->fx.loop, &o, &cbs, c, &c->h), SL_OK);
    free(url);
    assert_true(sess_pump(&c->fx, upgraded, c));
    assert_string_equal(c->protocol, protocol);
}

/* Forwards a new local connection to port; returns its index. */
static int forward(cli *c, uint16_t port)
{
    int i = 0;
    while (c->local[i] >= 0)
        i++;
    int sv[2];
    sess_socketpair(sv);
    c->local[i] = sv[1];
    uint64_t id = 99;
    assert_int_equal(sl_client_pf_forward(c->h, port, sv[0], &id), SL_OK);
    assert_int_equal(id, (uint64_t)i);
    return i;
}

/* The pod's socket echoes what it got, upper-cased, so that the bytes
 * coming back provably went through it. */
static void serve_apps(cli *c)
{
    for (int i = 0; i < c->rt.napps; i++) {
        app *a = &c->rt.apps[i];
        if (a->fd < 0 || a->got.eof)
            continue;
        size_t before = a->got.len;
        sess_drain(a->fd, &a->got);
        for (size_t k = before; k < a->got.len; k++) {
            char ch = a->got.buf[k];
            char up = (char)(ch >= 'a' && ch <= 'z' ? ch - 32 : ch);
            assert_int_equal(write(a->fd, &up, 1), 1);
        }
        if (a->got.eof)
            shutdown(a->fd, SHUT_WR);
    }
}

typedef struct want {
    cli *c;
    int idx;
    const char *text;
} want;

static bool echoed(void *arg)
{
    want *w = arg;
    serve_apps(w->c);
    sess_drain(w->c->local[w->idx], &w->c->back[w->idx]);
    return strcmp(w->c->back[w->idx].buf, w->text) == 0;
}

static bool conn_ended(void *arg)
{
    want *w = arg;
    serve_apps(w->c);
    sess_drain(w->c->local[w->idx], &w->c->back[w->idx]);
    return w->c->nconns > 0 && w->c->back[w->idx].eof;
}

static bool session_ended(void *arg)
{
    cli *c = arg;
    serve_apps(c);
    return c->ended;
}

/* Bytes both ways, then the local half-close reaches the pod (EOF), the
 * pod's close reaches the local end, and the connection ends cleanly. */
static void round_trip(cli *c, sl_transport tr, const char *protocol, bool half_close)
{
    open_session(c, tr, protocol);
    int i = forward(c, PORT_OK);
    assert_int_equal(write(c->local[i], "hello pod", 9), 9);
    want w = {c, i, "HELLO POD"};
    assert_true(sess_pump(&c->fx, echoed, &w));
    assert_string_equal(c->rt.apps[0].got.buf, "hello pod");
    if (half_close) {
        shutdown(c->local[i], SHUT_WR);
        assert_true(sess_pump(&c->fx, conn_ended, &w));
        assert_true(c->rt.apps[0].got.eof);
        assert_int_equal(c->conns[0].id, (uint64_t)i);
        assert_true(c->conns[0].clean);
    }
    sl_client_pf_close(c->h);
    assert_true(sess_pump(&c->fx, session_ended, c));
    assert_true(c->end_clean);
}

static void test_spdy_round_trip(void **state)
{
    round_trip(*state, SL_TRANSPORT_SPDY, "portforward.k8s.io", true);
}

static void test_tunnel_round_trip(void **state)
{
    round_trip(*state, SL_TRANSPORT_WEBSOCKET_TUNNEL, "SPDY/3.1+portforward.k8s.io", true);
}

/* Legacy channels cannot carry the client's half-close. */
static void test_legacy_round_trip(void **state)
{
    round_trip(*state, SL_TRANSPORT_WEBSOCKET_LEGACY, "v4.channel.k8s.io", false);
}

/* Two connections at once keep their bytes apart. */
static void test_spdy_two_connections(void **state)
{
    cli *c = *state;
    open_session(c, SL_TRANSPORT_SPDY, "portforward.k8s.io");
    int a = forward(c, PORT_OK), b = forward(c, PORT_OK);
    assert_int_equal(write(c->local[b], "bee", 3), 3);
    assert_int_equal(write(c->local[a], "ant", 3), 3);
    want wa = {c, a, "ANT"}, wb = {c, b, "BEE"};
    assert_true(sess_pump(&c->fx, echoed, &wa));
    assert_true(sess_pump(&c->fx, echoed, &wb));
    assert_int_equal(sl_client_pf_active(c->h), 2);
    assert_int_equal(c->rt.connects, 2);
}

/* The runtime cannot connect: that connection ends with its text, the
 * session goes on. */
static bool any_conn_end(void *arg)
{
    return ((cli *)arg)->nconns > 0;
}

static void refused(cli *c, sl_transport tr, const char *protocol)
{
    open_session(c, tr, protocol);
    forward(c, PORT_REFUSED);
    assert_true(sess_pump(&c->fx, any_conn_end, c));
    assert_false(c->conns[0].clean);
    assert_non_null(strstr(c->conns[0].err, "Connection refused"));
    assert_false(c->ended);
    int i = forward(c, PORT_OK);
    assert_int_equal(write(c->local[i], "still", 5), 5);
    want w = {c, i, "STILL"};
    assert_true(sess_pump(&c->fx, echoed, &w));
}

static void test_spdy_refused(void **state)
{
    refused(*state, SL_TRANSPORT_SPDY, "portforward.k8s.io");
}

static void test_tunnel_refused(void **state)
{
    refused(*state, SL_TRANSPORT_WEBSOCKET_TUNNEL, "SPDY/3.1+portforward.k8s.io");
}

/* The client goes away: the pod's socket is closed (EOF there), and a
 * connect still pending is cancelled. */
static bool apps_closed(void *arg)
{
    cli *c = arg;
    serve_apps(c);
    return c->rt.apps[0].got.eof && c->rt.cancels > 0;
}

static bool connect_pending(void *arg)
{
    return ((cli *)arg)->rt.later != NULL;
}

static void client_vanishes(cli *c, sl_transport tr, const char *protocol)
{
    open_session(c, tr, protocol);
    int i = forward(c, PORT_OK);
    assert_int_equal(write(c->local[i], "x", 1), 1);
    want w = {c, i, "X"};
    assert_true(sess_pump(&c->fx, echoed, &w));
    forward(c, PORT_LATER);
    assert_true(sess_pump(&c->fx, connect_pending, c));
    sl_client_pf_free(c->h);
    c->h = NULL;
    assert_true(sess_pump(&c->fx, apps_closed, c));
    assert_null(c->rt.later);
}

static void test_spdy_client_vanishes(void **state)
{
    client_vanishes(*state, SL_TRANSPORT_SPDY, "portforward.k8s.io");
}

static void test_tunnel_client_vanishes(void **state)
{
    client_vanishes(*state, SL_TRANSPORT_WEBSOCKET_TUNNEL, "SPDY/3.1+portforward.k8s.io");
}

static bool local_eof(void *arg)
{
    want *w = arg;
    sess_drain(w->c->local[w->idx], &w->c->back[w->idx]);
    return w->c->back[w->idx].eof;
}

/* The pod closes first: the local end sees EOF after the pod's bytes. */
static void test_spdy_pod_closes(void **state)
{
    cli *c = *state;
    open_session(c, SL_TRANSPORT_SPDY, "portforward.k8s.io");
    int i = forward(c, PORT_OK);
    assert_int_equal(write(c->local[i], "bye", 3), 3);
    want w = {c, i, "BYE"};
    assert_true(sess_pump(&c->fx, echoed, &w));
    assert_int_equal(write(c->rt.apps[0].fd, "!", 1), 1);
    close(c->rt.apps[0].fd);
    c->rt.apps[0].fd = -1;
    c->rt.apps[0].got.eof = true;
    w.text = "BYE!";
    assert_true(sess_pump(&c->fx, local_eof, &w));
    assert_string_equal(c->back[i].buf, "BYE!");
    /* half-closed: the connection ends once the local side closes too */
    assert_int_equal(c->nconns, 0);
    shutdown(c->local[i], SHUT_WR);
    assert_true(sess_pump(&c->fx, any_conn_end, c));
    assert_true(c->conns[0].clean);
}

/* A token the server never issued: the upgrade is refused with 404 and
 * the session ends with that error; the runtime is never asked. */
static void bad_token(cli *c, sl_transport tr)
{
    char url[128];
    snprintf(url, sizeof(url), "%s/portforward/nosuchtoken", sl_server_base_url(c->fx.srv));
    sl_client_pf_opts o = {
        .struct_size = SL_STRUCT_SIZE(sl_client_pf_opts), .url = url, .transport = tr};
    assert_int_equal(sl_client_pf_new(&c->fx.loop, &o, &cbs, c, &c->h), SL_OK);
    assert_true(sess_pump(&c->fx, session_ended, c));
    assert_false(c->end_clean);
    assert_false(c->upgraded);
    assert_non_null(strstr(c->end_err, "404"));
    assert_int_equal(c->rt.connects, 0);
}

static void test_spdy_bad_token(void **state)
{
    bad_token(*state, SL_TRANSPORT_SPDY);
}

static void test_legacy_bad_token(void **state)
{
    bad_token(*state, SL_TRANSPORT_WEBSOCKET_LEGACY);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_spdy_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tunnel_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_legacy_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spdy_two_connections, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spdy_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tunnel_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spdy_client_vanishes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tunnel_client_vanishes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spdy_pod_closes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spdy_bad_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_legacy_bad_token, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
