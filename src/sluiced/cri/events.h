/* GetContainerEvents: the event stream behind the kubelet's evented PLEG.
 *
 * Events, as containerd's CRI plugin sends them (1.7 and 2.x; 1.6 answers
 * UNIMPLEMENTED): a container is CREATED and STARTED when CreateContainer
 * and StartContainer succeed, STOPPED when its pod monitor reports the
 * exit (whoever caused it), DELETED when RemoveContainer or
 * RemovePodSandbox removed it. A pod sandbox has the same four, with the
 * sandbox id as container_id: CREATED and STARTED at RunPodSandbox,
 * STOPPED when StopPodSandbox (or RemovePodSandbox of a ready pod) takes
 * it down, DELETED at RemovePodSandbox. Each event carries created_at (ns,
 * when it happened), the PodSandboxStatus of the pod (never NULL: the
 * kubelet drops such events) and the ContainerStatus of every container
 * the pod still has, as the calls of those names report them; the kubelet
 * builds the pod's status from them.
 *
 * Every subscriber gets every event from its subscription on, in order;
 * nothing is replayed (after a stream error or a restart of sluiced the
 * kubelet relists). A subscriber that falls max-grpc-stream-backlog bytes
 * behind is ended with RESOURCE_EXHAUSTED; at most max-event-subscribers
 * streams are open. */
#ifndef SL_CRI_EVENTS_H
#define SL_CRI_EVENTS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "cri/model.h"
#include "grpc/grpc_call.h"

typedef struct sl_rt sl_rt;
typedef struct sl_events_sub sl_events_sub;

typedef struct sl_events {
    sl_events_sub *subs;
    size_t nsubs;
    uint32_t max_subs;
} sl_events;

void sl_events_init(sl_events *ev, uint32_t max_subs);
/* Ends every subscription still open with UNAVAILABLE. */
void sl_events_fini(sl_events *ev);
size_t sl_events_subscribers(const sl_events *ev);

/* The GetContainerEvents handler (server streaming; arg is the sl_cri). */
void sl_cri_container_events(sl_grpc_call *call, void *cri);

/* type: RUNTIME__V1__CONTAINER_EVENT_TYPE__*. The container's pod must
 * still be in the model; the container itself may be gone (DELETED). */
void sl_events_ctr(sl_rt *rt, int type, const char *ctr_id, const char *pod_id);
void sl_events_pod(sl_rt *rt, int type, const sl_pod *p);
/* A pod monitor's event: "exited" of a known container is STOPPED. */
void sl_events_mon(sl_rt *rt, const sl_pod *p, const json_t *event);

#endif
