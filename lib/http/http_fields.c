/* Header-field collection for the http-parser callbacks (see http_fields.h). */
#include "http/http_fields.h"

#include <stdlib.h>
#include <string.h>

#include "http/http_head.h"

int sl_http_str_append(char **s, size_t *len, size_t *cap, const char *at, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t ncap = *cap ? *cap : 64;
        while (ncap < *len + n + 1)
            ncap *= 2;
        char *ns = realloc(*s, ncap);
        if (!ns)
            return -1;
        *s = ns;
        *cap = ncap;
    }
    if (n)
        memcpy(*s + *len, at, n);
    *len += n;
    (*s)[*len] = '\0';
    return 0;
}

char *sl_http_dup_range(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        if (n)
            memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static int append(sl_http_fields *f, const char *at, size_t n)
{
    if (sl_http_str_append(&f->cur, &f->cur_len, &f->cur_cap, at, n) < 0)
        return SL_HTTP_FIELDS_NOMEM;
    return 0;
}

/* The name in f->cur becomes a new header slot (value still to come). */
static int commit_name(sl_http_fields *f, sl_http_header **hs, size_t *nh)
{
    if (*nh == f->cap_headers) {
        size_t ncap = f->cap_headers ? 2 * f->cap_headers : 16;
        sl_http_header *grown = realloc(*hs, ncap * sizeof(*grown));
        if (!grown)
            return SL_HTTP_FIELDS_NOMEM;
        *hs = grown;
        f->cap_headers = ncap;
    }
    sl_http_header *h = &(*hs)[*nh];
    h->name = sl_http_dup_range(f->cur ? f->cur : "", f->cur_len);
    h->value = NULL;
    if (!h->name)
        return SL_HTTP_FIELDS_NOMEM;
    (*nh)++;
    f->cur_len = 0;
    return 0;
}

/* The value in f->cur, trailing blanks trimmed, goes to the last header. */
static int commit_value(sl_http_fields *f, sl_http_header *hs, size_t nh)
{
    size_t n = f->cur_len;
    while (n > 0 && is_blank(f->cur[n - 1]))
        n--;
    char *v = sl_http_dup_range(f->cur ? f->cur : "", n);
    if (!v)
        return SL_HTTP_FIELDS_NOMEM;
    hs[nh - 1].value = v;
    f->cur_len = 0;
    return 0;
}

int sl_http_fields_name(sl_http_fields *f, sl_http_header **hs, size_t *nh, uint32_t max,
                        const char *at, size_t len)
{
    if (f->collect == SL_HTTP_COLLECT_VALUE && commit_value(f, *hs, *nh) < 0)
        return SL_HTTP_FIELDS_NOMEM;
    if (f->collect != SL_HTTP_COLLECT_FIELD) {
        if (*nh >= max)
            return SL_HTTP_FIELDS_TOO_MANY;
        f->collect = SL_HTTP_COLLECT_FIELD;
        f->cur_len = 0;
    }
    return append(f, at, len);
}

/* A value piece that does not simply continue the previous one across a
 * read boundary follows an obsolete line fold; RFC 9112 §5.2 lets us
 * replace the fold with one space. */
int sl_http_fields_value(sl_http_fields *f, sl_http_header **hs, size_t *nh, const char *at,
                         size_t len)
{
    if (f->collect == SL_HTTP_COLLECT_FIELD) {
        if (commit_name(f, hs, nh) < 0)
            return SL_HTTP_FIELDS_NOMEM;
        f->collect = SL_HTTP_COLLECT_VALUE;
        f->skip_ws = 1;
    } else if (!(f->value_at_end && at == f->chunk)) {
        if (append(f, " ", 1) < 0)
            return SL_HTTP_FIELDS_NOMEM;
        f->skip_ws = 1;
    }
    f->value_at_end = (at + len == f->chunk + f->chunk_len);
    while (f->skip_ws && len > 0 && is_blank(*at)) {
        at++;
        len--;
    }
    if (len > 0)
        f->skip_ws = 0;
    return append(f, at, len);
}

int sl_http_fields_end(sl_http_fields *f, sl_http_header *hs, size_t nh)
{
    if (f->collect == SL_HTTP_COLLECT_FIELD)
        return SL_HTTP_FIELDS_NO_VALUE;
    if (f->collect == SL_HTTP_COLLECT_VALUE && commit_value(f, hs, nh) < 0)
        return SL_HTTP_FIELDS_NOMEM;
    f->collect = SL_HTTP_COLLECT_DONE;
    return 0;
}

void sl_http_headers_clear(sl_http_header *hs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(hs[i].name);
        free(hs[i].value);
    }
}

void sl_http_fields_fini(sl_http_fields *f)
{
    free(f->cur);
    f->cur = NULL;
    f->cur_len = f->cur_cap = 0;
}
