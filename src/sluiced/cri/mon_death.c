/* Pod monitors that die, and the containers they leave: see mon_death.h. */
#include "cri/mon_death.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cri/mon_adopt.h"
#include "cri/mon_client.h"
#include "fsutil.h"
#include "proc_stat.h"
#include "sl_log.h"

#define MON_COMM "sluice-mon"
#define PROC_TEXT_MAX 4096
#define RUNC_STATE_MAX (1024 * 1024)

struct sl_pidwatch {
    uv_poll_t poll;   /* a process's pidfd, or (fd -1) */
    uv_timer_t timer; /* the wait for a reaper's record */
    int fd;
    int tries;
    sl_rt *rt;
    char pod_id[SL_ID_HEX + 1];
    char ctr_id[SL_ID_HEX + 1]; /* "": the pod's monitor */
    struct sl_pidwatch *prev, *next;
};

/* ---- processes ---- */

static int pidfd_open_pid(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

static bool read_proc(pid_t pid, const char *what, char **text)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
    sl_error e;
    return sl_read_file(path, PROC_TEXT_MAX, text, NULL, &e) == 0;
}

static bool proc_stat(pid_t pid, char *state, unsigned long long *start)
{
    return sl_proc_stat(pid, state, start) == 0;
}

static bool proc_is_monitor(pid_t pid)
{
    SL_AUTOFREE char *comm = NULL;
    char state;
    unsigned long long start;
    return read_proc(pid, "comm", &comm) && !strcmp(comm, MON_COMM "\n") &&
           proc_stat(pid, &state, &start) && state != 'Z';
}

static char *runc_root(const sl_rt *rt, const char *pod_id)
{
    SL_AUTOFREE char *run = sl_rt_pod_run_dir(rt, pod_id);
    return run ? sl_path_join(run, "runc") : NULL;
}

/* The container's init as runc recorded it: pid and start time. */
static bool runc_init(const sl_rt *rt, const sl_ctr *c, pid_t *pid, unsigned long long *start)
{
    SL_AUTOFREE char *root = runc_root(rt, c->pod_id);
    SL_AUTOFREE char *dir = root ? sl_path_join(root, c->id) : NULL;
    SL_AUTOFREE char *path = dir ? sl_path_join(dir, "state.json") : NULL;
    SL_AUTOFREE char *text = NULL;
    sl_error e;
    if (!path || sl_read_file(path, RUNC_STATE_MAX, &text, NULL, &e) < 0)
        return false;
    json_t *j = json_loads(text, 0, NULL);
    json_int_t init = json_integer_value(json_object_get(j, "init_process_pid"));
    json_int_t want = json_integer_value(json_object_get(j, "init_process_start"));
    json_decref(j);
    *pid = (pid_t)init;
    *start = (unsigned long long)want;
    return init > 0;
}

/* That init, verified against the process that has its pid now (same start
 * time, not a zombie). */
bool sl_mon_ctr_init(const sl_rt *rt, const sl_ctr *c, pid_t *pid, unsigned long long *want)
{
    unsigned long long start;
    char state;
    return runc_init(rt, c, pid, want) && proc_stat(*pid, &state, &start) && state != 'Z' &&
           start == *want;
}

static bool ctr_alive(const sl_rt *rt, const sl_ctr *c, pid_t *pid)
{
    unsigned long long want;
    return sl_mon_ctr_init(rt, c, pid, &want);
}

/* The exit code the pod's reaper (sluice-reaper, which outlives the
 * monitor) recorded for pid in <run-dir>/exits/<pid>: "<code> <start>".
 * True when it recorded the process that started at start. */
static bool reaped_code(const sl_rt *rt, const char *pod_id, pid_t pid, unsigned long long start,
                        int *code)
{
    SL_AUTOFREE char *run = sl_rt_pod_run_dir(rt, pod_id);
    SL_AUTOFREE char *dir = run ? sl_path_join(run, SL_MON_EXITS_DIR) : NULL;
    char name[32];
    snprintf(name, sizeof(name), "%d", (int)pid);
    SL_AUTOFREE char *path = dir ? sl_path_join(dir, name) : NULL;
    SL_AUTOFREE char *text = NULL;
    sl_error e;
    unsigned long long got;
    return path && sl_read_file(path, PROC_TEXT_MAX, &text, NULL, &e) == 0 &&
           sscanf(text, "%d %llu", code, &got) == 2 && got == start && *code >= 0;
}

