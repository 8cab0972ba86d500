/* sluiced configuration: key table, JSON file, command line. */
#include "config/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <jansson.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "cri/mon_spawn.h"
#include "fsutil.h"
#include "mon_proto.h"
#include "mon_session.h"
#include "pod/cni.h"
#include "util/url.h"
#include "sluice/limits.h"
#include "sluice/server.h"
#include "grpc/grpc_conn.h"

typedef enum ktype {
    K_TEXT,    /* non-empty string */
    K_OPTTEXT, /* string, may be empty */
    K_ABSPATH, /* absolute file-system path */
    K_URLPATH, /* URL path starting with '/' */
    K_LISTEN,  /* unix:///abs/path */
    K_U32,
    K_U64,
    K_LEVEL,    /* error|warn|info|debug, kept as SL_LOG_* in an int */
    K_HOSTPORT, /* "" | PORT | ADDR:PORT | [V6]:PORT (admin-listen) */
    K_CGROUP,   /* "" | an absolute cgroup path without . or .. parts */
    K_EXECMODE, /* native | runc */
} ktype;

typedef struct key {
    const char *name;
    ktype type;
    size_t off;
    uint64_t min, max;
    const char *arg;  /* value placeholder in --help */
    const char *help; /* one line */
} key;

#define F(field) offsetof(sl_config, field)
#define LIMIT_KEY(field, key, flag, arg, def, min, max, scope, help)                               \
    {key,                                                                                          \
     sizeof(((sl_server_config *)0)->field) == 8 ? K_U64 : K_U32,                                  \
     F(stream.field),                                                                              \
     min,                                                                                          \
     max,                                                                                          \
     arg,                                                                                          \
     help},
#define U32MAX UINT32_MAX
#define I32MAX 2147483647u

