#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/upgrade.h"
#include "http/http_resp.h"
#include "ws/ws_handshake.h"

/* ---- sample answers, as real servers send them --------------------------- */

/* Go net/http 101 for SPDY (protocol notes §3.2), then a SPDY PING. */
static const char spdy_101[] = "HTTP/1.1 101 Switching Protocols\r\n"
                               "Connection: Upgrade\r\n"
                               "Upgrade: SPDY/3.1\r\n"
                               "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
                               "\r\n"
                               "\x80\x03\x00\x06\x00\x00\x00\x04\x00\x00\x00\x02";
#define SPDY_101_HEAD (sizeof(spdy_101) - 1 - 12)

static const char spdy_101_dump[] = "101|Switching Protocols|1.1\n"
                                    "Connection=Upgrade\n"
                                    "Upgrade=SPDY/3.1\n"
                                    "X-Stream-Protocol-Version=v4.channel.k8s.io\n"
                                    "body=0:";

/* Our server's 403 for no common SPDY protocol. */
static const char spdy_403[] =
    "HTTP/1.1 403 Forbidden\r\n"
    "Content-Type: text/plain; charset=utf-8\r\n"
    "X-Content-Type-Options: nosniff\r\n"
    "Content-Length: 80\r\n"
    "Connection: close\r\n"
    "X-Accepted-Stream-Protocol-Versions: v4.channel.k8s.io\r\n"
    "X-Accepted-Stream-Protocol-Versions: v3.channel.k8s.io\r\n"
    "\r\n"
    "unable to upgrade: unable to negotiate protocol: client supports [v9], server..\n";

/* x/net/websocket's refusal: no length, the close ends it. */
static const char xnet_403[] = "HTTP/1.1 403 Forbidden\r\n\r\n";

/* A chunked metav1.Status body, with an obsolete line fold and blanks. */
static const char chunked_400[] = "HTTP/1.1 400 Bad Request\r\n"
                                  "Content-Type: application/json\r\n"
                                  "X-Fold:  one \t\r\n"
                                  "  two\r\n"
                                  "Transfer-Encoding: chunked\r\n"
                                  "\r\n"
                                  "1a\r\n{\"kind\":\"Status\",\"message\"\r\n"
                                  "21\r\n:\"pods \\\"x\\\" is forbidden\",\"x\":1}\r\n"
                                  "0\r\n\r\n";

static const char chunked_400_dump[] = "400|Bad Request|1.1\n"
                                       "Content-Type=application/json\n"
                                       "X-Fold=one \t two\n"
                                       "Transfer-Encoding=chunked\n"
                                       "body=59:{\"kind\":\"Status\",\"message\":\"pods "
                                       "\\\"x\\\" is forbidden\",\"x\":1}";

/* Interim answers before the 101 are skipped. */
static const char interim_101[] = "HTTP/1.1 100 Continue\r\n\r\n"
                                  "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                                  "HTTP/1.1 101 Switching Protocols\r\n"
                                  "Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
                                  "\x82\x01\x01";

/* ---- helpers --------------------------------------------------------------- */

static void dump(const sl_http_response *r, char *out, size_t cap)
{
    int o = snprintf(out, cap, "%d|%s|%u.%u\n", r->status, r->reason ? r->reason : "(null)",
                     r->http_major, r->http_minor);
    for (size_t i = 0; i < r->nheaders; i++)
        o += snprintf(out + o, cap - (size_t)o, "%s=%s\n", r->headers[i].name, r->headers[i].value);
    snprintf(out + o, cap - (size_t)o, "body=%zu:%s", r->body_len,
             r->body ? (const char *)r->body : "");
}

/* Feeds in the pieces given by cuts (increasing offsets), like reads of a
 * socket, stopping at DONE/ERROR; eof: the close follows. Returns the
 * bytes consumed in all. */
static size_t feed_cuts(sl_http_resp_parser *p, const char *s, size_t len, const size_t *cuts,
                        size_t ncuts, int eof)
{
    size_t used = 0, from = 0;
    for (size_t i = 0; i <= ncuts && p->state == SL_HTTP_RESP_MORE; i++) {
        size_t to = i < ncuts ? cuts[i] : len;
        /* A copy of exactly this piece, so any over-read shows under ASan. */
        uint8_t *piece = malloc(to - from + 1);
        memcpy(piece, s + from, to - from);
        size_t n = sl_http_resp_feed(p, piece, to - from);
        free(piece);
        used += n;
        if (p->state == SL_HTTP_RESP_MORE)
            assert_int_equal(n, to - from);
        from = to;
    }
    if (eof)
        sl_http_resp_eof(p);
    return used;
}

