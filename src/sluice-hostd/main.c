/* sluice-hostd: the libsluice streaming server with the host-process
 * backend and an admin endpoint that stands in for the CRI calls. For the
 * demo and the interop tests; sluiced is the product runtime. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "hostproc.h"
#include "sluice/server.h"

#define DEFAULT_ADMIN_PORT 10011

typedef struct hostd {
    uv_loop_t *loop;
    sl_server_config cfg;
    const char *admin_address;
    uint16_t admin_port;
    sl_hostproc *hp;
    sl_server *server;
    sl_admin admin;
    uv_signal_t sigint, sigterm;
    uv_timer_t reap;
} hostd;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sluice-hostd [options]\n"
            "  --address ADDR            streaming listen address (default %s)\n"
            "  --port N                  streaming port, 0 = any (default %d)\n"
            "  --base-path PATH          URL base path (default /)\n"
            "  --advertise HOST:PORT     host:port written into URLs\n"
            "  --admin-address ADDR      admin listen address (default 127.0.0.1)\n"
            "  --admin-port N            admin port, 0 = any (default %d)\n"
            "  --token-ttl-ms N          token lifetime (default %u)\n"
            "  --max-pending-tokens N    un-consumed tokens at most (default %u)\n"
            "  --idle-timeout-ms N       session idle timeout (default %llu)\n"
            "  --head-timeout-ms N       request head timeout (default %u)\n"
            "  --creation-timeout-ms N   SPDY stream creation timeout (default %u)\n"
            "  --max-request-line N      bytes (default %u)\n"
            "  --max-headers N           header fields (default %u)\n"
            "  --max-head-size N         bytes (default %u)\n"
            "  --max-ws-message N        bytes (default %u)\n"
            "  --max-sessions N          concurrent sessions (default %u)\n"
            "  --max-connections N       open connections, beyond: 503 (default %u)\n"
            "  --keepalive-idle-ms N     TCP keepalive after this silence, 0 = off (default %u)\n"
            "  --keepalive-interval-ms N between keepalive probes (default %u)\n"
            "  --keepalive-count N       unanswered probes that end it (default %u)\n"
            "  --tty-size-wait-ms N      a tty session waits this long for its size (default %u)\n"
            "  --container ID=CMD        attach target: runs /bin/sh -c CMD per session\n"
            "  --tty-container ID=CMD    the same with a terminal\n",
            SL_DEFAULT_ADDRESS, SL_DEFAULT_PORT, DEFAULT_ADMIN_PORT, SL_DEFAULT_TOKEN_TTL_MS,
            SL_DEFAULT_MAX_PENDING_TOKENS, (unsigned long long)SL_DEFAULT_IDLE_TIMEOUT_MS,
            SL_DEFAULT_HEAD_TIMEOUT_MS, SL_DEFAULT_CREATION_TIMEOUT_MS, SL_DEFAULT_MAX_REQUEST_LINE,
            SL_DEFAULT_MAX_HEADERS, SL_DEFAULT_MAX_HEAD_SIZE, SL_DEFAULT_MAX_WS_MESSAGE,
            SL_DEFAULT_MAX_SESSIONS, SL_DEFAULT_MAX_CONNECTIONS, SL_DEFAULT_KEEPALIVE_IDLE_MS,
            SL_DEFAULT_KEEPALIVE_INTERVAL_MS, SL_DEFAULT_KEEPALIVE_COUNT,
            SL_DEFAULT_TTY_SIZE_WAIT_MS);
}

static int number(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || v > max) {
        fprintf(stderr, "sluice-hostd: invalid number '%s'\n", s);
        return -1;
    }
    *out = v;
    return 0;
}

static int add_container(hostd *d, const char *spec, bool tty)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec) {
        fprintf(stderr, "sluice-hostd: --container wants ID=CMD, got '%s'\n", spec);
        return -1;
    }
    char id[256];
    snprintf(id, sizeof(id), "%.*s", (int)(eq - spec), spec);
    const char *argv[] = {"/bin/sh", "-c", eq + 1, NULL};
    return sl_hostproc_add_container(d->hp, id, argv, tty);
}

enum {
    O_ADDRESS = 256,
    O_PORT,
    O_BASE,
    O_ADV,
    O_AADDR,
    O_APORT,
    O_TTL,
    O_MAXTOK,
    O_IDLE,
    O_HEADTO,
    O_CREATETO,
    O_MAXLINE,
    O_MAXHDR,
    O_MAXHEAD,
    O_MAXWS,
    O_MAXSESS,
    O_MAXCONNS,
    O_KAIDLE,
    O_KAINTVL,
    O_KACNT,
    O_TTYWAIT,
    O_CONT,
    O_TTYCONT
};

static const struct option long_opts[] = {
    {"address", 1, 0, O_ADDRESS},
    {"port", 1, 0, O_PORT},
    {"base-path", 1, 0, O_BASE},
    {"advertise", 1, 0, O_ADV},
    {"admin-address", 1, 0, O_AADDR},
    {"admin-port", 1, 0, O_APORT},
    {"token-ttl-ms", 1, 0, O_TTL},
    {"max-pending-tokens", 1, 0, O_MAXTOK},
    {"idle-timeout-ms", 1, 0, O_IDLE},
    {"head-timeout-ms", 1, 0, O_HEADTO},
    {"creation-timeout-ms", 1, 0, O_CREATETO},
    {"max-request-line", 1, 0, O_MAXLINE},
    {"max-headers", 1, 0, O_MAXHDR},
    {"max-head-size", 1, 0, O_MAXHEAD},
    {"max-ws-message", 1, 0, O_MAXWS},
    {"max-sessions", 1, 0, O_MAXSESS},
    {"max-connections", 1, 0, O_MAXCONNS},
    {"keepalive-idle-ms", 1, 0, O_KAIDLE},
    {"keepalive-interval-ms", 1, 0, O_KAINTVL},
    {"keepalive-count", 1, 0, O_KACNT},
    {"tty-size-wait-ms", 1, 0, O_TTYWAIT},
    {"container", 1, 0, O_CONT},
    {"tty-container", 1, 0, O_TTYCONT},
    {"help", 0, 0, 'h'},
    {0, 0, 0, 0},
};

static int set_u32(uint32_t *dst, const char *s)
{
    unsigned long long v;
    if (number(s, UINT32_MAX, &v) < 0)
        return -1;
    *dst = (uint32_t)v;
    return 0;
}

static int parse_opt(hostd *d, int o, const char *arg)
{
    unsigned long long v;
    switch (o) {
    case O_ADDRESS:
        d->cfg.address = arg;
        return 0;
    case O_BASE:
        d->cfg.base_path = arg;
        return 0;
    case O_ADV:
        d->cfg.advertise_host = arg;
        return 0;
    case O_AADDR:
        d->admin_address = arg;
        return 0;
    case O_PORT:
    case O_APORT:
        if (number(arg, 65535, &v) < 0)
            return -1;
        *(o == O_PORT ? &d->cfg.port : &d->admin_port) = (uint16_t)v;
        return 0;
    case O_IDLE:
        if (number(arg, UINT64_MAX, &v) < 0)
            return -1;
        d->cfg.idle_timeout_ms = v;
        return 0;
    case O_TTL:
        return set_u32(&d->cfg.token_ttl_ms, arg);
    case O_MAXTOK:
        return set_u32(&d->cfg.max_pending_tokens, arg);
    case O_HEADTO:
        return set_u32(&d->cfg.head_timeout_ms, arg);
    case O_CREATETO:
        return set_u32(&d->cfg.creation_timeout_ms, arg);
    case O_MAXLINE:
        return set_u32(&d->cfg.max_request_line, arg);
    case O_MAXHDR:
        return set_u32(&d->cfg.max_headers, arg);
    case O_MAXHEAD:
        return set_u32(&d->cfg.max_head_size, arg);
    case O_MAXWS:
        return set_u32(&d->cfg.max_ws_message, arg);
    case O_MAXSESS:
        return set_u32(&d->cfg.max_sessions, arg);
    case O_MAXCONNS:
        return set_u32(&d->cfg.max_connections, arg);
    case O_KAIDLE:
        return set_u32(&d->cfg.keepalive_idle_ms, arg);
    case O_KAINTVL:
        return set_u32(&d->cfg.keepalive_interval_ms, arg);
    case O_KACNT:
        return set_u32(&d->cfg.keepalive_count, arg);
    case O_TTYWAIT:
        return set_u32(&d->cfg.tty_size_wait_ms, arg);
    case O_CONT:
        return add_container(d, arg, false);
    case O_TTYCONT:
        return add_container(d, arg, true);
    case 'h':
        usage(stdout);
        exit(0);
    default:
        usage(stderr);
        return -1;
    }
}

static void reap_cb(uv_timer_t *t)
{
    hostd *d = t->data;
    if (sl_hostproc_running(d->hp) > 0)
        return;
    /* Every child is reaped: close the last handles so the loop ends. */
    uv_close((uv_handle_t *)&d->reap, NULL);
    uv_close((uv_handle_t *)&d->sigint, NULL);
    uv_close((uv_handle_t *)&d->sigterm, NULL);
}

