/* sluiced's configuration: one table of keys shared by the JSON config file
 * and the command line (--KEY VALUE or --KEY=VALUE). The file is
 * --config FILE, else SLUICED_DEFAULT_CONFIG when it exists (--config ""
 * reads none). Precedence: defaults < file < flags. Unknown keys and bad
 * values are errors that name the key. Every default is in
 * docs/configuration.md. */
#ifndef SL_CONFIG_H
#define SL_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sl_log.h"
#include "sluice/server.h"
#include "sys_error.h"

/* SLUICED_DEFAULT_CONFIG: the config file read when --config is not given,
 * SYSCONFDIR/sluice/sluiced.json (/etc/sluice/sluiced.json), from meson. */
#include "config/sluiced_paths.h"

#define SLUICED_DEFAULT_LISTEN "unix:///run/sluice/sluice.sock"
#define SLUICED_DEFAULT_STATE_DIR "/var/lib/sluice"
#define SLUICED_DEFAULT_RUN_DIR "/run/sluice"
#define SLUICED_DEFAULT_CNI_CONF_DIR "/etc/cni/net.d"
/* The usual place, then Debian's (containernetworking-plugins). */
#define SLUICED_DEFAULT_CNI_BIN_DIR "/opt/cni/bin:/usr/lib/cni"
#define SLUICED_DEFAULT_RUNTIME_PATH "runc"
/* exec-mode: how pod monitors start execs (sluice-mon mon_nexec.h). */
#define SLUICED_DEFAULT_EXEC_MODE "native"
/* image-dir and import-dir default to these under state-dir. */
#define SLUICED_IMAGE_SUBDIR "images"
#define SLUICED_IMPORT_SUBDIR "import"
/* CRI stats: writable-layer walk interval, shortest CPU-rate window. */
#define SLUICED_DEFAULT_STATS_FS_REFRESH_MS 10000
#define SLUICED_DEFAULT_STATS_CPU_WINDOW_MS 1000
/* File mode of the CRI socket. */
#define SLUICED_SOCKET_MODE 0660
/* GetContainerEvents streams open at once; more are RESOURCE_EXHAUSTED. */
#define SLUICED_DEFAULT_MAX_EVENT_SUBSCRIBERS 32u
/* The cgroup the pod monitors move into, in every hierarchy, so that they
 * (and their containers' runc processes) are not in sluiced's cgroup: a
 * service manager stopping sluiced's cgroup leaves the pods alone. */
#define SLUICED_DEFAULT_MONITOR_CGROUP "/sluice/monitors"
/* Bytes of a value shown as text (--help, reload reports). */
#define SL_CONFIG_TEXT_MAX 4096
/* Bytes of a monitor-cgroup path. */
#define SL_CONFIG_CGROUP_MAX 1024
/* Bytes of an admin-listen address (host part). */
#define SLUICED_ADMIN_HOST_MAX 64
/* Largest config file read. */
#define SL_CONFIG_MAX_FILE (1024 * 1024)