/* Every split: byte by byte, and every 2-way split, each must give the
 * same response as one piece, consume exactly `consumed` bytes. */
static void check_splits(const char *s, size_t len, int eof, int state, size_t consumed,
                         const char *want_dump)
{
    char want[4096], got[4096];
    sl_http_resp_parser p;

    sl_http_resp_init(&p, NULL);
    assert_int_equal(feed_cuts(&p, s, len, NULL, 0, eof), consumed);
    assert_int_equal(p.state, state);
    dump(&p.resp, want, sizeof(want));
    if (want_dump)
        assert_string_equal(want, want_dump);
    sl_http_resp_fini(&p);

    size_t *cuts = malloc(len * sizeof(*cuts));
    for (size_t i = 0; i + 1 < len; i++)
        cuts[i] = i + 1;
    sl_http_resp_init(&p, NULL);
    assert_int_equal(feed_cuts(&p, s, len, cuts, len ? len - 1 : 0, eof), consumed);
    assert_int_equal(p.state, state);
    dump(&p.resp, got, sizeof(got));
    assert_string_equal(got, want);
    sl_http_resp_fini(&p);
    free(cuts);

    for (size_t cut = 1; cut < len; cut++) {
        sl_http_resp_init(&p, NULL);
        assert_int_equal(feed_cuts(&p, s, len, &cut, 1, eof), consumed);
        assert_int_equal(p.state, state);
        dump(&p.resp, got, sizeof(got));
        assert_string_equal(got, want);
        sl_http_resp_fini(&p);
    }
}

/* ---- parser ------------------------------------------------------------------- */

static void test_spdy_101_every_split(void **st)
{
    (void)st;
    check_splits(spdy_101, sizeof(spdy_101) - 1, 0, SL_HTTP_RESP_DONE, SPDY_101_HEAD,
                 spdy_101_dump);
}

static void test_403_with_body_every_split(void **st)
{
    (void)st;
    sl_http_resp_parser p;
    sl_http_resp_init(&p, NULL);
    sl_http_resp_feed(&p, (const uint8_t *)spdy_403, sizeof(spdy_403) - 1);
    assert_int_equal(p.state, SL_HTTP_RESP_DONE);
    assert_int_equal(p.resp.status, 403);
    assert_int_equal(p.resp.body_len, 80);
    assert_false(p.resp.body_truncated);
    assert_true(sl_http_resp_has_token(&p.resp, "connection", "CLOSE"));
    sl_http_resp_fini(&p);
    check_splits(spdy_403, sizeof(spdy_403) - 1, 0, SL_HTTP_RESP_DONE, sizeof(spdy_403) - 1, NULL);
}

static void test_eof_delimited_every_split(void **st)
{
    (void)st;
    check_splits(xnet_403, sizeof(xnet_403) - 1, 1, SL_HTTP_RESP_DONE, sizeof(xnet_403) - 1,
                 "403|Forbidden|1.1\nbody=0:");
    /* with a body up to the close */
    static const char s[] = "HTTP/1.0 500 Oops\r\n\r\nsomething broke\n";
    check_splits(s, sizeof(s) - 1, 1, SL_HTTP_RESP_DONE, sizeof(s) - 1,
                 "500|Oops|1.0\nbody=16:something broke\n");
}

static void test_chunked_fold_every_split(void **st)
{
    (void)st;
    check_splits(chunked_400, sizeof(chunked_400) - 1, 0, SL_HTTP_RESP_DONE,
                 sizeof(chunked_400) - 1, chunked_400_dump);
}

static void test_interim_skipped_every_split(void **st)
{
    (void)st;
    check_splits(interim_101, sizeof(interim_101) - 1, 0, SL_HTTP_RESP_DONE,
                 sizeof(interim_101) - 1 - 3,
                 "101|Switching Protocols|1.1\nUpgrade=websocket\nConnection=Upgrade\nbody=0:");
}

static void test_101_bare_lf(void **st)
{
    (void)st;
    static const char s[] = "HTTP/1.1 101 Switching Protocols\nUpgrade: x\n\nZZ";
    check_splits(s, sizeof(s) - 1, 0, SL_HTTP_RESP_DONE, sizeof(s) - 3, NULL);
}

