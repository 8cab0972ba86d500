/* The grpc-timeout request header: at most 8 ASCII digits and a unit,
 * H (hours), M (minutes), S (seconds), m (milliseconds), u (microseconds)
 * or n (nanoseconds). */
#ifndef SL_GRPC_TIMEOUT_H
#define SL_GRPC_TIMEOUT_H

#include <stddef.h>
#include <stdint.h>

#define SL_GRPC_TIMEOUT_MAX_DIGITS 8

/* Parses len bytes of s into *ms, in milliseconds, rounded up (1n is 1 ms,
 * so a tiny timeout still expires after, not before, its time; 0 expires at
 * once). The largest value, 99999999H, fits without overflow. Returns SL_OK,
 * or SL_ERR_PROTO for anything else (empty, no digit, more than 8 digits,
 * sign, space, unknown unit). */
int sl_grpc_timeout_parse(const char *s, size_t len, uint64_t *ms);

#endif
