/* sluice-kube: start-up, signals, and --print-kubeconfig. Every failure
 * rises as an sl_error that main prints once, as "sluice-kube: ...". */
#include <arpa/inet.h>
#include <errno.h>
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
#include "opts.h"
#include "tls.h"

#define MAX_CERT_FILE (64u * 1024)

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

static char *read_cert_b64(const char *path, sl_error *e)
{
    SL_AUTOFREE char *buf = NULL;
    size_t n = 0;
    if (sl_read_file(path, MAX_CERT_FILE, &buf, &n, e) < 0)
        return NULL;
    if (n == 0) {
        sl_error_set(e, 0, "%s is empty", path);
        return NULL;
    }
    char *out = malloc(sl_base64_encoded_len(n, 0) + 1);
    if (!out) {
        sl_error_set(e, ENOMEM, "%s", path);
        return NULL;
    }
    sl_base64_encode(out, (const uint8_t *)buf, n, 0);
    return out;
}

static int print_kubeconfig(const sk_config *cfg, sl_error *e)
{
    char url[300];
    server_url(cfg, cfg->port, url, sizeof url);
    char *ca = NULL;
    if (cfg->tls && !(ca = read_cert_b64(cfg->cert_path, e)))
        return sl_error_wrap(e,
                             "cannot read the serving certificate (has the front run with --tls?)");
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

/* The runtime's name for containerID ("containerd://..."); "cri" and -1
 * with *e when the runtime does not answer Version. */
static int runtime_name(sk_server *srv, sl_error *e)
{
    snprintf(srv->runtime_name, sizeof srv->runtime_name, "cri");
    sl_cri_client *cli = sk_cri_get(srv, e);
    Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
    Runtime__V1__VersionResponse *r = NULL;
    if (!cli || sl_cri_client_call(cli, "/runtime.v1.RuntimeService/Version", &req.base,
                                   &runtime__v1__version_response__descriptor,
                                   (ProtobufCMessage **)&r, SK_CRI_TIMEOUT_MS, e) != SL_CRI_OK) {
        sk_cri_put(srv, cli, sl_cri_is_local(e));
        return sl_error_wrap(e, "CRI Version on %s", srv->cfg.endpoint);
    }
    if (r->runtime_name && *r->runtime_name)
        snprintf(srv->runtime_name, sizeof srv->runtime_name, "%s", r->runtime_name);
    protobuf_c_message_free_unpacked(&r->base, NULL);
    sk_cri_put(srv, cli, false);
    return 0;
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

static int listen_on(sk_server *srv, sl_error *e)
{
    struct sockaddr_storage ss;
    const char *a = srv->cfg.address;
    if (uv_ip4_addr(a, srv->cfg.port, (struct sockaddr_in *)&ss) != 0 &&
        uv_ip6_addr(a, srv->cfg.port, (struct sockaddr_in6 *)&ss) != 0)
        return sl_error_set(e, 0, "--address %s is not an IP address", a);
    uv_tcp_init(srv->loop, &srv->listener);
    srv->listener.data = srv;
    int rc = uv_tcp_bind(&srv->listener, (struct sockaddr *)&ss, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&srv->listener, 128, on_connection);
    if (rc != 0)
        return sl_error_set(e, -rc, "listen on %s:%d", a, srv->cfg.port); /* libuv: -errno */
    struct sockaddr_storage bound;
    int len = sizeof bound;
    uv_tcp_getsockname(&srv->listener, (struct sockaddr *)&bound, &len);
    srv->bound_port =
        ntohs(bound.ss_family == AF_INET ? ((struct sockaddr_in *)&bound)->sin_port
                                         : ((struct sockaddr_in6 *)&bound)->sin6_port);
    return 0;
}

static int tls_setup(sk_server *srv, sl_error *e)
{
    char note[1024];
    sk_tls_files f = {srv->cfg.cert_path, srv->cfg.key_path, srv->cfg.tls_given};
    if (!(srv->ssl_ctx = sk_tls_ctx_new(&f, srv->cfg.address, e, note, sizeof note)))
        return -1;
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
static int runtime_tls_setup(sk_server *srv, sl_error *e)
{
    const sk_config *c = &srv->cfg;
    srv->rt_ssl_ctx = sk_tls_client_ctx_new(c->rt_ca_file, c->rt_cert_file, c->rt_key_file, e);
    return srv->rt_ssl_ctx ? 0 : -1;
}

/* Serves until SIGINT or SIGTERM; -1 with *e when it cannot start. */
static int serve(sk_server *srv, sl_error *e)
{
    if ((srv->cfg.tls && tls_setup(srv, e) < 0) || runtime_tls_setup(srv, e) < 0)
        return -1;
    sl_error warn;
    if (runtime_name(srv, &warn) < 0) /* the front still serves: the runtime may come later */
        fprintf(stderr, "sluice-kube: warning: %s\n", warn.msg);
    if (listen_on(srv, e) < 0)
        return -1;
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

/* The one place sluice-kube prints an error. */
static int fail(const sl_error *e, int status)
{
    fprintf(stderr, "sluice-kube: %s\n", e->msg);
    return status;
}

int main(int argc, char **argv)
{
    static sk_opts o;
    sl_error e;
    if (sk_opts_parse(argc, argv, &o, &e) < 0) {
        fail(&e, 2);
        if (o.bad_usage)
            sk_opts_usage(stderr);
        return 2;
    }
    if (o.help) {
        sk_opts_usage(stdout);
        return 0;
    }
    if (o.print_kubeconfig)
        return print_kubeconfig(&o.cfg, &e) < 0 ? fail(&e, 1) : 0;
    if (o.token_in_argv)
        fprintf(stderr, "sluice-kube: warning: --token shows in ps and /proc/PID/cmdline; use "
                        "--token-file or $" SK_TOKEN_ENV "\n");
    signal(SIGPIPE, SIG_IGN);
    json_object_seed(0); /* before any thread builds JSON */
    static sk_server srv;
    srv.loop = uv_default_loop();
    srv.cfg = o.cfg;
    pthread_mutex_init(&srv.pool_lock, NULL);
    int rc = serve(&srv, &e) < 0 ? fail(&e, 1) : 0;
    sk_cri_pool_free(&srv);
    sk_tls_ctx_free(srv.ssl_ctx);
    sk_tls_ctx_free(srv.rt_ssl_ctx);
    uv_loop_close(srv.loop);
    return rc;
}