static const key keys[] = {
    {"listen", K_LISTEN, F(listen), 0, 0, "URI", "CRI gRPC endpoint (unix socket)"},
    {"log-level", K_LEVEL, F(log_level), 0, 0, "LEVEL", "error, warn, info or debug"},
    {"admin-listen", K_HOSTPORT, F(admin_listen), 0, 0, "[ADDR:]PORT",
     "HTTP /healthz, /readyz, /metrics; a bare port listens on 127.0.0.1; empty = off"},
    {"stream-address", K_TEXT, F(stream_address), 0, 0, "ADDR",
     "streaming server listen address (IPv4/IPv6 literal)"},
    {"stream-port", K_U32, F(stream_port), 0, 65535, "N", "streaming server port, 0 = any"},
    {"stream-base-path", K_URLPATH, F(stream_base_path), 0, 0, "PATH",
     "URL path prefix of streaming URLs"},
    {"stream-advertise", K_OPTTEXT, F(stream_advertise), 0, 0, "HOST:PORT",
     "host:port written into streaming URLs; empty = the listener's"},
    {"stream-tls-cert-file", K_OPTTEXT, F(stream_tls_cert_file), 0, 0, "FILE",
     "PEM certificate (and chain) of the streaming listener: TLS (https URLs); empty = plain HTTP"},
    {"stream-tls-key-file", K_OPTTEXT, F(stream_tls_key_file), 0, 0, "FILE",
     "PEM private key of stream-tls-cert-file; required with it"},
    {"stream-tls-client-ca-file", K_OPTTEXT, F(stream_tls_client_ca_file), 0, 0, "FILE",
     "PEM CAs: streaming clients must present a certificate signed by one; empty = none asked"},
    /* the streaming server's limits: one table for sluiced, sluice-hostd and the docs */
    SL_SERVER_LIMITS(LIMIT_KEY){
        "attach-backlog", K_U32, F(attach_backlog), SL_MON_ATTACH_BACKLOG_MIN,
        SL_MON_ATTACH_BACKLOG_MAX, "BYTES",
        "output an attach client may fall behind before it is cut (never slows the container)"},
    {"exec-max-concurrent-per-pod", K_U32, F(exec_max_concurrent), 1,
     SL_MON_EXEC_MAX_CONCURRENT_LIMIT, "N",
     "execs (ExecSync and streaming) of one pod being started at once; the others wait in a "
     "FIFO queue"},
    {"exec-mode", K_EXECMODE, F(exec_mode), 0, 0, "native|runc",
     "how the pod monitor starts an exec: itself (native, runc for what it does not cover) or "
     "with runc exec"},
    {"exec-queue-max", K_U32, F(exec_queue_max), 0, SL_MON_EXEC_QUEUE_MAX_LIMIT, "N",
     "execs of one pod waiting to start at most; beyond, RESOURCE_EXHAUSTED"},
    {"exec-stdin-pipe-size", K_U32, F(exec_stdin_pipe_size), SL_MON_EXEC_STDIN_PIPE_SIZE_MIN,
     SL_MON_EXEC_STDIN_PIPE_SIZE_MAX, "BYTES",
     "the pipe to an exec's stdin (the kernel rounds it up to a power of two pages)"},
    {"portforward-connect-timeout-ms", K_U32, F(pf_connect_timeout_ms), 1, U32MAX, "MS",
     "a port-forward connect inside the pod gives up after this"},
    {"max-recv-message", K_U32, F(max_recv_message), 1024, I32MAX, "BYTES",
     "largest gRPC request message (else RESOURCE_EXHAUSTED)"},
    {"max-grpc-streams", K_U32, F(max_grpc_streams), 1, I32MAX, "N",
     "concurrent gRPC calls per connection"},
    {"max-grpc-connections", K_U32, F(max_grpc_connections), 1, U32MAX, "N",
     "open gRPC connections (at most half the open-file limit); at the limit the "
     "longest-idle one makes room"},
    {"grpc-idle-timeout-ms", K_U64, F(grpc_idle_timeout_ms), 0, UINT64_MAX, "MS",
     "a gRPC connection without calls or traffic this long is closed; 0 = never"},
    {"max-grpc-stream-backlog", K_U32, F(max_grpc_stream_backlog), 65536, I32MAX, "BYTES",
     "response bytes waiting for a streaming client (else RESOURCE_EXHAUSTED)"},
    {"max-event-subscribers", K_U32, F(max_event_subscribers), 1, 65536, "N",
     "concurrent GetContainerEvents streams"},
    {"state-dir", K_ABSPATH, F(state_dir), 0, 0, "DIR", "images, pods and containers on disk"},
    {"run-dir", K_ABSPATH, F(run_dir), 0, 0, "DIR", "per-pod runtime files (namespaces, monitor)"},
    {"image-dir", K_ABSPATH, F(image_dir), 0, 0, "DIR", "image store"},
    {"import-dir", K_ABSPATH, F(import_dir), 0, 0, "DIR",
     "where PullImage finds image archives to import"},
    {"import", K_ABSPATH, F(import_file), 0, 0, "FILE",
     "an OCI-layout or docker-archive tarball to import at start"},
    {"cni-conf-dir", K_ABSPATH, F(cni_conf_dir), 0, 0, "DIR", "CNI network configuration files"},
    {"cni-bin-dir", K_ABSPATH, F(cni_bin_dir), 0, 0, "DIR[:DIR]",
     "CNI plugin binaries, searched in order"},
    {"runtime-path", K_TEXT, F(runtime_path), 0, 0, "PATH", "OCI runtime binary (runc)"},
    {"cni-plugin-timeout-ms", K_U32, F(cni_plugin_timeout_ms), 1, U32MAX, "MS",
     "a CNI plugin (ADD or DEL) running longer is killed, and the call fails naming it"},
    {"monitor-start-timeout-ms", K_U32, F(monitor_start_timeout_ms), 1, U32MAX, "MS",
     "a pod monitor not listening after this is killed (RunPodSandbox fails)"},
    {"monitor-restart-max", K_U32, F(monitor_restart_max), 0, U32MAX, "N",
     "monitors started per pod and minute to replace one that died (0 = none)"},
    {"monitor-cgroup", K_CGROUP, F(monitor_cgroup), 0, 0, "PATH",
     "cgroup the pod monitors move into (every hierarchy); empty = sluiced's own"},
    {"stats-fs-refresh-ms", K_U32, F(stats_fs_refresh_ms), 0, U32MAX, "MS",
     "a container's writable layer is walked for its usage again after this"},
    {"stats-cpu-window-ms", K_U32, F(stats_cpu_window_ms), 1, U32MAX, "MS",
     "shortest sample window of usage_nano_cores (shorter calls reuse the last rate)"},
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* The keys a SIGHUP applies to the running daemon (sl_config_reload): the
 * log level and limits read afresh at each use, so a new value is safe at
 * any time. The others (sockets, directories, programs, the streaming
 * server's limits, which libsluice copied at start) need a restart. */
static const char *const live_keys[] = {
    "log-level",
    "max-recv-message",
    "max-grpc-connections",
    "grpc-idle-timeout-ms",
    "max-grpc-stream-backlog",
    "max-event-subscribers",
    "stats-fs-refresh-ms",
    "stats-cpu-window-ms",
};

void sl_config_init(sl_config *c)
{
    memset(c, 0, sizeof(*c));
    c->default_config = SLUICED_DEFAULT_CONFIG;
    c->log_level = SL_LOG_INFO;
    c->admin_listen = "";
    c->monitor_cgroup = SLUICED_DEFAULT_MONITOR_CGROUP;
    c->listen = SLUICED_DEFAULT_LISTEN;
    c->socket_path = &SLUICED_DEFAULT_LISTEN[sizeof("unix://") - 1];
    c->stream_address = SL_DEFAULT_ADDRESS;
    c->stream_port = SL_DEFAULT_PORT;
    c->stream_base_path = "/";
    c->stream_advertise = "";
    c->stream_tls_cert_file = "";
    c->stream_tls_key_file = "";
    c->stream_tls_client_ca_file = "";
    sl_server_config_init(&c->stream);
    c->pf_connect_timeout_ms = SL_MON_PF_CONNECT_TIMEOUT_MS;
    c->attach_backlog = SL_MON_ATTACH_BACKLOG;
    c->exec_max_concurrent = SL_MON_EXEC_MAX_CONCURRENT;
    c->exec_queue_max = SL_MON_EXEC_QUEUE_MAX;
    c->exec_stdin_pipe_size = SL_MON_EXEC_STDIN_PIPE_SIZE;
    c->max_recv_message = SL_GRPC_DEFAULT_MAX_RECV_MESSAGE;
    c->max_grpc_streams = SL_GRPC_DEFAULT_MAX_STREAMS;
    c->max_grpc_connections = SL_GRPC_DEFAULT_MAX_CONNECTIONS;
    c->grpc_idle_timeout_ms = SL_GRPC_DEFAULT_IDLE_TIMEOUT_MS;
    c->max_grpc_stream_backlog = SL_GRPC_DEFAULT_MAX_STREAM_BACKLOG;
    c->max_event_subscribers = SLUICED_DEFAULT_MAX_EVENT_SUBSCRIBERS;
    c->state_dir = SLUICED_DEFAULT_STATE_DIR;
    c->run_dir = SLUICED_DEFAULT_RUN_DIR;
    c->cni_conf_dir = SLUICED_DEFAULT_CNI_CONF_DIR;
    c->cni_bin_dir = SLUICED_DEFAULT_CNI_BIN_DIR;
    c->runtime_path = SLUICED_DEFAULT_RUNTIME_PATH;
    c->exec_mode = SLUICED_DEFAULT_EXEC_MODE;
    c->cni_plugin_timeout_ms = SL_CNI_DEFAULT_PLUGIN_TIMEOUT_MS;
    c->monitor_start_timeout_ms = SL_MON_DEFAULT_START_TIMEOUT_MS;
    c->monitor_restart_max = SL_MON_DEFAULT_RESTART_MAX;
    c->stats_fs_refresh_ms = SLUICED_DEFAULT_STATS_FS_REFRESH_MS;
    c->stats_cpu_window_ms = SLUICED_DEFAULT_STATS_CPU_WINDOW_MS;
}

void sl_config_fini(sl_config *c)
{
    for (size_t i = 0; i < c->nowned; i++)
        free(c->owned[i]);
    free(c->owned);
    c->owned = NULL;
    c->nowned = 0;
}

/* Keeps s (malloc'd) until sl_config_fini. Returns s, or NULL (s freed). */
static char *own(sl_config *c, char *s)
{
    if (!s)
        return NULL;
    char **o = realloc(c->owned, (c->nowned + 1) * sizeof(*o));
    if (!o) {
        free(s);
        return NULL;
    }
    c->owned = o;
    c->owned[c->nowned++] = s;
    return s;
}

static const key *find_key(const char *name)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(keys[i].name, name) == 0)
            return &keys[i];
    return NULL;
}

