/* The CRI side of the benchmark, the same calls for both runtimes: one
 * host-network pod with a busybox `sleep 3600` container, a second
 * container with the port-forward sinks and sources, and the streaming
 * URLs (Exec, Attach, PortForward). */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RT_SVC "/runtime.v1.RuntimeService/"
#define IMG_SVC "/runtime.v1.ImageService/"
#define PF_SCRIPT_MAX 2048
#define STOP_TIMEOUT_S 0 /* containers are killed at once */
#define POD_TRIES 5

typedef struct podcfg {
    Runtime__V1__PodSandboxConfig cfg;
    Runtime__V1__PodSandboxMetadata md;
    Runtime__V1__LinuxPodSandboxConfig lx;
    Runtime__V1__LinuxSandboxSecurityContext sc;
    Runtime__V1__NamespaceOption ns;
    char uid[96];
} podcfg;

static int call(bn_rt *rt, const char *path, const void *req, const ProtobufCMessageDescriptor *d,
                void **resp)
{
    sl_error e;
    ProtobufCMessage *r = NULL;
    /* A connection left idle past the runtime's idle timeout (sluiced's
     * grpc-idle-timeout-ms: the runc-mode sluiced between its exec rows and
     * the teardown) was closed with GOAWAY: dial again, as gRPC clients do. */
    if (!sl_cri_client_usable(rt->cri)) {
        sl_cri_client *fresh;
        if (sl_cri_client_connect(rt->endpoint, BN_CALL_TIMEOUT_MS, &fresh, &e) < 0) {
            bn_error("%s: %s: reconnecting to %s: %s", rt->name, path, rt->endpoint, e.msg);
            return -1;
        }
        sl_cri_client_free(rt->cri);
        rt->cri = fresh;
    }
    int rc = sl_cri_client_call(rt->cri, path, req, d, &r, BN_CALL_TIMEOUT_MS, &e);
    if (rc != SL_CRI_OK) {
        bn_error("%s: %s: %s: %s", rt->name, path, sl_cri_code_name(rc), e.msg);
        return -1;
    }
    if (resp)
        *resp = r;
    else
        protobuf_c_message_free_unpacked(r, NULL);
    return 0;
}

static void free_msg(void *m)
{
    if (m)
        protobuf_c_message_free_unpacked(m, NULL);
}

/* The pod: host network, own PID namespace per container, no hostname
 * (runc refuses one without a UTS namespace). */
static void pod_config(const bn_rt *rt, podcfg *p)
{
    memset(p, 0, sizeof(*p));
    runtime__v1__pod_sandbox_config__init(&p->cfg);
    runtime__v1__pod_sandbox_metadata__init(&p->md);
    runtime__v1__linux_pod_sandbox_config__init(&p->lx);
    runtime__v1__linux_sandbox_security_context__init(&p->sc);
    runtime__v1__namespace_option__init(&p->ns);
    const char *name = rt->pod_name ? rt->pod_name : "bench";
    snprintf(p->uid, sizeof(p->uid), "sl-bench-%s-%s-%d", rt->name, name, (int)getpid());
    p->md.name = (char *)name;
    p->md.uid = p->uid;
    p->md.namespace_ = "sl-bench";
    p->ns.network = RUNTIME__V1__NAMESPACE_MODE__NODE;
    p->ns.pid = RUNTIME__V1__NAMESPACE_MODE__CONTAINER;
    p->ns.ipc = RUNTIME__V1__NAMESPACE_MODE__POD;
    p->sc.namespace_options = &p->ns;
    p->lx.security_context = &p->sc;
    p->cfg.metadata = &p->md;
    p->cfg.log_directory = (char *)rt->log_dir;
    p->cfg.linux = &p->lx;
}

static int version(bn_rt *rt)
{
    Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
    Runtime__V1__VersionResponse *r = NULL;
    if (call(rt, RT_SVC "Version", &req, &runtime__v1__version_response__descriptor, (void **)&r) <
        0)
        return -1;
    snprintf(rt->version, sizeof(rt->version), "%s %s", r->runtime_name, r->runtime_version);
    free_msg(r);
    return 0;
}

