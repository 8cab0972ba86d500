/* HTTP/1.1 request-head parser on top of http-parser.
 *
 * http-parser does the syntax; this file adds the named limits (checked on
 * the bytes before http-parser sees them, so an endless head is refused at
 * the first byte past a limit), joins the pieces that the callbacks deliver
 * across reads, and stops at the blank line that ends the head, so that the
 * bytes after it (frames of the upgraded protocol) stay with the caller. */
#include "http/http_head.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sluice/server.h"

/* Request-line scan phases (p->rl_phase). */
enum { RL_LEADING = 0, RL_LINE, RL_DONE };

static sl_http_head_parser *parser_of(http_parser *hp)
{
    /* hp is the first member, so this stays right even if the caller moved
     * the struct between feeds (hp->data would not). */
    return (sl_http_head_parser *)(void *)hp;
}

static void set_error(sl_http_head_parser *p, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_error(sl_http_head_parser *p, int status, const char *fmt, ...)
{
    if (p->err_status)
        return; /* keep the first cause */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err_text, sizeof(p->err_text), fmt, ap);
    va_end(ap);
    p->err_status = status;
    p->state = SL_HTTP_HEAD_ERROR;
}

static int set_nomem(sl_http_head_parser *p)
{
    set_error(p, 500, "server out of memory\n");
    return -1;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* The URL is complete once headers start: split it into path and query. */
static int finish_url(sl_http_head_parser *p)
{
    if (p->hp.http_major != 1) {
        set_error(p, 400, "malformed request: unsupported HTTP version\n");
        return -1;
    }
    const char *u = p->url ? p->url : "";
    if (u[0] != '/') {
        set_error(p, 400, "malformed request: request target must be an absolute path\n");
        return -1;
    }
    size_t end = strcspn(u, "#"); /* a fragment is never part of the target */
    size_t plen = strcspn(u, "?#");
    p->req.method = strdup(http_method_str((enum http_method)p->hp.method));
    p->req.path = sl_http_dup_range(u, plen);
    if (plen < end)
        p->req.query = sl_http_dup_range(u + plen + 1, end - plen - 1);
    if (!p->req.method || !p->req.path || (plen < end && !p->req.query))
        return set_nomem(p);
    p->req.http_major = p->hp.http_major;
    p->req.http_minor = p->hp.http_minor;
    return 0;
}

/* Maps a field-collection result to the answer it deserves. */
static int fields_rc(sl_http_head_parser *p, int rc)
{
    if (rc == SL_HTTP_FIELDS_NOMEM)
        return set_nomem(p);
    if (rc == SL_HTTP_FIELDS_TOO_MANY)
        set_error(p, 431, "request has more than %u header fields\n", p->limits.max_headers);
    else if (rc == SL_HTTP_FIELDS_NO_VALUE)
        set_error(p, 400, "malformed request: header field without a value\n");
    return rc < 0 ? -1 : 0;
}

static int on_url(http_parser *hp, const char *at, size_t len)
{
    sl_http_head_parser *p = parser_of(hp);
    if (sl_http_str_append(&p->url, &p->url_len, &p->url_cap, at, len) < 0)
        return set_nomem(p);
    return 0;
}

static int on_header_field(http_parser *hp, const char *at, size_t len)
{
    sl_http_head_parser *p = parser_of(hp);
    if (p->f.collect == SL_HTTP_COLLECT_START && finish_url(p) < 0)
        return -1;
    return fields_rc(p, sl_http_fields_name(&p->f, &p->req.headers, &p->req.nheaders,
                                            p->limits.max_headers, at, len));
}

static int on_header_value(http_parser *hp, const char *at, size_t len)
{
    sl_http_head_parser *p = parser_of(hp);
    return fields_rc(p, sl_http_fields_value(&p->f, &p->req.headers, &p->req.nheaders, at, len));
}

static int on_headers_complete(http_parser *hp)
{
    sl_http_head_parser *p = parser_of(hp);
    if (p->f.collect == SL_HTTP_COLLECT_START && finish_url(p) < 0)
        return -1;
    if (fields_rc(p, sl_http_fields_end(&p->f, p->req.headers, p->req.nheaders)) < 0)
        return -1;
    p->done = 1;
    /* Stop here, upgrade or not: we never read request bodies, and the
     * bytes after the head belong to the caller. */
    http_parser_pause(hp, 1);
    return 0;
}

void sl_http_head_init(sl_http_head_parser *p, const sl_http_limits *limits)
{
    memset(p, 0, sizeof(*p));
    http_parser_init(&p->hp, HTTP_REQUEST);
    http_parser_settings_init(&p->settings);
    p->settings.on_url = on_url;
    p->settings.on_header_field = on_header_field;
    p->settings.on_header_value = on_header_value;
    p->settings.on_headers_complete = on_headers_complete;
    p->limits.max_request_line = SL_DEFAULT_MAX_REQUEST_LINE;
    p->limits.max_headers = SL_DEFAULT_MAX_HEADERS;
    p->limits.max_head_size = SL_DEFAULT_MAX_HEAD_SIZE;
    if (limits && limits->max_request_line)
        p->limits.max_request_line = limits->max_request_line;
    if (limits && limits->max_headers)
        p->limits.max_headers = limits->max_headers;
    if (limits && limits->max_head_size)
        p->limits.max_head_size = limits->max_head_size;
    p->state = SL_HTTP_HEAD_MORE;
}

void sl_http_head_fini(sl_http_head_parser *p)
{
    sl_http_headers_clear(p->req.headers, p->req.nheaders);
    free(p->req.headers);
    free(p->req.method);
    free(p->req.path);
    free(p->req.query);
    free(p->url);
    sl_http_fields_fini(&p->f);
    memset(&p->req, 0, sizeof(p->req));
    p->f.cap_headers = 0;
    p->url = NULL;
    p->url_len = p->url_cap = 0;
}

/* How many of the n bytes at buf fit in the request-line limit. Stops at
 * the first byte past it and sets *over; a CR right at the limit may still
 * be the line's terminator. Leading blank lines are skipped, as
 * http-parser does. */
static size_t scan_request_line(sl_http_head_parser *p, const uint8_t *buf, size_t n, int *over)
{
    size_t max = p->limits.max_request_line;
    for (size_t i = 0; i < n && p->rl_phase != RL_DONE; i++) {
        uint8_t c = buf[i];
        if (p->rl_phase == RL_LEADING) {
            if (c == '\r' || c == '\n')
                continue;
            p->rl_phase = RL_LINE;
        }
        if (c == '\n') {
            p->rl_phase = RL_DONE;
            continue;
        }
        p->rl_len++;
        if (p->rl_len > max && !(p->rl_len == max + 1 && c == '\r')) {
            *over = 1;
            return i;
        }
    }
    return n;
}

/* Runs http-parser over n (> 0) bytes; returns how many belong to the head. */
static size_t run_parser(sl_http_head_parser *p, const uint8_t *buf, size_t n)
{
    p->f.chunk = (const char *)buf;
    p->f.chunk_len = n;
    size_t r = http_parser_execute(&p->hp, &p->settings, p->f.chunk, n);
    enum http_errno e = HTTP_PARSER_ERRNO(&p->hp);
    p->f.chunk = NULL;
    if (p->done) {
        /* Paused while on the head's last byte, which the parser had not
         * counted yet. A non-strict http-parser build takes any byte after
         * the final CR; we want the LF. */
        if (r < n && buf[r] == '\n') {
            p->state = SL_HTTP_HEAD_DONE;
            return r + 1;
        }
        set_error(p, 400, "malformed request: head does not end with CRLF CRLF\n");
        return r;
    }
    if (p->err_status)
        return r;
    if (e != HPE_OK) {
        set_error(p, 400, "malformed request: %s\n", http_errno_description(e));
        return r;
    }
    if (r != n) /* not expected without an error; refuse rather than guess */
        set_error(p, 400, "malformed request: parser stopped early\n");
    return r;
}

size_t sl_http_head_feed(sl_http_head_parser *p, const uint8_t *buf, size_t len)
{
    if (p->state != SL_HTTP_HEAD_MORE || len == 0)
        return 0;
    size_t room = p->limits.max_head_size - p->head_bytes;
    size_t n = len < room ? len : room;
    int rl_over = 0;
    n = scan_request_line(p, buf, n, &rl_over);
    size_t used = n ? run_parser(p, buf, n) : 0;
    p->head_bytes += used;
    if (p->state == SL_HTTP_HEAD_MORE && n < len) {
        if (rl_over)
            set_error(p, 400, "request line exceeds the limit of %u bytes\n",
                      p->limits.max_request_line);
        else
            set_error(p, 431, "request head exceeds the limit of %u bytes\n",
                      p->limits.max_head_size);
    }
    return used;
}

static int name_is(const sl_http_header *h, const char *name)
{
    return h->name && h->value && strcasecmp(h->name, name) == 0;
}

const char *sl_http_header_get(const sl_http_request *r, const char *name)
{
    for (size_t i = 0; i < r->nheaders; i++)
        if (name_is(&r->headers[i], name))
            return r->headers[i].value;
    return NULL;
}

int sl_http_header_each(const sl_http_request *r, const char *name,
                        int (*fn)(const char *elem, size_t len, void *arg), void *arg)
{
    for (size_t i = 0; i < r->nheaders; i++) {
        if (!name_is(&r->headers[i], name))
            continue;
        const char *s = r->headers[i].value;
        while (*s) {
            size_t n = strcspn(s, ",");
            const char *next = s[n] ? s + n + 1 : s + n;
            while (n > 0 && is_blank(*s)) {
                s++;
                n--;
            }
            while (n > 0 && is_blank(s[n - 1]))
                n--;
            if (n > 0) {
                int rc = fn(s, n, arg);
                if (rc)
                    return rc;
            }
            s = next;
        }
    }
    return 0;
}

typedef struct token_match {
    const char *token;
    size_t len;
} token_match;

static int match_token(const char *elem, size_t len, void *arg)
{
    const token_match *m = arg;
    return len == m->len && strncasecmp(elem, m->token, len) == 0;
}

int sl_http_header_has_token(const sl_http_request *r, const char *name, const char *token)
{
    token_match m = {token, strlen(token)};
    return sl_http_header_each(r, name, match_token, &m) != 0;
}
