/* sluice-kube's command line (see opts.h). */
#include "opts.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"

void sk_opts_usage(FILE *f)
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

static int parse_port(const char *arg, int *port, sl_error *e)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (!*arg || *end || v < 0 || v > 65535)
        return sl_error_set(e, 0, "bad --port %s", arg);
    *port = (int)v;
    return 0;
}

/* What getopt found wrong (it prints nothing itself: opterr is 0). */
static int bad_flag(int ch, const char *arg, sk_opts *o, sl_error *e)
{
    o->bad_usage = true;
    if (ch == ':')
        return sl_error_set(e, 0, "option %s needs a value", arg);
    if (strncmp(arg, "--", 2) != 0 && optopt)
        return sl_error_set(e, 0, "unrecognized option -%c", optopt);
    return sl_error_set(e, 0, "unrecognized option %s", arg);
}

static int take_opt(int ch, const char *arg, sk_opts *o, sl_error *e)
{
    switch (ch) {
    case 'a':
        o->cfg.address = arg;
        break;
    case 'p':
        return parse_port(arg, &o->cfg.port, e);
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
        o->help = true;
        break;
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

static int read_token_file(sk_opts *o, sl_error *e)
{
    SL_AUTOFREE char *data = NULL;
    size_t len = 0;
    if (sl_read_file(o->token_file, SK_TOKEN_MAX, &data, &len, e) < 0)
        return sl_error_wrap(e, "--token-file %s", o->token_file);
    while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r'))
        data[--len] = '\0';
    if (len == 0 || strlen(data) != len || !token_ok(data))
        return sl_error_set(e, 0, "--token-file %s: not one line of visible characters",
                            o->token_file);
    memcpy(o->token, data, len + 1);
    o->cfg.token = o->token;
    return 0;
}

/* --token-file, else --token (warned: argv is world-readable), else the
 * environment. */
static int resolve_token(sk_opts *o, sl_error *e)
{
    if (o->token_file && o->token_flag)
        return sl_error_set(e, 0, "give --token-file or --token, not both");
    if (o->token_file)
        return read_token_file(o, e);
    if (o->token_flag) {
        o->token_in_argv = o->cfg.token != NULL;
    } else {
        const char *env = getenv(SK_TOKEN_ENV);
        o->cfg.token = env && *env ? env : NULL;
    }
    if (o->cfg.token && !token_ok(o->cfg.token))
        return sl_error_set(e, 0, "the token must be visible ASCII without spaces");
    return 0;
}

/* Where the serving certificate and key are (see sk_tls_files). */
static int resolve_cert(sk_opts *o, sl_error *e)
{
    sk_config *c = &o->cfg;
    if (o->tls_cert || o->tls_key) {
        if (!o->tls_cert || !o->tls_key || o->cert_flag || o->cert_dir)
            return sl_error_set(e, 0,
                                "--tls-cert-file and --tls-private-key-file go together, "
                                "without --cert/--cert-dir");
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

int sk_opts_parse(int argc, char **argv, sk_opts *o, sl_error *e)
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
    memset(o, 0, sizeof *o);
    sl_error_clear(e);
    o->cfg.address = SK_DEFAULT_ADDRESS;
    o->cfg.port = SK_DEFAULT_PORT;
    o->cfg.endpoint = SK_DEFAULT_ENDPOINT;
    int ch;
    optind = 1; /* a fresh scan on every call */
    opterr = 0; /* getopt prints nothing: bad_flag says it */
    while ((ch = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
        if (ch == '?' || ch == ':')
            return bad_flag(ch, argv[optind - 1], o, e);
        if (take_opt(ch, optarg, o, e) < 0)
            return -1;
        if (o->help)
            return 0; /* what follows does not matter */
    }
    if (optind < argc)
        return sl_error_set(e, 0, "unexpected argument %s", argv[optind]);
    if (!o->cfg.rt_cert_file != !o->cfg.rt_key_file)
        return sl_error_set(e, 0, "--runtime-tls-cert-file and --runtime-tls-key-file go together");
    if (resolve_token(o, e) < 0 || resolve_cert(o, e) < 0)
        return -1;
    if (!o->cfg.node_name) {
        if (gethostname(o->node, sizeof o->node - 1) != 0)
            snprintf(o->node, sizeof o->node, "localhost");
        o->cfg.node_name = o->node;
    }
    return 0;
}
