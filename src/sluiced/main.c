/* sluiced: the sluice CRI runtime daemon. One libuv loop serves the CRI
 * gRPC API on a unix socket, the libsluice streaming server on TCP and,
 * when configured, the admin listener (/healthz, /readyz, /metrics).
 * SIGTERM/SIGINT stop it (pods and their monitors keep running), SIGHUP
 * reloads what may change live (sl_config_reload). It tells systemd when
 * it is ready, reloading or stopping (the sd_notify protocol, admin/notify.h;
 * nothing without NOTIFY_SOCKET). */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "admin/admin.h"
#include "admin/calls.h"
#include "admin/daemon_metrics.h"
#include "admin/notify.h"
#include "config/config.h"
#include "cri/service.h"
#include "cri/sluice_version.h"
#include "cri/stream_handoff.h"
#include "fsutil.h"
#include "grpc/grpc_server.h"
#include "sl_log.h"
#include "sluice/server.h"

/* Mode of directories sluiced creates for its socket. */
#define SOCKET_DIR_MODE 0755

typedef struct sluiced {
    uv_loop_t *loop;
    int argc;
    char **argv;
    sl_config cfg;
    sl_cri cri;
    sl_calls calls; /* per-call metrics and log lines */
    sl_server *stream;
    sl_stream_handoff *handoff; /* sessions go to the pod monitors */
    sl_grpc_server *grpc;
    sl_admin *admin;
    sl_notify notify; /* systemd's NOTIFY_SOCKET */
    bool listening;   /* the CRI socket is up (readiness) */
    uv_signal_t sigint, sigterm, sighup;
    bool stopping; /* close requested */
    int closing;   /* servers still closing */
    int rc;        /* the exit status */
} sluiced;

/* Streaming connections take at most 1/STREAM_FD_SHARE of the open-file
 * soft limit, so idle ones never leave the CRI socket (half of it, see
 * SL_GRPC_FD_SHARE), the monitors and the image store without fds. */
#define STREAM_FD_SHARE 4

static uint32_t stream_fd_bound(uint32_t want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
        return want;
    rlim_t share = rl.rlim_cur / STREAM_FD_SHARE;
    return share >= want ? want : share > 0 ? (uint32_t)share : 1;
}

static void stream_config(const sl_config *c, sl_server_config *s)
{
    *s = c->stream; /* every limit of sluice/limits.h */
    s->address = c->stream_address;
    s->port = (uint16_t)c->stream_port;
    s->base_path = c->stream_base_path;
    s->advertise_host = c->stream_advertise[0] ? c->stream_advertise : NULL;
    s->max_connections = stream_fd_bound(c->stream.max_connections);
    if (s->max_connections < c->stream.max_connections) {
        char want[16], used[16];
        snprintf(want, sizeof(want), "%u", c->stream.max_connections);
        snprintf(used, sizeof(used), "%u", s->max_connections);
        sl_log(SL_LOG_WARN, "max-stream-connections lowered to a quarter of the open-file limit",
               "configured", want, "used", used, NULL);
    }
}

/* A TLS file that cannot be opened is named with the reason. */
static int check_readable(const char *key, const char *path, sl_error *e)
{
    FILE *f = *path ? fopen(path, "r") : NULL;
    if (*path && !f)
        return sl_error_set(e, errno, "%s: cannot read \"%s\"", key, path);
    if (f)
        fclose(f);
    return 0;
}

/* sl_server_set_tls names its parameter at fault; the operator knows the
 * config keys. */
static int stream_tls(sluiced *d, sl_error *e)
{
    const sl_config *c = &d->cfg;
    const char *keys[] = {"stream-tls-cert-file", "stream-tls-key-file",
                          "stream-tls-client-ca-file"};
    const char *files[] = {c->stream_tls_cert_file, c->stream_tls_key_file,
                           c->stream_tls_client_ca_file};
    const char *params[] = {"cert_file: ", "key_file: ", "client_ca_file: "};
    if (!*files[0])
        return 0;
    for (int i = 0; i < 3; i++)
        if (check_readable(keys[i], files[i], e) < 0)
            return -1;
    const char *msg;
    int rc = sl_server_set_tls(d->stream, files[0], files[1], files[2], &msg);
    if (rc == SL_OK)
        return 0;
    for (int i = 0; msg && i < 3; i++) {
        size_t n = strlen(params[i]);
        if (strncmp(msg, params[i], n) == 0)
            return sl_error_set(e, 0, "%s: \"%s\": %s", keys[i], files[i], msg + n);
    }
    return sl_error_set(e, 0, "streaming TLS: %s", msg ? msg : sl_strerror(rc));
}

