/* Scale workloads: many concurrent `sleep` exec sessions (completion time,
 * server memory and fds per session), and attach fan-out (10 clients on a
 * container writing at full speed, then at a pace a client can follow; all
 * reading, then one of them stalled). */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define SAMPLE_MS 200       /* memory sampling period */
#define CONC_GRACE_S 60.0   /* beyond the sleep, for all sessions to end */
#define ATTACH_WARMUP_S 0.5 /* after every client is upgraded */
#define LOG_TICK_MS 100     /* log truncation period */
#define UPGRADE_TIMEOUT_S 30.0

/* ---- 6. concurrent sleep sessions ---- */

typedef struct conc {
    bn_rt *rt;
    bn_exec *x;
    int n, started, ended, ok, live, max_live;
    double t_last;
    bn_mem peak;
    char first_err[256];
} conc;

static void conc_done(bn_exec *x, void *arg)
{
    conc *s = arg;
    s->ended++;
    if (!x->failed && x->exit_code == 0) {
        s->ok++;
        s->t_last = x->t_end;
    } else if (!s->first_err[0]) {
        snprintf(s->first_err, sizeof(s->first_err), "exit %d: %.200s", x->exit_code, x->err);
    }
}

/* Keeps the server's memory at the moment most sessions were live. */
static void conc_sample(uv_timer_t *t)
{
    conc *s = t->data;
    int live = 0;
    for (int i = 0; i < s->started; i++)
        live += s->x[i].t_upgraded > 0 && !s->x[i].done;
    if (live >= s->max_live && live > 0) {
        s->max_live = live;
        bn_mem_snap(s->rt, &s->peak);
    }
}

static void conc_start_all(conc *s, const char *secs, int devnull)
{
    const char *cmd[] = {"sleep", secs};
    for (int i = 0; i < s->n; i++) {
        char *url = NULL;
        s->x[i].on_done = conc_done;
        s->x[i].arg = s;
        if (bn_exec_url(s->rt, cmd, 2, false, true, true, &url) < 0) {
            s->ended++;
            continue;
        }
        bn_exec_start(&s->x[i], url, SL_TRANSPORT_SPDY, -1, devnull, devnull);
        s->started = i + 1;
        free(url);
        uv_run(bn_loop(), UV_RUN_NOWAIT);
    }
}

static void conc_side(bn_ctx *c, bn_rt *rt, int n)
{
    char secs[16], wl[32];
    snprintf(secs, sizeof(secs), "%d", c->o.conc_sleep_s);
    snprintf(wl, sizeof(wl), "conc%d", n);
    bn_pod_saved saved;
    if (bn_pod_enter(rt, "conc", &saved) < 0) {
        bn_info(wl, rt->name, "no pod of its own could be started");
        return;
    }
    conc s = {.rt = rt, .n = n, .x = calloc((size_t)n, sizeof(bn_exec))};
    bn_mem base;
    bn_mem_snap(rt, &base);
    uv_timer_t t;
    uv_timer_init(bn_loop(), &t);
    t.data = &s;
    uv_timer_start(&t, conc_sample, SAMPLE_MS, SAMPLE_MS);
    double t0 = bn_now();
    conc_start_all(&s, secs, c->devnull);
    double end = bn_now() + c->o.conc_sleep_s + CONC_GRACE_S;
    while (s.ended < n && bn_now() < end)
        bn_run_for(0.05);
    uv_close((uv_handle_t *)&t, NULL);
    for (int i = 0; i < s.started; i++)
        bn_exec_free(&s.x[i]);
    bn_run_for(0.2);
    free(s.x);
    bn_add(wl, "ok", rt->name, s.ok);
    bn_add(wl, "failed", rt->name, n - s.ok);
    if (s.first_err[0] || s.ended < n)
        bn_info(wl, rt->name, "%d of %d failed; first: %s", n - s.ok, n,
                s.first_err[0] ? s.first_err : "no end in time");
    if (s.ok == n)
        bn_add(wl, "complete_s", rt->name, s.t_last - t0);
    if (s.max_live > 0) {
        bn_add(wl, "live_peak", rt->name, s.max_live);
        bn_add(wl, "rss_kib_per_session", rt->name, (s.peak.rss_kib - base.rss_kib) / s.max_live);
        bn_add(wl, "daemon_rss_kib_per_session", rt->name,
               (s.peak.daemon_rss_kib - base.daemon_rss_kib) / s.max_live);
        bn_add(wl, "fds_per_session", rt->name, (double)(s.peak.fds - base.fds) / s.max_live);
        bn_add(wl, "runc_rss_kib_per_session", rt->name,
               (s.peak.child_rss_kib - base.child_rss_kib) / s.max_live);
    }
    bn_pod_leave(rt, &saved);
}