static int pull(bn_rt *rt)
{
    Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
    Runtime__V1__PullImageRequest req = RUNTIME__V1__PULL_IMAGE_REQUEST__INIT;
    spec.image = BN_IMAGE;
    req.image = &spec;
    return call(rt, IMG_SVC "PullImage", &req, &runtime__v1__pull_image_response__descriptor, NULL);
}

static int run_pod_once(bn_rt *rt)
{
    podcfg p;
    pod_config(rt, &p);
    Runtime__V1__RunPodSandboxRequest req = RUNTIME__V1__RUN_POD_SANDBOX_REQUEST__INIT;
    Runtime__V1__RunPodSandboxResponse *r = NULL;
    req.config = &p.cfg;
    if (call(rt, RT_SVC "RunPodSandbox", &req, &runtime__v1__run_pod_sandbox_response__descriptor,
             (void **)&r) < 0)
        return -1;
    rt->pod_id = strdup(r->pod_sandbox_id);
    free_msg(r);
    return rt->pod_id ? 0 : -1;
}

/* sluiced's monitor start can lose a race (it reports "did not start"
 * while the starter is exiting): try again, and say so in the results. */
static int run_pod(bn_rt *rt)
{
    for (int i = 0; i < POD_TRIES; i++) {
        if (run_pod_once(rt) == 0) {
            if (i)
                bn_info("setup", rt->name, "RunPodSandbox succeeded at try %d", i + 1);
            return 0;
        }
    }
    return -1;
}

static int create_ctr(bn_rt *rt, const char *name, const char *const *argv, size_t n, char **id)
{
    podcfg p;
    pod_config(rt, &p);
    char log[128];
    snprintf(log, sizeof(log), "%s.log", name);
    Runtime__V1__ContainerMetadata md = RUNTIME__V1__CONTAINER_METADATA__INIT;
    Runtime__V1__ImageSpec img = RUNTIME__V1__IMAGE_SPEC__INIT;
    Runtime__V1__ContainerConfig cfg = RUNTIME__V1__CONTAINER_CONFIG__INIT;
    Runtime__V1__CreateContainerRequest req = RUNTIME__V1__CREATE_CONTAINER_REQUEST__INIT;
    Runtime__V1__CreateContainerResponse *r = NULL;
    md.name = (char *)name;
    img.image = BN_IMAGE;
    cfg.metadata = &md;
    cfg.image = &img;
    cfg.command = (char **)argv;
    cfg.n_command = n;
    cfg.log_path = log;
    req.pod_sandbox_id = rt->pod_id;
    req.config = &cfg;
    req.sandbox_config = &p.cfg;
    if (call(rt, RT_SVC "CreateContainer", &req,
             &runtime__v1__create_container_response__descriptor, (void **)&r) < 0)
        return -1;
    *id = strdup(r->container_id);
    free_msg(r);
    return *id ? 0 : -1;
}

int bn_ctr_start(bn_rt *rt, const char *name, const char *const *argv, size_t n, char **id)
{
    if (create_ctr(rt, name, argv, n, id) < 0)
        return -1;
    Runtime__V1__StartContainerRequest req = RUNTIME__V1__START_CONTAINER_REQUEST__INIT;
    req.container_id = *id;
    if (call(rt, RT_SVC "StartContainer", &req, &runtime__v1__start_container_response__descriptor,
             NULL) < 0) {
        bn_ctr_remove(rt, *id);
        free(*id);
        *id = NULL;
        return -1;
    }
    return 0;
}

void bn_ctr_remove(bn_rt *rt, const char *id)
{
    Runtime__V1__StopContainerRequest s = RUNTIME__V1__STOP_CONTAINER_REQUEST__INIT;
    Runtime__V1__RemoveContainerRequest r = RUNTIME__V1__REMOVE_CONTAINER_REQUEST__INIT;
    s.container_id = r.container_id = (char *)id;
    s.timeout = STOP_TIMEOUT_S;
    call(rt, RT_SVC "StopContainer", &s, &runtime__v1__stop_container_response__descriptor, NULL);
    call(rt, RT_SVC "RemoveContainer", &r, &runtime__v1__remove_container_response__descriptor,
         NULL);
}

void bn_ctr_log_path(const bn_rt *rt, const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/%s.log", rt->log_dir, name);
}

