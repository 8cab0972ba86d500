/* Writers for the Prometheus text exposition format (version 0.0.4): a
 * family's # HELP and # TYPE lines, then its samples. Label values are
 * escaped (\\, \", \n); names are the caller's constants. */
#ifndef SL_PROM_H
#define SL_PROM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The Content-Type of the format. */
#define SL_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* # HELP and # TYPE (type: "counter", "gauge", "histogram"). */
void sl_prom_family(FILE *f, const char *name, const char *type, const char *help);

/* One sample: name{labels} value. labels: key, value pairs ended by a NULL
 * key (NULL itself: no labels). */
void sl_prom_sample(FILE *f, const char *name, const char *const *labels, uint64_t value);

/* A histogram's samples: name_bucket{labels,le=...} (cumulative) for each
 * bound (seconds) and +Inf, name_sum (seconds) and name_count. counts has
 * nbounds + 1 entries (the last: above every bound), not cumulative. */
void sl_prom_histogram(FILE *f, const char *name, const char *const *labels, const double *bounds,
                       size_t nbounds, const uint64_t *counts, double sum);

#endif
