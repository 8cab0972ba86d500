/* HTTP/1.1 response parser for the client side of an upgrade (I/O free,
 * built on http-parser).
 *
 * Feed the bytes read after sending the request with sl_http_resp_feed()
 * until the state is DONE or ERROR:
 *   - a 101 response is DONE at the end of its head; the bytes after it
 *     (frames of the upgraded protocol) stay with the caller;
 *   - any other final response is DONE once its body is complete
 *     (Content-Length, chunked, or the connection's end: call
 *     sl_http_resp_eof()), or once max_body bytes of it were kept
 *     (body_truncated; the caller stops reading, the rest is never needed);
 *   - interim responses (100, 102, 103) are skipped.
 * Named limits bound the head and the kept body. */
#ifndef SL_HTTP_RESP_H
#define SL_HTTP_RESP_H

#include <stddef.h>
#include <stdint.h>
#include <http_parser.h>

#include "http/http_head.h"

#define SL_HTTP_RESP_MAX_HEADERS 64u
#define SL_HTTP_RESP_MAX_HEAD_SIZE 16384u /* status line and headers, CRLFCRLF included */
#define SL_HTTP_RESP_MAX_BODY 65536u      /* bytes of an error body kept */

typedef struct sl_http_resp_limits {
    uint32_t max_headers;   /* header fields of one response */
    uint32_t max_head_size; /* bytes of all heads fed, interim ones included */
    uint32_t max_body;      /* body bytes kept */
} sl_http_resp_limits;

typedef struct sl_http_response {
    int status;   /* 100..999 */
    char *reason; /* reason phrase, may be "" */
    sl_http_header *headers;
    size_t nheaders;
    unsigned short http_major, http_minor;
    uint8_t *body; /* NUL-terminated copy of the kept body (NULL if none) */
    size_t body_len;
    int body_truncated; /* the body had more than max_body bytes */
} sl_http_response;

typedef enum sl_http_resp_state {
    SL_HTTP_RESP_MORE = 0,  /* need more bytes (or the connection's end) */
    SL_HTTP_RESP_DONE = 1,  /* response complete in p->resp */
    SL_HTTP_RESP_ERROR = 2, /* malformed or over a limit: p->err_text */
} sl_http_resp_state;

typedef struct sl_http_resp_parser {
    http_parser hp; /* first member: the callbacks find the parser from it */
    http_parser_settings settings;
    sl_http_resp_limits limits;
    sl_http_response resp;
    size_t head_bytes; /* bytes fed while a head was incomplete */
    size_t body_cap;
    sl_http_fields f; /* the reason phrase, then the header fields */
    int in_head;      /* a head is being parsed */
    int head_done;    /* the final response's head is complete */
    int msg_done;     /* the final response is complete */
    sl_http_resp_state state;
    char err_text[160];
} sl_http_resp_parser;

/* limits may be NULL; NULL or a zero field means the SL_HTTP_RESP_MAX_*
 * value. */
void sl_http_resp_init(sl_http_resp_parser *p, const sl_http_resp_limits *limits);
/* Releases the response's memory. */
void sl_http_resp_fini(sl_http_resp_parser *p);

/* Feeds up to len bytes. Returns how many were consumed: all while the
 * state stays MORE; on DONE, the bytes up to the end of the response (for a
 * 101, the rest of buf belongs to the upgraded protocol); on ERROR, how far
 * it got. Calling again after DONE or ERROR consumes nothing. */
size_t sl_http_resp_feed(sl_http_resp_parser *p, const uint8_t *buf, size_t len);

/* The connection ended. Completes a body delimited by the close (DONE);
 * anything else incomplete becomes ERROR. No effect after DONE or ERROR. */
void sl_http_resp_eof(sl_http_resp_parser *p);

/* First header named `name` (case-insensitive), or NULL. */
const char *sl_http_resp_header(const sl_http_response *r, const char *name);
/* True when a comma-separated, trimmed element of a header `name` equals
 * token case-insensitively (Connection: Upgrade). */
int sl_http_resp_has_token(const sl_http_response *r, const char *name, const char *token);
/* True when an element of header `name` contains `needle` case-
 * insensitively (client-go's check of Upgrade: "spdy/3.1"). */
int sl_http_resp_contains(const sl_http_response *r, const char *name, const char *needle);
/* Calls fn for every comma-separated, trimmed element of every header
 * `name`, in order; stops when fn returns non-zero and returns that. */
int sl_http_resp_each(const sl_http_response *r, const char *name,
                      int (*fn)(const char *elem, size_t len, void *arg), void *arg);

#endif
