/* gRPC status codes and the percent-encoding of grpc-message
 * (grpc/grpc doc/PROTOCOL-HTTP2.md). */
#ifndef SL_GRPC_STATUS_H
#define SL_GRPC_STATUS_H

#include <stddef.h>

typedef enum sl_grpc_code {
    SL_GRPC_OK = 0,
    SL_GRPC_CANCELLED = 1,
    SL_GRPC_UNKNOWN = 2,
    SL_GRPC_INVALID_ARGUMENT = 3,
    SL_GRPC_DEADLINE_EXCEEDED = 4,
    SL_GRPC_NOT_FOUND = 5,
    SL_GRPC_ALREADY_EXISTS = 6,
    SL_GRPC_PERMISSION_DENIED = 7,
    SL_GRPC_RESOURCE_EXHAUSTED = 8,
    SL_GRPC_FAILED_PRECONDITION = 9,
    SL_GRPC_ABORTED = 10,
    SL_GRPC_OUT_OF_RANGE = 11,
    SL_GRPC_UNIMPLEMENTED = 12,
    SL_GRPC_INTERNAL = 13,
    SL_GRPC_UNAVAILABLE = 14,
    SL_GRPC_DATA_LOSS = 15,
    SL_GRPC_UNAUTHENTICATED = 16,
} sl_grpc_code;

#define SL_GRPC_CODE_MAX 16

/* "OK", "CANCELLED", ...; "UNKNOWN" for values outside 0..16. */
const char *sl_grpc_code_name(int code);

/* Percent-encodes s for grpc-message: every byte outside 0x20..0x7e, and
 * '%', becomes %XX (upper-case hex); the rest is copied. Returns a malloc'd
 * NUL-terminated string (caller frees), or NULL when out of memory. */
char *sl_grpc_percent_encode(const char *s);

/* Decodes len bytes of a grpc-message into out (room for len + 1 bytes),
 * NUL-terminates it and returns the decoded length. A '%' not followed by
 * two hex digits is kept literally, as the spec asks of receivers. */
size_t sl_grpc_percent_decode(const char *s, size_t len, char *out);

#endif
