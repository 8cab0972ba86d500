#include "query.h"

#include <stdlib.h>
#include <string.h>

#include "pct.h"

static int parse(sl_query *q, const char *s);

int sl_query_parse(sl_query *q, const char *s)
{
    if (parse(q, s) == 0)
        return 0;
    sl_query_fini(q);
    return -1;
}

static int parse(sl_query *q, const char *s)
{
    memset(q, 0, sizeof(*q));
    if (!s || !*s)
        return 0;
    size_t len = strlen(s);
    q->buf = malloc(len + 2 * SL_QUERY_MAX_PARAMS + 2);
    if (!q->buf)
        return -1;
    char *d = q->buf;
    const char *p = s;
    while (*p) {
        const char *amp = strchr(p, '&');
        size_t plen = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', plen);
        size_t klen = eq ? (size_t)(eq - p) : plen;
        if (plen > 0) {
            if (q->n == SL_QUERY_MAX_PARAMS)
                return -1;
            long kn = sl_pct_decode(p, klen, d, klen + 1, SL_PCT_STRICT | SL_PCT_PLUS_SPACE);
            if (kn < 0)
                return -1;
            q->key[q->n] = d;
            d += kn + 1;
            size_t vlen = eq ? plen - klen - 1 : 0;
            long vn = sl_pct_decode(eq ? eq + 1 : "", vlen, d, vlen + 1,
                                    SL_PCT_STRICT | SL_PCT_PLUS_SPACE);
            if (vn < 0)
                return -1;
            q->val[q->n++] = d;
            d += vn + 1;
        }
        p += plen + (amp ? 1 : 0);
    }
    return 0;
}

void sl_query_fini(sl_query *q)
{
    free(q->buf);
    q->buf = NULL;
}

const char *sl_query_get(const sl_query *q, const char *key, const char *def)
{
    for (size_t i = 0; i < q->n; i++)
        if (!strcmp(q->key[i], key))
            return q->val[i];
    return def;
}

size_t sl_query_all(const sl_query *q, const char *key, const char **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < q->n && n < max; i++)
        if (!strcmp(q->key[i], key))
            out[n++] = q->val[i];
    return n;
}

bool sl_query_bool(const sl_query *q, const char *key)
{
    const char *v = sl_query_get(q, key, "");
    return !strcmp(v, "1") || !strcmp(v, "true");
}
