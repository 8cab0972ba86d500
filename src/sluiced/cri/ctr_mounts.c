#include "cri/ctr_mounts.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/idmap.h"
#include "container/mountinfo.h"
#include "fsutil.h"

#define PROP_PRIVATE RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_PRIVATE
#define PROP_HOST_TO_CONTAINER RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_HOST_TO_CONTAINER
#define PROP_BIDIRECTIONAL RUNTIME__V1__MOUNT_PROPAGATION__PROPAGATION_BIDIRECTIONAL

static int bad(sl_error *e, int code, size_t i, const char *field, const char *what)
{
    return sl_error_code(e, code, "mounts[%zu].%s: %s", i, field, what);
}

static int check_path(size_t i, const char *field, const char *p, sl_error *e)
{
    if (!*p)
        return bad(e, SL_GRPC_INVALID_ARGUMENT, i, field, "empty");
    if (*p != '/')
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT, "mounts[%zu].%s: \"%s\" is not absolute",
                             i, field, p);
    return 0;
}

static int check_rro(size_t i, const Runtime__V1__Mount *m, const sl_mount_env *env, sl_error *e)
{
    if (!m->recursive_read_only)
        return 0;
    if (!m->readonly)
        return bad(e, SL_GRPC_INVALID_ARGUMENT, i, "recursive_read_only", "needs readonly");
    if ((int)m->propagation != PROP_PRIVATE)
        return bad(e, SL_GRPC_INVALID_ARGUMENT, i, "recursive_read_only",
                   "needs propagation PROPAGATION_PRIVATE");
    if (!env->rro)
        return bad(e, SL_GRPC_UNIMPLEMENTED, i, "recursive_read_only",
                   "this kernel (before 5.12) or OCI runtime has no recursive read-only mounts");
    return 0;
}

static int check_mapping(size_t i, const char *field, size_t n, Runtime__V1__IDMapping *const *v,
                         sl_error *e)
{
    if (n != 1)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "mounts[%zu].%s: %zu mappings; sluice takes one uid and one gid "
                             "mapping",
                             i, field, n);
    if (v[0]->length == 0 || (uint64_t)v[0]->host_id + v[0]->length > UINT32_MAX ||
        (uint64_t)v[0]->container_id + v[0]->length > UINT32_MAX)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "mounts[%zu].%s[0]: container id %u, host id %u, length %u is not "
                             "a range",
                             i, field, v[0]->container_id, v[0]->host_id, v[0]->length);
    return 0;
}

/* An idmapped mount: for a pod with a user namespace, private (a clone
 * of the source, which shares no propagation with it). */
static int check_mappings(size_t i, const Runtime__V1__Mount *m, const sl_mount_env *env,
                          bool userns, sl_error *e)
{
    const char *field = m->n_uidmappings ? "uidMappings" : "gidMappings";
    if (!userns)
        return bad(e, SL_GRPC_INVALID_ARGUMENT, i, field,
                   "the pod sandbox has no user namespace of its own (userns_options mode POD)");
    if (!env->idmap)
        return sl_error_code(e, SL_GRPC_UNIMPLEMENTED,
                             "mounts[%zu].%s: no idmapped mounts here: %s", i, field,
                             env->idmap_why);
    if (check_mapping(i, "uidMappings", m->n_uidmappings, m->uidmappings, e) < 0 ||
        check_mapping(i, "gidMappings", m->n_gidmappings, m->gidmappings, e) < 0)
        return -1;
    if ((int)m->propagation != PROP_PRIVATE)
        return bad(e, SL_GRPC_INVALID_ARGUMENT, i, "propagation",
                   "an idmapped mount is a copy of its source that shares no propagation: "
                   "PROPAGATION_PRIVATE only");
    return 0;
}

static int check_one(size_t i, const Runtime__V1__Mount *m, const sl_mount_env *env, bool userns,
                     sl_error *e)
{
    if (m->image && *m->image->image)
        return bad(e, SL_GRPC_UNIMPLEMENTED, i, "image", "image volumes are not supported");
    if (check_path(i, "container_path", m->container_path, e) < 0 ||
        check_path(i, "host_path", m->host_path, e) < 0)
        return -1;
    if ((m->n_uidmappings || m->n_gidmappings) && check_mappings(i, m, env, userns, e) < 0)
        return -1;
    if (m->selinux_relabel && env->selinux)
        return bad(e, SL_GRPC_UNIMPLEMENTED, i, "selinux_relabel",
                   "SELinux is enabled on this host and sluice does not label files");
    int p = (int)m->propagation;
    if (p != PROP_PRIVATE && p != PROP_HOST_TO_CONTAINER && p != PROP_BIDIRECTIONAL)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "mounts[%zu].propagation: unknown value %d", i, p);
    return check_rro(i, m, env, e);
}

int sl_ctr_mounts_check(const Runtime__V1__ContainerConfig *c, const sl_mount_env *env, bool userns,
                        sl_error *e)
{
    if (c->n_mounts > SL_CTR_MAX_MOUNTS)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT, "mounts: %zu mounts, at most %d",
                             c->n_mounts, SL_CTR_MAX_MOUNTS);
    for (size_t i = 0; i < c->n_mounts; i++)
        if (check_one(i, c->mounts[i], env, userns, e) < 0)
            return -1;
    return 0;
}

/* The host path, created as a directory when missing (as containerd and
 * the kubelet's hostPath DirectoryOrCreate do), without symlinks. */
