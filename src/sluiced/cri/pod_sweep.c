#include "cri/pod_sweep.h"

#include <ctype.h>
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cri/pod_net.h"
#include "fsutil.h"
#include "pod/netns.h"
#include "pod/pidns.h"
#include "sl_log.h"
#include "state/state.h"

/* Bounds of what the sweep reads: a packed PodSandboxConfig is capped by
 * the gRPC message limit; a CNI result is small; a command line of ours
 * is a few paths. */
#define SWEEP_MAX_CONFIG (16u << 20)
#define SWEEP_MAX_RESULT (1u << 20)
#define SWEEP_MAX_PROC_FILE (64u << 10)

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

/* The monitor recorded in run_dir/mon.pid, killed when its command line
 * still names run_dir (a pid reused since names another program). Its
 * reaper exits once its children are gone and lets the pid-namespace
 * holder go. */
static void kill_monitor(const char *run_dir)
{
    SL_AUTOFREE char *text = read_in(run_dir, "mon.pid", 64, NULL);
    pid_t pid = text ? (pid_t)atoi(text) : 0;
    size_t len = 0;
    SL_AUTOFREE char *cmd = pid > 1 ? proc_file(pid, "cmdline", &len) : NULL;
    if (cmd && has_string(cmd, len, "--run-dir") && has_string(cmd, len, run_dir))
        kill(pid, SIGKILL);
}

/* CNI plugins the dead sluiced started for the pod and that still run: an
 * ADD finishing after our DEL would keep its address for good. */
static void kill_cni_plugins(const char (*pod_id)[SL_ID_HEX + 1])
{
    char want[sizeof("CNI_CONTAINERID=") + SL_ID_HEX];
    snprintf(want, sizeof(want), "CNI_CONTAINERID=%s", *pod_id);
    DIR *d = opendir("/proc");
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (!isdigit((unsigned char)de->d_name[0]))
            continue;
        size_t len = 0;
        pid_t pid = (pid_t)atoi(de->d_name);
        SL_AUTOFREE char *env = proc_file(pid, "environ", &len);
        if (env && has_string(env, len, want))
            kill(pid, SIGKILL);
    }
    if (d)
        closedir(d);
}

/* ---- one pod ---- */

typedef struct sweep_op {
    char id[SL_ID_HEX + 1];
    char *run_dir;
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
    kill_monitor(op->run_dir);
    kill_cni_plugins(&op->id);
    if (!release_network(rt, op))
        sweep_finish(op, "none to release");
}

/* A pod with a state directory was recorded, even if its record could
 * not be read now: never sweep it. */
static bool recorded(const sl_rt *rt, const char *id)
{
    SL_AUTOFREE char *dir = sl_state_dir(rt->cfg->state_dir, "pods", id);
    struct stat st;
    return !dir || stat(dir, &st) == 0;
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
