/* Replacing a pod monitor that died: see mon_adopt.h. */
#include "cri/mon_adopt.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cri/mon_client.h"
#include "cri/mon_death.h"
#include "cri/mon_spawn.h"
#include "cri/pod_net.h"
#include "fsutil.h"
#include "pod/netns.h"
#include "pod/pidns.h"
#include "sl_log.h"

/* ---- sluiced's duplicates of the output fds ---- */

typedef struct stdio_op {
    sl_rt *rt;
    char ctr_id[SL_ID_HEX + 1];
} stdio_op;

static void stdio_reply(void *arg, const json_t *reply, int *fds, size_t nfds)
{
    stdio_op *op = arg;
    sl_ctr *c = sl_model_ctr(&op->rt->model, op->ctr_id);
    int keep[2] = {-1, -1};
    if (c && reply && json_is_true(json_object_get(reply, "ok"))) {
        int out = sl_mon_fd_index(reply, "stdout"), err = sl_mon_fd_index(reply, "stderr");
        int tty = sl_mon_fd_index(reply, "tty");
        keep[0] = tty >= 0 ? tty : out;
        keep[1] = tty >= 0 ? -1 : err;
        for (int s = 0; s < 2; s++)
            if (keep[s] >= 0 && (size_t)keep[s] < nfds && c->stdio_fds[s] < 0) {
                c->stdio_fds[s] = fds[keep[s]];
                fds[keep[s]] = -1;
            }
    } else if (c && reply) {
        sl_log(SL_LOG_DEBUG, "no output fds kept", "container", c->id, "error",
               sl_mon_str(reply, "error"), NULL);
    }
    if (c)
        c->stdio_asked = false;
    for (size_t i = 0; i < nfds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(op);
}

void sl_mon_stdio_fetch(sl_rt *rt, sl_pod *p, sl_ctr *c)
{
    if (!p || !p->mon || c->stdio_asked || c->stdio_fds[0] >= 0)
        return;
    stdio_op *op = calloc(1, sizeof(*op));
    sl_error e;
    if (!op)
        return;
    op->rt = rt;
    snprintf(op->ctr_id, sizeof(op->ctr_id), "%s", c->id);
    json_t *req = json_pack("{s:s, s:s}", "type", "stdio", "container_id", c->id);
    if (sl_monc_request(p->mon, req, NULL, 0, stdio_reply, op, &e) < 0) {
        free(op);
        return;
    }
    c->stdio_asked = true;
}

void sl_mon_stdio_fetch_pod(sl_rt *rt, sl_pod *p)
{
    for (sl_ctr *c = rt->model.ctrs; c; c = c->next) {
        if (strcmp(c->pod_id, p->id))
            continue;
        sl_ctr_status st;
        sl_model_ctr_status(&rt->model, c, &st);
        if (st.state != RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED)
            sl_mon_stdio_fetch(rt, p, c);
    }
}

void sl_mon_stdio_release(sl_ctr *c)
{
    for (int s = 0; s < 2; s++) {
        if (c->stdio_fds[s] >= 0)
            close(c->stdio_fds[s]);
        c->stdio_fds[s] = -1;
    }
}

void sl_mon_adopt_give_up(sl_rt *rt, sl_pod *p)
{
    for (sl_ctr *c = rt->model.ctrs; c; c = c->next)
        if (!strcmp(c->pod_id, p->id))
            sl_mon_stdio_release(c);
    p->ready = false;
    sl_error e;
    if (sl_model_save_pod(&rt->model, p, &e) < 0)
        sl_log(SL_LOG_ERROR, "pod state not saved", "pod", p->id, "error", e.msg, NULL);
}

/* ---- a new monitor ---- */

typedef struct adopt_op {
    sl_rt *rt;
    char pod_id[SL_ID_HEX + 1];
    unsigned pending;
    unsigned adopted, failed;
} adopt_op;

/* Every adopt request answered: the pod serves again. */
static void adopt_done(adopt_op *op)
{
    sl_rt *rt = op->rt;
    sl_pod *p = sl_model_pod(&rt->model, op->pod_id);
    if (p && !p->mon_dead) {
        p->ready = true;
        sl_error e;
        if (sl_model_save_pod(&rt->model, p, &e) < 0)
            sl_log(SL_LOG_ERROR, "pod state not saved", "pod", p->id, "error", e.msg, NULL);
        char n[24], f[24];
        snprintf(n, sizeof(n), "%u", op->adopted);
        snprintf(f, sizeof(f), "%u", op->failed);
        sl_log(SL_LOG_INFO, "pod monitor replaced", "pod", p->id, "adopted", n, "not_adopted", f,
               NULL);
        sl_events_pod(rt, RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_STARTED_EVENT, p);
    }
    free(op);
}

typedef struct adopt_one {
    adopt_op *op;
    char ctr_id[SL_ID_HEX + 1];
} adopt_one;

static void adopt_reply(void *arg, const json_t *reply, int *fds, size_t nfds)
{
    adopt_one *one = arg;
    adopt_op *op = one->op;
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
    sl_ctr *c = sl_model_ctr(&op->rt->model, one->ctr_id);
    if (reply && json_is_true(json_object_get(reply, "ok"))) {
        op->adopted++;
    } else {
        op->failed++;
        sl_log(SL_LOG_ERROR, "container not adopted", "container", one->ctr_id, "error",
               reply ? sl_mon_str(reply, "error") : "the monitor went away", NULL);
        if (c) /* watched again: its end is reported from the reaper's record */
            sl_mon_reconcile_ctr(op->rt, c);
    }
    free(one);
    if (--op->pending == 0)
        adopt_done(op);
}

/* fds: dups of sluiced's copies, for the monitor to take. */
static int dup_fds(const sl_ctr *c, int fds[2], const char *names[2])
{
    bool tty = c->config->tty;
    size_t n = 0;
    for (int s = 0; s < (tty ? 1 : 2); s++) {
        if (c->stdio_fds[s] < 0 || (fds[n] = fcntl(c->stdio_fds[s], F_DUPFD_CLOEXEC, 3)) < 0)
            break;
        names[n] = tty ? "tty" : s ? "stderr" : "stdout";
        n++;
    }
    if (n == (tty ? 1u : 2u))
        return (int)n;
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
    return -1;
}

static json_t *adopt_req(const sl_rt *rt, const sl_ctr *c, pid_t pid, unsigned long long start)
{
    sl_ctr_status st;
    sl_model_ctr_status(&rt->model, c, &st);
    char ticks[32];
    snprintf(ticks, sizeof(ticks), "%llu", start);
    const Runtime__V1__ContainerConfig *cc = c->config;
    bool created = st.state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED;
    return json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:b, s:b, s:b, s:I, s:s, s:I, s:I}", "type", "adopt", "state",
        created ? "created" : "running", "container_id", c->id, "bundle",
        sl_rec_str(c->rec, "bundle"), "log_path", sl_rec_str(c->rec, "log_path"), "tty", cc->tty,
        "stdin", cc->stdin, "stdin_once", cc->stdin_once, "pid", (json_int_t)pid, "start", ticks,
        "created_at", (json_int_t)c->created_at, "started_at", (json_int_t)st.started_at);
}

