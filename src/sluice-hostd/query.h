/* URL query strings: "a=1&b=x+y&b=%2F" split and percent-decoded. */
#ifndef SLUICE_HOSTD_QUERY_H
#define SLUICE_HOSTD_QUERY_H

#include <stdbool.h>
#include <stddef.h>

#define SL_QUERY_MAX_PARAMS 512

typedef struct sl_query {
    char *buf; /* decoded copy: "key\0value\0..." */
    const char *key[SL_QUERY_MAX_PARAMS];
    const char *val[SL_QUERY_MAX_PARAMS];
    size_t n;
} sl_query;

/* Parses q (NULL = empty). Returns 0, or -1 for malformed escapes, too
 * many parameters, or ENOMEM. */
int sl_query_parse(sl_query *q, const char *s);
void sl_query_fini(sl_query *q);
/* First value of key, or def. */
const char *sl_query_get(const sl_query *q, const char *key, const char *def);
/* Every value of key, in order, at most max; returns how many. */
size_t sl_query_all(const sl_query *q, const char *key, const char **out, size_t max);
/* "1" or "true" (Kubernetes style) means true. */
bool sl_query_bool(const sl_query *q, const char *key);

#endif
