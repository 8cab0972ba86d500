/* sl-bench: the side-by-side benchmark driver (bench/run starts the
 * daemons and calls this; see bench/README.md).
 *
 *   sl-bench --json OUT [--quick] [--runs N] [--only a,b,...]
 *            --rt NAME,ENDPOINT,PID,HELPER-COMM,HELPER-MATCH,LOG-DIR[,pull] ...
 *            [--stdout-bytes N] [--restart-bytes N] [--stdin-bytes N] [--pf-bytes N] [--hol-bytes
 * N]
 *            [--rt-runc NAME,ENDPOINT,PID,HELPER-COMM,HELPER-MATCH,LOG-DIR[,pull]]
 *            [--true-iters N] [--split-iters N] [--probe-iters N] [--conc N[,N]]
 *            [--conc-runs N]
 *            [--conc-sleep S] [--attach-window S] [--attach-rate MIBPS]
 *            [--hol-timeout S] [--spdy-window N] [--restart NAME=COMMAND] ...
 *
 * Workloads: exec_true exec_split exec_probe exec_stdout exec_stdin pf hol
 * conc attach attach_paced restart ("attach" selects both attach variants).
 * --rt-runc: a sluiced with exec-mode runc, a third side of exec_true and
 * exec_probe only (no port-forward container, not in the other rows). --restart
 * gives runtime NAME's restart command (bench/run writes them): it kills
 * the daemon, starts it again and prints the new pid. */
#include "bench.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define MIB (1024ull * 1024)
#define PROBE_TIMEOUT_S 30.0
#define MAX_RT_SPEC 1024

static void defaults(bn_opts *o, bool quick)
{
    memset(o, 0, sizeof(*o));
    o->runs = quick ? 1 : 5;
    o->stdout_bytes = quick ? 64 * MIB : 1024 * MIB;
    o->restart_bytes = o->stdout_bytes;
    o->stdin_bytes = quick ? 16 * MIB : 256 * MIB;
    o->pf_bytes = quick ? 64 * MIB : 1024 * MIB;
    o->hol_bytes = quick ? 8 * MIB : 64 * MIB;
    o->true_iters = quick ? 10 : 40;
    o->split_iters = quick ? 3 : 6;
    o->probe_iters = quick ? 100 : 200; /* × 5 runs: 1,000 per side */
    o->conc[0] = quick ? 20 : 100;
    o->conc[1] = 1000;
    o->nconc = quick ? 1 : 2;
    o->conc_runs = quick ? 1 : 3; /* 1000: one run (see run_workloads) */
    o->conc_sleep_s = quick ? 2 : 5;
    o->attach_clients = 10;
    o->attach_window_s = quick ? 1.0 : 3.0;
    o->attach_rate_mibps = BN_ATTACH_RATE_MIBPS;
    o->hol_timeout_s = quick ? 10.0 : 20.0;
    o->spdy_window = SL_CLIENT_SPDY_WINDOW;
}

/* NAME,ENDPOINT,PID,HELPER-COMM,HELPER-MATCH,LOG-DIR[,pull] into *rt. */
static int parse_rt_spec(bn_rt *rt, const char *spec)
{
    char *s = strdup(spec), *f[7] = {0};
    int n = 0;
    for (char *save = NULL, *t = strtok_r(s, ",", &save); t && n < 7;
         t = strtok_r(NULL, ",", &save))
        f[n++] = t;
    if (n < 6)
        return -1;
    rt->name = f[0];
    rt->endpoint = f[1];
    rt->daemon = (pid_t)atoi(f[2]);
    rt->helper_comm = f[3];
    rt->helper_match = f[4];
    rt->log_dir = f[5];
    rt->pull = n == 7 && !strcmp(f[6], "pull");
    return 0;
}

static int parse_rt(bn_ctx *c, const char *spec)
{
    if (c->nrt == BN_MAX_RT || parse_rt_spec(&c->rt[c->nrt], spec) < 0)
        return -1;
    c->nrt++;
    return 0;
}

static int parse_rt_runc(bn_ctx *c, const char *spec)
{
    if (c->has_runc || parse_rt_spec(&c->runc, spec) < 0)
        return -1;
    c->runc.exec_only = c->has_runc = true;
    return 0;
}

