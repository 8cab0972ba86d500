/* The gRPC status code table (grpc_code.h). */
#include "grpc_code.h"

static const struct {
    const char *name;    /* the spec's */
    const char *go_name; /* grpc-go's codes.Code.String() */
} codes[SL_GRPC_CODE_MAX + 1] = {
    [SL_GRPC_OK] = {"OK", "OK"},
    [SL_GRPC_CANCELLED] = {"CANCELLED", "Canceled"},
    [SL_GRPC_UNKNOWN] = {"UNKNOWN", "Unknown"},
    [SL_GRPC_INVALID_ARGUMENT] = {"INVALID_ARGUMENT", "InvalidArgument"},
    [SL_GRPC_DEADLINE_EXCEEDED] = {"DEADLINE_EXCEEDED", "DeadlineExceeded"},
    [SL_GRPC_NOT_FOUND] = {"NOT_FOUND", "NotFound"},
    [SL_GRPC_ALREADY_EXISTS] = {"ALREADY_EXISTS", "AlreadyExists"},
    [SL_GRPC_PERMISSION_DENIED] = {"PERMISSION_DENIED", "PermissionDenied"},
    [SL_GRPC_RESOURCE_EXHAUSTED] = {"RESOURCE_EXHAUSTED", "ResourceExhausted"},
    [SL_GRPC_FAILED_PRECONDITION] = {"FAILED_PRECONDITION", "FailedPrecondition"},
    [SL_GRPC_ABORTED] = {"ABORTED", "Aborted"},
    [SL_GRPC_OUT_OF_RANGE] = {"OUT_OF_RANGE", "OutOfRange"},
    [SL_GRPC_UNIMPLEMENTED] = {"UNIMPLEMENTED", "Unimplemented"},
    [SL_GRPC_INTERNAL] = {"INTERNAL", "Internal"},
    [SL_GRPC_UNAVAILABLE] = {"UNAVAILABLE", "Unavailable"},
    [SL_GRPC_DATA_LOSS] = {"DATA_LOSS", "DataLoss"},
    [SL_GRPC_UNAUTHENTICATED] = {"UNAUTHENTICATED", "Unauthenticated"},
};

const char *sl_grpc_code_name(int code)
{
    return code < 0 || code > SL_GRPC_CODE_MAX ? "UNKNOWN" : codes[code].name;
}

const char *sl_grpc_code_go_name(int code)
{
    return code < 0 || code > SL_GRPC_CODE_MAX ? "Code(?)" : codes[code].go_name;
}