/* ---- watches ---- */

static void watch_freed(uv_handle_t *h)
{
    struct sl_pidwatch *w = h->data;
    if (w->fd >= 0)
        close(w->fd);
    free(w);
}

static void watch_close(struct sl_pidwatch *w)
{
    sl_rt *rt = w->rt;
    if (w->prev)
        w->prev->next = w->next;
    else
        rt->watches = w->next;
    if (w->next)
        w->next->prev = w->prev;
    uv_close(w->fd >= 0 ? (uv_handle_t *)&w->poll : (uv_handle_t *)&w->timer, watch_freed);
}

static struct sl_pidwatch *watch_find(sl_rt *rt, const char *pod_id, const char *ctr_id)
{
    for (struct sl_pidwatch *w = rt->watches; w; w = w->next)
        if (!strcmp(w->pod_id, pod_id) && !strcmp(w->ctr_id, ctr_id))
            return w;
    return NULL;
}

static void mon_died(sl_rt *rt, sl_pod *p);
static void ctr_gone(sl_rt *rt, sl_ctr *c, int tries);

static void watch_cb(uv_poll_t *h, int status, int events)
{
    (void)status;
    (void)events; /* readable, or an error: the process is gone either way */
    struct sl_pidwatch *w = h->data;
    sl_rt *rt = w->rt;
    char pod_id[SL_ID_HEX + 1], ctr_id[SL_ID_HEX + 1];
    snprintf(pod_id, sizeof(pod_id), "%s", w->pod_id);
    snprintf(ctr_id, sizeof(ctr_id), "%s", w->ctr_id);
    watch_close(w);
    sl_pod *p = sl_model_pod(&rt->model, pod_id);
    sl_ctr *c = *ctr_id ? sl_model_ctr(&rt->model, ctr_id) : NULL;
    if (p && !*ctr_id)
        mon_died(rt, p);
    else if (c)
        ctr_gone(rt, c, 0);
}

static void retry_cb(uv_timer_t *h)
{
    struct sl_pidwatch *w = h->data;
    sl_rt *rt = w->rt;
    int tries = w->tries;
    sl_ctr *c = sl_model_ctr(&rt->model, w->ctr_id);
    watch_close(w);
    if (c)
        ctr_gone(rt, c, tries);
}

/* Looks for the reaper's record of c again soon. Returns 0 or -1. */
static int retry_add(sl_rt *rt, const sl_ctr *c, int tries)
{
    struct sl_pidwatch *w = calloc(1, sizeof(*w));
    if (!w || uv_timer_init(rt->loop, &w->timer) < 0) {
        free(w);
        return -1;
    }
    w->fd = -1;
    w->tries = tries;
    w->rt = rt;
    w->timer.data = w;
    snprintf(w->pod_id, sizeof(w->pod_id), "%s", c->pod_id);
    snprintf(w->ctr_id, sizeof(w->ctr_id), "%s", c->id);
    w->next = rt->watches;
    if (w->next)
        w->next->prev = w;
    rt->watches = w;
    uv_timer_start(&w->timer, retry_cb, SL_MON_EXIT_RECORD_STEP_MS, 0);
    return 0;
}