/* The port-forward peers in the pod: a source (dd), sinks that answer "ok"
 * after N bytes (one for uploads, one per head-of-line connection), and
 * one that never reads. Host network: the ports were free on the host. */
static int start_pf_ctr(bn_ctx *c, bn_rt *rt)
{
    char script[PF_SCRIPT_MAX];
    uint16_t ports[3 + BN_HOL_CONNS];
    if (bn_free_ports(ports, 3 + BN_HOL_CONNS) < 0) {
        bn_error("%s: no free loopback ports for the port-forward pod", rt->name);
        return -1;
    }
    rt->port_down = ports[0];
    rt->port_up = ports[1];
    rt->port_stall = ports[2];
    memcpy(rt->port_hol, ports + 3, sizeof(rt->port_hol));
    int len =
        snprintf(script, sizeof(script),
                 "nc -ll -p %u -e sh -c 'exec dd if=/dev/zero bs=65536 count=%llu 2>/dev/null' &\n"
                 "nc -ll -p %u -e sh -c 'head -c %llu >/dev/null; echo ok' &\n"
                 "nc -ll -p %u -e sleep 3600 &\n",
                 rt->port_down, (unsigned long long)(c->o.pf_bytes / 65536), rt->port_up,
                 (unsigned long long)c->o.pf_bytes, rt->port_stall);
    for (int i = 0; i < BN_HOL_CONNS && len > 0 && (size_t)len < sizeof(script); i++) {
        len += snprintf(script + len, sizeof(script) - (size_t)len,
                        "nc -ll -p %u -e sh -c 'head -c %llu >/dev/null; echo ok' &\n",
                        rt->port_hol[i], (unsigned long long)c->o.hol_bytes);
    }
    if (len < 0 || (size_t)len + sizeof("wait\n") > sizeof(script)) {
        bn_error("%s: the port-forward pod script is over %d bytes", rt->name, PF_SCRIPT_MAX);
        return -1;
    }
    memcpy(script + len, "wait\n", sizeof("wait\n"));
    const char *argv[] = {"sh", "-c", script};
    return bn_ctr_start(rt, "pf", argv, 3, &rt->pf_ctr_id);
}

int bn_rt_setup(bn_ctx *c, bn_rt *rt)
{
    sl_error e;
    if (sl_cri_client_connect(rt->endpoint, BN_CALL_TIMEOUT_MS, &rt->cri, &e) < 0) {
        bn_error("%s: connect %s: %s", rt->name, rt->endpoint, e.msg);
        return -1;
    }
    double t0 = bn_now();
    if (version(rt) < 0 || (rt->pull && pull(rt) < 0))
        return -1;
    double t1 = bn_now();
    if (run_pod(rt) < 0)
        return -1;
    double t2 = bn_now();
    const char *sleeper[] = {"sleep", "3600"};
    if (bn_ctr_start(rt, "bb", sleeper, 2, &rt->ctr_id) < 0 ||
        (!rt->exec_only && start_pf_ctr(c, rt) < 0))
        return -1;
    bn_log("%s (%s): pod %.12s, container %.12s; image %.1f s, pod %.1f s, containers %.1f s",
           rt->name, rt->version, rt->pod_id, rt->ctr_id, t1 - t0, t2 - t1, bn_now() - t2);
    return 0;
}

static void remove_pod(bn_rt *rt, const char *id)
{
    Runtime__V1__StopPodSandboxRequest s = RUNTIME__V1__STOP_POD_SANDBOX_REQUEST__INIT;
    Runtime__V1__RemovePodSandboxRequest r = RUNTIME__V1__REMOVE_POD_SANDBOX_REQUEST__INIT;
    s.pod_sandbox_id = r.pod_sandbox_id = (char *)id;
    call(rt, RT_SVC "StopPodSandbox", &s, &runtime__v1__stop_pod_sandbox_response__descriptor,
         NULL);
    call(rt, RT_SVC "RemovePodSandbox", &r, &runtime__v1__remove_pod_sandbox_response__descriptor,
         NULL);
}

