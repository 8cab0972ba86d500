/* gRPC status codes (grpc/grpc doc/statuscodes.md), the one table of the
 * programs: sluiced writes them, the CRI client reads them. */
#ifndef SL_GRPC_CODE_H
#define SL_GRPC_CODE_H

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

/* The spec's name: "OK", "CANCELLED", ... (metrics, logs); "UNKNOWN" for
 * values outside 0..16. */
const char *sl_grpc_code_name(int code);

/* The name grpc-go prints and crictl shows ("rpc error: code = NotFound"):
 * "OK", "Canceled", ...; "Code(?)" for values outside 0..16. */
const char *sl_grpc_code_go_name(int code);

#endif
