/* PodSandboxStatus and ListPodSandbox. */
#include <stdlib.h>
#include <string.h>

#include "cri/cri_util.h"
#include "pod/cni.h"
#include "cri/ctr_namespaces.h"
#include "cri/pod_info.h"

static Runtime__V1__PodSandboxState pod_state(const sl_pod *p)
{
    return p->ready ? RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY
                    : RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_NOTREADY;
}

/* The pod's addresses after the first (e.g. its IPv6 one), as CNI gave
 * them; the strings stay the record's. */
static size_t additional_ips(const sl_pod *p, Runtime__V1__PodIP *ips, Runtime__V1__PodIP **ptrs)
{
    const json_t *all = json_object_get(p->rec, "additional_ips");
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(all) && n < SL_CNI_MAX_IPS; i++) {
        const char *ip = json_string_value(json_array_get(all, i));
        if (!ip)
            continue;
        runtime__v1__pod_ip__init(&ips[n]);
        ips[n].ip = (char *)ip;
        ptrs[n] = &ips[n];
        n++;
    }
    return n;
}

void sl_cri_pod_status_fill(const sl_pod *p, sl_pod_status_msg *m)
{
    runtime__v1__pod_sandbox_network_status__init(&m->net);
    m->net.ip = (char *)sl_rec_str(p->rec, "ip");
    m->net.additional_ips = m->more_ptrs;
    m->net.n_additional_ips = additional_ips(p, m->more, m->more_ptrs);
    sl_pod_ns_modes modes;
    sl_ns_pod_modes_load(p->rec, &modes);
    runtime__v1__namespace_option__init(&m->nso);
    m->nso.network =
        modes.host_network ? RUNTIME__V1__NAMESPACE_MODE__NODE : RUNTIME__V1__NAMESPACE_MODE__POD;
    m->nso.ipc =
        modes.host_ipc ? RUNTIME__V1__NAMESPACE_MODE__NODE : RUNTIME__V1__NAMESPACE_MODE__POD;
    m->nso.pid = (Runtime__V1__NamespaceMode)modes.pid;
    /* the pod's own user namespace: as the request gave it (checked then) */
    const Runtime__V1__LinuxPodSandboxConfig *l = p->config->linux;
    if (modes.userns.on && l && l->security_context && l->security_context->namespace_options)
        m->nso.userns_options = l->security_context->namespace_options->userns_options;
    runtime__v1__namespace__init(&m->ns);
    m->ns.options = &m->nso;
    runtime__v1__linux_pod_sandbox_status__init(&m->lin);
    m->lin.namespaces = &m->ns;
    Runtime__V1__PodSandboxStatus *st = &m->st;
    runtime__v1__pod_sandbox_status__init(st);
    st->id = (char *)p->id;
    st->metadata = p->config->metadata;
    st->state = pod_state(p);
    st->created_at = p->created_at;
    st->network = &m->net;
    st->linux = &m->lin;
    st->n_labels = p->config->n_labels;
    st->labels = (Runtime__V1__PodSandboxStatus__LabelsEntry **)p->config->labels;
    st->n_annotations = p->config->n_annotations;
    st->annotations = (Runtime__V1__PodSandboxStatus__AnnotationsEntry **)p->config->annotations;
    st->runtime_handler = (char *)sl_rec_str(p->rec, "runtime_handler");
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
    sl_pod_status_msg m;
    sl_cri_pod_status_fill(p, &m);
    Runtime__V1__PodSandboxStatusResponse resp = RUNTIME__V1__POD_SANDBOX_STATUS_RESPONSE__INIT;
    resp.status = &m.st;
    resp.timestamp = sl_now_ns();
    Runtime__V1__PodSandboxStatusResponse__InfoEntry entry =
        RUNTIME__V1__POD_SANDBOX_STATUS_RESPONSE__INFO_ENTRY__INIT;
    Runtime__V1__PodSandboxStatusResponse__InfoEntry *entries[] = {&entry};
    char *info = req->verbose ? sl_cri_pod_info(rt, p) : NULL;
    if (info) {
        entry.key = "info";
        entry.value = info;
        resp.n_info = 1;
        resp.info = entries;
    }
    sl_grpc_call_reply(call, &resp.base);
    free(info);
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
