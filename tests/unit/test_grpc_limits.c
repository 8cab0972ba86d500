/* The gRPC server's connection limit and idle timeout, on a real unix
 * socket and libuv loop: at the limit the longest-idle connection is
 * closed with GOAWAY to make room (silent connections too); when every
 * connection is busy the new one gets SETTINGS and GOAWAY(REFUSED_STREAM)
 * with a text instead of being dropped; idle connections are closed after
 * the timeout, busy ones are not; the limit follows the open-file limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "grpc/api.pb-c.h"
#include "grpc/grpc_frame.h"
#include "grpc/grpc_server.h"
#include "sluice/error.h"

#define MAX_HELD 16
#define WAIT_MS 3000

/* ---- the server ---------------------------------------------------------- */

typedef struct srv {
    uv_loop_t loop;
    sl_grpc_server *s;
    char dir[64], path[96];
    sl_grpc_call *held[MAX_HELD];
    int nheld;
} srv;

static void h_echo(sl_grpc_call *call, void *arg)
{
    (void)arg;
    Runtime__V1__VersionResponse r = RUNTIME__V1__VERSION_RESPONSE__INIT;
    r.version = "echo";
    sl_grpc_call_reply(call, &r.base);
}

static void h_hold(sl_grpc_call *call, void *arg)
{
    srv *v = arg;
    assert_true(v->nheld < MAX_HELD);
    v->held[v->nheld++] = call;
}

#define M(p, h)                                                                                    \
    {                                                                                              \
        .path = p, .request = &runtime__v1__version_request__descriptor, .handler = h              \
    }
static const sl_grpc_method methods[] = {M("/t.S/Echo", h_echo), M("/t.S/Hold", h_hold)};

static srv *srv_start(uint32_t max_conns, uint64_t idle_ms)
{
    srv *v = calloc(1, sizeof(*v));
    assert_non_null(v);
    assert_int_equal(uv_loop_init(&v->loop), 0);
    snprintf(v->dir, sizeof(v->dir), "/tmp/sl-glim-XXXXXX");
    assert_non_null(mkdtemp(v->dir));
    snprintf(v->path, sizeof(v->path), "%s/g.sock", v->dir);
    sl_grpc_config c;
    sl_grpc_config_init(&c);
    c.methods = methods;
    c.nmethods = 2;
    c.arg = v;
    c.max_connections = max_conns;
    c.idle_timeout_ms = idle_ms;
    assert_int_equal(sl_grpc_server_new(&v->loop, &c, &v->s), SL_OK);
    sl_error e;
    assert_int_equal(sl_grpc_server_listen(v->s, v->path, 0600, &e), 0);
    return v;
}

static void srv_stop(srv *v)
{
    for (int i = 0; i < v->nheld; i++)
        if (v->held[i])
            sl_grpc_call_fail(v->held[i], SL_GRPC_CANCELLED, "test over");
    sl_grpc_server_close(v->s, NULL, NULL);
    uv_run(&v->loop, UV_RUN_DEFAULT);
    sl_grpc_server_free(v->s);
    assert_int_equal(uv_loop_close(&v->loop), 0);
    rmdir(v->dir);
    free(v);
}

static void answer_held(srv *v, int i)
{
    Runtime__V1__VersionResponse r = RUNTIME__V1__VERSION_RESPONSE__INIT;
    sl_grpc_call_reply(v->held[i], &r.base);
    v->held[i] = NULL;
}

