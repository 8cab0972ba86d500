/* sluice-kube: options, start-up, signals, and --print-kubeconfig. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grpc/api.pb-c.h"
#include "io/base64.h"
#include "kube.h"
#include "tls.h"

#define MAX_CERT_FILE (64u * 1024)

static void usage(FILE *f)
{
    fprintf(
        f,
        "Usage: sluice-kube [options]\n"
        "A Kubernetes API front (pods get/list, logs, exec, attach, port-forward) over\n"
        "any CRI runtime, for kubectl and other Kubernetes clients.\n\n"
        "  --address ADDR             listen address (default %s)\n"
        "  --port PORT                listen port, 0 = any free one (default %d)\n"
        "  --runtime-endpoint EP      CRI endpoint (default %s)\n"
        "  --token TOKEN              require \"Authorization: Bearer TOKEN\"\n"
        "  --tls                      serve HTTPS with a self-signed certificate made at start\n"
        "  --cert PATH                where that certificate is written (default %s)\n"
        "  --node-name NAME           spec.nodeName of the pods (default: host name)\n"
        "  --print-kubeconfig         print a kubeconfig for a front started with the same\n"
        "                             --address/--port/--token/--tls/--cert, and exit\n"
        "  -h, --help\n",
        SK_DEFAULT_ADDRESS, SK_DEFAULT_PORT, SK_DEFAULT_ENDPOINT, SK_DEFAULT_CERT_PATH);
}

typedef struct opts {
    sk_config cfg;
    bool print_kubeconfig;
    char node[256];
} opts;

static int parse_opts(int argc, char **argv, opts *o)
{
    static const struct option lo[] = {{"address", required_argument, 0, 'a'},
                                       {"port", required_argument, 0, 'p'},
                                       {"runtime-endpoint", required_argument, 0, 'r'},
                                       {"token", required_argument, 0, 't'},
                                       {"tls", no_argument, 0, 's'},
                                       {"cert", required_argument, 0, 'c'},
                                       {"node-name", required_argument, 0, 'n'},
                                       {"print-kubeconfig", no_argument, 0, 'k'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    o->cfg = (sk_config){SK_DEFAULT_ADDRESS,
                         SK_DEFAULT_PORT,
                         SK_DEFAULT_ENDPOINT,
                         NULL,
                         false,
                         SK_DEFAULT_CERT_PATH,
                         NULL};
    int ch;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        char *end;
        switch (ch) {
        case 'a':
            o->cfg.address = optarg;
            break;
        case 'p':
            o->cfg.port = (int)strtol(optarg, &end, 10);
            if (*end || o->cfg.port < 0 || o->cfg.port > 65535) {
                fprintf(stderr, "sluice-kube: bad --port %s\n", optarg);
                return -1;
            }
            break;
        case 'r':
            o->cfg.endpoint = optarg;
            break;
        case 't':
            o->cfg.token = *optarg ? optarg : NULL;
            break;
        case 's':
            o->cfg.tls = true;
            break;
        case 'c':
            o->cfg.cert_path = optarg;
            break;
        case 'n':
            o->cfg.node_name = optarg;
            break;
        case 'k':
            o->print_kubeconfig = true;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sluice-kube: unexpected argument %s\n", argv[optind]);
        return -1;
    }
    if (!o->cfg.node_name) {
        if (gethostname(o->node, sizeof o->node - 1) != 0)
            snprintf(o->node, sizeof o->node, "localhost");
        o->cfg.node_name = o->node;
    }
    return 0;
}

/* The host clients should dial for the listen address. */
static void server_url(const sk_config *cfg, int port, char *out, size_t len)
{
    const char *h = cfg->address;
    if (!strcmp(h, "0.0.0.0") || !*h)
        h = "127.0.0.1";
    else if (!strcmp(h, "::"))
        h = "::1";
    bool v6 = strchr(h, ':') != NULL;
    snprintf(out, len, "%s://%s%s%s:%d", cfg->tls ? "https" : "http", v6 ? "[" : "", h,
             v6 ? "]" : "", port);
}

static char *read_cert_b64(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    uint8_t *buf = malloc(MAX_CERT_FILE);
    size_t n = buf ? fread(buf, 1, MAX_CERT_FILE, f) : 0;
    fclose(f);
    char *out = n ? malloc(sl_base64_encoded_len(n, 0) + 1) : NULL;
    if (out)
        sl_base64_encode(out, buf, n, 0);
    free(buf);
    return out;
}

static int print_kubeconfig(const sk_config *cfg)
{
    char url[300];
    server_url(cfg, cfg->port, url, sizeof url);
    char *ca = NULL;
    if (cfg->tls && !(ca = read_cert_b64(cfg->cert_path))) {
        fprintf(stderr, "sluice-kube: cannot read %s (is the front running with --tls?)\n",
                cfg->cert_path);
        return 1;
    }
    printf("apiVersion: v1\nkind: Config\nclusters:\n- name: sluice\n  cluster:\n"
           "    server: %s\n",
           url);
    if (ca)
        printf("    certificate-authority-data: %s\n", ca);
    printf("contexts:\n- name: sluice\n  context:\n    cluster: sluice\n    user: sluice\n"
           "    namespace: default\ncurrent-context: sluice\nusers:\n- name: sluice\n  user:");
    if (cfg->token)
        printf("\n    token: %s\n", cfg->token);
    else
        printf(" {}\n");
    free(ca);
    return 0;
}

