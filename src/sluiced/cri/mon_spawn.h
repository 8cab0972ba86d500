/* Starting a pod's monitor from the loop: sluice-mon's starter process
 * prints the monitor's pid once the monitor listens (or its error) and
 * exits; it runs as a child of the loop with a deadline. */
#ifndef SL_MON_SPAWN_H
#define SL_MON_SPAWN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "sys_error.h"

/* Default of monitor-start-timeout-ms. */
#define SL_MON_DEFAULT_START_TIMEOUT_MS 10000u
#define SL_MON_START_TIMEOUT_KEY "monitor-start-timeout-ms"
/* Default of monitor-restart-max: monitors started per pod within
 * SL_MON_RESTART_WINDOW_MS to replace one that died. */
#define SL_MON_DEFAULT_RESTART_MAX 3u
#define SL_MON_RESTART_WINDOW_MS 60000u
#define SL_MON_RESTART_MAX_KEY "monitor-restart-max"

typedef struct sl_mon_spawn_opts {
    const char *mon_path; /* the sluice-mon executable */
    const char *pod_id, *run_dir, *state_dir, *runtime;
    const char *netns;  /* --netns FILE (the pod's network), or NULL: the host's */
    const char *pid_ns; /* --pid-ns FILE, or NULL */
    const char *userns; /* --userns FILE (the pod's, which owns pid_ns), or NULL */
    const char *cgroup; /* --cgroup PATH (monitor-cgroup), or NULL / "" */
    bool adopt;         /* --adopt: replaces a monitor that died */
    uint32_t timeout_ms;
} sl_mon_spawn_opts;

/* pid > 0 with e NULL, or pid 0 with *e (the monitor's own words, or the
 * timeout naming its key). */
typedef void (*sl_mon_spawned_fn)(void *arg, pid_t pid, const sl_error *e);

/* Runs `mon_path --pod-id ID --run-dir RUN --state-dir STATE --runtime R
 * [--netns FILE] [--pid-ns FILE] [--userns FILE] [--cgroup PATH]`: the monitor makes
 * port-forward connections in netns. Returns 0 and calls done once later, or -1 (*e) when
 * it could not start. */
int sl_mon_spawn_start(uv_loop_t *loop, const sl_mon_spawn_opts *o, sl_mon_spawned_fn done,
                       void *arg, sl_error *e);

#endif