static sl_grpc_server_stats stats(const srv *v)
{
    sl_grpc_server_stats st;
    sl_grpc_server_get_stats(v->s, &st);
    return st;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Runs the loop for ms. */
static void spin(srv *v, unsigned ms)
{
    uint64_t end = now_ms() + ms;
    do {
        uv_run(&v->loop, UV_RUN_NOWAIT);
        usleep(1000);
    } while (now_ms() < end);
}

/* ---- raw clients ----------------------------------------------------------- */

/* A client connection: an nghttp2 client session on a non-blocking socket,
 * or nothing at all (silent). What the server sent is recorded. */
typedef struct cli {
    int fd;
    nghttp2_session *h2; /* NULL: a silent connection */
    bool eof;
    int goaways;
    uint32_t goaway_code;
    char goaway_debug[200];
    int settings;
    int grpc_status; /* of the last call, -1: none */
    bool call_closed;
} cli;

static int on_frame(nghttp2_session *h2, const nghttp2_frame *f, void *user)
{
    (void)h2;
    cli *c = user;
    if (f->hd.type == NGHTTP2_SETTINGS && !(f->hd.flags & NGHTTP2_FLAG_ACK))
        c->settings++;
    if (f->hd.type == NGHTTP2_GOAWAY) {
        c->goaways++;
        c->goaway_code = f->goaway.error_code;
        size_t n = f->goaway.opaque_data_len < sizeof(c->goaway_debug) - 1
                       ? f->goaway.opaque_data_len
                       : sizeof(c->goaway_debug) - 1;
        memcpy(c->goaway_debug, f->goaway.opaque_data, n);
        c->goaway_debug[n] = '\0';
    }
    return 0;
}

static int on_header(nghttp2_session *h2, const nghttp2_frame *f, const uint8_t *name, size_t nl,
                     const uint8_t *value, size_t vl, uint8_t flags, void *user)
{
    (void)h2, (void)f, (void)nl, (void)vl, (void)flags;
    if (!strcmp((const char *)name, "grpc-status"))
        ((cli *)user)->grpc_status = atoi((const char *)value);
    return 0;
}

static int on_close(nghttp2_session *h2, int32_t id, uint32_t code, void *user)
{
    (void)h2, (void)id, (void)code;
    ((cli *)user)->call_closed = true;
    return 0;
}

static void cli_flush(cli *c)
{
    const uint8_t *p;
    ssize_t n;
    while (c->h2 && (n = nghttp2_session_mem_send(c->h2, &p)) > 0)
        assert_int_equal(write(c->fd, p, (size_t)n), n);
}

/* Reads what arrived; feeds it to the session. */
static void cli_poll(cli *c)
{
    uint8_t buf[65536];
    for (;;) {
        ssize_t n = read(c->fd, buf, sizeof(buf));
        if (n == 0 || (n < 0 && errno != EAGAIN))
            c->eof = true;
        if (n <= 0)
            break;
        if (c->h2)
            nghttp2_session_mem_recv(c->h2, buf, (size_t)n);
    }
    cli_flush(c);
}

static cli *cli_open(srv *v, bool silent)
{
    cli *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    c->grpc_status = -1;
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    assert_true(c->fd >= 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", v->path);
    assert_int_equal(connect(c->fd, (struct sockaddr *)&a, sizeof(a)), 0);
    if (!silent) {
        nghttp2_session_callbacks *cb;
        nghttp2_session_callbacks_new(&cb);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
        nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
        nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
        assert_int_equal(nghttp2_session_client_new(&c->h2, cb, c), 0);
        nghttp2_session_callbacks_del(cb);
        nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, NULL, 0);
        cli_flush(c);
    }
    spin(v, 20); /* accepted, in this order */
    return c;
}

static void cli_close(cli *c)
{
    close(c->fd);
    if (c->h2)
        nghttp2_session_del(c->h2);
    free(c);
}

static ssize_t body_read(nghttp2_session *h2, int32_t id, uint8_t *buf, size_t len, uint32_t *fl,
                         nghttp2_data_source *src, void *user)
{
    (void)h2, (void)id, (void)src, (void)user;
    Runtime__V1__VersionRequest r = RUNTIME__V1__VERSION_REQUEST__INIT;
    size_t n = protobuf_c_message_pack(&r.base, buf + SL_GRPC_PREFIX_LEN);
    assert_true(len >= SL_GRPC_PREFIX_LEN + n);
    sl_grpc_frame_prefix(buf, (uint32_t)n);
    *fl |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)(SL_GRPC_PREFIX_LEN + n);
}

#define HDR(n, v)                                                                                  \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), strlen(n), strlen(v), NGHTTP2_NV_FLAG_NONE                 \
    }

