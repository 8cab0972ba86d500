/* UpdateContainerResources: the request merged into the container's
 * resources (containerd's semantics: what the request sets replaces, the
 * rest stays), applied by the pod monitor with `runc update` while the
 * container has a cgroup, then kept in the container's record, which
 * ContainerStatus.resources reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cri/cri_util.h"
#include "cri/ctr_resources.h"
#include "state/state.h"

typedef struct upd_op {
    sl_rt *rt;
    sl_grpc_call *call;
    char id[SL_ID_HEX + 1];
    sl_ctr_res res; /* the merged resources */
} upd_op;

static void finish(upd_op *op)
{
    sl_ctr *c = sl_model_ctr(&op->rt->model, op->id);
    sl_error e = {0};
    if (c) { /* else removed meanwhile: nothing left to record */
        json_object_set(c->rec, "resources", op->res.rec);
        if (sl_state_save(op->rt->model.state_dir, "containers", c->id, c->rec, &e) < 0) {
            sl_grpc_call_fail(op->call, SL_GRPC_INTERNAL, "applied, but not recorded: %s", e.msg);
            return;
        }
    }
    Runtime__V1__UpdateContainerResourcesResponse resp =
        RUNTIME__V1__UPDATE_CONTAINER_RESOURCES_RESPONSE__INIT;
    sl_grpc_call_reply(op->call, &resp.base);
}

static void op_free(upd_op *op)
{
    sl_ctr_res_fini(&op->res);
    free(op);
}

static void mon_reply_cb(void *arg, const json_t *reply, int *fds, size_t nfds)
{
    upd_op *op = arg;
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
    if (reply && json_is_true(json_object_get(reply, "ok"))) {
        finish(op);
    } else {
        const char *err = reply ? json_string_value(json_object_get(reply, "error")) : NULL;
        sl_grpc_call_fail(op->call, SL_GRPC_UNKNOWN, "failed to update container resources: %s",
                          err ? err : "the pod monitor went away");
    }
    op_free(op);
}

/* Where the update comes in on what the monitor runs. */
static void apply(upd_op *op, const sl_ctr *c, bool oom_changed)
{
    const sl_ctr_res *res = &op->res;
    sl_error e;
    sl_pod *p = sl_model_pod(&op->rt->model, c->pod_id);
    sl_monc *m = p ? sl_rt_pod_mon(op->rt, p, &e) : NULL;
    json_t *req = json_pack("{s:s, s:s, s:O}", "type", "update", "container_id", c->id, "resources",
                            res->oci);
    if (req && oom_changed)
        json_object_set_new(req, "oom_score_adj", json_integer(res->oom_score_adj));
    if (!m || !req) {
        json_decref(req);
        mon_reply_cb(op, NULL, NULL, 0);
        return;
    }
    if (sl_monc_request(m, req, NULL, 0, mon_reply_cb, op, &e) < 0)
        mon_reply_cb(op, NULL, NULL, 0);
}

/* What the request carries that sluiced refuses outright. */
static bool refused(sl_grpc_call *call, const Runtime__V1__UpdateContainerResourcesRequest *req)
{
    if (req->windows) {
        sl_grpc_call_fail(call, SL_GRPC_UNIMPLEMENTED,
                          "windows: Windows resources do not apply to a Linux container");
        return true;
    }
    if (req->n_annotations) {
        sl_grpc_call_fail(call, SL_GRPC_UNIMPLEMENTED,
                          "annotations: sluiced has no resource update options (\"%s\")",
                          req->annotations[0]->key);
        return true;
    }
    return false;
}

void sl_cri_update_container_resources(sl_grpc_call *call, void *arg)
{
    sl_rt *rt = cri_rt(arg);
    const Runtime__V1__UpdateContainerResourcesRequest *req =
        (const void *)sl_grpc_call_request(call);
    sl_ctr *c = sl_model_ctr(&rt->model, req->container_id);
    if (!c) {
        sl_grpc_call_fail(call, SL_GRPC_NOT_FOUND, "container \"%s\" not found", req->container_id);
        return;
    }
    if (refused(call, req))
        return;
    sl_error e = {0};
    upd_op *op = calloc(1, sizeof(*op));
    if (!op ||
        sl_cri_res_update(json_object_get(c->rec, "resources"), req->linux, &op->res, &e) < 0) {
        if (!op)
            sl_error_code(&e, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        sl_grpc_call_fail_error(call, &e);
        free(op);
        return;
    }
    op->rt = rt;
    op->call = call;
    snprintf(op->id, sizeof(op->id), "%s", c->id);
    sl_ctr_status st;
    sl_model_ctr_status(&rt->model, c, &st);
    if (st.state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED) {
        finish(op); /* no cgroup any more: the record is all there is */
        op_free(op);
    } else {
        apply(op, c, req->linux && req->linux->oom_score_adj != 0);
    }
}
