#include "cri/cri_util.h"

#include <string.h>

bool sl_cri_labels_match(sl_kv *const *labels, size_t n, sl_kv *const *sel, size_t nsel)
{
    for (size_t i = 0; i < nsel; i++) {
        bool found = false;
        for (size_t j = 0; j < n && !found; j++)
            found =
                !strcmp(labels[j]->key, sel[i]->key) && !strcmp(labels[j]->value, sel[i]->value);
        if (!found)
            return false;
    }
    return true;
}

sl_pod *sl_cri_ready_pod(sl_grpc_call *call, sl_rt *rt, const char *pod_id)
{
    sl_pod *p = sl_model_pod(&rt->model, pod_id);
    if (!p) {
        sl_grpc_call_fail(call, SL_GRPC_NOT_FOUND, "pod sandbox \"%s\" not found", pod_id);
        return NULL;
    }
    if (!p->ready) {
        sl_grpc_call_fail(call, SL_GRPC_FAILED_PRECONDITION, "pod sandbox \"%s\" is not ready",
                          pod_id);
        return NULL;
    }
    return p;
}