static void cli_call(srv *v, cli *c, const char *path)
{
    nghttp2_nv nva[] = {HDR(":method", "POST"),
                        HDR(":scheme", "http"),
                        HDR(":path", path),
                        HDR(":authority", "localhost"),
                        HDR("content-type", "application/grpc"),
                        HDR("te", "trailers")};
    nghttp2_data_provider prd = {.read_callback = body_read};
    assert_true(nghttp2_submit_request(c->h2, NULL, nva, 6, &prd, NULL) > 0);
    cli_flush(c);
    spin(v, 20);
    cli_poll(c);
}

/* Spins until pred(c) or WAIT_MS. */
static bool wait_for(srv *v, cli *c, bool (*pred)(const cli *c))
{
    uint64_t end = now_ms() + WAIT_MS;
    while (!pred(c) && now_ms() < end) {
        spin(v, 5);
        cli_poll(c);
    }
    return pred(c);
}

static bool is_eof(const cli *c)
{
    return c->eof;
}

static bool answered(const cli *c)
{
    return c->call_closed;
}

/* ---- tests ----------------------------------------------------------------- */

/* The longest idle goes: activity (a PING) moves a connection up. */
static void test_evicts_longest_idle(void **state)
{
    (void)state;
    srv *v = srv_start(3, 0);
    cli *c1 = cli_open(v, false), *c2 = cli_open(v, false), *c3 = cli_open(v, false);
    nghttp2_submit_ping(c1->h2, NGHTTP2_FLAG_NONE, NULL);
    cli_flush(c1);
    spin(v, 20);
    cli *c4 = cli_open(v, false);
    assert_true(wait_for(v, c2, is_eof));
    assert_int_equal(c2->goaways, 1);
    assert_int_equal(c2->goaway_code, NGHTTP2_NO_ERROR);
    assert_non_null(strstr(c2->goaway_debug, "closed to make room: 3 connections open"));
    cli_call(v, c4, "/t.S/Echo");
    assert_true(wait_for(v, c4, answered));
    assert_int_equal(c4->grpc_status, 0);
    cli_poll(c1);
    cli_poll(c3);
    assert_false(c1->eof);
    assert_false(c3->eof);
    sl_grpc_server_stats st = stats(v);
    assert_int_equal(st.evicted, 1);
    assert_int_equal(st.refused, 0);
    assert_int_equal(st.open, 3);
    /* c2 lingers until it closes its end. */
    assert_int_equal(st.connections, 4);
    close(c2->fd);
    spin(v, 50);
    assert_int_equal(stats(v).connections, 3);
    c2->fd = open("/dev/null", O_RDONLY); /* for cli_close */
    cli *all[] = {c1, c2, c3, c4};
    for (int i = 0; i < 4; i++)
        cli_close(all[i]);
    srv_stop(v);
}

/* Connections that never send a byte cannot lock a client out. */
static void test_silent_connections_make_room(void **state)
{
    (void)state;
    srv *v = srv_start(4, 0);
    cli *silent[20];
    for (int i = 0; i < 20; i++)
        silent[i] = cli_open(v, true);
    cli *c = cli_open(v, false);
    cli_call(v, c, "/t.S/Echo");
    assert_true(wait_for(v, c, answered));
    assert_int_equal(c->grpc_status, 0);
    sl_grpc_server_stats st = stats(v);
    assert_int_equal(st.evicted, 17);
    assert_int_equal(st.open, 4);
    /* The first 17 were closed, oldest first; the last three stay. */
    for (int i = 0; i < 20; i++) {
        cli_poll(silent[i]);
        assert_int_equal(silent[i]->eof, i < 17);
        cli_close(silent[i]);
    }
    cli_close(c);
    srv_stop(v);
}

/* Closed connections whose peers never close linger at most
 * SL_GRPC_MAX_LINGERING at once; beyond, they are closed at once. */
static void test_lingering_bounded(void **state)
{
    (void)state;
    enum { N = 2 + SL_GRPC_MAX_LINGERING + 40 };
    srv *v = srv_start(2, 0);
    cli *c[N];
    for (int i = 0; i < N; i++)
        c[i] = cli_open(v, true);
    sl_grpc_server_stats st = stats(v);
    assert_int_equal(st.evicted, N - 2);
    assert_int_equal(st.open, 2);
    /* (the first may have reached the cut-off meanwhile) */
    assert_true(st.connections <= 2 + SL_GRPC_MAX_LINGERING);
    assert_true(st.connections >= SL_GRPC_MAX_LINGERING - 10);
    for (int i = 0; i < N; i++) {
        cli_poll(c[i]);
        assert_int_equal(c[i]->eof, i < N - 2);
        cli_close(c[i]);
    }
    spin(v, 50);
    assert_int_equal(stats(v).connections, 0); /* each saw its peer close */
    srv_stop(v);
}

