/* RunPodSandbox, step by step without blocking the loop: the namespaces
 * are made on a worker thread (a helper child unshares them), the CNI
 * plugins and the pod monitor's start run as children of the loop with
 * deadlines. Other calls are served meanwhile. A failure at any step undoes
 * the earlier ones (CNI DEL too, also as children) before the answer. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cri/cri_util.h"
#include "sl_log.h"
#include "cri/mon_spawn.h"
#include "cri/pod_config.h"
#include "cri/pod_net.h"
#include "cri/pod_run.h"
#include "cri/pod_sweep.h"
#include "fsutil.h"
#include "pod/etc_files.h"
#include "pod/netns.h"
#include "pod/pidns.h"

typedef struct run_op {
    sl_rt *rt;
    sl_grpc_call *call;
    const Runtime__V1__PodSandboxConfig *c; /* the request's: lives until the answer */
    char id[SL_ID_HEX + 1];
    char *run_dir, *ns_dir, *pid_ns;
    sl_pod_ns_opts ns;
    sl_pod_userns userns;
    sl_pod_sysctl sysctls[SL_POD_MAX_SYSCTLS];
    json_t *rec;
    char *cni_result; /* once ADD succeeded: what DEL gets when undoing */
    uv_work_t work;
    int work_rc;
    sl_error e; /* the failure being answered */
} run_op;

static void op_free(run_op *op)
{
    free(op->run_dir);
    free(op->ns_dir);
    free(op->pid_ns);
    free(op->cni_result);
    json_decref(op->rec);
    free(op);
}

/* ---- undo ---- */

static void undo_local(run_op *op)
{
    sl_error e;
    sl_pod_ns_remove(op->ns_dir, &e);
    sl_pod_pidns_release(op->ns_dir, &e);
    sl_rm_rf(op->run_dir, &e);
    sl_grpc_call_fail_error(op->call, &op->e);
    op_free(op);
}

static void undo_net_done(void *arg, int rc, const char *ip, const char *result, const sl_error *e)
{
    (void)ip;
    (void)result;
    run_op *op = arg;
    if (rc < 0)
        sl_log(SL_LOG_WARN, "CNI DEL failed while undoing a pod's start", "pod", op->id, "error",
               e->msg, NULL);
    undo_local(op);
}

/* Answers op->e after undoing what was made: the monitor (if its start got
 * that far), the network, the namespaces, the run directory. */
static void fail_op(run_op *op)
{
    SL_AUTOFREE char *pidfile = sl_path_join(op->run_dir, "mon.pid");
    SL_AUTOFREE char *pidtext = NULL;
    sl_error e;
    if (pidfile && sl_read_file(pidfile, 64, &pidtext, NULL, &e) == 0 && atoi(pidtext) > 1)
        kill(atoi(pidtext), SIGKILL); /* a monitor whose start we gave up on */
    if (!op->cni_result) {
        undo_local(op);
        return;
    }
    SL_AUTOFREE char *netns = sl_pod_ns_path(op->ns_dir, "net");
    sl_cni_opts o;
    sl_pod_cni_opts(op->rt, op->id, netns, op->c, &o);
    int rc = sl_cni_del_start(op->rt->loop, &o, op->cni_result, undo_net_done, op, &e);
    free((void *)o.portmaps);
    if (rc < 0)
        undo_net_done(op, -1, NULL, NULL, &e);
}

static void fail_with(run_op *op, const sl_error *e)
{
    op->e = *e;
    fail_op(op);
}

/* ---- the last step: the pod exists ---- */

static void finish(run_op *op, pid_t mon_pid)
{
    sl_rt *rt = op->rt;
    json_object_set_new(op->rec, "mon_pid", json_integer(mon_pid));
    sl_pod *p = sl_model_add_pod(&rt->model, op->id, op->c, op->rec, &op->e);
    if (!p) {
        fail_op(op);
        return;
    }
    p->owner = rt;
    sl_error e;
    sl_rt_pod_mon(rt, p, &e);
    sl_events_pod(rt, RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_CREATED_EVENT, p);
    sl_events_pod(rt, RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_STARTED_EVENT, p);
    Runtime__V1__RunPodSandboxResponse resp = RUNTIME__V1__RUN_POD_SANDBOX_RESPONSE__INIT;
    resp.pod_sandbox_id = p->id;
    sl_grpc_call_reply(op->call, &resp.base);
    op_free(op);
}

/* ---- the monitor ---- */

static void mon_started(void *arg, pid_t pid, const sl_error *e)
{
    run_op *op = arg;
    if (pid <= 0)
        fail_with(op, e);
    else
        finish(op, pid);
}

/* The monitor lives in the pod's network, where it makes port-forward
 * connections. */
static void start_monitor(run_op *op)
{
    sl_rt *rt = op->rt;
    SL_AUTOFREE char *netns = op->ns.host_network ? NULL : sl_pod_ns_path(op->ns_dir, "net");
    SL_AUTOFREE char *userns = op->userns.on ? sl_pod_ns_path(op->ns_dir, "user") : NULL;
    if ((!op->ns.host_network && !netns) || (op->userns.on && !userns)) {
        sl_error_set(&op->e, ENOMEM, "the pod's network namespace path");
        fail_op(op);
        return;
    }
    sl_mon_spawn_opts o = {.mon_path = rt->mon_path,
                           .pod_id = op->id,
                           .run_dir = op->run_dir,
                           .state_dir = rt->cfg->state_dir,
                           .runtime = rt->cfg->runtime_path,
                           .netns = netns,
                           .pid_ns = op->pid_ns,
                           .userns = userns,
                           .cgroup = rt->cfg->monitor_cgroup,
                           .timeout_ms = rt->cfg->monitor_start_timeout_ms};
    if (sl_mon_spawn_start(rt->loop, &o, mon_started, op, &op->e) < 0)
        fail_op(op);
}

