/* sl-bench: drives sluiced and containerd through the same client code (the
 * C CRI client, then libsluice's streaming client) and measures the same
 * bytes through a plain pipe and loopback TCP. Results are raw samples in
 * one JSON document; bench/report.mjs turns them into the table. */
#ifndef SL_BENCH_H
#define SL_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/types.h>
#include <jansson.h>
#include <uv.h>

#include "cri_client.h"
#include "grpc/api.pb-c.h"
#include "sluice/client.h"

#define BN_MAX_RT 2
#define BN_MAX_PIDS 256           /* server processes tracked per runtime */
#define BN_CALL_TIMEOUT_MS 60000u /* one CRI call */
#define BN_PIPE_SIZE (1u << 20)   /* F_SETPIPE_SZ of every pipe we make */
#define BN_SOCK_BUF (1u << 20)    /* SO_SNDBUF/SO_RCVBUF of socket pairs */
#define BN_IO_CHUNK (256u * 1024) /* read size of the counting readers */
#define BN_HEAD_MAX 64            /* bytes of a reader's first output kept */
#define BN_MAX_CONC 2048          /* concurrent exec sessions at most */
#define BN_MAX_ATTACH 32          /* attach clients at most */
#define BN_ATTACH_RATE_MIBPS 5.0  /* the paced attach writer, default (--attach-rate) */
#define BN_HOL_CONNS 8            /* forwarded connections in the head-of-line test */
#define BN_IMAGE "localhost/sluice/busybox:latest"
#define BN_MIB (1024.0 * 1024.0)
#define BN_GIB (1024.0 * 1024.0 * 1024.0)

typedef struct bn_opts {
    int runs;
    uint64_t stdout_bytes;  /* exec stdout */
    uint64_t restart_bytes; /* exec stdout across a daemon restart */
    uint64_t stdin_bytes;   /* exec stdin into wc -c */
    uint64_t pf_bytes;      /* port-forward download and upload */
    uint64_t hol_bytes;     /* per reading connection of the head-of-line test */
    int true_iters;         /* exec true round trips per run */
    int split_iters;        /* exec split probes per run */
    int probe_iters;        /* sequential ExecSync `true` per runtime and run */
    int conc[4];            /* concurrent sleep sessions, e.g. 100, 1000 */
    int nconc;
    int conc_runs; /* runs of the concurrency workloads */
    int conc_sleep_s;
    int attach_clients;
    double attach_window_s;
    double attach_rate_mibps; /* the paced attach variant's writer */
    double hol_timeout_s;
    uint32_t spdy_window; /* announced by the client on SPDY sessions; 0 = none */
    const char *only;     /* comma list of workload names, NULL = all */
    const char *json_out;
} bn_opts;

typedef struct bn_rt {
    const char *name;         /* "sluice", "containerd" */
    const char *endpoint;     /* CRI unix socket */
    pid_t daemon;             /* sluiced or containerd */
    const char *helper_comm;  /* comm prefix of the per-pod helpers */
    const char *helper_match; /* their command lines contain this */
    bool pull;                /* PullImage imports the image (sluiced) */
    const char *log_dir;      /* the pod's log_directory */
    const char *restart_cmd;  /* kills the daemon, starts it again, prints its pid */
    bool exec_only;           /* only in the exec rows (sluiced with exec-mode runc) */
    sl_cri_client *cri;
    char *pod_id, *ctr_id, *pf_ctr_id;
    const char *pod_name; /* metadata name of pod_id's pod (NULL: "bench") */
    uint16_t port_down, port_up, port_stall;
    /* one listener per head-of-line connection: busybox nc -ll
     * listens with a backlog of 2, and 7 connections at once overflowed it
     * (SYNs dropped, streams starting a second late) */
    uint16_t port_hol[BN_HOL_CONNS];
    char version[128];
    char ws_proto[48];       /* what an exec over WebSocket negotiates */
    bool tunnel_ok;          /* port-forward SPDY-in-WebSocket upgrades */
    pid_t seen[BN_MAX_PIDS]; /* every server process seen (for profiles) */
    int nseen;
    char tunnel_err[160];
} bn_rt;

typedef struct bn_ctx {
    bn_opts o;
    bn_rt rt[BN_MAX_RT];
    int nrt;
    bn_rt runc; /* --rt-runc: sluiced with exec-mode runc, for the exec rows */
    bool has_runc;
    int devnull;
} bn_ctx;