/* NAME=COMMAND */
static int parse_restart(bn_ctx *c, const char *v)
{
    const char *eq = strchr(v, '=');
    for (int i = 0; eq && i < c->nrt; i++)
        if (strlen(c->rt[i].name) == (size_t)(eq - v) && !strncmp(c->rt[i].name, v, eq - v)) {
            c->rt[i].restart_cmd = eq + 1;
            return 0;
        }
    return -1; /* after the --rt it names */
}

static int parse_conc(bn_opts *o, const char *v)
{
    o->nconc = 0;
    for (const char *p = v; *p && o->nconc < 4;) {
        o->conc[o->nconc] = atoi(p);
        if (o->conc[o->nconc] <= 0 || o->conc[o->nconc] > BN_MAX_CONC)
            return -1;
        o->nconc++;
        p += strcspn(p, ",");
        if (*p == ',')
            p++;
    }
    return 0;
}

static int set_opt(bn_ctx *c, const char *k, const char *v)
{
    bn_opts *o = &c->o;
    if (!strcmp(k, "--rt"))
        return parse_rt(c, v);
    if (!strcmp(k, "--rt-runc"))
        return parse_rt_runc(c, v);
    if (!strcmp(k, "--restart"))
        return parse_restart(c, v);
    if (!strcmp(k, "--json"))
        o->json_out = v;
    else if (!strcmp(k, "--runs"))
        o->runs = atoi(v);
    else if (!strcmp(k, "--only"))
        o->only = v;
    else if (!strcmp(k, "--stdout-bytes"))
        o->stdout_bytes = strtoull(v, NULL, 10);
    else if (!strcmp(k, "--restart-bytes"))
        o->restart_bytes = strtoull(v, NULL, 10);
    else if (!strcmp(k, "--stdin-bytes"))
        o->stdin_bytes = strtoull(v, NULL, 10);
    else if (!strcmp(k, "--pf-bytes"))
        o->pf_bytes = strtoull(v, NULL, 10);
    else if (!strcmp(k, "--hol-bytes"))
        o->hol_bytes = strtoull(v, NULL, 10);
    else if (!strcmp(k, "--true-iters"))
        o->true_iters = atoi(v);
    else if (!strcmp(k, "--split-iters"))
        o->split_iters = atoi(v);
    else if (!strcmp(k, "--probe-iters"))
        o->probe_iters = atoi(v);
    else if (!strcmp(k, "--conc"))
        return parse_conc(o, v);
    else if (!strcmp(k, "--conc-runs"))
        o->conc_runs = atoi(v);
    else if (!strcmp(k, "--conc-sleep"))
        o->conc_sleep_s = atoi(v);
    else if (!strcmp(k, "--attach-window"))
        o->attach_window_s = atof(v);
    else if (!strcmp(k, "--attach-rate"))
        o->attach_rate_mibps = atof(v);
    else if (!strcmp(k, "--spdy-window"))
        o->spdy_window = (uint32_t)strtoul(v, NULL, 10);
    else if (!strcmp(k, "--hol-timeout"))
        o->hol_timeout_s = atof(v);
    else
        return -1;
    return 0;
}

static int parse_args(bn_ctx *c, int argc, char **argv)
{
    bool quick = false;
    for (int i = 1; i < argc; i++)
        quick |= !strcmp(argv[i], "--quick");
    defaults(&c->o, quick);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            continue;
        if (i + 1 >= argc || set_opt(c, argv[i], argv[i + 1]) < 0) {
            fprintf(stderr, "sl-bench: bad argument %s (see bench/main.c)\n", argv[i]);
            return -1;
        }
        i++;
    }
    bool sizes_ok = c->o.stdout_bytes % 65536 == 0 && c->o.pf_bytes % 65536 == 0 &&
                    c->o.restart_bytes % 65536 == 0;
    bool attach_ok = c->o.attach_rate_mibps > 0 && c->o.attach_window_s > 0 &&
                     c->o.attach_clients >= 2 && c->o.attach_clients <= BN_MAX_ATTACH;
    if (!c->o.json_out || !c->nrt || c->o.runs < 1 || c->o.probe_iters < 1 || !sizes_ok ||
        !attach_ok) {
        fprintf(stderr, "sl-bench: need --json, at least one --rt, runs >= 1, probe-iters >= 1, "
                        "sizes in 64 KiB units and a positive attach rate and window\n");
        return -1;
    }
    return 0;
}

