/* Port-forward workloads: a download from the pod's dd source and an
 * upload into its `head -c N; echo ok` sink, over SPDY and (sluiced) SPDY
 * tunnelled in WebSocket; and head-of-line blocking: 8 uploads on one SPDY
 * session, one of them to a peer that never reads. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PF_CHUNK 65536
#define PF_TIMEOUT_S 300.0     /* one transfer at most */
#define UPGRADE_TIMEOUT_S 30.0 /* the session's upgrade */
#define POLL_S 0.01            /* loop slice while threads do the I/O */

static void add(const char *metric, const char *dir, const char *tr, const char *side, double v)
{
    char name[64];
    snprintf(name, sizeof(name), "%s_%s_%s", metric, dir, tr);
    bn_add("pf", name, side, v);
}

static void add_rate(const char *dir, const char *tr, const char *side, uint64_t bytes, double secs,
                     double cpu, double ccpu)
{
    double gib = (double)bytes / BN_GIB;
    add("mibps", dir, tr, side, (double)bytes / BN_MIB / secs);
    if (cpu >= 0)
        add("cpu", dir, tr, side, cpu / gib);
    add("ccpu", dir, tr, side, ccpu / gib);
}

/* A session that reached its upgrade, or -1 (error recorded). */
static int open_session(bn_rt *rt, sl_transport tr, bn_pf *p)
{
    char *url = NULL;
    if (bn_pf_url(rt, &url) < 0)
        return -1;
    int rc = bn_pf_start(p, url, tr);
    free(url);
    if (rc < 0 || !bn_pf_wait_upgrade(p, UPGRADE_TIMEOUT_S)) {
        bn_error("%s: port-forward over %s: %s", rt->name, bn_transport_name(tr),
                 p->err[0] ? p->err : "no upgrade");
        bn_pf_end(p);
        return -1;
    }
    bn_proto_info("pf", rt, tr, p->proto);
    return 0;
}

/* Runs the loop until the thread's done flag is set; false on timeout. */
static bool wait_flag(const volatile bool *flag, double timeout_s)
{
    double end = bn_now() + timeout_s;
    while (!*flag && bn_now() < end)
        bn_run_for(POLL_S);
    return *flag;
}

static void pf_down(bn_ctx *c, bn_rt *rt, sl_transport tr)
{
    bn_pf p;
    bn_cpu a, b;
    bn_cpu_snap(rt, &a);
    double cc = bn_client_cpu();
    int mine;
    bn_reader r = {.fd = -1};
    if (open_session(rt, tr, &p) < 0)
        return;
    if (bn_pf_conn(&p, rt->port_down, &mine) < 0 || bn_reader_start(&r, mine, c->o.pf_bytes) < 0) {
        bn_error("%s: pf download: %s", rt->name, p.err);
        bn_pf_end(&p);
        return;
    }
    bool ok = wait_flag(&r.finished, PF_TIMEOUT_S);
    if (!ok)
        shutdown(mine, SHUT_RDWR);
    bn_reader_join(&r);
    bn_pf_end(&p);
    bn_cpu_snap(rt, &b);
    cc = bn_client_cpu() - cc;
    if (r.bytes != c->o.pf_bytes) {
        bn_error("%s: pf download over %s: %llu of %llu bytes%s%s", rt->name, bn_transport_name(tr),
                 (unsigned long long)r.bytes, (unsigned long long)c->o.pf_bytes,
                 p.conn_err[0] ? ": " : "", p.conn_err);
        return;
    }
    add_rate("down", bn_transport_name(tr), rt->name, r.bytes, r.t_last - r.t_first,
             bn_cpu_delta(&a, &b), cc);
}

