/* The gRPC connection core driven in memory by an nghttp2 client session:
 * no sockets on either side. Unary calls, request bodies split at every
 * byte, responses beyond the flow-control window, concurrent and
 * asynchronous calls, unknown methods, malformed requests, deadlines,
 * cancellation, and the CRI table's Version and Status. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cri/service.h"
#include "grpc/api.pb-c.h"
#include "grpc/grpc_conn.h"
#include "grpc/grpc_frame.h"
#include "grpc_fx.h"
#include "sluice/error.h"

#define BIG_RESPONSE (1024 * 1024)

/* Echo: VersionRequest.version back as VersionResponse.version. */
static void h_echo(sl_grpc_call *call, void *arg)
{
    fixture *f = arg;
    f->handler_runs++;
    const Runtime__V1__VersionRequest *req = (const void *)sl_grpc_call_request(call);
    Runtime__V1__VersionResponse resp = RUNTIME__V1__VERSION_RESPONSE__INIT;
    resp.version = req->version;
    assert_int_equal(sl_grpc_call_reply(call, &resp.base), SL_OK);
}

/* Big: an ExecSyncResponse whose stdout is BIG_RESPONSE bytes. */
static void h_big(sl_grpc_call *call, void *arg)
{
    (void)arg;
    Runtime__V1__ExecSyncResponse resp = RUNTIME__V1__EXEC_SYNC_RESPONSE__INIT;
    uint8_t *out = malloc(BIG_RESPONSE);
    assert_non_null(out);
    for (size_t i = 0; i < BIG_RESPONSE; i++)
        out[i] = (uint8_t)(i % 251);
    resp.stdout.data = out;
    resp.stdout.len = BIG_RESPONSE;
    resp.exit_code = 7;
    sl_grpc_call_reply(call, &resp.base);
    free(out);
}

static void h_fail(sl_grpc_call *call, void *arg)
{
    (void)arg;
    sl_grpc_call_fail(call, SL_GRPC_NOT_FOUND, "container \"%s\" 100%% gone\n", "c\xc3\xa9");
}

#define METHOD(p, h)                                                                               \
    {                                                                                              \
        .path = p, .request = &runtime__v1__version_request__descriptor, .handler = h              \
    }

static const sl_grpc_method test_methods[] = {
    METHOD("/test.Svc/Echo", h_echo),       METHOD("/test.Svc/Big", h_big),
    METHOD("/test.Svc/Later", gfx_h_later), METHOD("/test.Svc/Fail", h_fail),
    METHOD("/test.Svc/Unimpl", NULL),       {.path = "/test.Svc/NoType"},
};

static int setup(void **state)
{
    *state = gfx_new(test_methods, sizeof(test_methods) / sizeof(test_methods[0]), false);
    return 0;
}

static int teardown(void **state)
{
    gfx_free(*state);
    return 0;
}

static void expect_echo(const cstream *s, const char *v)
{
    expect_status(s, SL_GRPC_OK, NULL);
    assert_int_equal(s->http, 200);
    assert_int_equal(s->header_blocks, 2); /* headers, trailers */
    Runtime__V1__VersionResponse *r =
        (void *)response(s, &runtime__v1__version_response__descriptor);
    assert_string_equal(r->version, v);
    protobuf_c_message_free_unpacked(&r->base, NULL);
}

/* ---- tests ----------------------------------------------------------------- */

static void test_settings_and_ping(void **state)
{
    fixture *f = *state;
    uint8_t opaque[8] = "pingpong";
    nghttp2_submit_ping(f->cli, NGHTTP2_FLAG_NONE, opaque);
    pump(f);
    assert_int_equal(f->server_max_streams, SL_GRPC_DEFAULT_MAX_STREAMS);
    assert_int_equal(f->ping_acks, 1);
    assert_true(sl_grpc_conn_want_read(f->conn));
}

