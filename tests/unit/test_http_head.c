#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http_head.h"
#include "sluice/server.h"

/* Sample heads as the real clients send them (protocol notes §3.1, §6). */
static const char spdy_exec[] = "POST /exec/AbCdEf12 HTTP/1.1\r\n"
                                "Host: 127.0.0.1:10010\r\n"
                                "User-Agent: kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9\r\n"
                                "Content-Length: 0\r\n"
                                "Connection: Upgrade\r\n"
                                "Upgrade: SPDY/3.1\r\n"
                                "X-Stream-Protocol-Version: v5.channel.k8s.io\r\n"
                                "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
                                "X-Stream-Protocol-Version: v3.channel.k8s.io\r\n"
                                "X-Stream-Protocol-Version: v2.channel.k8s.io\r\n"
                                "X-Stream-Protocol-Version: channel.k8s.io\r\n"
                                "\r\n";

static const char spdy_exec_dump[] = "POST|/exec/AbCdEf12|(null)|1.1\n"
                                     "Host=127.0.0.1:10010\n"
                                     "User-Agent=kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9\n"
                                     "Content-Length=0\n"
                                     "Connection=Upgrade\n"
                                     "Upgrade=SPDY/3.1\n"
                                     "X-Stream-Protocol-Version=v5.channel.k8s.io\n"
                                     "X-Stream-Protocol-Version=v4.channel.k8s.io\n"
                                     "X-Stream-Protocol-Version=v3.channel.k8s.io\n"
                                     "X-Stream-Protocol-Version=v2.channel.k8s.io\n"
                                     "X-Stream-Protocol-Version=channel.k8s.io\n";

static const char ws_exec[] = "GET /exec/Zz-_9aB0?command=sh&stdin=true&tty=true HTTP/1.1\r\n"
                              "Host: 127.0.0.1:10010\r\n"
                              "User-Agent: Go-http-client/1.1\r\n"
                              "Connection: Upgrade\r\n"
                              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                              "Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n"
                              "Sec-WebSocket-Version: 13\r\n"
                              "Upgrade: websocket\r\n"
                              "\r\n";

static const char ws_exec_dump[] = "GET|/exec/Zz-_9aB0|command=sh&stdin=true&tty=true|1.1\n"
                                   "Host=127.0.0.1:10010\n"
                                   "User-Agent=Go-http-client/1.1\n"
                                   "Connection=Upgrade\n"
                                   "Sec-WebSocket-Key=dGhlIHNhbXBsZSBub25jZQ==\n"
                                   "Sec-WebSocket-Protocol=v5.channel.k8s.io\n"
                                   "Sec-WebSocket-Version=13\n"
                                   "Upgrade=websocket\n";

static const char portfwd[] = "POST /portforward/Qw3rTy_- HTTP/1.1\r\n"
                              "Host: 127.0.0.1:10010\r\n"
                              "User-Agent: kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9\r\n"
                              "Content-Length: 0\r\n"
                              "Connection: Upgrade\r\n"
                              "Upgrade: SPDY/3.1\r\n"
                              "X-Forwarded-For: 10.0.0.7, 10.0.0.8\r\n"
                              "X-Stream-Protocol-Version: portforward.k8s.io\r\n"
                              "\r\n";

static const char portfwd_dump[] = "POST|/portforward/Qw3rTy_-|(null)|1.1\n"
                                   "Host=127.0.0.1:10010\n"
                                   "User-Agent=kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9\n"
                                   "Content-Length=0\n"
                                   "Connection=Upgrade\n"
                                   "Upgrade=SPDY/3.1\n"
                                   "X-Forwarded-For=10.0.0.7, 10.0.0.8\n"
                                   "X-Stream-Protocol-Version=portforward.k8s.io\n";

