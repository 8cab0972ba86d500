#include "container/oci_spec.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "container/oci_security.h"
#include "container/oci_devices.h"
#include "container/oci_mounts.h"

static json_t *str_array(const char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && (n == (size_t)-1 ? v[i] != NULL : i < n); i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

/* The daemon's own hard limit: root here lacks CAP_SYS_RESOURCE, so a
 * container cannot be given more than sluiced has. */
static json_int_t nofile_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_max == RLIM_INFINITY)
        return 1024;
    return (json_int_t)rl.rlim_max;
}

static json_t *process(const sl_oci_input *in)
{
    json_t *env = str_array(in->env, in->nenv);
    bool has_path = false, has_term = false;
    for (size_t i = 0; i < in->nenv; i++) {
        has_path |= !strncmp(in->env[i], "PATH=", 5);
        has_term |= !strncmp(in->env[i], "TERM=", 5);
    }
    if (!has_path) /* what docker and containerd add when the image has none */
        json_array_append_new(env, json_string("PATH=/usr/local/sbin:/usr/local/bin:"
                                               "/usr/sbin:/usr/bin:/sbin:/bin"));
    if (in->tty && !has_term) /* containerd's WithTTY: a terminal gets a TERM */
        json_array_append_new(env, json_string("TERM=xterm"));
    json_int_t nofile = nofile_limit();
    return json_pack("{s:b, s:{s:I, s:I}, s:o, s:o, s:s, s:[{s:s, s:I, s:I}]}", "terminal", in->tty,
                     "user", "uid", (json_int_t)in->uid, "gid", (json_int_t)in->gid, "args",
                     str_array(in->args, in->nargs), "env", env, "cwd",
                     in->cwd && *in->cwd ? in->cwd : "/", "rlimits", "type", "RLIMIT_NOFILE",
                     "hard", nofile, "soft", nofile);
}

static json_t *std_mounts(void)
{
    return json_pack("[{s:s,s:s,s:s},"
                     "{s:s,s:s,s:s,s:[s,s,s,s]},"
                     "{s:s,s:s,s:s,s:[s,s,s,s,s,s]},"
                     "{s:s,s:s,s:s,s:[s,s,s,s,s]},"
                     "{s:s,s:s,s:s,s:[s,s,s]},"
                     "{s:s,s:s,s:s,s:[s,s,s,s]},"
                     "{s:s,s:s,s:s,s:[s,s,s,s,s]}]",
                     "destination", "/proc", "type", "proc", "source", "proc", "destination",
                     "/dev", "type", "tmpfs", "source", "tmpfs", "options", "nosuid", "strictatime",
                     "mode=755", "size=65536k", "destination", "/dev/pts", "type", "devpts",
                     "source", "devpts", "options", "nosuid", "noexec", "newinstance",
                     "ptmxmode=0666", "mode=0620", "gid=5", "destination", "/dev/shm", "type",
                     "tmpfs", "source", "shm", "options", "nosuid", "noexec", "nodev", "mode=1777",
                     "size=65536k", "destination", "/dev/mqueue", "type", "mqueue", "source",
                     "mqueue", "options", "nosuid", "noexec", "nodev", "destination", "/sys",
                     "type", "sysfs", "source", "sysfs", "options", "nosuid", "noexec", "nodev",
                     "ro", "destination", "/sys/fs/cgroup", "type", "cgroup", "source", "cgroup",
                     "options", "nosuid", "noexec", "nodev", "relatime", "ro");
}

static json_t *mounts(const sl_oci_input *in)
{
    return sl_oci_mounts_json(std_mounts(), in->mounts, in->nmounts);
}

static void add_ns(json_t *a, const char *type, const char *path)
{
    json_t *ns = json_pack("{s:s}", "type", type);
    if (path)
        json_object_set_new(ns, "path", json_string(path));
    json_array_append_new(a, ns);
}

static json_t *linux_section(const sl_oci_input *in)
{
    json_t *ns = json_array();
    if (in->userns) /* runc joins it first (the others belong to it) */
        add_ns(ns, "user", in->userns);
    if (!in->host_pid)
        add_ns(ns, "pid", in->pidns);
    add_ns(ns, "mount", NULL);
    if (in->netns)
        add_ns(ns, "network", in->netns);
    if (in->ipcns)
        add_ns(ns, "ipc", in->ipcns);
    if (in->utsns)
        add_ns(ns, "uts", in->utsns);
    json_t *l = json_pack("{s:o, s:{s:[{s:b, s:s}]}}", "namespaces", ns, "resources", "devices",
                          "allow", false, "access", "rwm");
    if (in->userns) /* what runc needs to know about the namespace it joins */
        for (size_t i = 0; i < 2; i++) {
            const uint32_t *m = i ? in->gid_map : in->uid_map;
            json_object_set_new(l, i ? "gidMappings" : "uidMappings",
                                json_pack("[{s:I, s:I, s:I}]", "containerID", (json_int_t)m[0],
                                          "hostID", (json_int_t)m[1], "size", (json_int_t)m[2]));
        }
    if (in->cgroups_path)
        json_object_set_new(l, "cgroupsPath", json_string(in->cgroups_path));
    if (in->resources)
        json_object_update(json_object_get(l, "resources"), (json_t *)in->resources);
    if (in->rootfs_propagation)
        json_object_set_new(l, "rootfsPropagation", json_string(in->rootfs_propagation));
    sl_oci_devices_json(l, in->devices, in->ndevices);
    return l;
}

char *sl_oci_spec_build(const sl_oci_input *in, sl_error *e)
{
    if (!in->rootfs || in->nargs == 0) {
        sl_error_set(e, 0, "container has no rootfs or no command");
        return NULL;
    }
    json_t *spec = json_pack("{s:s, s:o, s:{s:s, s:b}, s:o, s:o}", "ociVersion", "1.0.2", "process",
                             process(in), "root", "path", in->rootfs, "readonly",
                             in->readonly_rootfs, "mounts", mounts(in), "linux", linux_section(in));
    if (spec && in->oom_score_adj)
        json_object_set_new(json_object_get(spec, "process"), "oomScoreAdj",
                            json_integer(*in->oom_score_adj));
    if (spec && in->hostname && in->utsns)
        json_object_set_new(spec, "hostname", json_string(in->hostname));
    if (spec && sl_oci_security_apply(spec, in, e) < 0) {
        json_decref(spec);
        return NULL;
    }
    char *text = spec ? json_dumps(spec, JSON_INDENT(1)) : NULL;
    json_decref(spec);
    if (!text)
        sl_error_set(e, 0, "cannot build the OCI spec (invalid strings?)");
    return text;
}
