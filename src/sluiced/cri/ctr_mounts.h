/* ContainerConfig.mounts to OCI bind mounts, as containerd does it: a
 * missing host path is created as a directory (0755), symlinks in it are
 * resolved, propagation PRIVATE/HOST_TO_CONTAINER/BIDIRECTIONAL becomes
 * rprivate/rslave/rshared (the last two need the host mount holding the
 * path to be shared, or shared or slave, and set the rootfs propagation),
 * readonly "ro", recursive_read_only "rro" (needs readonly, PRIVATE and a
 * kernel and runtime that have it), mounts sorted parents first. Refused
 * naming mounts[i].<field>: empty or relative paths, image volumes, id
 * mappings, selinux_relabel where SELinux is enabled (without SELinux there
 * is nothing to relabel: accepted, as containerd and CRI-O do). */
#ifndef SL_CTR_MOUNTS_H
#define SL_CTR_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "container/oci_spec.h"
#include "cri/waitq.h"
#include "grpc/api.pb-c.h"
#include "grpc/grpc_status.h"
#include "sys_error.h"

#define SL_CTR_MAX_MOUNTS 256 /* mounts of one container */
/* Bytes of `<runtime> features` output read, and how long to wait for it. */
#define SL_RUNTIME_FEATURES_MAX (256u << 10)
#define SL_RUNTIME_FEATURES_TIMEOUT_MS 5000

/* What the host offers. */
typedef struct sl_mount_env {
    bool rro;     /* recursive read-only mounts (kernel 5.12+ and runtime "rro") */
    bool selinux; /* SELinux is enabled */
    /* Idmapped mounts of the image store's file system, which user
     * namespaces need (the image's layers are idmapped); else why not. */
    bool idmap;
    char idmap_why[192];
} sl_mount_env;

/* For a container of a pod with its own user namespace: mounts with
 * uid/gid mappings are attached idmapped under dir, and their sources
 * replaced by those. */
typedef struct sl_ctr_idmap {
    bool userns;     /* the pod has one; false: mappings are refused */
    const char *dir; /* <container dir>/idmap (container/rootfs.h) */
} sl_ctr_idmap;

typedef struct sl_ctr_mounts {
    sl_oci_mount *v; /* parents before children; sources owned */
    size_t n;
    const char *rootfs_propagation; /* "rshared", "rslave" or NULL */
} sl_ctr_mounts;

/* The checks that need no file system. Returns 0 or -1 (*e:
 * INVALID_ARGUMENT or UNIMPLEMENTED naming mounts[i].<field>). */
int sl_ctr_mounts_check(const Runtime__V1__ContainerConfig *c, const sl_mount_env *env, bool userns,
                        sl_error *e);

/* Checks, then creates missing host paths, resolves them and checks their
 * propagation against the host's mounts; a mount with mappings (one uid
 * and one gid mapping, propagation private: the idmapped mount is a copy)
 * gets an idmapped clone of its source under idmap->dir. Returns 0 (free
 * with sl_ctr_mounts_fini) or -1 (*e). */
int sl_ctr_mounts_prepare(const Runtime__V1__ContainerConfig *c, const sl_mount_env *env,
                          const sl_ctr_idmap *idmap, sl_ctr_mounts *out, sl_error *e);
void sl_ctr_mounts_fini(sl_ctr_mounts *m);

/* The host, probed once: SELinux enabled, idmapped mounts (of state_dir's
 * file system, with it and run_dir reachable by any id; at once), and recursive read-only mounts
 * (kernel and
 * `<runtime> features`, run as a child of the loop). */
typedef struct sl_mount_probe {
    sl_mount_env env; /* valid once done */
    bool done;
    sl_waitq waiters; /* run when done */
} sl_mount_probe;

/* Starts the probe (p zeroed; runtime NULL: no rro). It may be done at
 * once (an old kernel); else the waiters run when runc answered, failed or
 * timed out (SL_RUNTIME_FEATURES_TIMEOUT_MS). */
void sl_mount_probe_start(sl_mount_probe *p, uv_loop_t *loop, const char *runtime,
                          const char *state_dir, const char *run_dir);
/* True when a `runc features` JSON text lists the "rro" mount option. */
bool sl_runtime_features_have_rro(const char *json_text);

#endif