static void server_closed(sl_server *s, void *arg)
{
    (void)s;
    hostd *d = arg;
    uv_timer_start(&d->reap, reap_cb, 0, 50);
}

static void signal_cb(uv_signal_t *h, int sig)
{
    (void)sig;
    hostd *d = h->data;
    uv_signal_stop(&d->sigint);
    uv_signal_stop(&d->sigterm);
    sl_admin_close(&d->admin);
    sl_server_close(d->server, server_closed, d);
}

static int run(hostd *d)
{
    int rc = sl_server_new(d->loop, &d->cfg, sl_hostproc_runtime(d->hp), &d->server);
    if (rc == 0)
        rc = sl_server_start(d->server);
    if (rc < 0) {
        fprintf(stderr, "sluice-hostd: cannot start the streaming server on %s:%u: %s\n",
                d->cfg.address, d->cfg.port,
                d->server && *sl_server_errmsg(d->server) ? sl_server_errmsg(d->server)
                                                          : sl_strerror(rc));
        return 1;
    }
    d->admin.server = d->server;
    d->admin.hp = d->hp;
    if (sl_admin_start(&d->admin, d->loop, d->admin_address, d->admin_port) < 0) {
        fprintf(stderr, "sluice-hostd: cannot listen on admin %s:%u\n", d->admin_address,
                d->admin_port);
        return 1;
    }
    printf("sluice-hostd: streaming on %s admin on http://%s:%u/\n", sl_server_base_url(d->server),
           d->admin_address, d->admin.port);
    fflush(stdout);
    uv_signal_init(d->loop, &d->sigint);
    uv_signal_init(d->loop, &d->sigterm);
    uv_timer_init(d->loop, &d->reap);
    d->sigint.data = d->sigterm.data = d->reap.data = d;
    uv_signal_start(&d->sigint, signal_cb, SIGINT);
    uv_signal_start(&d->sigterm, signal_cb, SIGTERM);
    uv_run(d->loop, UV_RUN_DEFAULT);
    return 0;
}

int main(int argc, char **argv)
{
    hostd d;
    memset(&d, 0, sizeof(d));
    signal(SIGPIPE, SIG_IGN);
    d.loop = uv_default_loop();
    sl_server_config_init(&d.cfg);
    d.admin_address = "127.0.0.1";
    d.admin_port = DEFAULT_ADMIN_PORT;
    d.hp = sl_hostproc_new(d.loop);
    if (!d.hp)
        return 1;
    int o;
    while ((o = getopt_long(argc, argv, "h", long_opts, NULL)) != -1)
        if (parse_opt(&d, o, optarg) < 0)
            return 2;
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    int rc = run(&d);
    if (d.server)
        sl_server_free(d.server);
    sl_hostproc_free(d.hp);
    return rc;
}
