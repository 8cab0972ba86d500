/* Header-field collection shared by the request and response parsers.
 *
 * http-parser hands a head's names and values over in pieces (split across
 * reads, and around an obsolete line fold); this joins them into an
 * sl_http_header array. The arrays live in the public request/response
 * structs, so they are passed in on each call rather than pointed to (a
 * parser may be moved between feeds). */
#ifndef SL_HTTP_FIELDS_H
#define SL_HTTP_FIELDS_H

#include <stddef.h>
#include <stdint.h>

/* Defined in http_head.h, which includes this file. */
typedef struct sl_http_header sl_http_header;

/* What the http-parser callbacks are collecting (sl_http_fields.collect). */
enum {
    SL_HTTP_COLLECT_START = 0, /* the request URL or the response reason */
    SL_HTTP_COLLECT_FIELD,
    SL_HTTP_COLLECT_VALUE,
    SL_HTTP_COLLECT_DONE,
};

/* Results besides 0; the parser turns them into its own error answer. */
#define SL_HTTP_FIELDS_NOMEM (-1)
#define SL_HTTP_FIELDS_TOO_MANY (-2) /* over max_headers */
#define SL_HTTP_FIELDS_NO_VALUE (-3) /* the head ended after a bare name */

typedef struct sl_http_fields {
    char *cur; /* the start line's text, a header name or value being collected */
    size_t cur_len;
    size_t cur_cap;
    size_t cap_headers; /* allocated header slots */
    int collect;        /* SL_HTTP_COLLECT_* */
    int value_at_end;   /* last value piece ended at the end of its chunk */
    int skip_ws;        /* drop leading blanks of the next value bytes */
    const char *chunk;  /* bytes being parsed now (for obs-fold detection) */
    size_t chunk_len;
} sl_http_fields;

/* Appends n bytes to a NUL-terminated growable string; 0 or -1 (no memory). */
int sl_http_str_append(char **s, size_t *len, size_t *cap, const char *at, size_t n);
/* A NUL-terminated copy of n bytes, or NULL. */
char *sl_http_dup_range(const char *s, size_t n);

/* A piece of a header name: ends the previous value, and starts a new field
 * unless max fields are there already. Returns 0 or SL_HTTP_FIELDS_*. */
int sl_http_fields_name(sl_http_fields *f, sl_http_header **hs, size_t *nh, uint32_t max,
                        const char *at, size_t len);
/* A piece of a header value (leading blanks dropped, an obs-fold becomes
 * one space). Returns 0 or SL_HTTP_FIELDS_NOMEM. */
int sl_http_fields_value(sl_http_fields *f, sl_http_header **hs, size_t *nh, const char *at,
                         size_t len);
/* The head's fields are complete: commits the last value (trailing blanks
 * trimmed). Returns 0 or SL_HTTP_FIELDS_*. */
int sl_http_fields_end(sl_http_fields *f, sl_http_header *hs, size_t nh);

/* Frees the names and values of n headers (not the array). */
void sl_http_headers_clear(sl_http_header *hs, size_t n);
/* Frees the collection buffer. */
void sl_http_fields_fini(sl_http_fields *f);

#endif
