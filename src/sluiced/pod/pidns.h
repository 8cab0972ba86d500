/* The pod's shared PID namespace (NamespaceMode POD). A PID namespace lives
 * only while its init process does, so it cannot be pinned like the network
 * one: the pod's monitor (sluice-mon --pid-ns FILE) starts sluice-pause as
 * pid 1 of a new namespace, reaping the orphans of every container in it,
 * and bind-mounts the namespace on <ns_dir>/pid, which the pod's containers
 * join. The holder ends with the monitor; the file stays until removed. */
#ifndef SL_POD_PIDNS_H
#define SL_POD_PIDNS_H

#include "sys_error.h"

/* <ns_dir>/pid (malloc'd), whether it exists or not; NULL on ENOMEM. */
char *sl_pod_pidns_file(const char *ns_dir);

/* <ns_dir>/pid (malloc'd) when it is there (a pinned namespace), else
 * NULL. */
char *sl_pod_pidns_path(const char *ns_dir);

/* Unmounts and removes <ns_dir>/pid; a missing one is fine. The monitor
 * does this when it ends; this is for a monitor that was killed. Returns
 * 0 or -1 (*e). */
int sl_pod_pidns_release(const char *ns_dir, sl_error *e);

#endif
