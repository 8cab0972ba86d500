/* The CRI client against an nghttp2 server thread on a unix socket: unary
 * calls with the headers gRPC needs, answers split at every byte, errors
 * (Trailers-Only with a percent-encoded message, HTTP 404, no grpc-status,
 * compressed or malformed messages), deadlines (the stream is cancelled and
 * the connection stays usable), a server that closes mid-call, answers
 * larger than the windows and than the 16 MiB limit, bad endpoints; server
 * streaming (messages split at every byte, a stream the client ends, one
 * that fails); each error says whether it is the runtime's answer or ours
 * (errnum). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cri_client.h"
#include "grpc/api.pb-c.h"

enum mode {
    M_OK,          /* VersionResponse */
    M_ERR,         /* Trailers-Only NOT_FOUND, percent-encoded message */
    M_HTTP404,     /* a non-gRPC answer */
    M_NO_STATUS,   /* data but trailers without grpc-status */
    M_COMPRESSED,  /* compressed-flag set */
    M_MALFORMED,   /* length prefix larger than the data */
    M_GARBAGE,     /* a message that does not decode */
    M_SILENT_ONCE, /* the first request gets no answer */
    M_CLOSE,       /* the connection is closed when a request arrives */
    M_BIG,         /* runtime_name of big_len bytes */
    /* GetContainerEvents (other paths answer as M_OK): */
    M_STREAM,      /* STREAM_MSGS events, then OK */
    M_STREAM_OPEN, /* STREAM_MSGS events, then nothing: the client must end it */
    M_STREAM_BAD,  /* one event, then a message that does not decode */
};
#define STREAM_MSGS 5

typedef struct srv {
    char path[108];
    int lfd;
    pthread_t th;
    enum mode mode;
    size_t split; /* write each batch as [split bytes][rest]; 0 = whole */
    size_t big_len;
    /* what the last request looked like */
    char req_path[128], ctype[64], te[32], timeout[16];
    size_t body_len;
    int requests;
    /* per stream response state */
    uint8_t *resp;
    size_t resp_len, resp_off;
    bool stop;
} srv;

/* ---- server ----------------------------------------------------------------- */

static void copy_hdr(char *dst, size_t cap, const uint8_t *v, size_t n)
{
    snprintf(dst, cap, "%.*s", (int)n, (const char *)v);
}

static int s_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nl,
                    const uint8_t *v, size_t vl, uint8_t flags, void *ud)
{
    srv *x = ud;
    (void)s, (void)f, (void)flags;
    if (nl == 5 && !memcmp(name, ":path", 5))
        copy_hdr(x->req_path, sizeof x->req_path, v, vl);
    else if (nl == 12 && !memcmp(name, "content-type", 12))
        copy_hdr(x->ctype, sizeof x->ctype, v, vl);
    else if (nl == 2 && !memcmp(name, "te", 2))
        copy_hdr(x->te, sizeof x->te, v, vl);
    else if (nl == 12 && !memcmp(name, "grpc-timeout", 12))
        copy_hdr(x->timeout, sizeof x->timeout, v, vl);
    return 0;
}

static int s_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *d, size_t n,
                  void *ud)
{
    (void)s, (void)flags, (void)id, (void)d;
    ((srv *)ud)->body_len += n;
    return 0;
}

static ssize_t s_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                      nghttp2_data_source *src, void *ud)
{
    srv *x = ud;
    (void)src;
    size_t n = x->resp_len - x->resp_off;
    if (n > len)
        n = len;
    memcpy(buf, x->resp + x->resp_off, n);
    x->resp_off += n;
    if (x->resp_off == x->resp_len) {
        if (x->mode == M_STREAM_OPEN && strstr(x->req_path, "Events"))
            return n ? (ssize_t)n : NGHTTP2_ERR_DEFERRED; /* never ends */
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        nghttp2_nv tr[] = {{(uint8_t *)"grpc-status", (uint8_t *)"0", 11, 1, 0}};
        nghttp2_submit_trailer(s, id, tr, x->mode == M_NO_STATUS ? 0 : 1);
    }
    return (ssize_t)n;
}

