/* grpc-timeout parsing. */
#include "grpc/grpc_timeout.h"

#include "sluice/error.h"

int sl_grpc_timeout_parse(const char *s, size_t len, uint64_t *ms)
{
    if (len < 2 || len > SL_GRPC_TIMEOUT_MAX_DIGITS + 1)
        return SL_ERR_PROTO;
    uint64_t v = 0;
    for (size_t i = 0; i + 1 < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return SL_ERR_PROTO;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    /* v < 10^8: every product below stays far under 2^64. */
    switch (s[len - 1]) {
    case 'H':
        *ms = v * 3600000u;
        return SL_OK;
    case 'M':
        *ms = v * 60000u;
        return SL_OK;
    case 'S':
        *ms = v * 1000u;
        return SL_OK;
    case 'm':
        *ms = v;
        return SL_OK;
    case 'u':
        *ms = (v + 999u) / 1000u;
        return SL_OK;
    case 'n':
        *ms = (v + 999999u) / 1000000u;
        return SL_OK;
    default:
        return SL_ERR_PROTO;
    }
}
