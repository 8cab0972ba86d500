#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sluice/error.h"
#include "ws/ws_handshake.h"

#define RFC_KEY "dGhlIHNhbXBsZSBub25jZQ=="
/* RFC 6455 §1.3 (checked with `openssl sha1 -binary | base64`) */
#define RFC_ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

/* A request built by hand; h holds name/value pairs, NULL-terminated. */
typedef struct req {
    sl_http_request r;
    sl_http_header hdrs[16];
} req;

static void build(req *q, const char *method, const char *const *h)
{
    memset(q, 0, sizeof(*q));
    q->r.method = (char *)(uintptr_t)method;
    q->r.path = "/exec/tok";
    q->r.http_major = 1;
    q->r.http_minor = 1;
    size_t n = 0;
    for (; h[2 * n]; n++) {
        q->hdrs[n].name = (char *)(uintptr_t)h[2 * n];
        q->hdrs[n].value = (char *)(uintptr_t)h[2 * n + 1];
    }
    q->r.headers = q->hdrs;
    q->r.nheaders = n;
}

/* Runs the handshake and returns the response text (caller frees). */
static char *run(const char *method, const char *const *h, const char *const *allowed, int *rv,
                 const char **chosen)
{
    req q;
    build(&q, method, h);
    sl_bufq out;
    sl_bufq_init(&out);
    *rv = sl_ws_handshake(&q.r, allowed, chosen, &out);
    size_t n = sl_bufq_len(&out);
    char *s = calloc(1, n + 1);
    assert_non_null(s);
    assert_int_equal(sl_bufq_copyout(&out, s, n), n);
    sl_bufq_fini(&out);
    return s;
}

static const char *const ALLOWED_RC[] = {
    "",  "channel.k8s.io", "base64.channel.k8s.io", "v4.channel.k8s.io", "v4.base64.channel.k8s.io",
    NULL};
static const char *const ALLOWED_V5[] = {"v5.channel.k8s.io", NULL};

#define STD_HEADERS                                                                                \
    "Host", "localhost", "Upgrade", "websocket", "Connection", "Upgrade", "Sec-WebSocket-Key",     \
        RFC_KEY, "Sec-WebSocket-Version", "13"

static void accept_key_rfc_example(void **state)
{
    (void)state;
    char out[29];
    sl_ws_accept_key(RFC_KEY, out);
    assert_string_equal(out, RFC_ACCEPT);
}

static void success_without_protocol(void **state)
{
    (void)state;
    const char *const h[] = {STD_HEADERS, NULL};
    const char *chosen = NULL;
    int rv;
    char *s = run("GET", h, ALLOWED_RC, &rv, &chosen);
    assert_int_equal(rv, 0);
    assert_ptr_equal(chosen, ALLOWED_RC[0]);
    assert_string_equal(s, "HTTP/1.1 101 Switching Protocols\r\n"
                           "Upgrade: websocket\r\n"
                           "Connection: Upgrade\r\n"
                           "Sec-WebSocket-Accept: " RFC_ACCEPT "\r\n"
                           "\r\n");
    free(s);
}

static void success_client_order_wins(void **state)
{
    (void)state;
    /* the client's order decides, across several header lines */
    const char *const h[] = {STD_HEADERS,
                             "Sec-WebSocket-Protocol",
                             "bogus,  v4.base64.channel.k8s.io",
                             "sec-websocket-protocol",
                             "channel.k8s.io",
                             NULL};
    const char *chosen = NULL;
    int rv;
    char *s = run("GET", h, ALLOWED_RC, &rv, &chosen);
    assert_int_equal(rv, 0);
    assert_ptr_equal(chosen, ALLOWED_RC[4]);
    assert_non_null(strstr(s, "\r\nSec-WebSocket-Protocol: v4.base64.channel.k8s.io\r\n"));
    assert_non_null(strstr(s, "\r\nSec-WebSocket-Accept: " RFC_ACCEPT "\r\n"));
    assert_int_equal(strncmp(s, "HTTP/1.1 101 ", 13), 0);
    free(s);
    /* v5 only, as client-go offers it */
    const char *const h5[] = {STD_HEADERS, "Sec-WebSocket-Protocol", "v5.channel.k8s.io", NULL};
    s = run("GET", h5, ALLOWED_V5, &rv, &chosen);
    assert_int_equal(rv, 0);
    assert_ptr_equal(chosen, ALLOWED_V5[0]);
    assert_non_null(strstr(s, "\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n"));
    free(s);
}

static void header_case_and_tokens(void **state)
{
    (void)state;
    const char *const h[] = {"upgrade",
                             "WebSocket",
                             "CONNECTION",
                             "keep-alive, Upgrade",
                             "sec-websocket-key",
                             RFC_KEY,
                             "SEC-WEBSOCKET-VERSION",
                             "13",
                             NULL};
    const char *chosen = NULL;
    int rv;
    char *s = run("GET", h, ALLOWED_RC, &rv, &chosen);
    assert_int_equal(rv, 0);
    free(s);
    req q;
    build(&q, "GET", h);
    assert_true(sl_ws_is_upgrade(&q.r));
    const char *const no[] = {"Upgrade", "h2c", "Connection", "Upgrade", NULL};
    build(&q, "GET", no);
    assert_false(sl_ws_is_upgrade(&q.r));
}

