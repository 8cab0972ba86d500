#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "sess_fx.h"
#include "sluice/client.h"
#include "sluice/server.h"

/* Exec and attach sessions end to end on one loop: the libsluice client
 * (SPDY and WebSocket) against the server (route, conn, spdy_rc / ws_rc,
 * the remote-command core rc.c) and a runtime whose "process" is a set of
 * pipes the test holds: the bytes each side sees, the exit status, the
 * terminal sizes the runtime gets, stdin's end, and a vanished client. */

/* ---- the runtime ---- */

typedef struct prt {
    int starts, resizes, cancels, releases, stdin_eofs;
    bool had_initial;
    sl_term_size initial, last_size;
    sl_proc *proc;
    int in_r, out_w, err_w, pty; /* the process's ends, kept by the test */
} prt;

/* What the process does, by argv[0]: "print OUT ERR CODE" writes and
 * exits; "fail" cannot start; anything else runs until the test ends it. */
static void start(prt *r, sl_proc *proc, const char *const *cmd, size_t ncmd, bool tty, bool in,
                  bool err, const sl_term_size *initial)
{
    r->starts++;
    r->proc = proc;
    if (initial) {
        r->had_initial = true;
        r->initial = *initial;
    }
    if (ncmd > 0 && strcmp(cmd[0], "fail") == 0) {
        sl_proc_failed(proc, "no such file: fail");
        return;
    }
    sl_proc_endpoints ep = {-1, -1, -1, -1};
    int p[2];
    if (tty) {
        sess_socketpair(p);
        ep.pty_fd = p[0];
        r->pty = p[1];
    } else {
        if (in) {
            sess_pipe(p);
            ep.stdin_fd = p[1];
            r->in_r = p[0];
        }
        sess_pipe(p);
        ep.stdout_fd = p[0];
        r->out_w = p[1];
        if (err) {
            sess_pipe(p);
            ep.stderr_fd = p[0];
            r->err_w = p[1];
        }
    }
    sl_proc_started(proc, &ep);
    if (ncmd == 4 && strcmp(cmd[0], "print") == 0) {
        int w = tty ? r->pty : r->out_w;
        assert_int_equal(write(w, cmd[1], strlen(cmd[1])), (ssize_t)strlen(cmd[1]));
        if (!tty && err)
            assert_int_equal(write(r->err_w, cmd[2], strlen(cmd[2])), (ssize_t)strlen(cmd[2]));
        /* the process is gone: its output ends */
        int *ends[] = {&r->out_w, &r->err_w, &r->pty};
        for (size_t i = 0; i < 3; i++)
            if (*ends[i] >= 0) {
                close(*ends[i]);
                *ends[i] = -1;
            }
        sl_proc_exited(proc, atoi(cmd[3]), NULL);
    }
}

static void exec_start(void *rt, sl_proc *proc, const sl_exec_request *req,
                       const sl_term_size *initial)
{
    assert_int_equal(req->struct_size, sizeof(sl_exec_request)); /* set by the library */
    start(rt, proc, req->cmd, req->ncmd, req->tty, req->in, req->err, initial);
}

static void attach_start(void *rt, sl_proc *proc, const sl_attach_request *req,
                         const sl_term_size *initial)
{
    static const char *const cmd[] = {"print", "attached", "", "0"};
    assert_int_equal(req->struct_size, sizeof(sl_attach_request)); /* set by the library */
    bool print = strcmp(req->container_id, "printer") == 0;
    start(rt, proc, print ? cmd : NULL, print ? 4 : 0, req->tty, req->in, req->err, initial);
}

static void resize(void *rt, sl_proc *proc, sl_term_size size)
{
    (void)proc;
    prt *r = rt;
    r->resizes++;
    r->last_size = size;
}

static void cancel(void *rt, sl_proc *proc)
{
    prt *r = rt;
    r->cancels++;
    sl_proc_exited(proc, 137, NULL);
}

static void release(void *rt, sl_proc *proc)
{
    prt *r = rt;
    if (r->proc == proc)
        r->proc = NULL;
    r->releases++;
}

