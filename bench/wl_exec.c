/* Exec workloads: the `true` round trip and its split, stdout throughput,
 * stdin throughput with EOF; each against both runtimes and the limit (the
 * same busybox command on a plain pipe and on loopback TCP). */
#include "bench.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SESSION_TIMEOUT_S 300.0 /* one exec session at most */
#define PROBE_TIMEOUT_S 30.0
#define EXEC_SYNC_TIMEOUT_S 30 /* one ExecSync of the probe workload */
#define STDIN_CHUNK 65536

typedef struct probe {
    int lfd;
    pthread_t th;
    double t_accept;
} probe;

int bn_exec_once(bn_rt *rt, const char *const *cmd, size_t ncmd, sl_transport tr, int in, int out,
                 int err, bn_exec *x, double *rpc_s, double timeout_s)
{
    char *url = NULL;
    double t0 = bn_now();
    memset(x, 0, sizeof(*x));
    if (bn_exec_url(rt, cmd, ncmd, in >= 0, out >= 0, err >= 0, &url) < 0)
        return -1;
    *rpc_s = bn_now() - t0;
    bn_exec_start(x, url, tr, in, out, err);
    free(url);
    bool ended = bn_run_until(&x->done, timeout_s);
    bn_exec_free(x);
    if (!ended) {
        bn_error("%s: exec %s over %s: no end within %.0f s", rt->name, cmd[0],
                 bn_transport_name(tr), timeout_s);
        return -1;
    }
    if (x->failed) {
        bn_error("%s: exec %s over %s: %s", rt->name, cmd[0], bn_transport_name(tr), x->err);
        return -1;
    }
    return 0;
}

/* ---- 1. exec true ---- */

static void true_side(bn_ctx *c, bn_rt *rt, int iters)
{
    const char *cmd[] = {"true"};
    double *tot = calloc((size_t)iters, sizeof(double));
    int n = 0;
    for (int i = 0; i < iters && tot; i++) {
        bn_exec x;
        double rpc;
        if (bn_exec_once(rt, cmd, 1, SL_TRANSPORT_SPDY, -1, c->devnull, c->devnull, &x, &rpc,
                         SESSION_TIMEOUT_S) < 0 ||
            x.exit_code != 0)
            continue;
        double total = rpc + (x.t_end - x.t_new);
        tot[n++] = total * 1e3;
        bn_add("exec_true", "total_ms", rt->name, total * 1e3);
        bn_add("exec_true", "rpc_ms", rt->name, rpc * 1e3);
        bn_add("exec_true", "upgrade_ms", rt->name, (x.t_upgraded - x.t_new) * 1e3);
        bn_add("exec_true", "after_upgrade_ms", rt->name, (x.t_end - x.t_upgraded) * 1e3);
    }
    if (n)
        bn_add("exec_true", "p50_run_ms", rt->name, bn_median(tot, n));
    free(tot);
}

/* The i-th of the runtimes an exec row compares (those of bn_nth, then
 * sluiced with exec-mode runc, first in every other run). */
static bn_rt *exec_rt(bn_ctx *c, int run, int i)
{
    if (!c->has_runc)
        return bn_nth(c, run, i);
    int k = (run + i) % (c->nrt + 1);
    return k == c->nrt ? &c->runc : &c->rt[k];
}

static int exec_nrt(const bn_ctx *c)
{
    return c->nrt + c->has_runc;
}

void bn_wl_exec_true(bn_ctx *c, int run)
{
    for (int i = 0; i < exec_nrt(c); i++)
        true_side(c, exec_rt(c, run, i), c->o.true_iters);
}

/* ---- 1c. ExecSync probe cost: `true` again and again, one after the
 * other, as a kubelet's exec probe; per 1,000 calls. ---- */