/* Hands c to the new monitor when its init lives, with its output when
 * sluiced holds it; true when a request went out. */
static bool adopt_ctr(adopt_op *op, sl_monc *m, sl_ctr *c)
{
    sl_ctr_status st;
    sl_model_ctr_status(&op->rt->model, c, &st);
    pid_t pid;
    unsigned long long start;
    int fds[2];
    const char *names[2];
    if ((st.state != RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING &&
         st.state != RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED) ||
        !sl_mon_ctr_init(op->rt, c, &pid, &start))
        return false;
    int n = dup_fds(c, fds, names);
    if (n < 0) { /* this sluiced started after the monitor died: the output is lost */
        sl_log(SL_LOG_WARN, "container adopted without its output: sluiced held no fds of it",
               "container", c->id, NULL);
        n = 0;
    }
    adopt_one *one = calloc(1, sizeof(*one));
    json_t *req = one ? adopt_req(op->rt, c, pid, start) : NULL;
    if (!req) {
        for (int i = 0; i < n; i++)
            close(fds[i]);
        free(one);
        op->failed++;
        return false;
    }
    json_t *names_j = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(names_j, json_string(names[i]));
    if (n > 0)
        json_object_set_new(req, "fds", names_j);
    else
        json_decref(names_j);
    one->op = op;
    snprintf(one->ctr_id, sizeof(one->ctr_id), "%s", c->id);
    sl_mon_unwatch_ctr(op->rt, c); /* the monitor reports its end from now on */
    sl_error e;
    if (sl_monc_request(m, req, fds, (size_t)n, adopt_reply, one, &e) < 0) {
        free(one);
        op->failed++;
        sl_mon_reconcile_ctr(op->rt, c);
        return false;
    }
    return true;
}

static void adopt_all(adopt_op *op, sl_pod *p, sl_monc *m)
{
    op->pending = 1; /* held until every request is out */
    for (sl_ctr *c = op->rt->model.ctrs; c; c = c->next)
        if (!strcmp(c->pod_id, p->id) && adopt_ctr(op, m, c))
            op->pending++;
    if (--op->pending == 0)
        adopt_done(op);
}