/* Obsolete line folding, blanks to trim and an empty value. */
static const char folded[] = "GET /a%2Fb?q=%20x HTTP/1.0\r\n"
                             "X-Fold:  one \t\r\n"
                             " \t two\r\n"
                             "X-Empty:\r\n"
                             "X-Blank: \t \r\n"
                             "\r\n";

static const char folded_dump[] = "GET|/a%2Fb|q=%20x|1.0\n"
                                  "X-Fold=one \t two\n"
                                  "X-Empty=\n"
                                  "X-Blank=\n";

/* A SPDY SYN_STREAM header that a client may send right behind its head. */
static const uint8_t trailer[] = {0x80, 0x03, 0x00, 0x01, 0x01, 0x00, 0x00, 0x0a, 'X', '\r', '\n'};

static void dump_request(const sl_http_request *r, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s|%s|%s|%u.%u\n", r->method, r->path,
                     r->query ? r->query : "(null)", r->http_major, r->http_minor);
    size_t used = (size_t)n;
    for (size_t i = 0; i < r->nheaders && used < cap; i++) {
        n = snprintf(out + used, cap - used, "%s=%s\n", r->headers[i].name, r->headers[i].value);
        used += (size_t)n;
    }
    assert_true(used < cap);
}

/* Feeds data cut at the given offsets (ascending, each <= len). Returns the
 * total consumed; checks that MORE consumes everything and that nothing is
 * consumed after the parser has finished. */
static size_t feed_cuts(sl_http_head_parser *p, const uint8_t *data, size_t len, const size_t *cuts,
                        size_t ncuts)
{
    size_t total = 0, start = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : len;
        sl_http_head_state before = p->state;
        size_t got = sl_http_head_feed(p, data + start, end - start);
        assert_true(got <= end - start);
        if (before != SL_HTTP_HEAD_MORE)
            assert_int_equal(got, 0);
        else if (p->state == SL_HTTP_HEAD_MORE)
            assert_int_equal(got, end - start);
        total += got;
        start = end;
    }
    return total;
}

/* Parses data (head + extra bytes) with the given cuts and checks the
 * result against the expected dump and head length. */
static void expect_done(const uint8_t *data, size_t len, size_t head_len, const size_t *cuts,
                        size_t ncuts, const char *dump)
{
    sl_http_head_parser p;
    sl_http_head_init(&p, NULL);
    size_t got = feed_cuts(&p, data, len, cuts, ncuts);
    assert_int_equal(p.state, SL_HTTP_HEAD_DONE);
    assert_int_equal(got, head_len);
    char buf[2048];
    dump_request(&p.req, buf, sizeof(buf));
    assert_string_equal(buf, dump);
    assert_int_equal(sl_http_head_feed(&p, data, len), 0);
    sl_http_head_fini(&p);
}

/* Every byte-by-byte and every 2-way split of data (head + extra). */
static void every_split(const uint8_t *data, size_t len, size_t head_len, const char *dump)
{
    size_t *cuts = malloc((len + 1) * sizeof(*cuts));
    assert_non_null(cuts);
    for (size_t i = 0; i <= len; i++)
        cuts[i] = i;
    expect_done(data, len, head_len, cuts, len + 1, dump);
    for (size_t i = 0; i <= len; i++)
        expect_done(data, len, head_len, &i, 1, dump);
    free(cuts);
}

static void sample_split(const char *head, const uint8_t *extra, size_t extra_len, const char *dump)
{
    size_t hl = strlen(head);
    uint8_t *data = malloc(hl + extra_len + 1);
    assert_non_null(data);
    memcpy(data, head, hl);
    if (extra_len)
        memcpy(data + hl, extra, extra_len);
    every_split(data, hl, hl, dump);
    every_split(data, hl + extra_len, hl, dump);
    free(data);
}

static void spdy_exec_every_split(void **state)
{
    (void)state;
    sample_split(spdy_exec, trailer, sizeof(trailer), spdy_exec_dump);
}

