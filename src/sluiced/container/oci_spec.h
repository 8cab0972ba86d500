/* OCI runtime spec (config.json) for one container, from the CRI
 * ContainerConfig already resolved against the image and the pod. The
 * defaults follow `runc spec` (capabilities, masked and read-only paths,
 * standard mounts), which runc accepts on these machines; the security
 * settings are applied by oci_security.c. */
#ifndef SL_OCI_SPEC_H
#define SL_OCI_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "container/oci_caps.h"
#include "sys_error.h"

typedef struct sl_oci_mount {
    const char *container_path;
    const char *host_path;
    bool readonly;
    int propagation; /* CRI MountPropagation: 0 private, 1 rslave, 2 rshared */
    bool rro;        /* recursive read-only ("rro") */
} sl_oci_mount;

/* The security context, resolved (oci_security.c applies it). */
typedef struct sl_oci_security {
    sl_caps caps;
    bool no_new_privs;
    const char *const *masked_paths; /* NULL: the defaults; else n_masked (maybe 0) */
    size_t n_masked;
    const char *const *readonly_paths; /* NULL: the defaults */
    size_t n_readonly;
    json_t *seccomp;      /* linux.seccomp (borrowed); NULL: no filter */
    const uint32_t *gids; /* process.user.additionalGids */
    size_t ngids;
} sl_oci_security;

typedef struct sl_oci_input {
    const char *rootfs;      /* absolute path of the mounted rootfs */
    const char *const *args; /* argv, nargs >= 1 */
    size_t nargs;
    const char *const *env; /* "KEY=VALUE" */
    size_t nenv;
    const char *cwd; /* "" or NULL = "/" */
    uint32_t uid, gid;
    bool tty;
    const char *hostname;              /* NULL: none set (shared UTS namespace) */
    const char *netns, *ipcns, *utsns; /* paths to join; NULL = the host's */
    const char *pidns;                 /* path to join; NULL = a new one (or host_pid) */
    bool host_pid;                     /* no pid namespace: the host's */
    const char *userns;                /* a user namespace to join; NULL = the host's */
    const uint32_t *uid_map, *gid_map; /* with userns: {container id, host id, length} */
    const sl_oci_mount *mounts;
    size_t nmounts;
    const char *rootfs_propagation;      /* "rshared", "rslave", or NULL (runc's default) */
    const struct sl_oci_device *devices; /* host devices (oci_devices.h) */
    size_t ndevices;
    const char *cgroups_path; /* e.g. "/sluice/<pod>/<container>" */
    const json_t *resources;  /* extra linux.resources members (memory, cpu, ...), or NULL */
    const int *oom_score_adj; /* process.oomScoreAdj, or NULL */
    bool readonly_rootfs;
    bool privileged;                 /* host devices, no masked paths, /sys read-write */
    const sl_oci_security *security; /* NULL: default caps and paths, no seccomp */
} sl_oci_input;

/* Returns the config.json text (malloc'd) or NULL with *e set. */
char *sl_oci_spec_build(const sl_oci_input *in, sl_error *e);

#endif