/* ---- /etc files ---- */

/* /etc/hostname, /etc/hosts and /etc/resolv.conf for every container. */
static void write_pod_files(run_op *op)
{
    SL_AUTOFREE char *dir = sl_path_join(op->run_dir, SL_POD_ETC_DIR);
    sl_pod_dns dns;
    sl_pod_etc in = {.dir = dir,
                     .hostname = op->c->hostname,
                     .ip = sl_rec_str(op->rec, "ip"),
                     .host_network = op->ns.host_network,
                     .dns = sl_pod_config_dns(op->c, &dns),
                     .host_etc = "/etc"};
    if (!dir)
        sl_error_set(&op->e, ENOMEM, "pod files");
    if (!dir || sl_pod_etc_write(&in, &op->e) < 0)
        fail_op(op);
    else
        start_monitor(op);
}

/* ---- network ---- */

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

static void net_failed(run_op *op, const sl_error *e)
{
    op->e = *e;
    op->e.code = SL_GRPC_UNKNOWN;
    sl_error_wrap(&op->e, "failed to set up the pod network");
    fail_op(op);
}

static void net_done(void *arg, int rc, const char *ip, const char *result, const sl_error *e)
{
    (void)ip;
    run_op *op = arg;
    if (rc < 0) {
        net_failed(op, e);
        return;
    }
    op->cni_result = strdup(result);
    json_object_set_new(op->rec, "cni_result", json_string(result));
    sl_error ne;
    if (sl_pod_start_note_cni(op->run_dir, result, &ne) < 0) /* only a cut start needs it */
        sl_log(SL_LOG_WARN, "CNI result not noted in the run directory", "pod", op->id, "error",
               ne.msg, NULL);
    record_ips(op->rec, result);
    if (!op->cni_result) {
        sl_error_set(&op->e, ENOMEM, "pod network");
        fail_op(op);
        return;
    }
    write_pod_files(op);
}

static void setup_network(run_op *op)
{
    if (op->ns.host_network) {
        write_pod_files(op);
        return;
    }
    SL_AUTOFREE char *netns = sl_pod_ns_path(op->ns_dir, "net");
    sl_cni_opts o;
    sl_pod_cni_opts(op->rt, op->id, netns, op->c, &o);
    sl_error e;
    int rc = -1;
    if (sl_pod_config_first_host_port(op->c) >= 0 && !o.portmaps)
        sl_error_set(&e, ENOMEM, "port mappings");
    else
        rc = sl_cni_add_start(op->rt->loop, &o, net_done, op, &e);
    free((void *)o.portmaps);
    if (rc < 0)
        net_failed(op, &e);
}

/* ---- namespaces, on a worker thread ---- */

static void ns_work(uv_work_t *w)
{
    run_op *op = w->data;
    /* the request is noted before anything is made that a next sluiced
     * would have to undo, should this one end before the pod is recorded */
    /* with a user namespace, runc binds the pod's /etc files from here as
     * the container's root, which must be able to reach them */
    op->work_rc = sl_mkdir_p(op->run_dir, op->userns.on ? 0711 : 0700, &op->e) < 0 ||
                          sl_pod_start_note_config(op->run_dir, op->c, &op->e) < 0
                      ? -1
                      : sl_pod_ns_create(&op->ns, &op->e);
}

static void ns_after(uv_work_t *w, int status)
{
    run_op *op = w->data;
    if (status < 0 || op->work_rc < 0) {
        if (status < 0)
            sl_error_set(&op->e, -status, "pod namespaces");
        fail_op(op);
        return;
    }
    setup_network(op);
}

void sl_pod_run_start(sl_rt *rt, sl_grpc_call *call, const Runtime__V1__PodSandboxConfig *c,
                      const sl_pod_run_plan *plan)
{
    run_op *op = calloc(1, sizeof(*op));
    if (!op) {
        json_decref(plan->rec);
        sl_grpc_call_fail(call, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    *op = (run_op){.rt = rt, .call = call, .c = c, .rec = plan->rec};
    snprintf(op->id, sizeof(op->id), "%s", plan->id);
    op->run_dir = sl_rt_pod_run_dir(rt, op->id);
    op->ns_dir = op->run_dir ? sl_path_join(op->run_dir, "ns") : NULL;
    op->pid_ns = plan->pid_pod && op->ns_dir ? sl_pod_pidns_file(op->ns_dir) : NULL;
    op->ns = (sl_pod_ns_opts){.dir = op->ns_dir,
                              .host_network = sl_pod_host_network(c),
                              .host_ipc = sl_pod_host_ipc(c),
                              .hostname = c->hostname, /* "": the node's */
                              .sysctls = op->sysctls,
                              .n_sysctls = sl_pod_config_sysctls(c, op->sysctls)};
    op->userns = *plan->userns;
    if (op->userns.on) {
        op->ns.uid_map = &op->userns.uid;
        op->ns.gid_map = &op->userns.gid;
    }
    op->work.data = op;
    if (!op->run_dir || !op->ns_dir || (plan->pid_pod && !op->pid_ns)) {
        sl_error_set(&op->e, ENOMEM, "pod sandbox");
        sl_grpc_call_fail_error(call, &op->e);
        op_free(op);
        return;
    }
    int rc = uv_queue_work(rt->loop, &op->work, ns_work, ns_after);
    if (rc < 0) {
        sl_error_set(&op->e, -rc, "pod namespaces");
        sl_grpc_call_fail_error(call, &op->e);
        op_free(op);
    }
}
