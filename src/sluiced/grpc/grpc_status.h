/* gRPC status codes for sluiced's gRPC server: the programs' one table
 * (src/common/grpc_code.h); grpc-message values are encoded with the one
 * percent codec (src/common/pct.h). */
#ifndef SL_GRPC_STATUS_H
#define SL_GRPC_STATUS_H

#include "grpc_code.h"
#include "pct.h"

#endif
