/* sluicectl: shared state of the CLI and the helpers every command uses.
 * Commands live one group per file (cmd_*.c), each with its own option
 * table; main.c parses the global flags and dispatches. */
#ifndef SLUICECTL_CTL_H
#define SLUICECTL_CTL_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "cri_client.h"
#include "sys_error.h"
#include "grpc/api.pb-c.h"

#define CTL_NAME "sluicectl"
#define CTL_VERSION "0.1.0"
#define CTL_DEFAULT_ENDPOINT "unix:///run/sluice/sluice.sock"
#define CTL_DEFAULT_CONFIG "/etc/sluicectl.yaml"
#define CTL_DEFAULT_IMPORT_DIR "/var/lib/sluice/import"
#define CTL_DEFAULT_TIMEOUT_MS 2000u
/* Calls that start or stop pods and containers do real work: at least this. */
#define CTL_SLOW_TIMEOUT_MS 60000u
/* The deadline of a call the user asked not to bound (0 for a duration). */
#define CTL_NO_DEADLINE_MS (24u * 3600 * 1000)
/* Largest config file (sluicectl.yaml) and pod/container config read. */
#define CTL_MAX_CONFIG_FILE (1024u * 1024)
/* Nesting of objects in a pod/container config, and YAML nodes converted
 * (aliases may repeat a node: this bounds what they expand to). */
#define CTL_MAX_CONFIG_DEPTH 32
#define CTL_MAX_CONFIG_NODES 100000u
/* Bytes of an ID shown in tables without --no-trunc (crictl's). */
#define CTL_TRUNC_ID 13
/* Exit codes: 1 = failure (as crictl), 2 = usage error. */
#define CTL_EXIT_FAIL 1
#define CTL_EXIT_USAGE 2

typedef enum ctl_out { CTL_OUT_TABLE, CTL_OUT_JSON, CTL_OUT_YAML } ctl_out;

typedef struct ctl {
    const char *runtime_endpoint; /* NULL = try the defaults in order */
    const char *image_endpoint;   /* NULL = the runtime endpoint */
    uint32_t timeout_ms;
    bool debug;
    bool pull_on_create, no_pull_on_run; /* the config file's crictl keys */
    const char *import_dir;
    const char *config_path;
    sl_cri_client *rt; /* connected on first use */
    sl_cri_client *img;
    const char *rt_endpoint_used;
    const char *cmd; /* the command being run, for messages */
} ctl;

/* A command: run(ctl, argc, argv) with argv[0] the command's name. */
typedef struct ctl_cmd {
    const char *name;
    const char *alias;
    const char *summary;
    int (*run)(ctl *c, int argc, char **argv);
} ctl_cmd;

/* ---- the dispatch table and global flags (main.c), for completion ---- */
const ctl_cmd *ctl_commands(size_t *n);
const struct option *ctl_global_options(size_t *n);