static int start_stream(sluiced *d, sl_error *e)
{
    sl_server_config sc;
    stream_config(&d->cfg, &sc);
    int rc = sl_server_new(d->loop, &sc, sluiced_runtime(&d->cri), &d->stream);
    if (rc < 0)
        return sl_error_set(e, 0, "streaming server on %s port %u: %s", sc.address, sc.port,
                            sl_strerror(rc));
    if (stream_tls(d, e) < 0)
        return -1;
    if ((rc = sl_server_start(d->stream)) < 0) /* the message names libuv's cause */
        return sl_error_set(e, 0, "streaming server: %s", sl_server_errmsg(d->stream));
    d->cri.stream = d->stream;
    d->handoff = sl_stream_handoff_enable(d->stream, &d->cri.rt, &sc, d->cfg.pf_connect_timeout_ms);
    if (!d->handoff)
        return sl_error_set(e, ENOMEM, "streaming server");
    return 0;
}

static void grpc_config(sluiced *d, sl_grpc_config *gc)
{
    sl_grpc_config_init(gc);
    gc->methods = sl_cri_methods(&gc->nmethods);
    gc->arg = &d->cri;
    gc->max_recv_message = d->cfg.max_recv_message;
    gc->max_streams = d->cfg.max_grpc_streams;
    gc->max_connections = d->cfg.max_grpc_connections;
    gc->idle_timeout_ms = d->cfg.grpc_idle_timeout_ms;
    gc->max_stream_backlog = d->cfg.max_grpc_stream_backlog;
    gc->on_end = sl_calls_on_end;
    gc->on_end_arg = &d->calls;
}

static void report_fd_bound(const sluiced *d, uint32_t want)
{
    char w[16], got[16];
    if (sl_grpc_server_max_connections(d->grpc) >= want)
        return;
    snprintf(w, sizeof(w), "%u", want);
    snprintf(got, sizeof(got), "%u", sl_grpc_server_max_connections(d->grpc));
    sl_log(SL_LOG_WARN, "max-grpc-connections lowered to half the open-file limit", "wanted", w,
           "limit", got, NULL);
}

static int start_grpc(sluiced *d, sl_error *e)
{
    sl_grpc_config gc;
    grpc_config(d, &gc);
    if (sl_calls_init(&d->calls, gc.methods, gc.nmethods) < 0 ||
        sl_grpc_server_new(d->loop, &gc, &d->grpc) < 0)
        return sl_error_set(e, ENOMEM, "gRPC server");
    report_fd_bound(d, gc.max_connections);
    char *dir = strdup(d->cfg.socket_path);
    if (!dir)
        return sl_error_set(e, ENOMEM, "gRPC server");
    *strrchr(dir, '/') = '\0'; /* the path is absolute: there is a '/' */
    int rc = dir[0] ? sl_mkdir_p(dir, SOCKET_DIR_MODE, e) : 0;
    free(dir);
    if (rc == 0)
        rc = sl_grpc_server_listen(d->grpc, d->cfg.socket_path, SLUICED_SOCKET_MODE, e);
    if (rc < 0)
        return sl_error_wrap(e, "CRI endpoint %s", d->cfg.listen);
    d->listening = true;
    return 0;
}

/* ---- admin listener ---- */

static int admin_metrics(void *arg, char **text, size_t *len)
{
    sluiced *d = arg;
    return sl_daemon_metrics(&d->calls, &d->cri, d->grpc, text, len);
}

/* Ready: the CRI socket listens and the image store is open. */
static bool admin_ready(void *arg, char *why, size_t cap)
{
    sluiced *d = arg;
    if (d->stopping)
        snprintf(why, cap, "sluiced is stopping");
    else if (!d->listening)
        snprintf(why, cap, "the CRI socket is not listening yet");
    else if (!d->cri.rt.images)
        snprintf(why, cap, "the image store is not loaded yet");
    else
        return true;
    return false;
}

