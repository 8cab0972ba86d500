/* HTTP/1.1 response parser on top of http-parser, for the client side of
 * an upgrade: stops at the end of a 101 head (the rest is the upgraded
 * protocol) and keeps a bounded body of anything else. */
#include "http/http_resp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static sl_http_resp_parser *parser_of(http_parser *hp)
{
    return (sl_http_resp_parser *)(void *)hp; /* hp is the first member */
}

static void set_error(sl_http_resp_parser *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void set_error(sl_http_resp_parser *p, const char *fmt, ...)
{
    if (p->state == SL_HTTP_RESP_ERROR)
        return; /* keep the first cause */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err_text, sizeof(p->err_text), fmt, ap);
    va_end(ap);
    p->state = SL_HTTP_RESP_ERROR;
}

static int nomem(sl_http_resp_parser *p)
{
    set_error(p, "out of memory");
    return -1;
}

/* Forgets an interim (1xx) response before the next one. */
static void clear_response(sl_http_resp_parser *p)
{
    sl_http_headers_clear(p->resp.headers, p->resp.nheaders);
    p->resp.nheaders = 0;
    free(p->resp.reason);
    p->resp.reason = NULL;
    p->resp.status = 0;
    p->f.cur_len = 0;
    p->f.collect = SL_HTTP_COLLECT_START;
}

static int commit_reason(sl_http_resp_parser *p)
{
    p->resp.reason = sl_http_dup_range(p->f.cur ? p->f.cur : "", p->f.cur_len);
    p->f.cur_len = 0;
    return p->resp.reason ? 0 : nomem(p);
}

/* Maps a field-collection result to the error it deserves. */
static int fields_rc(sl_http_resp_parser *p, int rc)
{
    if (rc == SL_HTTP_FIELDS_NOMEM)
        return nomem(p);
    if (rc == SL_HTTP_FIELDS_TOO_MANY)
        set_error(p, "response has more than %u header fields", p->limits.max_headers);
    else if (rc == SL_HTTP_FIELDS_NO_VALUE)
        set_error(p, "malformed response: header field without a value");
    return rc < 0 ? -1 : 0;
}

static int on_message_begin(http_parser *hp)
{
    sl_http_resp_parser *p = parser_of(hp);
    clear_response(p);
    p->in_head = 1;
    return 0;
}

static int on_status(http_parser *hp, const char *at, size_t len)
{
    sl_http_resp_parser *p = parser_of(hp);
    if (sl_http_str_append(&p->f.cur, &p->f.cur_len, &p->f.cur_cap, at, len) < 0)
        return nomem(p);
    return 0;
}

static int on_header_field(http_parser *hp, const char *at, size_t len)
{
    sl_http_resp_parser *p = parser_of(hp);
    if (p->head_done)
        return 0; /* trailers of a chunked body: not needed */
    if (p->f.collect == SL_HTTP_COLLECT_START && commit_reason(p) < 0)
        return -1;
    return fields_rc(p, sl_http_fields_name(&p->f, &p->resp.headers, &p->resp.nheaders,
                                            p->limits.max_headers, at, len));
}

static int on_header_value(http_parser *hp, const char *at, size_t len)
{
    sl_http_resp_parser *p = parser_of(hp);
    if (p->head_done)
        return 0;
    return fields_rc(p, sl_http_fields_value(&p->f, &p->resp.headers, &p->resp.nheaders, at, len));
}

static int is_interim(int status)
{
    return status >= 100 && status < 200 && status != 101;
}

static int on_headers_complete(http_parser *hp)
{
    sl_http_resp_parser *p = parser_of(hp);
    if (p->f.collect == SL_HTTP_COLLECT_START && commit_reason(p) < 0)
        return -1;
    if (fields_rc(p, sl_http_fields_end(&p->f, p->resp.headers, p->resp.nheaders)) < 0)
        return -1;
    if (hp->http_major != 1) {
        set_error(p, "malformed response: unsupported HTTP version %u.%u", hp->http_major,
                  hp->http_minor);
        return -1;
    }
    if (hp->status_code < 100 || hp->status_code > 999) { /* http-parser takes "10" */
        set_error(p, "malformed response: invalid status code %u", hp->status_code);
        return -1;
    }
    p->resp.status = hp->status_code;
    p->resp.http_major = hp->http_major;
    p->resp.http_minor = hp->http_minor;
    p->in_head = 0;
    if (is_interim(p->resp.status))
        return 0; /* no body; the final response follows */
    p->head_done = 1;
    if (p->resp.status == 101) {
        /* Whatever http-parser thinks of the headers, the next byte belongs
         * to the upgraded protocol (the caller checks the headers). */
        p->msg_done = 1;
        http_parser_pause(hp, 1);
    }
    return 0;
}

static int on_body(http_parser *hp, const char *at, size_t len)
{
    sl_http_resp_parser *p = parser_of(hp);
    size_t room = p->limits.max_body - p->resp.body_len;
    size_t n = len < room ? len : room;
    if (p->resp.body_len + n + 1 > p->body_cap) {
        size_t ncap = p->body_cap ? p->body_cap : 256;
        while (ncap < p->resp.body_len + n + 1)
            ncap *= 2;
        uint8_t *nb = realloc(p->resp.body, ncap);
        if (!nb)
            return nomem(p);
        p->resp.body = nb;
        p->body_cap = ncap;
    }
    memcpy(p->resp.body + p->resp.body_len, at, n);
    p->resp.body_len += n;
    p->resp.body[p->resp.body_len] = '\0';
    if (n < len) { /* over the limit: what we have is enough to report */
        p->resp.body_truncated = 1;
        p->msg_done = 1;
        http_parser_pause(hp, 1);
    }
    return 0;
}

