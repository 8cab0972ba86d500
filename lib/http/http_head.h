/* HTTP/1.1 request-head parser (I/O free, built on http-parser).
 *
 * Feed bytes with sl_http_head_feed() until it reports SL_HTTP_HEAD_DONE;
 * the bytes after the head (already-sent protocol frames) stay with the
 * caller. Named limits bound the request line, the header count and the
 * whole head; a violation yields the HTTP status and a body naming the limit. */
#ifndef SL_HTTP_HEAD_H
#define SL_HTTP_HEAD_H

#include <stddef.h>
#include <stdint.h>
#include <http_parser.h>

#include "http/http_fields.h"

typedef struct sl_http_limits {
    uint32_t max_request_line; /* bytes of "METHOD URL HTTP/1.1" */
    uint32_t max_headers;      /* number of header fields */
    uint32_t max_head_size;    /* bytes of the whole head, CRLFCRLF included */
} sl_http_limits;

struct sl_http_header {
    char *name;  /* as sent; compare case-insensitively */
    char *value; /* leading/trailing spaces trimmed */
};

typedef struct sl_http_request {
    char *method; /* "GET", "POST", ... */
    char *path;   /* URL path, without query; percent-encoding kept */
    char *query;  /* text after '?', or NULL */
    sl_http_header *headers;
    size_t nheaders;
    unsigned short http_major, http_minor;
} sl_http_request;

typedef enum sl_http_head_state {
    SL_HTTP_HEAD_MORE = 0, /* need more bytes */
    SL_HTTP_HEAD_DONE = 1, /* request complete in p->req */
    SL_HTTP_HEAD_ERROR = 2 /* see p->err_status / p->err_text */
} sl_http_head_state;

typedef struct sl_http_head_parser {
    http_parser hp;
    http_parser_settings settings;
    sl_http_limits limits;
    sl_http_request req;
    size_t head_bytes; /* consumed so far */
    char *url;         /* raw URL being collected */
    size_t url_len;
    size_t url_cap;
    sl_http_fields f; /* the header fields being collected */
    int rl_phase;     /* request-line scan: 0 leading blank lines, 1 in line, 2 done */
    size_t rl_len;    /* bytes of the request line seen so far */
    int done;
    sl_http_head_state state;
    int err_status;     /* 400 or 431; 500 when out of memory */
    char err_text[160]; /* body text: which limit or what is malformed */
} sl_http_head_parser;

/* limits may be NULL; NULL or a zero field means the SL_DEFAULT_MAX_* value
 * of include/sluice/server.h. */
void sl_http_head_init(sl_http_head_parser *p, const sl_http_limits *limits);
/* Releases the request's memory. */
void sl_http_head_fini(sl_http_head_parser *p);

/* Feeds up to len bytes. Returns the number consumed: all of them while the
 * state stays MORE; on DONE, the length of the head's remainder consumed (the
 * rest of buf is not part of the head); on ERROR, how far it got. The state
 * is in p->state. Calling again after DONE or ERROR consumes nothing. */
size_t sl_http_head_feed(sl_http_head_parser *p, const uint8_t *buf, size_t len);

/* First header named `name` (case-insensitive), or NULL. */
const char *sl_http_header_get(const sl_http_request *r, const char *name);
/* True when header `name` is present and one of its comma-separated,
 * trimmed tokens equals `token` case-insensitively (e.g. Connection: Upgrade). */
int sl_http_header_has_token(const sl_http_request *r, const char *name, const char *token);
/* Calls fn for every comma-separated, trimmed element of every header named
 * `name`, in order; stops early when fn returns non-zero (and returns it). */
int sl_http_header_each(const sl_http_request *r, const char *name,
                        int (*fn)(const char *elem, size_t len, void *arg), void *arg);

#endif
