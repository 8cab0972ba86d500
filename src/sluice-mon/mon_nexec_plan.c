/* The native exec path's plan: what a config.json process says, read the
 * way runc reads it for `runc exec --process` (mon_nexec.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cgroup_host.h"
#include "cgroup_move.h"
#include "fsutil.h"
#include "mon.h"
#include "mon_nexec.h"
#include "seccomp_filter.h"

/* Keys of process and process.user the plan applies; any other key that
 * is set sends the exec to runc. */
static const char *const process_keys[] = {"terminal",
                                           "consoleSize",
                                           "user",
                                           "args",
                                           "env",
                                           "cwd",
                                           "capabilities",
                                           "rlimits",
                                           "noNewPrivileges",
                                           "oomScoreAdj",
                                           "apparmorProfile",
                                           "selinuxLabel",
                                           NULL};
static const char *const user_keys[] = {"uid", "gid", "additionalGids", "umask", NULL};

static bool listed(const char *const *list, const char *s)
{
    for (size_t i = 0; list[i]; i++)
        if (!strcmp(list[i], s))
            return true;
    return false;
}

/* Not covered: e->code 0, the exec goes to runc. */
static int uncovered(sl_error *e, const char *fmt, const char *what)
{
    return sl_error_set(e, 0, fmt, what);
}

static int check_keys(const json_t *obj, const char *const *keys, const char *where, sl_error *e)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        if (!listed(keys, k) && !json_is_null(v)) {
            char what[160];
            snprintf(what, sizeof(what), "%s.%s", where, k);
            return uncovered(e, "%s is set (the native path does not apply it)", what);
        }
    }
    return 0;
}

static int ns_flag(const char *type)
{
    static const struct {
        const char *type;
        int flag;
    } map[] = {{"pid", CLONE_NEWPID}, {"network", CLONE_NEWNET}, {"ipc", CLONE_NEWIPC},
               {"uts", CLONE_NEWUTS}, {"mount", CLONE_NEWNS},    {"cgroup", CLONE_NEWCGROUP}};
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(map[i].type, type))
            return map[i].flag;
    return 0;
}

static int plan_namespaces(mon_nexec_plan *p, const json_t *linux, sl_error *e)
{
    const json_t *ns;
    size_t i;
    json_array_foreach(json_object_get(linux, "namespaces"), i, ns)
    {
        const char *type = json_string_value(json_object_get(ns, "type"));
        int flag = type ? ns_flag(type) : 0;
        if (!flag)
            return uncovered(e, "linux.namespaces: a %s namespace", type ? type : "(unnamed)");
        p->ns_flags |= flag;
    }
    return 0;
}

static int cap_number(const char *name)
{
    static const char *const names[] = {"CHOWN",
                                        "DAC_OVERRIDE",
                                        "DAC_READ_SEARCH",
                                        "FOWNER",
                                        "FSETID",
                                        "KILL",
                                        "SETGID",
                                        "SETUID",
                                        "SETPCAP",
                                        "LINUX_IMMUTABLE",
                                        "NET_BIND_SERVICE",
                                        "NET_BROADCAST",
                                        "NET_ADMIN",
                                        "NET_RAW",
                                        "IPC_LOCK",
                                        "IPC_OWNER",
                                        "SYS_MODULE",
                                        "SYS_RAWIO",
                                        "SYS_CHROOT",
                                        "SYS_PTRACE",
                                        "SYS_PACCT",
                                        "SYS_ADMIN",
                                        "SYS_BOOT",
                                        "SYS_NICE",
                                        "SYS_RESOURCE",
                                        "SYS_TIME",
                                        "SYS_TTY_CONFIG",
                                        "MKNOD",
                                        "LEASE",
                                        "AUDIT_WRITE",
                                        "AUDIT_CONTROL",
                                        "SETFCAP",
                                        "MAC_OVERRIDE",
                                        "MAC_ADMIN",
                                        "SYSLOG",
                                        "WAKE_ALARM",
                                        "BLOCK_SUSPEND",
                                        "AUDIT_READ",
                                        "PERFMON",
                                        "BPF",
                                        "CHECKPOINT_RESTORE"};
    if (strncmp(name, "CAP_", 4))
        return -1;
    for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
        if (!strcmp(names[i], name + 4))
            return i;
    return -1;
}

/* A capability set; a name this build does not know is left to runc,
 * which (like runc 1.1) ignores names the kernel lacks. */
