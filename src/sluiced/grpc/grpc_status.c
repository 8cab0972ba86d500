/* gRPC status names and grpc-message percent-encoding. */
#include "grpc/grpc_status.h"

#include <stdint.h>
#include <stdlib.h>

static const char *const code_names[SL_GRPC_CODE_MAX + 1] = {
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
};

const char *sl_grpc_code_name(int code)
{
    if (code < 0 || code > SL_GRPC_CODE_MAX)
        return "UNKNOWN";
    return code_names[code];
}

static int needs_escape(uint8_t c)
{
    return c < 0x20 || c > 0x7e || c == '%';
}

char *sl_grpc_percent_encode(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (const uint8_t *p = (const uint8_t *)s; *p; p++)
        n += needs_escape(*p) ? 3 : 1;
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    char *o = out;
    for (const uint8_t *p = (const uint8_t *)s; *p; p++) {
        if (needs_escape(*p)) {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        } else {
            *o++ = (char)*p;
        }
    }
    *o = '\0';
    return out;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

size_t sl_grpc_percent_decode(const char *s, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < len && (hi = hexval(s[i + 1])) >= 0 &&
            (lo = hexval(s[i + 2])) >= 0) {
            out[o++] = (char)(hi << 4 | lo);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    return o;
}