static void test_unary_echo(void **state)
{
    fixture *f = *state;
    cstream *s = submit_version(f, "/test.Svc/Echo", "v1alpha9", NULL);
    pump(f);
    expect_echo(s, "v1alpha9");
    assert_int_equal(f->wakes, 0); /* answered inside recv: no wake needed */
    assert_int_equal(sl_grpc_conn_calls(f->conn), 0);
}

/* The request body split into DATA frames of every size, and the bytes
 * split into every recv size: the same answer each time. */
static void test_body_split_everywhere(void **state)
{
    fixture *f = *state;
    uint8_t body[64];
    size_t n = version_req(body, "split-me");
    for (size_t chunk = 1; chunk <= n; chunk++) {
        req_opts o = {.chunk = chunk};
        cstream *s = submit(f, "/test.Svc/Echo", body, n, &o);
        pump(f);
        expect_echo(s, "split-me");
    }
    f->split = 1;
    cstream *s = submit(f, "/test.Svc/Echo", body, n, NULL);
    pump(f);
    expect_echo(s, "split-me");
    f->split = 7;
    s = submit(f, "/test.Svc/Echo", body, n, &(req_opts){.chunk = 3});
    pump(f);
    expect_echo(s, "split-me");
}

static void test_empty_request_message(void **state)
{
    fixture *f = *state;
    cstream *s = submit_version(f, "/test.Svc/Echo", "", NULL);
    assert_int_equal(s->len, SL_GRPC_PREFIX_LEN); /* 0 bytes of protobuf */
    pump(f);
    expect_echo(s, "");
}

static void test_large_response_beyond_window(void **state)
{
    fixture *f = *state;
    cstream *s = submit_version(f, "/test.Svc/Big", "", NULL);
    /* One round without returning window credit: at most the initial
     * window (65535) of DATA may arrive. */
    client_to_server(f);
    server_to_client(f);
    assert_true(s->dlen <= NGHTTP2_INITIAL_WINDOW_SIZE);
    assert_true(s->dlen > 0);
    pump(f);
    expect_status(s, SL_GRPC_OK, NULL);
    Runtime__V1__ExecSyncResponse *r =
        (void *)response(s, &runtime__v1__exec_sync_response__descriptor);
    assert_int_equal(r->stdout.len, BIG_RESPONSE);
    for (size_t i = 0; i < BIG_RESPONSE; i += 4093)
        assert_int_equal(r->stdout.data[i], (uint8_t)(i % 251));
    assert_int_equal(r->exit_code, 7);
    protobuf_c_message_free_unpacked(&r->base, NULL);
}

/* Many calls at once, answered out of order (some later, async). */
static void test_concurrent_calls(void **state)
{
    fixture *f = *state;
    enum { N = 60 };
    cstream *s[N];
    char v[16];
    for (int i = 0; i < N; i++) {
        snprintf(v, sizeof(v), "call-%d", i);
        s[i] = submit_version(f, i % 3 ? "/test.Svc/Echo" : "/test.Svc/Later", v,
                              &(req_opts){.chunk = (size_t)(i % 5) + 1});
    }
    pump(f);
    assert_int_equal(f->npending, N / 3);
    /* The async ones, newest first. */
    for (int i = f->npending - 1; i >= 0; i--) {
        const Runtime__V1__VersionRequest *req = (const void *)sl_grpc_call_request(f->pending[i]);
        Runtime__V1__VersionResponse resp = RUNTIME__V1__VERSION_RESPONSE__INIT;
        resp.version = req->version;
        sl_grpc_call_reply(f->pending[i], &resp.base);
        f->pending[i] = NULL;
    }
    assert_int_equal(f->wakes, N / 3);
    pump(f);
    for (int i = 0; i < N; i++) {
        snprintf(v, sizeof(v), "call-%d", i);
        expect_echo(s[i], v);
    }
    assert_int_equal(f->cancels, 0);
    assert_int_equal(sl_grpc_conn_calls(f->conn), 0);
}

