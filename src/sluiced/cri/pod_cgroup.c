#include "cri/pod_cgroup.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup_host.h"
#include "cri/ctr_resources.h"
#include "grpc/grpc_status.h"

#define FIELD "linux.cgroup_parent"

static bool is_slice(const char *parent)
{
    const char *last = strrchr(parent, '/');
    last = last ? last + 1 : parent;
    size_t n = strlen(last);
    return n > 6 && !strcmp(last + n - 6, ".slice");
}

/* Every part between slashes is a plain name. */
static bool clean_parts(const char *path)
{
    if (!strcmp(path, "/"))
        return true;
    for (const char *p = path + 1;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && !strncmp(p, "..", 2)))
            return false;
        if (!slash)
            return true;
        p = slash + 1;
    }
}

int sl_pod_cgroup_parent_check(const char *parent, sl_error *e)
{
    size_t len = strlen(parent);
    if (len > SL_CGROUP_PARENT_MAX)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT, FIELD ": %zu bytes, at most %d", len,
                             SL_CGROUP_PARENT_MAX);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)parent[i] < 0x20 || (unsigned char)parent[i] >= 0x7f)
            return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                                 FIELD ": has characters other than printable ASCII");
    if (is_slice(parent) || strchr(parent, ':'))
        return sl_error_code(e, SL_GRPC_UNIMPLEMENTED,
                             FIELD ": \"%s\" is a systemd slice; sluiced manages cgroups with the "
                                   "cgroupfs driver only (a path such as /kubepods/pod<uid>)",
                             parent);
    if (parent[0] != '/')
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             FIELD ": \"%s\" is relative; a cgroupfs parent is an absolute path "
                                   "such as /kubepods/pod<uid>",
                             parent);
    if (!clean_parts(parent))
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             FIELD ": \"%s\" has an empty, \".\" or \"..\" part", parent);
    return 0;
}

static void own_level(const char *pod_id, char *out, size_t len)
{
    snprintf(out, len, "%s/%.16s", SL_POD_CGROUP_ROOT, pod_id);
}

int sl_pod_cgroup_setup(const Runtime__V1__PodSandboxConfig *c, const char *pod_id, json_t *rec,
                        sl_error *e)
{
    const Runtime__V1__LinuxPodSandboxConfig *l = c->linux;
    const char *parent = l ? l->cgroup_parent : "";
    if (*parent && sl_pod_cgroup_parent_check(parent, e) < 0)
        return -1;
    if (l && (sl_cri_res_check_only(l->resources, "linux.resources", e) < 0 ||
              sl_cri_res_check_only(l->overhead, "linux.overhead", e) < 0))
        return -1;
    char own[64];
    own_level(pod_id, own, sizeof(own));
    json_object_set_new(rec, "cgroup_parent", json_string(*parent ? parent : own));
    json_object_set_new(rec, "cgroup_owned", json_boolean(!*parent));
    return 0;
}

/* The pod's level; records from before cgroup_parent was kept have none. */
static const char *pod_level(const sl_pod *p, char *own, size_t len, bool *owned)
{
    const char *parent = sl_rec_str(p->rec, "cgroup_parent");
    *owned = !*parent || sl_rec_bool(p->rec, "cgroup_owned");
    if (*parent)
        return parent;
    own_level(p->id, own, len);
    return own;
}

char *sl_pod_cgroup_ctr_path(const sl_pod *p, const char *ctr_id)
{
    char own[64];
    bool owned;
    const char *level = pod_level(p, own, sizeof(own), &owned);
    size_t n = strlen(level);
    while (n && level[n - 1] == '/')
        n--;
    char *s = malloc(n + strlen(ctr_id) + 2);
    if (s)
        sprintf(s, "%.*s/%s", (int)n, level, ctr_id);
    return s;
}

void sl_pod_cgroup_remove(const sl_pod *p)
{
    char own[64], path[SL_CGROUP_PARENT_MAX + 256];
    bool owned;
    const char *level = pod_level(p, own, sizeof(own), &owned);
    if (!owned)
        return; /* the kubelet's */
    snprintf(path, sizeof(path), "%s%s", SL_CG_ROOT, level);
    rmdir(path); /* v2 */
    DIR *d = opendir(SL_CG_ROOT);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s%s", SL_CG_ROOT, de->d_name, level);
        rmdir(path);
    }
    if (d)
        closedir(d);
}
