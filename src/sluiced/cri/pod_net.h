/* A pod's network through CNI, for the pod handlers: the plugin options
 * (the same for ADD and DEL, as portmap needs), and the release (DEL) at
 * StopPodSandbox and RemovePodSandbox, run once per pod however many
 * calls ask for it. */
#ifndef SL_CRI_POD_NET_H
#define SL_CRI_POD_NET_H

#include <stdbool.h>

#include "cri/rt.h"
#include "pod/cni.h"

typedef struct sl_net_release sl_net_release;

/* True when the config asks for the node's network (or IPC) namespace. */
bool sl_pod_host_network(const Runtime__V1__PodSandboxConfig *c);
bool sl_pod_host_ipc(const Runtime__V1__PodSandboxConfig *c);

/* The pod's CNI options; o->portmaps is malloc'd (free it), NULL without
 * host ports (or on ENOMEM: check against sl_pod_config_first_host_port). */
void sl_pod_cni_opts(sl_rt *rt, const char *id, const char *netns,
                     const Runtime__V1__PodSandboxConfig *c, sl_cni_opts *o);

typedef void (*sl_pod_net_done_fn)(void *arg);

/* Runs CNI DEL for p with the result ADD recorded, and clears the record's
 * "cni_result" in memory afterwards (the caller saves). A DEL already
 * running for p is not started twice: fn waits for it. fn(arg) runs once
 * DEL is over (at once when there is nothing to release); a failure is
 * logged, as the pod goes down anyway. */
void sl_pod_net_release(sl_rt *rt, sl_pod *p, sl_pod_net_done_fn fn, void *arg);

#endif
