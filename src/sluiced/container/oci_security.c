#include "container/oci_security.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "fsutil.h"

/* What runc and the kubelet mask by default (the kubelet sends its own
 * list for every non-privileged container; these are for other clients). */
static const char *const default_masked[] = {
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
    NULL,
};

static const char *const default_readonly[] = {
    "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL,
};

static json_t *cap_names(uint64_t mask)
{
    json_t *a = json_array();
    for (int i = 0; i < SL_CAP_COUNT; i++)
        if (mask & ((uint64_t)1 << i))
            json_array_append_new(a, json_string(sl_cap_name(i)));
    return a;
}

static json_t *caps_json(const sl_caps *c)
{
    return json_pack("{s:o, s:o, s:o, s:o, s:o}", "bounding", cap_names(c->bounding), "effective",
                     cap_names(c->effective), "permitted", cap_names(c->permitted), "inheritable",
                     cap_names(c->inheritable), "ambient", cap_names(c->ambient));
}

static json_t *paths_json(const char *const *v, size_t n, const char *const *defaults)
{
    json_t *a = json_array();
    if (!v)
        for (size_t i = 0; defaults[i]; i++)
            json_array_append_new(a, json_string(defaults[i]));
    for (size_t i = 0; v && i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static json_t *gids_json(const uint32_t *gids, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_integer(gids[i]));
    return a;
}

/* Privileged: /sys and the cgroup mounts read-write (containerd's
 * WithWriteableSysfs and WithWriteableCgroupfs). */
static void writable_sys(json_t *spec)
{
    json_t *m;
    size_t i;
    json_array_foreach(json_object_get(spec, "mounts"), i, m)
    {
        const char *type = json_string_value(json_object_get(m, "type"));
        json_t *opts = json_object_get(m, "options");
        if (!type || (strcmp(type, "sysfs") && strcmp(type, "cgroup")))
            continue;
        for (size_t j = 0; j < json_array_size(opts); j++) {
            const char *o = json_string_value(json_array_get(opts, j));
            if (o && !strcmp(o, "ro"))
                json_array_set_new(opts, j, json_string("rw"));
        }
    }
}

static int privileged_devices(json_t *linux, sl_error *e)
{
    json_t *devs = json_object_get(linux, "devices");
    if (!devs) {
        devs = json_array();
        json_object_set_new(linux, "devices", devs);
    }
    if (sl_oci_host_devices("/dev", devs, e) < 0)
        return sl_error_wrap(e, "privileged: host devices");
    json_t *res = json_object_get(linux, "resources");
    if (!res) {
        res = json_object();
        json_object_set_new(linux, "resources", res);
    }
    json_object_set_new(res, "devices", json_pack("[{s:b, s:s}]", "allow", true, "access", "rwm"));
    return 0;
}

int sl_oci_security_apply(json_t *spec, const sl_oci_input *in, sl_error *e)
{
    static const sl_oci_security defaults = {.caps = {0}};
    const sl_oci_security *s = in->security ? in->security : &defaults;
    sl_caps caps = s->caps;
    if (!in->security) /* the defaults of runc and the CRI runtimes */
        caps.bounding = caps.effective = caps.permitted = sl_caps_default_mask();
    json_t *proc = json_object_get(spec, "process");
    json_t *linux = json_object_get(spec, "linux");
    if (!proc || !linux)
        return sl_error_set(e, 0, "spec without process or linux section");
    json_object_set_new(proc, "capabilities", caps_json(&caps));
    json_object_set_new(proc, "noNewPrivileges", json_boolean(s->no_new_privs));
    if (s->ngids)
        json_object_set_new(json_object_get(proc, "user"), "additionalGids",
                            gids_json(s->gids, s->ngids));
    if (s->seccomp && !in->privileged)
        json_object_set(linux, "seccomp", s->seccomp);
    if (in->privileged) {
        writable_sys(spec);
        return privileged_devices(linux, e);
    }
    json_object_set_new(linux, "maskedPaths",
                        paths_json(s->masked_paths, s->n_masked, default_masked));
    json_object_set_new(linux, "readonlyPaths",
                        paths_json(s->readonly_paths, s->n_readonly, default_readonly));
    return 0;
}

/* ---- host devices ---- */

static bool skipped_dir(const char *name)
{
    static const char *const skip[] = {"pts",  "shm",         "fd",    "mqueue",
                                       ".lxc", ".lxd-mounts", ".udev", NULL};
    for (size_t i = 0; skip[i]; i++)
        if (!strcmp(name, skip[i]))
            return true;
    return false;
}

static int add_device(const char *path, const struct stat *st, json_t *out, sl_error *e)
{
    if (json_array_size(out) >= SL_OCI_MAX_HOST_DEVICES)
        return sl_error_set(e, E2BIG, "more than %d devices under /dev", SL_OCI_MAX_HOST_DEVICES);
    json_array_append_new(out, json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "path", path,
                                         "type", S_ISBLK(st->st_mode) ? "b" : "c", "major",
                                         (json_int_t)major(st->st_rdev), "minor",
                                         (json_int_t)minor(st->st_rdev), "fileMode",
                                         (json_int_t)(st->st_mode & 07777), "uid",
                                         (json_int_t)st->st_uid, "gid", (json_int_t)st->st_gid));
    return 0;
}

static int walk_devices(const char *dir, int depth, json_t *out, sl_error *e)
{
    DIR *d = opendir(dir);
    if (!d)
        return sl_error_set(e, errno, "open %s", dir);
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        char path[4096];
        struct stat st;
        if (de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, "..")))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (lstat(path, &st) < 0)
            continue; /* gone meanwhile */
        if (S_ISDIR(st.st_mode) && !skipped_dir(de->d_name) && depth < SL_OCI_MAX_DEV_DEPTH)
            rc = walk_devices(path, depth + 1, out, e);
        else if ((S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) && strcmp(de->d_name, "console"))
            rc = add_device(path, &st, out, e);
    }
    closedir(d);
    return rc;
}

int sl_oci_host_devices(const char *dir, json_t *out, sl_error *e)
{
    return walk_devices(dir, 0, out, e);
}