/* Strict unsigned decimal: digits only, no sign, no spaces, no overflow. */
static int parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        uint64_t d = (uint64_t)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int set_number(sl_config *c, const key *k, const char *value, const char *origin,
                      sl_error *e)
{
    uint64_t v;
    if (parse_u64(value, &v) < 0)
        return sl_error_set(e, 0, "%s: \"%s\" is not an unsigned integer", origin, value);
    if (v < k->min || v > k->max)
        return sl_error_set(e, 0, "%s: %s is out of range (%" PRIu64 "..%" PRIu64 ")", origin,
                            value, k->min, k->max);
    if (k->type == K_U64)
        *(uint64_t *)((char *)c + k->off) = v;
    else
        *(uint32_t *)((char *)c + k->off) = (uint32_t)v;
    return 0;
}

/* listen: "unix://" or "unix:" followed by an absolute path. */
static int set_listen(sl_config *c, const char *value, const char *origin, sl_error *e)
{
    struct sockaddr_un sun;
    const char *path = NULL;
    if (strncmp(value, "unix://", 7) == 0)
        path = value + 7;
    else if (strncmp(value, "unix:", 5) == 0)
        path = value + 5;
    if (!path || path[0] != '/')
        return sl_error_set(e, 0, "%s: \"%s\" is not unix:///absolute/path", origin, value);
    if (strlen(path) >= sizeof(sun.sun_path))
        return sl_error_set(e, 0, "%s: socket path longer than %zu bytes", origin,
                            sizeof(sun.sun_path) - 1);
    char *v = own(c, strdup(value));
    if (!v)
        return sl_error_set(e, ENOMEM, "%s", origin);
    c->listen = v;
    c->socket_path = v + (path - value);
    return 0;
}