static void pf_connect(void *rt, sl_pfconn *conn, const char *sandbox, uint16_t port)
{
    (void)rt;
    (void)sandbox;
    (void)port;
    sl_pfconn_failed(conn, "no port-forward here");
}

static void attach_stdin_eof(void *rt, sl_proc *proc)
{
    prt *r = rt;
    r->stdin_eofs++;
    /* as containerd without stdin_once: this client's session ends */
    close(r->out_w);
    close(r->err_w);
    r->out_w = r->err_w = -1;
    sl_proc_exited(proc, 0, NULL);
}

static const sl_runtime_ops ops = {
    .struct_size = SL_STRUCT_SIZE(sl_runtime_ops),
    .exec_start = exec_start,
    .attach_start = attach_start,
    .resize = resize,
    .cancel = cancel,
    .release = release,
    .portforward_connect = pf_connect,
    .attach_stdin_eof = attach_stdin_eof,
};

/* ---- the client ---- */

typedef struct cli {
    sess_fx fx;
    prt rt;
    sl_client_exec *h;
    char protocol[64];
    bool exited, failed;
    int code;
    char message[1024];
    sl_client_error err;
    int out[2], err_fd[2], in[2]; /* out[0], err_fd[0]: read by the test; in[1] written */
    sess_acc o, e;
} cli;

static void on_upgraded(void *arg, const char *protocol)
{
    cli *c = arg;
    snprintf(c->protocol, sizeof(c->protocol), "%s", protocol);
}

static void on_exit_cb(void *arg, int code, const char *message)
{
    cli *c = arg;
    c->exited = true;
    c->code = code;
    snprintf(c->message, sizeof(c->message), "%s", message ? message : "");
}

static void on_error(void *arg, const sl_client_error *err)
{
    cli *c = arg;
    c->failed = true;
    c->err = *err;
    snprintf(c->message, sizeof(c->message), "%s", err->message ? err->message : "");
    c->err.message = c->message;
}

static const sl_client_exec_cb cbs = {SL_STRUCT_SIZE(sl_client_exec_cb), on_upgraded, on_exit_cb,
                                      on_error};