/* Two connections share a config and interleave. */
static void test_two_connections(void **state)
{
    fixture *f = *state;
    fixture *g = gfx_new(test_methods, sizeof(test_methods) / sizeof(test_methods[0]), false);
    cstream *s1 = submit_version(f, "/test.Svc/Later", "one", NULL);
    cstream *s2 = submit_version(g, "/test.Svc/Echo", "two", NULL);
    pump(f);
    pump(g);
    expect_echo(s2, "two");
    assert_false(s1->closed);
    Runtime__V1__VersionResponse resp = RUNTIME__V1__VERSION_RESPONSE__INIT;
    resp.version = "one";
    sl_grpc_call_reply(f->pending[0], &resp.base);
    f->pending[0] = NULL;
    pump(f);
    expect_echo(s1, "one");
    gfx_free(g);
}

static void test_unknown_method(void **state)
{
    fixture *f = *state;
    cstream *s = submit_version(f, "/runtime.v1.RuntimeService/Nope", "", NULL);
    pump(f);
    expect_status(s, SL_GRPC_UNIMPLEMENTED, "unknown method /runtime.v1.RuntimeService/Nope");
    assert_true(s->trailers_only);
    assert_int_equal(s->http, 200);
    assert_int_equal(s->dlen, 0);
}

static void test_known_unimplemented(void **state)
{
    fixture *f = *state;
    cstream *a = submit_version(f, "/test.Svc/Unimpl", "", NULL);
    cstream *b = submit_version(f, "/test.Svc/NoType", "", NULL);
    pump(f);
    expect_status(a, SL_GRPC_UNIMPLEMENTED, "not implemented");
    expect_status(b, SL_GRPC_UNIMPLEMENTED, "not implemented");
    assert_true(a->trailers_only);
    assert_int_equal(f->handler_runs, 0);
}

static void test_fail_message_encoding(void **state)
{
    fixture *f = *state;
    cstream *s = submit_version(f, "/test.Svc/Fail", "", NULL);
    pump(f);
    expect_status(s, SL_GRPC_NOT_FOUND, NULL);
    /* Decoded by the client from its percent-encoded form. */
    assert_string_equal(s->grpc_message, "container \"c\xc3\xa9\" 100% gone\n");
    assert_true(s->trailers_only);
}

static void test_truncated_protobuf(void **state)
{
    fixture *f = *state;
    /* Field 1, length 10, only 3 bytes follow. */
    uint8_t body[] = {0, 0, 0, 0, 5, 0x0a, 10, 'a', 'b', 'c'};
    cstream *s = submit(f, "/test.Svc/Echo", body, sizeof(body), NULL);
    /* A wire type 7 tag is invalid too. */
    uint8_t bad[] = {0, 0, 0, 0, 2, 0x0f, 0x01};
    cstream *t = submit(f, "/test.Svc/Echo", bad, sizeof(bad), NULL);
    pump(f);
    expect_status(s, SL_GRPC_INVALID_ARGUMENT, "runtime.v1.VersionRequest");
    expect_status(t, SL_GRPC_INVALID_ARGUMENT, NULL);
    assert_int_equal(f->handler_runs, 0);
}

static void test_compressed_and_bad_flag(void **state)
{
    fixture *f = *state;
    uint8_t comp[] = {1, 0, 0, 0, 1, 0};
    uint8_t flag[] = {9, 0, 0, 0, 1, 0};
    cstream *a = submit(f, "/test.Svc/Echo", comp, sizeof(comp), NULL);
    cstream *b = submit(f, "/test.Svc/Echo", flag, sizeof(flag), NULL);
    pump(f);
    expect_status(a, SL_GRPC_UNIMPLEMENTED, "compression not supported");
    expect_status(b, SL_GRPC_INTERNAL, "compressed flag 9");
}

/* Over the receive limit: answered on the prefix alone; the client, still
 * sending, is told to stop with RST_STREAM(NO_ERROR). */
