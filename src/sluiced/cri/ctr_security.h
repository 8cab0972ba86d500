/* The CRI Linux security contexts, applied or refused by name: a
 * container's LinuxContainerSecurityContext (capabilities, privileged,
 * user and groups, read-only rootfs, no_new_privs, masked and read-only
 * paths, seccomp, AppArmor, SELinux) resolved into what the OCI spec needs,
 * and the checks on a pod's LinuxSandboxSecurityContext. namespace_options
 * are not handled here (the pod namespace code owns them). */
#ifndef SL_CTR_SECURITY_H
#define SL_CTR_SECURITY_H

#include <jansson.h>
#include <stdbool.h>

#include "container/oci_spec.h"
#include "cri/ctr_user.h"
#include "grpc/api.pb-c.h"
#include "sys_error.h"

/* Masked or read-only paths of one container. */
#define SL_CTR_MAX_PATHS 256

typedef struct sl_ctr_security {
    sl_oci_security oci; /* points into user and seccomp below */
    sl_ctr_user user;
    bool privileged, readonly_rootfs;
    json_t *seccomp; /* owned; NULL: unconfined */
} sl_ctr_security;

/* Resolves the security context of container config c in pod (its stored
 * sandbox config), with the image's USER and the mounted rootfs for
 * user lookups. Errors carry a gRPC code (INVALID_ARGUMENT for a bad or
 * unsupported value, UNIMPLEMENTED for what this host cannot do) and name
 * the field. Returns 0 or -1 (*e); on success call sl_ctr_security_fini. */
int sl_ctr_security_resolve(const Runtime__V1__ContainerConfig *c,
                            const Runtime__V1__PodSandboxConfig *pod, const char *image_user,
                            const char *rootfs, sl_ctr_security *out, sl_error *e);
void sl_ctr_security_fini(sl_ctr_security *s);

/* Checks a pod's security context at RunPodSandbox. sluiced has no sandbox
 * process, so run_as_user, run_as_group, supplemental_groups and
 * readonly_rootfs have nothing to apply to (as containerd, they never reach
 * the pod's containers; the kubelet copies them into each container's
 * context); they, seccomp and AppArmor are validated as for a container.
 * SELinux options are refused. Returns 0 or -1 (*e, with a gRPC code). */
int sl_pod_security_check(const Runtime__V1__PodSandboxConfig *pod, sl_error *e);

#endif