static void websocket_every_split(void **state)
{
    (void)state;
    /* A client may pipeline its first (masked) WebSocket frame. */
    static const uint8_t frame[] = {0x82, 0x81, 1, 2, 3, 4, 0x01};
    sample_split(ws_exec, frame, sizeof(frame), ws_exec_dump);
}

static void portforward_every_split(void **state)
{
    (void)state;
    sample_split(portfwd, trailer, sizeof(trailer), portfwd_dump);
}

static void fold_and_trim_every_split(void **state)
{
    (void)state;
    sample_split(folded, (const uint8_t *)"GET / HTTP/1.1\r\n", 16, folded_dump);
    /* and every 3-way split, folds being the subtle case */
    size_t len = strlen(folded);
    for (size_t i = 0; i <= len; i++)
        for (size_t j = i; j <= len; j++) {
            size_t cuts[2] = {i, j};
            expect_done((const uint8_t *)folded, len, len, cuts, 2, folded_dump);
        }
}

/* Converts CRLF to LF. */
static char *bare_lf(const char *s)
{
    char *o = malloc(strlen(s) + 1), *d = o;
    assert_non_null(o);
    for (; *s; s++)
        if (*s != '\r')
            *d++ = *s;
    *d = '\0';
    return o;
}

static void bare_lf_every_split(void **state)
{
    (void)state;
    char *h = bare_lf(spdy_exec);
    sample_split(h, trailer, sizeof(trailer), spdy_exec_dump);
    free(h);
}

/* Parses s in one feed; returns the state, the parser is left for checks. */
static sl_http_head_state parse_one(sl_http_head_parser *p, const sl_http_limits *lim,
                                    const char *s, size_t len)
{
    sl_http_head_init(p, lim);
    size_t got = sl_http_head_feed(p, (const uint8_t *)s, len);
    assert_true(got <= len);
    if (p->state == SL_HTTP_HEAD_ERROR) {
        assert_true(p->err_status >= 400);
        assert_true(strlen(p->err_text) > 0);
    }
    return p->state;
}

static void expect_error(const sl_http_limits *lim, const char *s, size_t len, int status,
                         const char *text)
{
    sl_http_head_parser p;
    assert_int_equal(parse_one(&p, lim, s, len), SL_HTTP_HEAD_ERROR);
    assert_int_equal(p.err_status, status);
    if (text)
        assert_string_equal(p.err_text, text);
    else
        assert_memory_equal(p.err_text, "malformed request: ", 19);
    assert_int_equal(sl_http_head_feed(&p, (const uint8_t *)"\r\n\r\n", 4), 0);
    assert_int_equal(p.state, SL_HTTP_HEAD_ERROR);
    sl_http_head_fini(&p);
}

#define ERR(s, status, text) expect_error(NULL, s, sizeof(s) - 1, status, text)