static void pf_up(bn_ctx *c, bn_rt *rt, sl_transport tr)
{
    bn_pf p;
    bn_cpu a, b;
    bn_cpu_snap(rt, &a);
    double cc = bn_client_cpu();
    int mine;
    bn_writer w = {.fd = -1};
    if (open_session(rt, tr, &p) < 0)
        return;
    if (bn_pf_conn(&p, rt->port_up, &mine) < 0 ||
        bn_writer_start(&w, mine, c->o.pf_bytes, PF_CHUNK, false, true) < 0) {
        bn_error("%s: pf upload: %s", rt->name, p.err);
        bn_pf_end(&p);
        return;
    }
    bool ok = wait_flag(&w.finished, PF_TIMEOUT_S);
    w.stop = 1;
    bn_pf_end(&p);
    bn_writer_join(&w);
    bn_cpu_snap(rt, &b);
    cc = bn_client_cpu() - cc;
    if (!ok || w.done != c->o.pf_bytes || strncmp(w.reply, "ok", 2)) {
        bn_error("%s: pf upload over %s: wrote %llu of %llu, reply '%s'%s%s", rt->name,
                 bn_transport_name(tr), (unsigned long long)w.done,
                 (unsigned long long)c->o.pf_bytes, w.reply, p.conn_err[0] ? ": " : "", p.conn_err);
        return;
    }
    add_rate("up", bn_transport_name(tr), rt->name, w.done, w.t_reply - w.t_first,
             bn_cpu_delta(&a, &b), cc);
}

/* The limit: the pod's source and sink run on the host, on a loopback TCP
 * connection or a pipe. */
static void limit_down(bn_ctx *c, bool tcp)
{
    char count[32];
    snprintf(count, sizeof(count), "count=%llu", (unsigned long long)(c->o.pf_bytes / 65536));
    const char *argv[] = {"busybox", "dd", "if=/dev/zero", "bs=65536", count, NULL};
    int fds[2];
    bn_reader r;
    if ((tcp ? bn_tcp_pair(&fds[0], &fds[1]) : bn_pipe(fds)) < 0 ||
        bn_reader_start(&r, fds[0], 0) < 0)
        return;
    double cc = bn_client_cpu();
    pid_t pid = bn_spawn(argv, -1, fds[1], c->devnull);
    close(fds[1]);
    int st = pid > 0 ? bn_wait(pid) : -1;
    bn_reader_join(&r);
    if (st != 0 || r.bytes != c->o.pf_bytes) {
        bn_error("limit pf download (%s): exit %d, %llu bytes", tcp ? "tcp" : "pipe", st,
                 (unsigned long long)r.bytes);
        return;
    }
    cc = bn_client_cpu() - cc;
    add_rate("down", "spdy", tcp ? "tcp" : "pipe", r.bytes, r.t_last - r.t_first, -1, cc);
    add_rate("down", "tunnel", tcp ? "tcp" : "pipe", r.bytes, r.t_last - r.t_first, -1, cc);
}

static void limit_up(bn_ctx *c, bool tcp)
{
    char script[64];
    snprintf(script, sizeof(script), "head -c %llu >/dev/null; echo ok",
             (unsigned long long)c->o.pf_bytes);
    const char *argv[] = {"busybox", "sh", "-c", script, NULL};
    int in[2];
    bn_writer w;
    if ((tcp ? bn_tcp_pair(&in[1], &in[0]) : bn_pipe(in)) < 0)
        return;
    double cc = bn_client_cpu();
    pid_t pid = bn_spawn(argv, in[0], tcp ? in[0] : c->devnull, c->devnull);
    close(in[0]);
    if (bn_writer_start(&w, in[1], c->o.pf_bytes, PF_CHUNK, false, tcp) < 0)
        return;
    int st = pid > 0 ? bn_wait(pid) : -1;
    double t1 = bn_now();
    bn_writer_join(&w);
    if (st != 0 || w.done != c->o.pf_bytes) {
        bn_error("limit pf upload (%s): exit %d, wrote %llu", tcp ? "tcp" : "pipe", st,
                 (unsigned long long)w.done);
        return;
    }
    cc = bn_client_cpu() - cc;
    add_rate("up", "spdy", tcp ? "tcp" : "pipe", w.done, t1 - w.t_first, -1, cc);
    add_rate("up", "tunnel", tcp ? "tcp" : "pipe", w.done, t1 - w.t_first, -1, cc);
}

