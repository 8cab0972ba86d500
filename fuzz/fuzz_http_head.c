/* Fuzz target for the HTTP request-head parser: the input is fed in two
 * parts cut at data[0] (mod size), then the invariants are checked. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "http/http_head.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        __builtin_trap();
}

static void check_done(const sl_http_head_parser *p)
{
    const sl_http_request *r = &p->req;
    check(r->method != NULL && r->path != NULL && r->path[0] == '/');
    check(r->http_major == 1);
    check(r->nheaders <= p->limits.max_headers);
    check(strchr(r->path, '?') == NULL);
    for (size_t i = 0; i < r->nheaders; i++) {
        const char *v = r->headers[i].value;
        check(r->headers[i].name != NULL && v != NULL);
        size_t n = strlen(v);
        check(n == 0 || (v[0] != ' ' && v[0] != '\t' && v[n - 1] != ' ' && v[n - 1] != '\t'));
        check(sl_http_header_get(r, r->headers[i].name) != NULL);
        check(sl_http_header_has_token(r, r->headers[i].name, "upgrade") >= 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sl_http_head_parser p;
    sl_http_head_init(&p, NULL);
    size_t cut = size ? data[0] % size : 0;
    size_t used = sl_http_head_feed(&p, data, cut);
    check(used <= cut);
    check(p.state != SL_HTTP_HEAD_MORE || used == cut);
    if (p.state == SL_HTTP_HEAD_MORE) {
        size_t more = sl_http_head_feed(&p, data + cut, size - cut);
        check(more <= size - cut);
        check(p.state != SL_HTTP_HEAD_MORE || more == size - cut);
        used += more;
    }
    check(p.head_bytes == used && used <= p.limits.max_head_size);
    if (p.state == SL_HTTP_HEAD_DONE)
        check_done(&p);
    if (p.state == SL_HTTP_HEAD_ERROR)
        check(p.err_status >= 400 && p.err_text[0] != '\0');
    /* a finished parser takes nothing more */
    sl_http_head_state before = p.state;
    size_t again = sl_http_head_feed(&p, data, size);
    check(before == SL_HTTP_HEAD_MORE || (again == 0 && p.state == before));
    sl_http_head_fini(&p);
    return 0;
}
