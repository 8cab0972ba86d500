/* What sluiced records of every CRI call when its status is decided (the
 * gRPC server's on_end hook): counts by method and code and a latency
 * histogram per method for /metrics, and a log line — every failed call at
 * warn with its method, ids, code and message; a pod or container
 * lifecycle change (RunPodSandbox, StartContainer, ...) at info; every
 * other call at debug. */
#ifndef SL_ADMIN_CALLS_H
#define SL_ADMIN_CALLS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "grpc/grpc_conn.h"
#include "grpc/grpc_status.h"

/* Upper bounds (seconds) of the latency histogram's buckets. */
#define SL_CALLS_BUCKETS                                                                           \
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60
#define SL_CALLS_NBUCKETS 16
/* The method label of a path the method table does not know. */
#define SL_CALLS_UNKNOWN_METHOD "unknown"

typedef struct sl_call_stats {
    uint64_t codes[SL_GRPC_CODE_MAX + 1];
    uint64_t buckets[SL_CALLS_NBUCKETS + 1]; /* the last: above every bound */
    uint64_t sum_ns;
} sl_call_stats;

typedef struct sl_calls {
    const sl_grpc_method *methods; /* the server's table (borrowed) */
    size_t nmethods;
    sl_call_stats *stats; /* nmethods + 1; the last for unknown paths */
} sl_calls;

/* Returns 0, or -1 when out of memory. */
int sl_calls_init(sl_calls *c, const sl_grpc_method *methods, size_t nmethods);
void sl_calls_fini(sl_calls *c);

/* The on_end hook (arg: the sl_calls). */
void sl_calls_on_end(const sl_grpc_call_end *end, void *arg);

/* sluice_cri_requests_total and sluice_cri_request_duration_seconds. */
void sl_calls_write_metrics(const sl_calls *c, FILE *f);

/* The ids a request and its answer name, as key/value pairs for a log
 * line (pod, container, image, image_ref, name, namespace); the strings
 * are the messages'. kv has room for 2 * max entries. Returns the pairs. */
size_t sl_calls_ids(const ProtobufCMessage *req, const ProtobufCMessage *resp, const char **kv,
                    size_t max);

#endif