/* What each runtime accepts: exec over WebSocket, port-forward tunnel. */
static void probe(bn_ctx *c, bn_rt *rt)
{
    const char *cmd[] = {"true"};
    bn_exec x;
    double rpc;
    if (bn_exec_once(rt, cmd, 1, SL_TRANSPORT_WEBSOCKET, -1, c->devnull, c->devnull, &x, &rpc,
                     PROBE_TIMEOUT_S) == 0)
        snprintf(rt->ws_proto, sizeof(rt->ws_proto), "%s", x.proto);
    else
        snprintf(rt->ws_proto, sizeof(rt->ws_proto), "refused");
    bn_log("%s: exec over WebSocket: %s", rt->name, rt->ws_proto);
    char *url = NULL;
    bn_pf p;
    if (bn_pf_url(rt, &url) == 0 && bn_pf_start(&p, url, SL_TRANSPORT_WEBSOCKET_TUNNEL) == 0) {
        rt->tunnel_ok = bn_pf_wait_upgrade(&p, PROBE_TIMEOUT_S);
        if (!rt->tunnel_ok)
            snprintf(rt->tunnel_err, sizeof(rt->tunnel_err), "%.150s",
                     p.err[0] ? p.err : "no upgrade");
        bn_pf_end(&p);
    }
    free(url);
}

/* "attach" selects both attach variants. */
static bool wanted(const bn_ctx *c, const char *wl)
{
    return bn_selected(c, wl) || (!strcmp(wl, "attach_paced") && bn_selected(c, "attach"));
}

/* Adds the SYNs dropped at full listen queues since `before` to the
 * workload's count and reports the count (the results' notes) when any. */
static void note_overflows(const char *wl, long long before, long long *sum)
{
    long long now = bn_listen_overflows();
    if (before < 0 || now <= before)
        return;
    *sum += now - before;
    bn_info(wl, "listen_overflows",
            "the kernel dropped %lld SYNs at a full listen queue during this workload "
            "(TcpExt ListenOverflows, any listener on this host, the pod's programs included); "
            "each costs its client a retry after 1 s or more",
            *sum);
}

static void run_workloads(bn_ctx *c)
{
    static const struct {
        const char *name;
        void (*fn)(bn_ctx *, int);
    } wls[] = {
        {"exec_true", bn_wl_exec_true},
        {"exec_split", bn_wl_exec_split},
        {"exec_probe", bn_wl_exec_probe},
        {"exec_stdout", bn_wl_exec_stdout},
        {"exec_stdin", bn_wl_exec_stdin},
        {"pf", bn_wl_pf},
        {"hol", bn_wl_hol},
        {"attach", bn_wl_attach},
        {"attach_paced", bn_wl_attach_paced},
        {"restart", bn_wl_restart}, /* last: it replaces the daemons */
    };
    long long dropped[sizeof(wls) / sizeof(wls[0])] = {0};
    for (int run = 0; run < c->o.runs; run++)
        for (size_t w = 0; w < sizeof(wls) / sizeof(wls[0]); w++) {
            if (!wanted(c, wls[w].name))
                continue;
            double t0 = bn_now();
            long long o0 = bn_listen_overflows();
            wls[w].fn(c, run);
            note_overflows(wls[w].name, o0, &dropped[w]);
            bn_log("run %d/%d %s: %.1f s", run + 1, c->o.runs, wls[w].name, bn_now() - t0);
        }
    if (!bn_selected(c, "conc"))
        return;
    /* Last, and 1000 once: containerd is still working through such a
     * backlog minutes later, which would bleed into whatever follows. */
    for (int k = 0; k < c->o.nconc; k++) {
        char wl[32];
        snprintf(wl, sizeof(wl), "conc%d", c->o.conc[k]);
        long long conc_dropped = 0;
        for (int run = 0; run < (c->o.conc[k] >= 1000 ? 1 : c->o.conc_runs); run++) {
            double t0 = bn_now();
            long long o0 = bn_listen_overflows();
            bn_wl_conc(c, run, c->o.conc[k]);
            note_overflows(wl, o0, &conc_dropped);
            bn_log("run %d/%d conc%d: %.1f s", run + 1, c->o.conc_runs, c->o.conc[k],
                   bn_now() - t0);
        }
    }
}