/* Every connection has a call in progress: the new one is told why. */
static void test_refuses_when_all_busy(void **state)
{
    (void)state;
    srv *v = srv_start(2, 0);
    cli *c1 = cli_open(v, false), *c2 = cli_open(v, false);
    cli_call(v, c1, "/t.S/Hold");
    cli_call(v, c2, "/t.S/Hold");
    assert_int_equal(v->nheld, 2);
    cli *c3 = cli_open(v, false);
    assert_true(wait_for(v, c3, is_eof));
    assert_int_equal(c3->settings, 1);
    assert_int_equal(c3->goaways, 1);
    assert_int_equal(c3->goaway_code, NGHTTP2_REFUSED_STREAM);
    assert_non_null(strstr(c3->goaway_debug, "2 connections open (the limit), each with a call"));
    assert_int_equal(stats(v).refused, 1);
    /* The busy ones go on; once one is answered it can make room. */
    answer_held(v, 0);
    assert_true(wait_for(v, c1, answered));
    assert_int_equal(c1->grpc_status, 0);
    cli *c4 = cli_open(v, false);
    assert_true(wait_for(v, c1, is_eof));
    assert_int_equal(c1->goaways, 1);
    cli_poll(c2);
    assert_false(c2->eof);
    assert_int_equal(stats(v).evicted, 1);
    cli *all[] = {c1, c2, c3, c4};
    for (int i = 0; i < 4; i++)
        cli_close(all[i]);
    srv_stop(v);
}

/* Idle connections are closed after the timeout; one with a call held
 * by its handler is not idle, however long it waits. */
static void test_idle_timeout(void **state)
{
    (void)state;
    srv *v = srv_start(100, 100);
    cli *idle = cli_open(v, false), *busy = cli_open(v, false), *silent = cli_open(v, true);
    cli_call(v, busy, "/t.S/Hold");
    uint64_t t0 = now_ms();
    assert_true(wait_for(v, idle, is_eof));
    uint64_t took = now_ms() - t0;
    assert_true(took >= 50 && took < 1000);
    assert_int_equal(idle->goaways, 1);
    assert_int_equal(idle->goaway_code, NGHTTP2_NO_ERROR);
    assert_non_null(strstr(idle->goaway_debug, "idle for"));
    assert_true(wait_for(v, silent, is_eof));
    spin(v, 300);
    cli_poll(busy);
    assert_false(busy->eof);
    assert_int_equal(stats(v).idle_closed, 2);
    answer_held(v, 0);
    assert_true(wait_for(v, busy, answered));
    assert_true(wait_for(v, busy, is_eof)); /* idle now */
    assert_int_equal(busy->goaways, 1);
    assert_int_equal(stats(v).idle_closed, 3);
    assert_int_equal(stats(v).open, 0);
    cli_close(idle);
    cli_close(busy);
    cli_close(silent);
    srv_stop(v);
}

/* The limit is kept to half the open-file limit. */
static void test_limit_follows_nofile(void **state)
{
    (void)state;
    struct rlimit old, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = 200;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    srv *v = srv_start(4096, 0);
    assert_int_equal(sl_grpc_server_max_connections(v->s), 200 / SL_GRPC_FD_SHARE);
    srv_stop(v);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    v = srv_start(64, 0);
    assert_int_equal(sl_grpc_server_max_connections(v->s), 64);
    srv_stop(v);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* as sluiced: writes to closed peers fail */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_evicts_longest_idle),
        cmocka_unit_test(test_silent_connections_make_room),
        cmocka_unit_test(test_lingering_bounded),
        cmocka_unit_test(test_refuses_when_all_busy),
        cmocka_unit_test(test_idle_timeout),
        cmocka_unit_test(test_limit_follows_nofile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