static char *resolve_source(size_t i, const char *path, sl_error *e)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        if (errno != ENOENT)
            return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT, "mounts[%zu].host_path: \"%s\": %s",
                                 i, path, strerror(errno)),
                   NULL;
        if (sl_mkdir_p(path, 0755, e) < 0)
            return sl_error_wrap(e, "mounts[%zu].host_path: create", i), NULL;
    }
    char *real = realpath(path, NULL);
    if (!real)
        sl_error_code(e, SL_GRPC_INVALID_ARGUMENT, "mounts[%zu].host_path: \"%s\": %s", i, path,
                      strerror(errno));
    return real;
}

/* rshared needs the source's mount to be shared, rslave shared or slave:
 * otherwise nothing would propagate. */
static int check_propagation(size_t i, int prop, const char *src, sl_error *e)
{
    if (prop == PROP_PRIVATE)
        return 0;
    sl_mount_prop mp;
    if (sl_mountinfo_lookup(src, &mp, e) < 0)
        return sl_error_wrap(e, "mounts[%zu].propagation", i);
    if (prop == PROP_BIDIRECTIONAL && !mp.shared)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "mounts[%zu].propagation: PROPAGATION_BIDIRECTIONAL needs a shared "
                             "mount: \"%s\" is on \"%s\", which is not shared",
                             i, src, mp.mountpoint);
    if (prop == PROP_HOST_TO_CONTAINER && !mp.shared && !mp.slave)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "mounts[%zu].propagation: PROPAGATION_HOST_TO_CONTAINER needs a "
                             "shared or slave mount: \"%s\" is on \"%s\", which is private",
                             i, src, mp.mountpoint);
    return 0;
}

static size_t depth(const char *p)
{
    size_t n = 0;
    for (; *p; p++)
        n += *p == '/' && p[1] && p[1] != '/';
    return n;
}

/* Stable: parents before what is mounted under them. */
static void sort_by_depth(sl_oci_mount *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        sl_oci_mount x = v[i];
        size_t j = i;
        for (; j > 0 && depth(v[j - 1].container_path) > depth(x.container_path); j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

/* The source idmapped at <idmap dir>/mount-N; returns that path
 * (malloc'd) in place of src, or NULL (*e). */
static char *idmapped_source(size_t i, const Runtime__V1__Mount *m, const sl_ctr_idmap *idmap,
                             char *src, sl_error *e)
{
    const Runtime__V1__IDMapping *u = m->uidmappings[0], *g = m->gidmappings[0];
    sl_idmap um = {u->container_id, u->host_id, u->length};
    sl_idmap gm = {g->container_id, g->host_id, g->length};
    char name[32];
    snprintf(name, sizeof(name), "mount-%zu", i);
    char *dst = sl_path_join(idmap->dir, name);
    int ns = -1;
    if (!dst)
        sl_error_set(e, ENOMEM, "mounts");
    else if (sl_mkdir_p(idmap->dir, 0711, e) < 0 || sl_mkdir_p(dst, 0700, e) < 0 ||
             (ns = sl_userns_open(&um, &gm, e)) < 0 || sl_idmap_mount(src, dst, ns, true, e) < 0) {
        sl_error_wrap(e, "mounts[%zu]: idmapped mount of \"%s\"", i, src);
        free(dst);
        dst = NULL;
    }
    if (ns >= 0)
        close(ns);
    free(src);
    return dst;
}

static int add_one(size_t i, const Runtime__V1__Mount *m, const sl_ctr_idmap *idmap,
                   sl_ctr_mounts *out, sl_error *e)
{
    char *src = resolve_source(i, m->host_path, e);
    if (src && m->n_uidmappings)
        src = idmapped_source(i, m, idmap, src, e);
    if (!src)
        return -1;
    out->v[out->n++] = (sl_oci_mount){.container_path = m->container_path,
                                      .host_path = src,
                                      .readonly = m->readonly,
                                      .propagation = (int)m->propagation,
                                      .rro = m->recursive_read_only};
    if (check_propagation(i, (int)m->propagation, src, e) < 0)
        return -1;
    if ((int)m->propagation == PROP_BIDIRECTIONAL)
        out->rootfs_propagation = "rshared";
    else if ((int)m->propagation == PROP_HOST_TO_CONTAINER && !out->rootfs_propagation)
        out->rootfs_propagation = "rslave";
    return 0;
}

int sl_ctr_mounts_prepare(const Runtime__V1__ContainerConfig *c, const sl_mount_env *env,
                          const sl_ctr_idmap *idmap, sl_ctr_mounts *out, sl_error *e)
{
    *out = (sl_ctr_mounts){0};
    if (sl_ctr_mounts_check(c, env, idmap && idmap->userns && idmap->dir, e) < 0)
        return -1;
    if (!(out->v = calloc(c->n_mounts + 1, sizeof(*out->v))))
        return sl_error_set(e, ENOMEM, "mounts");
    for (size_t i = 0; i < c->n_mounts; i++) {
        if (add_one(i, c->mounts[i], idmap, out, e) < 0) {
            sl_ctr_mounts_fini(out);
            return -1;
        }
    }
    sort_by_depth(out->v, out->n);
    return 0;
}

void sl_ctr_mounts_fini(sl_ctr_mounts *m)
{
    for (size_t i = 0; m->v && i < m->n; i++)
        free((char *)m->v[i].host_path);
    free(m->v);
    *m = (sl_ctr_mounts){0};
}