int bn_pod_enter(bn_rt *rt, const char *name, bn_pod_saved *saved)
{
    *saved = (bn_pod_saved){rt->pod_id, rt->ctr_id, rt->pod_name};
    rt->pod_id = rt->ctr_id = NULL;
    rt->pod_name = name;
    const char *sleeper[] = {"sleep", "3600"};
    if (run_pod(rt) == 0 && bn_ctr_start(rt, name, sleeper, 2, &rt->ctr_id) == 0)
        return 0;
    bn_pod_leave(rt, saved);
    return -1;
}

void bn_pod_leave(bn_rt *rt, bn_pod_saved *saved)
{
    if (rt->pod_id)
        remove_pod(rt, rt->pod_id);
    free(rt->pod_id);
    free(rt->ctr_id);
    rt->pod_id = saved->pod_id;
    rt->ctr_id = saved->ctr_id;
    rt->pod_name = saved->pod_name;
}

void bn_rt_teardown(bn_rt *rt)
{
    if (rt->cri && rt->pod_id)
        remove_pod(rt, rt->pod_id);
    sl_cri_client_free(rt->cri);
    rt->cri = NULL;
    free(rt->pod_id);
    free(rt->ctr_id);
    free(rt->pf_ctr_id);
    rt->pod_id = rt->ctr_id = rt->pf_ctr_id = NULL;
}

int bn_exec_url(bn_rt *rt, const char *const *cmd, size_t ncmd, bool in, bool out, bool err,
                char **url)
{
    Runtime__V1__ExecRequest req = RUNTIME__V1__EXEC_REQUEST__INIT;
    Runtime__V1__ExecResponse *r = NULL;
    req.container_id = rt->ctr_id;
    req.cmd = (char **)cmd;
    req.n_cmd = ncmd;
    req.stdin = in;
    req.stdout = out;
    req.stderr = err;
    if (call(rt, RT_SVC "Exec", &req, &runtime__v1__exec_response__descriptor, (void **)&r) < 0)
        return -1;
    *url = strdup(r->url);
    free_msg(r);
    return *url ? 0 : -1;
}

int bn_attach_url(bn_rt *rt, const char *ctr, char **url)
{
    Runtime__V1__AttachRequest req = RUNTIME__V1__ATTACH_REQUEST__INIT;
    Runtime__V1__AttachResponse *r = NULL;
    req.container_id = (char *)ctr;
    req.stdout = req.stderr = true;
    if (call(rt, RT_SVC "Attach", &req, &runtime__v1__attach_response__descriptor, (void **)&r) < 0)
        return -1;
    *url = strdup(r->url);
    free_msg(r);
    return *url ? 0 : -1;
}

int bn_pf_url(bn_rt *rt, char **url)
{
    Runtime__V1__PortForwardRequest req = RUNTIME__V1__PORT_FORWARD_REQUEST__INIT;
    Runtime__V1__PortForwardResponse *r = NULL;
    int32_t ports[3 + BN_HOL_CONNS] = {rt->port_down, rt->port_up, rt->port_stall};
    for (int i = 0; i < BN_HOL_CONNS; i++)
        ports[3 + i] = rt->port_hol[i];
    req.pod_sandbox_id = rt->pod_id;
    req.port = ports;
    req.n_port = sizeof(ports) / sizeof(ports[0]);
    if (call(rt, RT_SVC "PortForward", &req, &runtime__v1__port_forward_response__descriptor,
             (void **)&r) < 0)
        return -1;
    *url = strdup(r->url);
    free_msg(r);
    return *url ? 0 : -1;
}

int bn_exec_sync(bn_rt *rt, const char *const *cmd, size_t ncmd, int64_t timeout_s)
{
    Runtime__V1__ExecSyncRequest req = RUNTIME__V1__EXEC_SYNC_REQUEST__INIT;
    Runtime__V1__ExecSyncResponse *r = NULL;
    req.container_id = rt->ctr_id;
    req.cmd = (char **)cmd;
    req.n_cmd = ncmd;
    req.timeout = timeout_s;
    if (call(rt, RT_SVC "ExecSync", &req, &runtime__v1__exec_sync_response__descriptor,
             (void **)&r) < 0)
        return -1;
    int code = r->exit_code;
    free_msg(r);
    return code;
}
