/* sluice-kube: options, start-up, signals, and --print-kubeconfig. */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grpc/api.pb-c.h"
#include "fsutil.h"
#include "util/base64.h"
#include "kube.h"
#include "tls.h"

#define MAX_CERT_FILE (64u * 1024)

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: sluice-kube [options]\n"
            "A Kubernetes API front (pods get/list, logs, exec, attach, port-forward) over\n"
            "any CRI runtime, for kubectl and other Kubernetes clients.\n\n"
            "  --address ADDR             listen address (default %s)\n"
            "  --port PORT                listen port, 0 = any free one (default %d)\n"
            "  --runtime-endpoint EP      CRI endpoint (default %s)\n"
            "  --token-file PATH          require \"Authorization: Bearer TOKEN\", TOKEN read\n"
            "                             from PATH (also: $%s)\n"
            "  --token TOKEN              the same, from the command line (shows in ps)\n"
            "  --tls                      serve HTTPS with a self-signed certificate, made on\n"
            "                             first start and kept in --cert-dir\n"
            "  --cert-dir DIR             serving.crt and serving.key (default %s)\n"
            "  --cert PATH                that certificate elsewhere (key: PATH's .key twin)\n"
            "  --tls-cert-file PATH       serve HTTPS with this certificate (chain) instead\n"
            "  --tls-private-key-file PATH  and this key\n"
            "  --runtime-tls-ca-file PATH   trust these CAs for the runtime's https streaming\n"
            "                             URLs (default: the system's CAs)\n"
            "  --runtime-tls-cert-file PATH present this client certificate to the runtime's\n"
            "  --runtime-tls-key-file PATH  streaming server, with this key\n"
            "  --node-name NAME           spec.nodeName of the pods (default: host name)\n"
            "  --print-kubeconfig         print a kubeconfig for a front started with the same\n"
            "                             flags, and exit\n"
            "  -h, --help\n",
            SK_DEFAULT_ADDRESS, SK_DEFAULT_PORT, SK_DEFAULT_ENDPOINT, SK_TOKEN_ENV,
            SK_DEFAULT_CERT_DIR);
}

typedef struct opts {
    sk_config cfg;
    bool print_kubeconfig;
    bool token_flag;
    const char *token_file, *cert_dir, *cert_flag, *tls_cert, *tls_key;
    char node[256];
    char token[SK_TOKEN_MAX + 1];
    char cert[4096], key[4096];
} opts;

static int parse_port(const char *arg, int *port)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (!*arg || *end || v < 0 || v > 65535) {
        fprintf(stderr, "sluice-kube: bad --port %s\n", arg);
        return -1;
    }
    *port = (int)v;
    return 0;
}