static int cap_set(const json_t *caps, const char *set, int last_cap, uint64_t *out, sl_error *e)
{
    const json_t *v;
    size_t i;
    *out = 0;
    json_array_foreach(json_object_get(caps, set), i, v)
    {
        const char *name = json_string_value(v);
        int n = name ? cap_number(name) : -1;
        if (n < 0)
            return uncovered(e, "process.capabilities: unknown capability %s",
                             name ? name : "(not a string)");
        if (n <= last_cap)
            *out |= (uint64_t)1 << n;
    }
    return 0;
}

static int plan_caps(mon_nexec_plan *p, const json_t *proc, sl_error *e)
{
    const json_t *caps = json_object_get(proc, "capabilities");
    if (!json_is_object(caps))
        return uncovered(e, "%s", "process.capabilities is not set");
    return cap_set(caps, "bounding", p->last_cap, &p->bounding, e) < 0 ||
                   cap_set(caps, "effective", p->last_cap, &p->effective, e) < 0 ||
                   cap_set(caps, "permitted", p->last_cap, &p->permitted, e) < 0 ||
                   cap_set(caps, "inheritable", p->last_cap, &p->inheritable, e) < 0 ||
                   cap_set(caps, "ambient", p->last_cap, &p->ambient, e) < 0
               ? -1
               : 0;
}

static int rlimit_number(const char *name)
{
    static const char *const names[] = {
        "RLIMIT_CPU",      "RLIMIT_FSIZE", "RLIMIT_DATA",   "RLIMIT_STACK",
        "RLIMIT_CORE",     "RLIMIT_RSS",   "RLIMIT_NPROC",  "RLIMIT_NOFILE",
        "RLIMIT_MEMLOCK",  "RLIMIT_AS",    "RLIMIT_LOCKS",  "RLIMIT_SIGPENDING",
        "RLIMIT_MSGQUEUE", "RLIMIT_NICE",  "RLIMIT_RTPRIO", "RLIMIT_RTTIME"};
    for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
        if (!strcmp(names[i], name))
            return i;
    return -1;
}

static int plan_rlimits(mon_nexec_plan *p, const json_t *proc, sl_error *e)
{
    const json_t *r;
    size_t i;
    json_array_foreach(json_object_get(proc, "rlimits"), i, r)
    {
        const char *type = json_string_value(json_object_get(r, "type"));
        int n = type ? rlimit_number(type) : -1;
        if (n < 0 || p->nrlimits >= MON_NEXEC_MAX_RLIMITS)
            return uncovered(e, "process.rlimits: %s", type ? type : "(no type)");
        mon_nexec_rlimit *l = &p->rlimits[p->nrlimits++];
        l->resource = n;
        l->lim.rlim_cur = (rlim_t)json_integer_value(json_object_get(r, "soft"));
        l->lim.rlim_max = (rlim_t)json_integer_value(json_object_get(r, "hard"));
    }
    return 0;
}

static int plan_user(mon_nexec_plan *p, const json_t *proc, sl_error *e)
{
    const json_t *user = json_object_get(proc, "user");
    if (check_keys(user, user_keys, "process.user", e) < 0)
        return -1;
    p->uid = (uid_t)json_integer_value(json_object_get(user, "uid"));
    p->gid = (gid_t)json_integer_value(json_object_get(user, "gid"));
    const json_t *g, *umask = json_object_get(user, "umask");
    size_t i;
    json_array_foreach(json_object_get(user, "additionalGids"), i, g)
    {
        if (p->ngids >= MON_NEXEC_MAX_GIDS)
            return uncovered(e, "%s", "process.user.additionalGids: too many");
        p->gids[p->ngids++] = (gid_t)json_integer_value(g);
    }
    p->has_umask = json_is_integer(umask);
    p->umask = (mode_t)json_integer_value(umask);
    return 0;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static char *copy_str(const json_t *v)
{
    const char *s = json_string_value(v);
    return s ? strdup(s) : NULL;
}

static char **str_vector(const json_t *a, size_t spare)
{
    size_t n = json_array_size(a);
    char **v = calloc(n + spare + 1, sizeof(*v));
    for (size_t i = 0; v && i < n; i++)
        if (!(v[i] = copy_str(json_array_get(a, i))))
            return strv_free(v), NULL;
    return v;
}

char **mon_nexec_env(const json_t *env, size_t spare, sl_error *e)
{
    size_t n = json_array_size(env), out = 0;
    char **v = calloc(n + spare + 1, sizeof(*v));
    if (!v)
        return sl_error_set(e, ENOMEM, "env"), NULL;
    for (size_t i = 0; i < n; i++) {
        const char *kv = json_string_value(json_array_get(env, i));
        const char *eq = kv ? strchr(kv, '=') : NULL;
        if (!eq || eq == kv) {
            strv_free(v);
            return sl_error_set(e, 0, "process.env[%zu]: not NAME=VALUE", i), NULL;
        }
        size_t klen = (size_t)(eq - kv) + 1, j = 0;
        while (j < out && strncmp(v[j], kv, klen))
            j++;
        char *dup = strdup(kv);
        if (!dup) {
            strv_free(v);
            return sl_error_set(e, ENOMEM, "env"), NULL;
        }
        if (j < out)
            free(v[j]);
        v[j] = dup;
        out += j == out;
    }
    return v;
}

void mon_nexec_passwd_home(const char *text, uid_t uid, char *out, size_t outlen)
{
    snprintf(out, outlen, "/");
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        const char *f[7];
        size_t nf = 0;
        f[nf++] = line;
        for (size_t i = 0; i < len && nf < 7; i++)
            if (line[i] == ':')
                f[nf++] = line + i + 1;
        char *end;
        if (nf == 7 && f[2] != f[3] - 1 && strtoul(f[2], &end, 10) == uid && end == f[3] - 1) {
            snprintf(out, outlen, "%.*s", (int)(f[6] - f[5] - 1), f[5]);
            return;
        }
        line = nl ? nl + 1 : NULL;
    }
}

