#include "cri/rt.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cri/image_jobs.h"
#include "cri/mon_adopt.h"
#include "cri/pod_sweep.h"
#include "cri/mon_death.h"
#include "fsutil.h"
#include "sl_log.h"

/* The monitor sits next to sluiced when installed, or in its own folder
 * of the build tree. */
static char *find_monitor(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *dir = dirname(exe);
        const char *tries[] = {"sluice-mon", "../sluice-mon/sluice-mon"};
        for (size_t i = 0; i < 2; i++) {
            char *p = sl_path_join(dir, tries[i]);
            if (p && access(p, X_OK) == 0)
                return p;
            free(p);
        }
    }
    return strdup("sluice-mon");
}

char *sl_rt_pod_run_dir(const sl_rt *rt, const char *pod_id)
{
    return sl_path_join(rt->pods_run_dir, pod_id);
}

/* A container's end and a lost monitor, at info and warn. */
static void log_mon_event(const sl_pod *p, const json_t *event)
{
    const char *type = event ? json_string_value(json_object_get(event, "type")) : NULL;
    if (!event && !((const sl_rt *)p->owner)->detached) {
        /* A ready pod's monitor must not go; a stopped one's may be ending. */
        sl_log(p->ready ? SL_LOG_WARN : SL_LOG_INFO, "pod monitor connection lost", "pod", p->id,
               NULL);
    } else if (type && !strcmp(type, "exited")) {
        char code[24];
        snprintf(code, sizeof(code), "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(event, "exit_code")));
        const char *reason = json_string_value(json_object_get(event, "reason"));
        sl_log(SL_LOG_INFO, "container exited", "pod", p->id, "container",
               json_string_value(json_object_get(event, "container_id")), "exit_code", code,
               "reason", reason && *reason ? reason : NULL, NULL);
    }
}

/* The monitor could not write a container's CRI log (a full disk), or can
 * again: said in sluiced's log too, with the totals dropped so far. */
static void log_dropped(const json_t *ev)
{
    const char *err = json_string_value(json_object_get(ev, "error"));
    char bytes[24], records[24];
    snprintf(bytes, sizeof(bytes), "%" JSON_INTEGER_FORMAT,
             json_integer_value(json_object_get(ev, "dropped_bytes")));
    snprintf(records, sizeof(records), "%" JSON_INTEGER_FORMAT,
             json_integer_value(json_object_get(ev, "dropped_records")));
    sl_log(err ? SL_LOG_WARN : SL_LOG_INFO,
           err ? "CRI log cannot be written: dropping whole records"
               : "CRI log can be written again",
           "container", sl_mon_str(ev, "container_id"), "path", sl_mon_str(ev, "path"), "error",
           err, "dropped_bytes", bytes, "dropped_records", records, NULL);
}

/* Adds what the event's totals grew by since the container's last report
 * to sluiced's counters. */
static void count_dropped(sl_rt *rt, const json_t *ev)
{
    sl_ctr *c = sl_model_ctr(&rt->model, sl_mon_str(ev, "container_id"));
    if (!c)
        return;
    json_int_t now[2] = {json_integer_value(json_object_get(ev, "dropped_bytes")),
                         json_integer_value(json_object_get(ev, "dropped_records"))};
    uint64_t *total[2] = {&rt->log_dropped_bytes, &rt->log_dropped_records};
    for (int i = 0; i < 2; i++) {
        if (now[i] > c->log_dropped_seen[i]) {
            *total[i] += (uint64_t)(now[i] - c->log_dropped_seen[i]);
            c->log_dropped_seen[i] = now[i];
        }
    }
}

/* A session a monitor served, at debug with its numbers (as the monitor
 * logs it in its own log). */
static void log_session(const sl_pod *p, const json_t *ev)
{
    const char *type = sl_mon_str(ev, "type");
    bool end = !strcmp(type, "session_ended");
    char out[24] = "", in[24] = "", ms[24] = "";
    if (end) {
        snprintf(out, sizeof(out), "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(ev, "bytes_to_client")));
        snprintf(in, sizeof(in), "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(ev, "bytes_from_client")));
        snprintf(ms, sizeof(ms), "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(ev, "duration_ms")));
    }
    sl_log(SL_LOG_DEBUG, end ? "session ended" : "session started", "pod", p->id, "operation",
           sl_mon_str(ev, "operation"), "transport", sl_mon_str(ev, "transport"), "protocol",
           sl_mon_str(ev, "protocol"), "container_id", sl_mon_str(ev, "container_id"),
           "pod_sandbox_id", sl_mon_str(ev, "pod_sandbox_id"), "reason", sl_mon_str(ev, "reason"),
           "bytes_to_client", end ? out : NULL, "bytes_from_client", end ? in : NULL, "duration_ms",
           end ? ms : NULL, NULL);
}

void sl_rt_mon_event(void *arg, const json_t *event)
{
    sl_pod *p = arg;
    sl_rt *rt = p->owner;
    if (event && !strcmp(sl_mon_str(event, "type"), "log_dropped")) {
        count_dropped(rt, event);
        if (!json_is_true(json_object_get(event, "update")))
            log_dropped(event); /* the changes, not each update */
        return;
    }
    log_mon_event(p, event);
    if (!event) { /* the connection is gone; reconnect on next use */
        sl_monc *m = p->mon;
        p->mon = NULL;
        sl_monc_close(m);
        sl_rt_stream_event(rt, p, NULL);
        return;
    }
    if (!strncmp(sl_mon_str(event, "type"), "session_", 8)) {
        log_session(p, event);
        sl_sess_stats_event(&rt->sess_stats, event);
        return;
    }
    if (!strcmp(sl_mon_str(event, "type"), "exited")) { /* nothing left to adopt */
        sl_ctr *c = sl_model_ctr(&rt->model, sl_mon_str(event, "container_id"));
        if (c)
            sl_mon_stdio_release(c);
    }
    sl_events_mon(rt, p, event);
    sl_rt_stream_event(rt, p, event);
}

sl_monc *sl_rt_pod_mon(sl_rt *rt, sl_pod *p, sl_error *e)
{
    if (p->mon && sl_monc_alive(p->mon))
        return p->mon;
    if (p->mon) {
        sl_monc_close(p->mon);
        p->mon = NULL;
    }
    if (rt->detached) {
        sl_error_set(e, ESHUTDOWN, "sluiced is shutting down");
        return NULL;
    }
    if (!p->mon_dead) {
        SL_AUTOFREE char *dir = sl_rt_pod_run_dir(rt, p->id);
        p->owner = rt;
        p->mon = dir ? sl_monc_connect(rt->loop, dir, sl_rt_mon_event, p, e) : NULL;
        if (!p->mon) {
            sl_error_wrap(e, "pod %s has no running monitor", p->id);
            return NULL;
        }
        sl_mon_watch_pod(rt, p); /* may find it dead */
        if (!p->mon_dead)
            sl_mon_stdio_fetch_pod(rt, p);
    }
    if (p->mon_dead)
        sl_error_set(e, ESRCH, "the monitor of pod %s (pid %lld) died", p->id,
                     (long long)sl_rec_int(p->rec, "mon_pid"));
    return p->mon;
}

int sl_rt_open(sl_rt *rt, uv_loop_t *loop, const sl_config *cfg, sl_error *e)
{
    memset(rt, 0, sizeof(*rt));
    rt->loop = loop;
    rt->cfg = cfg;
    rt->mon_path = find_monitor();
    rt->pods_run_dir = sl_path_join(cfg->run_dir, "pods");
    sl_events_init(&rt->events, cfg->max_event_subscribers);
    if (!rt->mon_path || !rt->pods_run_dir)
        return sl_error_set(e, ENOMEM, "runtime");
    if (sl_mkdir_p(rt->pods_run_dir, 0711, e) < 0 || sl_mkdir_p(cfg->state_dir, 0711, e) < 0)
        return -1;
    rt->images = sl_image_store_open_flags(cfg->image_dir, NULL, SL_IMAGE_DEFER_DELETES, e);
    if (!rt->images)
        return sl_error_wrap(e, "image store");
    rt->imgq = sl_imgq_new(loop, rt->images);
    if (!rt->imgq)
        return sl_error_set(e, ENOMEM, "image store");
    sl_imgq_collect(rt->imgq); /* what recovery left to delete */
    sl_error le;
    if (sl_model_load(&rt->model, cfg->state_dir, &le) < 0)
        sl_log(SL_LOG_ERROR, "some state could not be read", "error", le.msg, NULL);
    /* Monitors outlive sluiced: find them again. */
    for (sl_pod *p = rt->model.pods; p; p = p->next) {
        p->owner = rt;
        sl_error me;
        if (!sl_rt_pod_mon(rt, p, &me)) {
            if (p->ready)
                sl_log(SL_LOG_ERROR, "pod monitor not reachable", "pod", p->id, "error", me.msg,
                       NULL);
            sl_mon_check_gone(rt, p);
        }
    }
    sl_pod_sweep_cut_starts(rt);
    sl_rt_stream_init(rt);
    sl_mount_probe_start(&rt->mount_probe, loop, cfg->runtime_path, cfg->state_dir, cfg->run_dir);
    return 0;
}

void sl_rt_start_imports(sl_rt *rt, void (*fatal)(void *arg, const sl_error *e), void *arg)
{
    const sl_config *cfg = rt->cfg;
    sl_error e;
    sl_imgq_set_fatal(rt->imgq, fatal, arg);
    if (cfg->import_dir && (sl_mkdir_p(cfg->import_dir, 0755, &e) < 0 ||
                            sl_imgq_scan(rt->imgq, cfg->import_dir, NULL, &e) < 0))
        sl_log(SL_LOG_WARN, "import directory not read", "error", e.msg, NULL);
    if (cfg->import_file)
        sl_imgq_import(rt->imgq, cfg->import_file, true);
}

void sl_rt_detach(sl_rt *rt)
{
    /* Subscribers get their UNAVAILABLE trailers now, ahead of the GOAWAY
     * that ends their connections. */
    sl_events_fini(&rt->events);
    rt->detached = true;
    sl_mon_watch_close_all(rt);
    if (rt->imgq)
        sl_imgq_stop(rt->imgq); /* the running import is cancelled */
    for (sl_pod *p = rt->model.pods; p; p = p->next) {
        sl_monc *m = p->mon;
        p->mon = NULL;
        sl_monc_close(m); /* pending streaming sessions end here */
    }
}

void sl_rt_close(sl_rt *rt)
{
    sl_events_fini(&rt->events);
    sl_model_fini(&rt->model);
    sl_imgq_free(rt->imgq);
    if (rt->images)
        sl_image_store_close(rt->images);
    free(rt->mon_path);
    free(rt->pods_run_dir);
}
