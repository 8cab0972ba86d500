/* --since values as crictl reads them (docker's GetTimestamp): a Go
 * duration back from now (whole seconds, as docker keeps them), an RFC
 * 3339 date or time with optional zone (local time without one), or Unix
 * seconds with an optional fraction. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cri_log.h"
#include "ctl.h"

#define NS_PER_S 1000000000LL

static int unit_ns(const char *u, size_t n, double *ns)
{
    static const struct {
        const char *name;
        double ns;
    } units[] = {{"ns", 1},   {"us", 1e3}, {"\xc2\xb5s", 1e3}, {"\xce\xbcs", 1e3},
                 {"ms", 1e6}, {"s", 1e9},  {"m", 60e9},        {"h", 3600e9}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strlen(units[i].name) == n && !strncmp(u, units[i].name, n)) {
            *ns = units[i].ns;
            return 0;
        }
    return -1;
}

/* A Go duration ("1h30m", "-2.5s"); every number needs a unit. */
static int go_duration(const char *s, double *ns)
{
    double sign = 1, total = 0;
    if (*s == '-' || *s == '+')
        sign = *s++ == '-' ? -1 : 1;
    if (!*s)
        return -1;
    while (*s) {
        char *end;
        if (!isdigit((unsigned char)*s) && *s != '.')
            return -1;
        double v = strtod(s, &end);
        size_t n = 0;
        while (end[n] && !isdigit((unsigned char)end[n]) && end[n] != '.')
            n++;
        double mul;
        if (end == s || n == 0 || unit_ns(end, n, &mul) < 0)
            return -1;
        total += v * mul;
        s = end + n;
    }
    *ns = sign * total;
    return 0;
}

/* Two digits at s into *v. */
static bool two(const char *s, int *v)
{
    if (!isdigit((unsigned char)s[0]) || !isdigit((unsigned char)s[1]))
        return false;
    *v = (s[0] - '0') * 10 + (s[1] - '0');
    return true;
}

/* "[THH[:MM[:SS[.F]]]]" at *p into tm and frac; false when malformed. */
static bool clock_part(const char **p, struct tm *tm, int64_t *frac)
{
    const char *s = *p;
    if (*s != 'T' && *s != 't')
        return true;
    if (!two(s + 1, &tm->tm_hour))
        return false;
    s += 3;
    if (*s == ':' && two(s + 1, &tm->tm_min))
        s += 3;
    if (*s == ':' && two(s + 1, &tm->tm_sec))
        s += 3;
    if (*s == '.') {
        int n = 0;
        for (s++; isdigit((unsigned char)*s); s++, n++)
            if (n < 9)
                *frac = *frac * 10 + (*s - '0');
        for (; n < 9; n++)
            *frac *= 10;
    }
    *p = s;
    return true;
}

/* "Z" or "±HH:MM" (seconds east in *off) or nothing (local: *local). */
static bool zone_part(const char *s, int *off, bool *local)
{
    int h, m;
    *local = !*s;
    *off = 0;
    if (!*s || ((*s == 'Z' || *s == 'z') && !s[1]))
        return true;
    if ((*s != '+' && *s != '-') || !two(s + 1, &h) || s[3] != ':' || !two(s + 4, &m) || s[6])
        return false;
    *off = (*s == '-' ? -1 : 1) * (h * 3600 + m * 60);
    return true;
}

static int date_time(const char *s, int64_t *ns)
{
    struct tm tm = {0};
    int64_t frac = 0;
    int y = 0, off;
    bool local;
    for (int i = 0; i < 4; i++, s++) {
        if (!isdigit((unsigned char)*s))
            return -1;
        y = y * 10 + (*s - '0');
    }
    if (*s != '-' || !two(s + 1, &tm.tm_mon) || s[3] != '-' || !two(s + 4, &tm.tm_mday))
        return -1;
    s += 6;
    if (!clock_part(&s, &tm, &frac) || !zone_part(s, &off, &local) || tm.tm_mon < 1 ||
        tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
        tm.tm_sec > 60)
        return -1;
    int64_t secs;
    if (local) {
        tm.tm_year = y - 1900, tm.tm_mon -= 1, tm.tm_isdst = -1;
        secs = (int64_t)mktime(&tm);
    } else {
        secs =
            sl_cri_civil_seconds(y, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec) - off;
    }
    *ns = secs * NS_PER_S + frac;
    return 0;
}

/* "1700000000" or "1700000000.5" */
static int unix_seconds(const char *s, int64_t *ns)
{
    char *end;
    long long sec = strtoll(s, &end, 10);
    int64_t frac = 0;
    if (end == s || !isdigit((unsigned char)*s))
        return -1;
    if (*end == '.') {
        int n = 0;
        for (end++; isdigit((unsigned char)*end); end++, n++)
            if (n < 9)
                frac = frac * 10 + (*end - '0');
        for (; n < 9; n++)
            frac *= 10;
    }
    if (*end)
        return -1;
    *ns = (int64_t)sec * NS_PER_S + frac;
    return 0;
}

int ctl_parse_since_at(const char *val, int64_t now_ns, int64_t *ns)
{
    double d;
    if (strcmp(val, "0") && go_duration(val, &d) == 0) {
        int64_t t = now_ns - (int64_t)d;
        *ns = (t >= 0 ? t / NS_PER_S : (t - NS_PER_S + 1) / NS_PER_S) * NS_PER_S;
        return 0;
    }
    if (date_time(val, ns) == 0)
        return 0;
    if (strchr(val, '-'))
        return -1;
    return unix_seconds(val, ns);
}

int ctl_parse_since(const char *val, int64_t *ns)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return ctl_parse_since_at(val, (int64_t)now.tv_sec * NS_PER_S + now.tv_nsec, ns);
}