static int setup(void **state)
{
    cli *c = calloc(1, sizeof(*c));
    c->rt.in_r = c->rt.out_w = c->rt.err_w = c->rt.pty = -1;
    c->in[0] = c->in[1] = c->err_fd[0] = c->err_fd[1] = -1;
    sess_fx_start(&c->fx, &ops, &c->rt, NULL);
    *state = c;
    return 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static int teardown(void **state)
{
    cli *c = *state;
    if (c->h)
        sl_client_exec_free(c->h);
    sess_fx_stop(&c->fx);
    int *fds[] = {&c->rt.in_r, &c->rt.out_w,  &c->rt.err_w,  &c->rt.pty, &c->out[0],
                  &c->out[1],  &c->err_fd[0], &c->err_fd[1], &c->in[0],  &c->in[1]};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        close_fd(fds[i]);
    free(c);
    return 0;
}

/* Asks the server for an exec URL and starts the client on it. */
static void run_exec(cli *c, sl_transport tr, const char *const *cmd, size_t ncmd, bool tty,
                     bool in)
{
    sl_exec_request req = {SL_STRUCT_SIZE(sl_exec_request), "ctr", cmd, ncmd, tty, in, true, !tty};
    char *url = NULL;
    const char *why = NULL;
    assert_int_equal(sl_server_get_exec(c->fx.srv, &req, &url, &why), SL_OK);
    sess_pipe(c->out);
    if (!tty)
        sess_pipe(c->err_fd);
    if (in)
        sess_pipe(c->in);
    sl_client_exec_opts o = {.struct_size = SL_STRUCT_SIZE(sl_client_exec_opts),
                             .url = url,
                             .transport = tr,
                             .tty = tty,
                             .stdin_fd = c->in[0],
                             .stdout_fd = c->out[1],
                             .stderr_fd = c->err_fd[1]};
    if (tty) {
        o.width = 80;
        o.height = 24;
    }
    assert_int_equal(sl_client_exec_new(&c->fx.loop, &o, &cbs, c, &c->h), SL_OK);
    free(url);
}

static bool ended(void *arg)
{
    cli *c = arg;
    sess_drain(c->out[0], &c->o);
    if (c->err_fd[0] >= 0)
        sess_drain(c->err_fd[0], &c->e);
    return c->exited || c->failed;
}

static bool released(void *arg)
{
    return ((cli *)arg)->rt.releases > 0;
}

static bool started(void *arg)
{
    return ((cli *)arg)->rt.starts > 0;
}

/* ---- cases ---- */

static const char *const PRINT0[] = {"print", "to stdout", "to stderr", "0"};
static const char *const PRINT3[] = {"print", "out", "err", "3"};

static void exit_zero(cli *c, sl_transport tr, const char *protocol)
{
    run_exec(c, tr, PRINT0, 4, false, false);
    assert_true(sess_pump(&c->fx, ended, c));
    assert_true(c->exited);
    assert_int_equal(c->code, 0);
    assert_string_equal(c->protocol, protocol);
    assert_string_equal(c->o.buf, "to stdout");
    assert_string_equal(c->e.buf, "to stderr");
    assert_true(sess_pump(&c->fx, released, c));
    assert_int_equal(c->rt.cancels, 0);
}

static void test_spdy_output_and_exit_zero(void **state)
{
    exit_zero(*state, SL_TRANSPORT_SPDY, "v4.channel.k8s.io");
}

static void test_ws_output_and_exit_zero(void **state)
{
    exit_zero(*state, SL_TRANSPORT_WEBSOCKET, "v5.channel.k8s.io");
}

static void exit_code(cli *c, sl_transport tr)
{
    run_exec(c, tr, PRINT3, 4, false, false);
    assert_true(sess_pump(&c->fx, ended, c));
    assert_true(c->exited);
    assert_int_equal(c->code, 3);
    assert_non_null(strstr(c->message, "exit status 3"));
    assert_string_equal(c->o.buf, "out");
    assert_string_equal(c->e.buf, "err");
}

static void test_spdy_exit_code(void **state)
{
    exit_code(*state, SL_TRANSPORT_SPDY);
}

static void test_ws_exit_code(void **state)
{
    exit_code(*state, SL_TRANSPORT_WEBSOCKET);
}

static void start_failed(cli *c, sl_transport tr)
{
    static const char *const cmd[] = {"fail"};
    run_exec(c, tr, cmd, 1, false, false);
    assert_true(sess_pump(&c->fx, ended, c));
    assert_true(c->failed);
    assert_int_equal(c->err.kind, SL_CLIENT_ERR_REMOTE);
    assert_non_null(strstr(c->message, "no such file: fail"));
}

static void test_spdy_start_failed(void **state)
{
    start_failed(*state, SL_TRANSPORT_SPDY);
}

static void test_ws_start_failed(void **state)
{
    start_failed(*state, SL_TRANSPORT_WEBSOCKET);
}

/* stdin bytes reach the process, then its end (the pipe closes); the
 * process answers on stdout and exits. */
static bool stdin_ended(void *arg)
{
    cli *c = arg;
    static sess_acc in;
    if (c->rt.in_r < 0)
        return false;
    sess_drain(c->rt.in_r, &in);
    if (!in.eof)
        return false;
    assert_string_equal(in.buf, "ping\n");
    memset(&in, 0, sizeof(in));
    return true;
}

static void stdin_to_process(cli *c, sl_transport tr)
{
    static const char *const cmd[] = {"cat"};
    run_exec(c, tr, cmd, 1, false, true);
    assert_int_equal(write(c->in[1], "ping\n", 5), 5);
    close_fd(&c->in[1]);
    assert_true(sess_pump(&c->fx, stdin_ended, c));
    assert_int_equal(write(c->rt.out_w, "pong\n", 5), 5);
    close_fd(&c->rt.out_w);
    close_fd(&c->rt.err_w);
    sl_proc_exited(c->rt.proc, 0, NULL);
    assert_true(sess_pump(&c->fx, ended, c));
    assert_true(c->exited);
    assert_int_equal(c->code, 0);
    assert_string_equal(c->o.buf, "pong\n");
}

static void test_spdy_stdin(void **state)
{
    stdin_to_process(*state, SL_TRANSPORT_SPDY);
}

static void test_ws_stdin(void **state)
{
    stdin_to_process(*state, SL_TRANSPORT_WEBSOCKET);
}

/* tty: the initial size reaches exec_start, a resize reaches ops->resize,
 * the terminal's bytes reach stdout. */
static bool resized(void *arg)
{
    return ((cli *)arg)->rt.resizes > 0;
}

static void tty_session(cli *c, sl_transport tr)
{
    static const char *const cmd[] = {"sh"};
    run_exec(c, tr, cmd, 1, true, true);
    assert_true(sess_pump(&c->fx, started, c));
    assert_true(c->rt.had_initial);
    assert_int_equal(c->rt.initial.width, 80);
    assert_int_equal(c->rt.initial.height, 24);
    assert_int_equal(sl_client_exec_resize(c->h, 120, 40), SL_OK);
    assert_true(sess_pump(&c->fx, resized, c));
    assert_int_equal(c->rt.last_size.width, 120);
    assert_int_equal(c->rt.last_size.height, 40);
    assert_int_equal(write(c->rt.pty, "$ ", 2), 2);
    close_fd(&c->rt.pty);
    sl_proc_exited(c->rt.proc, 0, NULL);
    assert_true(sess_pump(&c->fx, ended, c));
    assert_true(c->exited);
    assert_string_equal(c->o.buf, "$ ");
}

static void test_spdy_tty_resize(void **state)
{
    tty_session(*state, SL_TRANSPORT_SPDY);
}

static void test_ws_tty_resize(void **state)
{
    tty_session(*state, SL_TRANSPORT_WEBSOCKET);
}

/* A client that goes away mid-session: the runtime is told to end the
 * process (cancel), then released. */
static bool cancelled(void *arg)
{
    cli *c = arg;
    return c->rt.cancels > 0 && c->rt.releases > 0;
}

static void client_vanishes(cli *c, sl_transport tr)
{
    static const char *const cmd[] = {"sleep"};
    run_exec(c, tr, cmd, 1, false, false);
    assert_true(sess_pump(&c->fx, started, c));
    sess_run_for(&c->fx, 20);
    sl_client_exec_free(c->h);
    c->h = NULL;
    assert_true(sess_pump(&c->fx, cancelled, c));
    assert_int_equal(c->rt.cancels, 1);
}

static void test_spdy_client_vanishes(void **state)
{
    client_vanishes(*state, SL_TRANSPORT_SPDY);
}

static void test_ws_client_vanishes(void **state)
{
    client_vanishes(*state, SL_TRANSPORT_WEBSOCKET);
}

/* attach: the output, and (WebSocket v5) the stdin end given to the
 * runtime, which ends the session. */
static void run_attach(cli *c, sl_transport tr, const char *id, bool in)
{
    sl_attach_request req = {SL_STRUCT_SIZE(sl_attach_request), id, false, in, true, true};
    char *url = NULL;
    const char *why = NULL;
    assert_int_equal(sl_server_get_attach(c->fx.srv, &req, &url, &why), SL_OK);
    sess_pipe(c->out);
    sess_pipe(c->err_fd);
    if (in)
        sess_pipe(c->in);
    sl_client_exec_opts o = {.struct_size = SL_STRUCT_SIZE(sl_client_exec_opts),
                             .url = url,
                             .transport = tr,
                             .stdin_fd = c->in[0],
                             .stdout_fd = c->out[1],
                             .stderr_fd = c->err_fd[1]};
    assert_int_equal(sl_client_exec_new(&c->fx.loop, &o, &cbs, c, &c->h), SL_OK);
    free(url);
}

static void test_attach_output(void **state)
{
    cli *c = *state;
    run_attach(c, SL_TRANSPORT_SPDY, "printer", false);
    assert_true(sess_pump(&c->fx, ended, c));
    assert_true(c->exited);
    assert_int_equal(c->code, 0);
    assert_string_equal(c->o.buf, "attached");
}

static void test_attach_stdin_end(void **state)
{
    cli *c = *state;
    run_attach(c, SL_TRANSPORT_WEBSOCKET, "ctr", true);
    assert_true(sess_pump(&c->fx, started, c));
    close_fd(&c->in[1]);
    assert_true(sess_pump(&c->fx, ended, c));
    assert_true(c->exited);
    assert_int_equal(c->rt.stdin_eofs, 1);
    assert_int_equal(c->rt.cancels, 0);
}

/* A token used twice: the second upgrade is refused with 404. */
static void test_token_used_once(void **state)
{
    cli *c = *state;
    /* an older caller's size (through the first version's last field): the
     * runtime still gets the library's (exec_start asserts it) */
    sl_exec_request req = {
        offsetof(sl_exec_request, err) + sizeof(bool), "ctr", PRINT0, 4, false, false, true, true};
    char *url = NULL;
    const char *why = NULL;
    assert_int_equal(sl_server_get_exec(c->fx.srv, &req, &url, &why), SL_OK);
    sess_pipe(c->out);
    sess_pipe(c->err_fd);
    sl_client_exec_opts o = {.struct_size = SL_STRUCT_SIZE(sl_client_exec_opts),
                             .url = url,
                             .transport = SL_TRANSPORT_SPDY,
                             .stdin_fd = -1,
                             .stdout_fd = c->out[1],
                             .stderr_fd = c->err_fd[1]};
    assert_int_equal(sl_client_exec_new(&c->fx.loop, &o, &cbs, c, &c->h), SL_OK);
    assert_true(sess_pump(&c->fx, ended, c));
    assert_true(c->exited);
    sl_client_exec_free(c->h);
    c->exited = false;
    assert_int_equal(sl_client_exec_new(&c->fx.loop, &o, &cbs, c, &c->h), SL_OK);
    free(url);
    assert_true(sess_pump(&c->fx, ended, c));
    assert_true(c->failed);
    assert_int_equal(c->err.kind, SL_CLIENT_ERR_UPGRADE);
    assert_int_equal(c->err.http_status, 404);
    assert_int_equal(c->rt.starts, 1);
}

/* 1 MiB of output through a slow local reader: every byte arrives, in
 * order, while the server holds the process back (SPDY: the stream's
 * window; WebSocket: the connection). */
#define BULK (1024u * 1024)

typedef struct bulk {
    cli *c;
    size_t written, read;
    bool bad;
} bulk;

static uint8_t pattern(size_t i)
{
    return (uint8_t)(i * 7 + i / 251);
}

static bool bulk_done(void *arg)
{
    bulk *b = arg;
    uint8_t chunk[16384];
    while (b->written < BULK && b->c->rt.out_w >= 0) {
        size_t n = BULK - b->written < sizeof(chunk) ? BULK - b->written : sizeof(chunk);
        for (size_t k = 0; k < n; k++)
            chunk[k] = pattern(b->written + k);
        ssize_t w = write(b->c->rt.out_w, chunk, n);
        if (w <= 0)
            break;
        b->written += (size_t)w;
    }
    if (b->written == BULK && b->c->rt.out_w >= 0) {
        close(b->c->rt.out_w);
        b->c->rt.out_w = -1;
        sl_proc_exited(b->c->rt.proc, 0, NULL);
    }
    /* the slow reader: at most 4 KiB per turn of the loop */
    uint8_t in[4096];
    ssize_t r = read(b->c->out[0], in, sizeof(in));
    for (ssize_t k = 0; k < r; k++)
        if (in[k] != pattern(b->read + (size_t)k))
            b->bad = true;
    if (r > 0)
        b->read += (size_t)r;
    return b->bad || (b->read == BULK && (b->c->exited || b->c->failed));
}

static void bulk_output(cli *c, sl_transport tr)
{
    static const char *const cmd[] = {"yes"};
    run_exec(c, tr, cmd, 1, false, false);
    assert_true(sess_pump(&c->fx, started, c));
    close_fd(&c->rt.err_w);
    bulk b = {c, 0, 0, false};
    uint64_t spins = 0;
    while (!bulk_done(&b) && spins++ < 200000) {
        uv_run(&c->fx.loop, UV_RUN_NOWAIT);
        usleep(100);
    }
    assert_false(b.bad);
    assert_int_equal(b.read, BULK);
    assert_true(c->exited);
    assert_int_equal(c->code, 0);
}

static void test_spdy_bulk_output(void **state)
{
    bulk_output(*state, SL_TRANSPORT_SPDY);
}

static void test_ws_bulk_output(void **state)
{
    bulk_output(*state, SL_TRANSPORT_WEBSOCKET);
}

/* No byte either way for idle-timeout-ms: the server ends the session and
 * asks the runtime to end the process. */
static int setup_idle(void **state)
{
    cli *c = calloc(1, sizeof(*c));
    c->rt.in_r = c->rt.out_w = c->rt.err_w = c->rt.pty = -1;
    c->in[0] = c->in[1] = c->err_fd[0] = c->err_fd[1] = -1;
    sl_server_config cfg;
    sl_server_config_init(&cfg);
    cfg.idle_timeout_ms = 300;
    sess_fx_start(&c->fx, &ops, &c->rt, &cfg);
    *state = c;
    return 0;
}

static void idle_timeout(cli *c, sl_transport tr)
{
    static const char *const cmd[] = {"sleep"};
    run_exec(c, tr, cmd, 1, false, false);
    assert_true(sess_pump(&c->fx, cancelled, c));
    assert_true(sess_pump(&c->fx, ended, c));
    assert_int_equal(c->rt.cancels, 1);
}

static void test_spdy_idle_timeout(void **state)
{
    idle_timeout(*state, SL_TRANSPORT_SPDY);
}

static void test_ws_idle_timeout(void **state)
{
    idle_timeout(*state, SL_TRANSPORT_WEBSOCKET);
}

/* Nothing listens, or the URL is not http: a connect error, no runtime call. */
static void connect_fails(cli *c, const char *url)
{
    sess_pipe(c->out);
    sl_client_exec_opts o = {.struct_size = SL_STRUCT_SIZE(sl_client_exec_opts),
                             .url = url,
                             .transport = SL_TRANSPORT_WEBSOCKET,
                             .stdin_fd = -1,
                             .stdout_fd = c->out[1],
                             .stderr_fd = -1,
                             .timeout_ms = 2000};
    assert_int_equal(sl_client_exec_new(&c->fx.loop, &o, &cbs, c, &c->h), SL_OK);
    assert_true(sess_pump(&c->fx, ended, c));
    assert_true(c->failed);
    assert_int_equal(c->err.kind, SL_CLIENT_ERR_CONNECT);
    assert_true(strlen(c->message) > 0);
    assert_int_equal(c->rt.starts, 0);
}

static void test_connect_refused(void **state)
{
    cli *c = *state;
    /* a port that was just free: bind, read its number, close */
    uv_tcp_t t;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    assert_int_equal(uv_tcp_init(&c->fx.loop, &t), 0);
    assert_int_equal(uv_tcp_bind(&t, (const struct sockaddr *)&a, 0), 0);
    int len = sizeof(a);
    assert_int_equal(uv_tcp_getsockname(&t, (struct sockaddr *)&a, &len), 0);
    uv_close((uv_handle_t *)&t, NULL);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/exec/abc", ntohs(a.sin_port));
    connect_fails(c, url);
}

static void test_not_http_url(void **state)
{
    connect_fails(*state, "https://127.0.0.1:1/exec/abc");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_spdy_output_and_exit_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ws_output_and_exit_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spdy_exit_code, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ws_exit_code, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spdy_start_failed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ws_start_failed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spdy_stdin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ws_stdin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spdy_tty_resize, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ws_tty_resize, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spdy_client_vanishes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ws_client_vanishes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_output, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_stdin_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_used_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spdy_bulk_output, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connect_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_http_url, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ws_bulk_output, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spdy_idle_timeout, setup_idle, teardown),
        cmocka_unit_test_setup_teardown(test_ws_idle_timeout, setup_idle, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
