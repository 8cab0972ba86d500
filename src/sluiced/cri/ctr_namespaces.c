#include "cri/ctr_namespaces.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cri/rt.h"
#include "pod/netns.h"
#include "pod/pidns.h"

#define POD_NS "linux.security_context.namespace_options"
#define CTR_NS "linux.security_context.namespace_options"

/* As ints: protobuf-c keeps unknown enum values, so a mode may be any. */
#define MODE_POD ((int)RUNTIME__V1__NAMESPACE_MODE__POD)
#define MODE_CONTAINER ((int)RUNTIME__V1__NAMESPACE_MODE__CONTAINER)
#define MODE_NODE ((int)RUNTIME__V1__NAMESPACE_MODE__NODE)
#define MODE_TARGET ((int)RUNTIME__V1__NAMESPACE_MODE__TARGET)

const char *sl_ns_mode_name(int mode)
{
    switch (mode) {
    case MODE_POD:
        return "POD";
    case MODE_CONTAINER:
        return "CONTAINER";
    case MODE_NODE:
        return "NODE";
    case MODE_TARGET:
        return "TARGET";
    default:
        return "UNKNOWN";
    }
}

/* Network and IPC: the pod's or the host's; nothing else has a meaning. */
static int pod_or_node(const char *field, int mode, bool *host, sl_error *e)
{
    if (mode != MODE_POD && mode != MODE_NODE)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "%s: %s (%d) is not valid here: POD or NODE", field,
                             sl_ns_mode_name(mode), mode);
    *host = mode == MODE_NODE;
    return 0;
}

/* One mapping of a POD user namespace: container id 0 up, to host ids
 * that are not the host's root. */
static int check_mapping(const char *field, const char *which, size_t n,
                         Runtime__V1__IDMapping *const *v, sl_idmap *out, sl_error *e)
{
    if (n != 1)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "%s.userns_options.%s: %zu mappings; sluice takes exactly one, from "
                             "container id 0",
                             field, which, n);
    const Runtime__V1__IDMapping *m = v[0];
    if (m->container_id != 0)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "%s.userns_options.%s[0]: container id 0 is not mapped (the mapping "
                             "starts at %u)",
                             field, which, m->container_id);
    if (m->length == 0 || (uint64_t)m->host_id + m->length > UINT32_MAX)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "%s.userns_options.%s[0]: host ids %u + length %u are not a range",
                             field, which, m->host_id, m->length);
    if (m->host_id == 0)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "%s.userns_options.%s[0]: maps the container's root to the host's "
                             "(host id 0): use mode NODE for the host's ids",
                             field, which);
    *out = (sl_idmap){m->container_id, m->host_id, m->length};
    return 0;
}

/* The host namespace a pod or container with a user namespace would use:
 * "network", "IPC", "PID", or NULL for none. */
static const char *host_ns(bool network, bool ipc, bool pid)
{
    return network ? "network" : ipc ? "IPC" : pid ? "PID" : NULL;
}

/* Field by field: sl_pod_userns has padding, which memcmp would compare. */
static bool same_map(const sl_idmap *a, const sl_idmap *b)
{
    return a->container_id == b->container_id && a->host_id == b->host_id && a->length == b->length;
}

/* NODE (the host's ids) or POD with one uid and one gid mapping. */
static int check_userns(const char *field, const Runtime__V1__UserNamespace *u, sl_pod_userns *out,
                        sl_error *e)
{
    *out = (sl_pod_userns){0};
    if (!u || (u->mode == MODE_NODE && !u->n_uids && !u->n_gids))
        return 0;
    if (u->mode == MODE_NODE)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "%s.userns_options: uids/gids mappings need mode POD; NODE uses the "
                             "host's ids",
                             field);
    if (u->mode != MODE_POD)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "%s.userns_options.mode: %s (%d) is not valid: POD or NODE", field,
                             sl_ns_mode_name(u->mode), u->mode);
    if (check_mapping(field, "uids", u->n_uids, u->uids, &out->uid, e) < 0 ||
        check_mapping(field, "gids", u->n_gids, u->gids, &out->gid, e) < 0)
        return -1;
    out->on = true;
    return 0;
}

int sl_ns_pod_modes(const Runtime__V1__PodSandboxConfig *c, sl_pod_ns_modes *out, sl_error *e)
{
    const Runtime__V1__LinuxPodSandboxConfig *l = c->linux;
    const Runtime__V1__NamespaceOption *o =
        l && l->security_context ? l->security_context->namespace_options : NULL;
    /* No options: every mode is the CRI default, POD. */
    Runtime__V1__NamespaceOption none = RUNTIME__V1__NAMESPACE_OPTION__INIT;
    if (!o)
        o = &none;
    if (pod_or_node(POD_NS ".network", o->network, &out->host_network, e) < 0 ||
        pod_or_node(POD_NS ".ipc", o->ipc, &out->host_ipc, e) < 0 ||
        check_userns(POD_NS, o->userns_options, &out->userns, e) < 0)
        return -1;
    /* the pod's namespaces belong to its user namespace: the host's cannot */
    const char *host = host_ns(out->host_network, out->host_ipc, o->pid == MODE_NODE);
    if (out->userns.on && host)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             POD_NS ": a pod with its own user namespace (userns_options POD) "
                                    "cannot use the host's %s namespace",
                             host);
    if (o->pid != MODE_POD && o->pid != MODE_CONTAINER && o->pid != MODE_NODE)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             POD_NS ".pid: %s (%d) is not valid for a pod sandbox: POD, "
                                    "CONTAINER or NODE",
                             sl_ns_mode_name(o->pid), o->pid);
    if (*o->target_id)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             POD_NS ".target_id: a pod sandbox cannot target a container");
    out->pid = o->pid;
    return 0;
}