static void spawned(void *arg, pid_t pid, const sl_error *e)
{
    adopt_op *op = arg;
    sl_rt *rt = op->rt;
    sl_pod *p = sl_model_pod(&rt->model, op->pod_id);
    if (p)
        p->adopting = false;
    /* Removed meanwhile: the new one shuts down (and takes the pod's pid
     * namespace with it). sluiced stopping: the new one goes without
     * touching anything (SIGKILL), the pod is still recorded ready, so the
     * next sluiced adopts it again. */
    if (pid > 0 && (!p || rt->detached)) {
        kill(pid, p ? SIGKILL : SIGTERM);
        free(op);
        return;
    }
    if (pid <= 0) {
        sl_log(SL_LOG_ERROR, "pod monitor not replaced", "pod", p->id, "error",
               e ? e->msg : "no pid", NULL);
        sl_mon_adopt_give_up(rt, p);
        free(op);
        return;
    }
    p->mon_dead = false;
    json_object_set_new(p->rec, "mon_pid", json_integer(pid));
    json_object_set_new(p->rec, "mon_dead", json_false());
    sl_error se;
    if (sl_model_save_pod(&rt->model, p, &se) < 0)
        sl_log(SL_LOG_ERROR, "pod state not saved", "pod", p->id, "error", se.msg, NULL);
    sl_monc *m = sl_rt_pod_mon(rt, p, &se); /* connects, watches the new one */
    if (!m || p->mon_dead) {                /* gone already: nobody adopts the containers */
        sl_log(SL_LOG_ERROR, "pod monitor not replaced", "pod", p->id, "error", se.msg, NULL);
        sl_mon_adopt_give_up(rt, p);
        free(op);
        return;
    }
    adopt_all(op, p, m);
}

bool sl_mon_restart_take(uint64_t *window_ms, uint32_t *count, uint64_t now_ms, uint32_t max)
{
    if (!*window_ms || now_ms >= *window_ms + SL_MON_RESTART_WINDOW_MS) {
        *window_ms = now_ms ? now_ms : 1;
        *count = 0;
    }
    if (*count >= max)
        return false;
    (*count)++;
    return true;
}

bool sl_mon_adopt_allowed(sl_rt *rt, sl_pod *p)
{
    if (sl_mon_restart_take(&p->restart_window_ms, &p->restarts, uv_now(rt->loop),
                            rt->cfg->monitor_restart_max))
        return true;
    char max[24];
    snprintf(max, sizeof(max), "%u", rt->cfg->monitor_restart_max);
    sl_log(SL_LOG_ERROR, "pod monitor not replaced: restart limit reached", "pod", p->id,
           SL_MON_RESTART_MAX_KEY, max, NULL);
    return false;
}

static bool adopt_start(sl_rt *rt, sl_pod *p)
{
    SL_AUTOFREE char *run = sl_rt_pod_run_dir(rt, p->id);
    SL_AUTOFREE char *ns_dir = run ? sl_path_join(run, "ns") : NULL;
    bool host_net = sl_pod_host_network(p->config);
    SL_AUTOFREE char *netns = ns_dir && !host_net ? sl_pod_ns_path(ns_dir, "net") : NULL;
    SL_AUTOFREE char *pid_ns = ns_dir ? sl_pod_pidns_path(ns_dir) : NULL; /* still pinned */
    adopt_op *op = ns_dir ? calloc(1, sizeof(*op)) : NULL;
    if (!op || (!host_net && !netns)) {
        free(op);
        return false;
    }
    op->rt = rt;
    snprintf(op->pod_id, sizeof(op->pod_id), "%s", p->id);
    sl_mon_spawn_opts o = {.mon_path = rt->mon_path,
                           .pod_id = p->id,
                           .run_dir = run,
                           .state_dir = rt->cfg->state_dir,
                           .runtime = rt->cfg->runtime_path,
                           .netns = netns,
                           .pid_ns = pid_ns,
                           .cgroup = rt->cfg->monitor_cgroup,
                           .adopt = true,
                           .timeout_ms = rt->cfg->monitor_start_timeout_ms};
    sl_error e;
    if (sl_mon_spawn_start(rt->loop, &o, spawned, op, &e) < 0) {
        sl_log(SL_LOG_ERROR, "pod monitor not replaced", "pod", p->id, "error", e.msg, NULL);
        free(op);
        return false;
    }
    p->adopting = true;
    sl_log(SL_LOG_INFO, "starting a pod monitor to adopt the containers", "pod", p->id, NULL);
    return true;
}

void sl_mon_adopt_start(sl_rt *rt, sl_pod *p)
{
    /* sluiced stopping: the pod stays recorded ready, the next one adopts */
    if (!p->adopting && !rt->detached && !adopt_start(rt, p))
        sl_mon_adopt_give_up(rt, p);
}
