/* What the host offers for mounts, probed once per sluiced at start:
 * SELinux, idmapped mounts on the state directory's file system (for pods
 * with a user namespace), and recursive read-only mounts, which need mount_setattr (Linux
 * 5.12) and an OCI runtime that knows the "rro" option (`runc features`,
 * as the CRI's RuntimeHandlerFeatures comment describes). runc runs as a
 * child of the loop; calls that need the answer wait for it. */
#include <jansson.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "container/idmap.h"
#include "cri/ctr_mounts.h"
#include "fsutil.h"
#include "sl_log.h"
#include "proc/child.h"

bool sl_runtime_features_have_rro(const char *json_text)
{
    json_t *j = json_loads(json_text, 0, NULL);
    json_t *opts = json_object_get(j, "mountOptions");
    size_t i;
    json_t *o;
    bool found = false;
    json_array_foreach(opts, i, o) found |=
        json_is_string(o) && !strcmp(json_string_value(o), "rro");
    json_decref(j);
    return found;
}

static bool kernel_at_least(int major, int minor)
{
    struct utsname u;
    int ma = 0, mi = 0;
    if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
        return false;
    return ma > major || (ma == major && mi >= minor);
}

static void probe_done(void *arg, const sl_child_result *r)
{
    sl_mount_probe *p = arg;
    p->env.rro = !r->error.msg[0] && r->exit_status == 0 && r->term_signal == 0 &&
                 sl_runtime_features_have_rro(r->output);
    if (r->error.msg[0])
        sl_log(SL_LOG_WARN, "runtime features unknown", "error", r->error.msg, NULL);
    p->done = true;
    sl_waitq_run(&p->waiters);
}

/* runc binds a container's rootfs (under the state directory) and its
 * pod's /etc files (under the run directory) as the container's root: in a
 * user namespace, an id that is no one's on the host, so every directory
 * above them must be searchable by others. False with why, else true. */
static bool searchable(const char *dir, char *why, size_t why_size)
{
    SL_AUTOFREE char *p = realpath(dir, NULL);
    if (!p) {
        snprintf(why, why_size, "%s: %s", dir, strerror(errno));
        return false;
    }
    for (;;) { /* the directory, then each parent up to "/" (excluded) */
        struct stat st;
        if (stat(p, &st) == 0 && !(st.st_mode & S_IXOTH)) {
            snprintf(why, why_size,
                     "%s (mode %04o) is not searchable by others, which a container's root in "
                     "a user namespace must pass",
                     p, (unsigned)(st.st_mode & 07777));
            return false;
        }
        char *slash = strrchr(p, '/');
        if (!slash || slash == p)
            return true;
        *slash = '\0';
    }
}

void sl_mount_probe_start(sl_mount_probe *p, uv_loop_t *loop, const char *runtime,
                          const char *state_dir, const char *run_dir)
{
    p->env.selinux = access("/sys/fs/selinux/enforce", F_OK) == 0;
    /* where the image layers are: a container's are idmapped there */
    char *why = p->env.idmap_why;
    size_t n = sizeof(p->env.idmap_why);
    p->env.idmap = state_dir && run_dir && searchable(state_dir, why, n) &&
                   searchable(run_dir, why, n) && sl_idmap_supported(state_dir, why, n);
    if (!state_dir || !run_dir)
        snprintf(why, n, "no state or run directory");
    if (!p->env.idmap)
        sl_log(SL_LOG_INFO, "no user namespaces for pods", "reason", p->env.idmap_why, NULL);
    p->env.rro = false;
    if (!runtime || !kernel_at_least(5, 12)) {
        p->done = true;
        return;
    }
    char what[300];
    snprintf(what, sizeof(what), "`%s features`", runtime);
    char *argv[] = {(char *)runtime, "features", NULL};
    sl_child_opts o = {.what = what,
                       .file = runtime,
                       .argv = argv,
                       .max_output = SL_RUNTIME_FEATURES_MAX,
                       .timeout_ms = SL_RUNTIME_FEATURES_TIMEOUT_MS,
                       .timeout_key = "SL_RUNTIME_FEATURES_TIMEOUT_MS"};
    sl_error e;
    if (sl_child_start(loop, &o, probe_done, p, NULL, &e) < 0) {
        sl_log(SL_LOG_WARN, "runtime features unknown", "error", e.msg, NULL);
        p->done = true;
    }
}
