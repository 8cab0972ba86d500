/* Prometheus text format writers. */
#include "admin/prom.h"

#include <stdbool.h>
#include <string.h>

void sl_prom_family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void label_value(FILE *f, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            fprintf(f, "\\%c", *v);
        else if (*v == '\n')
            fputs("\\n", f);
        else
            fputc(*v, f);
    }
}

/* {k="v",...,extra_k="extra_v"}; nothing when there are no labels. */
static void labels_out(FILE *f, const char *const *labels, const char *extra_k, const char *extra_v)
{
    bool any = false;
    for (size_t i = 0; labels && labels[i]; i += 2) {
        fprintf(f, "%s%s=\"", any ? "," : "{", labels[i]);
        label_value(f, labels[i + 1]);
        fputc('"', f);
        any = true;
    }
    if (extra_k) {
        fprintf(f, "%s%s=\"%s\"", any ? "," : "{", extra_k, extra_v);
        any = true;
    }
    if (any)
        fputc('}', f);
}

void sl_prom_sample(FILE *f, const char *name, const char *const *labels, uint64_t value)
{
    fputs(name, f);
    labels_out(f, labels, NULL, NULL);
    fprintf(f, " %llu\n", (unsigned long long)value);
}

void sl_prom_histogram(FILE *f, const char *name, const char *const *labels, const double *bounds,
                       size_t nbounds, const uint64_t *counts, double sum)
{
    uint64_t cum = 0;
    char le[32];
    for (size_t i = 0; i <= nbounds; i++) {
        cum += counts[i];
        if (i < nbounds)
            snprintf(le, sizeof(le), "%g", bounds[i]);
        else
            snprintf(le, sizeof(le), "+Inf");
        fprintf(f, "%s_bucket", name);
        labels_out(f, labels, "le", le);
        fprintf(f, " %llu\n", (unsigned long long)cum);
    }
    fprintf(f, "%s_sum", name);
    labels_out(f, labels, NULL, NULL);
    fprintf(f, " %.9g\n", sum);
    fprintf(f, "%s_count", name);
    labels_out(f, labels, NULL, NULL);
    fprintf(f, " %llu\n", (unsigned long long)cum);
}
