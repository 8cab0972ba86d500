#include "cri/ctr_security.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "container/seccomp_profile.h"
#include "fsutil.h"
#include "grpc/grpc_status.h"

#define FIELD "linux.security_context."
#define LOCALHOST_PREFIX "localhost/"

typedef Runtime__V1__SecurityProfile profile;
enum { PROFILE_NONE, PROFILE_DEFAULT, PROFILE_UNCONFINED, PROFILE_LOCALHOST };

/* The deprecated string fields are still part of the CRI: read them on
 * purpose. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static const char *ctr_apparmor_string(const Runtime__V1__LinuxContainerSecurityContext *sc)
{
    return sc->apparmor_profile;
}

static const char *ctr_seccomp_string(const Runtime__V1__LinuxContainerSecurityContext *sc)
{
    return sc ? sc->seccomp_profile_path : "";
}

static const char *pod_seccomp_string(const Runtime__V1__LinuxSandboxSecurityContext *sc)
{
    return sc->seccomp_profile_path;
}
#pragma GCC diagnostic pop

static bool selinux_set(const Runtime__V1__SELinuxOption *o)
{
    return o && (*o->user || *o->role || *o->type || *o->level);
}

static int refuse_selinux(const Runtime__V1__SELinuxOption *o, sl_error *e)
{
    if (!selinux_set(o))
        return 0;
    return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                         FIELD "selinux_options: SELinux is not supported by sluiced (this host "
                               "has no SELinux); leave the options empty");
}

/* The kind of a SecurityProfile field, or of the deprecated string field
 * when the profile is absent (containerd's precedence); *ref gets the
 * Localhost reference. */
static int profile_kind(const profile *p, const char *deprecated, const char *field,
                        const char *old_field, const char **ref, sl_error *e)
{
    *ref = NULL;
    if (p) {
        bool local = p->profile_type == RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Localhost;
        if (!local && *p->localhost_ref)
            return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                                 FIELD "%s.localhost_ref: set, but profile_type is not Localhost",
                                 field);
        switch (p->profile_type) {
        case RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__RuntimeDefault:
            return PROFILE_DEFAULT;
        case RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Unconfined:
            return PROFILE_UNCONFINED;
        case RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Localhost:
            *ref = p->localhost_ref;
            return PROFILE_LOCALHOST;
        default:
            return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                                 FIELD "%s.profile_type: unknown type %d", field, p->profile_type);
        }
    }
    if (!*deprecated)
        return PROFILE_NONE;
    if (!strcmp(deprecated, "runtime/default") || !strcmp(deprecated, "docker/default"))
        return PROFILE_DEFAULT;
    if (!strcmp(deprecated, "unconfined"))
        return PROFILE_UNCONFINED;
    if (!strncmp(deprecated, LOCALHOST_PREFIX, strlen(LOCALHOST_PREFIX))) {
        *ref = deprecated + strlen(LOCALHOST_PREFIX);
        return PROFILE_LOCALHOST;
    }
    return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                         FIELD "%s: unknown profile \"%s\" (runtime/default, unconfined or "
                               "localhost/<path>)",
                         old_field, deprecated);
}

/* ---- AppArmor ---- */

static bool apparmor_enabled(void)
{
    SL_AUTOFREE char *v = NULL;
    sl_error ignored;
    return sl_read_file("/sys/module/apparmor/parameters/enabled", 16, &v, NULL, &ignored) == 0 &&
           v[0] == 'Y';
}

/* Without AppArmor in the kernel, RuntimeDefault and Unconfined are the
 * same (nothing confines); a Localhost profile cannot be honoured. */
static int check_apparmor(const profile *p, const char *deprecated, sl_error *e)
{
    const char *ref;
    int kind = profile_kind(p, deprecated, "apparmor", "apparmor_profile", &ref, e);
    if (kind < 0)
        return -1;
    const char *field = p ? FIELD "apparmor" : FIELD "apparmor_profile";
    if (kind == PROFILE_LOCALHOST)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "%s: Localhost profile \"%s\" cannot be applied: %s", field, ref,
                             apparmor_enabled() ? "sluiced does not load AppArmor profiles"
                                                : "this kernel has no AppArmor");
    if (kind == PROFILE_DEFAULT && apparmor_enabled())
        return sl_error_code(e, SL_GRPC_UNIMPLEMENTED,
                             "%s: RuntimeDefault: AppArmor is enabled on this host but sluiced "
                             "does not load AppArmor profiles; use Unconfined",
                             field);
    return 0;
}