static void make_resp(srv *x)
{
    Runtime__V1__VersionResponse v = RUNTIME__V1__VERSION_RESPONSE__INIT;
    char *big = NULL;
    v.version = "0.1.0", v.runtime_name = "fake", v.runtime_version = "1.2.3";
    v.runtime_api_version = "v1";
    if (x->mode == M_BIG) {
        big = malloc(x->big_len + 1);
        memset(big, 'n', x->big_len);
        big[x->big_len] = '\0';
        v.runtime_name = big;
    }
    size_t n = protobuf_c_message_get_packed_size(&v.base);
    free(x->resp);
    x->resp = malloc(n + 5);
    x->resp[0] = x->mode == M_COMPRESSED;
    size_t claimed = x->mode == M_MALFORMED ? n + 10 : n;
    x->resp[1] = (uint8_t)(claimed >> 24), x->resp[2] = (uint8_t)(claimed >> 16);
    x->resp[3] = (uint8_t)(claimed >> 8), x->resp[4] = (uint8_t)claimed;
    protobuf_c_message_pack(&v.base, x->resp + 5);
    if (x->mode == M_GARBAGE)
        memset(x->resp + 5, 0xff, n);
    x->resp_len = n + 5;
    x->resp_off = 0;
    free(big);
}

/* STREAM_MSGS length-prefixed events (the last garbage for M_STREAM_BAD). */
static void make_events(srv *x)
{
    free(x->resp);
    x->resp = malloc(STREAM_MSGS * 128);
    x->resp_len = x->resp_off = 0;
    for (int i = 0; i < STREAM_MSGS; i++) {
        Runtime__V1__ContainerEventResponse ev = RUNTIME__V1__CONTAINER_EVENT_RESPONSE__INIT;
        char id[16];
        snprintf(id, sizeof id, "ctr-%d", i);
        ev.container_id = id;
        ev.container_event_type = (Runtime__V1__ContainerEventType)(i % 4);
        ev.created_at = 1000 + i;
        size_t n = protobuf_c_message_get_packed_size(&ev.base);
        uint8_t *p = x->resp + x->resp_len;
        p[0] = 0, p[1] = 0, p[2] = 0, p[3] = 0, p[4] = (uint8_t)n;
        protobuf_c_message_pack(&ev.base, p + 5);
        if (x->mode == M_STREAM_BAD && i == 1)
            memset(p + 5, 0xff, n);
        x->resp_len += n + 5;
        if (x->mode == M_STREAM_BAD && i == 1)
            break;
    }
}