/* Returns 0, or -1 with errno (ESRCH: the process is gone). */
static int watch_add(sl_rt *rt, const char *pod_id, const char *ctr_id, pid_t pid)
{
    struct sl_pidwatch *w = calloc(1, sizeof(*w));
    if (!w)
        return -1;
    w->fd = pidfd_open_pid(pid);
    if (w->fd < 0 || uv_poll_init(rt->loop, &w->poll, w->fd) < 0) {
        int err = errno;
        if (w->fd >= 0)
            close(w->fd);
        free(w);
        errno = err;
        return -1;
    }
    w->rt = rt;
    w->poll.data = w;
    snprintf(w->pod_id, sizeof(w->pod_id), "%s", pod_id);
    snprintf(w->ctr_id, sizeof(w->ctr_id), "%s", ctr_id);
    w->next = rt->watches;
    if (w->next)
        w->next->prev = w;
    rt->watches = w;
    uv_poll_start(&w->poll, UV_READABLE, watch_cb);
    return 0;
}

void sl_mon_watch_close_all(sl_rt *rt)
{
    while (rt->watches)
        watch_close(rt->watches);
}

void sl_mon_unwatch(sl_rt *rt, const char *pod_id)
{
    for (struct sl_pidwatch *w = rt->watches, *next; w; w = next) {
        next = w->next;
        if (!strcmp(w->pod_id, pod_id))
            watch_close(w);
    }
}

/* ---- what a death means ---- */

static void set_exited(sl_rt *rt, sl_ctr *c, int code, const char *reason, const char *message)
{
    sl_error e;
    if (sl_model_ctr_set_exited(&rt->model, c, code, reason, message, &e) < 0)
        sl_log(SL_LOG_ERROR, "container state not saved", "container", c->id, "error", e.msg, NULL);
    sl_events_ctr(rt, RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_STOPPED_EVENT, c->id, c->pod_id);
}

/* The reaper records a status once it reaped the process, a moment after
 * its pidfd said it ended: the record is awaited a little. */
static void ctr_gone(sl_rt *rt, sl_ctr *c, int tries)
{
    pid_t pid;
    unsigned long long start;
    int code;
    if (runc_init(rt, c, &pid, &start)) {
        if (reaped_code(rt, c->pod_id, pid, start, &code)) {
            set_exited(rt, c, code, "", "the pod monitor died; the pod's reaper kept the status");
            return;
        }
        if (tries < SL_MON_EXIT_RECORD_WAIT_MS / SL_MON_EXIT_RECORD_STEP_MS &&
            retry_add(rt, c, tries + 1) == 0)
            return;
    }
    set_exited(rt, c, SL_MON_DEATH_EXIT_CODE, "Error",
               "the pod monitor died; the container's exit status is unknown");
}

void sl_mon_unwatch_ctr(sl_rt *rt, const sl_ctr *c)
{
    struct sl_pidwatch *w = watch_find(rt, c->pod_id, c->id);
    if (w)
        watch_close(w);
}

/* A running container stays so while its process is verified alive. */
void sl_mon_reconcile_ctr(sl_rt *rt, sl_ctr *c)
{
    sl_ctr_status st;
    sl_model_ctr_status(&rt->model, c, &st);
    if (st.state != RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING ||
        watch_find(rt, c->pod_id, c->id))
        return;
    pid_t pid;
    if (!ctr_alive(rt, c, &pid) || watch_add(rt, c->pod_id, c->id, pid) < 0)
        ctr_gone(rt, c, 0);
}

static void mon_died(sl_rt *rt, sl_pod *p)
{
    /* a pod that was ready gets a monitor that adopts what still runs */
    bool adopt = p->ready && !p->adopting && sl_mon_adopt_allowed(rt, p);
    if (!p->mon_dead) {
        char pid[24];
        snprintf(pid, sizeof(pid), "%lld", (long long)sl_rec_int(p->rec, "mon_pid"));
        sl_log(SL_LOG_ERROR, "pod monitor died", "pod", p->id, "pid", pid, NULL);
    }
    p->mon_dead = true;
    if (p->mon) {
        sl_monc *m = p->mon;
        p->mon = NULL;
        sl_monc_close(m);
        sl_rt_stream_event(rt, p, NULL);
    }
    if (p->ready || !sl_rec_bool(p->rec, "mon_dead")) {
        bool was_ready = p->ready;
        /* recorded ready while a new monitor is on its way: a sluiced
         * restarted meanwhile starts the adoption again */
        p->ready = adopt;
        json_object_set_new(p->rec, "mon_dead", json_true());
        sl_error e;
        if (sl_model_save_pod(&rt->model, p, &e) < 0)
            sl_log(SL_LOG_ERROR, "pod state not saved", "pod", p->id, "error", e.msg, NULL);
        p->ready = false;
        if (was_ready)
            sl_events_pod(rt, RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_STOPPED_EVENT, p);
    }
    for (sl_ctr *c = rt->model.ctrs; c; c = c->next)
        if (!strcmp(c->pod_id, p->id))
            sl_mon_reconcile_ctr(rt, c);
    if (adopt)
        sl_mon_adopt_start(rt, p);
    else if (!p->adopting)
        sl_mon_adopt_give_up(rt, p);
}

