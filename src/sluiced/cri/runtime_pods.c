/* RuntimeService pod sandbox calls. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cri/cri_fields.h"
#include "cri/cri_util.h"
#include "cri/ctr_security.h"
#include "cri/pod_cgroup.h"
#include "cri/pod_config.h"
#include "cri/ctr_namespaces.h"
#include "cri/mon_death.h"
#include "cri/service.h"
#include "fsutil.h"
#include "cri/pod_net.h"
#include "cri/pod_run.h"
#include "pod/cni.h"
#include "pod/netns.h"
#include "pod/pidns.h"
#include "sl_log.h"

/* A host port needs a plugin that takes portMappings: refused up front
 * rather than accepted and left unmapped (containerd ignores it then). */
static int check_host_ports(sl_rt *rt, const Runtime__V1__PodSandboxConfig *c, sl_error *e)
{
    int i = sl_pod_config_first_host_port(c);
    if (i < 0 || sl_pod_host_network(c))
        return 0;
    SL_AUTOFREE char *path = NULL;
    int has = sl_cni_has_capability(rt->cfg->cni_conf_dir, SL_CNI_CAP_PORTMAP, &path, e);
    if (has < 0) {
        e->code = SL_GRPC_FAILED_PRECONDITION;
        return sl_error_wrap(e, "port_mappings[%d].host_port: no CNI network to map it in", i);
    }
    if (!has)
        return sl_error_code(e, SL_GRPC_UNIMPLEMENTED,
                             "port_mappings[%d].host_port: %d needs a CNI plugin with the "
                             "portMappings capability (such as portmap), and %s has none",
                             i, c->port_mappings[i]->host_port, path ? path : "the network");
    return 0;
}

/* A user namespace needs idmapped layers: the host must offer them (the
 * probe ran at start, before the loop). */
static int check_userns(const sl_rt *rt, const sl_pod_ns_modes *m, sl_error *e)
{
    if (!m->userns.on || rt->mount_probe.env.idmap)
        return 0;
    return sl_error_code(e, SL_GRPC_UNIMPLEMENTED,
                         "linux.security_context.namespace_options.userns_options.mode: POD: no "
                         "user namespaces on this host: %s",
                         rt->mount_probe.env.idmap_why);
}

