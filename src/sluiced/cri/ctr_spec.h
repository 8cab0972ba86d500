/* The OCI config.json of a CRI container. */
#ifndef SL_CTR_SPEC_H
#define SL_CTR_SPEC_H

#include <jansson.h>

#include "cri/ctr_mounts.h"
#include "cri/ctr_namespaces.h"
#include "grpc/api.pb-c.h"
#include "grpc/grpc_status.h"
#include "image/image_store.h"
#include "sys_error.h"

typedef struct sl_ctr_spec_in {
    const Runtime__V1__ContainerConfig *config;
    const sl_image_config *image;
    const char *rootfs;            /* mounted rootfs (for /etc/passwd lookups) */
    const char *ns_dir;            /* the pod's pinned namespaces */
    const sl_ctr_ns *ns;           /* the namespaces to join (ctr_namespaces.h) */
    const sl_mount_env *mount_env; /* what the host offers for mounts */
    const char *hostname;          /* the pod's hostname, or NULL */
    const char *cgroups_path;
    const Runtime__V1__PodSandboxConfig *pod; /* the stored sandbox config */
    json_t **user;               /* if not NULL, gets {uid, gid, supplemental_groups} */
    const json_t *resources;     /* OCI linux.resources members (ctr_resources.h) */
    const int *oom_score_adj;    /* process.oomScoreAdj, NULL = none */
    const char *pod_etc_dir;     /* the pod's /etc files (pod/etc_files.h), or NULL */
    const sl_pod_userns *userns; /* the pod's user namespace (on: ns->user is its path) */
    const char *idmap_dir;       /* where idmapped mounts of the container go */
} sl_ctr_spec_in;

/* Returns the config.json text (malloc'd) or NULL with *e (code
 * INVALID_ARGUMENT for a config that cannot run). */
char *sl_ctr_spec(const sl_ctr_spec_in *in, sl_error *e);

#endif
