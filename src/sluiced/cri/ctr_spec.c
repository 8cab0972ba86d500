/* From a CRI ContainerConfig, the image and the pod to the OCI spec:
 * command resolution as Docker and containerd do it, environment merge,
 * user lookup in the image's /etc/passwd, mounts, namespaces. */
#include "cri/ctr_spec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container/oci_spec.h"
#include "cri/ctr_devices.h"
#include "fsutil.h"
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

/* Looks name up in <rootfs>/etc/<file> ("name:x:id:..."). */
static int lookup_id(const char *rootfs, const char *file, const char *name, uint32_t *id,
                     uint32_t *gid)
{
    SL_AUTOFREE char *etc = sl_path_join(rootfs, "etc");
    SL_AUTOFREE char *path = etc ? sl_path_join(etc, file) : NULL;
    SL_AUTOFREE char *text = NULL;
    sl_error e;
    if (!path || sl_read_file(path, 1 << 20, &text, NULL, &e) < 0)
        return -1;
    size_t nl = strlen(name);
    for (char *line = text; line && *line;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (!strncmp(line, name, nl) && line[nl] == ':') {
            char *f = strchr(line + nl + 1, ':');
            if (f) {
                *id = (uint32_t)strtoul(f + 1, &f, 10);
                if (gid && f && *f == ':')
                    *gid = (uint32_t)strtoul(f + 1, NULL, 10);
                return 0;
            }
        }
        line = next;
    }
    return -1;
}

static int parse_ids(const char *rootfs, const char *spec, uint32_t *uid, uint32_t *gid,
                     sl_error *e)
{
    char user[256], group[256] = "";
    const char *colon = strchr(spec, ':');
    snprintf(user, sizeof(user), "%.*s", colon ? (int)(colon - spec) : (int)strlen(spec), spec);
    if (colon)
        snprintf(group, sizeof(group), "%s", colon + 1);
    char *end;
    *uid = (uint32_t)strtoul(user, &end, 10);
    if (*end && lookup_id(rootfs, "passwd", user, uid, gid) < 0)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT, "unknown user \"%s\" in the image", user);
    if (*group) {
        *gid = (uint32_t)strtoul(group, &end, 10);
        if (*end && lookup_id(rootfs, "group", group, gid, NULL) < 0)
            return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT, "unknown group \"%s\" in the image",
                                 group);
    }
    return 0;
}

static int resolve_user(const Runtime__V1__ContainerConfig *c, const sl_image_config *ic,
                        const char *rootfs, uint32_t *uid, uint32_t *gid, sl_error *e)
{
    *uid = *gid = 0;
    const Runtime__V1__LinuxContainerSecurityContext *sc =
        c->linux ? c->linux->security_context : NULL;
    if (sc && sc->run_as_user) {
        *uid = (uint32_t)sc->run_as_user->value;
        if (sc->run_as_group)
            *gid = (uint32_t)sc->run_as_group->value;
        return 0;
    }
    if (sc && *sc->run_as_username)
        return parse_ids(rootfs, sc->run_as_username, uid, gid, e);
    return *ic->user ? parse_ids(rootfs, ic->user, uid, gid, e) : 0;
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
    oi->hostname = in->hostname;
    oi->cgroups_path = in->cgroups_path;
    const Runtime__V1__LinuxContainerSecurityContext *sc =
        c->linux ? c->linux->security_context : NULL;
    oi->privileged = sc && sc->privileged;
    oi->readonly_rootfs = sc && sc->readonly_rootfs;
    return sl_oci_spec_build(oi, e);
}

char *sl_ctr_spec(const sl_ctr_spec_in *in, sl_error *e)
{
    const Runtime__V1__ContainerConfig *c = in->config;
    const char **args = calloc(SPEC_MAX_ARGS, sizeof(char *));
    const char **env = calloc(SPEC_MAX_ENV, sizeof(char *));
    char **owned = calloc(c->n_envs + 1, sizeof(char *));
    sl_ctr_mounts mounts = {0};
    sl_oci_devices devices = {0};
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
    if (resolve_user(c, in->image, in->rootfs, &oi.uid, &oi.gid, e) < 0)
        goto out;
    if (sl_ctr_mounts_prepare(c, in->mount_env, &mounts, e) < 0 ||
        sl_ctr_devices(c, &devices, e) < 0)
        goto out;
    oi.mounts = mounts.v;
    oi.nmounts = mounts.n;
    oi.rootfs_propagation = mounts.rootfs_propagation;
    oi.devices = devices.v;
    oi.ndevices = devices.n;
    spec = build_with_pod(in, &oi, e);
out:
    for (size_t i = 0; owned && i < c->n_envs; i++)
        free(owned[i]);
    free(owned);
    free(args);
    free(env);
    sl_ctr_mounts_fini(&mounts);
    sl_oci_devices_fini(&devices);
    return spec;
}