/* ---- seccomp ---- */

/* The Localhost profile at ref (an absolute path; containerd also accepts
 * a "localhost/" prefix there). */
static json_t *load_localhost(const char *ref, const char *field, sl_error *e)
{
    if (!strncmp(ref, LOCALHOST_PREFIX, strlen(LOCALHOST_PREFIX)))
        ref += strlen(LOCALHOST_PREFIX);
    if (ref[0] != '/') {
        sl_error_code(e, SL_GRPC_INVALID_ARGUMENT, "%s: \"%s\" is not an absolute path", field,
                      ref);
        return NULL;
    }
    json_t *p = sl_seccomp_load(ref, e);
    if (!p) {
        e->code = SL_GRPC_INVALID_ARGUMENT;
        sl_error_wrap(e, "%s", field);
    }
    return p;
}

/* The linux.seccomp object, or NULL with *ok true for no filter. */
static json_t *seccomp_for(const Runtime__V1__SecurityProfile *p, const char *deprecated,
                           uint64_t bounding, bool *ok, sl_error *e)
{
    const char *ref;
    int kind = profile_kind(p, deprecated, "seccomp", "seccomp_profile_path", &ref, e);
    json_t *out = NULL;
    *ok = kind >= 0;
    if (kind == PROFILE_DEFAULT) {
        out = sl_seccomp_runtime_default(bounding, e);
        if (!out)
            e->code = SL_GRPC_INTERNAL;
    } else if (kind == PROFILE_LOCALHOST) {
        out = load_localhost(ref, p ? FIELD "seccomp.localhost_ref" : FIELD "seccomp_profile_path",
                             e);
    }
    if ((kind == PROFILE_DEFAULT || kind == PROFILE_LOCALHOST) && !out)
        *ok = false;
    return out;
}

/* ---- capabilities and paths ---- */

static int resolve_caps(const Runtime__V1__LinuxContainerSecurityContext *sc, sl_caps *out,
                        sl_error *e)
{
    const Runtime__V1__Capability *c = sc ? sc->capabilities : NULL;
    sl_caps_request req = {.privileged = sc && sc->privileged};
    if (c) {
        req.add = (const char *const *)c->add_capabilities;
        req.n_add = c->n_add_capabilities;
        req.drop = (const char *const *)c->drop_capabilities;
        req.n_drop = c->n_drop_capabilities;
        req.ambient = (const char *const *)c->add_ambient_capabilities;
        req.n_ambient = c->n_add_ambient_capabilities;
    }
    uint64_t bounding;
    if (sl_caps_read_bounding(&bounding, e) < 0) {
        e->code = SL_GRPC_INTERNAL;
        return -1;
    }
    if (sl_caps_compute(&req, bounding, out, e) < 0) {
        e->code = SL_GRPC_INVALID_ARGUMENT;
        return sl_error_wrap(e, FIELD "capabilities");
    }
    return 0;
}

static int check_paths(char *const *v, size_t n, const char *field, sl_error *e)
{
    if (n > SL_CTR_MAX_PATHS)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT, FIELD "%s: more than %d paths", field,
                             SL_CTR_MAX_PATHS);
    for (size_t i = 0; i < n; i++)
        if (v[i][0] != '/' || strlen(v[i]) >= PATH_MAX)
            return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                                 FIELD "%s: \"%.200s\" is not an absolute path", field, v[i]);
    return 0;
}

/* Masked and read-only paths: the request's, else (none sent) the
 * defaults; a privileged container gets none (oci_security.c). */
static int resolve_paths(const Runtime__V1__LinuxContainerSecurityContext *sc, sl_oci_security *o,
                         sl_error *e)
{
    if (!sc)
        return 0;
    if (check_paths(sc->masked_paths, sc->n_masked_paths, "masked_paths", e) < 0 ||
        check_paths(sc->readonly_paths, sc->n_readonly_paths, "readonly_paths", e) < 0)
        return -1;
    if (sc->n_masked_paths) {
        o->masked_paths = (const char *const *)sc->masked_paths;
        o->n_masked = sc->n_masked_paths;
    }
    if (sc->n_readonly_paths) {
        o->readonly_paths = (const char *const *)sc->readonly_paths;
        o->n_readonly = sc->n_readonly_paths;
    }
    return 0;
}

