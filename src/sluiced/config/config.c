/* sluiced configuration: key table, JSON file, command line. */
#include "config/config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <jansson.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "cri/mon_spawn.h"
#include "fsutil.h"
#include "mon_proto.h"
#include "pod/cni.h"
#include "server/url.h"
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
#define U32MAX UINT32_MAX
#define I32MAX 2147483647u

static const key keys[] = {
    {"listen", K_LISTEN, F(listen), 0, 0, "URI", "CRI gRPC endpoint (unix socket)"},
    {"stream-address", K_TEXT, F(stream_address), 0, 0, "ADDR",
     "streaming server listen address (IPv4/IPv6 literal)"},
    {"stream-port", K_U32, F(stream_port), 0, 65535, "N", "streaming server port, 0 = any"},
    {"stream-base-path", K_URLPATH, F(stream_base_path), 0, 0, "PATH",
     "URL path prefix of streaming URLs"},
    {"stream-advertise", K_OPTTEXT, F(stream_advertise), 0, 0, "HOST:PORT",
     "host:port written into streaming URLs; empty = the listener's"},
    {"token-ttl-ms", K_U32, F(token_ttl_ms), 1, U32MAX, "MS",
     "a streaming URL must be used within this"},
    {"max-pending-tokens", K_U32, F(max_pending_tokens), 1, U32MAX, "N",
     "unused streaming URLs at most (then RESOURCE_EXHAUSTED)"},
    {"idle-timeout-ms", K_U64, F(idle_timeout_ms), 1, UINT64_MAX, "MS",
     "a streaming session without data for this long ends"},
    {"head-timeout-ms", K_U32, F(head_timeout_ms), 1, U32MAX, "MS",
     "the streaming request head must arrive within this"},
    {"keepalive-idle-ms", K_U32, F(keepalive_idle_ms), 0, U32MAX, "MS",
     "TCP keepalive on streaming connections after this silence, 0 = off"},
    {"keepalive-interval-ms", K_U32, F(keepalive_interval_ms), 1, U32MAX, "MS",
     "between unanswered keepalive probes"},
    {"keepalive-count", K_U32, F(keepalive_count), 1, 127, "N",
     "unanswered keepalive probes that end a streaming connection"},
    {"tty-size-wait-ms", K_U32, F(tty_size_wait_ms), 0, 60000, "MS",
     "a tty exec/attach waits this long for the client's terminal size, 0 = not"},
    {"attach-backlog", K_U32, F(attach_backlog), SL_MON_ATTACH_BACKLOG_MIN,
     SL_MON_ATTACH_BACKLOG_MAX, "BYTES",
     "output an attach client may fall behind before it is cut (never slows the container)"},
    {"max-request-line", K_U32, F(max_request_line), 16, U32MAX, "BYTES",
     "streaming request line at most"},
    {"max-headers", K_U32, F(max_headers), 1, U32MAX, "N", "streaming request header fields"},
    {"max-head-size", K_U32, F(max_head_size), 64, U32MAX, "BYTES", "streaming request head"},
    {"max-ws-message", K_U32, F(max_ws_message), 1, U32MAX, "BYTES",
     "one reassembled WebSocket message"},
    {"max-sessions", K_U32, F(max_sessions), 1, U32MAX, "N", "concurrent streaming sessions"},
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
    {"stats-fs-refresh-ms", K_U32, F(stats_fs_refresh_ms), 0, U32MAX, "MS",
     "a container's writable layer is walked for its usage again after this"},
    {"stats-cpu-window-ms", K_U32, F(stats_cpu_window_ms), 1, U32MAX, "MS",
     "shortest sample window of usage_nano_cores (shorter calls reuse the last rate)"},
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

void sl_config_init(sl_config *c)
{
    memset(c, 0, sizeof(*c));
    c->listen = SLUICED_DEFAULT_LISTEN;
    c->socket_path = &SLUICED_DEFAULT_LISTEN[sizeof("unix://") - 1];
    c->stream_address = SL_DEFAULT_ADDRESS;
    c->stream_port = SL_DEFAULT_PORT;
    c->stream_base_path = "/";
    c->stream_advertise = "";
    c->token_ttl_ms = SL_DEFAULT_TOKEN_TTL_MS;
    c->max_pending_tokens = SL_DEFAULT_MAX_PENDING_TOKENS;
    c->idle_timeout_ms = SL_DEFAULT_IDLE_TIMEOUT_MS;
    c->head_timeout_ms = SL_DEFAULT_HEAD_TIMEOUT_MS;
    c->max_request_line = SL_DEFAULT_MAX_REQUEST_LINE;
    c->max_headers = SL_DEFAULT_MAX_HEADERS;
    c->max_head_size = SL_DEFAULT_MAX_HEAD_SIZE;
    c->max_ws_message = SL_DEFAULT_MAX_WS_MESSAGE;
    c->max_sessions = SL_DEFAULT_MAX_SESSIONS;
    c->keepalive_idle_ms = SL_DEFAULT_KEEPALIVE_IDLE_MS;
    c->keepalive_interval_ms = SL_DEFAULT_KEEPALIVE_INTERVAL_MS;
    c->keepalive_count = SL_DEFAULT_KEEPALIVE_COUNT;
    c->tty_size_wait_ms = SL_DEFAULT_TTY_SIZE_WAIT_MS;
    c->attach_backlog = SL_MON_ATTACH_BACKLOG;
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
    c->cni_plugin_timeout_ms = SL_CNI_DEFAULT_PLUGIN_TIMEOUT_MS;
    c->monitor_start_timeout_ms = SL_MON_DEFAULT_START_TIMEOUT_MS;
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
    if (k->type == K_ABSPATH && value[0] != '/')
        return sl_error_set(e, 0, "%s: \"%s\" is not an absolute path", origin, value);
    if (k->type == K_URLPATH && (value[0] != '/' || strlen(value) > SL_URL_MAX_BASE_PATH))
        return sl_error_set(e, 0, "%s: \"%s\" is not a URL path starting with / (at most %d bytes)",
                            origin, value, SL_URL_MAX_BASE_PATH);
    return 0;
}

static int set_key(sl_config *c, const key *k, const char *value, const char *origin, sl_error *e)
{
    if (k->type == K_U32 || k->type == K_U64)
        return set_number(c, k, value, origin, e);
    if (k->type == K_LISTEN)
        return set_listen(c, value, origin, e);
    if (check_text(k, value, origin, e) < 0)
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

/* Pass 0 loads --config; pass 1 applies every other flag. */
static int apply_flags(sl_config *c, int argc, char **argv, int pass, sl_error *e)
{
    char name[64], where[80];
    const char *value = NULL;
    for (int i = 1; i < argc; i++) {
        if (flag_at(argc, argv, &i, name, sizeof(name), &value, e) < 0)
            return -1;
        bool is_config = strcmp(name, "config") == 0;
        if (pass == 0 && is_config) {
            char *v = own(c, strdup(value));
            if (!v)
                return sl_error_set(e, ENOMEM, "--config");
            c->config_file = v;
            if (sl_config_load_file(c, v, e) < 0)
                return -1;
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

int sl_config_parse_args(sl_config *c, int argc, char **argv, sl_error *e)
{
    int special = scan_special(argc, argv);
    if (special != SL_CONFIG_RUN)
        return special;
    if (apply_flags(c, argc, argv, 0, e) < 0 || apply_flags(c, argc, argv, 1, e) < 0)
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

int sl_config_finish(sl_config *c, sl_error *e)
{
    if (derive(c, &c->image_dir, SLUICED_IMAGE_SUBDIR, e) < 0 ||
        derive(c, &c->import_dir, SLUICED_IMPORT_SUBDIR, e) < 0 || check_run_dir(c, e) < 0)
        return -1;
    return 0;
}

static void print_default(FILE *f, const sl_config *d, const key *k)
{
    const void *p = (const char *)d + k->off;
    if (k->type == K_U32)
        fprintf(f, "%" PRIu32, *(const uint32_t *)p);
    else if (k->type == K_U64)
        fprintf(f, "%" PRIu64, *(const uint64_t *)p);
    else if (*(const char *const *)p)
        fprintf(f, "\"%s\"", *(const char *const *)p);
    else if (k->off == F(image_dir))
        fprintf(f, "STATE-DIR/%s", SLUICED_IMAGE_SUBDIR);
    else
        fprintf(f, "STATE-DIR/%s", SLUICED_IMPORT_SUBDIR);
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
            "                 flags override it\n"
            "  --help, --version\n\n",
            prog);
    for (size_t i = 0; i < NKEYS; i++) {
        char flag[64];
        snprintf(flag, sizeof(flag), "--%s %s", keys[i].name, keys[i].arg);
        fprintf(f, "  %-32s %s\n  %-32s (default ", flag, keys[i].help, "");
        print_default(f, &d, &keys[i]);
        fprintf(f, ")\n");
    }
    sl_config_fini(&d);
}