static void probe_side(bn_rt *rt, int iters)
{
    const char *cmd[] = {"true"};
    bn_cpu a, b;
    bn_cpu_snap(rt, &a);
    double t0 = bn_now();
    int ok = 0;
    for (int i = 0; i < iters; i++) {
        int code = bn_exec_sync(rt, cmd, 1, EXEC_SYNC_TIMEOUT_S);
        if (code != 0 && code != -1)
            bn_error("%s: exec_probe: ExecSync true exited %d", rt->name, code);
        ok += code == 0;
    }
    double wall = bn_now() - t0;
    bn_cpu_snap(rt, &b);
    if (ok < iters) {
        bn_error("%s: exec_probe: %d of %d ExecSync failed", rt->name, iters - ok, iters);
        return;
    }
    double per = 1000.0 / iters;
    bn_add("exec_probe", "wall_s", rt->name, wall * per);
    bn_add("exec_probe", "cpu_s", rt->name, bn_cpu_delta(&a, &b) * per);
    bn_add("exec_probe", "cpu_reaped_s", rt->name, bn_cpu_delta_reaped(&a, &b) * per);
}

void bn_wl_exec_probe(bn_ctx *c, int run)
{
    for (int i = 0; i < exec_nrt(c); i++)
        probe_side(exec_rt(c, run, i), c->o.probe_iters);
}

/* ---- 1b. the split: `nc 127.0.0.1 P` connects to us (the process has
 * started); we close at once, nc reads EOF and exits (its stdin is
 * /dev/null: busybox nc waits for the peer), and the status follows. Not
 * `nc -e cat`: nc execs cat after it connects, so the leg held a process
 * start (busybox on this host: 0.62 ms from the close to the exit against
 * 0.11 without -e). ---- */

static void *probe_main(void *arg)
{
    probe *p = arg;
    int fd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0) {
        p->t_accept = bn_now();
        close(fd);
    }
    return NULL;
}

/* A listening socket on a free loopback port. */
static int probe_listen(uint16_t *port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (l < 0)
        return -1;
    if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 4) < 0 ||
        getsockname(l, (struct sockaddr *)&sa, &len) < 0) {
        close(l);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return l;
}

static void split_once(bn_ctx *c, bn_rt *rt)
{
    uint16_t port = 0;
    probe p = {.lfd = probe_listen(&port)};
    char ps[8];
    snprintf(ps, sizeof(ps), "%u", port);
    const char *cmd[] = {"nc", "127.0.0.1", ps};
    if (p.lfd < 0 || pthread_create(&p.th, NULL, probe_main, &p)) {
        bn_error("exec_split: cannot listen");
        if (p.lfd >= 0)
            close(p.lfd);
        return;
    }
    bn_exec x;
    double rpc;
    int rc = bn_exec_once(rt, cmd, 3, SL_TRANSPORT_SPDY, -1, c->devnull, c->devnull, &x, &rpc,
                          PROBE_TIMEOUT_S);
    shutdown(p.lfd, SHUT_RDWR); /* wakes accept() if nobody came */
    pthread_join(p.th, NULL);
    close(p.lfd);
    if (rc < 0 || !p.t_accept || x.exit_code != 0) {
        if (rc == 0)
            bn_error("%s: exec_split: probe exit %d, accepted %d", rt->name, x.exit_code,
                     p.t_accept > 0);
        return;
    }
    bn_add("exec_split", "rpc_ms", rt->name, rpc * 1e3);
    bn_add("exec_split", "upgrade_ms", rt->name, (x.t_upgraded - x.t_new) * 1e3);
    bn_add("exec_split", "start_ms", rt->name, (p.t_accept - x.t_upgraded) * 1e3);
    bn_add("exec_split", "status_ms", rt->name, (x.t_end - p.t_accept) * 1e3);
    bn_add("exec_split", "total_ms", rt->name, (rpc + x.t_end - x.t_new) * 1e3);
}

void bn_wl_exec_split(bn_ctx *c, int run)
{
    for (int i = 0; i < c->nrt; i++)
        for (int k = 0; k < c->o.split_iters; k++)
            split_once(c, bn_nth(c, run, i));
}

/* ---- 2. exec stdout: dd from /dev/zero with 64 KiB or 4 KiB writes ---- */

typedef struct metric_names {
    char rate[48], cpu[48], ccpu[48];
} metric_names;

static void names(metric_names *m, const char *what, const char *tr)
{
    snprintf(m->rate, sizeof(m->rate), "mibps_%s_%s", what, tr);
    snprintf(m->cpu, sizeof(m->cpu), "cpu_%s_%s", what, tr);
    snprintf(m->ccpu, sizeof(m->ccpu), "ccpu_%s_%s", what, tr);
}

