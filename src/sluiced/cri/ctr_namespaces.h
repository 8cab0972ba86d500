/* The CRI NamespaceOption of pods and containers (network, IPC, PID, user):
 * which modes sluice applies, and the namespace paths a container joins.
 *
 * Pod: network POD (own, pinned) or NODE; IPC POD (own, pinned) or NODE;
 * PID POD (one pid namespace for the pod, held by sluice-pause under the
 * pod's monitor and pinned as <ns_dir>/pid), CONTAINER (each container its
 * own) or NODE (the host's); user NODE (the host's) or POD with one uid and
 * one gid mapping from container id 0 (a user namespace pinned as
 * <ns_dir>/user, which owns the pod's other namespaces; not with the host's
 * network, IPC or PID namespace).
 * Container: network and IPC POD (the pod's) or NODE (the host's); PID
 * CONTAINER (its own), POD (the pod's: shared when the pod's mode is POD,
 * the host's when NODE, its own when CONTAINER), NODE, or TARGET (the pid
 * namespace of a running container of the same pod); user: the pod's (a
 * container's userns_options, if any, must say what the pod's do).
 * Everything else is refused naming the field. */
#ifndef SL_CTR_NAMESPACES_H
#define SL_CTR_NAMESPACES_H

#include <jansson.h>
#include <stdbool.h>

#include "container/idmap.h"
#include "grpc/api.pb-c.h"
#include "grpc/grpc_status.h"
#include "sys_error.h"

typedef struct sl_rt sl_rt;
typedef struct sl_pod sl_pod;

/* A pod's own user namespace (userns_options mode POD): on, with one
 * mapping each for uids and gids from container id 0. */
typedef struct sl_pod_userns {
    bool on;
    sl_idmap uid, gid;
} sl_pod_userns;

/* The modes a pod was created with (also kept in its record). */
typedef struct sl_pod_ns_modes {
    bool host_network, host_ipc;
    int pid; /* RUNTIME__V1__NAMESPACE_MODE__POD, __CONTAINER or __NODE */
    sl_pod_userns userns;
} sl_pod_ns_modes;

typedef enum { SL_PIDNS_OWN, SL_PIDNS_POD, SL_PIDNS_HOST, SL_PIDNS_TARGET } sl_pidns_kind;

/* What a container's options resolve to against its pod. */
typedef struct sl_ctr_ns_plan {
    bool host_network, host_ipc;
    sl_pidns_kind pid;
    const char *target_id; /* SL_PIDNS_TARGET: borrowed from the config */
    bool userns;           /* in the pod's user namespace */
} sl_ctr_ns_plan;

/* Namespace paths for the OCI spec (malloc'd; NULL = the host's, except
 * pid: NULL = a new one unless host_pid). */
typedef struct sl_ctr_ns {
    char *net, *ipc, *uts, *pid, *user; /* user: NULL = the host's */
    bool host_pid;
} sl_ctr_ns;

/* The pod's modes from its config, or -1 with *e (INVALID_ARGUMENT or
 * UNIMPLEMENTED naming the field). */
int sl_ns_pod_modes(const Runtime__V1__PodSandboxConfig *c, sl_pod_ns_modes *out, sl_error *e);

/* The container's plan, or -1 with *e naming the field. */
int sl_ns_ctr_plan(const Runtime__V1__ContainerConfig *c, const sl_pod_ns_modes *pod,
                   sl_ctr_ns_plan *out, sl_error *e);

/* "POD", "CONTAINER", "NODE", "TARGET" or "UNKNOWN". */
const char *sl_ns_mode_name(int mode);

/* Record field helpers: the pod's modes are kept as "host_network",
 * "host_ipc", "pid_mode" (a mode name; absent in records of older
 * versions, which gave every container its own pid namespace) and, for a
 * pod with its own user namespace, "userns": {"uid": [c, h, len],
 * "gid": [...]}. */
void sl_ns_pod_modes_save(const sl_pod_ns_modes *m, json_t *rec);
void sl_ns_pod_modes_load(const json_t *rec, sl_pod_ns_modes *m);

/* Resolves the plan to paths: the pod's pinned namespaces, the pod's
 * shared pid namespace file, or the target container's pid namespace (it
 * must exist: NOT_FOUND; be in the pod: INVALID_ARGUMENT; and run:
 * FAILED_PRECONDITION). Returns 0 (free with sl_ctr_ns_fini) or -1 (*e). */
int sl_ctr_ns_resolve(sl_rt *rt, const sl_pod *p, const sl_ctr_ns_plan *plan, sl_ctr_ns *out,
                      sl_error *e);
void sl_ctr_ns_fini(sl_ctr_ns *ns);

#endif