static void expect_error(const char *s, size_t len, const sl_http_resp_limits *lim, int eof,
                         const char *text_part)
{
    sl_http_resp_parser p;
    sl_http_resp_init(&p, lim);
    sl_http_resp_feed(&p, (const uint8_t *)s, len);
    if (eof)
        sl_http_resp_eof(&p);
    assert_int_equal(p.state, SL_HTTP_RESP_ERROR);
    if (!strstr(p.err_text, text_part))
        fail_msg("error text \"%s\" lacks \"%s\"", p.err_text, text_part);
    /* nothing more is taken after an error */
    assert_int_equal(sl_http_resp_feed(&p, (const uint8_t *)"x", 1), 0);
    sl_http_resp_fini(&p);
}

static void test_malformed(void **st)
{
    (void)st;
    static const char v2[] = "HTTP/2.0 101 Switching Protocols\r\n\r\n";
    expect_error(v2, sizeof(v2) - 1, NULL, 0, "HTTP version");
    static const char junk[] = "SSH-2.0-OpenSSH_9.2\r\n";
    expect_error(junk, sizeof(junk) - 1, NULL, 0, "malformed response");
    static const char cr_junk[] = "HTTP/1.1 101 OK\r\nA: b\r\n\rX";
    expect_error(cr_junk, sizeof(cr_junk) - 1, NULL, 0, "CRLF CRLF");
    expect_error("", 0, NULL, 1, "without a response");
    static const char half[] = "HTTP/1.1 101 Switching Pro";
    expect_error(half, sizeof(half) - 1, NULL, 1, "before the response was complete");
    static const char short_body[] = "HTTP/1.1 403 Forbidden\r\nContent-Length: 10\r\n\r\nabc";
    expect_error(short_body, sizeof(short_body) - 1, NULL, 1, "before the response");
    static const char two_digits[] = "HTTP/1.1 10 X\r\n\r\n"; /* http-parser takes it */
    expect_error(two_digits, sizeof(two_digits) - 1, NULL, 0, "invalid status code 10");
}

/* Trailers after a chunked body are not headers of the response. */
static void test_trailers_ignored(void **st)
{
    (void)st;
    static const char s[] = "HTTP/1.1 500 E\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "3\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n";
    check_splits(s, sizeof(s) - 1, 0, SL_HTTP_RESP_DONE, sizeof(s) - 1,
                 "500|E|1.1\nTransfer-Encoding=chunked\nbody=3:abc");
}

static void test_limits(void **st)
{
    (void)st;
    char big[600];
    int o = snprintf(big, sizeof(big), "HTTP/1.1 101 Switching Protocols\r\n");
    for (int i = 0; i < 10; i++)
        o += snprintf(big + o, sizeof(big) - (size_t)o, "X-H%d: v\r\n", i);
    snprintf(big + o, sizeof(big) - (size_t)o, "\r\n");
    sl_http_resp_limits few = {.max_headers = 9};
    expect_error(big, strlen(big), &few, 0, "more than 9 header fields");
    sl_http_resp_limits small = {.max_head_size = 100};
    expect_error(big, strlen(big), &small, 0, "limit of 100 bytes");
    /* exactly at the limit is fine */
    sl_http_resp_limits exact = {.max_head_size = (uint32_t)strlen(big)};
    sl_http_resp_parser p;
    sl_http_resp_init(&p, &exact);
    assert_int_equal(sl_http_resp_feed(&p, (const uint8_t *)big, strlen(big)), strlen(big));
    assert_int_equal(p.state, SL_HTTP_RESP_DONE);
    sl_http_resp_fini(&p);
    /* a body over the limit is kept up to it, then reported */
    sl_http_resp_limits b = {.max_body = 10};
    sl_http_resp_init(&p, &b);
    static const char body[] = "HTTP/1.1 500 X\r\nContent-Length: 1000000\r\n\r\n0123456789abcdef";
    sl_http_resp_feed(&p, (const uint8_t *)body, sizeof(body) - 1);
    assert_int_equal(p.state, SL_HTTP_RESP_DONE);
    assert_true(p.resp.body_truncated);
    assert_int_equal(p.resp.body_len, 10);
    assert_string_equal((const char *)p.resp.body, "0123456789");
    sl_http_resp_fini(&p);
}

