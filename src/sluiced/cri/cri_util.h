/* Small helpers shared by the CRI handlers. */
#ifndef SL_CRI_UTIL_H
#define SL_CRI_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "cri/rt.h"
#include "cri/service.h"

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

/* The pod of a container that exists and is ready, or NULL with the gRPC
 * failure already sent. */
sl_pod *sl_cri_ready_pod(sl_grpc_call *call, sl_rt *rt, const char *pod_id);

#endif
