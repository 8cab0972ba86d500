/* sluiced: the sluice CRI runtime daemon. One libuv loop serves the CRI
 * gRPC API on a unix socket and the libsluice streaming server on TCP. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "cri/service.h"
#include "cri/sluice_version.h"
#include "fsutil.h"
#include "grpc/grpc_server.h"
#include "sluice/server.h"

/* Mode of directories sluiced creates for its socket. */
#define SOCKET_DIR_MODE 0755

typedef struct sluiced {
    uv_loop_t *loop;
    sl_config cfg;
    sl_cri cri;
    sl_server *stream;
    sl_grpc_server *grpc;
    uv_signal_t sigint, sigterm;
    bool stopping; /* close requested */
    int closing;   /* servers still closing */
    int rc;        /* the exit status */
} sluiced;

static void stream_config(const sl_config *c, sl_server_config *s)
{
    sl_server_config_init(s);
    s->address = c->stream_address;
    s->port = (uint16_t)c->stream_port;
    s->base_path = c->stream_base_path;
    s->advertise_host = c->stream_advertise[0] ? c->stream_advertise : NULL;
    s->token_ttl_ms = c->token_ttl_ms;
    s->max_pending_tokens = c->max_pending_tokens;
    s->idle_timeout_ms = c->idle_timeout_ms;
    s->head_timeout_ms = c->head_timeout_ms;
    s->max_request_line = c->max_request_line;
    s->max_headers = c->max_headers;
    s->max_head_size = c->max_head_size;
    s->max_ws_message = c->max_ws_message;
    s->max_sessions = c->max_sessions;
    s->keepalive_idle_ms = c->keepalive_idle_ms;
    s->keepalive_interval_ms = c->keepalive_interval_ms;
    s->keepalive_count = c->keepalive_count;
    s->tty_size_wait_ms = c->tty_size_wait_ms;
}

static int start_stream(sluiced *d, sl_error *e)
{
    sl_server_config sc;
    stream_config(&d->cfg, &sc);
    int rc = sl_server_new(d->loop, &sc, sluiced_runtime(&d->cri), &d->stream);
    if (rc == SL_OK)
        rc = sl_server_start(d->stream);
    if (rc < 0)
        return sl_error_set(e, rc == SL_ERR_SYS ? errno : 0, "streaming server on %s port %u: %s",
                            sc.address, sc.port, sl_strerror(rc));
    d->cri.stream = d->stream;
    return 0;
}

static int start_grpc(sluiced *d, sl_error *e)
{
    sl_grpc_config gc;
    sl_grpc_config_init(&gc);
    gc.methods = sl_cri_methods(&gc.nmethods);
    gc.arg = &d->cri;
    gc.max_recv_message = d->cfg.max_recv_message;
    gc.max_streams = d->cfg.max_grpc_streams;
    gc.max_connections = d->cfg.max_grpc_connections;
    gc.idle_timeout_ms = d->cfg.grpc_idle_timeout_ms;
    gc.max_stream_backlog = d->cfg.max_grpc_stream_backlog;
    if (sl_grpc_server_new(d->loop, &gc, &d->grpc) < 0)
        return sl_error_set(e, ENOMEM, "gRPC server");
    if (sl_grpc_server_max_connections(d->grpc) < gc.max_connections)
        fprintf(stderr,
                "sluiced: max-grpc-connections %u lowered to %u (half the open-file limit)\n",
                gc.max_connections, sl_grpc_server_max_connections(d->grpc));
    char *dir = strdup(d->cfg.socket_path);
    if (!dir)
        return sl_error_set(e, ENOMEM, "gRPC server");
    *strrchr(dir, '/') = '\0'; /* the path is absolute: there is a '/' */
    int rc = dir[0] ? sl_mkdir_p(dir, SOCKET_DIR_MODE, e) : 0;
    free(dir);
    if (rc == 0)
        rc = sl_grpc_server_listen(d->grpc, d->cfg.socket_path, SLUICED_SOCKET_MODE, e);
    return rc < 0 ? sl_error_wrap(e, "CRI endpoint %s", d->cfg.listen) : 0;
}

static void one_closed(sluiced *d)
{
    if (--d->closing > 0)
        return;
    uv_close((uv_handle_t *)&d->sigint, NULL);
    uv_close((uv_handle_t *)&d->sigterm, NULL);
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

static void stop(sluiced *d)
{
    if (d->stopping)
        return;
    uv_signal_stop(&d->sigint);
    uv_signal_stop(&d->sigterm);
    d->stopping = true;
    d->closing = 2;
    /* First, so that calls it ends are answered before the GOAWAY. The pod
     * monitors keep running (so do their containers); only our connections
     * to them close, so the loop can end. */
    sl_rt_detach(&d->cri.rt);
    sl_grpc_server_close(d->grpc, grpc_closed, d);
    sl_server_close(d->stream, stream_closed, d);
}

static void signal_cb(uv_signal_t *h, int sig)
{
    (void)sig;
    stop(h->data);
}

/* The --import file could not be imported: sluiced stops. */
static void import_fatal(void *arg, const sl_error *e)
{
    sluiced *d = arg;
    fprintf(stderr, "sluiced: stopping: %s\n", e->msg);
    d->rc = 1;
    stop(d);
}

static int run(sluiced *d)
{
    sl_error e;
    sl_error_clear(&e);
    if (sl_cri_init(&d->cri, d->loop, &d->cfg, &e) < 0 || start_stream(d, &e) < 0 ||
        start_grpc(d, &e) < 0) {
        fprintf(stderr, "sluiced: %s\n", e.msg);
        return 1;
    }
    printf("sluiced: CRI on %s streaming on %s\n", d->cfg.listen, sl_server_base_url(d->stream));
    fflush(stdout);
    uv_signal_init(d->loop, &d->sigint);
    uv_signal_init(d->loop, &d->sigterm);
    d->sigint.data = d->sigterm.data = d;
    uv_signal_start(&d->sigint, signal_cb, SIGINT);
    uv_signal_start(&d->sigterm, signal_cb, SIGTERM);
    sl_rt_start_imports(&d->cri.rt, import_fatal, d); /* the socket is up: calls are served */
    uv_run(d->loop, UV_RUN_DEFAULT);
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
        uv_run(d->loop, UV_RUN_DEFAULT);
    }
    sl_grpc_server_free(d->grpc);
    sl_server_free(d->stream);
    sl_cri_fini(&d->cri);
    if (uv_loop_close(d->loop) != 0)
        fprintf(stderr, "sluiced: handles left open at exit\n");
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
    sl_raise_nofile();
    d.loop = uv_default_loop();
    int rc = run(&d);
    cleanup(&d);
    sl_config_fini(&d.cfg);
    return rc;
}