static int start_admin(sluiced *d, sl_error *e)
{
    if (!d->cfg.admin_listen[0])
        return 0;
    sl_admin_ops ops = {.metrics = admin_metrics, .ready = admin_ready, .arg = d};
    if (sl_admin_start(d->loop, d->cfg.admin_address, (uint16_t)d->cfg.admin_port, &ops, &d->admin,
                       e) < 0)
        return sl_error_wrap(e, "admin-listen %s", d->cfg.admin_listen);
    return 0;
}

/* ---- signals ---- */

static void one_closed(sluiced *d)
{
    if (--d->closing > 0)
        return;
    uv_close((uv_handle_t *)&d->sigint, NULL);
    uv_close((uv_handle_t *)&d->sigterm, NULL);
    uv_close((uv_handle_t *)&d->sighup, NULL);
}

static void grpc_closed(sl_grpc_server *s, void *arg)
{
    (void)s;
    one_closed(arg);
}

static void stream_closed(sl_server *s, void *arg)
{
    (void)s;
    one_closed(arg);
}

static void admin_closed(void *arg)
{
    sluiced *d = arg;
    d->admin = NULL;
    one_closed(d);
}

/* why: what asked for the stop, for the log line. */
static void stop(sluiced *d, const char *why)
{
    if (d->stopping)
        return;
    sl_log(SL_LOG_INFO, "stopping; pods and their monitors keep running", "cause", why, NULL);
    sl_notify_send(&d->notify, "STOPPING=1");
    uv_signal_stop(&d->sigint);
    uv_signal_stop(&d->sigterm);
    uv_signal_stop(&d->sighup);
    d->stopping = true;
    d->closing = 3;
    /* First, so that calls it ends are answered before the GOAWAY. The pod
     * monitors keep running (so do their containers); only our connections
     * to them close, so the loop can end. */
    sl_rt_detach(&d->cri.rt);
    sl_admin_close(d->admin, admin_closed, d);
    sl_grpc_server_close(d->grpc, grpc_closed, d);
    sl_server_close(d->stream, stream_closed, d);
}

static void stop_cb(uv_signal_t *h, int sig)
{
    stop(h->data, sig == SIGINT ? "SIGINT" : "SIGTERM");
}

/* The --import file could not be imported: sluiced stops. */
static void import_fatal(void *arg, const sl_error *e)
{
    sluiced *d = arg;
    sl_log(SL_LOG_ERROR, "the --import file could not be imported", "error", e->msg, NULL);
    fprintf(stderr, "sluiced: stopping: %s\n", e->msg);
    d->rc = 1;
    stop(d, "--import failed");
}

static void report_change(void *arg, const char *key, const char *was, const char *now,
                          bool applied)
{
    (void)arg;
    sl_log(applied ? SL_LOG_INFO : SL_LOG_WARN,
           applied ? "reload: applied" : "reload: changed, takes effect at the next start", "key",
           key, "was", was, "now", now, NULL);
}

/* Parses the same command line and file again and applies the live keys. */
static void reload_cb(uv_signal_t *h, int sig)
{
    (void)sig;
    sluiced *d = h->data;
    sl_notify_send(&d->notify, "RELOADING=1");
    sl_config fresh;
    sl_error e;
    sl_config_init(&fresh);
    if (sl_config_parse_args(&fresh, d->argc, d->argv, &e) != SL_CONFIG_RUN) {
        sl_log(SL_LOG_ERROR, "reload failed; the running configuration is kept", "error", e.msg,
               NULL);
    } else {
        size_t n = sl_config_reload(&d->cfg, &fresh, report_change, d);
        sl_grpc_config gc;
        grpc_config(d, &gc);
        sl_grpc_server_set_limits(d->grpc, &gc);
        d->cri.rt.events.max_subs = d->cfg.max_event_subscribers;
        char num[16];
        snprintf(num, sizeof(num), "%zu", n);
        /* Said at the old level, so a reload to "error" still shows. */
        sl_log(SL_LOG_INFO, "reloaded", "config", fresh.config_file, "applied", num, NULL);
        sl_log_set_level(d->cfg.log_level);
    }
    sl_config_fini(&fresh);
    sl_notify_send(&d->notify, "READY=1");
}

static void start_signals(sluiced *d)
{
    uv_signal_init(d->loop, &d->sigint);
    uv_signal_init(d->loop, &d->sigterm);
    uv_signal_init(d->loop, &d->sighup);
    d->sigint.data = d->sigterm.data = d->sighup.data = d;
    uv_signal_start(&d->sigint, stop_cb, SIGINT);
    uv_signal_start(&d->sigterm, stop_cb, SIGTERM);
    uv_signal_start(&d->sighup, reload_cb, SIGHUP);
}