static void test_too_large_message(void **state)
{
    fixture *f = *state;
    uint8_t prefix[5];
    sl_grpc_frame_prefix(prefix, 4097);
    cstream *s = submit(f, "/test.Svc/Echo", prefix, 5, &(req_opts){.open = true});
    pump(f);
    expect_status(s, SL_GRPC_RESOURCE_EXHAUSTED, "larger than max (4097 vs. 4096)");
    assert_true(s->got_rst);
    assert_int_equal(s->rst_code, NGHTTP2_NO_ERROR);
}

static void test_message_count_errors(void **state)
{
    fixture *f = *state;
    uint8_t two[64];
    size_t n = version_req(two, "a");
    n += version_req(two + n, "b");
    uint8_t partial[] = {0, 0, 0, 0, 9, 0x0a, 1};
    cstream *a = submit(f, "/test.Svc/Echo", two, n, NULL);
    cstream *b = submit(f, "/test.Svc/Echo", NULL, 0, NULL);
    cstream *c = submit(f, "/test.Svc/Echo", partial, sizeof(partial), NULL);
    cstream *d = submit(f, "/test.Svc/Echo", partial, 3, NULL);
    pump(f);
    expect_status(a, SL_GRPC_INTERNAL, "more than one request message");
    expect_status(b, SL_GRPC_INTERNAL, "no request message");
    expect_status(c, SL_GRPC_INTERNAL, "(7 of 14 bytes)");
    expect_status(d, SL_GRPC_INTERNAL, "(3 of 5 bytes)");
    assert_int_equal(f->handler_runs, 0);
}

static void test_bad_headers(void **state)
{
    fixture *f = *state;
    cstream *ct =
        submit_version(f, "/test.Svc/Echo", "", &(req_opts){.content_type = "text/plain"});
    cstream *ct2 =
        submit_version(f, "/test.Svc/Echo", "", &(req_opts){.content_type = "application/grpcx"});
    cstream *proto = submit_version(f, "/test.Svc/Echo", "",
                                    &(req_opts){.content_type = "application/grpc+proto"});
    cstream *get = submit_version(f, "/test.Svc/Echo", "", &(req_opts){.method = "PUT"});
    cstream *to = submit_version(f, "/test.Svc/Echo", "", &(req_opts){.timeout = "123456789S"});
    pump(f);
    assert_int_equal(ct->http, 415);
    expect_status(ct, SL_GRPC_INVALID_ARGUMENT, "content-type \"text/plain\"");
    assert_int_equal(ct2->http, 415);
    expect_echo(proto, "");
    assert_int_equal(get->http, 405);
    expect_status(to, SL_GRPC_INTERNAL, "malformed grpc-timeout");
}

static void test_deadline(void **state)
{
    fixture *f = *state;
    cstream *s = submit_version(f, "/test.Svc/Later", "slow", &(req_opts){.timeout = "100m"});
    pump(f);
    assert_int_equal(f->npending, 1);
    assert_int_equal(sl_grpc_call_deadline(f->pending[0]), 1100);
    assert_int_equal(sl_grpc_conn_next_deadline(f->conn), 1100);
    f->now = 1099;
    sl_grpc_conn_expire(f->conn, f->now);
    pump(f);
    assert_false(s->closed);
    f->now = 1100;
    sl_grpc_conn_expire(f->conn, f->now);
    pump(f);
    expect_status(s, SL_GRPC_DEADLINE_EXCEEDED, "deadline exceeded");
    assert_int_equal(f->cancels, 1);
    assert_true(sl_grpc_call_cancelled(f->pending[0]));
    assert_int_equal(sl_grpc_conn_next_deadline(f->conn), UINT64_MAX);
    /* The handler's late answer is dropped and frees the call. */
    Runtime__V1__VersionResponse resp = RUNTIME__V1__VERSION_RESPONSE__INIT;
    sl_grpc_call_reply(f->pending[0], &resp.base);
    f->pending[0] = NULL;
    pump(f);
    assert_int_equal(s->header_blocks, 1);
}

