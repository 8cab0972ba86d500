#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sluice/error.h"
#include "sess_fx.h"
#include "sluice/server.h"

/* Serving a session from an fd and the bytes another server read
 * (sl_server_adopt), and handing a connection off after its token was
 * consumed (sl_server_set_handoff / sl_handoff_done). The client is the
 * test itself, speaking WebSocket v5 over a socketpair (adopt) or a
 * loopback TCP connection (a hand-off needs the accepting listener). */

#define WAIT_MS 5000

/* ---- a runtime whose exec writes "hello <cmd>" and exits 7 ---- */

typedef struct fake {
    int starts, cancels, releases;
    char cmd[64];
    sl_proc *proc;
    int in_r, out_w; /* with stdin: the process's ends, kept by the test */
} fake;

static void exec_start(void *rt, sl_proc *proc, const sl_exec_request *req,
                       const sl_term_size *initial)
{
    (void)initial;
    fake *f = rt;
    assert_int_equal(req->struct_size, sizeof(sl_exec_request)); /* set by the library */
    f->starts++;
    f->proc = proc;
    snprintf(f->cmd, sizeof(f->cmd), "%s", req->cmd[0]);
    int out[2], in[2] = {-1, -1};
    assert_int_equal(pipe2(out, O_NONBLOCK | O_CLOEXEC), 0);
    if (req->in)
        assert_int_equal(pipe2(in, O_NONBLOCK | O_CLOEXEC), 0);
    char text[80];
    int n = snprintf(text, sizeof(text), "hello %s", req->cmd[0]);
    assert_int_equal(write(out[1], text, (size_t)n), n);
    sl_proc_endpoints ep = {in[1], out[0], -1, -1};
    sl_proc_started(proc, &ep);
    if (req->in) {
        f->in_r = in[0];
        f->out_w = out[1];
        return;
    }
    close(out[1]);
    sl_proc_exited(proc, 7, NULL);
}

static void attach_start(void *rt, sl_proc *proc, const sl_attach_request *req,
                         const sl_term_size *initial)
{
    (void)rt;
    (void)req;
    (void)initial;
    sl_proc_failed(proc, "no attach here");
}

static void cancel(void *rt, sl_proc *proc)
{
    fake *f = rt;
    f->cancels++;
    sl_proc_exited(proc, 137, NULL);
}

static void release(void *rt, sl_proc *proc)
{
    (void)proc;
    fake *f = rt;
    f->releases++;
}

static void pf_connect(void *rt, sl_pfconn *conn, const char *sandbox, uint16_t port)
{
    (void)rt;
    (void)sandbox;
    (void)port;
    sl_pfconn_failed(conn, "no port-forward here");
}

static const sl_runtime_ops fake_ops = {
    .struct_size = SL_STRUCT_SIZE(sl_runtime_ops),
    .exec_start = exec_start,
    .attach_start = attach_start,
    .cancel = cancel,
    .release = release,
    .portforward_connect = pf_connect,
};

/* ---- the client side ---- */

typedef sess_acc acc; /* sess_fx.h */

static const char WS_HEAD_FMT[] = "GET %s HTTP/1.1\r\n"
                                  "Host: localhost\r\n"
                                  "Connection: Upgrade\r\n"
                                  "Upgrade: websocket\r\n"
                                  "Sec-WebSocket-Version: 13\r\n"
                                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                  "Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n"
                                  "\r\n";

static size_t ws_head(char *out, size_t cap, const char *path)
{
    return (size_t)snprintf(out, cap, WS_HEAD_FMT, path);
}

