/* The /metrics page of sluiced: CRI calls (calls.h), pods and containers
 * by state, pod monitors with a live control connection, image imports,
 * gRPC connections, GetContainerEvents subscribers, streaming sessions
 * (session_metrics.h). Gathered on the loop
 * thread at each scrape (a container's state is its monitor's
 * status.json, as ContainerStatus reads it). */
#ifndef SL_DAEMON_METRICS_H
#define SL_DAEMON_METRICS_H

#include <stddef.h>

#include "admin/calls.h"
#include "cri/service.h"
#include "grpc/grpc_server.h"

/* Writes the page into a malloc'd *text. Returns 0 or -1 (ENOMEM). */
int sl_daemon_metrics(const sl_calls *calls, const sl_cri *cri, const sl_grpc_server *grpc,
                      char **text, size_t *len);

#endif