/* A deadline that passes while the body is still arriving. */
static void test_deadline_during_body(void **state)
{
    fixture *f = *state;
    uint8_t prefix[5];
    sl_grpc_frame_prefix(prefix, 100);
    cstream *s = submit(f, "/test.Svc/Echo", prefix, 5, &(req_opts){.timeout = "2S", .open = true});
    pump(f);
    f->now += 2000;
    sl_grpc_conn_expire(f->conn, f->now);
    pump(f);
    expect_status(s, SL_GRPC_DEADLINE_EXCEEDED, NULL);
    assert_true(s->got_rst);
    assert_int_equal(f->handler_runs, 0);
}

static void test_zero_timeout(void **state)
{
    fixture *f = *state;
    cstream *s = submit_version(f, "/test.Svc/Echo", "", &(req_opts){.timeout = "0n"});
    pump(f);
    expect_status(s, SL_GRPC_DEADLINE_EXCEEDED, NULL);
    assert_int_equal(f->handler_runs, 0);
}

static void test_client_cancel(void **state)
{
    fixture *f = *state;
    cstream *s = submit_version(f, "/test.Svc/Later", "", NULL);
    pump(f);
    assert_int_equal(f->npending, 1);
    nghttp2_submit_rst_stream(f->cli, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_CANCEL);
    pump(f);
    assert_int_equal(f->cancels, 1);
    assert_true(sl_grpc_call_cancelled(f->pending[0]));
    assert_int_equal(sl_grpc_conn_calls(f->conn), 0);
    sl_grpc_call_fail(f->pending[0], SL_GRPC_CANCELLED, "gone");
    f->pending[0] = NULL;
    pump(f);
    assert_int_equal(f->wakes, 0); /* nothing to send for a detached call */
}

/* The connection goes away while a handler holds a call. */
static void test_conn_free_cancels(void **state)
{
    fixture *f = *state;
    submit_version(f, "/test.Svc/Later", "", NULL);
    submit_version(f, "/test.Svc/Later", "", NULL);
    pump(f);
    sl_grpc_conn_free(f->conn);
    f->conn = NULL;
    assert_int_equal(f->cancels, 2);
    Runtime__V1__VersionResponse resp = RUNTIME__V1__VERSION_RESPONSE__INIT;
    sl_grpc_call_reply(f->pending[0], &resp.base);
    sl_grpc_call_fail(f->pending[1], SL_GRPC_INTERNAL, "late");
    f->npending = 0;
}

