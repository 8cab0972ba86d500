/* 8. The daemon restarted (SIGKILL, then started again: what a crash or an
 * upgrade does) during an exec stdout transfer: how many bytes never
 * arrive, the longest stall at the reader, whether the exit status still
 * comes. sluiced's sessions live in the pod monitors, containerd's in the
 * daemon. */
#include "bench.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RESTART_SESSION_TIMEOUT_S 120.0 /* the transfer, restart included */
#define RESTART_AT_DIVISOR 4            /* restart once 1/4 of the bytes arrived */
#define RESTART_CONNECT_TRIES 50        /* CRI reconnects, 100 ms apart */

typedef struct restarter {
    pthread_t th;
    const char *cmd;
    pid_t pid; /* the new daemon's, 0 when the command failed */
    double secs;
    char out[64];
} restarter;

/* The restart command kills the daemon, starts it again, waits until its
 * CRI socket answers and prints the new pid. */
static void *restart_main(void *arg)
{
    restarter *rs = arg;
    double t0 = bn_now();
    FILE *f = popen(rs->cmd, "r");
    if (f) {
        if (!fgets(rs->out, sizeof(rs->out), f))
            rs->out[0] = '\0';
        int st = pclose(f);
        long pid = atol(rs->out);
        rs->pid = st == 0 && pid > 0 ? (pid_t)pid : 0;
    }
    rs->secs = bn_now() - t0;
    return NULL;
}

/* The old connection died with the daemon. */
static int reconnect(bn_rt *rt)
{
    sl_cri_client_free(rt->cri);
    rt->cri = NULL;
    sl_error e = {0};
    for (int i = 0; i < RESTART_CONNECT_TRIES; i++) {
        if (sl_cri_client_connect(rt->endpoint, BN_CALL_TIMEOUT_MS, &rt->cri, &e) == 0)
            return 0;
        usleep(100 * 1000);
    }
    bn_error("%s: reconnect after the restart: %s", rt->name, e.msg);
    return -1;
}

static void record(bn_rt *rt, sl_transport tr, uint64_t total, const bn_reader *r, const bn_exec *x,
                   const restarter *rs)
{
    const char *t = bn_transport_name(tr);
    char m[48];
    bool whole = r->bytes == total;
    snprintf(m, sizeof(m), "lost_mib_%s", t);
    bn_add("restart", m, rt->name, (double)(total - r->bytes) / BN_MIB);
    snprintf(m, sizeof(m), "status_%s", t);
    bn_add("restart", m, rt->name, !x->failed && x->exit_code == 0 ? 1 : 0);
    if (whole) { /* a cut transfer has no stall to speak of: it ended */
        snprintf(m, sizeof(m), "stall_ms_%s", t);
        bn_add("restart", m, rt->name, r->max_gap * 1000);
    }
    bn_add("restart", "back_s", rt->name, rs->secs);
    if (!whole || x->failed)
        bn_info("restart", rt->name, "%s: %llu of %llu bytes, %s", t, (unsigned long long)r->bytes,
                (unsigned long long)total, x->failed ? x->err : "exit status received");
}

static void restart_side(bn_ctx *c, bn_rt *rt, sl_transport tr)
{
    uint64_t total = c->o.restart_bytes;
    char bs[32], count[32];
    snprintf(bs, sizeof(bs), "bs=%u", 65536u);
    snprintf(count, sizeof(count), "count=%llu", (unsigned long long)(total / 65536));
    const char *cmd[] = {"dd", "if=/dev/zero", bs, count};
    int p[2];
    bn_reader r;
    char *url = NULL;
    if (bn_pipe(p) < 0)
        return;
    if (bn_reader_start(&r, p[0], 0) < 0) {
        close(p[1]);
        return;
    }
    bn_exec x = {0};
    if (bn_exec_url(rt, cmd, 4, false, true, false, &url) == 0) {
        bn_exec_start(&x, url, tr, -1, p[1], -1);
        free(url);
    } else {
        x.done = x.failed = true;
    }
    double end = bn_now() + RESTART_SESSION_TIMEOUT_S;
    while (!x.done && r.bytes < total / RESTART_AT_DIVISOR && bn_now() < end)
        bn_run_for(0.005);
    restarter rs = {.cmd = rt->restart_cmd};
    bool started = !x.done && pthread_create(&rs.th, NULL, restart_main, &rs) == 0;
    bn_run_until(&x.done, end - bn_now());
    bn_exec_free(&x);
    close(p[1]);
    bn_reader_join(&r);
    if (!started) {
        bn_error("%s: restart over %s: the transfer ended before the restart: %s", rt->name,
                 bn_transport_name(tr), x.err);
        return;
    }
    pthread_join(rs.th, NULL);
    if (!rs.pid) {
        bn_error("%s: restart command failed: %s", rt->name, rs.out);
        return;
    }
    rt->daemon = rs.pid;
    if (reconnect(rt) == 0)
        record(rt, tr, total, &r, &x, &rs);
}

void bn_wl_restart(bn_ctx *c, int run)
{
    static const sl_transport trs[] = {SL_TRANSPORT_SPDY, SL_TRANSPORT_WEBSOCKET};
    for (size_t t = 0; t < 2; t++)
        for (int i = 0; i < c->nrt; i++) {
            bn_rt *rt = bn_nth(c, run, i);
            if (rt->restart_cmd)
                restart_side(c, rt, trs[t]);
            else
                bn_info("restart", rt->name, "no restart command given (--restart)");
        }
}