void bn_wl_conc(bn_ctx *c, int run, int n)
{
    for (int i = 0; i < c->nrt; i++)
        conc_side(c, bn_nth(c, run, i), n);
}

/* ---- 7. attach fan-out ---- */

#define ATTACH_STALL_PIPE 4096 /* the stalled client's pipe: one page, full at once */
#define PACE_LINE 1000         /* bytes per line of the paced writer, newline included */
#define PACE_TICK_MS 50        /* one chunk of the paced writer covers this much time */
#define PACE_DEBT 2            /* chunks it writes back to back to catch up, at most */
#define PACE_SCRIPT_MAX 1024

typedef struct logmeter {
    char path[512];
    double acc; /* bytes since the last mark */
    uv_timer_t t;
} logmeter;

/* Counts the log's growth and truncates it, so a full-speed writer does
 * not fill the disk (both runtimes open it O_APPEND). */
static void log_take(logmeter *l)
{
    struct stat st;
    if (stat(l->path, &st) == 0 && st.st_size > 0) {
        l->acc += (double)st.st_size;
        truncate(l->path, 0);
    }
}

static void log_tick(uv_timer_t *t)
{
    log_take(t->data);
}

typedef struct fan {
    bn_exec x[BN_MAX_ATTACH];
    bn_reader r[BN_MAX_ATTACH];
    int wfd[BN_MAX_ATTACH];
    int n;
    bool stalled; /* client 0 is never read */
    uint64_t mark[BN_MAX_ATTACH];
    int stall_fill[2]; /* bytes in the stalled client's pipe at window start, end */
} fan;

/* One phase of the fan-out: the median reading client, the log, drops. */
typedef struct phase {
    double client, log; /* MiB/s */
    int dropped;        /* reading clients the server ended */
    char why[256];      /* the first one's reason */
    char stalled[256];  /* what became of the stalled client */
} phase;

static int pipe_fill(int fd)
{
    int n = 0;
    return ioctl(fd, FIONREAD, &n) == 0 ? n : -1;
}

static int fan_open(bn_rt *rt, const char *ctr, fan *f, int n, bool stall)
{
    memset(f, 0, sizeof(*f));
    f->stalled = stall;
    for (; f->n < n; f->n++) {
        int i = f->n, p[2];
        char *url = NULL;
        if (bn_attach_url(rt, ctr, &url) < 0 || bn_pipe(p) < 0)
            return -1;
        f->wfd[i] = p[1];
        f->r[i].fd = -1;
        if (stall && i == 0) {
            /* Never read: once this page is full the client stops reading
             * its socket (output high water), so the stall is real. */
            fcntl(p[1], F_SETPIPE_SZ, ATTACH_STALL_PIPE);
            f->r[i].fd = p[0]; /* closed at the end */
        } else if (bn_reader_start(&f->r[i], p[0], 0) < 0) {
            return -1;
        }
        bn_exec_start(&f->x[i], url, SL_TRANSPORT_SPDY, -1, p[1], p[1]);
        free(url);
    }
    double end = bn_now() + UPGRADE_TIMEOUT_S;
    for (int i = 0; i < n; i++)
        while (!f->x[i].t_upgraded && !f->x[i].done && bn_now() < end)
            bn_run_for(0.01);
    for (int i = 0; i < n; i++)
        if (!f->x[i].t_upgraded) {
            bn_error("%s: attach client %d: %s", rt->name, i, f->x[i].err);
            return -1;
        }
    return 0;
}