void sl_cri_run_pod(sl_grpc_call *call, void *arg)
{
    sl_rt *rt = cri_rt(arg);
    const Runtime__V1__RunPodSandboxRequest *req = (const void *)sl_grpc_call_request(call);
    const Runtime__V1__PodSandboxConfig *c = req->config;
    if (!c || !c->metadata || !*c->metadata->name || !*c->metadata->uid ||
        !*c->metadata->namespace_) {
        sl_grpc_call_fail(call, SL_GRPC_INVALID_ARGUMENT,
                          "pod sandbox config with metadata name, uid and namespace is required");
        return;
    }
    sl_error fe = {0};
    if (sl_cri_check_fields(&c->base, "config", &fe) < 0) {
        sl_grpc_call_fail_error(call, &fe);
        return;
    }
    if (*req->runtime_handler && strcmp(req->runtime_handler, "runc")) {
        sl_grpc_call_fail(call, SL_GRPC_INVALID_ARGUMENT, "unknown runtime handler \"%s\"",
                          req->runtime_handler);
        return;
    }
    sl_error e = {0};
    sl_pod_ns_modes modes;
    if (sl_pod_security_check(c, &e) < 0 || sl_ns_pod_modes(c, &modes, &e) < 0 ||
        sl_pod_config_check(c, sl_pod_host_network(c), sl_pod_host_ipc(c), &e) < 0 ||
        check_host_ports(rt, c, &e) < 0 || check_userns(rt, &modes, &e) < 0) {
        sl_grpc_call_fail_error(call, &e);
        return;
    }
    char id[SL_ID_HEX + 1];
    sl_model_new_id(id);
    SL_AUTOFREE char *run_dir = sl_rt_pod_run_dir(rt, id);
    SL_AUTOFREE char *ns_dir = run_dir ? sl_path_join(run_dir, "ns") : NULL;
    json_t *rec = json_pack("{s:s, s:I, s:b, s:s, s:s, s:b, s:b}", "id", id, "created_at",
                            (json_int_t)sl_now_ns(), "ready", true, "runtime_handler",
                            req->runtime_handler, "ns_dir", ns_dir ? ns_dir : "", "host_network",
                            sl_pod_host_network(c), "host_ipc", sl_pod_host_ipc(c));
    if (!rec || !ns_dir) {
        json_decref(rec);
        sl_grpc_call_fail(call, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    sl_ns_pod_modes_save(&modes, rec);
    if (sl_pod_cgroup_setup(c, id, rec, &e) < 0) { /* checked before anything is made */
        json_decref(rec);
        sl_grpc_call_fail_error(call, &e);
        return;
    }
    sl_pod_run_plan plan = {.id = id,
                            .rec = rec,
                            .pid_pod = modes.pid == RUNTIME__V1__NAMESPACE_MODE__POD,
                            .userns = &modes.userns};
    sl_pod_run_start(rt, call, c, &plan);
}

/* ---- stop and remove: both wait for the monitor to stop every container ---- */

typedef struct pod_op {
    sl_rt *rt;
    sl_grpc_call *call;
    char id[SL_ID_HEX + 1];
    bool remove;
    int pending; /* monitor replies still awaited */
} pod_op;

static void finish_remove(sl_rt *rt, sl_pod *p)
{
    sl_error e;
    char id[SL_ID_HEX + 1];
    sl_pod_cgroup_remove(p); /* runc removed each container's own */
    for (sl_ctr *c = rt->model.ctrs, *next; c; c = next) {
        next = c->next;
        if (strcmp(c->pod_id, p->id))
            continue;
        snprintf(id, sizeof(id), "%s", c->id);
        sl_cri_forget_ctr(rt, c);
        sl_events_ctr(rt, RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_DELETED_EVENT, id, p->id);
    }
    sl_mon_unwatch(rt, p->id);
    /* Sent while the pod is still known, so the event carries its status. */
    sl_events_pod(rt, RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_DELETED_EVENT, p);
    sl_pod_ns_remove(sl_rec_str(p->rec, "ns_dir"), &e);
    sl_pod_pidns_release(sl_rec_str(p->rec, "ns_dir"), &e);
    SL_AUTOFREE char *run_dir = sl_rt_pod_run_dir(rt, p->id);
    if (run_dir)
        sl_rm_rf(run_dir, &e);
    sl_model_remove_pod(&rt->model, p, &e);
}

/* After the network is released: not ready any more, removed if asked. */
static void pod_op_released(void *arg)
{
    pod_op *op = arg;
    sl_pod *p = sl_model_pod(&op->rt->model, op->id);
    if (p) {
        bool was_ready = p->ready;
        p->ready = false;
        sl_error e;
        sl_model_save_pod(&op->rt->model, p, &e);
        if (was_ready)
            sl_events_pod(op->rt, RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_STOPPED_EVENT, p);
        if (op->remove)
            finish_remove(op->rt, p);
    }
    Runtime__V1__StopPodSandboxResponse resp = RUNTIME__V1__STOP_POD_SANDBOX_RESPONSE__INIT;
    sl_grpc_call_reply(op->call, &resp.base);
    free(op);
}

/* The containers are stopped: CNI DEL (children of the loop), then the
 * rest. */
static void pod_op_finish(pod_op *op)
{
    sl_pod *p = sl_model_pod(&op->rt->model, op->id);
    if (p)
        sl_pod_net_release(op->rt, p, pod_op_released, op);
    else
        pod_op_released(op);
}

static void pod_op_reply(void *arg, const json_t *reply, int *fds, size_t nfds)
{
    pod_op *op = arg;
    (void)reply; /* a vanished monitor has stopped everything anyway */
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
    if (--op->pending == 0)
        pod_op_finish(op);
}

/* Stop: SIGKILL every container still alive. Remove: the monitor shuts
 * down, which kills and deletes every container. */
static void send_pod_requests(pod_op *op, sl_pod *p, sl_monc *m)
{
    sl_error e;
    op->pending = 1; /* held until every request is out */
    if (op->remove) {
        if (sl_monc_request(m, json_pack("{s:s}", "type", "shutdown"), NULL, 0, pod_op_reply, op,
                            &e) == 0)
            op->pending++;
    } else {
        for (sl_ctr *c = op->rt->model.ctrs; c; c = c->next) {
            if (strcmp(c->pod_id, p->id))
                continue;
            sl_ctr_status st;
            sl_model_ctr_status(&op->rt->model, c, &st);
            if (st.state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED)
                continue;
            json_t *req =
                json_pack("{s:s, s:s, s:i}", "type", "stop", "container_id", c->id, "timeout", 0);
            if (sl_monc_request(m, req, NULL, 0, pod_op_reply, op, &e) == 0)
                op->pending++;
        }
    }
    pod_op_reply(op, NULL, NULL, 0);
}

static void orphan_killed(void *arg)
{
    pod_op_reply(arg, NULL, NULL, 0);
}

/* Without a monitor (it died) nothing else kills the containers it left. */
static void kill_orphans(pod_op *op, sl_pod *p)
{
    op->pending = 1;
    for (sl_ctr *c = op->rt->model.ctrs; c; c = c->next) {
        /* Every one, exited or not: what is left in its cgroup goes too. */
        if (!strcmp(c->pod_id, p->id) && sl_mon_kill_orphan(op->rt, p, c, orphan_killed, op) == 0)
            op->pending++;
    }
    pod_op_reply(op, NULL, NULL, 0);
}

static void stop_or_remove(sl_grpc_call *call, sl_rt *rt, const char *id, bool remove)
{
    sl_pod *p = sl_model_pod(&rt->model, id);
    if (!p) { /* idempotent: already removed */
        Runtime__V1__StopPodSandboxResponse resp = RUNTIME__V1__STOP_POD_SANDBOX_RESPONSE__INIT;
        sl_grpc_call_reply(call, &resp.base);
        return;
    }
    pod_op *op = calloc(1, sizeof(*op));
    if (!op) {
        sl_grpc_call_fail(call, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    op->rt = rt;
    op->call = call;
    op->remove = remove;
    snprintf(op->id, sizeof(op->id), "%s", id);
    sl_error e;
    sl_monc *m = sl_rt_pod_mon(rt, p, &e);
    if (!m) {
        kill_orphans(op, p);
        return;
    }
    if (remove)
        sl_mon_unwatch(rt, p->id); /* its monitor exits on purpose */
    send_pod_requests(op, p, m);
}

void sl_cri_stop_pod(sl_grpc_call *call, void *arg)
{
    const Runtime__V1__StopPodSandboxRequest *req = (const void *)sl_grpc_call_request(call);
    stop_or_remove(call, cri_rt(arg), req->pod_sandbox_id, false);
}

void sl_cri_remove_pod(sl_grpc_call *call, void *arg)
{
    const Runtime__V1__RemovePodSandboxRequest *req = (const void *)sl_grpc_call_request(call);
    stop_or_remove(call, cri_rt(arg), req->pod_sandbox_id, true);
}
