/* Where a pod's containers go in the cgroup tree (cgroupfs driver only):
 * under linux.cgroup_parent when the kubelet gives one (it owns and
 * removes that cgroup), else under SL_POD_CGROUP_ROOT/<pod id prefix>,
 * which sluiced owns and removes with the pod. A container's cgroupsPath
 * is <pod level>/<container id>, as containerd's cgroupfs driver makes it. */
#ifndef SL_POD_CGROUP_H
#define SL_POD_CGROUP_H

#include <jansson.h>

#include "cri/model.h"
#include "grpc/api.pb-c.h"
#include "sys_error.h"

#define SL_POD_CGROUP_ROOT "/sluice"
#define SL_CGROUP_PARENT_MAX 1024 /* bytes of linux.cgroup_parent */

/* Checks cgroup_parent: absolute, clean (no "." or ".." or empty parts),
 * printable, at most SL_CGROUP_PARENT_MAX bytes; a systemd slice is
 * UNIMPLEMENTED (no systemd driver). Returns 0 or -1 (*e, with the code). */
int sl_pod_cgroup_parent_check(const char *parent, sl_error *e);

/* RunPodSandbox: checks linux.cgroup_parent and the pod-level resources
 * (linux.resources, linux.overhead: informational, checked only) and
 * records the pod's level ("cgroup_parent") and whether sluiced owns it
 * ("cgroup_owned") in rec. Returns 0 or -1 (*e, with the gRPC code). */
int sl_pod_cgroup_setup(const Runtime__V1__PodSandboxConfig *c, const char *pod_id, json_t *rec,
                        sl_error *e);

/* The cgroupsPath of container ctr_id of p, malloc'd (NULL on ENOMEM). */
char *sl_pod_cgroup_ctr_path(const sl_pod *p, const char *ctr_id);

/* RemovePodSandbox: removes the pod's level in every hierarchy when sluiced
 * owns it (runc removed the containers' own levels). */
void sl_pod_cgroup_remove(const sl_pod *p);

#endif