static int check_text(const key *k, const char *value, const char *origin, sl_error *e)
{
    if (k->type != K_OPTTEXT && !*value)
        return sl_error_set(e, 0, "%s: must not be empty", origin);
    if (k->type == K_EXECMODE && strcmp(value, "native") && strcmp(value, "runc"))
        return sl_error_set(e, 0, "%s: \"%s\" is not native or runc", origin, value);
    if (k->type == K_ABSPATH && value[0] != '/')
        return sl_error_set(e, 0, "%s: \"%s\" is not an absolute path", origin, value);
    if (k->type == K_URLPATH && (value[0] != '/' || strlen(value) > SL_URL_MAX_BASE_PATH))
        return sl_error_set(e, 0, "%s: \"%s\" is not a URL path starting with / (at most %d bytes)",
                            origin, value, SL_URL_MAX_BASE_PATH);
    return 0;
}

static int set_level(sl_config *c, const key *k, const char *value, const char *origin, sl_error *e)
{
    int level = sl_log_level_parse(value);
    if (level < 0)
        return sl_error_set(e, 0, "%s: \"%s\" is not one of error, warn, info, debug", origin,
                            value);
    *(int *)((char *)c + k->off) = level;
    return 0;
}

/* A port: decimal 0..65535. */
static int parse_port(const char *s, uint32_t *port)
{
    uint64_t v;
    if (parse_u64(s, &v) < 0 || v > 65535)
        return -1;
    *port = (uint32_t)v;
    return 0;
}

