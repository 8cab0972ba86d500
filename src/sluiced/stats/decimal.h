/* Unsigned decimal numbers as the kernel writes them in cgroup and /proc
 * files, read without strtoull's sign, space and locale handling. */
#ifndef SLUICE_STATS_DECIMAL_H
#define SLUICE_STATS_DECIMAL_H

#include <stdbool.h>
#include <stdint.h>

/* Reads the digits at s (at least one) into *v and points *end past them;
 * false, with *v and *end untouched, when s starts with no digit or the
 * number overflows 64 bits. */
bool sl_decimal_u64(const char *s, const char **end, uint64_t *v);

#endif