static void malformed_requests(void **state)
{
    (void)state;
    ERR("GARBAGE\r\n\r\n", 400, NULL);
    ERR("GET / HTTP/1.1\r\nHost x\r\n\r\n", 400, NULL);
    ERR("GET / HTTP/1.1\r\nHo\0st: x\r\n\r\n", 400, NULL);
    ERR("GET / HTTP/1.1\r\nHost: a\0b\r\n\r\n", 400, NULL);
    ERR("GET /a\0b HTTP/1.1\r\n\r\n", 400, NULL);
    ERR("GET / HTTP/1.1\r\nX: a\x7f\r\n\r\n", 400, NULL);
    ERR("GET / HTTP/1.1\r\n: empty-name\r\n\r\n", 400, NULL);
    ERR("GET / HTTP/1.1\r\n\rX", 400, NULL);
    ERR("GET / HTTP/1.1 extra\r\n\r\n", 400, NULL);
    ERR("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400, NULL);
    ERR("GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400, NULL);
    ERR("GET /\r\n\r\n", 400, "malformed request: unsupported HTTP version\n");
    ERR("GET / HTTP/2.0\r\n\r\n", 400, "malformed request: unsupported HTTP version\n");
    ERR("OPTIONS * HTTP/1.1\r\n\r\n", 400,
        "malformed request: request target must be an absolute path\n");
    ERR("GET http://h/exec/x HTTP/1.1\r\nHost: h\r\n\r\n", 400,
        "malformed request: request target must be an absolute path\n");
    ERR("CONNECT h:443 HTTP/1.1\r\n\r\n", 400,
        "malformed request: request target must be an absolute path\n");
}

static void accepted_variants(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        const char *dump;
    } cases[] = {
        {"GET / HTTP/1.1\r\n\r\n", "GET|/|(null)|1.1\n"},
        {"\r\n\r\nGET / HTTP/1.1\r\n\r\n", "GET|/|(null)|1.1\n"},
        {"PUT /p? HTTP/1.0\r\n\r\n", "PUT|/p||1.0\n"}, /* "?" alone: empty query */
        {"GET /p#frag HTTP/1.1\r\n\r\n", "GET|/p|(null)|1.1\n"},
        {"GET /p?a=1#frag HTTP/1.1\r\n\r\n", "GET|/p|a=1|1.1\n"},
        {"GET /x HTTP/1.1\r\nA:b\r\nb:  \xc3\xa9\xff \r\n\r\n",
         "GET|/x|(null)|1.1\nA=b\nb=\xc3\xa9\xff\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sl_http_head_parser p;
        size_t len = strlen(cases[i].in);
        assert_int_equal(parse_one(&p, NULL, cases[i].in, len), SL_HTTP_HEAD_DONE);
        assert_int_equal(p.head_bytes, len);
        char buf[512];
        dump_request(&p.req, buf, sizeof(buf));
        assert_string_equal(buf, cases[i].dump);
        sl_http_head_fini(&p);
    }
}

static void body_is_left_to_caller(void **state)
{
    (void)state;
    /* No Upgrade, a body announced: still DONE at the end of the head. */
    static const char s[] = "POST /exec/tok HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"
                            "GET / HTTP/1.1\r\n\r\n";
    sl_http_head_parser p;
    sl_http_head_init(&p, NULL);
    size_t got = sl_http_head_feed(&p, (const uint8_t *)s, sizeof(s) - 1);
    assert_int_equal(p.state, SL_HTTP_HEAD_DONE);
    assert_int_equal(got, strlen("POST /exec/tok HTTP/1.1\r\nContent-Length: 5\r\n\r\n"));
    assert_string_equal(p.req.method, "POST");
    sl_http_head_fini(&p);
}

static void empty_feed_and_fini(void **state)
{
    (void)state;
    sl_http_head_parser p;
    sl_http_head_init(&p, NULL);
    assert_int_equal(sl_http_head_feed(&p, NULL, 0), 0);
    assert_int_equal(p.state, SL_HTTP_HEAD_MORE);
    assert_int_equal(sl_http_head_feed(&p, (const uint8_t *)"GET / HT", 8), 8);
    assert_int_equal(sl_http_head_feed(&p, (const uint8_t *)"x", 0), 0);
    assert_int_equal(p.state, SL_HTTP_HEAD_MORE);
    assert_int_equal(sl_http_head_feed(&p, (const uint8_t *)"TP/1.1\r\nA: b", 12), 12);
    /* stop half way: fini must release everything (checked under ASan) */
    sl_http_head_fini(&p);
    sl_http_head_fini(&p);
    sl_http_head_init(&p, NULL);
    sl_http_head_fini(&p);
}

static void zero_limits_mean_defaults(void **state)
{
    (void)state;
    sl_http_limits lim = {0, 0, 0};
    sl_http_head_parser p;
    sl_http_head_init(&p, &lim);
    assert_int_equal(p.limits.max_request_line, SL_DEFAULT_MAX_REQUEST_LINE);
    assert_int_equal(p.limits.max_headers, SL_DEFAULT_MAX_HEADERS);
    assert_int_equal(p.limits.max_head_size, SL_DEFAULT_MAX_HEAD_SIZE);
    sl_http_head_fini(&p);
    sl_http_head_init(&p, NULL);
    assert_int_equal(p.limits.max_head_size, SL_DEFAULT_MAX_HEAD_SIZE);
    sl_http_head_fini(&p);
}

/* "GET /aaa… HTTP/1.1" of exactly line_len bytes, then tail. */
static char *make_request_line(size_t line_len, const char *eol, const char *tail)
{
    size_t fixed = strlen("GET / HTTP/1.1");
    assert_true(line_len >= fixed);
    char *s = malloc(line_len + strlen(eol) + strlen(tail) + 1);
    assert_non_null(s);
    size_t pad = line_len - fixed;
    memcpy(s, "GET /", 5);
    memset(s + 5, 'a', pad);
    sprintf(s + 5 + pad, " HTTP/1.1%s%s", eol, tail);
    return s;
}

static void check_request_line_limit(const sl_http_limits *lim, uint32_t max, const char *eol)
{
    char text[160];
    snprintf(text, sizeof(text), "request line exceeds the limit of %u bytes\n", max);
    char *ok = make_request_line(max, eol, eol);
    sl_http_head_parser p;
    assert_int_equal(parse_one(&p, lim, ok, strlen(ok)), SL_HTTP_HEAD_DONE);
    assert_int_equal(strlen(p.req.path), max - strlen("GET  HTTP/1.1"));
    sl_http_head_fini(&p);
    char *bad = make_request_line(max + 1, eol, eol);
    expect_error(lim, bad, strlen(bad), 400, text);
    /* byte by byte: refused at the first byte past the limit */
    sl_http_head_init(&p, lim);
    size_t i = 0;
    while (p.state == SL_HTTP_HEAD_MORE && i < strlen(bad))
        sl_http_head_feed(&p, (const uint8_t *)bad + i++, 1);
    assert_int_equal(p.state, SL_HTTP_HEAD_ERROR);
    assert_int_equal(p.err_status, 400);
    assert_int_equal(i, max + 1);
    sl_http_head_fini(&p);
    free(ok);
    free(bad);
}

static void request_line_limit(void **state)
{
    (void)state;
    sl_http_limits small = {64, 8, 1024};
    check_request_line_limit(&small, 64, "\r\n");
    check_request_line_limit(&small, 64, "\n");
    check_request_line_limit(NULL, SL_DEFAULT_MAX_REQUEST_LINE, "\r\n");
}

static void endless_request_line(void **state)
{
    (void)state;
    sl_http_head_parser p;
    sl_http_head_init(&p, NULL);
    uint8_t chunk[1000];
    memset(chunk, 'a', sizeof(chunk));
    assert_int_equal(sl_http_head_feed(&p, (const uint8_t *)"GET /", 5), 5);
    size_t total = 5, rounds = 0;
    while (p.state == SL_HTTP_HEAD_MORE && rounds++ < 100)
        total += sl_http_head_feed(&p, chunk, sizeof(chunk));
    assert_int_equal(p.state, SL_HTTP_HEAD_ERROR);
    assert_int_equal(p.err_status, 400);
    assert_true(total <= SL_DEFAULT_MAX_REQUEST_LINE);
    assert_int_equal(rounds, SL_DEFAULT_MAX_REQUEST_LINE / sizeof(chunk) + 1);
    sl_http_head_fini(&p);
}

/* A head with nfields header lines. */
static char *make_fields(size_t nfields)
{
    char *s = malloc(32 + nfields * 32);
    assert_non_null(s);
    size_t n = (size_t)sprintf(s, "GET /h HTTP/1.1\r\n");
    for (size_t i = 0; i < nfields; i++)
        n += (size_t)sprintf(s + n, "X-F%zu: v%zu\r\n", i, i);
    sprintf(s + n, "\r\n");
    return s;
}

static void header_count_limit(void **state)
{
    (void)state;
    const sl_http_limits small = {64, 3, 1024};
    const sl_http_limits *lims[2] = {&small, NULL};
    const size_t maxes[2] = {3, SL_DEFAULT_MAX_HEADERS};
    for (int k = 0; k < 2; k++) {
        char text[160];
        snprintf(text, sizeof(text), "request has more than %zu header fields\n", maxes[k]);
        char *ok = make_fields(maxes[k]);
        sl_http_head_parser p;
        assert_int_equal(parse_one(&p, lims[k], ok, strlen(ok)), SL_HTTP_HEAD_DONE);
        assert_int_equal(p.req.nheaders, maxes[k]);
        sl_http_head_fini(&p);
        char *bad = make_fields(maxes[k] + 1);
        expect_error(lims[k], bad, strlen(bad), 431, text);
        free(ok);
        free(bad);
    }
}

/* A head of exactly size bytes: request line, one padding header, blank line. */
static char *make_sized_head(size_t size, const char *eol)
{
    char *s = malloc(size + 1);
    assert_non_null(s);
    size_t e = strlen(eol);
    int n = sprintf(s, "GET / HTTP/1.1%sX-Pad: ", eol);
    size_t fixed = (size_t)n + 2 * e;
    assert_true(size > fixed);
    memset(s + n, 'p', size - fixed);
    sprintf(s + n + (size - fixed), "%s%s", eol, eol);
    assert_int_equal(strlen(s), size);
    return s;
}

static void head_size_limit(void **state)
{
    (void)state;
    const sl_http_limits small = {64, 8, 200};
    const sl_http_limits *lims[2] = {&small, NULL};
    const size_t maxes[2] = {200, SL_DEFAULT_MAX_HEAD_SIZE};
    for (int k = 0; k < 2; k++) {
        char text[160];
        snprintf(text, sizeof(text), "request head exceeds the limit of %zu bytes\n", maxes[k]);
        char *ok = make_sized_head(maxes[k], "\r\n");
        sl_http_head_parser p;
        assert_int_equal(parse_one(&p, lims[k], ok, strlen(ok)), SL_HTTP_HEAD_DONE);
        assert_int_equal(p.head_bytes, maxes[k]);
        sl_http_head_fini(&p);
        /* exactly at the limit with bytes behind it: the head still fits */
        char *more = malloc(maxes[k] + 4);
        assert_non_null(more);
        memcpy(more, ok, maxes[k]);
        memcpy(more + maxes[k], "ABCD", 4);
        sl_http_head_init(&p, lims[k]);
        assert_int_equal(sl_http_head_feed(&p, (uint8_t *)more, maxes[k] + 4), maxes[k]);
        assert_int_equal(p.state, SL_HTTP_HEAD_DONE);
        sl_http_head_fini(&p);
        char *bad = make_sized_head(maxes[k] + 1, "\r\n");
        expect_error(lims[k], bad, strlen(bad), 431, text);
        char *bad_lf = make_sized_head(maxes[k] + 1, "\n");
        expect_error(lims[k], bad_lf, strlen(bad_lf), 431, text);
        free(ok);
        free(more);
        free(bad);
        free(bad_lf);
    }
}

static void endless_head(void **state)
{
    (void)state;
    sl_http_head_parser p;
    sl_http_head_init(&p, NULL);
    const char *start = "GET / HTTP/1.1\r\nX-Long: ";
    assert_int_equal(sl_http_head_feed(&p, (const uint8_t *)start, strlen(start)), strlen(start));
    uint8_t chunk[777];
    memset(chunk, 'v', sizeof(chunk));
    size_t total = strlen(start), rounds = 0;
    while (p.state == SL_HTTP_HEAD_MORE && rounds++ < 1000)
        total += sl_http_head_feed(&p, chunk, sizeof(chunk));
    assert_int_equal(p.state, SL_HTTP_HEAD_ERROR);
    assert_int_equal(p.err_status, 431);
    assert_int_equal(total, SL_DEFAULT_MAX_HEAD_SIZE);
    sl_http_head_fini(&p);
}

static const char multi[] = "GET /ws HTTP/1.1\r\n"
                            "connection: keep-alive, Upgrade\r\n"
                            "X-Stream-Protocol-Version: v4.channel.k8s.io , ,v3.channel.k8s.io\r\n"
                            "Host: h\r\n"
                            "x-stream-protocol-version: channel.k8s.io\r\n"
                            "X-Stream-Protocol-Version:\r\n"
                            "Upgrade: SPDY/3.1\r\n"
                            "Upgrade: websocket\r\n"
                            "\r\n";

typedef struct collected {
    char text[256];
    int calls;
    int stop_at;
} collected;

static int collect_elem(const char *e, size_t len, void *arg)
{
    collected *c = arg;
    c->calls++;
    size_t n = strlen(c->text);
    snprintf(c->text + n, sizeof(c->text) - n, "[%.*s]", (int)len, e);
    return c->calls == c->stop_at ? 7 : 0;
}

static void header_lookup(void **state)
{
    (void)state;
    sl_http_head_parser p;
    assert_int_equal(parse_one(&p, NULL, multi, strlen(multi)), SL_HTTP_HEAD_DONE);
    const sl_http_request *r = &p.req;
    assert_string_equal(sl_http_header_get(r, "HOST"), "h");
    assert_string_equal(sl_http_header_get(r, "upgrade"), "SPDY/3.1");
    assert_null(sl_http_header_get(r, "Origin"));
    assert_true(sl_http_header_has_token(r, "Connection", "upgrade"));
    assert_true(sl_http_header_has_token(r, "CONNECTION", "Keep-Alive"));
    assert_false(sl_http_header_has_token(r, "Connection", "keep"));
    assert_false(sl_http_header_has_token(r, "Connection", "close"));
    assert_true(sl_http_header_has_token(r, "Upgrade", "WebSocket"));
    assert_false(sl_http_header_has_token(r, "Origin", "x"));
    assert_false(sl_http_header_has_token(r, "Connection", ""));
    collected c = {{0}, 0, 0};
    assert_int_equal(sl_http_header_each(r, "X-Stream-Protocol-Version", collect_elem, &c), 0);
    assert_string_equal(c.text, "[v4.channel.k8s.io][v3.channel.k8s.io][channel.k8s.io]");
    collected stop = {{0}, 0, 2};
    assert_int_equal(sl_http_header_each(r, "x-stream-protocol-version", collect_elem, &stop), 7);
    assert_string_equal(stop.text, "[v4.channel.k8s.io][v3.channel.k8s.io]");
    collected none = {{0}, 0, 0};
    assert_int_equal(sl_http_header_each(r, "Nope", collect_elem, &none), 0);
    assert_int_equal(none.calls, 0);
    sl_http_head_fini(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(spdy_exec_every_split),
        cmocka_unit_test(websocket_every_split),
        cmocka_unit_test(portforward_every_split),
        cmocka_unit_test(fold_and_trim_every_split),
        cmocka_unit_test(bare_lf_every_split),
        cmocka_unit_test(malformed_requests),
        cmocka_unit_test(accepted_variants),
        cmocka_unit_test(body_is_left_to_caller),
        cmocka_unit_test(empty_feed_and_fini),
        cmocka_unit_test(zero_limits_mean_defaults),
        cmocka_unit_test(request_line_limit),
        cmocka_unit_test(endless_request_line),
        cmocka_unit_test(header_count_limit),
        cmocka_unit_test(head_size_limit),
        cmocka_unit_test(endless_head),
        cmocka_unit_test(header_lookup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