/* "PORT" (127.0.0.1), "ADDR:PORT" (IPv4), "[ADDR]:PORT" (IPv6) into
 * host and port; 0 or -1. */
static int split_hostport(const char *v, char *host, size_t cap, uint32_t *port)
{
    const char *colon = strrchr(v, ':');
    unsigned char addr[sizeof(struct in6_addr)];
    if (!colon) {
        snprintf(host, cap, "127.0.0.1");
        return parse_port(v, port);
    }
    size_t n = (size_t)(colon - v);
    bool v6 = n >= 2 && v[0] == '[' && v[n - 1] == ']';
    if (v6)
        v++, n -= 2;
    if (n == 0 || n >= cap)
        return -1;
    memcpy(host, v, n);
    host[n] = '\0';
    if (inet_pton(v6 ? AF_INET6 : AF_INET, host, addr) != 1)
        return -1;
    return parse_port(colon + 1, port);
}

static int set_hostport(sl_config *c, const char *value, const char *origin, sl_error *e)
{
    char host[SLUICED_ADMIN_HOST_MAX];
    uint32_t port = 0;
    if (*value && split_hostport(value, host, sizeof(host), &port) < 0)
        return sl_error_set(e, 0,
                            "%s: \"%s\" is not PORT, IPV4:PORT or [IPV6]:PORT (an address "
                            "literal, a port 0..65535)",
                            origin, value);
    char *v = own(c, strdup(value));
    if (!v)
        return sl_error_set(e, ENOMEM, "%s", origin);
    c->admin_listen = v;
    snprintf(c->admin_address, sizeof(c->admin_address), "%s", *value ? host : "");
    c->admin_port = port;
    return 0;
}

/* "" or "/a/b": absolute, no empty, "." or ".." part, printable ASCII. */
static bool valid_cgroup(const char *v)
{
    size_t n = strlen(v);
    if (n == 0)
        return true;
    if (v[0] != '/' || n > SL_CONFIG_CGROUP_MAX || v[n - 1] == '/' || strstr(v, "//") ||
        strstr(v, "/./") || strstr(v, "/../"))
        return false;
    if ((n >= 2 && !strcmp(v + n - 2, "/.")) || (n >= 3 && !strcmp(v + n - 3, "/..")))
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] <= ' ' || (unsigned char)v[i] >= 0x7f)
            return false;
    return n > 1;
}

static int set_key(sl_config *c, const key *k, const char *value, const char *origin, sl_error *e)
{
    if (k->type == K_U32 || k->type == K_U64)
        return set_number(c, k, value, origin, e);
    if (k->type == K_LISTEN)
        return set_listen(c, value, origin, e);
    if (k->type == K_LEVEL)
        return set_level(c, k, value, origin, e);
    if (k->type == K_HOSTPORT)
        return set_hostport(c, value, origin, e);
    if (k->type == K_CGROUP && !valid_cgroup(value))
        return sl_error_set(e, 0,
                            "%s: \"%s\" is not an absolute cgroup path (no empty, \".\" or "
                            "\"..\" part, at most %d bytes), nor empty",
                            origin, value, SL_CONFIG_CGROUP_MAX);
    if (k->type != K_CGROUP && check_text(k, value, origin, e) < 0)
        return -1;
    char *v = own(c, strdup(value));
    if (!v)
        return sl_error_set(e, ENOMEM, "%s", origin);
    *(const char **)((char *)c + k->off) = v;
    return 0;
}

int sl_config_set(sl_config *c, const char *name, const char *value, sl_error *e)
{
    const key *k = find_key(name);
    if (!k)
        return sl_error_set(e, 0, "unknown configuration key \"%s\"", name);
    return set_key(c, k, value, name, e);
}

