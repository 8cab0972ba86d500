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
#include "cri/service.h"
#include "fsutil.h"
#include "pod/cni.h"
#include "pod/etc_files.h"
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

/* The pod's CNI options; the host ports in o->portmaps are malloc'd
 * (free them). ADD and DEL get the same ones, as portmap needs. */
static void cni_opts(sl_rt *rt, const char *id, const char *netns,
                     const Runtime__V1__PodSandboxConfig *c, sl_cni_opts *o)
{
    const Runtime__V1__PodSandboxMetadata *md = c->metadata;
    sl_cni_portmap *maps;
    size_t n = sl_pod_config_portmaps(c, &maps);
    *o = (sl_cni_opts){.conf_dir = rt->cfg->cni_conf_dir,
                       .bin_dir = rt->cfg->cni_bin_dir,
                       .container_id = id,
                       .netns = netns,
                       .pod_namespace = md->namespace_,
                       .pod_name = md->name,
                       .pod_uid = md->uid,
                       .portmaps = maps,
                       .n_portmaps = n};
}

/* A host port needs a plugin that takes portMappings: refused up front
 * rather than accepted and left unmapped (containerd ignores it then). */
static int check_host_ports(sl_rt *rt, const Runtime__V1__PodSandboxConfig *c, sl_error *e)
{
    int i = sl_pod_config_first_host_port(c);
    if (i < 0 || host_network(c))
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
        free((void *)o.portmaps);
    }
    sl_pod_ns_remove(ns_dir, &e);
    sl_pod_pidns_release(ns_dir, &e);
    sl_rm_rf(run_dir, &e);
}

/* rec gets "ip" (the first address) and "additional_ips" (the rest). */
static void record_ips(json_t *rec, const char *result)
{
    char *ips[SL_CNI_MAX_IPS];
    size_t n = sl_cni_result_ips(result, ips, SL_CNI_MAX_IPS);
    json_t *more = json_array();
    for (size_t i = 1; i < n; i++)
        json_array_append_new(more, json_string(ips[i]));
    json_object_set_new(rec, "ip", json_string(n ? ips[0] : ""));
    json_object_set_new(rec, "additional_ips", more);
    for (size_t i = 0; i < n; i++)
        free(ips[i]);
}

static int setup_network(sl_rt *rt, const char *id, const char *ns_dir,
                         const Runtime__V1__PodSandboxConfig *c, json_t *rec, sl_error *e)
{
    if (host_network(c))
        return 0;
    SL_AUTOFREE char *netns = sl_pod_ns_path(ns_dir, "net");
    sl_cni_opts o;
    cni_opts(rt, id, netns, c, &o);
    if (sl_pod_config_first_host_port(c) >= 0 && !o.portmaps)
        return sl_error_set(e, ENOMEM, "port mappings");
    char *ip = NULL, *result = NULL;
    int rc = sl_cni_add(&o, &ip, &result, e);
    free((void *)o.portmaps);
    if (rc < 0) {
        e->code = SL_GRPC_UNKNOWN;
        return sl_error_wrap(e, "failed to set up the pod network");
    }
    json_object_set_new(rec, "cni_result", json_string(result));
    record_ips(rec, result);
    free(ip);
    free(result);
    return 0;
}

/* /etc/hostname, /etc/hosts and /etc/resolv.conf for every container. */
static int write_pod_files(const char *run_dir, const Runtime__V1__PodSandboxConfig *c,
                           const json_t *rec, sl_error *e)
{
    SL_AUTOFREE char *dir = sl_path_join(run_dir, SL_POD_ETC_DIR);
    sl_pod_dns dns;
    sl_pod_etc in = {.dir = dir,
                     .hostname = c->hostname,
                     .ip = sl_rec_str(rec, "ip"),
                     .host_network = host_network(c),
                     .dns = sl_pod_config_dns(c, &dns),
                     .host_etc = "/etc"};
    return dir ? sl_pod_etc_write(&in, e) : sl_error_set(e, ENOMEM, "pod files");
}

/* Namespaces (hostname and sysctls inside), network, /etc files. */
static int create_pod(sl_rt *rt, const char *id, const char *run_dir, const sl_pod_ns_opts *ns,
                      const Runtime__V1__PodSandboxConfig *c, json_t *rec, sl_error *e)
{
    sl_pod_sysctl sysctls[SL_POD_MAX_SYSCTLS];
    sl_pod_ns_opts o = *ns;
    o.sysctls = sysctls;
    o.n_sysctls = sl_pod_config_sysctls(c, sysctls);
    if (sl_mkdir_p(run_dir, 0700, e) < 0 || sl_pod_ns_create(&o, e) < 0 ||
        setup_network(rt, id, ns->dir, c, rec, e) < 0 || write_pod_files(run_dir, c, rec, e) < 0)
        return -1;
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
        sl_pod_config_check(c, host_network(c), host_ipc(c), &e) < 0 ||
        check_host_ports(rt, c, &e) < 0) {
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
                         .hostname = c->hostname}; /* "": the node's */
    json_t *rec = json_pack("{s:s, s:I, s:b, s:s, s:s, s:b, s:b}", "id", id, "created_at",
                            (json_int_t)sl_now_ns(), "ready", true, "runtime_handler",
                            req->runtime_handler, "ns_dir", ns_dir ? ns_dir : "", "host_network",
                            ns.host_network, "host_ipc", ns.host_ipc);
    if (rec)
        sl_ns_pod_modes_save(&modes, rec);
    if (rec && sl_pod_cgroup_setup(c, id, rec, &e) < 0) { /* checked before anything is made */
        json_decref(rec);
        sl_grpc_call_fail_error(call, &e);
        return;
    }
    pid_t mon_pid = 0;
    if (!run_dir || !ns_dir || !rec || create_pod(rt, id, run_dir, &ns, c, rec, &e) < 0 ||
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
    sl_events_pod(rt, RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_CREATED_EVENT, p);
    sl_events_pod(rt, RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_STARTED_EVENT, p);
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
    free((void *)o.portmaps);
    json_object_set_new(p->rec, "cni_result", json_string(""));
}

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
    /* Sent while the pod is still known, so the event carries its status. */
    sl_events_pod(rt, RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_DELETED_EVENT, p);
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
        bool was_ready = p->ready;
        release_network(op->rt, p);
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