static int ctr_pid(const Runtime__V1__NamespaceOption *o, const sl_pod_ns_modes *pod,
                   sl_ctr_ns_plan *out, sl_error *e)
{
    if (*o->target_id && o->pid != MODE_TARGET)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             CTR_NS ".target_id: set, but pid is %s, not TARGET",
                             sl_ns_mode_name(o->pid));
    switch ((int)o->pid) {
    case MODE_CONTAINER:
        out->pid = SL_PIDNS_OWN;
        return 0;
    case MODE_NODE:
        out->pid = SL_PIDNS_HOST;
        return 0;
    case MODE_POD: /* whatever the pod does: shared, the host's, or none */
        out->pid = pod->pid == MODE_POD    ? SL_PIDNS_POD
                   : pod->pid == MODE_NODE ? SL_PIDNS_HOST
                                           : SL_PIDNS_OWN;
        return 0;
    case MODE_TARGET:
        if (!*o->target_id)
            return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                                 CTR_NS ".target_id: pid mode TARGET needs the id of a container");
        out->pid = SL_PIDNS_TARGET;
        out->target_id = o->target_id;
        return 0;
    default:
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             CTR_NS ".pid: %s (%d) is not valid: POD, CONTAINER, NODE or TARGET",
                             sl_ns_mode_name(o->pid), o->pid);
    }
}

int sl_ns_ctr_plan(const Runtime__V1__ContainerConfig *c, const sl_pod_ns_modes *pod,
                   sl_ctr_ns_plan *out, sl_error *e)
{
    const Runtime__V1__LinuxContainerSecurityContext *sc =
        c->linux ? c->linux->security_context : NULL;
    const Runtime__V1__NamespaceOption *o = sc ? sc->namespace_options : NULL;
    Runtime__V1__NamespaceOption none = RUNTIME__V1__NAMESPACE_OPTION__INIT;
    if (!o)
        o = &none;
    *out = (sl_ctr_ns_plan){0};
    sl_pod_userns u;
    if (pod_or_node(CTR_NS ".network", o->network, &out->host_network, e) < 0 ||
        pod_or_node(CTR_NS ".ipc", o->ipc, &out->host_ipc, e) < 0 ||
        check_userns(CTR_NS, o->userns_options, &u, e) < 0 || ctr_pid(o, pod, out, e) < 0)
        return -1;
    /* A container is in its pod's user namespace (none given: the pod's);
     * asking for another one, or the host's in a pod that has its own, is
     * refused. */
    if (o->userns_options && u.on != pod->userns.on)
        return sl_error_code(
            e, SL_GRPC_INVALID_ARGUMENT, CTR_NS ".userns_options: %s, but the pod sandbox %s",
            u.on ? "POD" : "NODE",
            pod->userns.on ? "has a user namespace of its own" : "uses the host's user namespace");
    if (u.on && (!same_map(&u.uid, &pod->userns.uid) || !same_map(&u.gid, &pod->userns.gid)))
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             CTR_NS ".userns_options: the mappings differ from the pod "
                                    "sandbox's (uids %u %u %u, gids %u %u %u)",
                             pod->userns.uid.container_id, pod->userns.uid.host_id,
                             pod->userns.uid.length, pod->userns.gid.container_id,
                             pod->userns.gid.host_id, pod->userns.gid.length);
    const char *host = host_ns(out->host_network, out->host_ipc, out->pid == SL_PIDNS_HOST);
    if (pod->userns.on && host)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             CTR_NS ": a container of a pod with its own user namespace cannot "
                                    "use the host's %s namespace",
                             host);
    out->userns = pod->userns.on;
    /* POD for network and IPC means the pod's, which may be the host's */
    out->host_network |= pod->host_network;
    out->host_ipc |= pod->host_ipc;
    return 0;
}

void sl_ns_pod_modes_save(const sl_pod_ns_modes *m, json_t *rec)
{
    json_object_set_new(rec, "host_network", json_boolean(m->host_network));
    json_object_set_new(rec, "host_ipc", json_boolean(m->host_ipc));
    json_object_set_new(rec, "pid_mode", json_string(sl_ns_mode_name(m->pid)));
    if (m->userns.on)
        json_object_set_new(
            rec, "userns",
            json_pack("{s:[I,I,I], s:[I,I,I]}", "uid", (json_int_t)m->userns.uid.container_id,
                      (json_int_t)m->userns.uid.host_id, (json_int_t)m->userns.uid.length, "gid",
                      (json_int_t)m->userns.gid.container_id, (json_int_t)m->userns.gid.host_id,
                      (json_int_t)m->userns.gid.length));
}

