/* RuntimeService pod sandbox calls. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cri/cri_util.h"
#include "cri/ctr_namespaces.h"
#include "cri/service.h"
#include "fsutil.h"
#include "pod/cni.h"
#include "pod/netns.h"
#include "pod/pidns.h"

static bool host_network(const Runtime__V1__PodSandboxConfig *c)
{
    const Runtime__V1__LinuxPodSandboxConfig *l = c->linux;
    return l && l->security_context && l->security_context->namespace_options &&
           l->security_context->namespace_options->network == RUNTIME__V1__NAMESPACE_MODE__NODE;
}

static bool host_ipc(const Runtime__V1__PodSandboxConfig *c)
{
    const Runtime__V1__LinuxPodSandboxConfig *l = c->linux;
    return l && l->security_context && l->security_context->namespace_options &&
           l->security_context->namespace_options->ipc == RUNTIME__V1__NAMESPACE_MODE__NODE;
}

static void cni_opts(sl_rt *rt, const char *id, const char *netns,
                     const Runtime__V1__PodSandboxConfig *c, sl_cni_opts *o)
{
    const Runtime__V1__PodSandboxMetadata *md = c->metadata;
    *o = (sl_cni_opts){.conf_dir = rt->cfg->cni_conf_dir,
                       .bin_dir = rt->cfg->cni_bin_dir,
                       .container_id = id,
                       .netns = netns,
                       .pod_namespace = md->namespace_,
                       .pod_name = md->name,
                       .pod_uid = md->uid};
}

/* Undoes what a failed RunPodSandbox did so far. */
static void unwind(sl_rt *rt, const char *id, const char *run_dir, const char *ns_dir,
                   const Runtime__V1__PodSandboxConfig *c, const char *cni_result)
{
    sl_error e;
    SL_AUTOFREE char *pidfile = run_dir ? sl_path_join(run_dir, "mon.pid") : NULL;
    SL_AUTOFREE char *pidtext = NULL;
    if (pidfile && sl_read_file(pidfile, 64, &pidtext, NULL, &e) == 0 && atoi(pidtext) > 1)
        kill(atoi(pidtext), SIGKILL); /* a monitor whose start we gave up on */
    if (cni_result) {
        SL_AUTOFREE char *netns = sl_pod_ns_path(ns_dir, "net");
        sl_cni_opts o;
        cni_opts(rt, id, netns, c, &o);
        sl_cni_del(&o, cni_result, &e);
    }
    sl_pod_ns_remove(ns_dir, &e);
    sl_pod_pidns_release(ns_dir, &e);
    sl_rm_rf(run_dir, &e);
}

static int setup_network(sl_rt *rt, const char *id, const char *ns_dir,
                         const Runtime__V1__PodSandboxConfig *c, json_t *rec, sl_error *e)
{
    if (host_network(c))
        return 0;
    SL_AUTOFREE char *netns = sl_pod_ns_path(ns_dir, "net");
    sl_cni_opts o;
    cni_opts(rt, id, netns, c, &o);
    char *ip = NULL, *result = NULL;
    if (sl_cni_add(&o, &ip, &result, e) < 0) {
        e->code = SL_GRPC_UNKNOWN;
        return sl_error_wrap(e, "failed to set up the pod network");
    }
    json_object_set_new(rec, "ip", json_string(ip ? ip : ""));
    json_object_set_new(rec, "cni_result", json_string(result));
    free(ip);
    free(result);
    return 0;
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
    if (*req->runtime_handler && strcmp(req->runtime_handler, "runc")) {
        sl_grpc_call_fail(call, SL_GRPC_INVALID_ARGUMENT, "unknown runtime handler \"%s\"",
                          req->runtime_handler);
        return;
    }
    sl_error e = {0};
    sl_pod_ns_modes modes;
    if (sl_ns_pod_modes(c, &modes, &e) < 0) {
        sl_grpc_call_fail_error(call, &e);
        return;
    }
    char id[SL_ID_HEX + 1];
    sl_model_new_id(id);
    SL_AUTOFREE char *run_dir = sl_rt_pod_run_dir(rt, id);
    SL_AUTOFREE char *ns_dir = run_dir ? sl_path_join(run_dir, "ns") : NULL;
    SL_AUTOFREE char *pid_ns =
        modes.pid == RUNTIME__V1__NAMESPACE_MODE__POD ? sl_pod_pidns_file(ns_dir) : NULL;
    sl_pod_ns_opts ns = {.dir = ns_dir,
                         .host_network = host_network(c),
                         .host_ipc = host_ipc(c),
                         .hostname = *c->hostname ? c->hostname : c->metadata->name};
    json_t *rec = json_pack("{s:s, s:I, s:b, s:s, s:s, s:b, s:b}", "id", id, "created_at",
                            (json_int_t)sl_now_ns(), "ready", true, "runtime_handler",
                            req->runtime_handler, "ns_dir", ns_dir ? ns_dir : "", "host_network",
                            ns.host_network, "host_ipc", ns.host_ipc);
    if (rec)
        sl_ns_pod_modes_save(&modes, rec);
    pid_t mon_pid = 0;
    if (!run_dir || !ns_dir || !rec || sl_mkdir_p(run_dir, 0700, &e) < 0 ||
        sl_pod_ns_create(&ns, &e) < 0 || setup_network(rt, id, ns_dir, c, rec, &e) < 0 ||
        sl_monc_spawn(rt->mon_path, id, run_dir, rt->cfg->state_dir, rt->cfg->runtime_path, pid_ns,
                      &mon_pid, &e) < 0) {
        unwind(rt, id, run_dir, ns_dir, c, json_string_value(json_object_get(rec, "cni_result")));
        json_decref(rec);
        sl_grpc_call_fail_error(call, &e);
        return;
    }
    json_object_set_new(rec, "mon_pid", json_integer(mon_pid));
    sl_pod *p = sl_model_add_pod(&rt->model, id, c, rec, &e);
    json_decref(rec);
    if (!p) {
        unwind(rt, id, run_dir, ns_dir, c, NULL);
        sl_grpc_call_fail_error(call, &e);
        return;
    }
    p->owner = rt;
    sl_rt_pod_mon(rt, p, &e);
    Runtime__V1__RunPodSandboxResponse resp = RUNTIME__V1__RUN_POD_SANDBOX_RESPONSE__INIT;
    resp.pod_sandbox_id = p->id;
    sl_grpc_call_reply(call, &resp.base);
}