/* ---- util.c: time, results, misc ---- */
double bn_now(void);
/* This process's CPU seconds (user + system): the client's cost. */
double bn_client_cpu(void);
/* The median of v[0..n) (sorts v); 0 when n is 0. */
double bn_median(double *v, int n);
/* The i-th runtime of run `run`: which one goes first alternates. */
bn_rt *bn_nth(bn_ctx *c, int run, int i);
void bn_results_init(void);
json_t *bn_results(void);
/* Appends sample v to samples[wl][metric][side]. */
void bn_add(const char *wl, const char *metric, const char *side, double v);
/* info[wl][key] = text (later values replace earlier ones). */
void bn_info(const char *wl, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Records an error in the results and prints it. */
void bn_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void bn_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void bn_machine(json_t *out);
#define BN_FREE_PORTS_MAX 16
int bn_free_ports(uint16_t *ports, int n);
bool bn_selected(const bn_ctx *c, const char *wl);

/* ---- netstat.c ---- */
/* SYNs the kernel dropped at a full accept queue so far (any listener on
 * the host), or -1 when /proc/net/netstat cannot be read. */
long long bn_listen_overflows(void);

/* ---- procstat.c: the server-side processes of a runtime ---- */
typedef struct bn_cpu {
    int n;
    pid_t pid[BN_MAX_PIDS];
    uint64_t ticks[BN_MAX_PIDS];  /* utime + stime */
    uint64_t cticks[BN_MAX_PIDS]; /* cutime + cstime: its reaped children (runc, execs) */
} bn_cpu;
typedef struct bn_mem {
    double rss_kib;        /* daemon + helpers */
    double daemon_rss_kib; /* the daemon alone */
    int fds;               /* open fds of daemon + helpers */
    int procs;             /* daemon + helpers */
    double child_rss_kib;  /* runc processes that are children of those */
    int children;
} bn_mem;
void bn_cpu_snap(bn_rt *rt, bn_cpu *s);
double bn_cpu_delta(const bn_cpu *before, const bn_cpu *after); /* seconds */
/* The same with the CPU of the children they reaped meanwhile. */
double bn_cpu_delta_reaped(const bn_cpu *before, const bn_cpu *after);
void bn_mem_snap(bn_rt *rt, bn_mem *m);

/* ---- io.c: counting readers, writers, pipes, helper processes ---- */
typedef struct bn_reader {
    int fd;
    pthread_t th;
    uint64_t bytes;
    uint64_t stop_at; /* 0 = read to EOF; else return once this many came */
    double t_first, t_last;
    double max_gap; /* the longest wait between two reads (s) */
    char head[BN_HEAD_MAX + 1];
    size_t nhead;
    volatile bool finished; /* the thread finished */
} bn_reader;
typedef struct bn_writer {
    int fd;
    pthread_t th;
    uint64_t total, done; /* total UINT64_MAX: until stopped */
    size_t chunk;
    bool half_close; /* shutdown(SHUT_WR) at the end (sockets), else close */
    bool read_reply; /* then read a reply line (the pf sink's "ok") */
    char reply[BN_HEAD_MAX + 1];
    double t_first, t_end, t_reply;
    volatile int stop;
    int err;
    bool closed;            /* the thread closed fd (plain EOF) */
    volatile bool finished; /* the thread finished */
} bn_writer;
int bn_reader_start(bn_reader *r, int fd, uint64_t stop_at); /* owns fd */
void bn_reader_join(bn_reader *r);
int bn_writer_start(bn_writer *w, int fd, uint64_t total, size_t chunk, bool half_close,
                    bool read_reply); /* owns fd */
void bn_writer_join(bn_writer *w);
int bn_pipe(int fds[2]);
int bn_socketpair(int fds[2]);
int bn_tcp_pair(int *client, int *server);
pid_t bn_spawn(const char *const *argv, int in, int out, int err);
int bn_wait(pid_t pid);

/* ---- stream.c: libsluice client sessions on the default loop ---- */
typedef struct bn_exec {
    sl_client_exec *h;
    double t_new, t_upgraded, t_end;
    int exit_code; /* -1 after an error */
    bool done, failed;
    char proto[48];
    char err[256];
    void (*on_done)(struct bn_exec *x, void *arg);
    void *arg;
} bn_exec;
typedef struct bn_pf {
    sl_client_pf *h;
    bool upgraded, ended, failed;
    int conns_ended;
    char proto[48];
    char err[256];
    char conn_err[256];
} bn_pf;
uv_loop_t *bn_loop(void);
/* The SPDY receive window every session announces (0 = none). */
void bn_set_spdy_window(uint32_t w);
int bn_exec_start(bn_exec *x, const char *url, sl_transport tr, int in, int out, int err);
void bn_exec_free(bn_exec *x);
int bn_pf_start(bn_pf *p, const char *url, sl_transport tr);
/* A socket pair; one end goes to the session for remote port, *mine is
 * the other (blocking). */
int bn_pf_conn(bn_pf *p, uint16_t port, int *mine);
void bn_pf_end(bn_pf *p);
/* Runs the loop until the session upgraded or ended; true if upgraded. */
bool bn_pf_wait_upgrade(bn_pf *p, double timeout_s);
/* Runs the loop until *flag or timeout_s passed; false on timeout. */
bool bn_run_until(const volatile bool *flag, double timeout_s);
/* Runs the loop for about s seconds. */
void bn_run_for(double s);
const char *bn_transport_name(sl_transport t);

/* ---- cri.c ---- */
int bn_rt_setup(bn_ctx *c, bn_rt *rt);
void bn_rt_teardown(bn_rt *rt);
/* Exec/Attach/PortForward: *url (free) or -1 (error recorded). */
int bn_exec_url(bn_rt *rt, const char *const *cmd, size_t ncmd, bool in, bool out, bool err,
                char **url);
int bn_attach_url(bn_rt *rt, const char *ctr, char **url);
int bn_pf_url(bn_rt *rt, char **url);
/* ExecSync of cmd in the pod's container: its exit code, or -1 (error recorded). */
int bn_exec_sync(bn_rt *rt, const char *const *cmd, size_t ncmd, int64_t timeout_s);
/* A pod of its own for one workload: rt's pod and container are switched to
 * a new pod `name` with a `sleep 3600` container, until bn_pod_leave puts
 * the old ones back and removes the new pod. A fresh pod has a fresh
 * monitor (sluice) or shim (containerd), so memory measured in it is not
 * hidden by heap that earlier workloads grew and left free. */
typedef struct bn_pod_saved {
    char *pod_id, *ctr_id;
    const char *pod_name;
} bn_pod_saved;
int bn_pod_enter(bn_rt *rt, const char *name, bn_pod_saved *saved);
void bn_pod_leave(bn_rt *rt, bn_pod_saved *saved);
/* A second container in the pod running argv; *id (free). */
int bn_ctr_start(bn_rt *rt, const char *name, const char *const *argv, size_t n, char **id);
void bn_ctr_remove(bn_rt *rt, const char *id);
/* The host path of a container's log file (name as given to bn_ctr_start). */
void bn_ctr_log_path(const bn_rt *rt, const char *name, char *out, size_t len);

/* ---- workloads ---- */
void bn_wl_exec_true(bn_ctx *c, int run);
void bn_wl_exec_split(bn_ctx *c, int run);
void bn_wl_exec_probe(bn_ctx *c, int run);
void bn_wl_exec_stdout(bn_ctx *c, int run);
void bn_wl_exec_stdin(bn_ctx *c, int run);
void bn_wl_pf(bn_ctx *c, int run);
void bn_wl_hol(bn_ctx *c, int run);
void bn_wl_conc(bn_ctx *c, int run, int n);
void bn_wl_attach(bn_ctx *c, int run);
void bn_wl_attach_paced(bn_ctx *c, int run);
void bn_wl_restart(bn_ctx *c, int run);
/* info[wl]["<runtime> <transport>"] = the negotiated subprotocol. */
void bn_proto_info(const char *wl, const bn_rt *rt, sl_transport tr, const char *proto);

/* One measured exec: RPC, then the session to its end. Fills *x and
 * *rpc_s; returns 0 when the command exited (any code). */
int bn_exec_once(bn_rt *rt, const char *const *cmd, size_t ncmd, sl_transport tr, int in, int out,
                 int err, bn_exec *x, double *rpc_s, double timeout_s);

#endif