static void fan_close(fan *f)
{
    for (int i = 0; i < f->n; i++) {
        bn_exec_free(&f->x[i]);
        close(f->wfd[i]);
    }
    bn_run_for(0.1);
    for (int i = 0; i < f->n; i++) {
        if (f->stalled && i == 0)
            close(f->r[i].fd);
        else
            bn_reader_join(&f->r[i]);
    }
}

/* Client rates over one window: the median of the reading clients. */
static double fan_window(fan *f, logmeter *lm, double w, double *log_rate)
{
    for (int i = 0; i < f->n; i++)
        f->mark[i] = f->r[i].bytes;
    if (f->stalled)
        f->stall_fill[0] = pipe_fill(f->r[0].fd);
    log_take(lm);
    lm->acc = 0;
    bn_run_for(w);
    log_take(lm);
    if (f->stalled)
        f->stall_fill[1] = pipe_fill(f->r[0].fd);
    *log_rate = lm->acc / BN_MIB / w;
    double rates[BN_MAX_ATTACH];
    int k = 0;
    for (int i = f->stalled ? 1 : 0; i < f->n; i++)
        rates[k++] = (double)(f->r[i].bytes - f->mark[i]) / BN_MIB / w;
    return bn_median(rates, k);
}

/* Reading clients the server dropped, and the first reason. */
static int fan_dropped(const fan *f, char *why, size_t len)
{
    int n = 0;
    why[0] = '\0';
    for (int i = f->stalled ? 1 : 0; i < f->n; i++) {
        if (!f->x[i].done)
            continue;
        if (!n++)
            snprintf(why, len, "%.200s", f->x[i].err);
    }
    return n;
}

/* Opens the clients (client 0 stalled if stall), warms up, measures one
 * window, closes them. */
static int fan_phase(bn_ctx *c, bn_rt *rt, const char *ctr, logmeter *lm, bool stall, phase *p)
{
    fan *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    int rc = fan_open(rt, ctr, f, c->o.attach_clients, stall);
    if (rc == 0) {
        bn_run_for(ATTACH_WARMUP_S);
        p->client = fan_window(f, lm, c->o.attach_window_s, &p->log);
        p->dropped = fan_dropped(f, p->why, sizeof(p->why));
        if (stall)
            snprintf(p->stalled, sizeof(p->stalled),
                     "%.150s; its pipe held %d bytes unread at the window's start, %d at its end",
                     f->x[0].done ? f->x[0].err : "saw no end (it reads nothing from its socket)",
                     f->stall_fill[0], f->stall_fill[1]);
    }
    fan_close(f);
    free(f);
    return rc;
}

static void phase_record(const char *wl, const bn_rt *rt, int n, const phase *all, const phase *st)
{
    bn_add(wl, "client_mibps_all", rt->name, all->client);
    bn_add(wl, "client_mibps_stalled", rt->name, st->client);
    bn_add(wl, "log_mibps_all", rt->name, all->log);
    bn_add(wl, "log_mibps_stalled", rt->name, st->log);
    bn_add(wl, "dropped_all", rt->name, all->dropped);
    bn_add(wl, "dropped_stalled", rt->name, st->dropped);
    /* A client dropped with all reading leaves no baseline (at full speed
     * on sluice: every one, by design): "keep" is then not applicable,
     * where a ratio would read as a 0 % (or 5000 %) caused by the stall. */
    if (all->dropped > 0)
        bn_add(wl, "clients_kept_na", rt->name, 1);
    else if (all->client > 0)
        bn_add(wl, "clients_kept_pct", rt->name, 100.0 * st->client / all->client);
    if (all->log > 0)
        bn_add(wl, "log_kept_pct", rt->name, 100.0 * st->log / all->log);
    char key[64];
    snprintf(key, sizeof(key), "%s all reading", rt->name);
    bn_info(wl, key, "%d of %d clients dropped%s%s", all->dropped, n, all->dropped ? ": " : "",
            all->why);
    snprintf(key, sizeof(key), "%s one stalled", rt->name);
    bn_info(wl, key, "%d of %d reading clients dropped%s%s; the stalled one: %s", st->dropped,
            n - 1, st->dropped ? ": " : "", st->why, st->stalled);
}