/* ---- messages (msg.c) ---- */
void ctl_debug(ctl *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ctl_warn(ctl *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints e, the one report of a command's failure ("sluicectl CMD: msg"),
 * and returns CTL_EXIT_FAIL. */
int ctl_fail(ctl *c, const sl_error *e);

/* ---- option parsing (opts.c) ----
 * Parses argv with getopt_long (argv[0] = command). "+" at the start of
 * shortopts stops at the first operand. --help/-h prints help and returns
 * 1 with *rc = 0; a bad flag prints an error naming it and returns 1 with
 * *rc = CTL_EXIT_USAGE. Each option calls on_opt(arg, id, optarg); a
 * non-zero return is a usage error (it printed why). Returns 0 and sets
 * *first to the index of the first operand. */
#define CTL_OPT_HELP                                                                               \
    {                                                                                              \
        "help", no_argument, NULL, 'h'                                                             \
    }
#define CTL_OPT_END                                                                                \
    {                                                                                              \
        NULL, 0, NULL, 0                                                                           \
    }
typedef int (*ctl_opt_fn)(void *arg, int id, const char *val);
int ctl_parse(ctl *c, int argc, char **argv, const char *shortopts, const struct option *longopts,
              const char *help, ctl_opt_fn on_opt, void *arg, int *first, int *rc);
int ctl_usage(ctl *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ctl_parse_out(ctl *c, const char *val, ctl_out *out, bool table_ok);
int ctl_parse_uint(ctl *c, const char *flag, const char *val, uint64_t max, uint64_t *out);
/* A decimal integer of either sign; a usage error "FLAG: \"VAL\" is not an
 * integer" (printed, CTL_EXIT_USAGE returned) otherwise. */
int ctl_parse_int(ctl *c, const char *flag, const char *val, int64_t *out);
/* Go-style duration ("2s", "500ms", "1m30s") or plain seconds ("2"). */
int ctl_parse_duration_ms(const char *val, uint64_t *ms);

/* ---- config file and environment (config.c) ---- */
#define CTL_CONFIG_MAX_VALUE 4096 /* bytes of one value, with its NUL */
enum {
    CTL_KEY_RT,
    CTL_KEY_IMG,
    CTL_KEY_TIMEOUT,
    CTL_KEY_DEBUG,
    CTL_KEY_IMPORT,
    CTL_KEY_PULL_CREATE,
    CTL_KEY_NOPULL_RUN,
    CTL_NKEYS
};
/* Loads path ("key: value" lines; keys runtime-endpoint, image-endpoint,
 * timeout, debug, import-dir, pull-image-on-create, disable-pull-on-run).
 * Only keys not already set by flags apply. A missing file is 1 (nothing
 * read) unless required (then an error); 0 when read; -1 with e naming
 * the file and line, or the file and errno when it could not be read. */
int ctl_config_load(ctl *c, const char *path, bool required, const bool *set_by_flag, sl_error *e);
/* Checks val (from origin: "flag", a variable, "FILE:LINE") and applies
 * it; -1 with e saying why it is wrong. */
int ctl_config_set(ctl *c, int key, const char *val, const char *origin, sl_error *e);
/* Checks a value for key without applying it; -1 with e saying why. */
int ctl_config_check(int key, const char *val, const char *origin, sl_error *e);
/* The file's values (defaults for keys it lacks; a missing file is all
 * defaults). -1 with e set as ctl_config_load sets it. */
int ctl_config_read(const char *path, char out[CTL_NKEYS][CTL_CONFIG_MAX_VALUE], sl_error *e);
/* Rewrites path with the keys whose newv[] is not NULL set (their lines
 * replaced where they are, else appended; everything else kept), through
 * a temporary file and a rename. -1 with e naming the failing step and
 * its errno; an existing file that cannot be read is left alone. */
int ctl_config_write(const char *path, const char *const newv[CTL_NKEYS], sl_error *e);
int ctl_config_key(const char *name); /* -1 when unknown */
const char *ctl_config_key_name(int key);
const char *ctl_config_key_default(int key);
int ctl_parse_bool(const char *v, bool *out); /* true/yes/on/1, false/no/off/0 */

/* ---- CRI calls (rpc.c) ----
 * Nothing here prints an error: every failure is an sl_error (e->code the
 * gRPC status where there is one) with the method and a hint saying what
 * to do, for the command to print once (ctl_fail). */
/* Calls a RuntimeService / ImageService method by name ("Version").
 * Returns the response, or NULL with e set (an unreachable runtime too). */
ProtobufCMessage *ctl_rt_call(ctl *c, const char *method, const ProtobufCMessage *req,
                              const ProtobufCMessageDescriptor *resp_desc, sl_error *e);
ProtobufCMessage *ctl_img_call(ctl *c, const char *method, const ProtobufCMessage *req,
                               const ProtobufCMessageDescriptor *resp_desc, sl_error *e);
/* ctl_rt_call with a deadline of at least CTL_SLOW_TIMEOUT_MS. */
ProtobufCMessage *ctl_rt_call_slow(ctl *c, const char *method, const ProtobufCMessage *req,
                                   const ProtobufCMessageDescriptor *resp_desc, sl_error *e);
/* ctl_call_raw's answer when no connection could be made (e says why). */
#define CTL_NOT_CONNECTED (-2)
/* The same with an explicit timeout, returning the status: SL_CRI_OK, a
 * gRPC code with err holding the raw error for callers that branch on it,
 * or CTL_NOT_CONNECTED; e is set whenever the call failed. */
int ctl_call_raw(ctl *c, bool image, const char *method, const ProtobufCMessage *req,
                 const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp,
                 uint32_t timeout_ms, sl_error *err, sl_error *e);
/* The error of a failed call as the user reads it: the method, what
 * failed, and a hint where one helps (e->code: the gRPC status). */
void ctl_call_error(ctl *c, const char *method, const sl_error *err, sl_error *e);
/* A server-streaming RuntimeService call without deadline, until the
 * runtime ends it (0) or cb does (0); -1 with e set. */
int ctl_rt_stream(ctl *c, const char *method, const ProtobufCMessage *req,
                  const ProtobufCMessageDescriptor *resp_desc, const sl_cri_stream_cb *cb,
                  sl_error *e);
void ctl_free_msg(void *m);
/* Resolves a container / pod ID, a unique ID prefix or a name (a name that
 * several attempts of one container, or of one pod in a namespace, carry
 * means the newest). NULL with e naming the command that lists them when
 * nothing (e->code SL_CRI_NOT_FOUND) or more than one matches. The result
 * is malloc'd. */
char *ctl_resolve_ctr(ctl *c, const char *ref, sl_error *e);
char *ctl_resolve_pod(ctl *c, const char *ref, sl_error *e);
void ctl_disconnect(ctl *c);
/* Connects the image service and returns its endpoint, for a second
 * connection of another thread; NULL with e set when unreachable. */
const char *ctl_image_endpoint(ctl *c, sl_error *e);

/* ---- output (output.c) ---- */
typedef struct ctl_table ctl_table;
ctl_table *ctl_table_new(int ncols, const char *const *headers);
void ctl_table_add(ctl_table *t, const char *const *cells);
void ctl_table_print(ctl_table *t); /* and frees */
void ctl_table_free(ctl_table *t);
void ctl_print_json(json_t *j); /* indented, newline; steals nothing */
void ctl_print_yaml(json_t *j);
void ctl_print_doc(json_t *j, ctl_out out); /* JSON or YAML */
/* "2 minutes ago" from a nanosecond timestamp. */
void ctl_ago(int64_t ns, char *out, size_t outlen);
void ctl_human_size(uint64_t bytes, char *out, size_t outlen); /* 3 digits, as crictl images */
/* Decimal units with that many significant digits (crictl stats: 4). */
void ctl_human_size_prec(uint64_t bytes, int digits, char *out, size_t outlen);
/* ID cut to CTL_TRUNC_ID (after a "sha256:" prefix) unless no_trunc. */
void ctl_trunc_id(const char *id, bool no_trunc, char *out, size_t outlen);
const char *ctl_pod_state(int s);
const char *ctl_ctr_state(int s);

/* ---- protobuf <-> JSON (pbjson.c) ---- */
json_t *ctl_msg_to_json(const ProtobufCMessage *m);
typedef struct ctl_arena ctl_arena;
ctl_arena *ctl_arena_new(void);
void ctl_arena_free(ctl_arena *a);
/* A message of d from a JSON tree, allocated in a; NULL with e saying
 * where ("metadata.nmespace: unknown field (not in PodSandboxMetadata)"). */
ProtobufCMessage *ctl_json_to_msg(const ProtobufCMessageDescriptor *d, json_t *j, ctl_arena *a,
                                  sl_error *e);
/* The field of d named key (proto name or lowerCamelCase), or NULL. */
const ProtobufCFieldDescriptor *ctl_pb_field(const ProtobufCMessageDescriptor *d, const char *key);

/* ---- pod/container config files (docload.c) ----
 * Reads a config file into a message of d allocated in a: JSON when its
 * first non-blank byte is '{' (as crictl decides), else YAML (one
 * document; anchors and aliases; at most CTL_MAX_CONFIG_NODES nodes). A
 * plain YAML scalar takes the type of the field it fills: `uid: 123` is
 * the string "123", `privileged: yes` is true, `network: NODE` or `2` an
 * enum. NULL with e naming the file and the line and column (JSON
 * syntax, YAML syntax, YAML unknown fields) or the field's path (e->errnum
 * set when the file could not be read). */
ProtobufCMessage *ctl_doc_load(const char *path, const ProtobufCMessageDescriptor *d, ctl_arena *a,
                               sl_error *e);
/* The same for text already in memory; name stands for the file. */
ProtobufCMessage *ctl_doc_parse(const char *text, size_t len, const char *name,
                                const ProtobufCMessageDescriptor *d, ctl_arena *a, sl_error *e);
/* ---- logs --since (since.c) ----
 * As crictl (docker's GetTimestamp): a Go duration back from now, cut to
 * whole seconds ("42m", "1h30m", "-5s"); an RFC 3339 date or time, local
 * time without a zone ("2013-01-02", "2013-01-02T13:23", "…:37.5Z",
 * "…+02:00"); or Unix seconds ("1700000000.25"). ns since the epoch; -1
 * when val is none of them. ctl_parse_since_at takes "now" for tests. */
int ctl_parse_since(const char *val, int64_t *ns);
int ctl_parse_since_at(const char *val, int64_t now_ns, int64_t *ns);

/* ---- commands ---- */
int cmd_version(ctl *c, int argc, char **argv);
int cmd_kubeconfig(ctl *c, int argc, char **argv);
int cmd_info(ctl *c, int argc, char **argv);
int cmd_runp(ctl *c, int argc, char **argv);
int cmd_stopp(ctl *c, int argc, char **argv);
int cmd_rmp(ctl *c, int argc, char **argv);
int cmd_pods(ctl *c, int argc, char **argv);
int cmd_inspectp(ctl *c, int argc, char **argv);
int cmd_create(ctl *c, int argc, char **argv);
int cmd_start(ctl *c, int argc, char **argv);
int cmd_stop(ctl *c, int argc, char **argv);
int cmd_rm(ctl *c, int argc, char **argv);
int cmd_ps(ctl *c, int argc, char **argv);
int cmd_inspect(ctl *c, int argc, char **argv);
int cmd_logs(ctl *c, int argc, char **argv);
int cmd_images(ctl *c, int argc, char **argv);
int cmd_inspecti(ctl *c, int argc, char **argv);
int cmd_rmi(ctl *c, int argc, char **argv);
int cmd_image(ctl *c, int argc, char **argv);
int cmd_exec(ctl *c, int argc, char **argv);
int cmd_attach(ctl *c, int argc, char **argv);
int cmd_port_forward(ctl *c, int argc, char **argv);
int cmd_config(ctl *c, int argc, char **argv);
int cmd_pull(ctl *c, int argc, char **argv);
int cmd_run(ctl *c, int argc, char **argv);
int cmd_stats(ctl *c, int argc, char **argv);
int cmd_statsp(ctl *c, int argc, char **argv);
int cmd_imagefsinfo(ctl *c, int argc, char **argv);
int cmd_update(ctl *c, int argc, char **argv);
int cmd_events(ctl *c, int argc, char **argv);
int cmd_completion(ctl *c, int argc, char **argv);
int cmd_runtime_config(ctl *c, int argc, char **argv);
int cmd_update_runtime_config(ctl *c, int argc, char **argv);
int cmd_metricsp(ctl *c, int argc, char **argv);
int cmd_checkpoint(ctl *c, int argc, char **argv);

#endif
