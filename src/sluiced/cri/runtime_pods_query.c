/* PodSandboxStatus and ListPodSandbox. */
#include <stdlib.h>
#include <string.h>

#include "cri/cri_util.h"
#include "cri/ctr_namespaces.h"

static Runtime__V1__PodSandboxState pod_state(const sl_pod *p)
{
    return p->ready ? RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY
                    : RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_NOTREADY;
}

void sl_cri_pod_status(sl_grpc_call *call, void *arg)
{
    sl_rt *rt = cri_rt(arg);
    const Runtime__V1__PodSandboxStatusRequest *req = (const void *)sl_grpc_call_request(call);
    sl_pod *p = sl_model_pod(&rt->model, req->pod_sandbox_id);
    if (!p) {
        sl_grpc_call_fail(call, SL_GRPC_NOT_FOUND, "pod sandbox \"%s\" not found",
                          req->pod_sandbox_id);
        return;
    }
    Runtime__V1__PodSandboxNetworkStatus net = RUNTIME__V1__POD_SANDBOX_NETWORK_STATUS__INIT;
    net.ip = (char *)sl_rec_str(p->rec, "ip");
    sl_pod_ns_modes modes;
    sl_ns_pod_modes_load(p->rec, &modes);
    Runtime__V1__NamespaceOption nso = RUNTIME__V1__NAMESPACE_OPTION__INIT;
    nso.network =
        modes.host_network ? RUNTIME__V1__NAMESPACE_MODE__NODE : RUNTIME__V1__NAMESPACE_MODE__POD;
    nso.ipc = modes.host_ipc ? RUNTIME__V1__NAMESPACE_MODE__NODE : RUNTIME__V1__NAMESPACE_MODE__POD;
    nso.pid = (Runtime__V1__NamespaceMode)modes.pid;
    Runtime__V1__Namespace ns = RUNTIME__V1__NAMESPACE__INIT;
    ns.options = &nso;
    Runtime__V1__LinuxPodSandboxStatus lin = RUNTIME__V1__LINUX_POD_SANDBOX_STATUS__INIT;
    lin.namespaces = &ns;
    Runtime__V1__PodSandboxStatus st = RUNTIME__V1__POD_SANDBOX_STATUS__INIT;
    st.id = p->id;
    st.metadata = p->config->metadata;
    st.state = pod_state(p);
    st.created_at = p->created_at;
    st.network = &net;
    st.linux = &lin;
    st.n_labels = p->config->n_labels;
    st.labels = (Runtime__V1__PodSandboxStatus__LabelsEntry **)p->config->labels;
    st.n_annotations = p->config->n_annotations;
    st.annotations = (Runtime__V1__PodSandboxStatus__AnnotationsEntry **)p->config->annotations;
    st.runtime_handler = (char *)sl_rec_str(p->rec, "runtime_handler");
    Runtime__V1__PodSandboxStatusResponse resp = RUNTIME__V1__POD_SANDBOX_STATUS_RESPONSE__INIT;
    resp.status = &st;
    resp.timestamp = sl_now_ns();
    sl_grpc_call_reply(call, &resp.base);
}

static bool pod_matches(const sl_pod *p, const Runtime__V1__PodSandboxFilter *f)
{
    if (!f)
        return true;
    if (*f->id && strncmp(p->id, f->id, strlen(f->id))) /* crictl passes id prefixes */
        return false;
    if (f->state && (int)f->state->state != (int)pod_state(p))
        return false;
    return sl_cri_labels_match((sl_kv *const *)p->config->labels, p->config->n_labels,
                               (sl_kv *const *)f->label_selector, f->n_label_selector);
}

void sl_cri_list_pods(sl_grpc_call *call, void *arg)
{
    sl_rt *rt = cri_rt(arg);
    const Runtime__V1__ListPodSandboxRequest *req = (const void *)sl_grpc_call_request(call);
    size_t n = 0;
    for (sl_pod *p = rt->model.pods; p; p = p->next)
        n++;
    Runtime__V1__PodSandbox *items = calloc(n ? n : 1, sizeof(*items));
    Runtime__V1__PodSandbox **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
    if (!items || !ptrs) {
        free(items);
        free(ptrs);
        sl_grpc_call_fail(call, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    size_t k = 0;
    for (sl_pod *p = rt->model.pods; p; p = p->next) {
        if (!pod_matches(p, req->filter))
            continue;
        Runtime__V1__PodSandbox *it = &items[k];
        runtime__v1__pod_sandbox__init(it);
        it->id = p->id;
        it->metadata = p->config->metadata;
        it->state = pod_state(p);
        it->created_at = p->created_at;
        it->n_labels = p->config->n_labels;
        it->labels = (Runtime__V1__PodSandbox__LabelsEntry **)p->config->labels;
        it->n_annotations = p->config->n_annotations;
        it->annotations = (Runtime__V1__PodSandbox__AnnotationsEntry **)p->config->annotations;
        it->runtime_handler = (char *)sl_rec_str(p->rec, "runtime_handler");
        ptrs[k++] = it;
    }
    Runtime__V1__ListPodSandboxResponse resp = RUNTIME__V1__LIST_POD_SANDBOX_RESPONSE__INIT;
    resp.n_items = k;
    resp.items = ptrs;
    sl_grpc_call_reply(call, &resp.base);
    free(items);
    free(ptrs);
}