/* One key of the JSON object: type-checked, then set like a flag. */
static int load_value(sl_config *c, const char *origin, const char *name, json_t *v, sl_error *e)
{
    char where[512], num[32];
    snprintf(where, sizeof(where), "%s: %s", origin, name);
    const key *k = find_key(name);
    if (!k)
        return sl_error_set(e, 0, "%s: unknown configuration key \"%s\"", origin, name);
    if (k->type == K_U32 || k->type == K_U64) {
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return sl_error_set(e, 0, "%s: expected a non-negative integer", where);
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return set_key(c, k, num, where, e);
    }
    if (!json_is_string(v))
        return sl_error_set(e, 0, "%s: expected a string", where);
    return set_key(c, k, json_string_value(v), where, e);
}

int sl_config_load_json(sl_config *c, const char *text, size_t len, const char *origin, sl_error *e)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return sl_error_set(e, 0, "%s:%d:%d: %s", origin, jerr.line, jerr.column, jerr.text);
    int rc = 0;
    if (!json_is_object(root)) {
        rc = sl_error_set(e, 0, "%s: the configuration must be a JSON object", origin);
    } else {
        const char *name;
        json_t *v;
        json_object_foreach(root, name, v)
        {
            if ((rc = load_value(c, origin, name, v, e)) < 0)
                break;
        }
    }
    json_decref(root);
    return rc;
}

int sl_config_load_file(sl_config *c, const char *path, sl_error *e)
{
    char *text;
    size_t len;
    if (sl_read_file(path, SL_CONFIG_MAX_FILE, &text, &len, e) < 0)
        return sl_error_wrap(e, "config file");
    int rc = sl_config_load_json(c, text, len, path, e);
    free(text);
    return rc;
}

/* Splits argv[*i] ("--name", "--name=value") into name and value; the value
 * may be the next argument. */
static int flag_at(int argc, char **argv, int *i, char *name, size_t cap, const char **value,
                   sl_error *e)
{
    const char *a = argv[*i];
    if (strncmp(a, "--", 2) != 0 || !a[2])
        return sl_error_set(e, 0, "unexpected argument \"%s\" (see --help)", a);
    const char *eq = strchr(a + 2, '=');
    size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
    if (n >= cap)
        return sl_error_set(e, 0, "unknown option %s", a);
    memcpy(name, a + 2, n);
    name[n] = '\0';
    if (eq) {
        *value = eq + 1;
    } else if (*i + 1 < argc) {
        *value = argv[++*i];
    } else {
        return sl_error_set(e, 0, "option --%s needs a value", name);
    }
    return 0;
}

static int scan_special(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return SL_CONFIG_HELP;
        if (strcmp(argv[i], "--version") == 0)
            return SL_CONFIG_VERSION;
    }
    return SL_CONFIG_RUN;
}

/* Pass 0 finds the last --config; pass 1 applies every other flag. */
static int apply_flags(sl_config *c, int argc, char **argv, int pass, const char **file,
                       sl_error *e)
{
    char name[64], where[80];
    const char *value = NULL;
    for (int i = 1; i < argc; i++) {
        if (flag_at(argc, argv, &i, name, sizeof(name), &value, e) < 0)
            return -1;
        bool is_config = strcmp(name, "config") == 0;
        if (pass == 0 && is_config) {
            *file = value;
        } else if (pass == 1 && !is_config) {
            const key *k = find_key(name);
            if (!k)
                return sl_error_set(e, 0, "unknown option --%s (see --help)", name);
            snprintf(where, sizeof(where), "--%s", name);
            if (set_key(c, k, value, where, e) < 0)
                return -1;
        }
    }
    return 0;
}

/* --config FILE (must exist), --config "" (none), else the default file
 * when it exists. */
static int load_config_file(sl_config *c, const char *flag, sl_error *e)
{
    const char *path = flag ? flag : c->default_config;
    if (!path || !*path)
        return 0;
    char *v = own(c, strdup(path));
    if (!v)
        return sl_error_set(e, ENOMEM, "config file");
    if (!flag && access(v, F_OK) < 0 && errno == ENOENT)
        return 0;
    c->config_file = v;
    return sl_config_load_file(c, v, e);
}

