#include "cri/pod_sweep.h"

#include <ctype.h>
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cri/pod_net.h"
#include "fsutil.h"
#include "pod/netns.h"
#include "pod/pidns.h"
#include "proc_stat.h"
#include "sl_log.h"
#include "state/state.h"

/* Bounds of what the sweep reads: a packed PodSandboxConfig is capped by
 * the gRPC message limit; a CNI result is small; a command line of ours
 * is a few paths. */
#define SWEEP_MAX_CONFIG (16u << 20)
#define SWEEP_MAX_RESULT (1u << 20)
#define SWEEP_MAX_PROC_FILE (64u << 10)
/* Killing a cut start's processes: rounds of a /proc scan, each waiting at
 * most this long for what it killed to be gone (SIGKILL is near-instant;
 * this runs once per cut start, at sluiced's start). */
#define SWEEP_KILL_ROUNDS 5
#define SWEEP_KILL_WAIT_MS 2000
#define SWEEP_MAX_PROCS 64

int sl_pod_start_note_config(const char *run_dir, const Runtime__V1__PodSandboxConfig *c,
                             sl_error *e)
{
    size_t len = protobuf_c_message_get_packed_size(&c->base);
    SL_AUTOFREE uint8_t *buf = malloc(len ? len : 1);
    SL_AUTOFREE char *path = sl_path_join(run_dir, SL_POD_START_CONFIG);
    if (!buf || !path)
        return sl_error_set(e, ENOMEM, "pod start record");
    protobuf_c_message_pack(&c->base, buf);
    return sl_write_file_atomic(path, buf, len, 0600, e);
}

int sl_pod_start_note_cni(const char *run_dir, const char *result, sl_error *e)
{
    SL_AUTOFREE char *path = sl_path_join(run_dir, SL_POD_START_CNI);
    if (!path)
        return sl_error_set(e, ENOMEM, "pod start record");
    return sl_write_file_atomic(path, result, strlen(result), 0600, e);
}

/* ---- processes the cut start left ---- */

static char *read_in(const char *dir, const char *name, size_t max, size_t *len)
{
    SL_AUTOFREE char *path = sl_path_join(dir, name);
    char *text = NULL;
    sl_error e;
    if (!path || sl_read_file(path, max, &text, len, &e) < 0)
        return NULL;
    return text;
}

/* NUL-separated strings (a /proc cmdline or environ) containing want. */
static bool has_string(const char *buf, size_t len, const char *want)
{
    for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
        if (!strcmp(buf + i, want))
            return true;
    return false;
}

static char *proc_file(pid_t pid, const char *name, size_t *len)
{
    char dir[32];
    snprintf(dir, sizeof(dir), "/proc/%d", (int)pid);
    return read_in(dir, name, SWEEP_MAX_PROC_FILE, len);
}

/* Whether pid is one of the pod's: its monitor (`sluice-mon ... --run-dir
 * RUN_DIR`), its reaper (`sluice-reaper RUN_DIR PID`), or a CNI plugin the
 * dead sluiced started for it (cni_env, `CNI_CONTAINERID=<id>`, in its
 * environment: an ADD finishing after our DEL would keep its address). A
 * monitor may be still starting — mon.pid not written yet — so processes
 * are found by what they run for, not by a pid file. */
static bool pod_owns(pid_t pid, const char *run_dir, const char *cni_env)
{
    size_t len = 0;
    SL_AUTOFREE char *cmd = proc_file(pid, "cmdline", &len);
    if (cmd && len) {
        const char *slash = strrchr(cmd, '/'); /* within argv[0] */
        const char *name = slash ? slash + 1 : cmd;
        size_t n0 = strlen(cmd) + 1;
        if (!strcmp(name, "sluice-mon") && has_string(cmd, len, "--run-dir") &&
            has_string(cmd, len, run_dir))
            return true;
        if (!strcmp(name, "sluice-reaper") && n0 < len && !strcmp(cmd + n0, run_dir))
            return true;
    }
    SL_AUTOFREE char *env = proc_file(pid, "environ", &len);
    return env && has_string(env, len, cni_env);
}

/* SIGKILLs the pod's processes; returns how many (at most max in pids). */
static size_t kill_round(const char *run_dir, const char *cni_env, pid_t *pids, size_t max)
{
    size_t n = 0;
    DIR *d = opendir("/proc");
    struct dirent *de;
    while (d && (de = readdir(d))) {
        pid_t pid = isdigit((unsigned char)de->d_name[0]) ? (pid_t)atoi(de->d_name) : 0;
        if (pid > 1 && pid != getpid() && pod_owns(pid, run_dir, cni_env) &&
            kill(pid, SIGKILL) == 0 && n < max)
            pids[n++] = pid;
    }
    if (d)
        closedir(d);
    return n;
}

static bool gone(pid_t pid)
{
    char state;
    return sl_proc_stat(pid, &state, NULL) < 0 || state == 'Z' || state == 'X';
}

/* Kills the pod's processes and waits (bounded) until they are gone, again
 * while a round finds any: a monitor killed between its fork and its
 * child's start leaves that child to find. */