static int on_message_complete(http_parser *hp)
{
    sl_http_resp_parser *p = parser_of(hp);
    if (!p->head_done)
        return 0; /* an interim response ended; on_message_begin clears it */
    p->msg_done = 1;
    http_parser_pause(hp, 1);
    return 0;
}

void sl_http_resp_init(sl_http_resp_parser *p, const sl_http_resp_limits *limits)
{
    memset(p, 0, sizeof(*p));
    http_parser_init(&p->hp, HTTP_RESPONSE);
    http_parser_settings_init(&p->settings);
    p->settings.on_message_begin = on_message_begin;
    p->settings.on_status = on_status;
    p->settings.on_header_field = on_header_field;
    p->settings.on_header_value = on_header_value;
    p->settings.on_headers_complete = on_headers_complete;
    p->settings.on_body = on_body;
    p->settings.on_message_complete = on_message_complete;
    p->limits.max_headers = SL_HTTP_RESP_MAX_HEADERS;
    p->limits.max_head_size = SL_HTTP_RESP_MAX_HEAD_SIZE;
    p->limits.max_body = SL_HTTP_RESP_MAX_BODY;
    if (limits && limits->max_headers)
        p->limits.max_headers = limits->max_headers;
    if (limits && limits->max_head_size)
        p->limits.max_head_size = limits->max_head_size;
    if (limits && limits->max_body)
        p->limits.max_body = limits->max_body;
    p->state = SL_HTTP_RESP_MORE;
}

void sl_http_resp_fini(sl_http_resp_parser *p)
{
    clear_response(p);
    free(p->resp.headers);
    free(p->resp.body);
    sl_http_fields_fini(&p->f);
    memset(&p->resp, 0, sizeof(p->resp));
    p->f.cap_headers = p->body_cap = 0;
}

/* Runs http-parser over n bytes; returns how many belong to the response. */
static size_t run_parser(sl_http_resp_parser *p, const uint8_t *buf, size_t n)
{
    p->f.chunk = (const char *)buf;
    p->f.chunk_len = n;
    size_t r = http_parser_execute(&p->hp, &p->settings, p->f.chunk, n);
    enum http_errno e = HTTP_PARSER_ERRNO(&p->hp);
    p->f.chunk = NULL;
    if (p->state == SL_HTTP_RESP_ERROR)
        return r;
    if (p->msg_done && p->resp.status == 101) {
        /* Paused on the head's last byte, not yet counted; a non-strict
         * http-parser takes any byte after the final CR, we want the LF. */
        if (r < n && buf[r] == '\n') {
            p->state = SL_HTTP_RESP_DONE;
            return r + 1;
        }
        set_error(p, "malformed response: head does not end with CRLF CRLF");
        return r;
    }
    if (p->msg_done) {
        p->state = SL_HTTP_RESP_DONE;
        return r;
    }
    if (e != HPE_OK) {
        set_error(p, "malformed response: %s", http_errno_description(e));
        return r;
    }
    if (r != n)
        set_error(p, "malformed response: parser stopped early");
    return r;
}

size_t sl_http_resp_feed(sl_http_resp_parser *p, const uint8_t *buf, size_t len)
{
    size_t used = 0;
    while (p->state == SL_HTTP_RESP_MORE && used < len) {
        size_t n = len - used;
        if (!p->head_done) {
            size_t room = p->limits.max_head_size - p->head_bytes;
            if (room == 0) {
                set_error(p, "response head exceeds the limit of %u bytes",
                          p->limits.max_head_size);
                break;
            }
            if (n > room)
                n = room;
        }
        int counting = !p->head_done;
        size_t r = run_parser(p, buf + used, n);
        if (counting)
            p->head_bytes += r;
        used += r;
        if (r == 0 && p->state == SL_HTTP_RESP_MORE)
            break; /* cannot happen without an error; never spin */
    }
    return used;
}

void sl_http_resp_eof(sl_http_resp_parser *p)
{
    if (p->state != SL_HTTP_RESP_MORE)
        return;
    if (!p->in_head && !p->head_done) {
        set_error(p, "connection closed without a response");
        return;
    }
    http_parser_execute(&p->hp, &p->settings, NULL, 0);
    if (p->state == SL_HTTP_RESP_ERROR)
        return;
    if (p->msg_done)
        p->state = SL_HTTP_RESP_DONE;
    else
        set_error(p, "connection closed before the response was complete");
}

/* The header helpers of http_head.h work on any header array. */
static sl_http_request view_of(const sl_http_response *r)
{
    sl_http_request v;
    memset(&v, 0, sizeof(v));
    v.headers = r->headers;
    v.nheaders = r->nheaders;
    return v;
}

const char *sl_http_resp_header(const sl_http_response *r, const char *name)
{
    sl_http_request v = view_of(r);
    return sl_http_header_get(&v, name);
}

int sl_http_resp_has_token(const sl_http_response *r, const char *name, const char *token)
{
    sl_http_request v = view_of(r);
    return sl_http_header_has_token(&v, name, token);
}

int sl_http_resp_each(const sl_http_response *r, const char *name,
                      int (*fn)(const char *elem, size_t len, void *arg), void *arg)
{
    sl_http_request v = view_of(r);
    return sl_http_header_each(&v, name, fn, arg);
}

static int contains_ci(const char *elem, size_t len, void *arg)
{
    const char *needle = arg;
    size_t n = strlen(needle);
    for (size_t i = 0; n <= len && i <= len - n; i++)
        if (strncasecmp(elem + i, needle, n) == 0)
            return 1;
    return 0;
}

int sl_http_resp_contains(const sl_http_response *r, const char *name, const char *needle)
{
    return sl_http_resp_each(r, name, contains_ci, (void *)needle);
}