/* A masked client frame: binary, channel byte + text. */
static size_t ws_frame(uint8_t *out, uint8_t ch, const char *text)
{
    size_t n = 1 + strlen(text);
    static const uint8_t mask[4] = {1, 2, 3, 4};
    out[0] = 0x82;
    out[1] = (uint8_t)(0x80 | n);
    memcpy(out + 2, mask, 4);
    for (size_t i = 0; i < n; i++)
        out[6 + i] = (uint8_t)((i == 0 ? ch : (uint8_t)text[i - 1]) ^ mask[i % 4]);
    return 6 + n;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Runs the loop and reads fd (-1: none) until done(a, arg) or the wait ends. */
static bool pump(uv_loop_t *loop, int fd, acc *a, bool (*done)(acc *a, void *arg), void *arg)
{
    uint64_t end = now_ms() + WAIT_MS;
    while (now_ms() < end) {
        uv_run(loop, UV_RUN_NOWAIT);
        if (fd >= 0 && !a->eof)
            sess_drain(fd, a);
        if (done(a, arg))
            return true;
        usleep(1000);
    }
    return false;
}

static bool has_text(acc *a, void *text)
{
    return memmem(a->buf, a->len, text, strlen(text)) != NULL || a->eof;
}

static bool is_eof(acc *a, void *arg)
{
    (void)arg;
    return a->eof;
}

static bool flag_set(acc *a, void *arg)
{
    (void)a;
    return *(int *)arg != 0;
}

/* The payload of the first server frame on channel ch after the 101, or
 * NULL. Server frames are unmasked; our payloads are short. */
static const char *frame_on(acc *a, uint8_t ch, size_t nth, size_t *len)
{
    char *p = memmem(a->buf, a->len, "\r\n\r\n", 4);
    if (!p)
        return NULL;
    size_t off = (size_t)(p + 4 - a->buf), seen = 0;
    while (off + 2 <= a->len) {
        size_t n = (uint8_t)a->buf[off + 1] & 0x7f, hdr = 2;
        if (n == 126) {
            if (off + 4 > a->len)
                return NULL;
            n = ((size_t)(uint8_t)a->buf[off + 2] << 8) | (uint8_t)a->buf[off + 3];
            hdr = 4;
        }
        if (off + hdr + n > a->len)
            return NULL;
        if (((uint8_t)a->buf[off] & 0x0f) == 2 && n > 0 && (uint8_t)a->buf[off + hdr] == ch &&
            seen++ == nth) {
            *len = n - 1;
            return a->buf + off + hdr + 1;
        }
        off += hdr + n;
    }
    return NULL;
}

/* ---- fixtures ---- */

typedef struct fix {
    uv_loop_t loop;
    fake rt_data;
    sl_runtime rt;
    sl_server *srv;
    int closed;
} fix;

static int fix_setup(void **state)
{
    fix *f = calloc(1, sizeof(*f));
    uv_loop_init(&f->loop);
    f->rt = (sl_runtime){&fake_ops, &f->rt_data};
    f->rt_data.in_r = f->rt_data.out_w = -1;
    sl_server_config cfg;
    sl_server_config_init(&cfg);
    cfg.port = 0;
    assert_int_equal(sl_server_new(&f->loop, &cfg, &f->rt, &f->srv), SL_OK);
    *state = f;
    return 0;
}

static void server_closed(sl_server *s, void *arg)
{
    (void)s;
    (*(int *)arg)++;
}

static void close_server(fix *f, sl_server *s)
{
    int done = 0;
    sl_server_close(s, server_closed, &done);
    acc a = {0};
    assert_true(pump(&f->loop, -1, &a, flag_set, &done));
    sl_server_free(s);
}

static int fix_teardown(void **state)
{
    fix *f = *state;
    close_server(f, f->srv);
    for (int i = 0; i < 50 && uv_run(&f->loop, UV_RUN_NOWAIT); i++)
        ;
    assert_int_equal(uv_loop_close(&f->loop), 0);
    if (f->rt_data.in_r >= 0)
        close(f->rt_data.in_r);
    if (f->rt_data.out_w >= 0)
        close(f->rt_data.out_w);
    free(f);
    return 0;
}

static sl_stream_request exec_req(const char *const *cmd, bool in)
{
    sl_stream_request r = {.struct_size = SL_STRUCT_SIZE(sl_stream_request),
                           .kind = SL_STREAM_EXEC};
    r.u.exec = (sl_exec_request){.struct_size = SL_STRUCT_SIZE(sl_exec_request),
                                 .container_id = "c1",
                                 .cmd = cmd,
                                 .ncmd = 1,
                                 .in = in,
                                 .out = true};
    return r;
}

static void socket_pair(int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
}

/* The whole exchange of an exec that wrote "hello <cmd>" and exited 7. */
static void expect_exec_output(acc *a, const char *cmd)
{
    assert_true(a->len > 12 && !memcmp(a->buf, "HTTP/1.1 101", 12));
    assert_non_null(strstr(a->buf, "Sec-WebSocket-Protocol: v5.channel.k8s.io"));
    char want[80];
    snprintf(want, sizeof(want), "hello %s", cmd);
    size_t n = 0;
    const char *out = frame_on(a, 1, 1, &n); /* [0] is the empty "connected" message */
    assert_non_null(out);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(out, want, n);
    const char *st = frame_on(a, 3, 0, &n);
    assert_non_null(st);
    assert_non_null(memmem(st, n, "\"NonZeroExitCode\"", 17));
    assert_non_null(memmem(st, n, "\"message\":\"7\"", 13));
}

/* ---- sl_server_adopt ---- */

static void test_adopt_serves_exec(void **state)
{
    fix *f = *state;
    int sv[2];
    socket_pair(sv);
    char head[1024];
    size_t n = ws_head(head, sizeof(head), "/exec/anything");
    const char *cmd[] = {"adopted"};
    sl_stream_request r = exec_req(cmd, false);
    assert_int_equal(sl_server_adopt(f->srv, sv[1], (uint8_t *)head, n, &r, NULL), SL_OK);
    acc a = {0};
    assert_true(pump(&f->loop, sv[0], &a, has_text, "\"message\":\"7\""));
    expect_exec_output(&a, "adopted");
    assert_int_equal(f->rt_data.starts, 1);
    close(sv[0]);
}

/* Bytes that followed the head (a stdin frame sent without waiting for
 * the 101) reach the process; limits apply per connection. */
static void test_adopt_leftover_reaches_stdin(void **state)
{
    fix *f = *state;
    int sv[2];
    socket_pair(sv);
    uint8_t buf[1024];
    size_t n = ws_head((char *)buf, sizeof(buf), "/x");
    n += ws_frame(buf + n, 0, "abc");
    const char *cmd[] = {"cat"};
    sl_stream_request r = exec_req(cmd, true);
    sl_server_config lim;
    sl_server_config_init(&lim);
    lim.idle_timeout_ms = 60000;
    assert_int_equal(sl_server_adopt(f->srv, sv[1], buf, n, &r, &lim), SL_OK);
    acc a = {0}, in = {0};
    assert_true(pump(&f->loop, -1, &a, flag_set, &f->rt_data.starts));
    assert_true(pump(&f->loop, f->rt_data.in_r, &in, has_text, "abc"));
    assert_string_equal(in.buf, "abc");
    close(f->rt_data.out_w);
    f->rt_data.out_w = -1;
    sl_proc_exited(f->rt_data.proc, 7, NULL);
    assert_true(pump(&f->loop, sv[0], &a, has_text, "\"message\":\"7\""));
    expect_exec_output(&a, "cat");
    close(sv[0]);
}

/* A SPDY exec head followed by the client's SETTINGS INITIAL_WINDOW_SIZE
 * 65536 (what a flow-control client sends first). */
static size_t spdy_head_settings(uint8_t *out, size_t cap)
{
    size_t n = (size_t)snprintf((char *)out, cap,
                                "GET /exec/x HTTP/1.1\r\nHost: localhost\r\n"
                                "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                                "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n");
    static const uint8_t settings[] = {0x80, 0x03, 0x00, 0x04, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x00,
                                       0x00, 0x01, 0x00, 0x00, 0x00, 0x07, 0x00, 0x01, 0x00, 0x00};
    memcpy(out + n, settings, sizeof(settings));
    return n + sizeof(settings);
}

/* The SETTINGS INITIAL_WINDOW_SIZE entry (id 7) with value w. */
static void window_entry(uint8_t e[8], uint32_t w)
{
    const uint8_t v[8] = {
        0, 0, 0, 7, (uint8_t)(w >> 24), (uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w};
    memcpy(e, v, 8);
}

static bool has_window_entry(acc *a, void *w)
{
    uint8_t e[8];
    window_entry(e, *(uint32_t *)w);
    return memmem(a->buf, a->len, e, 8) != NULL || a->eof;
}

/* The SPDY limits of sl_server_config reach the session: a configured
 * stream window is what the server's SETTINGS announces. */
static void spdy_window_case(fix *f, const sl_server_config *lim, uint32_t want)
{
    int sv[2];
    socket_pair(sv);
    uint8_t buf[1024];
    size_t n = spdy_head_settings(buf, sizeof(buf));
    const char *cmd[] = {"cat"};
    sl_stream_request r = exec_req(cmd, false);
    assert_int_equal(sl_server_adopt(f->srv, sv[1], buf, n, &r, lim), SL_OK);
    acc a = {0};
    assert_true(pump(&f->loop, sv[0], &a, has_window_entry, &want));
    assert_false(a.eof);
    assert_true(a.len > 12 && !memcmp(a.buf, "HTTP/1.1 101", 12));
    close(sv[0]);
}

static void test_adopt_spdy_window(void **state)
{
    fix *f = *state;
    spdy_window_case(f, NULL, 65536); /* the default, SL_DEFAULT_SPDY_INITIAL_WINDOW */
    sl_server_config lim;
    sl_server_config_init(&lim);
    lim.spdy_initial_window = 1u << 20;
    spdy_window_case(f, &lim, 1u << 20);
    /* out of range: refused, the fd closed */
    const char *cmd[] = {"cat"};
    sl_stream_request r = exec_req(cmd, false);
    uint32_t bad[] = {65535, 0x80000000u};
    for (size_t i = 0; i < 2; i++) {
        int sv[2];
        socket_pair(sv);
        lim.spdy_initial_window = bad[i];
        assert_int_equal(sl_server_adopt(f->srv, sv[1], NULL, 0, &r, &lim), SL_ERR_INVAL);
        close(sv[0]);
    }
    lim.spdy_initial_window = 0; /* 0 = the default */
    spdy_window_case(f, &lim, 65536);
}

static void test_adopt_bad_heads(void **state)
{
    fix *f = *state;
    const char *cmd[] = {"x"};
    sl_stream_request r = exec_req(cmd, false);
    const char *heads[] = {"GET /x HTTP/1.1\r\nHost: a\r\n", "NOT HTTP\r\n\r\n"};
    const char *want[] = {"HTTP/1.1 400", "HTTP/1.1 400"};
    for (int i = 0; i < 2; i++) {
        int sv[2];
        socket_pair(sv);
        assert_int_equal(
            sl_server_adopt(f->srv, sv[1], (const uint8_t *)heads[i], strlen(heads[i]), &r, NULL),
            SL_OK);
        acc a = {0};
        assert_true(pump(&f->loop, sv[0], &a, is_eof, NULL));
        assert_memory_equal(a.buf, want[i], strlen(want[i]));
        close(sv[0]);
    }
    assert_int_equal(f->rt_data.starts, 0);
    /* Refused before anything is written: the fd is closed. */
    int sv[2];
    socket_pair(sv);
    sl_stream_request bad = r;
    bad.kind = (sl_stream_kind)9;
    assert_int_equal(sl_server_adopt(f->srv, sv[1], NULL, 0, &bad, NULL), SL_ERR_INVAL);
    acc a = {0};
    sess_drain(sv[0], &a);
    assert_true(a.eof);
    assert_int_equal(a.len, 0);
    close(sv[0]);
    assert_int_equal(sl_server_adopt(f->srv, -1, NULL, 0, &r, NULL), SL_ERR_INVAL);
}

static void test_adopt_when_full(void **state)
{
    fix *f = *state;
    sl_server_config cfg;
    sl_server_config_init(&cfg);
    cfg.max_sessions = 0;
    sl_server *s;
    assert_int_equal(sl_server_new(&f->loop, &cfg, &f->rt, &s), SL_OK);
    int sv[2];
    socket_pair(sv);
    char head[1024];
    size_t n = ws_head(head, sizeof(head), "/x");
    const char *cmd[] = {"x"};
    sl_stream_request r = exec_req(cmd, false);
    assert_int_equal(sl_server_adopt(s, sv[1], (uint8_t *)head, n, &r, NULL), SL_OK);
    acc a = {0};
    assert_true(pump(&f->loop, sv[0], &a, is_eof, NULL));
    assert_memory_equal(a.buf, "HTTP/1.1 503", 12);
    close(sv[0]);
    close_server(f, s);
}

/* ---- hand-off ---- */

typedef struct receiver {
    fix *f;
    sl_server *other; /* adopts what is handed over; NULL: answer with outcome */
    int outcome;
    int calls;
    sl_handoff *held; /* not answered yet */
    int held_fd;
    char got[4096];
    size_t got_len;
    char cmd[64];
} receiver;

static void on_handoff(void *arg, sl_handoff *h, int fd, const uint8_t *head, size_t len,
                       const sl_stream_request *req)
{
    receiver *r = arg;
    r->calls++;
    memcpy(r->got, head, len < sizeof(r->got) ? len : sizeof(r->got));
    r->got_len = len;
    assert_int_equal(req->kind, SL_STREAM_EXEC);
    /* handed out by the library: its sizes */
    assert_int_equal(req->struct_size, sizeof(sl_stream_request));
    assert_int_equal(req->u.exec.struct_size, sizeof(sl_exec_request));
    snprintf(r->cmd, sizeof(r->cmd), "%s", req->u.exec.cmd[0]);
    if (r->outcome < 0) { /* answer later */
        r->held = h;
        r->held_fd = fd;
        return;
    }
    if (r->other) {
        int rc = sl_server_adopt(r->other, fd, head, len, req, NULL);
        sl_handoff_done(h, rc == SL_OK ? SL_HANDOFF_TAKEN : 503, "adopt failed");
        return;
    }
    close(fd);
    sl_handoff_done(h, r->outcome, "the pod monitor is not running");
}

static int tcp_connect(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

/* Listens, issues an exec URL and sends its head plus a stdin frame. */
static int start_client(fix *f, const char *cmd0, char *sent, size_t *sent_len)
{
    assert_int_equal(sl_server_start(f->srv), SL_OK);
    const char *cmd[] = {cmd0};
    sl_exec_request er = {.struct_size = SL_STRUCT_SIZE(sl_exec_request),
                          .container_id = "c1",
                          .cmd = cmd,
                          .ncmd = 1,
                          .out = true};
    char *url = NULL;
    const char *msg = NULL;
    assert_int_equal(sl_server_get_exec(f->srv, &er, &url, &msg), SL_OK);
    const char *path = strstr(url + strlen("http://"), "/");
    size_t n = ws_head(sent, 1024, path);
    n += ws_frame((uint8_t *)sent + n, 4, "{\"Width\":1,\"Height\":1}");
    free(url);
    int fd = tcp_connect(sl_server_port(f->srv));
    assert_int_equal(write(fd, sent, n), (ssize_t)n);
    *sent_len = n;
    return fd;
}

static void test_handoff_taken(void **state)
{
    fix *f = *state;
    sl_server *other;
    sl_server_config cfg;
    sl_server_config_init(&cfg);
    assert_int_equal(sl_server_new(&f->loop, &cfg, &f->rt, &other), SL_OK);
    receiver r = {.f = f, .other = other};
    sl_server_set_handoff(f->srv, on_handoff, &r);
    char sent[1024];
    size_t n;
    int fd = start_client(f, "moved", sent, &n);
    acc a = {0};
    assert_true(pump(&f->loop, fd, &a, has_text, "\"message\":\"7\""));
    /* Every byte read on the accepting side went over, the head and the
     * frame after it. */
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.got_len, n);
    assert_memory_equal(r.got, sent, n);
    assert_string_equal(r.cmd, "moved");
    expect_exec_output(&a, "moved");
    assert_int_equal(sl_server_session_count(f->srv), 0);
    close(fd);
    close_server(f, other);
}

static void test_handoff_refused_and_local(void **state)
{
    fix *f = *state;
    receiver r = {.f = f, .outcome = 502};
    sl_server_set_handoff(f->srv, on_handoff, &r);
    char sent[1024];
    size_t n;
    int fd = start_client(f, "refused", sent, &n);
    acc a = {0};
    assert_true(pump(&f->loop, fd, &a, is_eof, NULL));
    assert_memory_equal(a.buf, "HTTP/1.1 502", 12);
    assert_non_null(strstr(a.buf, "the pod monitor is not running"));
    close(fd);
    /* SL_HANDOFF_LOCAL: served here from the head already parsed, with the
     * bytes that followed it. */
    r.outcome = SL_HANDOFF_LOCAL;
    const char *cmd[] = {"local"};
    sl_exec_request er = {.struct_size = SL_STRUCT_SIZE(sl_exec_request),
                          .container_id = "c1",
                          .cmd = cmd,
                          .ncmd = 1,
                          .out = true};
    char *url = NULL;
    const char *msg = NULL;
    assert_int_equal(sl_server_get_exec(f->srv, &er, &url, &msg), SL_OK);
    n = ws_head(sent, sizeof(sent), strstr(url + 7, "/"));
    free(url);
    fd = tcp_connect(sl_server_port(f->srv));
    assert_int_equal(write(fd, sent, n), (ssize_t)n);
    memset(&a, 0, sizeof(a));
    assert_true(pump(&f->loop, fd, &a, has_text, "\"message\":\"7\""));
    expect_exec_output(&a, "local");
    assert_int_equal(r.calls, 2);
    close(fd);
}

/* A wrong token is answered here; the hand-off never sees it. */
static void test_handoff_bad_token(void **state)
{
    fix *f = *state;
    receiver r = {.f = f, .outcome = SL_HANDOFF_TAKEN};
    sl_server_set_handoff(f->srv, on_handoff, &r);
    assert_int_equal(sl_server_start(f->srv), SL_OK);
    char head[1024];
    size_t n = ws_head(head, sizeof(head), "/exec/AAAAAAAAAAAAAAAAAAAAAA");
    int fd = tcp_connect(sl_server_port(f->srv));
    assert_int_equal(write(fd, head, n), (ssize_t)n);
    acc a = {0};
    assert_true(pump(&f->loop, fd, &a, is_eof, NULL));
    assert_memory_equal(a.buf, "HTTP/1.1 404", 12);
    assert_int_equal(r.calls, 0);
    close(fd);
}

/* The server closes while a hand-off is pending: the handle stays valid
 * and sl_handoff_done only frees it. */
static void test_handoff_outlives_server(void **state)
{
    fix *f = *state;
    receiver r = {.f = f, .outcome = -1};
    sl_server_set_handoff(f->srv, on_handoff, &r);
    char sent[1024];
    size_t n;
    int fd = start_client(f, "pending", sent, &n);
    acc a = {0};
    assert_true(pump(&f->loop, -1, &a, flag_set, &r.calls));
    assert_non_null(r.held);
    close_server(f, f->srv);
    sl_handoff_done(r.held, SL_HANDOFF_TAKEN, NULL);
    /* The receiver's copy keeps the connection: no EOF reached the client. */
    sess_drain(fd, &a);
    assert_false(a.eof);
    close(r.held_fd);
    close(fd);
    sl_server_config cfg;
    sl_server_config_init(&cfg);
    assert_int_equal(sl_server_new(&f->loop, &cfg, &f->rt, &f->srv), SL_OK);
}

/* ---- the public request copy ---- */

static void test_request_copy(void **state)
{
    (void)state;
    const char *cmd[] = {"sh", "-c", "echo"};
    sl_stream_request e = {.struct_size = SL_STRUCT_SIZE(sl_stream_request),
                           .kind = SL_STREAM_EXEC};
    e.u.exec = (sl_exec_request){.struct_size = SL_STRUCT_SIZE(sl_exec_request),
                                 .container_id = "c",
                                 .cmd = cmd,
                                 .ncmd = 3,
                                 .tty = true,
                                 .in = true};
    sl_stream_request *c = NULL;
    assert_int_equal(sl_stream_request_copy(&e, &c), SL_OK);
    assert_int_equal(c->u.exec.ncmd, 3);
    assert_string_equal(c->u.exec.cmd[2], "echo");
    assert_ptr_not_equal(c->u.exec.cmd, cmd);
    assert_true(c->u.exec.tty && c->u.exec.in && !c->u.exec.out);
    sl_stream_request_free(c);
    uint16_t ports[] = {80, 443};
    sl_stream_request p = {.struct_size = SL_STRUCT_SIZE(sl_stream_request),
                           .kind = SL_STREAM_PORTFORWARD};
    p.u.pf = (sl_portforward_request){.struct_size = SL_STRUCT_SIZE(sl_portforward_request),
                                      .pod_sandbox_id = NULL,
                                      .ports = ports,
                                      .nports = 2};
    assert_int_equal(sl_stream_request_copy(&p, &c), SL_OK);
    assert_string_equal(c->u.pf.pod_sandbox_id, "");
    assert_int_equal(c->u.pf.ports[1], 443);
    sl_stream_request_free(c);
    sl_stream_request a = {.struct_size = SL_STRUCT_SIZE(sl_stream_request),
                           .kind = SL_STREAM_ATTACH};
    a.u.attach = (sl_attach_request){
        .struct_size = SL_STRUCT_SIZE(sl_attach_request), .container_id = "x", .out = true};
    assert_int_equal(sl_stream_request_copy(&a, &c), SL_OK);
    assert_string_equal(c->u.attach.container_id, "x");
    sl_stream_request_free(c);
    c = NULL;
    sl_stream_request bad = a;
    bad.kind = (sl_stream_kind)0;
    assert_int_equal(sl_stream_request_copy(&bad, &c), SL_ERR_INVAL);
    assert_int_equal(sl_stream_request_copy(NULL, &c), SL_ERR_INVAL);
    assert_int_equal(sl_stream_request_copy(&a, NULL), SL_ERR_INVAL);
    assert_null(c);
    sl_stream_request_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_adopt_serves_exec, fix_setup, fix_teardown),
        cmocka_unit_test_setup_teardown(test_adopt_leftover_reaches_stdin, fix_setup, fix_teardown),
        cmocka_unit_test_setup_teardown(test_adopt_bad_heads, fix_setup, fix_teardown),
        cmocka_unit_test_setup_teardown(test_adopt_spdy_window, fix_setup, fix_teardown),
        cmocka_unit_test_setup_teardown(test_adopt_when_full, fix_setup, fix_teardown),
        cmocka_unit_test_setup_teardown(test_handoff_taken, fix_setup, fix_teardown),
        cmocka_unit_test_setup_teardown(test_handoff_refused_and_local, fix_setup, fix_teardown),
        cmocka_unit_test_setup_teardown(test_handoff_bad_token, fix_setup, fix_teardown),
        cmocka_unit_test_setup_teardown(test_handoff_outlives_server, fix_setup, fix_teardown),
        cmocka_unit_test(test_request_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
