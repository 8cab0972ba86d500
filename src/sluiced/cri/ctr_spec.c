/* From a CRI ContainerConfig, the image and the pod to the OCI spec:
 * command resolution as Docker and containerd do it, environment merge,
 * mounts, namespaces; the security context is ctr_security.c's. */
#include "cri/ctr_spec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container/oci_spec.h"
#include "cri/ctr_devices.h"
#include "cri/ctr_security.h"
#include "fsutil.h"
#include "pod/etc_files.h"
#include "pod/netns.h"

#define SPEC_MAX_ARGS 4096
#define SPEC_MAX_ENV 4096

/* Command: the CRI command replaces the entrypoint, the CRI args replace
 * the image cmd; a command without args drops the image cmd. */
static size_t resolve_args(const Runtime__V1__ContainerConfig *c, const sl_image_config *ic,
                           const char **out)
{
    size_t n = 0;
    const char *const *ep = c->n_command ? (const char *const *)c->command : ic->entrypoint;
    size_t nep = c->n_command ? c->n_command : ic->n_entrypoint;
    const char *const *cmd = c->n_args      ? (const char *const *)c->args
                             : c->n_command ? NULL
                                            : ic->cmd;
    size_t ncmd = c->n_args ? c->n_args : c->n_command ? 0 : ic->n_cmd;
    for (size_t i = 0; i < nep && n < SPEC_MAX_ARGS; i++)
        out[n++] = ep[i];
    for (size_t i = 0; i < ncmd && n < SPEC_MAX_ARGS; i++)
        out[n++] = cmd[i];
    return n;
}

/* Image env first; a config entry with the same key replaces it. */
static size_t merge_env(const Runtime__V1__ContainerConfig *c, const sl_image_config *ic,
                        const char **out, char **owned)
{
    size_t n = 0;
    for (size_t i = 0; i < ic->n_env && n < SPEC_MAX_ENV; i++)
        out[n++] = ic->env[i];
    for (size_t i = 0; i < c->n_envs; i++) {
        const Runtime__V1__KeyValue *kv = c->envs[i];
        size_t len = strlen(kv->key) + strlen(kv->value) + 2;
        char *s = owned[i] = malloc(len);
        if (!s)
            continue;
        snprintf(s, len, "%s=%s", kv->key, kv->value);
        size_t klen = strlen(kv->key) + 1;
        size_t j = 0;
        while (j < n && strncmp(out[j], s, klen))
            j++;
        if (j < n)
            out[j] = s;
        else if (n < SPEC_MAX_ENV)
            out[n++] = s;
    }
    return n;
}

/* ContainerStatus.user, kept in the container's record. */
static json_t *user_json(const sl_ctr_user *u)
{
    json_t *groups = json_array();
    for (size_t i = 0; i < u->ngids; i++)
        json_array_append_new(groups, json_integer(u->gids[i]));
    return json_pack("{s:I, s:I, s:o}", "uid", (json_int_t)u->uid, "gid", (json_int_t)u->gid,
                     "supplemental_groups", groups);
}

/* Adds the pod's namespaces and the security settings, then builds. */
static char *build_with_pod(const sl_ctr_spec_in *in, sl_oci_input *oi, sl_error *e)
{
    const Runtime__V1__ContainerConfig *c = in->config;
    oi->netns = in->ns->net;
    oi->ipcns = in->ns->ipc;
    oi->utsns = in->ns->uts;
    oi->pidns = in->ns->pid;
    oi->host_pid = in->ns->host_pid;
    uint32_t uid_map[3], gid_map[3];
    if (in->userns && in->userns->on) {
        const sl_idmap *u = &in->userns->uid, *g = &in->userns->gid;
        memcpy(uid_map, (uint32_t[]){u->container_id, u->host_id, u->length}, sizeof(uid_map));
        memcpy(gid_map, (uint32_t[]){g->container_id, g->host_id, g->length}, sizeof(gid_map));
        oi->userns = in->ns->user;
        oi->uid_map = uid_map;
        oi->gid_map = gid_map;
    }
    oi->hostname = in->hostname;
    oi->cgroups_path = in->cgroups_path;
    oi->resources = in->resources;
    oi->oom_score_adj = in->oom_score_adj;
    sl_ctr_security sec;
    if (sl_ctr_security_resolve(c, in->pod, in->image->user, in->rootfs, &sec, e) < 0)
        return NULL;
    oi->uid = sec.user.uid;
    oi->gid = sec.user.gid;
    oi->privileged = sec.privileged;
    oi->readonly_rootfs = sec.readonly_rootfs;
    oi->security = &sec.oci;
    char *spec = sl_oci_spec_build(oi, e);
    if (spec && in->user)
        *in->user = user_json(&sec.user);
    sl_ctr_security_fini(&sec);
    return spec;
}

char *sl_ctr_spec(const sl_ctr_spec_in *in, sl_error *e)
{
    const Runtime__V1__ContainerConfig *c = in->config;
    const char **args = calloc(SPEC_MAX_ARGS, sizeof(char *));
    const char **env = calloc(SPEC_MAX_ENV, sizeof(char *));
    char **owned = calloc(c->n_envs + 1, sizeof(char *));
    sl_ctr_mounts mounts = {0};
    sl_oci_devices devices = {0};
    sl_oci_mount *all = NULL; /* the config's mounts and the pod's /etc files */
    char *etc_srcs[SL_POD_ETC_FILES] = {NULL};
    char *spec = NULL;
    if (!args || !env || !owned) {
        sl_error_set(e, ENOMEM, "container spec");
        goto out;
    }
    size_t nargs = resolve_args(c, in->image, args);
    if (nargs == 0) {
        sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                      "no command: the config has none and the image has no entrypoint or cmd");
        goto out;
    }
    sl_oci_input oi = {.rootfs = in->rootfs, .args = args, .nargs = nargs, .tty = c->tty};
    oi.env = env;
    oi.nenv = merge_env(c, in->image, env, owned);
    oi.cwd = *c->working_dir ? c->working_dir : in->image->workdir;
    sl_ctr_idmap idmap = {.userns = in->userns && in->userns->on, .dir = in->idmap_dir};
    if (sl_ctr_mounts_prepare(c, in->mount_env, &idmap, &mounts, e) < 0 ||
        sl_ctr_devices(c, &devices, e) < 0)
        goto out;
    if (!(all = calloc(mounts.n + SL_POD_ETC_FILES + 1, sizeof(*all)))) {
        sl_error_set(e, ENOMEM, "container spec");
        goto out;
    }
    size_t nm = mounts.n;
    memcpy(all, mounts.v, nm * sizeof(*all));
    /* The pod's hostname, hosts and resolv.conf, where the config has no
     * mount of its own there. */
    const Runtime__V1__LinuxContainerSecurityContext *sc =
        c->linux ? c->linux->security_context : NULL;
    sl_pod_etc_mounts(in->pod_etc_dir, sc && sc->readonly_rootfs, all, &nm, etc_srcs);
    oi.mounts = all;
    oi.nmounts = nm;
    oi.rootfs_propagation = mounts.rootfs_propagation;
    oi.devices = devices.v;
    oi.ndevices = devices.n;
    spec = build_with_pod(in, &oi, e);
out:
    for (size_t i = 0; i < SL_POD_ETC_FILES; i++)
        free(etc_srcs[i]);
    for (size_t i = 0; owned && i < c->n_envs; i++)
        free(owned[i]);
    free(owned);
    free(args);
    free(env);
    free(all);
    sl_ctr_mounts_fini(&mounts);
    sl_oci_devices_fini(&devices);
    return spec;
}