/* ---- URL and request ------------------------------------------------------- */

static void test_url_parse(void **st)
{
    (void)st;
    sl_client_url u;
    const char *why;
    assert_int_equal(sl_client_url_parse(&u, "http://127.0.0.1:10010/exec/AbCd-_12", &why), SL_OK);
    assert_string_equal(u.host, "127.0.0.1");
    assert_int_equal(u.port, 10010);
    assert_string_equal(u.target, "/exec/AbCd-_12");
    sl_client_url_fini(&u);
    assert_int_equal(sl_client_url_parse(&u, "ws://[::1]:8/cri/attach/x?a=b#frag", &why), SL_OK);
    assert_string_equal(u.host, "::1");
    assert_true(u.ipv6);
    assert_string_equal(u.target, "/cri/attach/x?a=b");
    sl_client_url_fini(&u);
    assert_int_equal(sl_client_url_parse(&u, "HTTP://node", &why), SL_OK);
    assert_int_equal(u.port, 80);
    assert_string_equal(u.target, "/");
    sl_client_url_fini(&u);
    assert_int_equal(sl_client_url_parse(&u, "https://h/x", &why), SL_ERR_UNSUPPORTED);
    assert_non_null(strstr(why, "https"));
    static const char *const bad[] = {
        "ftp://h/",         "http://",
        "http://:80/",      "http://h:0/",
        "http://h:65536/",  "http://h:8x/",
        "http://u@h/",      "http://[::1/",
        "http://h/a b",     "http://h/a\r\nX",
        "http://h$/",       "http://[::1]x/",
        "http://h:123456/", "x",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = sl_client_url_parse(&u, bad[i], &why);
        if (rc != SL_ERR_INVAL)
            fail_msg("%s: %d", bad[i], rc);
        assert_non_null(why);
        sl_client_url_fini(&u);
    }
}

static char *request_text(const sl_upgrade *u, const char *url, const sl_client_header *h, size_t n)
{
    sl_client_url cu;
    const char *why;
    assert_int_equal(sl_client_url_parse(&cu, url, &why), SL_OK);
    sl_bufq q;
    sl_bufq_init(&q);
    assert_int_equal(sl_upgrade_write_request(u, &cu, h, n, &q), SL_OK);
    char *s = calloc(1, sl_bufq_len(&q) + 1);
    sl_bufq_copyout(&q, s, sl_bufq_len(&q));
    sl_bufq_fini(&q);
    sl_client_url_fini(&cu);
    return s;
}

static void test_spdy_request(void **st)
{
    (void)st;
    sl_upgrade u;
    assert_int_equal(sl_upgrade_init(&u, SL_TRANSPORT_SPDY, SL_UPGRADE_RC), SL_OK);
    sl_client_header h[] = {{"Authorization", "Bearer abc"}};
    assert_true(sl_upgrade_headers_ok(h, 1));
    char *s = request_text(&u, "http://10.0.0.1:10010/exec/T0k3n_-1", h, 1);
    assert_string_equal(s, "POST /exec/T0k3n_-1 HTTP/1.1\r\n"
                           "Host: 10.0.0.1:10010\r\n"
                           "User-Agent: sluice/0.1\r\n"
                           "Content-Length: 0\r\n"
                           "Connection: Upgrade\r\n"
                           "Upgrade: SPDY/3.1\r\n"
                           "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
                           "X-Stream-Protocol-Version: v3.channel.k8s.io\r\n"
                           "X-Stream-Protocol-Version: v2.channel.k8s.io\r\n"
                           "X-Stream-Protocol-Version: channel.k8s.io\r\n"
                           "Authorization: Bearer abc\r\n"
                           "\r\n");
    free(s);
    sl_client_header bad1[] = {{"X-A", "a\r\nInjected: 1"}};
    sl_client_header bad2[] = {{"X A", "a"}};
    sl_client_header bad3[] = {{"", "a"}};
    assert_false(sl_upgrade_headers_ok(bad1, 1));
    assert_false(sl_upgrade_headers_ok(bad2, 1));
    assert_false(sl_upgrade_headers_ok(bad3, 1));
    assert_int_equal(sl_upgrade_init(&u, SL_TRANSPORT_WEBSOCKET_TUNNEL, SL_UPGRADE_RC),
                     SL_ERR_INVAL);
    assert_int_equal(sl_upgrade_init(&u, SL_TRANSPORT_WEBSOCKET, SL_UPGRADE_PF), SL_ERR_INVAL);
}