static void kill_pod_procs(const char *run_dir, const char (*pod_id)[SL_ID_HEX + 1])
{
    char cni_env[sizeof("CNI_CONTAINERID=") + SL_ID_HEX];
    snprintf(cni_env, sizeof(cni_env), "CNI_CONTAINERID=%s", *pod_id);
    pid_t pids[SWEEP_MAX_PROCS];
    for (int round = 0; round < SWEEP_KILL_ROUNDS; round++) {
        size_t n = kill_round(run_dir, cni_env, pids, SWEEP_MAX_PROCS);
        if (n == 0)
            return;
        for (int waited = 0; waited < SWEEP_KILL_WAIT_MS; waited += 10) {
            size_t left = 0;
            for (size_t i = 0; i < n; i++)
                left += !gone(pids[i]);
            if (!left)
                break;
            usleep(10000);
        }
    }
    sl_log(SL_LOG_WARN, "processes of a pod whose start was cut keep coming back", "pod", *pod_id,
           NULL);
}

/* ---- one pod ---- */

typedef struct sweep_op {
    char id[SL_ID_HEX + 1];
    char *run_dir;
    const char *state_dir; /* sluiced's */
} sweep_op;

static void sweep_finish(sweep_op *op, const char *net)
{
    SL_AUTOFREE char *ns_dir = sl_path_join(op->run_dir, "ns");
    sl_error e = {0};
    int rc = ns_dir ? 0 : sl_error_set(&e, ENOMEM, "pod namespaces");
    if (rc == 0)
        rc = sl_pod_ns_remove(ns_dir, &e);
    if (rc == 0)
        rc = sl_pod_pidns_release(ns_dir, &e);
    if (rc == 0)
        rc = sl_rm_rf(op->run_dir, &e);
    if (rc == 0)
        rc = sl_state_remove(op->state_dir, "pods", op->id, &e);
    if (rc < 0)
        sl_log(SL_LOG_ERROR, "a pod whose start was cut could not be removed", "pod", op->id,
               "error", e.msg, NULL);
    else
        sl_log(SL_LOG_WARN, "removed a pod whose start was cut short by sluiced's end", "pod",
               op->id, "network", net, NULL);
    free(op->run_dir);
    free(op);
}

static void del_done(void *arg, int rc, const char *ip, const char *result, const sl_error *e)
{
    (void)ip;
    (void)result;
    sweep_op *op = arg;
    if (rc < 0)
        sl_log(SL_LOG_WARN, "CNI DEL of a pod whose start was cut failed", "pod", op->id, "error",
               e->msg, NULL);
    sweep_finish(op, rc < 0 ? "CNI DEL failed" : "released (CNI DEL)");
}

/* Starts CNI DEL when the start got to the network; false when there is
 * nothing to release (host network, or the request not recorded yet: the
 * network comes after it). */
static bool release_network(sl_rt *rt, sweep_op *op)
{
    size_t len = 0;
    SL_AUTOFREE char *packed = read_in(op->run_dir, SL_POD_START_CONFIG, SWEEP_MAX_CONFIG, &len);
    Runtime__V1__PodSandboxConfig *c =
        packed ? runtime__v1__pod_sandbox_config__unpack(NULL, len, (uint8_t *)packed) : NULL;
    if (!c || !c->metadata || sl_pod_host_network(c)) {
        if (c)
            runtime__v1__pod_sandbox_config__free_unpacked(c, NULL);
        return false;
    }
    SL_AUTOFREE char *result = read_in(op->run_dir, SL_POD_START_CNI, SWEEP_MAX_RESULT, NULL);
    SL_AUTOFREE char *ns_dir = sl_path_join(op->run_dir, "ns");
    SL_AUTOFREE char *netns = ns_dir ? sl_path_join(ns_dir, "net") : NULL;
    sl_cni_opts o;
    sl_pod_cni_opts(rt, op->id, netns, c, &o);
    sl_error e;
    int rc = netns ? sl_cni_del_start(rt->loop, &o, result, del_done, op, &e) : -1;
    free((void *)o.portmaps);
    runtime__v1__pod_sandbox_config__free_unpacked(c, NULL);
    if (rc < 0 && netns)
        sl_log(SL_LOG_WARN, "CNI DEL of a pod whose start was cut did not run", "pod", op->id,
               "error", e.msg, NULL);
    return rc == 0;
}

static bool is_pod_id(const char *s)
{
    size_t n = strspn(s, "0123456789abcdef");
    return n == SL_ID_HEX && !s[n];
}

static void sweep_one(sl_rt *rt, const char *id)
{
    sweep_op *op = calloc(1, sizeof(*op));
    if (!op || !(op->run_dir = sl_rt_pod_run_dir(rt, id))) {
        free(op);
        return;
    }
    memcpy(op->id, id, SL_ID_HEX); /* is_pod_id: exactly SL_ID_HEX */
    op->state_dir = rt->cfg->state_dir;
    kill_pod_procs(op->run_dir, &op->id);
    if (!release_network(rt, op))
        sweep_finish(op, "none to release");
}

/* A pod whose record file exists was recorded, even if the record could
 * not be read now: never sweep it. A state directory without its record is
 * a save cut by the same death (the record is written to a temporary file
 * and renamed): that pod was never answered; the sweep removes the
 * directory too. */
static bool recorded(const sl_rt *rt, const char *id)
{
    SL_AUTOFREE char *dir = sl_state_dir(rt->cfg->state_dir, "pods", id);
    SL_AUTOFREE char *rec = dir ? sl_path_join(dir, "record.json") : NULL;
    struct stat st;
    return !rec || stat(rec, &st) == 0;
}

void sl_pod_sweep_cut_starts(sl_rt *rt)
{
    DIR *d = opendir(rt->pods_run_dir);
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (is_pod_id(de->d_name) && !sl_model_pod(&rt->model, de->d_name) &&
            !recorded(rt, de->d_name))
            sweep_one(rt, de->d_name);
    if (d)
        closedir(d);
}
