#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/url.h"
#include "sluice/error.h"

#define TOK "AbCd-_12xyzXYZ0123456"

static void hostport_formats(void **state)
{
    (void)state;
    char buf[SL_URL_MAX_HOSTPORT];
    assert_int_equal(sl_url_format_hostport(buf, sizeof(buf), "127.0.0.1", 10010), 15);
    assert_string_equal(buf, "127.0.0.1:10010");
    assert_int_equal(sl_url_format_hostport(buf, sizeof(buf), "::1", 0), 7);
    assert_string_equal(buf, "[::1]:0");
    assert_true(sl_url_format_hostport(buf, sizeof(buf), "[2001:db8::1]", 443) > 0);
    assert_string_equal(buf, "[2001:db8::1]:443");
    assert_true(sl_url_format_hostport(buf, sizeof(buf), "2001:db8::1", 65535) > 0);
    assert_string_equal(buf, "[2001:db8::1]:65535");
    assert_true(sl_url_format_hostport(buf, sizeof(buf), "fe80::1%eth0", 80) > 0);
    assert_string_equal(buf, "[fe80::1%25eth0]:80");
    assert_true(sl_url_format_hostport(buf, sizeof(buf), "node-1.example", 8080) > 0);
    assert_string_equal(buf, "node-1.example:8080");
    /* exact fit, then one byte short */
    assert_int_equal(sl_url_format_hostport(buf, 9, "::1", 80), 8);
    assert_string_equal(buf, "[::1]:80");
    assert_int_equal(sl_url_format_hostport(buf, 9, "::1", 800), SL_ERR_INVAL);
    const char *bad[] = {"",          "a/b", "a b", "a@b",         "a?b",      "[::1",    "::1]",
                         "10.0.0.1%", "[]",  "a#b", "fe80::1%e%0", "fe80::1%", "h\r\nX:", "[a]b]"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(sl_url_format_hostport(buf, sizeof(buf), bad[i], 1), SL_ERR_INVAL);
    assert_int_equal(sl_url_format_hostport(buf, sizeof(buf), NULL, 1), SL_ERR_INVAL);
    char longhost[SL_URL_MAX_HOSTPORT + 10];
    memset(longhost, 'a', sizeof(longhost) - 1);
    longhost[sizeof(longhost) - 1] = '\0';
    assert_int_equal(sl_url_format_hostport(buf, sizeof(buf), longhost, 1), SL_ERR_INVAL);
}

static void expect_build(const char *base_path, const char *hostport, const char *method,
                         const char *want)
{
    sl_url_base b;
    assert_int_equal(sl_url_base_init(&b, "http", hostport, base_path), SL_OK);
    char *url = sl_url_build(&b, method, TOK);
    assert_non_null(url);
    assert_string_equal(url, want);
    free(url);
    sl_url_base_fini(&b);
}

static void build_urls(void **state)
{
    (void)state;
    expect_build("/", "127.0.0.1:10010", "exec", "http://127.0.0.1:10010/exec/" TOK);
    expect_build(NULL, "127.0.0.1:10010", "attach", "http://127.0.0.1:10010/attach/" TOK);
    expect_build("", "[::1]:7", "portforward", "http://[::1]:7/portforward/" TOK);
    expect_build("/cri/", "127.0.0.1:1", "exec", "http://127.0.0.1:1/cri/exec/" TOK);
    expect_build("/cri", "127.0.0.1:1", "exec", "http://127.0.0.1:1/exec/" TOK);
    expect_build("/a/b/c", "[fe80::1%25eth0]:80", "attach",
                 "http://[fe80::1%25eth0]:80/a/b/attach/" TOK);
    sl_url_base b;
    assert_int_equal(sl_url_base_init(&b, "HTTPS", "h:1", "/x/"), SL_OK);
    char *url = sl_url_build(&b, "exec", "t");
    assert_string_equal(url, "https://h:1/x/exec/t");
    free(url);
    assert_null(sl_url_build(&b, "run", "t"));
    assert_null(sl_url_build(&b, "exec", ""));
    assert_null(sl_url_build(&b, "exec", "a/b"));
    assert_null(sl_url_build(&b, "exec", "a.b"));
    assert_null(sl_url_build(&b, "exec", NULL));
    assert_null(sl_url_build(&b, NULL, "t"));
    char longtok[SL_URL_MAX_TOKEN + 2];
    memset(longtok, 'a', sizeof(longtok) - 1);
    longtok[sizeof(longtok) - 1] = '\0';
    assert_null(sl_url_build(&b, "exec", longtok));
    longtok[SL_URL_MAX_TOKEN] = '\0';
    url = sl_url_build(&b, "exec", longtok);
    assert_non_null(url);
    free(url);
    sl_url_base_fini(&b);
    sl_url_base_fini(&b); /* idempotent */
    assert_null(sl_url_build(&b, "exec", "t"));
}

static void bad_bases(void **state)
{
    (void)state;
    sl_url_base b;
    const char *bad_paths[] = {"cri",  "//",   "/a//b", "/./",   "/a/..", "/a/../b/", "/a?b",
                               "/a#b", "/a b", "/%41",  "/a\\b", "/.",    "/a/./b/c", "/\x80"};
    for (size_t i = 0; i < sizeof(bad_paths) / sizeof(bad_paths[0]); i++) {
        assert_int_equal(sl_url_base_init(&b, "http", "h:1", bad_paths[i]), SL_ERR_INVAL);
        assert_null(b.origin);
        assert_null(b.prefix);
        sl_url_base_fini(&b);
    }
    assert_int_equal(sl_url_base_init(&b, "1http", "h:1", "/"), SL_ERR_INVAL);
    assert_int_equal(sl_url_base_init(&b, "", "h:1", "/"), SL_ERR_INVAL);
    assert_int_equal(sl_url_base_init(&b, "ht tp", "h:1", "/"), SL_ERR_INVAL);
    assert_int_equal(sl_url_base_init(&b, "http", "", "/"), SL_ERR_INVAL);
    assert_int_equal(sl_url_base_init(&b, "http", NULL, "/"), SL_ERR_INVAL);
    assert_int_equal(sl_url_base_init(&b, "http", "h/x:1", "/"), SL_ERR_INVAL);
    assert_int_equal(sl_url_base_init(&b, "http", "u@h:1", "/"), SL_ERR_INVAL);
    assert_int_equal(sl_url_base_init(NULL, "http", "h:1", "/"), SL_ERR_INVAL);
    char longpath[SL_URL_MAX_BASE_PATH + 1];
    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[0] = '/';
    longpath[sizeof(longpath) - 1] = '\0';
    assert_int_equal(sl_url_base_init(&b, "http", "h:1", longpath), SL_ERR_INVAL);
    longpath[SL_URL_MAX_BASE_PATH - 1] = '\0';
    assert_int_equal(sl_url_base_init(&b, "http", "h:1", longpath), SL_OK);
    assert_string_equal(b.prefix, "/");
    sl_url_base_fini(&b);
    /* characters RFC 3986 allows in a segment */
    assert_int_equal(sl_url_base_init(&b, "http+x", "h:1", "/a-._~!$&'()*+,;=:@/"), SL_OK);
    assert_string_equal(b.prefix, "/a-._~!$&'()*+,;=:@/");
    assert_string_equal(b.origin, "http+x://h:1");
    sl_url_base_fini(&b);
}

static void expect_match(const sl_url_base *b, const char *path, const char *method,
                         const char *token)
{
    const char *m = NULL, *t = NULL;
    size_t ml = 0, tl = 0;
    assert_int_equal(sl_url_match(b, path, &m, &ml, &t, &tl), SL_OK);
    assert_int_equal(ml, strlen(method));
    assert_memory_equal(m, method, ml);
    assert_int_equal(tl, strlen(token));
    assert_memory_equal(t, token, tl);
    assert_true(m >= path && t + tl <= path + strlen(path));
}

static void expect_nomatch(const sl_url_base *b, const char *path)
{
    const char *m = (const char *)1, *t = (const char *)1;
    size_t ml = 99, tl = 99;
    assert_int_equal(sl_url_match(b, path, &m, &ml, &t, &tl), SL_ERR_NOTFOUND);
    assert_ptr_equal(m, (const char *)1); /* outputs untouched */
    assert_int_equal(ml, 99);
    assert_ptr_equal(t, (const char *)1);
    assert_int_equal(tl, 99);
}

static void common_rejects(const sl_url_base *b, const char *p)
{
    char path[256];
    const char *tails[] = {"run/" TOK,       "exec/",      "exec",
                           "exec/a.b",       "exec/a%41",  "exec/" TOK "/",
                           "exec/" TOK "/x", "exec//" TOK, "Exec/" TOK,
                           "execx/" TOK,     "exe/" TOK,   "portforward/" TOK "#f",
                           "attach/a b",     "exec?/" TOK, ""};
    for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
        snprintf(path, sizeof(path), "%s%s", p, tails[i]);
        expect_nomatch(b, path);
    }
    char longtok[SL_URL_MAX_TOKEN + 2];
    memset(longtok, 'z', sizeof(longtok) - 1);
    longtok[sizeof(longtok) - 1] = '\0';
    snprintf(path, sizeof(path), "%sexec/%s", p, longtok);
    expect_nomatch(b, path);
    longtok[SL_URL_MAX_TOKEN] = '\0';
    snprintf(path, sizeof(path), "%sexec/%s", p, longtok);
    expect_match(b, path, "exec", longtok);
}