static bool load_map(const json_t *a, sl_idmap *m)
{
    json_int_t v[3];
    for (size_t i = 0; i < 3; i++) {
        const json_t *x = json_array_get(a, i);
        if (!json_is_integer(x) || (v[i] = json_integer_value(x)) < 0 || v[i] > UINT32_MAX)
            return false;
    }
    *m = (sl_idmap){(uint32_t)v[0], (uint32_t)v[1], (uint32_t)v[2]};
    return true;
}

void sl_ns_pod_modes_load(const json_t *rec, sl_pod_ns_modes *m)
{
    const char *pid = json_string_value(json_object_get(rec, "pid_mode"));
    m->host_network = json_is_true(json_object_get(rec, "host_network"));
    m->host_ipc = json_is_true(json_object_get(rec, "host_ipc"));
    const json_t *u = json_object_get(rec, "userns");
    m->userns = (sl_pod_userns){0};
    m->userns.on = u && load_map(json_object_get(u, "uid"), &m->userns.uid) &&
                   load_map(json_object_get(u, "gid"), &m->userns.gid);
    m->pid = !pid                   ? MODE_CONTAINER
             : !strcmp(pid, "POD")  ? MODE_POD
             : !strcmp(pid, "NODE") ? MODE_NODE
                                    : MODE_CONTAINER;
}

/* The target's pid namespace, through its init process. */
static int target_pidns(sl_rt *rt, const sl_pod *p, const char *id, sl_ctr_ns *out, sl_error *e)
{
    sl_ctr *t = sl_model_ctr(&rt->model, id);
    if (!t)
        return sl_error_code(e, SL_GRPC_NOT_FOUND, CTR_NS ".target_id: container \"%s\" not found",
                             id);
    if (strcmp(t->pod_id, p->id))
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             CTR_NS ".target_id: container \"%s\" belongs to pod sandbox %s, "
                                    "not to %s",
                             id, t->pod_id, p->id);
    sl_ctr_status st;
    sl_model_ctr_status(&rt->model, t, &st);
    if (st.state != RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING || st.pid <= 0)
        return sl_error_code(e, SL_GRPC_FAILED_PRECONDITION,
                             CTR_NS ".target_id: container \"%s\" is not running", id);
    char path[64];
    snprintf(path, sizeof(path), "/proc/%lld/ns/pid", (long long)st.pid);
    if (!(out->pid = strdup(path)))
        return sl_error_set(e, ENOMEM, "container namespaces");
    return 0;
}

static int pidns_of(sl_rt *rt, const sl_pod *p, const char *ns_dir, const sl_ctr_ns_plan *plan,
                    sl_ctr_ns *out, sl_error *e)
{
    switch (plan->pid) {
    case SL_PIDNS_HOST:
        out->host_pid = true;
        return 0;
    case SL_PIDNS_POD:
        if (!(out->pid = sl_pod_pidns_path(ns_dir)))
            return sl_error_code(e, SL_GRPC_FAILED_PRECONDITION,
                                 "pod sandbox %s has no shared pid namespace (its holder is gone)",
                                 p->id);
        return 0;
    case SL_PIDNS_TARGET:
        return target_pidns(rt, p, plan->target_id, out, e);
    default:
        return 0;
    }
}

int sl_ctr_ns_resolve(sl_rt *rt, const sl_pod *p, const sl_ctr_ns_plan *plan, sl_ctr_ns *out,
                      sl_error *e)
{
    const char *ns_dir = sl_rec_str(p->rec, "ns_dir");
    *out = (sl_ctr_ns){0};
    if (!plan->host_network) { /* the UTS namespace goes with the network's */
        out->net = sl_pod_ns_path(ns_dir, "net");
        out->uts = sl_pod_ns_path(ns_dir, "uts");
    }
    if (!plan->host_ipc)
        out->ipc = sl_pod_ns_path(ns_dir, "ipc");
    if (plan->userns && !(out->user = sl_pod_ns_path(ns_dir, "user"))) {
        sl_ctr_ns_fini(out);
        return sl_error_code(e, SL_GRPC_FAILED_PRECONDITION,
                             "pod sandbox %s has no user namespace (%s/user is gone)", p->id,
                             ns_dir);
    }
    if (pidns_of(rt, p, ns_dir, plan, out, e) < 0) {
        sl_ctr_ns_fini(out);
        return -1;
    }
    return 0;
}

void sl_ctr_ns_fini(sl_ctr_ns *ns)
{
    free(ns->net);
    free(ns->ipc);
    free(ns->uts);
    free(ns->pid);
    free(ns->user);
    *ns = (sl_ctr_ns){0};
}