static void add_transfer(const char *wl, const metric_names *m, const char *side, uint64_t bytes,
                         double secs, double cpu, double ccpu)
{
    double gib = (double)bytes / BN_GIB;
    bn_add(wl, m->rate, side, (double)bytes / BN_MIB / secs);
    if (cpu >= 0)
        bn_add(wl, m->cpu, side, cpu / gib);
    bn_add(wl, m->ccpu, side, ccpu / gib);
}

static void dd_args(char *bs, char *count, size_t len, size_t ws, uint64_t bytes)
{
    snprintf(bs, len, "bs=%zu", ws);
    snprintf(count, len, "count=%llu", (unsigned long long)(bytes / ws));
}

static void stdout_side(bn_ctx *c, bn_rt *rt, size_t ws, sl_transport tr, const metric_names *m)
{
    char bs[32], count[32];
    dd_args(bs, count, sizeof(bs), ws, c->o.stdout_bytes);
    const char *cmd[] = {"dd", "if=/dev/zero", bs, count};
    int p[2];
    bn_reader r;
    if (bn_pipe(p) < 0 || bn_reader_start(&r, p[0], 0) < 0)
        return;
    bn_cpu a, b;
    bn_cpu_snap(rt, &a);
    double cc = bn_client_cpu();
    bn_exec x;
    double rpc;
    int rc = bn_exec_once(rt, cmd, 4, tr, -1, p[1], c->devnull, &x, &rpc, SESSION_TIMEOUT_S);
    close(p[1]);
    bn_reader_join(&r);
    bn_cpu_snap(rt, &b);
    cc = bn_client_cpu() - cc;
    if (rc < 0 || x.exit_code != 0 || r.bytes != c->o.stdout_bytes) {
        if (rc == 0)
            bn_error("%s: exec stdout %s: exit %d, %llu of %llu bytes", rt->name, m->rate,
                     x.exit_code, (unsigned long long)r.bytes,
                     (unsigned long long)c->o.stdout_bytes);
        return;
    }
    add_transfer("exec_stdout", m, rt->name, r.bytes, r.t_last - r.t_first, bn_cpu_delta(&a, &b),
                 cc);
    bn_proto_info("exec_stdout", rt, tr, x.proto);
}

/* The limit: the same dd into a pipe or a loopback TCP socket. */
static void stdout_limit(bn_ctx *c, size_t ws, bool tcp, const metric_names *m1,
                         const metric_names *m2)
{
    char bs[32], count[32];
    dd_args(bs, count, sizeof(bs), ws, c->o.stdout_bytes);
    const char *argv[] = {"busybox", "dd", "if=/dev/zero", bs, count, NULL};
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
    cc = bn_client_cpu() - cc;
    if (st != 0 || r.bytes != c->o.stdout_bytes) {
        bn_error("limit dd %s: exit %d, %llu bytes", bs, st, (unsigned long long)r.bytes);
        return;
    }
    const char *side = tcp ? "tcp" : "pipe";
    add_transfer("exec_stdout", m1, side, r.bytes, r.t_last - r.t_first, -1, cc);
    add_transfer("exec_stdout", m2, side, r.bytes, r.t_last - r.t_first, -1, cc);
}

void bn_wl_exec_stdout(bn_ctx *c, int run)
{
    static const size_t sizes[] = {65536, 4096};
    static const sl_transport trs[] = {SL_TRANSPORT_SPDY, SL_TRANSPORT_WEBSOCKET};
    for (size_t s = 0; s < 2; s++) {
        metric_names m[2];
        char what[24];
        snprintf(what, sizeof(what), "%zuk", sizes[s] / 1024);
        for (size_t t = 0; t < 2; t++) {
            names(&m[t], what, bn_transport_name(trs[t]));
            for (int i = 0; i < c->nrt; i++)
                stdout_side(c, bn_nth(c, run, i), sizes[s], trs[t], &m[t]);
        }
        stdout_limit(c, sizes[s], false, &m[0], &m[1]);
        stdout_limit(c, sizes[s], true, &m[0], &m[1]);
    }
}

/* ---- 3. stdin into wc -c, ended by EOF ---- */

static bool wc_says(const bn_reader *r, uint64_t want)
{
    return r->nhead && strtoull(r->head, NULL, 10) == want;
}