static json_t *config_json(const bn_ctx *c)
{
    const bn_opts *o = &c->o;
    json_t *conc = json_array();
    for (int i = 0; i < o->nconc; i++)
        json_array_append_new(conc, json_integer(o->conc[i]));
    return json_pack("{s:i, s:I, s:I, s:I, s:I, s:I, s:i, s:i, s:i, s:o, s:i, s:i, s:i, s:f, "
                     "s:f, s:f, s:I, s:s?}",
                     "runs", o->runs, "stdout_bytes", (json_int_t)o->stdout_bytes, "restart_bytes",
                     (json_int_t)o->restart_bytes, "stdin_bytes", (json_int_t)o->stdin_bytes,
                     "pf_bytes", (json_int_t)o->pf_bytes, "hol_bytes", (json_int_t)o->hol_bytes,
                     "true_iters", o->true_iters, "split_iters", o->split_iters, "probe_iters",
                     o->probe_iters, "conc", conc, "conc_runs", o->conc_runs, "conc_sleep_s",
                     o->conc_sleep_s, "attach_clients", o->attach_clients, "attach_window_s",
                     o->attach_window_s, "attach_rate_mibps", o->attach_rate_mibps, "hol_timeout_s",
                     o->hol_timeout_s, "spdy_window", (json_int_t)o->spdy_window, "only", o->only);
}

static json_t *runtimes_json(const bn_ctx *c)
{
    json_t *out = json_object();
    for (int i = 0; i < c->nrt + c->has_runc; i++) {
        const bn_rt *rt = i < c->nrt ? &c->rt[i] : &c->runc;
        json_t *pids = json_array();
        for (int k = 0; k < rt->nseen; k++)
            json_array_append_new(pids, json_integer(rt->seen[k]));
        json_object_set_new(out, rt->name,
                            json_pack("{s:s, s:s, s:b, s:s, s:o, s:b}", "version", rt->version,
                                      "websocket_exec", rt->ws_proto, "pf_tunnel", rt->tunnel_ok,
                                      "pf_tunnel_error", rt->tunnel_err, "server_pids", pids,
                                      "exec_only", rt->exec_only));
    }
    return out;
}

static void raise_nofile(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
    }
}

int main(int argc, char **argv)
{
    static bn_ctx c;
    if (parse_args(&c, argc, argv) < 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    bn_set_spdy_window(c.o.spdy_window);
    raise_nofile();
    bn_results_init();
    json_t *res = bn_results();
    json_t *machine = json_object();
    bn_machine(machine);
    json_object_set_new(res, "machine", machine);
    c.devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    double t0 = bn_now();
    int rc = 0;
    for (int i = 0; i < c.nrt && !rc; i++)
        rc = bn_rt_setup(&c, &c.rt[i]);
    if (c.has_runc && !rc)
        rc = bn_rt_setup(&c, &c.runc);
    double tp = bn_now();
    for (int i = 0; i < c.nrt && !rc; i++)
        probe(&c, &c.rt[i]);
    bn_log("setup: %.1f s (probes %.1f s)", bn_now() - t0, bn_now() - tp);
    if (!rc)
        run_workloads(&c);
    json_object_set_new(res, "runtimes", runtimes_json(&c));
    double t1 = bn_now();
    for (int i = 0; i < c.nrt; i++)
        bn_rt_teardown(&c.rt[i]);
    if (c.has_runc)
        bn_rt_teardown(&c.runc);
    bn_log("teardown: %.1f s", bn_now() - t1);
    json_object_set_new(res, "config", config_json(&c));
    json_object_set_new(res, "duration_s", json_real(bn_now() - t0));
    if (json_dump_file(res, c.o.json_out, JSON_INDENT(1) | JSON_SORT_KEYS) < 0) {
        fprintf(stderr, "sl-bench: cannot write %s\n", c.o.json_out);
        return 1;
    }
    return rc ? 1 : 0;
}