void sl_mon_watch_pod(sl_rt *rt, sl_pod *p)
{
    pid_t pid = (pid_t)sl_rec_int(p->rec, "mon_pid");
    if (pid <= 0 || watch_find(rt, p->id, ""))
        return;
    if (!proc_is_monitor(pid)) { /* the pid names no monitor: it is gone */
        mon_died(rt, p);
        return;
    }
    if (watch_add(rt, p->id, "", pid) < 0 && errno == ESRCH)
        mon_died(rt, p);
}

void sl_mon_check_gone(sl_rt *rt, sl_pod *p)
{
    pid_t pid = (pid_t)sl_rec_int(p->rec, "mon_pid");
    if (sl_rec_bool(p->rec, "mon_dead") || (pid > 0 && !proc_is_monitor(pid)))
        mon_died(rt, p);
}

/* ---- killing what a dead monitor left ---- */

typedef struct orphan_kill {
    uv_process_t proc;
    sl_rt *rt;
    char ctr_id[SL_ID_HEX + 1];
    bool was_running;
    sl_mon_kill_fn done;
    void *arg;
} orphan_kill;

static void kill_freed(uv_handle_t *h)
{
    free(h->data);
}

static void kill_exited(uv_process_t *proc, int64_t status, int sig)
{
    orphan_kill *k = proc->data;
    sl_ctr *c = sl_model_ctr(&k->rt->model, k->ctr_id);
    if (k->was_running && (status != 0 || sig != 0)) {
        char how[64];
        snprintf(how, sizeof(how), "exit %lld, signal %d", (long long)status, sig);
        sl_log(SL_LOG_WARN, "delete --force of an orphaned container failed", "container",
               k->ctr_id, "runtime", k->rt->cfg->runtime_path, "status", how, NULL);
    }
    if (c && k->was_running)
        set_exited(k->rt, c, SL_MON_DEATH_KILLED_CODE, "Error",
                   "killed after the pod monitor died");
    k->done(k->arg);
    uv_close((uv_handle_t *)proc, kill_freed);
}

int sl_mon_kill_orphan(sl_rt *rt, sl_pod *p, sl_ctr *c, sl_mon_kill_fn done, void *arg)
{
    SL_AUTOFREE char *root = runc_root(rt, p->id);
    orphan_kill *k = root ? calloc(1, sizeof(*k)) : NULL;
    if (!k)
        return -1;
    struct sl_pidwatch *w = watch_find(rt, p->id, c->id);
    if (w)
        watch_close(w); /* the kill says how it ended */
    sl_ctr_status st;
    sl_model_ctr_status(&rt->model, c, &st);
    k->was_running = st.state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
    k->rt = rt;
    k->done = done;
    k->arg = arg;
    snprintf(k->ctr_id, sizeof(k->ctr_id), "%s", c->id);
    char *args[] = {
        (char *)rt->cfg->runtime_path, "--root", root, "delete", "--force", c->id, NULL};
    uv_process_options_t o = {.file = args[0], .args = args, .exit_cb = kill_exited};
    k->proc.data = k;
    if (uv_spawn(rt->loop, &k->proc, &o) < 0) {
        uv_close((uv_handle_t *)&k->proc, kill_freed);
        return -1;
    }
    return 0;
}