static void test_bad_preface(void **state)
{
    fixture *f = *state;
    static const char http1[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(sl_grpc_conn_recv(f->conn, (const uint8_t *)http1, sizeof(http1) - 1),
                     SL_ERR_PROTO);
}

/* ---- the CRI table ------------------------------------------------------ */

/* Version and Status need only the config, so the context is filled by
 * hand: sl_cri_init would open the runtime state (dirs, image store). */
static void cri_fixture(fixture *f, sl_cri *cri, sl_config *cfg, const char *cni_dir)
{
    sl_config_init(cfg);
    cfg->cni_conf_dir = cni_dir;
    memset(cri, 0, sizeof(*cri));
    cri->cfg = cfg;
    cri->rt.mount_probe.done = true; /* sluiced probes at start: nothing to wait for */
    f->cfg.methods = sl_cri_methods(&f->cfg.nmethods);
    f->cfg.arg = cri;
}

static void test_cri_version(void **state)
{
    fixture *f = *state;
    sl_cri cri;
    sl_config cfg;
    cri_fixture(f, &cri, &cfg, "/nonexistent");
    cstream *s = submit_version(f, "/runtime.v1.RuntimeService/Version", "", NULL);
    cstream *u = submit_version(f, "/runtime.v1.RuntimeService/CheckpointContainer", "", NULL);
    pump(f);
    expect_status(s, SL_GRPC_OK, NULL);
    Runtime__V1__VersionResponse *r =
        (void *)response(s, &runtime__v1__version_response__descriptor);
    assert_string_equal(r->version, "0.1.0");
    assert_string_equal(r->runtime_name, "sluice");
    assert_true(r->runtime_version[0] != '\0');
    assert_string_equal(r->runtime_api_version, "v1");
    protobuf_c_message_free_unpacked(&r->base, NULL);
    expect_status(u, SL_GRPC_UNIMPLEMENTED, NULL);
    sl_config_fini(&cfg);
}

static Runtime__V1__RuntimeCondition *condition(Runtime__V1__StatusResponse *r, const char *type)
{
    for (size_t i = 0; i < r->status->n_conditions; i++)
        if (strcmp(r->status->conditions[i]->type, type) == 0)
            return r->status->conditions[i];
    fail_msg("no condition %s", type);
    return NULL;
}

static void test_cri_status(void **state)
{
    fixture *f = *state;
    char dir[] = "/tmp/sluice-test-cni-XXXXXX", file[64];
    assert_non_null(mkdtemp(dir));
    sl_cri cri;
    sl_config cfg;
    cri_fixture(f, &cri, &cfg, dir);
    uint8_t body[8] = {0, 0, 0, 0, 0};
    cstream *before = submit(f, "/runtime.v1.RuntimeService/Status", body, 5, NULL);
    pump(f);
    snprintf(file, sizeof(file), "%s/10-net.conflist", dir);
    FILE *fp = fopen(file, "w");
    fputs("{}", fp);
    fclose(fp);
    cstream *after = submit(f, "/runtime.v1.RuntimeService/Status", body, 5, NULL);
    pump(f);
    unlink(file);
    rmdir(dir);

    expect_status(before, SL_GRPC_OK, NULL);
    Runtime__V1__StatusResponse *r =
        (void *)response(before, &runtime__v1__status_response__descriptor);
    assert_true(condition(r, "RuntimeReady")->status);
    Runtime__V1__RuntimeCondition *net = condition(r, "NetworkReady");
    assert_false(net->status);
    assert_string_equal(net->reason, "NetworkPluginNotReady");
    assert_non_null(strstr(net->message, dir));
    protobuf_c_message_free_unpacked(&r->base, NULL);

    expect_status(after, SL_GRPC_OK, NULL);
    r = (void *)response(after, &runtime__v1__status_response__descriptor);
    assert_true(condition(r, "NetworkReady")->status);
    protobuf_c_message_free_unpacked(&r->base, NULL);
    sl_config_fini(&cfg);
}

/* Every entry of the CRI table has a unique, well-formed path. */
static void test_cri_table(void **state)
{
    (void)state;
    size_t n;
    const sl_grpc_method *m = sl_cri_methods(&n);
    assert_true(n >= 34);
    for (size_t i = 0; i < n; i++) {
        assert_true(strncmp(m[i].path, "/runtime.v1.RuntimeService/", 27) == 0 ||
                    strncmp(m[i].path, "/runtime.v1.ImageService/", 25) == 0);
        assert_ptr_equal(sl_grpc_method_find(m, n, m[i].path), &m[i]);
        if (m[i].handler)
            assert_non_null(m[i].request);
    }
    assert_null(sl_grpc_method_find(m, n, "/runtime.v1.RuntimeService/"));
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_settings_and_ping),
        T(test_unary_echo),
        T(test_body_split_everywhere),
        T(test_empty_request_message),
        T(test_large_response_beyond_window),
        T(test_concurrent_calls),
        T(test_two_connections),
        T(test_unknown_method),
        T(test_known_unimplemented),
        T(test_fail_message_encoding),
        T(test_truncated_protobuf),
        T(test_compressed_and_bad_flag),
        T(test_too_large_message),
        T(test_message_count_errors),
        T(test_bad_headers),
        T(test_deadline),
        T(test_deadline_during_body),
        T(test_zero_timeout),
        T(test_client_cancel),
        T(test_conn_free_cancels),
        T(test_bad_preface),
        T(test_cri_version),
        T(test_cri_status),
        cmocka_unit_test(test_cri_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