static void respond(nghttp2_session *s, srv *x, int32_t id)
{
    nghttp2_nv ok[] = {{(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0},
                       {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, 0}};
    if (x->mode == M_ERR) {
        const char *msg = "container%20%22x%22%20not%20found%3A%20%E2%9C%93";
        nghttp2_nv h[] = {ok[0],
                          ok[1],
                          {(uint8_t *)"grpc-status", (uint8_t *)"5", 11, 1, 0},
                          {(uint8_t *)"grpc-message", (uint8_t *)msg, 12, strlen(msg), 0}};
        nghttp2_submit_response(s, id, h, 4, NULL);
        return;
    }
    if (x->mode == M_HTTP404) {
        nghttp2_nv h[] = {{(uint8_t *)":status", (uint8_t *)"404", 7, 3, 0}};
        nghttp2_submit_response(s, id, h, 1, NULL);
        return;
    }
    if (x->mode >= M_STREAM && strstr(x->req_path, "Events"))
        make_events(x);
    else
        make_resp(x);
    nghttp2_data_provider dp = {.read_callback = s_read};
    nghttp2_submit_response(s, id, ok, 2, &dp);
}

static int s_frame(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    srv *x = ud;
    if ((f->hd.type != NGHTTP2_DATA && f->hd.type != NGHTTP2_HEADERS) ||
        !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    x->requests++;
    if (x->mode == M_CLOSE)
        return NGHTTP2_ERR_CALLBACK_FAILURE; /* the loop closes the socket */
    if (x->mode == M_SILENT_ONCE && x->requests == 1)
        return 0;
    respond(s, x, f->hd.stream_id);
    return 0;
}

static void write_split(int fd, const uint8_t *p, size_t n, size_t split)
{
    size_t first = split && split < n ? split : n;
    while (n) {
        ssize_t w = send(fd, p, first, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        p += w, n -= (size_t)w, first = n;
        if (split)
            usleep(500);
    }
}

static void serve(srv *x, int fd)
{
    nghttp2_session_callbacks *cb;
    nghttp2_session *s;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, s_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, s_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, s_frame);
    nghttp2_session_server_new(&s, cb, x);
    nghttp2_session_callbacks_del(cb);
    nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0);
    uint8_t buf[65536];
    for (;;) {
        const uint8_t *out;
        ssize_t n;
        while ((n = nghttp2_session_mem_send(s, &out)) > 0)
            write_split(fd, out, (size_t)n, x->split);
        ssize_t r = read(fd, buf, sizeof buf);
        if (r <= 0 || nghttp2_session_mem_recv(s, buf, (size_t)r) < 0)
            break;
    }
    nghttp2_session_del(s);
    close(fd);
}

static void *srv_main(void *arg)
{
    srv *x = arg;
    while (!x->stop) {
        int fd = accept(x->lfd, NULL, NULL);
        if (fd < 0)
            break;
        serve(x, fd);
    }
    return NULL;
}

static srv *srv_start(enum mode m, size_t split)
{
    srv *x = calloc(1, sizeof *x);
    x->mode = m;
    x->split = split;
    snprintf(x->path, sizeof x->path, "/tmp/cri-client-test-%d.sock", (int)getpid());
    unlink(x->path);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", x->path);
    x->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(bind(x->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(x->lfd, 8), 0);
    pthread_create(&x->th, NULL, srv_main, x);
    return x;
}

static void srv_stop(srv *x)
{
    x->stop = true;
    shutdown(x->lfd, SHUT_RDWR);
    close(x->lfd);
    pthread_join(x->th, NULL);
    unlink(x->path);
    free(x->resp);
    free(x);
}

/* ---- client helpers -------------------------------------------------------- */

static sl_cri_client *connect_to(srv *x)
{
    char ep[160];
    sl_cri_client *c = NULL;
    sl_error e;
    snprintf(ep, sizeof ep, "unix://%s", x->path);
    assert_int_equal(sl_cri_client_connect(ep, 2000, &c, &e), 0);
    return c;
}

static int version(sl_cri_client *c, uint32_t tmo, Runtime__V1__VersionResponse **out, sl_error *e)
{
    Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
    ProtobufCMessage *r;
    int rc = sl_cri_client_call(c, "/runtime.v1.RuntimeService/Version", &req.base,
                                &runtime__v1__version_response__descriptor, &r, tmo, e);
    *out = (Runtime__V1__VersionResponse *)r;
    return rc;
}

/* A fake server and a client connected to it, with the last call's
 * answer and error. */
typedef struct pair {
    srv *x;
    sl_cri_client *c;
    Runtime__V1__VersionResponse *v;
    sl_error e;
} pair;

static void pair_open(pair *p, enum mode m, size_t split)
{
    memset(p, 0, sizeof(*p));
    p->x = srv_start(m, split);
    p->c = connect_to(p->x);
}

/* One Version call (the previous answer freed). */
static int pair_version(pair *p, uint32_t tmo)
{
    if (p->v)
        protobuf_c_message_free_unpacked(&p->v->base, NULL);
    return version(p->c, tmo, &p->v, &p->e);
}

static void pair_close(pair *p)
{
    if (p->v)
        protobuf_c_message_free_unpacked(&p->v->base, NULL);
    sl_cri_client_free(p->c);
    srv_stop(p->x);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_ok_and_headers(void **state)
{
    (void)state;
    pair p;
    pair_open(&p, M_OK, 0);
    for (int i = 0; i < 3; i++) { /* several calls on one connection */
        assert_int_equal(pair_version(&p, 1500), SL_CRI_OK);
        assert_string_equal(p.v->runtime_name, "fake");
        assert_string_equal(p.v->runtime_version, "1.2.3");
    }
    assert_string_equal(p.x->req_path, "/runtime.v1.RuntimeService/Version");
    assert_string_equal(p.x->ctype, "application/grpc");
    assert_string_equal(p.x->te, "trailers");
    assert_string_equal(p.x->timeout, "1500m");
    assert_int_equal(p.x->body_len, 15); /* empty messages: 5-byte prefixes */
    assert_int_equal(p.x->requests, 3);
    pair_close(&p);
}

static void test_every_split(void **state)
{
    (void)state;
    for (size_t split = 1; split <= 120; split++) {
        pair p;
        pair_open(&p, M_OK, split);
        assert_int_equal(pair_version(&p, 3000), SL_CRI_OK);
        assert_string_equal(p.v->runtime_api_version, "v1");
        pair_close(&p);
    }
}

static void expect_error(enum mode m, int code, const char *substr)
{
    pair p;
    pair_open(&p, m, 0);
    assert_int_equal(pair_version(&p, 2000), code);
    assert_null(p.v);
    assert_int_equal(p.e.code, code);
    assert_int_equal(p.e.errnum, 0); /* the runtime's answer, not ours */
    assert_false(sl_cri_is_local(&p.e));
    if (!strstr(p.e.msg, substr))
        fail_msg("message \"%s\" lacks \"%s\"", p.e.msg, substr);
    pair_close(&p);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error(M_ERR, SL_CRI_NOT_FOUND, "container \"x\" not found: \xE2\x9C\x93");
    expect_error(M_HTTP404, SL_CRI_UNIMPLEMENTED, "HTTP status 404");
    expect_error(M_NO_STATUS, SL_CRI_INTERNAL, "no grpc-status");
    expect_error(M_COMPRESSED, SL_CRI_INTERNAL, "compressed");
    expect_error(M_MALFORMED, SL_CRI_INTERNAL, "malformed");
    expect_error(M_GARBAGE, SL_CRI_INTERNAL, "could not decode");
}

static void test_deadline_then_usable(void **state)
{
    (void)state;
    pair p;
    pair_open(&p, M_SILENT_ONCE, 0);
    assert_int_equal(pair_version(&p, 200), SL_CRI_DEADLINE_EXCEEDED);
    assert_int_equal(p.e.errnum, ETIMEDOUT);
    assert_true(sl_cri_is_local(&p.e));
    assert_false(sl_cri_transport_failed(&p.e));
    assert_string_equal(p.e.msg, "/runtime.v1.RuntimeService/Version: no answer within 200 ms");
    assert_int_equal(pair_version(&p, 2000), SL_CRI_OK);
    /* a call that succeeds leaves the error clear */
    assert_int_equal(p.e.code, 0);
    assert_int_equal(p.e.errnum, 0);
    assert_string_equal(p.e.msg, "");
    pair_close(&p);
}

static void test_server_closes(void **state)
{
    (void)state;
    pair p;
    pair_open(&p, M_CLOSE, 0);
    assert_int_equal(pair_version(&p, 2000), SL_CRI_UNAVAILABLE);
    assert_true(sl_cri_transport_failed(&p.e));
    assert_non_null(strstr(p.e.msg, "closed the connection"));
    int errnum = p.e.errnum;
    /* Broken from now on, with the same explanation. */
    assert_int_equal(pair_version(&p, 2000), SL_CRI_UNAVAILABLE);
    assert_true(sl_cri_transport_failed(&p.e));
    assert_int_equal(p.e.errnum, errnum);
    assert_non_null(strstr(p.e.msg, "closed the connection"));
    pair_close(&p);
}

static void test_big_answers(void **state)
{
    (void)state;
    pair p;
    pair_open(&p, M_BIG, 0);
    p.x->big_len = 3u * 1024 * 1024; /* beyond the 64 KiB default windows */
    assert_int_equal(pair_version(&p, 5000), SL_CRI_OK);
    assert_int_equal(strlen(p.v->runtime_name), p.x->big_len);
    p.x->big_len = SL_CRI_MAX_RECV_MESSAGE + 1;
    assert_int_equal(pair_version(&p, 10000), SL_CRI_RESOURCE_EXHAUSTED);
    assert_int_equal(p.e.errnum, EMSGSIZE); /* our limit, not the runtime's answer */
    assert_non_null(strstr(p.e.msg, "larger than"));
    pair_close(&p);
}

static void test_endpoints(void **state)
{
    (void)state;
    sl_cri_client *c;
    sl_error e;
    assert_int_equal(sl_cri_client_connect("tcp://127.0.0.1:1", 500, &c, &e), -1);
    assert_int_equal(e.code, SL_CRI_UNAVAILABLE);
    assert_int_equal(e.errnum, EINVAL);
    assert_true(sl_cri_transport_failed(&e));
    assert_string_equal(e.msg, "endpoint tcp://127.0.0.1:1: only unix sockets are supported "
                               "(unix:///path/to/socket)");
    assert_int_equal(sl_cri_client_connect("unix:///nonexistent/x.sock", 500, &c, &e), -1);
    assert_int_equal(e.code, SL_CRI_UNAVAILABLE);
    assert_int_equal(e.errnum, ENOENT);
    assert_string_equal(e.msg,
                        "connecting to unix:///nonexistent/x.sock: No such file or directory");
    char longp[300];
    memset(longp, 'a', sizeof longp);
    memcpy(longp, "unix:///", 8);
    longp[sizeof longp - 1] = '\0';
    assert_int_equal(sl_cri_client_connect(longp, 500, &c, &e), -1);
    assert_int_equal(e.errnum, ENAMETOOLONG);
    assert_true(sl_cri_transport_failed(&e));
    assert_non_null(strstr(e.msg, "longer than"));
}

/* ---- server streaming ---- */

typedef struct evs {
    int n, stop_after;
    bool stop_flag_after; /* end through stop() rather than on_msg */
    char ids[STREAM_MSGS][16];
} evs;

static int on_ev(void *arg, const ProtobufCMessage *m)
{
    evs *v = arg;
    const Runtime__V1__ContainerEventResponse *ev = (const void *)m;
    assert_ptr_equal(m->descriptor, &runtime__v1__container_event_response__descriptor);
    assert_int_equal(ev->created_at, 1000 + v->n);
    snprintf(v->ids[v->n % STREAM_MSGS], 16, "%s", ev->container_id);
    v->n++;
    return !v->stop_flag_after && v->stop_after && v->n >= v->stop_after;
}

static bool ev_stop(void *arg)
{
    evs *v = arg;
    return v->stop_flag_after && v->n >= v->stop_after;
}

static int events(pair *p, evs *v, uint32_t tmo)
{
    Runtime__V1__GetEventsRequest req = RUNTIME__V1__GET_EVENTS_REQUEST__INIT;
    sl_cri_stream_cb cb = {on_ev, ev_stop, v};
    return sl_cri_client_stream(p->c, "/runtime.v1.RuntimeService/GetContainerEvents", &req.base,
                                &runtime__v1__container_event_response__descriptor, &cb, tmo,
                                &p->e);
}

static void test_stream_every_split(void **state)
{
    (void)state;
    for (size_t split = 0; split <= 90; split++) {
        pair p;
        evs v = {0};
        pair_open(&p, M_STREAM, split);
        assert_int_equal(events(&p, &v, 0), SL_CRI_OK);
        assert_int_equal(v.n, STREAM_MSGS);
        assert_string_equal(v.ids[4], "ctr-4");
        assert_string_equal(p.x->timeout, ""); /* no deadline, no grpc-timeout */
        pair_close(&p);
    }
}

static void test_stream_ended_by_client(void **state)
{
    (void)state;
    for (int how = 0; how < 2; how++) {
        pair p;
        evs v = {.stop_after = 2, .stop_flag_after = how};
        pair_open(&p, M_STREAM_OPEN, 0);
        assert_int_equal(events(&p, &v, 0), SL_CRI_CANCELLED);
        assert_int_equal(p.e.errnum, ECANCELED); /* ours, the connection stays */
        assert_false(sl_cri_transport_failed(&p.e));
        assert_true(v.n >= 2);
        /* The stream was reset; the connection still serves calls. */
        assert_int_equal(pair_version(&p, 2000), SL_CRI_OK);
        pair_close(&p);
    }
    pair p;
    evs v = {0};
    pair_open(&p, M_STREAM_OPEN, 0);
    assert_int_equal(events(&p, &v, 300), SL_CRI_DEADLINE_EXCEEDED);
    assert_int_equal(p.e.errnum, ETIMEDOUT);
    assert_int_equal(v.n, STREAM_MSGS);
    pair_close(&p);
}

static void test_stream_errors(void **state)
{
    (void)state;
    pair p;
    evs v = {0};
    pair_open(&p, M_STREAM_BAD, 0);
    assert_int_equal(events(&p, &v, 2000), SL_CRI_INTERNAL);
    assert_int_equal(v.n, 1);
    assert_int_equal(p.e.errnum, 0); /* what the runtime sent is at fault */
    assert_non_null(strstr(p.e.msg, "could not decode a message of"));
    pair_close(&p);
    pair_open(&p, M_ERR, 0); /* a Trailers-Only answer (containerd 1.6 gives Unimplemented so) */
    assert_int_equal(events(&p, &v, 2000), SL_CRI_NOT_FOUND);
    assert_int_equal(p.e.errnum, 0);
    pair_close(&p);
}

static void test_helpers(void **state)
{
    (void)state;
    char t[10];
    sl_cri_format_timeout(2000, t);
    assert_string_equal(t, "2000m");
    sl_cri_format_timeout(99999999, t);
    assert_string_equal(t, "99999999m");
    sl_cri_format_timeout(100000000, t);
    assert_string_equal(t, "100000S");
    assert_string_equal(sl_cri_code_name(5), "NotFound");
    assert_string_equal(sl_cri_code_name(99), "Code(?)");
    assert_int_equal(sl_cri_http_to_code(503), SL_CRI_UNAVAILABLE);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* the server writes to clients that left */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ok_and_headers),
        cmocka_unit_test(test_every_split),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_deadline_then_usable),
        cmocka_unit_test(test_server_closes),
        cmocka_unit_test(test_big_answers),
        cmocka_unit_test(test_endpoints),
        cmocka_unit_test(test_helpers),
        cmocka_unit_test(test_stream_every_split),
        cmocka_unit_test(test_stream_ended_by_client),
        cmocka_unit_test(test_stream_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
