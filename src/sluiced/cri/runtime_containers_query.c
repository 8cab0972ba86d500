/* ContainerStatus and ListContainers. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cri/cri_util.h"
#include "cri/ctr_user.h"
#include "cri/ctr_resources.h"

/* The reason the kubelet shows for an exited container. */
static const char *exit_reason(const sl_ctr_status *st)
{
    if (st->state != RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED)
        return "";
    if (*st->reason)
        return st->reason;
    return st->exit_code == 0 ? "Completed" : "Error";
}

/* ContainerStatus.user from the record (the values in the OCI spec);
 * false for records written before sluiced kept them. */
static bool status_user(const json_t *rec, Runtime__V1__LinuxContainerUser *u, int64_t *groups)
{
    const json_t *j = json_object_get(rec, "user");
    const json_t *g = json_object_get(j, "supplemental_groups");
    if (!json_is_object(j))
        return false;
    u->uid = json_integer_value(json_object_get(j, "uid"));
    u->gid = json_integer_value(json_object_get(j, "gid"));
    for (size_t i = 0; i < json_array_size(g) && i < SL_CTR_MAX_GROUPS; i++)
        groups[u->n_supplemental_groups++] = json_integer_value(json_array_get(g, i));
    u->supplemental_groups = groups;
    return true;
}

void sl_cri_ctr_status_fill(const sl_rt *rt, const sl_ctr *c, sl_ctr_status_msg *m)
{
    sl_model_ctr_status(&rt->model, c, &m->live);
    runtime__v1__image_spec__init(&m->image);
    m->image.image = (char *)sl_rec_str(c->rec, "image_name");
    Runtime__V1__ContainerStatus *st = &m->st;
    runtime__v1__container_status__init(st);
    st->id = (char *)c->id;
    st->metadata = c->config->metadata;
    st->state = m->live.state;
    st->created_at = c->created_at;
    st->started_at = m->live.started_at;
    st->finished_at = m->live.finished_at;
    st->exit_code = (int32_t)m->live.exit_code;
    st->image = &m->image;
    st->image_ref = (char *)sl_rec_str(c->rec, "image_ref");
    st->image_id = (char *)sl_rec_str(c->rec, "image_id");
    st->reason = (char *)exit_reason(&m->live);
    st->n_labels = c->config->n_labels;
    st->labels = (Runtime__V1__ContainerStatus__LabelsEntry **)c->config->labels;
    st->n_annotations = c->config->n_annotations;
    st->annotations = (Runtime__V1__ContainerStatus__AnnotationsEntry **)c->config->annotations;
    st->n_mounts = c->config->n_mounts;
    st->mounts = c->config->mounts;
    st->log_path = (char *)sl_rec_str(c->rec, "log_path");
    st->message = m->live.message;
    runtime__v1__container_user__init(&m->user);
    runtime__v1__linux_container_user__init(&m->linux_user);
    if (status_user(c->rec, &m->linux_user, m->groups)) {
        m->user.linux = &m->linux_user;
        st->user = &m->user;
    }
    sl_cri_res_status(json_object_get(c->rec, "resources"), &m->res);
    st->resources = &m->res.res;
}