int sl_config_parse_args(sl_config *c, int argc, char **argv, sl_error *e)
{
    int special = scan_special(argc, argv);
    if (special != SL_CONFIG_RUN)
        return special;
    const char *file = NULL;
    if (apply_flags(c, argc, argv, 0, &file, e) < 0 || load_config_file(c, file, e) < 0 ||
        apply_flags(c, argc, argv, 1, NULL, e) < 0)
        return -1;
    return sl_config_finish(c, e) < 0 ? -1 : SL_CONFIG_RUN;
}

static int derive(sl_config *c, const char **field, const char *sub, sl_error *e)
{
    if (*field)
        return 0;
    char *p = own(c, sl_path_join(c->state_dir, sub));
    if (!p)
        return sl_error_set(e, ENOMEM, "%s", sub);
    *field = p;
    return 0;
}

/* Every pod's monitor listens on <run-dir>/pods/<id>/mon.sock: a run dir
 * too long for that path would fail each pod, so it is refused here. */
static int check_run_dir(const sl_config *c, sl_error *e)
{
    struct sockaddr_un sun;
    size_t fixed = strlen("/pods/") + SL_MON_POD_ID_LEN + 1 + strlen(SL_MON_SOCK_NAME);
    size_t max = sizeof(sun.sun_path) - 1 - fixed;
    size_t n = strlen(c->run_dir);
    while (n > 1 && c->run_dir[n - 1] == '/')
        n--;
    if (n > max)
        return sl_error_set(e, 0,
                            "run-dir: \"%s\" is %zu bytes, at most %zu fit: each pod's monitor "
                            "socket RUN-DIR/pods/<64-hex pod id>/%s must fit a unix socket "
                            "path (%zu bytes)",
                            c->run_dir, n, max, SL_MON_SOCK_NAME, sizeof(sun.sun_path) - 1);
    return 0;
}

/* TLS on the streaming port takes a certificate and its key, together. */
static int check_stream_tls(const sl_config *c, sl_error *e)
{
    bool cert = *c->stream_tls_cert_file, has_key = *c->stream_tls_key_file;
    if (cert && !has_key)
        return sl_error_set(e, 0, "stream-tls-key-file: required with stream-tls-cert-file \"%s\"",
                            c->stream_tls_cert_file);
    if (has_key && !cert)
        return sl_error_set(e, 0, "stream-tls-cert-file: required with stream-tls-key-file \"%s\"",
                            c->stream_tls_key_file);
    if (!cert && *c->stream_tls_client_ca_file)
        return sl_error_set(e, 0,
                            "stream-tls-client-ca-file: needs stream-tls-cert-file and "
                            "stream-tls-key-file (client certificates are asked for over TLS)");
    return 0;
}

int sl_config_finish(sl_config *c, sl_error *e)
{
    if (check_stream_tls(c, e) < 0)
        return -1;
    if (derive(c, &c->image_dir, SLUICED_IMAGE_SUBDIR, e) < 0 ||
        derive(c, &c->import_dir, SLUICED_IMPORT_SUBDIR, e) < 0 || check_run_dir(c, e) < 0)
        return -1;
    return 0;
}

static bool is_live(const key *k)
{
    for (size_t i = 0; i < sizeof(live_keys) / sizeof(live_keys[0]); i++)
        if (!strcmp(live_keys[i], k->name))
            return true;
    return false;
}

/* The key's value in c as text (as a flag takes it); "" for an unset
 * derived path or file. */
static void value_text(const sl_config *c, const key *k, char *buf, size_t cap)
{
    const void *p = (const char *)c + k->off;
    if (k->type == K_U32) {
        snprintf(buf, cap, "%" PRIu32, *(const uint32_t *)p);
    } else if (k->type == K_U64) {
        snprintf(buf, cap, "%" PRIu64, *(const uint64_t *)p);
    } else if (k->type == K_LEVEL) {
        snprintf(buf, cap, "%s", sl_log_level_name(*(const int *)p));
    } else { /* a text field: only these hold a pointer */
        const char *str = *(const char *const *)p;
        snprintf(buf, cap, "%s", str ? str : "");
    }
}

