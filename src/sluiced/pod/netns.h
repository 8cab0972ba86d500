/* Pod namespaces pinned to files: a short-lived child unshares the
 * namespaces, and the parent bind-mounts them under the pod's run
 * directory, so they outlive every process and a restarted sluiced finds
 * them again. */
#ifndef SL_POD_NETNS_H
#define SL_POD_NETNS_H

#include <stdbool.h>
#include <stddef.h>

#include "container/idmap.h"
#include "sys_error.h"

/* How long the helper child may take to create the namespaces. */
#define SL_POD_NS_TIMEOUT_MS 30000

typedef struct sl_pod_sysctl {
    const char *name; /* either form of pod/sysctl.h, already checked */
    const char *value;
} sl_pod_sysctl;

typedef struct sl_pod_ns_opts {
    const char *dir;   /* where the files go: <dir>/net, <dir>/ipc, <dir>/uts */
    bool host_network; /* use the host's network (and UTS) namespace */
    bool host_ipc;     /* use the host's IPC namespace */
    /* Set in the new UTS namespace (ignored with host network); NULL or ""
     * keeps the node's hostname, which the new namespace starts with. */
    const char *hostname;
    const sl_pod_sysctl *sysctls; /* written, in order, inside the new namespaces */
    size_t n_sysctls;
    /* Non-NULL: a user namespace with these maps is made first (<dir>/user)
     * and owns the others, as the containers that join it need. */
    const sl_idmap *uid_map, *gid_map;
} sl_pod_ns_opts;

/* Creates and pins the requested namespaces (forks a helper and waits for
 * it: call it from a worker thread, not from an event loop); loopback is brought up in a
 * new network namespace and the sysctls are written from inside them, so
 * every container that joins sees them. Returns 0 or -1 (*e; code
 * INVALID_ARGUMENT naming `linux.sysctls["name"]` when the kernel has no
 * such sysctl in those namespaces or refuses the value). On failure
 * nothing stays mounted. */
int sl_pod_ns_create(const sl_pod_ns_opts *o, sl_error *e);

/* Unmounts and removes every pinned namespace file under dir. Missing ones
 * are fine (idempotent). Returns 0 or -1 (*e). */
int sl_pod_ns_remove(const char *dir, sl_error *e);

/* Path of a pinned namespace ("net", "ipc", "uts", "user") in a malloc'd string,
 * or NULL when it was not created (host namespace) or on ENOMEM. */
char *sl_pod_ns_path(const char *dir, const char *kind);

#endif
