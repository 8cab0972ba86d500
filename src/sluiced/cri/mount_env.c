/* What the host offers for mounts, probed once per sluiced at start:
 * SELinux, and recursive read-only mounts, which need mount_setattr (Linux
 * 5.12) and an OCI runtime that knows the "rro" option (`runc features`,
 * as the CRI's RuntimeHandlerFeatures comment describes). runc runs as a
 * child of the loop; calls that need the answer wait for it. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cri/ctr_mounts.h"
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

void sl_mount_probe_start(sl_mount_probe *p, uv_loop_t *loop, const char *runtime)
{
    p->env.selinux = access("/sys/fs/selinux/enforce", F_OK) == 0;
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