/* ---- stop and remove: both wait for the monitor to stop every container ---- */

typedef struct pod_op {
    sl_rt *rt;
    sl_grpc_call *call;
    char id[SL_ID_HEX + 1];
    bool remove;
    int pending; /* monitor replies still awaited */
} pod_op;

static void release_network(sl_rt *rt, sl_pod *p)
{
    const char *result = sl_rec_str(p->rec, "cni_result");
    if (sl_rec_bool(p->rec, "host_network") || !*result)
        return;
    SL_AUTOFREE char *netns = sl_pod_ns_path(sl_rec_str(p->rec, "ns_dir"), "net");
    sl_cni_opts o;
    cni_opts(rt, p->id, netns, p->config, &o);
    sl_error e;
    if (sl_cni_del(&o, result, &e) < 0)
        fprintf(stderr, "sluiced: pod %s: %s\n", p->id, e.msg);
    json_object_set_new(p->rec, "cni_result", json_string(""));
}

/* runc removes each container's cgroup; the pod level (see the
 * cgroupsPath of ctr_spec) is ours: every v1 controller, or v2. */
static void remove_pod_cgroups(const char *pod_id)
{
    char path[512];
    DIR *d = opendir("/sys/fs/cgroup");
    struct dirent *de;
    snprintf(path, sizeof(path), "/sys/fs/cgroup/sluice/%.16s", pod_id);
    rmdir(path);
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/sluice/%.16s", de->d_name, pod_id);
        rmdir(path);
    }
    if (d)
        closedir(d);
}

static void finish_remove(sl_rt *rt, sl_pod *p)
{
    sl_error e;
    remove_pod_cgroups(p->id);
    for (sl_ctr *c = rt->model.ctrs, *next; c; c = next) {
        next = c->next;
        if (!strcmp(c->pod_id, p->id))
            sl_cri_forget_ctr(rt, c);
    }
    sl_pod_ns_remove(sl_rec_str(p->rec, "ns_dir"), &e);
    sl_pod_pidns_release(sl_rec_str(p->rec, "ns_dir"), &e);
    SL_AUTOFREE char *run_dir = sl_rt_pod_run_dir(rt, p->id);
    if (run_dir)
        sl_rm_rf(run_dir, &e);
    sl_model_remove_pod(&rt->model, p, &e);
}

static void pod_op_finish(pod_op *op)
{
    sl_pod *p = sl_model_pod(&op->rt->model, op->id);
    if (p) {
        release_network(op->rt, p);
        p->ready = false;
        sl_error e;
        sl_model_save_pod(&op->rt->model, p, &e);
        if (op->remove)
            finish_remove(op->rt, p);
    }
    Runtime__V1__StopPodSandboxResponse resp = RUNTIME__V1__STOP_POD_SANDBOX_RESPONSE__INIT;
    sl_grpc_call_reply(op->call, &resp.base);
    free(op);
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
        op->pending = 1;
        pod_op_reply(op, NULL, NULL, 0);
        return;
    }
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
