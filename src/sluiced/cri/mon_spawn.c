#include "cri/mon_spawn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/child.h"
#include "sl_log.h"

typedef struct spawn_op {
    sl_mon_spawned_fn done;
    void *arg;
} spawn_op;

static void child_done(void *arg, const sl_child_result *r)
{
    spawn_op *op = arg;
    sl_error e = r->error;
    char text[SL_SYS_ERROR_MAX];
    snprintf(text, sizeof(text), "%s", r->output);
    size_t n = strlen(text);
    while (n > 0 && text[n - 1] == '\n')
        text[--n] = '\0';
    char *end;
    long pid = strtol(text, &end, 10);
    if (!e.msg[0] && (r->exit_status != 0 || r->term_signal || *end || pid <= 0))
        sl_error_set(&e, 0, "pod monitor failed: %s", text[0] ? text : "no output");
    if (e.msg[0])
        op->done(op->arg, 0, &e);
    else
        op->done(op->arg, (pid_t)pid, NULL);
    free(op);
}

int sl_mon_spawn_start(uv_loop_t *loop, const sl_mon_spawn_opts *o, sl_mon_spawned_fn done,
                       void *arg, sl_error *e)
{
    spawn_op *op = calloc(1, sizeof(*op));
    if (!op)
        return sl_error_set(e, ENOMEM, "pod monitor");
    op->done = done;
    op->arg = arg;
    /* The monitor logs at sluiced's level (at its start: not changed by a
     * later SIGHUP), e.g. every session's start and end at debug. */
    const char *argv[20] = {o->mon_path,
                            "--pod-id",
                            o->pod_id,
                            "--run-dir",
                            o->run_dir,
                            "--state-dir",
                            o->state_dir,
                            "--runtime",
                            o->runtime,
                            "--log-level",
                            sl_log_level_name(sl_log_get_level())};
    int n = 11;
    if (o->netns) {
        argv[n++] = "--netns";
        argv[n++] = o->netns;
    }
    if (o->pid_ns) {
        argv[n++] = "--pid-ns";
        argv[n++] = o->pid_ns;
    }
    if (o->pid_ns && o->userns) {
        argv[n++] = "--userns";
        argv[n++] = o->userns;
    }
    if (o->adopt)
        argv[n++] = "--adopt";
    if (o->cgroup && *o->cgroup) {
        argv[n++] = "--cgroup";
        argv[n++] = o->cgroup;
    }
    sl_child_opts co = {.what = "the pod monitor's start",
                        .file = o->mon_path,
                        .argv = (char *const *)argv,
                        .max_output = SL_SYS_ERROR_MAX - 64,
                        .merge_stderr = true,
                        .timeout_ms = o->timeout_ms,
                        .timeout_key = SL_MON_START_TIMEOUT_KEY};
    if (sl_child_start(loop, &co, child_done, op, NULL, e) < 0) {
        free(op);
        return -1;
    }
    return 0;
}