static void test_ws_request_is_a_valid_handshake(void **st)
{
    (void)st;
    sl_upgrade u, u2;
    assert_int_equal(sl_upgrade_init(&u, SL_TRANSPORT_WEBSOCKET, SL_UPGRADE_RC), SL_OK);
    assert_int_equal(sl_upgrade_init(&u2, SL_TRANSPORT_WEBSOCKET, SL_UPGRADE_RC), SL_OK);
    assert_string_not_equal(u.key, u2.key); /* random keys */
    char *s = request_text(&u, "http://[::1]:99/attach/abc", NULL, 0);
    /* Our own server's parser and handshake accept it and pick v5. */
    sl_http_head_parser hp;
    sl_http_head_init(&hp, NULL);
    sl_http_head_feed(&hp, (const uint8_t *)s, strlen(s));
    assert_int_equal(hp.state, SL_HTTP_HEAD_DONE);
    assert_string_equal(hp.req.method, "GET");
    assert_string_equal(sl_http_header_get(&hp.req, "Host"), "[::1]:99");
    const char *allowed[] = {"v4.channel.k8s.io", "v5.channel.k8s.io", NULL};
    const char *chosen = NULL;
    sl_bufq out;
    sl_bufq_init(&out);
    assert_int_equal(sl_ws_handshake(&hp.req, allowed, &chosen, &out), 0);
    assert_string_equal(chosen, "v5.channel.k8s.io");
    /* ... and its 101 passes our check */
    char resp[512] = {0};
    sl_bufq_copyout(&out, resp, sizeof(resp) - 1);
    sl_http_resp_parser rp;
    sl_http_resp_init(&rp, NULL);
    sl_http_resp_feed(&rp, (const uint8_t *)resp, strlen(resp));
    assert_int_equal(rp.state, SL_HTTP_RESP_DONE);
    char msg[256];
    assert_int_equal(sl_upgrade_check(&u, &rp.resp, &chosen, msg, sizeof(msg)), 0);
    assert_string_equal(chosen, "v5.channel.k8s.io");
    /* the same 101 for another key is refused */
    assert_int_equal(sl_upgrade_check(&u2, &rp.resp, &chosen, msg, sizeof(msg)), -1);
    assert_non_null(strstr(msg, "Sec-WebSocket-Accept"));
    sl_http_resp_fini(&rp);
    sl_bufq_fini(&out);
    sl_http_head_fini(&hp);
    free(s);
}

/* ---- answer checks --------------------------------------------------------- */

static int check_text(const sl_upgrade *u, const char *resp, int eof, const char **chosen,
                      char *msg, size_t cap)
{
    sl_http_resp_parser p;
    sl_http_resp_init(&p, NULL);
    sl_http_resp_feed(&p, (const uint8_t *)resp, strlen(resp));
    if (eof)
        sl_http_resp_eof(&p);
    assert_int_equal(p.state, SL_HTTP_RESP_DONE);
    int rc = sl_upgrade_check(u, &p.resp, chosen, msg, cap);
    sl_http_resp_fini(&p);
    return rc;
}

static void test_check_spdy(void **st)
{
    (void)st;
    sl_upgrade u;
    const char *chosen;
    char msg[512];
    sl_upgrade_init(&u, SL_TRANSPORT_SPDY, SL_UPGRADE_RC);
    assert_int_equal(check_text(&u, spdy_101, 0, &chosen, msg, sizeof(msg)), 0);
    assert_string_equal(chosen, "v4.channel.k8s.io");
    /* no protocol header: client-go assumes v1 */
    assert_int_equal(check_text(&u,
                                "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\n"
                                "Upgrade: spdy/3.1\r\n\r\n",
                                0, &chosen, msg, sizeof(msg)),
                     0);
    assert_string_equal(chosen, "channel.k8s.io");
    assert_int_equal(sl_upgrade_rc_version(chosen), 1);
    assert_int_equal(check_text(&u,
                                "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                                "Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v5.channel.k8s.io"
                                "\r\n\r\n",
                                0, &chosen, msg, sizeof(msg)),
                     -1);
    assert_non_null(strstr(msg, "v5.channel.k8s.io was not offered"));
    assert_int_equal(check_text(&u, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\n\r\n",
                                0, &chosen, msg, sizeof(msg)),
                     -1);
    assert_non_null(strstr(msg, "Connection"));
    assert_int_equal(check_text(&u, spdy_403, 0, &chosen, msg, sizeof(msg)), -1);
    assert_string_equal(msg, "upgrade refused: 403 Forbidden: unable to upgrade: unable to "
                             "negotiate protocol: client supports [v9], server..; server accepts "
                             "[v4.channel.k8s.io, v3.channel.k8s.io]");
    /* port-forward needs the protocol header */
    sl_upgrade_init(&u, SL_TRANSPORT_SPDY, SL_UPGRADE_PF);
    assert_int_equal(check_text(&u,
                                "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                                "Upgrade: SPDY/3.1\r\n\r\n",
                                0, &chosen, msg, sizeof(msg)),
                     -1);
    assert_non_null(strstr(msg, "X-Stream-Protocol-Version"));
}

