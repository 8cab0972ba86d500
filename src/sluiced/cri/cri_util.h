/* Small helpers shared by the CRI handlers. */
#ifndef SL_CRI_UTIL_H
#define SL_CRI_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "cri/ctr_resources.h"
#include "cri/ctr_user.h"
#include "cri/rt.h"
#include "cri/service.h"
#include "pod/cni.h"

/* The runtime state behind a handler's arg (the sl_cri). */
static inline sl_rt *cri_rt(void *arg)
{
    return &((sl_cri *)arg)->rt;
}

/* Map entries of the CRI messages (labels, annotations) share one layout. */
typedef struct sl_kv {
    ProtobufCMessage base;
    char *key;
    char *value;
} sl_kv;

/* True when every selector entry is in labels with the same value. */
bool sl_cri_labels_match(sl_kv *const *labels, size_t n, sl_kv *const *sel, size_t nsel);

/* Kills nothing: forgets a container whose processes are gone (its
 * rootfs unmounted, its state removed). */
void sl_cri_forget_ctr(sl_rt *rt, sl_ctr *c);

/* The container id if it exists and runs, or NULL with the gRPC failure
 * (INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION) already sent. */
sl_ctr *sl_cri_running_ctr(sl_grpc_call *call, sl_rt *rt, const char *id);

/* A PodSandboxStatus as the PodSandboxStatus call reports it, with the
 * messages it points to; it borrows from the pod, and points into itself
 * (fill it where it stays). */
typedef struct sl_pod_status_msg {
    Runtime__V1__PodSandboxStatus st;
    Runtime__V1__PodSandboxNetworkStatus net;
    Runtime__V1__NamespaceOption nso;
    Runtime__V1__Namespace ns;
    Runtime__V1__LinuxPodSandboxStatus lin;
    Runtime__V1__PodIP more[SL_CNI_MAX_IPS], *more_ptrs[SL_CNI_MAX_IPS];
} sl_pod_status_msg;
void sl_cri_pod_status_fill(const sl_pod *p, sl_pod_status_msg *m);

/* A ContainerStatus as the ContainerStatus call reports it (the live
 * state from the monitor's status file); same rules. */
typedef struct sl_ctr_status_msg {
    Runtime__V1__ContainerStatus st;
    Runtime__V1__ImageSpec image;
    sl_ctr_status live;
    Runtime__V1__ContainerUser user;
    Runtime__V1__LinuxContainerUser linux_user;
    int64_t groups[SL_CTR_MAX_GROUPS];
    sl_cri_res_report res;
} sl_ctr_status_msg;
void sl_cri_ctr_status_fill(const sl_rt *rt, const sl_ctr *c, sl_ctr_status_msg *m);

/* The pod of a container that exists and is ready, or NULL with the gRPC
 * failure already sent. */
sl_pod *sl_cri_ready_pod(sl_grpc_call *call, sl_rt *rt, const char *pod_id);

#endif