/* The filter of linux.seccomp as BPF the child loads without libseccomp. */
static int plan_seccomp(mon_nexec_plan *p, const json_t *profile, sl_error *e)
{
    if (!profile || json_is_null(profile))
        return 0;
    scmp_filter_ctx f = sl_seccomp_filter_build(profile, SL_SECCOMP_DATA, e);
    if (!f)
        return sl_error_wrap(e, "linux.seccomp");
    if (seccomp_attr_set(f, SCMP_FLTATR_CTL_NNP, 0) < 0) {
        seccomp_release(f);
        return sl_error_set(e, EINVAL, "linux.seccomp: libseccomp attributes");
    }
    SL_AUTOCLOSE int fd = memfd_create("seccomp", MFD_CLOEXEC);
    int rc = fd >= 0 ? seccomp_export_bpf(f, fd) : -errno;
    seccomp_release(f);
    off_t size = rc == 0 ? lseek(fd, 0, SEEK_END) : -1;
    if (size <= 0 || size % (off_t)sizeof(struct sock_filter) || size > 65536 * 8)
        return sl_error_set(e, rc < 0 ? -rc : EINVAL, "linux.seccomp: export of the filter");
    p->seccomp.filter = malloc((size_t)size);
    p->seccomp.len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
    if (!p->seccomp.filter || pread(fd, p->seccomp.filter, (size_t)size, 0) != size)
        return sl_error_set(e, EIO, "linux.seccomp: export of the filter");
    return 0;
}

/* cgroup.procs of init's cgroup in each hierarchy mounted here. */
static int plan_cgroups(mon_nexec_plan *p, sl_error *e)
{
    char path[64];
    SL_AUTOFREE char *cg = NULL, *mountinfo = NULL;
    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)p->init);
    if (sl_read_file(path, SL_CG_FILE_MAX, &cg, NULL, e) < 0 ||
        sl_read_file("/proc/self/mountinfo", SL_CG_MOVE_MOUNTINFO_MAX, &mountinfo, NULL, e) < 0)
        return -1;
    for (char *line = cg, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        char ctrl[256], mnt[PATH_MAX], root[PATH_MAX];
        if (!c2 || sl_cg_first_controller(c1 + 1, (size_t)(c2 - c1 - 1), ctrl, sizeof(ctrl)) < 0 ||
            sl_cg_mountinfo_find(mountinfo, ctrl[0] ? ctrl : NULL, mnt, sizeof(mnt), root,
                                 sizeof(root)) < 0)
            continue;
        char procs[PATH_MAX * 2];
        snprintf(procs, sizeof(procs), "%s%s/cgroup.procs", mnt, strcmp(c2 + 1, "/") ? c2 + 1 : "");
        bool seen = false;
        for (size_t i = 0; i < p->ncgroups; i++)
            seen |= !strcmp(p->cgroup_procs[i], procs);
        if (seen)
            continue;
        if (p->ncgroups >= MON_NEXEC_MAX_CGROUPS)
            return sl_error_set(e, E2BIG, "more than %d cgroup hierarchies", MON_NEXEC_MAX_CGROUPS);
        if (!(p->cgroup_procs[p->ncgroups++] = strdup(procs)))
            return sl_error_set(e, ENOMEM, "cgroup");
    }
    return 0;
}

