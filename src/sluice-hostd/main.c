/* sluice-hostd: the libsluice streaming server with the host-process
 * backend and an admin endpoint that stands in for the CRI calls. For the
 * demo and the interop tests; sluiced is the product runtime. */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "hostproc.h"
#include "sluice/limits.h"
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
            "  --address ADDR                 streaming listen address (default %s)\n"
            "  --port N                       streaming port, 0 = any (default %d)\n"
            "  --base-path PATH               URL base path (default /)\n"
            "  --advertise HOST:PORT          host:port written into URLs\n"
            "  --admin-address ADDR           admin listen address (default 127.0.0.1)\n"
            "  --admin-port N                 admin port, 0 = any (default %d)\n"
            "  --container ID=CMD             attach target: runs /bin/sh -c CMD per session\n"
            "  --tty-container ID=CMD         the same with a terminal\n",
            SL_DEFAULT_ADDRESS, SL_DEFAULT_PORT, DEFAULT_ADMIN_PORT);
#define USAGE_LIMIT(field, key, flag, arg, def, min, max, scope, help)                             \
    fprintf(f, "  --%-28s %s (default %llu)\n", flag " " arg, help, (unsigned long long)(def));
    SL_SERVER_LIMITS(USAGE_LIMIT)
#undef USAGE_LIMIT
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
    O_CONT,
    O_TTYCONT,
    O_LIMIT /* O_LIMIT + L_field: the limits of sluice/limits.h */
};

#define LIMIT_INDEX(field, key, flag, arg, def, min, max, scope, help) L_##field,
enum { SL_SERVER_LIMITS(LIMIT_INDEX) L_COUNT };
#undef LIMIT_INDEX

/* Where each limit goes and what it may be. */
typedef struct limit_opt {
    const char *flag;
    size_t off, size;
    unsigned long long min, max;
} limit_opt;

#define LIMIT_OPT(field, key, flag, arg, def, min, max, scope, help)                               \
    {flag, offsetof(sl_server_config, field), sizeof(((sl_server_config *)0)->field), min, max},
static const limit_opt limit_opts[] = {SL_SERVER_LIMITS(LIMIT_OPT)};
#undef LIMIT_OPT

static const struct option long_opts[] = {
    {"address", 1, 0, O_ADDRESS},
    {"port", 1, 0, O_PORT},
    {"base-path", 1, 0, O_BASE},
    {"advertise", 1, 0, O_ADV},
    {"admin-address", 1, 0, O_AADDR},
    {"admin-port", 1, 0, O_APORT},
    {"container", 1, 0, O_CONT},
    {"tty-container", 1, 0, O_TTYCONT},
#define LIMIT_LONGOPT(field, key, flag, arg, def, min, max, scope, help)                           \
    {flag, 1, 0, O_LIMIT + L_##field},
    SL_SERVER_LIMITS(LIMIT_LONGOPT)
#undef LIMIT_LONGOPT
        {"help", 0, 0, 'h'},
    {0, 0, 0, 0},
};

/* A limit, within its range; the message names the flag. */
static int set_limit(hostd *d, const limit_opt *l, const char *arg)
{
    unsigned long long v;
    char *end;
    errno = 0;
    v = strtoull(arg, &end, 10);
    if (!*arg || *end || *arg == '-' || errno || v < l->min || v > l->max) {
        fprintf(stderr, "sluice-hostd: --%s: \"%s\" is not a number in %llu..%llu\n", l->flag, arg,
                l->min, l->max);
        return -1;
    }
    char *dst = (char *)&d->cfg + l->off;
    if (l->size == 8)
        *(uint64_t *)(void *)dst = v;
    else
        *(uint32_t *)(void *)dst = (uint32_t)v;
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
    case O_CONT:
        return add_container(d, arg, false);
    case O_TTYCONT:
        return add_container(d, arg, true);
    case 'h':
        usage(stdout);
        exit(0);
    default:
        if (o >= O_LIMIT && o < O_LIMIT + L_COUNT)
            return set_limit(d, &limit_opts[o - O_LIMIT], arg);
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
    int o, rc = 0;
    while (rc == 0 && (o = getopt_long(argc, argv, "h", long_opts, NULL)) != -1)
        if (parse_opt(&d, o, optarg) < 0)
            rc = 2;
    if (rc == 0 && optind < argc) {
        usage(stderr);
        rc = 2;
    }
    if (rc == 0)
        rc = run(&d);
    if (d.server)
        sl_server_free(d.server);
    sl_hostproc_free(d.hp);
    return rc;
}