/* The default as --help and the man pages show it. */
static void default_text(const sl_config *d, const key *k, char *buf, size_t cap)
{
    if (k->off == F(image_dir))
        snprintf(buf, cap, "STATE-DIR/%s", SLUICED_IMAGE_SUBDIR);
    else if (k->off == F(import_dir))
        snprintf(buf, cap, "STATE-DIR/%s", SLUICED_IMPORT_SUBDIR);
    else
        value_text(d, k, buf, cap);
}

static bool is_text(const key *k)
{
    return k->type != K_U32 && k->type != K_U64;
}

static void print_default(FILE *f, const sl_config *d, const key *k)
{
    char v[SL_CONFIG_TEXT_MAX];
    default_text(d, k, v, sizeof(v));
    if (k->off == F(import_file))
        fprintf(f, "none");
    else if (is_text(k) && k->off != F(image_dir) && k->off != F(import_dir))
        fprintf(f, "\"%s\"", v);
    else
        fprintf(f, "%s", v);
}

void sl_config_usage(FILE *f, const char *prog)
{
    sl_config d;
    sl_config_init(&d);
    fprintf(f,
            "usage: %s [--config FILE] [--KEY VALUE | --KEY=VALUE]...\n"
            "sluice CRI runtime daemon: CRI gRPC on a unix socket, plus the streaming\n"
            "server for Exec/Attach/PortForward.\n\n"
            "  --config FILE  JSON object with the keys below (numbers as integers);\n"
            "                 flags override it (default: %s when it exists;\n"
            "                 --config \"\" reads none)\n"
            "  --help, --version\n\n",
            prog, d.default_config);
    for (size_t i = 0; i < NKEYS; i++) {
        char flag[64];
        snprintf(flag, sizeof(flag), "--%s %s", keys[i].name, keys[i].arg);
        fprintf(f, "  %-32s %s\n  %-32s (default ", flag, keys[i].help, "");
        print_default(f, &d, &keys[i]);
        fprintf(f, is_live(&keys[i]) ? "; SIGHUP reloads it)\n" : ")\n");
    }
    sl_config_fini(&d);
}

/* Help text as Markdown: '_', '*' and '`' would start emphasis or code. */
static void markdown_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '_' || *s == '*' || *s == '`' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
}

void sl_config_usage_markdown(FILE *f, bool json)
{
    sl_config d;
    sl_config_init(&d);
    for (size_t i = 0; i < NKEYS; i++) {
        const key *k = &keys[i];
        char v[SL_CONFIG_TEXT_MAX];
        default_text(&d, k, v, sizeof(v));
        if (json)
            fprintf(f, "**%s** (%s)\n", k->name, is_text(k) ? "string" : "integer");
        else
            fprintf(f, "**--%s** *%s*\n", k->name, k->arg);
        fprintf(f, ":   ");
        markdown_text(f, k->help);
        fprintf(f, ". Default: ");
        if (k->off == F(import_file))
            fprintf(f, "none");
        else
            fprintf(f, *v ? "`%s`" : "empty", v);
        fprintf(f, is_live(k) ? ". A SIGHUP applies a new value.\n\n" : ".\n\n");
    }
    sl_config_fini(&d);
}

size_t sl_config_reload(sl_config *running, const sl_config *fresh, sl_config_change_fn fn,
                        void *arg)
{
    size_t applied = 0;
    for (size_t i = 0; i < NKEYS; i++) {
        const key *k = &keys[i];
        char was[SL_CONFIG_TEXT_MAX], now[SL_CONFIG_TEXT_MAX];
        value_text(running, k, was, sizeof(was));
        value_text(fresh, k, now, sizeof(now));
        if (!strcmp(was, now))
            continue;
        bool live = is_live(k);
        if (live) { /* every live key is a number or the level: copied by value */
            size_t size = k->type == K_U64 ? sizeof(uint64_t) : sizeof(uint32_t);
            if (k->type == K_LEVEL)
                size = sizeof(int);
            memcpy((char *)running + k->off, (const char *)fresh + k->off, size);
            applied++;
        }
        if (fn)
            fn(arg, k->name, was, now, live);
    }
    return applied;
}