/* The runtime's name for containerID ("containerd://..."). */
static void runtime_name(sk_server *srv)
{
    snprintf(srv->runtime_name, sizeof srv->runtime_name, "cri");
    sl_cri_err err;
    sl_cri_client *cli = sk_cri_get(srv, &err);
    Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
    Runtime__V1__VersionResponse *r = NULL;
    if (cli && sl_cri_client_call(cli, "/runtime.v1.RuntimeService/Version", &req.base,
                                  &runtime__v1__version_response__descriptor,
                                  (ProtobufCMessage **)&r, SK_CRI_TIMEOUT_MS, &err) == 0) {
        if (r->runtime_name && *r->runtime_name)
            snprintf(srv->runtime_name, sizeof srv->runtime_name, "%s", r->runtime_name);
        protobuf_c_message_free_unpacked(&r->base, NULL);
    } else {
        fprintf(stderr, "sluice-kube: warning: CRI Version on %s: %s\n", srv->cfg.endpoint,
                err.msg);
    }
    sk_cri_put(srv, cli, !cli || err.local);
}

static void on_connection(uv_stream_t *l, int status)
{
    sk_server *srv = l->data;
    if (status == 0 && !srv->stopping)
        sk_conn_accept(srv);
}

static void stop_cb(uv_signal_t *s, int signum)
{
    sk_server *srv = s->data;
    (void)signum;
    if (srv->stopping)
        return;
    srv->stopping = true;
    uv_close((uv_handle_t *)&srv->listener, NULL);
    sk_conn_close_all(srv);
    uv_close((uv_handle_t *)&srv->sigint, NULL);
    uv_close((uv_handle_t *)&srv->sigterm, NULL);
}

static int listen_on(sk_server *srv)
{
    struct sockaddr_storage ss;
    const char *a = srv->cfg.address;
    if (uv_ip4_addr(a, srv->cfg.port, (struct sockaddr_in *)&ss) != 0 &&
        uv_ip6_addr(a, srv->cfg.port, (struct sockaddr_in6 *)&ss) != 0) {
        fprintf(stderr, "sluice-kube: --address %s is not an IP address\n", a);
        return -1;
    }
    uv_tcp_init(srv->loop, &srv->listener);
    srv->listener.data = srv;
    int rc = uv_tcp_bind(&srv->listener, (struct sockaddr *)&ss, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&srv->listener, 128, on_connection);
    if (rc != 0) {
        fprintf(stderr, "sluice-kube: listen on %s:%d: %s\n", a, srv->cfg.port, uv_strerror(rc));
        return -1;
    }
    struct sockaddr_storage bound;
    int len = sizeof bound;
    uv_tcp_getsockname(&srv->listener, (struct sockaddr *)&bound, &len);
    srv->bound_port =
        ntohs(bound.ss_family == AF_INET ? ((struct sockaddr_in *)&bound)->sin_port
                                         : ((struct sockaddr_in6 *)&bound)->sin6_port);
    return 0;
}

static int serve(sk_server *srv)
{
    char err[512];
    if (srv->cfg.tls &&
        !(srv->ssl_ctx = sk_tls_ctx_new(srv->cfg.address, srv->cfg.cert_path, err, sizeof err))) {
        fprintf(stderr, "sluice-kube: %s\n", err);
        return 1;
    }
    runtime_name(srv);
    if (listen_on(srv) < 0)
        return 1;
    uv_signal_init(srv->loop, &srv->sigint);
    uv_signal_init(srv->loop, &srv->sigterm);
    srv->sigint.data = srv->sigterm.data = srv;
    uv_signal_start(&srv->sigint, stop_cb, SIGINT);
    uv_signal_start(&srv->sigterm, stop_cb, SIGTERM);
    char url[300];
    server_url(&srv->cfg, srv->bound_port, url, sizeof url);
    printf("sluice-kube: serving %s for %s on %s\n", url, srv->runtime_name, srv->cfg.endpoint);
    fflush(stdout);
    uv_run(srv->loop, UV_RUN_DEFAULT);
    return 0;
}

int main(int argc, char **argv)
{
    opts o;
    memset(&o, 0, sizeof o);
    if (parse_opts(argc, argv, &o) < 0)
        return 2;
    if (o.print_kubeconfig)
        return print_kubeconfig(&o.cfg);
    signal(SIGPIPE, SIG_IGN);
    json_object_seed(0); /* before any thread builds JSON */
    static sk_server srv;
    srv.loop = uv_default_loop();
    srv.cfg = o.cfg;
    pthread_mutex_init(&srv.pool_lock, NULL);
    int rc = serve(&srv);
    sk_cri_pool_free(&srv);
    sk_tls_ctx_free(srv.ssl_ctx);
    uv_loop_close(srv.loop);
    return rc;
}