/* ---- a container ---- */

static bool pod_privileged(const Runtime__V1__PodSandboxConfig *pod)
{
    return pod && pod->linux && pod->linux->security_context &&
           pod->linux->security_context->privileged;
}

static int check_container(const Runtime__V1__LinuxContainerSecurityContext *sc,
                           const Runtime__V1__PodSandboxConfig *pod, sl_error *e)
{
    if (!sc)
        return 0;
    if (sc->privileged && !pod_privileged(pod))
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             FIELD "privileged: no privileged container allowed in sandbox (the "
                                   "pod's " FIELD "privileged is false)");
    if (refuse_selinux(sc->selinux_options, e) < 0 ||
        check_apparmor(sc->apparmor, ctr_apparmor_string(sc), e) < 0)
        return -1;
    return 0;
}

int sl_ctr_security_resolve(const Runtime__V1__ContainerConfig *c,
                            const Runtime__V1__PodSandboxConfig *pod, const char *image_user,
                            const char *rootfs, sl_ctr_security *out, sl_error *e)
{
    const Runtime__V1__LinuxContainerSecurityContext *sc =
        c->linux ? c->linux->security_context : NULL;
    *out = (sl_ctr_security){.privileged = sc && sc->privileged,
                             .readonly_rootfs = sc && sc->readonly_rootfs};
    sl_oci_security *o = &out->oci;
    if (check_container(sc, pod, e) < 0 || resolve_caps(sc, &o->caps, e) < 0 ||
        resolve_paths(sc, o, e) < 0)
        return -1;
    if (!out->privileged) { /* privileged: seccomp MAY have no effect (CRI); none */
        bool ok;
        out->seccomp =
            seccomp_for(sc ? sc->seccomp : NULL, ctr_seccomp_string(sc), o->caps.bounding, &ok, e);
        if (!ok)
            return -1;
    }
    if (sl_ctr_user_resolve(sc, image_user, rootfs, &out->user, e) < 0) {
        json_decref(out->seccomp);
        out->seccomp = NULL;
        return -1;
    }
    o->no_new_privs = sc && sc->no_new_privs;
    o->seccomp = out->seccomp;
    o->gids = out->user.gids;
    o->ngids = out->user.ngids;
    return 0;
}

void sl_ctr_security_fini(sl_ctr_security *s)
{
    json_decref(s->seccomp);
    sl_ctr_user_fini(&s->user);
    *s = (sl_ctr_security){0};
}

/* ---- a pod ---- */

int sl_pod_security_check(const Runtime__V1__PodSandboxConfig *pod, sl_error *e)
{
    const Runtime__V1__LinuxSandboxSecurityContext *sc =
        pod->linux ? pod->linux->security_context : NULL;
    if (!sc)
        return 0;
    if (refuse_selinux(sc->selinux_options, e) < 0 || check_apparmor(sc->apparmor, "", e) < 0)
        return -1;
    if (sc->run_as_user && sl_ctr_id_check(FIELD "run_as_user", sc->run_as_user->value, e) < 0)
        return -1;
    if (sc->run_as_group && sl_ctr_id_check(FIELD "run_as_group", sc->run_as_group->value, e) < 0)
        return -1;
    if (sc->run_as_group && !sc->run_as_user)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             FIELD "run_as_group: set without run_as_user");
    for (size_t i = 0; i < sc->n_supplemental_groups; i++)
        if (sl_ctr_id_check(FIELD "supplemental_groups", sc->supplemental_groups[i], e) < 0)
            return -1;
    if (sc->supplemental_groups_policy != RUNTIME__V1__SUPPLEMENTAL_GROUPS_POLICY__Merge &&
        sc->supplemental_groups_policy != RUNTIME__V1__SUPPLEMENTAL_GROUPS_POLICY__Strict)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             FIELD "supplemental_groups_policy: unknown policy %d",
                             sc->supplemental_groups_policy);
    if (sc->privileged)
        return 0; /* as for a container: seccomp has no effect */
    bool ok;
    json_t *sp = seccomp_for(sc->seccomp, pod_seccomp_string(sc), 0, &ok, e);
    json_decref(sp); /* no sandbox process: checked, nothing to apply it to */
    return ok ? 0 : -1;
}