static void attach_phases(bn_ctx *c, bn_rt *rt, const char *wl, const char *ctr, logmeter *lm)
{
    double none;
    phase all = {0}, st = {0};
    bn_run_for(ATTACH_WARMUP_S);
    log_take(lm);
    lm->acc = 0;
    bn_run_for(c->o.attach_window_s);
    log_take(lm);
    none = lm->acc / BN_MIB / c->o.attach_window_s;
    bn_add(wl, "log_mibps_alone", rt->name, none);
    if (fan_phase(c, rt, ctr, lm, false, &all) == 0 && fan_phase(c, rt, ctr, lm, true, &st) == 0)
        phase_record(wl, rt, c->o.attach_clients, &all, &st);
}

/* One container running argv, the fan-out phases against it, removal. */
static void attach_side(bn_ctx *c, bn_rt *rt, const char *wl, const char *name,
                        const char *const *argv)
{
    char *id = NULL;
    if (bn_ctr_start(rt, name, argv, 3, &id) < 0)
        return;
    logmeter *lm = calloc(1, sizeof(*lm));
    if (!lm) {
        bn_ctr_remove(rt, id);
        free(id);
        return;
    }
    bn_ctr_log_path(rt, name, lm->path, sizeof(lm->path));
    uv_timer_init(bn_loop(), &lm->t);
    lm->t.data = lm;
    uv_timer_start(&lm->t, log_tick, LOG_TICK_MS, LOG_TICK_MS);
    attach_phases(c, rt, wl, id, lm);
    bn_ctr_remove(rt, id);
    uv_close((uv_handle_t *)&lm->t, NULL);
    uv_run(bn_loop(), UV_RUN_NOWAIT);
    unlink(lm->path);
    free(lm);
    free(id);
}

void bn_wl_attach(bn_ctx *c, int run)
{
    const char *argv[] = {"sh", "-c", "exec yes \"$(printf %01000d 0)\""};
    char name[32];
    snprintf(name, sizeof(name), "att-%d", run);
    for (int i = 0; i < c->nrt; i++)
        attach_side(c, bn_nth(c, run, i), "attach", name, argv);
}

/* A busybox sh loop that writes rate MiB/s of PACE_LINE-byte lines: one
 * `cat` of a chunk covering PACE_TICK_MS per step, paced by /proc/uptime
 * (centiseconds) against the start; in between it waits 5 ms on a fifo
 * (`read -t`, no fork). A writer held up (a throttling runtime) catches
 * up by at most PACE_DEBT chunks. */
static void pace_script(double rate_mibps, char *out, size_t len)
{
    double rate = rate_mibps * BN_MIB;
    long lines = (long)(rate * PACE_TICK_MS / 1000.0 / PACE_LINE + 0.5);
    long chunk = (lines < 1 ? 1 : lines) * PACE_LINE;
    snprintf(out, len,
             "mkfifo /tmp/w; yes \"$(printf %%0%dd 0)\" | head -c %ld >/tmp/c || exit 1; "
             "read u _ </proc/uptime; t0=${u%%.*}${u#*.}; n=0; "
             "while :; do read u _ </proc/uptime; t=${u%%.*}${u#*.}; "
             "a=$(( (t - t0) * %.0f / (100 * %ld) )); "
             "[ $n -lt $((a - %d)) ] && n=$((a - %d)); "
             "if [ $n -lt $a ]; then cat /tmp/c; n=$((n + 1)); "
             "else read -t 0.005 x <>/tmp/w; fi; done",
             PACE_LINE - 1, chunk, rate, chunk, PACE_DEBT, PACE_DEBT);
}

void bn_wl_attach_paced(bn_ctx *c, int run)
{
    char script[PACE_SCRIPT_MAX], name[32];
    pace_script(c->o.attach_rate_mibps, script, sizeof(script));
    const char *argv[] = {"sh", "-c", script};
    snprintf(name, sizeof(name), "attp-%d", run);
    for (int i = 0; i < c->nrt; i++)
        attach_side(c, bn_nth(c, run, i), "attach_paced", name, argv);
}
