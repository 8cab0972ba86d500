/* Per-command option parsing on getopt_long, with our own messages: a bad
 * flag names itself and the command's --help. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

int ctl_usage(ctl *c, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s%s%s: ", CTL_NAME, c->cmd ? " " : "", c->cmd ? c->cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CTL_EXIT_USAGE;
}

static int bad_flag(ctl *c, char **argv, int o)
{
    const char *arg = argv[optind - 1];
    if (o == ':')
        return ctl_usage(c, "flag %s needs a value (see sluicectl %s --help)", arg, c->cmd);
    if (optopt)
        return ctl_usage(c, "unknown flag -%c (see sluicectl %s --help)", optopt, c->cmd);
    return ctl_usage(c, "unknown flag %s (see sluicectl %s --help)", arg, c->cmd);
}

int ctl_parse(ctl *c, int argc, char **argv, const char *shortopts, const struct option *longopts,
              const char *help, ctl_opt_fn on_opt, void *arg, int *first, int *rc)
{
    char so[64];
    /* A leading ':' makes getopt report a missing value as ':'. */
    bool stop = shortopts[0] == '+';
    snprintf(so, sizeof so, "%s:%sh", stop ? "+" : "", shortopts + (stop ? 1 : 0));
    opterr = 0;
    optind = 0;
    int o;
    while ((o = getopt_long(argc, argv, so, longopts, NULL)) != -1) {
        if (o == 'h') {
            fputs(help, stdout);
            *rc = 0;
            return 1;
        }
        if (o == '?' || o == ':') {
            *rc = bad_flag(c, argv, o);
            return 1;
        }
        if (on_opt(arg, o, optarg) != 0) {
            *rc = CTL_EXIT_USAGE;
            return 1;
        }
    }
    *first = optind;
    return 0;
}

int ctl_parse_out(ctl *c, const char *val, ctl_out *out, bool table_ok)
{
    if (!strcmp(val, "json"))
        *out = CTL_OUT_JSON;
    else if (!strcmp(val, "yaml"))
        *out = CTL_OUT_YAML;
    else if (table_ok && !strcmp(val, "table"))
        *out = CTL_OUT_TABLE;
    else
        return ctl_usage(c, "unknown output format \"%s\": use %s", val,
                         table_ok ? "json, yaml or table" : "json or yaml");
    return 0;
}

int ctl_parse_uint(ctl *c, const char *flag, const char *val, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    if (!*val || *end || errno || val[0] == '-' || v > max)
        return ctl_usage(c, "%s: \"%s\" is not a number from 0 to %llu", flag, val,
                         (unsigned long long)max);
    *out = v;
    return 0;
}

int ctl_parse_int(ctl *c, const char *flag, const char *val, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(val, &end, 10);
    if (!*val || *end || errno)
        return ctl_usage(c, "%s: \"%s\" is not an integer", flag, val);
    *out = v;
    return 0;
}

static int unit_ms(const char *u, size_t n, double *mul)
{
    static const struct {
        const char *name;
        double ms;
    } units[] = {{"ns", 1e-6}, {"us", 1e-3}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strlen(units[i].name) == n && !strncmp(u, units[i].name, n)) {
            *mul = units[i].ms;
            return 0;
        }
    return -1;
}

int ctl_parse_duration_ms(const char *val, uint64_t *ms)
{
    const char *p = val;
    double total = 0;
    if (!*p)
        return -1;
    while (*p) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || v < 0)
            return -1;
        p = end;
        size_t n = strspn(p, "nsumh");
        double mul = 1000; /* a bare number is seconds */
        if (n == 0 && *p)
            return -1;
        if (n && unit_ms(p, n, &mul) < 0)
            return -1;
        total += v * mul;
        p += n;
    }
    if (total > 1e15)
        return -1;
    *ms = (uint64_t)(total + 0.5);
    return 0;
}
