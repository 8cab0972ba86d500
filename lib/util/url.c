#include "util/url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/error.h"

static const char *const methods[] = {"exec", "attach", "portforward"};

static int is_alnum(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int is_token_char(char c)
{
    return is_alnum(c) || c == '-' || c == '_';
}

/* RFC 3986 unreserved / sub-delims. */
static int is_unreserved(char c)
{
    return is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

static int is_sub_delim(char c)
{
    return c != '\0' && strchr("!$&'()*+,;=", c) != NULL;
}

/* Bytes allowed in a host or authority we put in a URL. */
static int is_authority_char(char c)
{
    return is_unreserved(c) || is_sub_delim(c) || c == ':' || c == '%' || c == '[' || c == ']';
}

static int is_path_char(char c)
{
    return is_unreserved(c) || is_sub_delim(c) || c == ':' || c == '@';
}

/* Length of a token at s (stops at the first non-token byte). */
static size_t token_span(const char *s)
{
    size_t n = 0;
    while (is_token_char(s[n]))
        n++;
    return n;
}

/* Index into methods[] of the name s[0..n), or -1. */
static int method_index(const char *s, size_t n)
{
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        if (strlen(methods[i]) == n && memcmp(methods[i], s, n) == 0)
            return (int)i;
    return -1;
}

static int valid_host(const char *host, int bracketed)
{
    for (const char *p = host; *p; p++) {
        if (!is_authority_char(*p) || *p == '[' || *p == ']')
            return 0;
        if (*p == '%' && !bracketed && !strchr(host, ':'))
            return 0; /* '%' only as an IPv6 zone separator */
    }
    return 1;
}

int sl_url_format_hostport(char *dst, size_t n, const char *host, uint16_t port)
{
    if (!dst || !host || !*host)
        return SL_ERR_INVAL;
    size_t hl = strlen(host);
    int bracketed = host[0] == '[' && host[hl - 1] == ']' && hl > 2;
    const char *inner = bracketed ? host + 1 : host;
    size_t il = bracketed ? hl - 2 : hl;
    char tmp[SL_URL_MAX_HOSTPORT];
    if (il >= sizeof(tmp))
        return SL_ERR_INVAL;
    memcpy(tmp, inner, il);
    tmp[il] = '\0';
    if (!valid_host(tmp, bracketed))
        return SL_ERR_INVAL;
    int v6 = bracketed || strchr(tmp, ':') != NULL;
    const char *zone = bracketed ? NULL : strchr(tmp, '%');
    if (zone && (zone[1] == '\0' || strchr(zone + 1, '%')))
        return SL_ERR_INVAL;
    int len;
    if (zone) /* RFC 6874: the zone separator is written as "%25" */
        len = snprintf(dst, n, "[%.*s%%25%s]:%u", (int)(zone - tmp), tmp, zone + 1, (unsigned)port);
    else if (v6)
        len = snprintf(dst, n, "[%s]:%u", tmp, (unsigned)port);
    else
        len = snprintf(dst, n, "%s:%u", tmp, (unsigned)port);
    if (len < 0 || (size_t)len >= n)
        return SL_ERR_INVAL;
    return len;
}

static int valid_scheme(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')))
        return 0;
    for (s++; *s; s++)
        if (!is_alnum(*s) && *s != '+' && *s != '-' && *s != '.')
            return 0;
    return 1;
}

static int valid_authority(const char *s)
{
    if (!*s || strlen(s) >= SL_URL_MAX_HOSTPORT)
        return 0;
    for (; *s; s++)
        if (!is_authority_char(*s))
            return 0;
    return 1;
}

/* Absolute path without empty, "." or ".." segments (the last segment may be
 * empty: "/cri/"). */
static int valid_base_path(const char *p)
{
    if (p[0] != '/' || strlen(p) >= SL_URL_MAX_BASE_PATH)
        return 0;
    while (*p == '/') {
        const char *seg = ++p;
        while (*p && *p != '/') {
            if (!is_path_char(*p))
                return 0;
            p++;
        }
        size_t len = (size_t)(p - seg);
        if (len == 0 && *p == '/')
            return 0;
        if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
            return 0;
    }
    return *p == '\0';
}

int sl_url_base_init(sl_url_base *b, const char *scheme, const char *hostport,
                     const char *base_path)
{
    if (!b)
        return SL_ERR_INVAL;
    memset(b, 0, sizeof(*b));
    if (!scheme)
        scheme = "http";
    if (!base_path || !*base_path)
        base_path = "/";
    if (!hostport || !valid_scheme(scheme) || !valid_authority(hostport) ||
        !valid_base_path(base_path))
        return SL_ERR_INVAL;
    size_t sl = strlen(scheme), hl = strlen(hostport);
    size_t pl = (size_t)(strrchr(base_path, '/') - base_path) + 1;
    char *origin = malloc(sl + 3 + hl + 1);
    char *prefix = malloc(pl + 1);
    if (!origin || !prefix) {
        free(origin);
        free(prefix);
        return SL_ERR_NOMEM;
    }
    for (size_t i = 0; i < sl; i++)
        origin[i] = (scheme[i] >= 'A' && scheme[i] <= 'Z') ? (char)(scheme[i] + 32) : scheme[i];
    memcpy(origin + sl, "://", 3);
    memcpy(origin + sl + 3, hostport, hl + 1);
    memcpy(prefix, base_path, pl);
    prefix[pl] = '\0';
    b->origin = origin;
    b->prefix = prefix;
    b->prefix_len = pl;
    return SL_OK;
}

void sl_url_base_fini(sl_url_base *b)
{
    if (!b)
        return;
    free(b->origin);
    free(b->prefix);
    memset(b, 0, sizeof(*b));
}

char *sl_url_build(const sl_url_base *b, const char *method, const char *token)
{
    if (!b || !b->origin || !b->prefix || !method || !token)
        return NULL;
    size_t tl = strlen(token);
    if (method_index(method, strlen(method)) < 0 || tl == 0 || tl > SL_URL_MAX_TOKEN ||
        token_span(token) != tl)
        return NULL;
    size_t n = strlen(b->origin) + b->prefix_len + strlen(method) + 1 + tl + 1;
    char *url = malloc(n);
    if (!url)
        return NULL;
    snprintf(url, n, "%s%s%s/%s", b->origin, b->prefix, method, token);
    return url;
}

int sl_url_match(const sl_url_base *b, const char *path, const char **method, size_t *method_len,
                 const char **token, size_t *token_len)
{
    if (!b || !b->prefix || !path || strncmp(path, b->prefix, b->prefix_len) != 0)
        return SL_ERR_NOTFOUND;
    const char *m = path + b->prefix_len;
    const char *slash = m;
    while (*slash && *slash != '/' && *slash != '?')
        slash++;
    if (*slash != '/' || method_index(m, (size_t)(slash - m)) < 0)
        return SL_ERR_NOTFOUND;
    const char *t = slash + 1;
    size_t tl = token_span(t);
    if (tl == 0 || tl > SL_URL_MAX_TOKEN || (t[tl] != '\0' && t[tl] != '?'))
        return SL_ERR_NOTFOUND;
    if (method)
        *method = m;
    if (method_len)
        *method_len = (size_t)(slash - m);
    if (token)
        *token = t;
    if (token_len)
        *token_len = tl;
    return SL_OK;
}
