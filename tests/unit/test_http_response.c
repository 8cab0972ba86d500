#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http_response.h"
#include "sluice/error.h"

/* The queue's bytes as a NUL-terminated string (caller frees). */
static char *queued(const sl_bufq *q)
{
    size_t n = sl_bufq_len(q);
    char *s = malloc(n + 1);
    assert_non_null(s);
    assert_int_equal(sl_bufq_copyout(q, s, n), n);
    s[n] = '\0';
    return s;
}

static void reasons(void **state)
{
    (void)state;
    static const struct {
        int status;
        const char *text;
    } want[] = {
        {100, "Continue"},
        {101, "Switching Protocols"},
        {200, "OK"},
        {400, "Bad Request"},
        {403, "Forbidden"},
        {404, "Not Found"},
        {405, "Method Not Allowed"},
        {414, "URI Too Long"},
        {429, "Too Many Requests"},
        {431, "Request Header Fields Too Large"},
        {500, "Internal Server Error"},
        {503, "Service Unavailable"},
        {505, "HTTP Version Not Supported"},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        assert_string_equal(sl_http_reason(want[i].status), want[i].text);
    assert_string_equal(sl_http_reason(0), "Unknown");
    assert_string_equal(sl_http_reason(299), "Unknown");
    assert_string_equal(sl_http_reason(-404), "Unknown");
    assert_string_equal(sl_http_reason(999), "Unknown");
}

static void error_not_found(void **state)
{
    (void)state;
    sl_bufq q;
    sl_bufq_init(&q);
    assert_int_equal(sl_http_write_error(&q, 404, NULL, "404 page not found\n"), SL_OK);
    char *s = queued(&q);
    assert_string_equal(s, "HTTP/1.1 404 Not Found\r\n"
                           "Content-Type: text/plain; charset=utf-8\r\n"
                           "X-Content-Type-Options: nosniff\r\n"
                           "Content-Length: 19\r\n"
                           "Connection: close\r\n"
                           "\r\n"
                           "404 page not found\n");
    free(s);
    sl_bufq_fini(&q);
}

static void error_with_extra_headers(void **state)
{
    (void)state;
    sl_bufq q;
    sl_bufq_init(&q);
    assert_int_equal(sl_bufq_append(&q, "prev", 4), SL_OK);
    const char *body = "rpc error: code = ResourceExhausted desc = maximum number of in-flight "
                       "requests exceeded";
    assert_int_equal(sl_http_write_error(&q, 429, "Retry-After: 60\r\n", body), SL_OK);
    char *s = queued(&q);
    char want[512];
    snprintf(want, sizeof(want),
             "prevHTTP/1.1 429 Too Many Requests\r\n"
             "Content-Type: text/plain; charset=utf-8\r\n"
             "X-Content-Type-Options: nosniff\r\n"
             "Content-Length: %zu\r\n"
             "Connection: close\r\n"
             "Retry-After: 60\r\n"
             "\r\n%s",
             strlen(body), body);
    assert_string_equal(s, want);
    free(s);
    sl_bufq_fini(&q);
}

static void error_empty_body_and_percent(void **state)
{
    (void)state;
    sl_bufq q;
    sl_bufq_init(&q);
    assert_int_equal(sl_http_write_error(&q, 403, "", NULL), SL_OK);
    char *s = queued(&q);
    assert_non_null(strstr(s, "HTTP/1.1 403 Forbidden\r\n"));
    assert_non_null(strstr(s, "Content-Length: 0\r\n"));
    assert_int_equal(strcmp(s + strlen(s) - 4, "\r\n\r\n"), 0);
    free(s);
    sl_bufq_fini(&q);
    /* bodies and headers are data, never formats */
    sl_bufq_init(&q);
    assert_int_equal(sl_http_write_error(&q, 400, "X-A: %s%n\r\n", "100% %s%n\n"), SL_OK);
    s = queued(&q);
    assert_non_null(strstr(s, "\r\nX-A: %s%n\r\n\r\n100% %s%n\n"));
    assert_non_null(strstr(s, "Content-Length: 10\r\n"));
    free(s);
    sl_bufq_fini(&q);
}

static void switching_protocols(void **state)
{
    (void)state;
    sl_bufq q;
    sl_bufq_init(&q);
    assert_int_equal(sl_http_write_101(&q, "Connection: Upgrade\r\n"
                                           "Upgrade: SPDY/3.1\r\n"
                                           "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n"),
                     SL_OK);
    char *s = queued(&q);
    /* byte for byte what Go net/http sends (protocol notes §3.2) */
    assert_string_equal(s, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                           "Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
                           "\r\n");
    free(s);
    sl_bufq_fini(&q);
    sl_bufq_init(&q);
    assert_int_equal(sl_http_write_101(&q, NULL), SL_OK);
    s = queued(&q);
    assert_string_equal(s, "HTTP/1.1 101 Switching Protocols\r\n\r\n");
    free(s);
    sl_bufq_fini(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reasons),
        cmocka_unit_test(error_not_found),
        cmocka_unit_test(error_with_extra_headers),
        cmocka_unit_test(error_empty_body_and_percent),
        cmocka_unit_test(switching_protocols),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
