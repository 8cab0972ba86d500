/* RunPodSandbox's work after its checks (pod_run.c). */
#ifndef SL_CRI_POD_RUN_H
#define SL_CRI_POD_RUN_H

#include <jansson.h>
#include <stdbool.h>

#include "cri/ctr_namespaces.h"
#include "cri/rt.h"
#include "grpc/grpc_call.h"

typedef struct sl_pod_run_plan {
    const char *id;              /* the new pod's id */
    json_t *rec;                 /* its record so far (taken over) */
    bool pid_pod;                /* a PID namespace of the pod's own (mode POD) */
    const sl_pod_userns *userns; /* the pod's user namespace (off: the host's) */
} sl_pod_run_plan;

/* Makes the pod: namespaces (worker thread), network (CNI children),
 * /etc files, monitor (child); then answers call. c is the request's
 * config (it lives until the answer). Never blocks the loop. */
void sl_pod_run_start(sl_rt *rt, sl_grpc_call *call, const Runtime__V1__PodSandboxConfig *c,
                      const sl_pod_run_plan *plan);

#endif
