/* PodSandboxStatus verbose: the "info" entry, a JSON object in the spirit
 * of containerd's (the kubelet ignores it; crictl inspectp shows it): the
 * pod's monitor (sluice has no pause container: the monitor is the pod's
 * process), the OCI runtime, the namespaces, the cgroup parent, the CNI
 * result as recorded and the sandbox config as the kubelet sent it. */
#ifndef SL_CRI_POD_INFO_H
#define SL_CRI_POD_INFO_H

#include "cri/rt.h"

/* The info object's text (compact JSON, malloc'd), or NULL on ENOMEM. */
char *sl_cri_pod_info(const sl_rt *rt, const sl_pod *p);

#endif