/* Asserts a failure response: status, headers to find, exact body. */
static void expect_fail(const char *method, const char *const *h, const char *const *allowed,
                        int status, const char *must_have, const char *body)
{
    const char *chosen = "untouched";
    int rv;
    char *s = run(method, h, allowed, &rv, &chosen);
    assert_int_equal(rv, status);
    assert_string_equal(chosen, "untouched");
    char line[32];
    snprintf(line, sizeof(line), "HTTP/1.1 %d ", status);
    assert_int_equal(strncmp(s, line, strlen(line)), 0);
    if (must_have)
        assert_non_null(strstr(s, must_have));
    const char *b = strstr(s, "\r\n\r\n");
    assert_non_null(b);
    assert_string_equal(b + 4, body);
    char cl[48];
    snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", strlen(body));
    assert_non_null(strstr(s, cl));
    assert_null(strstr(s, "Sec-WebSocket-Accept"));
    free(s);
}

static void wrong_method(void **state)
{
    (void)state;
    const char *const h[] = {STD_HEADERS, NULL};
    expect_fail("POST", h, ALLOWED_RC, 405, "\r\nAllow: GET\r\n", "method not allowed\n");
    expect_fail("get", h, ALLOWED_RC, 405, "\r\nAllow: GET\r\n", "method not allowed\n");
}

static void missing_upgrade_headers(void **state)
{
    (void)state;
    const char *const no_upgrade[] = {
        "Connection", "Upgrade", "Sec-WebSocket-Key", RFC_KEY, "Sec-WebSocket-Version", "13", NULL};
    const char *const no_conn[] = {
        "Upgrade", "websocket", "Sec-WebSocket-Key", RFC_KEY, "Sec-WebSocket-Version", "13", NULL};
    const char *const conn_keepalive[] = {"Upgrade",
                                          "websocket",
                                          "Connection",
                                          "keep-alive",
                                          "Sec-WebSocket-Key",
                                          RFC_KEY,
                                          "Sec-WebSocket-Version",
                                          "13",
                                          NULL};
    const char *const other_upgrade[] = {"Upgrade",
                                         "SPDY/3.1",
                                         "Connection",
                                         "Upgrade",
                                         "Sec-WebSocket-Key",
                                         RFC_KEY,
                                         "Sec-WebSocket-Version",
                                         "13",
                                         NULL};
    expect_fail("GET", no_upgrade, ALLOWED_RC, 400, NULL, "missing upgrade headers\n");
    expect_fail("GET", no_conn, ALLOWED_RC, 400, NULL, "missing upgrade headers\n");
    expect_fail("GET", conn_keepalive, ALLOWED_RC, 400, NULL, "missing upgrade headers\n");
    expect_fail("GET", other_upgrade, ALLOWED_RC, 400, NULL, "missing upgrade headers\n");
}

static void bad_key(void **state)
{
    (void)state;
    static const char *const keys[] = {
        NULL,                           /* missing */
        "",                             /* empty */
        "AAAAAAAAAAAAAAAAAAAA",         /* 15 bytes */
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAA", /* 21 bytes */
        "dGhlIHNhbXBsZSBub25jZQ=",      /* bad padding */
        "dGhlIHNhbXBsZSBub25jZQ==x",    /* trailing junk */
        "dGhlIHNhbXBsZSBub25j!Q==",     /* bad character */
    };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *const h[] = {"Upgrade",
                                 "websocket",
                                 "Connection",
                                 "Upgrade",
                                 "Sec-WebSocket-Version",
                                 "13",
                                 keys[i] ? "Sec-WebSocket-Key" : NULL,
                                 keys[i],
                                 NULL};
        expect_fail("GET", h, ALLOWED_RC, 400, NULL, "missing or invalid Sec-WebSocket-Key\n");
    }
}

static void bad_version(void **state)
{
    (void)state;
    static const char *const versions[] = {"8", "13, 8", "", "130", NULL};
    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
        const char *const h[] = {"Upgrade",
                                 "websocket",
                                 "Connection",
                                 "Upgrade",
                                 "Sec-WebSocket-Key",
                                 RFC_KEY,
                                 versions[i] ? "Sec-WebSocket-Version" : NULL,
                                 versions[i],
                                 NULL};
        expect_fail("GET", h, ALLOWED_RC, 400, "\r\nSec-WebSocket-Version: 13\r\n",
                    "unsupported Sec-WebSocket-Version\n");
    }
}

static void no_matching_protocol(void **state)
{
    (void)state;
    /* offered a list, none allowed: 403 even though "" is allowed */
    const char *const h[] = {STD_HEADERS, "Sec-WebSocket-Protocol",
                             "v5.channel.k8s.io, v3.channel.k8s.io", NULL};
    expect_fail("GET", h, ALLOWED_RC, 403, NULL, "");
    /* offered nothing, "" not allowed */
    const char *const h0[] = {STD_HEADERS, NULL};
    expect_fail("GET", h0, ALLOWED_V5, 403, NULL, "");
    /* an empty header value counts as offering nothing */
    const char *const he[] = {STD_HEADERS, "Sec-WebSocket-Protocol", "", NULL};
    expect_fail("GET", he, ALLOWED_V5, 403, NULL, "");
    const char *chosen = NULL;
    int rv;
    char *s = run("GET", he, ALLOWED_RC, &rv, &chosen);
    assert_int_equal(rv, 0);
    assert_string_equal(chosen, "");
    assert_null(strstr(s, "Sec-WebSocket-Protocol"));
    free(s);
    /* names compare exactly */
    const char *const hc[] = {STD_HEADERS, "Sec-WebSocket-Protocol", "V5.CHANNEL.K8S.IO", NULL};
    expect_fail("GET", hc, ALLOWED_V5, 403, NULL, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accept_key_rfc_example),
        cmocka_unit_test(success_without_protocol),
        cmocka_unit_test(success_client_order_wins),
        cmocka_unit_test(header_case_and_tokens),
        cmocka_unit_test(wrong_method),
        cmocka_unit_test(missing_upgrade_headers),
        cmocka_unit_test(bad_key),
        cmocka_unit_test(bad_version),
        cmocka_unit_test(no_matching_protocol),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