typedef struct sl_config {
    const char *config_file;    /* the file read, or NULL when none */
    const char *default_config; /* read when --config is absent and it exists */
    int log_level;              /* SL_LOG_* */
    /* admin listener: /healthz, /readyz, /metrics; off while admin_port is 0 */
    const char *admin_listen; /* "" = off, "PORT", "ADDR:PORT", "[V6]:PORT" */
    char admin_address[SLUICED_ADMIN_HOST_MAX];
    uint32_t admin_port;        /* 0 with admin_listen "": off */
    const char *monitor_cgroup; /* "" = the monitors stay in sluiced's cgroup */
    const char *listen;         /* unix:///abs/path */
    const char *socket_path;    /* the path in listen */
    /* streaming server (sl_server_config) */
    const char *stream_address;
    uint32_t stream_port;
    const char *stream_base_path;
    const char *stream_advertise; /* "" = the listener's address */
    /* TLS on the streaming port; "" = plain HTTP (sl_server_set_tls) */
    const char *stream_tls_cert_file, *stream_tls_key_file, *stream_tls_client_ca_file;
    /* the limits of sluice/limits.h (address, port, base_path and
     * advertise_host unused: the fields above); max_connections is bounded
     * by the open-file limit at start */
    sl_server_config stream;
    uint32_t pf_connect_timeout_ms; /* the pod monitor's port-forward connect */
    uint32_t attach_backlog;        /* bytes an attach client may fall behind (monitor) */
    uint32_t exec_max_concurrent;   /* execs of a pod being started at once (monitor) */
    uint32_t exec_queue_max;        /* execs of a pod waiting to start (monitor) */
    uint32_t exec_stdin_pipe_size;  /* bytes of the pipe to an exec's stdin (monitor) */
    const char *exec_mode;          /* "native" or "runc" (monitor, mon_nexec.h) */
    /* gRPC server (sl_grpc_config) */
    uint32_t max_recv_message;
    uint32_t max_grpc_streams;
    uint32_t max_grpc_connections;
    uint64_t grpc_idle_timeout_ms;    /* 0: never */
    uint32_t max_grpc_stream_backlog; /* bytes waiting per server stream */
    uint32_t max_event_subscribers;
    /* directories and programs */
    const char *state_dir;
    const char *run_dir;
    const char *image_dir;   /* NULL until sl_config_finish: STATE-DIR/images */
    const char *import_dir;  /* NULL until sl_config_finish: STATE-DIR/import */
    const char *import_file; /* --import FILE, or NULL */
    const char *cni_conf_dir;
    const char *cni_bin_dir;
    const char *runtime_path;
    /* deadlines of the children sluiced runs (killed and reaped after) */
    uint32_t cni_plugin_timeout_ms;    /* one CNI plugin, ADD or DEL */
    uint32_t monitor_start_timeout_ms; /* sluice-mon until it listens */
    uint32_t monitor_restart_max;      /* adopting monitors per pod and minute */
    /* CRI stats (cri/stats.h) */
    uint32_t stats_fs_refresh_ms; /* a writable layer is walked again after this */
    uint32_t stats_cpu_window_ms; /* shortest window of usage_nano_cores */

    char **owned; /* strings this config allocated */
    size_t nowned;
} sl_config;

/* What sl_config_parse_args found besides settings. */
enum { SL_CONFIG_RUN = 0, SL_CONFIG_HELP = 1, SL_CONFIG_VERSION = 2 };

/* Fills c with the defaults. */
void sl_config_init(sl_config *c);
void sl_config_fini(sl_config *c);

/* Sets one key from its text form (as on the command line). Returns 0, or
 * -1 with *e naming the key. */
int sl_config_set(sl_config *c, const char *key, const char *value, sl_error *e);

/* Applies a JSON object of keys to values (strings for text keys, integers
 * for numbers). origin names the source in errors. Returns 0 or -1 (*e). */
int sl_config_load_json(sl_config *c, const char *text, size_t len, const char *origin,
                        sl_error *e);
int sl_config_load_file(sl_config *c, const char *path, sl_error *e);

/* Reads --config FILE first, then applies every other flag over it, then
 * sl_config_finish(). Returns SL_CONFIG_RUN, SL_CONFIG_HELP (--help/-h),
 * SL_CONFIG_VERSION (--version), or -1 with *e. */
int sl_config_parse_args(sl_config *c, int argc, char **argv, sl_error *e);

/* Fills derived defaults (image-dir, import-dir) and checks the whole.
 * Returns 0 or -1 (*e). */
int sl_config_finish(sl_config *c, sl_error *e);

/* The --help text: every key, its default and meaning. */
void sl_config_usage(FILE *f, const char *prog);
/* The same list as Markdown definitions for the man pages: flags
 * (sluiced(8)), or JSON keys with their types (json: sluiced.json(5)). */
void sl_config_usage_markdown(FILE *f, bool json);

/* A key whose value differs after a reload: was and now as text; applied
 * tells whether the running daemon took it (else it needs a restart). */
typedef void (*sl_config_change_fn)(void *arg, const char *key, const char *was, const char *now,
                                    bool applied);
/* SIGHUP: compares running with fresh (parsed again from the same
 * command line and file), copies the keys that may change live into
 * running and calls fn for every key that differs. Returns how many were
 * applied. */
size_t sl_config_reload(sl_config *running, const sl_config *fresh, sl_config_change_fn fn,
                        void *arg);

#endif