static void test_check_refusals(void **st)
{
    (void)st;
    sl_upgrade u;
    const char *chosen;
    char msg[512];
    sl_upgrade_init(&u, SL_TRANSPORT_WEBSOCKET, SL_UPGRADE_RC);
    assert_int_equal(check_text(&u, xnet_403, 1, &chosen, msg, sizeof(msg)), -1);
    assert_string_equal(msg, "upgrade refused: 403 Forbidden: server accepts none of "
                             "[v5.channel.k8s.io, v4.channel.k8s.io]");
    assert_int_equal(check_text(&u,
                                "HTTP/1.1 404 Not Found\r\nContent-Length: 19\r\n\r\n"
                                "404 page not found\n",
                                0, &chosen, msg, sizeof(msg)),
                     -1);
    assert_string_equal(msg, "token expired or unknown (404): 404 page not found");
    assert_int_equal(check_text(&u, chunked_400, 0, &chosen, msg, sizeof(msg)), -1);
    assert_string_equal(msg, "upgrade refused: 400 Bad Request: pods \"x\" is forbidden");
    /* control characters of a body never reach the message */
    assert_int_equal(check_text(&u, "HTTP/1.1 500 E\r\nContent-Length: 6\r\n\r\na\x1b[2Jb", 0,
                                &chosen, msg, sizeof(msg)),
                     -1);
    assert_string_equal(msg, "upgrade refused: 500 E: a?[2Jb");
}

static void test_check_ws_subprotocol(void **st)
{
    (void)st;
    sl_upgrade u;
    const char *chosen;
    char msg[512], resp[512];
    sl_upgrade_init(&u, SL_TRANSPORT_WEBSOCKET_TUNNEL, SL_UPGRADE_PF);
    static const char *const protos[] = {"SPDY/3.1+portforward.k8s.io", "", NULL,
                                         "v4.channel.k8s.io"};
    for (int i = 0; i < 4; i++) {
        int n = snprintf(resp, sizeof(resp),
                         "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                         "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n",
                         u.accept);
        if (protos[i])
            n += snprintf(resp + n, sizeof(resp) - (size_t)n, "Sec-WebSocket-Protocol: %s\r\n",
                          protos[i]);
        snprintf(resp + n, sizeof(resp) - (size_t)n, "\r\n");
        int rc = check_text(&u, resp, 0, &chosen, msg, sizeof(msg));
        if (i == 0) {
            assert_int_equal(rc, 0);
            assert_string_equal(chosen, "SPDY/3.1+portforward.k8s.io");
        } else {
            assert_int_equal(rc, -1);
            assert_non_null(strstr(msg, "expected one of [SPDY/3.1+portforward.k8s.io]"));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spdy_101_every_split),
        cmocka_unit_test(test_403_with_body_every_split),
        cmocka_unit_test(test_eof_delimited_every_split),
        cmocka_unit_test(test_chunked_fold_every_split),
        cmocka_unit_test(test_interim_skipped_every_split),
        cmocka_unit_test(test_101_bare_lf),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_trailers_ignored),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_url_parse),
        cmocka_unit_test(test_spdy_request),
        cmocka_unit_test(test_ws_request_is_a_valid_handshake),
        cmocka_unit_test(test_check_spdy),
        cmocka_unit_test(test_check_refusals),
        cmocka_unit_test(test_check_ws_subprotocol),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