/* ---- run ---- */

static void announce(sluiced *d)
{
    const char *base = sl_server_base_url(d->stream);
    char admin[96] = "";
    if (d->admin)
        snprintf(admin, sizeof(admin), "http://%s%s%s:%u/",
                 strchr(d->cfg.admin_address, ':') ? "[" : "", d->cfg.admin_address,
                 strchr(d->cfg.admin_address, ':') ? "]" : "", sl_admin_port(d->admin));
    /* The banner (stdout) is what scripts wait for. */
    printf("sluiced: CRI on %s streaming on %s\n", d->cfg.listen, base);
    fflush(stdout);
    sl_log(SL_LOG_INFO, "sluiced ready", "version", SLUICE_VERSION, "cri", d->cfg.listen, "stream",
           base, "admin", admin[0] ? admin : NULL, "config", d->cfg.config_file, "log_level",
           sl_log_level_name(d->cfg.log_level), NULL);
    char state[512];
    snprintf(state, sizeof(state), "READY=1\nSTATUS=CRI on %s, streaming on %s", d->cfg.listen,
             base);
    if (sl_notify_send(&d->notify, state) < 0)
        sl_log(SL_LOG_WARN, "cannot tell systemd we are ready", "error", strerror(errno), NULL);
}

static int run(sluiced *d)
{
    sl_error e;
    sl_error_clear(&e);
    if (sl_cri_init(&d->cri, d->loop, &d->cfg, &e) < 0 || start_stream(d, &e) < 0 ||
        start_grpc(d, &e) < 0 || start_admin(d, &e) < 0) {
        sl_log(SL_LOG_ERROR, "start failed", "error", e.msg, NULL);
        fprintf(stderr, "sluiced: %s\n", e.msg);
        return 1;
    }
    start_signals(d);
    announce(d);
    sl_rt_start_imports(&d->cri.rt, import_fatal, d); /* the socket is up: calls are served */
    uv_run(d->loop, UV_RUN_DEFAULT);
    sl_log(SL_LOG_INFO, "stopped", NULL);
    return d->rc;
}

/* Closes whatever a failed start left open so the loop can be closed. */
static void cleanup(sluiced *d)
{
    if (!d->stopping) {
        if (d->grpc)
            sl_grpc_server_close(d->grpc, NULL, NULL);
        if (d->stream)
            sl_server_close(d->stream, NULL, NULL);
        sl_admin_close(d->admin, NULL, NULL);
        uv_run(d->loop, UV_RUN_DEFAULT);
    }
    sl_grpc_server_free(d->grpc);
    sl_server_free(d->stream);
    sl_stream_handoff_free(d->handoff);
    sl_cri_fini(&d->cri);
    sl_calls_fini(&d->calls);
    if (uv_loop_close(d->loop) != 0)
        sl_log(SL_LOG_ERROR, "handles left open at exit", NULL);
}

int main(int argc, char **argv)
{
    sluiced d;
    sl_error e;
    memset(&d, 0, sizeof(d));
    sl_error_clear(&e);
    signal(SIGPIPE, SIG_IGN);
    sl_config_init(&d.cfg);
    int what = sl_config_parse_args(&d.cfg, argc, argv, &e);
    if (what == SL_CONFIG_HELP) {
        sl_config_usage(stdout, "sluiced");
    } else if (what == SL_CONFIG_VERSION) {
        printf("sluiced %s\n", SLUICE_VERSION);
    } else if (what < 0) {
        fprintf(stderr, "sluiced: %s\n", e.msg);
    }
    if (what != SL_CONFIG_RUN) {
        sl_config_fini(&d.cfg);
        return what < 0 ? 2 : 0;
    }
    d.argc = argc;
    d.argv = argv;
    sl_log_setup(2, sl_log_is_journal(2));
    sl_log_set_level(d.cfg.log_level);
    if (!sl_notify_init(&d.notify))
        sl_log(SL_LOG_WARN, "NOTIFY_SOCKET is not a unix socket path or @name; not notifying",
               NULL);
    sl_raise_nofile();
    d.loop = uv_default_loop();
    int rc = run(&d);
    cleanup(&d);
    sl_config_fini(&d.cfg);
    return rc;
}