static void stdin_side(bn_ctx *c, bn_rt *rt, sl_transport tr, const metric_names *m)
{
    const char *cmd[] = {"wc", "-c"};
    int in[2], out[2];
    bn_writer w;
    bn_reader r;
    if (bn_pipe(in) < 0 || bn_pipe(out) < 0 || bn_reader_start(&r, out[0], 0) < 0 ||
        bn_writer_start(&w, in[1], c->o.stdin_bytes, STDIN_CHUNK, false, false) < 0)
        return;
    bn_cpu a, b;
    bn_cpu_snap(rt, &a);
    double cc = bn_client_cpu();
    bn_exec x;
    double rpc;
    int rc = bn_exec_once(rt, cmd, 2, tr, in[0], out[1], c->devnull, &x, &rpc, SESSION_TIMEOUT_S);
    w.stop = 1;
    close(in[0]);
    close(out[1]);
    bn_writer_join(&w);
    bn_reader_join(&r);
    bn_cpu_snap(rt, &b);
    cc = bn_client_cpu() - cc;
    if (rc < 0 || x.exit_code != 0 || !wc_says(&r, c->o.stdin_bytes)) {
        if (rc == 0)
            bn_error("%s: exec stdin %s: exit %d, wc says '%s', wrote %llu", rt->name, m->rate,
                     x.exit_code, r.head, (unsigned long long)w.done);
        return;
    }
    add_transfer("exec_stdin", m, rt->name, c->o.stdin_bytes, x.t_end - x.t_upgraded,
                 bn_cpu_delta(&a, &b), cc);
    bn_proto_info("exec_stdin", rt, tr, x.proto);
}

static void stdin_limit(bn_ctx *c, bool tcp, const metric_names *m1, const metric_names *m2)
{
    const char *argv[] = {"busybox", "wc", "-c", NULL};
    int in[2], out[2];
    bn_reader r;
    bn_writer w;
    if ((tcp ? bn_tcp_pair(&in[1], &in[0]) : bn_pipe(in)) < 0 || bn_pipe(out) < 0 ||
        bn_reader_start(&r, out[0], 0) < 0)
        return;
    double cc = bn_client_cpu();
    double t0 = bn_now();
    pid_t pid = bn_spawn(argv, in[0], out[1], c->devnull);
    close(in[0]);
    close(out[1]);
    if (bn_writer_start(&w, in[1], c->o.stdin_bytes, STDIN_CHUNK, tcp, false) < 0)
        return;
    int st = pid > 0 ? bn_wait(pid) : -1;
    double t1 = bn_now();
    bn_writer_join(&w);
    bn_reader_join(&r);
    cc = bn_client_cpu() - cc;
    if (st != 0 || !wc_says(&r, c->o.stdin_bytes)) {
        bn_error("limit wc -c (%s): exit %d, says '%s'", tcp ? "tcp" : "pipe", st, r.head);
        return;
    }
    const char *side = tcp ? "tcp" : "pipe";
    add_transfer("exec_stdin", m1, side, c->o.stdin_bytes, t1 - t0, -1, cc);
    add_transfer("exec_stdin", m2, side, c->o.stdin_bytes, t1 - t0, -1, cc);
}

void bn_wl_exec_stdin(bn_ctx *c, int run)
{
    static const sl_transport trs[] = {SL_TRANSPORT_SPDY, SL_TRANSPORT_WEBSOCKET};
    metric_names m[2];
    for (size_t t = 0; t < 2; t++) {
        names(&m[t], "stdin", bn_transport_name(trs[t]));
        for (int i = 0; i < c->nrt; i++) {
            bn_rt *rt = bn_nth(c, run, i);
            /* v4 WebSocket cannot send EOF: wc -c would never end. */
            if (trs[t] == SL_TRANSPORT_WEBSOCKET && strncmp(rt->ws_proto, "v5.", 3)) {
                bn_info("exec_stdin", rt->name,
                        "websocket: n/a, it negotiates %s, which has no stdin EOF", rt->ws_proto);
                continue;
            }
            stdin_side(c, rt, trs[t], &m[t]);
        }
    }
    stdin_limit(c, false, &m[0], &m[1]);
    stdin_limit(c, true, &m[0], &m[1]);
}