void sl_cri_container_status(sl_grpc_call *call, void *arg)
{
    sl_rt *rt = cri_rt(arg);
    const Runtime__V1__ContainerStatusRequest *req = (const void *)sl_grpc_call_request(call);
    sl_ctr *c = sl_model_ctr(&rt->model, req->container_id);
    if (!c) {
        sl_grpc_call_fail(call, SL_GRPC_NOT_FOUND, "container \"%s\" not found", req->container_id);
        return;
    }
    sl_ctr_status_msg m;
    sl_cri_ctr_status_fill(rt, c, &m);
    Runtime__V1__ContainerStatusResponse resp = RUNTIME__V1__CONTAINER_STATUS_RESPONSE__INIT;
    resp.status = &m.st;
    /* verbose: {"info": {"pid", "config": {tty, stdin, stdin_once}}}, the
     * shape containerd gives, which the kube front reads tty from; and what
     * the monitor dropped of the CRI log (as of its last status record). */
    char *info_text = NULL;
    Runtime__V1__ContainerStatusResponse__InfoEntry entry =
        RUNTIME__V1__CONTAINER_STATUS_RESPONSE__INFO_ENTRY__INIT;
    Runtime__V1__ContainerStatusResponse__InfoEntry *entries[] = {&entry};
    if (req->verbose) {
        json_t *j = json_pack("{s:I, s:{s:b, s:b, s:b}, s:I, s:I}", "pid", (json_int_t)m.live.pid,
                              "config", "tty", c->config->tty, "stdin", c->config->stdin,
                              "stdin_once", c->config->stdin_once, "logDroppedBytes",
                              (json_int_t)m.live.log_dropped_bytes, "logDroppedRecords",
                              (json_int_t)m.live.log_dropped_records);
        info_text = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        if (info_text) {
            entry.key = "info";
            entry.value = info_text;
            resp.n_info = 1;
            resp.info = entries;
        }
    }
    sl_grpc_call_reply(call, &resp.base);
    free(info_text);
}

static bool ctr_matches(const sl_ctr *c, int state, const Runtime__V1__ContainerFilter *f)
{
    if (!f)
        return true;
    if (*f->id && strncmp(c->id, f->id, strlen(f->id))) /* crictl passes id prefixes */
        return false;
    if (*f->pod_sandbox_id && strncmp(c->pod_id, f->pod_sandbox_id, strlen(f->pod_sandbox_id)))
        return false;
    if (f->state && (int)f->state->state != state)
        return false;
    return sl_cri_labels_match((sl_kv *const *)c->config->labels, c->config->n_labels,
                               (sl_kv *const *)f->label_selector, f->n_label_selector);
}

void sl_cri_list_containers(sl_grpc_call *call, void *arg)
{
    sl_rt *rt = cri_rt(arg);
    const Runtime__V1__ListContainersRequest *req = (const void *)sl_grpc_call_request(call);
    size_t n = 0;
    for (sl_ctr *c = rt->model.ctrs; c; c = c->next)
        n++;
    Runtime__V1__Container *items = calloc(n ? n : 1, sizeof(*items));
    Runtime__V1__Container **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
    Runtime__V1__ImageSpec *images = calloc(n ? n : 1, sizeof(*images));
    if (!items || !ptrs || !images) {
        free(items);
        free(ptrs);
        free(images);
        sl_grpc_call_fail(call, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    size_t k = 0;
    for (sl_ctr *c = rt->model.ctrs; c; c = c->next) {
        sl_ctr_status live;
        sl_model_ctr_status(&rt->model, c, &live);
        if (!ctr_matches(c, live.state, req->filter))
            continue;
        Runtime__V1__Container *it = &items[k];
        runtime__v1__container__init(it);
        runtime__v1__image_spec__init(&images[k]);
        images[k].image = (char *)sl_rec_str(c->rec, "image_name");
        it->id = c->id;
        it->pod_sandbox_id = c->pod_id;
        it->metadata = c->config->metadata;
        it->image = &images[k];
        it->image_ref = (char *)sl_rec_str(c->rec, "image_ref");
        it->image_id = (char *)sl_rec_str(c->rec, "image_id");
        it->state = live.state;
        it->created_at = c->created_at;
        it->n_labels = c->config->n_labels;
        it->labels = (Runtime__V1__Container__LabelsEntry **)c->config->labels;
        it->n_annotations = c->config->n_annotations;
        it->annotations = (Runtime__V1__Container__AnnotationsEntry **)c->config->annotations;
        ptrs[k++] = it;
    }
    Runtime__V1__ListContainersResponse resp = RUNTIME__V1__LIST_CONTAINERS_RESPONSE__INIT;
    resp.n_containers = k;
    resp.containers = ptrs;
    sl_grpc_call_reply(call, &resp.base);
    free(items);
    free(ptrs);
    free(images);
}