static int take_opt(int ch, const char *arg, opts *o)
{
    switch (ch) {
    case 'a':
        o->cfg.address = arg;
        break;
    case 'p':
        return parse_port(arg, &o->cfg.port);
    case 'r':
        o->cfg.endpoint = arg;
        break;
    case 't':
        o->cfg.token = *arg ? arg : NULL;
        o->token_flag = true;
        break;
    case 'T':
        o->token_file = arg;
        break;
    case 's':
        o->cfg.tls = true;
        break;
    case 'c':
        o->cert_flag = arg;
        break;
    case 'd':
        o->cert_dir = arg;
        break;
    case 'C':
        o->tls_cert = arg;
        break;
    case 'K':
        o->tls_key = arg;
        break;
    case 'n':
        o->cfg.node_name = arg;
        break;
    case 'A':
        o->cfg.rt_ca_file = arg;
        break;
    case 'E':
        o->cfg.rt_cert_file = arg;
        break;
    case 'Y':
        o->cfg.rt_key_file = arg;
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
    return 0;
}

/* A token is one line of visible ASCII (it goes into a header). */
static bool token_ok(const char *t)
{
    for (; *t; t++)
        if ((unsigned char)*t <= 0x20 || (unsigned char)*t >= 0x7f)
            return false;
    return true;
}

static int read_token_file(opts *o)
{
    SL_AUTOFREE char *data = NULL;
    size_t len = 0;
    sl_error e;
    if (sl_read_file(o->token_file, SK_TOKEN_MAX, &data, &len, &e) < 0) {
        fprintf(stderr, "sluice-kube: --token-file %s: %s\n", o->token_file, e.msg);
        return -1;
    }
    while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r'))
        data[--len] = '\0';
    if (len == 0 || strlen(data) != len || !token_ok(data)) {
        fprintf(stderr, "sluice-kube: --token-file %s: not one line of visible characters\n",
                o->token_file);
        return -1;
    }
    memcpy(o->token, data, len + 1);
    o->cfg.token = o->token;
    return 0;
}

/* --token-file, else --token (warned: argv is world-readable), else the
 * environment. */
static int resolve_token(opts *o)
{
    if (o->token_file && o->token_flag) {
        fprintf(stderr, "sluice-kube: give --token-file or --token, not both\n");
        return -1;
    }
    if (o->token_file)
        return read_token_file(o);
    if (o->token_flag) {
        if (o->cfg.token && !o->print_kubeconfig)
            fprintf(stderr, "sluice-kube: warning: --token shows in ps and /proc/PID/cmdline; "
                            "use --token-file or $" SK_TOKEN_ENV "\n");
    } else {
        const char *env = getenv(SK_TOKEN_ENV);
        o->cfg.token = env && *env ? env : NULL;
    }
    if (o->cfg.token && !token_ok(o->cfg.token)) {
        fprintf(stderr, "sluice-kube: the token must be visible ASCII without spaces\n");
        return -1;
    }
    return 0;
}

/* Where the serving certificate and key are (see sk_tls_files). */
static int resolve_cert(opts *o)
{
    sk_config *c = &o->cfg;
    if (o->tls_cert || o->tls_key) {
        if (!o->tls_cert || !o->tls_key || o->cert_flag || o->cert_dir) {
            fprintf(stderr, "sluice-kube: --tls-cert-file and --tls-private-key-file go "
                            "together, without --cert/--cert-dir\n");
            return -1;
        }
        c->tls = c->tls_given = true;
        c->cert_path = o->tls_cert;
        c->key_path = o->tls_key;
        return 0;
    }
    if (o->cert_flag) {
        size_t n = strlen(o->cert_flag);
        bool crt = n > 4 && !strcmp(o->cert_flag + n - 4, ".crt");
        snprintf(o->cert, sizeof o->cert, "%s", o->cert_flag);
        snprintf(o->key, sizeof o->key, "%.*s.key", (int)(crt ? n - 4 : n), o->cert_flag);
    } else {
        const char *d = o->cert_dir ? o->cert_dir : SK_DEFAULT_CERT_DIR;
        snprintf(o->cert, sizeof o->cert, "%s/serving.crt", d);
        snprintf(o->key, sizeof o->key, "%s/serving.key", d);
    }
    c->cert_path = o->cert;
    c->key_path = o->key;
    return 0;
}

static int parse_opts(int argc, char **argv, opts *o)
{
    static const struct option lo[] = {{"address", required_argument, 0, 'a'},
                                       {"port", required_argument, 0, 'p'},
                                       {"runtime-endpoint", required_argument, 0, 'r'},
                                       {"token", required_argument, 0, 't'},
                                       {"token-file", required_argument, 0, 'T'},
                                       {"tls", no_argument, 0, 's'},
                                       {"cert", required_argument, 0, 'c'},
                                       {"cert-dir", required_argument, 0, 'd'},
                                       {"tls-cert-file", required_argument, 0, 'C'},
                                       {"tls-private-key-file", required_argument, 0, 'K'},
                                       {"node-name", required_argument, 0, 'n'},
                                       {"runtime-tls-ca-file", required_argument, 0, 'A'},
                                       {"runtime-tls-cert-file", required_argument, 0, 'E'},
                                       {"runtime-tls-key-file", required_argument, 0, 'Y'},
                                       {"print-kubeconfig", no_argument, 0, 'k'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    o->cfg.address = SK_DEFAULT_ADDRESS;
    o->cfg.port = SK_DEFAULT_PORT;
    o->cfg.endpoint = SK_DEFAULT_ENDPOINT;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1)
        if (take_opt(ch, optarg, o) < 0)
            return -1;
    if (optind < argc) {
        fprintf(stderr, "sluice-kube: unexpected argument %s\n", argv[optind]);
        return -1;
    }
    if (!o->cfg.rt_cert_file != !o->cfg.rt_key_file) {
        fprintf(stderr, "sluice-kube: --runtime-tls-cert-file and --runtime-tls-key-file go "
                        "together\n");
        return -1;
    }
    if (resolve_token(o) < 0 || resolve_cert(o) < 0)
        return -1;
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
        fprintf(stderr, "sluice-kube: cannot read %s (has the front run with --tls?)\n",
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
    sl_error err;
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
    sk_cri_put(srv, cli, !cli || sl_cri_is_local(&err));
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

static int tls_setup(sk_server *srv)
{
    char err[512], note[1024];
    sk_tls_files f = {srv->cfg.cert_path, srv->cfg.key_path, srv->cfg.tls_given};
    if (!(srv->ssl_ctx =
              sk_tls_ctx_new(&f, srv->cfg.address, err, sizeof err, note, sizeof note))) {
        fprintf(stderr, "sluice-kube: %s\n", err);
        return -1;
    }
    if (*note)
        printf("sluice-kube: %s\n", note);
    return 0;
}

static bool is_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

/* Says the address the listener really has; warns when it reaches beyond
 * this host without TLS or without a token. */
static void report_listener(sk_server *srv)
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    char ip[INET6_ADDRSTRLEN] = "?";
    uv_tcp_getsockname(&srv->listener, (struct sockaddr *)&ss, &len);
    if (ss.ss_family == AF_INET)
        uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof ip);
    else
        uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof ip);
    bool v6 = ss.ss_family == AF_INET6;
    printf("sluice-kube: listening on %s%s%s:%d\n", v6 ? "[" : "", ip, v6 ? "]" : "",
           srv->bound_port);
    if (is_loopback(&ss) || (srv->cfg.tls && srv->cfg.token))
        return;
    fprintf(
        stderr,
        "sluice-kube: warning: listening on %s%s%s:%d, beyond loopback, %s%s%s: anyone "
        "who reaches it can %s\n",
        v6 ? "[" : "", ip, v6 ? "]" : "", srv->bound_port, srv->cfg.tls ? "" : "without TLS",
        !srv->cfg.tls && !srv->cfg.token ? " and " : "", srv->cfg.token ? "" : "without a token",
        srv->cfg.token ? "read the token and every session on the wire" : "exec into every pod");
    fflush(stderr);
}

/* The client context for https streaming URLs, made at start so that a
 * bad flag is seen at once rather than at the first exec. */
static int runtime_tls_setup(sk_server *srv)
{
    char err[512];
    const sk_config *c = &srv->cfg;
    srv->rt_ssl_ctx =
        sk_tls_client_ctx_new(c->rt_ca_file, c->rt_cert_file, c->rt_key_file, err, sizeof err);
    if (!srv->rt_ssl_ctx)
        fprintf(stderr, "sluice-kube: %s\n", err);
    return srv->rt_ssl_ctx ? 0 : -1;
}

static int serve(sk_server *srv)
{
    if ((srv->cfg.tls && tls_setup(srv) < 0) || runtime_tls_setup(srv) < 0)
        return 1;
    runtime_name(srv);
    if (listen_on(srv) < 0)
        return 1;
    report_listener(srv);
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
    sk_tls_ctx_free(srv.rt_ssl_ctx);
    uv_loop_close(srv.loop);
    return rc;
}