void bn_wl_pf(bn_ctx *c, int run)
{
    for (int i = 0; i < c->nrt; i++) {
        bn_rt *rt = bn_nth(c, run, i);
        pf_down(c, rt, SL_TRANSPORT_SPDY);
        pf_up(c, rt, SL_TRANSPORT_SPDY);
        if (!rt->tunnel_ok) {
            bn_info("pf", rt->name, "tunnel: n/a, %s", rt->tunnel_err);
            continue;
        }
        pf_down(c, rt, SL_TRANSPORT_WEBSOCKET_TUNNEL);
        pf_up(c, rt, SL_TRANSPORT_WEBSOCKET_TUNNEL);
    }
    limit_down(c, true);
    limit_down(c, false);
    limit_up(c, true);
    limit_up(c, false);
}

/* ---- 5. head-of-line ---- */

/* Rate of connections 0..6 (MiB/s) with connection 7 reading or stalled. */
static double hol_case(bn_ctx *c, bn_rt *rt, bool stall, bool *timed_out)
{
    bn_pf p;
    bn_writer w[BN_HOL_CONNS];
    int n = 0;
    double rate = -1;
    if (open_session(rt, SL_TRANSPORT_SPDY, &p) < 0)
        return -1;
    for (; n < BN_HOL_CONNS; n++) {
        bool last = n == BN_HOL_CONNS - 1;
        uint16_t port = last && stall ? rt->port_stall : rt->port_hol[n];
        uint64_t total = last && stall ? UINT64_MAX : c->o.hol_bytes;
        int mine;
        if (bn_pf_conn(&p, port, &mine) < 0 ||
            bn_writer_start(&w[n], mine, total, PF_CHUNK, false, !(last && stall)) < 0)
            break;
    }
    double end = bn_now() + c->o.hol_timeout_s;
    int finished = 0;
    while (n == BN_HOL_CONNS && bn_now() < end) {
        finished = 0;
        for (int i = 0; i < BN_HOL_CONNS - 1; i++)
            finished += w[i].finished;
        if (finished == BN_HOL_CONNS - 1)
            break;
        bn_run_for(POLL_S);
    }
    double t1 = bn_now();
    for (int i = 0; i < n; i++)
        w[i].stop = 1;
    bn_pf_end(&p);
    uint64_t bytes = 0;
    double t0 = t1, tl = 0;
    for (int i = 0; i < n; i++) {
        bn_writer_join(&w[i]);
        if (i == BN_HOL_CONNS - 1)
            continue;
        bytes += w[i].done;
        if (w[i].t_first && w[i].t_first < t0)
            t0 = w[i].t_first;
        if (w[i].t_reply > tl)
            tl = w[i].t_reply;
    }
    *timed_out = finished < BN_HOL_CONNS - 1;
    if (n == BN_HOL_CONNS && bytes && t1 > t0)
        rate = (double)bytes / BN_MIB / ((*timed_out ? t1 : tl) - t0);
    return rate;
}

void bn_wl_hol(bn_ctx *c, int run)
{
    for (int i = 0; i < c->nrt; i++) {
        bn_rt *rt = bn_nth(c, run, i);
        bool to_all = false, to_stall = false;
        double all = hol_case(c, rt, false, &to_all);
        double st = hol_case(c, rt, true, &to_stall);
        if (all <= 0 || st < 0) {
            bn_error("%s: head-of-line run %d failed (%.1f, %.1f MiB/s)", rt->name, run, all, st);
            continue;
        }
        bn_add("hol", "others_mibps_reading", rt->name, all);
        bn_add("hol", "others_mibps_stalled", rt->name, st);
        bn_add("hol", "ratio_pct", rt->name, 100.0 * st / all);
        if (to_all || to_stall)
            bn_info("hol", rt->name,
                    "the 7 did not finish within %.0f s (%s); rate = bytes "
                    "written so far / time",
                    c->o.hol_timeout_s, to_stall ? "one peer stalled" : "all reading");
    }
}
