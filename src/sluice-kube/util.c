/* Query strings, times and durations as the apiserver reads and prints them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "kube.h"
#include "pct.h"

static int add_param(sk_query *q, const char *s, size_t len)
{
    if (len == 0)
        return 0;
    if (q->n >= SK_MAX_QUERY_PARAMS)
        return -1;
    const char *eq = memchr(s, '=', len);
    size_t klen = eq ? (size_t)(eq - s) : len;
    char *k = sl_pct_decode_dup(s, klen, SL_PCT_STRICT | SL_PCT_PLUS_SPACE);
    char *v = eq ? sl_pct_decode_dup(eq + 1, len - klen - 1, SL_PCT_STRICT | SL_PCT_PLUS_SPACE)
                 : strdup("");
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    q->p[q->n].key = k;
    q->p[q->n].value = v;
    q->n++;
    return 0;
}

int sk_query_parse(const char *qs, sk_query *out)
{
    out->n = 0;
    out->p = calloc(SK_MAX_QUERY_PARAMS, sizeof(*out->p));
    if (!out->p)
        return -1;
    if (!qs)
        return 0;
    const char *s = qs;
    for (;;) {
        const char *amp = strchr(s, '&');
        size_t len = amp ? (size_t)(amp - s) : strlen(s);
        if (add_param(out, s, len) < 0) {
            sk_query_free(out);
            return -1;
        }
        if (!amp)
            return 0;
        s = amp + 1;
    }
}

void sk_query_free(sk_query *q)
{
    for (size_t i = 0; i < q->n; i++) {
        free(q->p[i].key);
        free(q->p[i].value);
    }
    free(q->p);
    q->p = NULL;
    q->n = 0;
}

const char *sk_query_get(const sk_query *q, const char *key)
{
    for (size_t i = 0; i < q->n; i++)
        if (strcmp(q->p[i].key, key) == 0)
            return q->p[i].value;
    return NULL;
}

int sk_query_bool(const sk_query *q, const char *key, bool def, bool *out)
{
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
    const char *v = sk_query_get(q, key);
    *out = def;
    if (!v)
        return 0;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcmp(v, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcmp(v, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

int64_t sk_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void sk_time_rfc3339(int64_t ns, char out[32])
{
    time_t t = (time_t)(ns / 1000000000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The rules of apimachinery's duration.HumanDuration. */
void sk_age(int64_t ns, char out[32])
{
    int64_t s = (sk_now_ns() - ns) / 1000000000;
    if (ns <= 0) {
        snprintf(out, 32, "<unknown>");
        return;
    }
    if (s < 0)
        s = 0;
    int64_t m = s / 60, h = s / 3600, d = h / 24, y = d / 365;
    if (s < 120)
        snprintf(out, 32, "%llds", (long long)s);
    else if (m < 10 && s % 60)
        snprintf(out, 32, "%lldm%llds", (long long)m, (long long)(s % 60));
    else if (m < 180)
        snprintf(out, 32, "%lldm", (long long)m);
    else if (h < 8 && m % 60)
        snprintf(out, 32, "%lldh%lldm", (long long)h, (long long)(m % 60));
    else if (h < 48)
        snprintf(out, 32, "%lldh", (long long)h);
    else if (h < 192 && h % 24)
        snprintf(out, 32, "%lldd%lldh", (long long)d, (long long)(h % 24));
    else if (d < 730)
        snprintf(out, 32, "%lldd", (long long)d);
    else if (y < 8 && d % 365)
        snprintf(out, 32, "%lldy%lldd", (long long)y, (long long)(d % 365));
    else
        snprintf(out, 32, "%lldy", (long long)y);
}