static int plan_process(mon_nexec_plan *p, const json_t *proc, const json_t *cmd, sl_error *e)
{
    const char *aa = json_string_value(json_object_get(proc, "apparmorProfile"));
    const char *se = json_string_value(json_object_get(proc, "selinuxLabel"));
    if (check_keys(proc, process_keys, "process", e) < 0)
        return -1;
    if ((aa && *aa) || (se && *se))
        return uncovered(e, "%s is set (the native path applies no LSM label)",
                         aa && *aa ? "process.apparmorProfile" : "process.selinuxLabel");
    const json_t *oom = json_object_get(proc, "oomScoreAdj");
    p->has_oom = json_is_integer(oom);
    p->oom_score_adj = (int)json_integer_value(oom);
    p->no_new_privs = json_is_true(json_object_get(proc, "noNewPrivileges"));
    const char *cwd = json_string_value(json_object_get(proc, "cwd"));
    if (!cwd || cwd[0] != '/')
        return uncovered(e, "%s", "process.cwd is not an absolute path");
    p->cwd = strdup(cwd);
    p->argv = str_vector(cmd, 0);
    if (!p->cwd || !p->argv)
        return sl_error_set(e, ENOMEM, "plan");
    if (plan_user(p, proc, e) < 0 || plan_caps(p, proc, e) < 0 || plan_rlimits(p, proc, e) < 0)
        return -1;
    return 0;
}

/* TERM=xterm for a terminal, as the runc path's process.json has it. */
static json_t *exec_env(const json_t *proc, bool tty)
{
    json_t *env = json_deep_copy(json_object_get(proc, "env"));
    if (!json_is_array(env)) {
        json_decref(env);
        env = json_array();
    }
    for (size_t i = json_array_size(env); tty && i-- > 0;) {
        const char *v = json_string_value(json_array_get(env, i));
        if (v && !strncmp(v, "TERM=", 5))
            json_array_remove(env, i);
    }
    if (tty)
        json_array_append_new(env, json_string("TERM=xterm"));
    return env;
}

static int plan_env(mon_nexec_plan *p, const json_t *proc, sl_error *e)
{
    json_t *env = exec_env(proc, p->tty);
    p->envp = mon_nexec_env(env, 1, e);
    json_decref(env);
    if (!p->envp)
        return -1;
    for (char **v = p->envp; *v; v++) {
        p->has_home |= !strncmp(*v, "HOME=", 5);
        if (!strncmp(*v, "PATH=", 5))
            p->path = *v + 5;
    }
    return 0;
}

static int last_cap(void)
{
    char *text = NULL;
    int n = -1;
    if (sl_read_file("/proc/sys/kernel/cap_last_cap", 64, &text, NULL, NULL) == 0)
        n = atoi(text);
    free(text);
    return n > 0 && n < 64 ? n : 40;
}

static int plan_fill(mon_nexec_plan *p, const json_t *cfg, const json_t *cmd, sl_error *e)
{
    const json_t *proc = json_object_get(cfg, "process");
    const json_t *linux = json_object_get(cfg, "linux");
    if (!json_is_object(proc) || !json_is_object(linux))
        return sl_error_set(e, EINVAL, "config.json has no process or linux object");
    p->last_cap = last_cap();
    if (plan_namespaces(p, linux, e) < 0 || plan_process(p, proc, cmd, e) < 0 ||
        plan_env(p, proc, e) < 0 || plan_seccomp(p, json_object_get(linux, "seccomp"), e) < 0)
        return -1;
    return plan_cgroups(p, e);
}

mon_nexec_plan *mon_nexec_plan_new(const char *bundle, pid_t init, const json_t *cmd, bool tty,
                                   int w, int h, sl_error *e)
{
    json_t *cfg = mon_bundle_config(bundle, e);
    if (!cfg)
        return NULL;
    mon_nexec_plan *p = calloc(1, sizeof(*p));
    if (!p) {
        json_decref(cfg);
        return sl_error_set(e, ENOMEM, "native exec plan"), NULL;
    }
    p->init = init;
    p->tty = tty;
    p->tty_w = w, p->tty_h = h;
    int rc = plan_fill(p, cfg, cmd, e);
    json_decref(cfg);
    if (rc < 0) {
        mon_nexec_plan_free(p);
        return NULL;
    }
    return p;
}

void mon_nexec_plan_free(mon_nexec_plan *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->ncgroups; i++)
        free(p->cgroup_procs[i]);
    free(p->seccomp.filter);
    free(p->cwd);
    strv_free(p->argv);
    strv_free(p->envp);
    free(p);
}