static void match_root(void **state)
{
    (void)state;
    sl_url_base b;
    assert_int_equal(sl_url_base_init(&b, NULL, "127.0.0.1:10010", "/"), SL_OK);
    expect_match(&b, "/exec/" TOK, "exec", TOK);
    expect_match(&b, "/attach/x", "attach", "x");
    expect_match(&b, "/portforward/" TOK "?port=80&x=/y", "portforward", TOK);
    expect_match(&b, "/exec/a?", "exec", "a");
    common_rejects(&b, "/");
    expect_nomatch(&b, "exec/" TOK);
    expect_nomatch(&b, "");
    expect_nomatch(&b, "/cri/exec/" TOK);
    expect_nomatch(&b, "http://h/exec/" TOK);
    /* NULL outputs are allowed */
    assert_int_equal(sl_url_match(&b, "/exec/t", NULL, NULL, NULL, NULL), SL_OK);
    assert_int_equal(sl_url_match(&b, NULL, NULL, NULL, NULL, NULL), SL_ERR_NOTFOUND);
    sl_url_base_fini(&b);
    assert_int_equal(sl_url_match(&b, "/exec/t", NULL, NULL, NULL, NULL), SL_ERR_NOTFOUND);
}

static void match_cri_prefix(void **state)
{
    (void)state;
    sl_url_base b;
    assert_int_equal(sl_url_base_init(&b, "http", "[::1]:10010", "/cri/"), SL_OK);
    assert_string_equal(b.prefix, "/cri/");
    expect_match(&b, "/cri/exec/" TOK, "exec", TOK);
    expect_match(&b, "/cri/attach/" TOK "?q", "attach", TOK);
    common_rejects(&b, "/cri/");
    expect_nomatch(&b, "/exec/" TOK);
    expect_nomatch(&b, "/cri" TOK);
    expect_nomatch(&b, "/crix/exec/" TOK);
    expect_nomatch(&b, "/CRI/exec/" TOK);
    expect_nomatch(&b, "/cri");
    /* a URL we built always matches, giving back method and token */
    char *url = sl_url_build(&b, "portforward", TOK);
    assert_non_null(url);
    const char *path = strchr(url + strlen("http://"), '/');
    expect_match(&b, path, "portforward", TOK);
    free(url);
    sl_url_base_fini(&b);
}

static void match_cri_no_slash(void **state)
{
    (void)state;
    sl_url_base b;
    assert_int_equal(sl_url_base_init(&b, "http", "10.0.0.1:1", "/cri"), SL_OK);
    assert_string_equal(b.prefix, "/"); /* RFC 3986 merge drops "cri" */
    expect_match(&b, "/exec/" TOK, "exec", TOK);
    expect_nomatch(&b, "/cri/exec/" TOK);
    common_rejects(&b, "/");
    sl_url_base_fini(&b);
    assert_int_equal(sl_url_base_init(&b, "http", "10.0.0.1:1", "/a/b/c"), SL_OK);
    assert_string_equal(b.prefix, "/a/b/");
    expect_match(&b, "/a/b/attach/" TOK, "attach", TOK);
    expect_nomatch(&b, "/a/b/c/attach/" TOK);
    common_rejects(&b, "/a/b/");
    sl_url_base_fini(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hostport_formats), cmocka_unit_test(build_urls),
        cmocka_unit_test(bad_bases),        cmocka_unit_test(match_root),
        cmocka_unit_test(match_cri_prefix), cmocka_unit_test(match_cri_no_slash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
