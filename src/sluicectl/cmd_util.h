/* Helpers shared by the command files: list flags, label filters, ID
 * loops and message printing. */
#ifndef SLUICECTL_CMD_UTIL_H
#define SLUICECTL_CMD_UTIL_H

#include "ctl.h"

enum { CU_NO_TRUNC = 1000 };
typedef enum cu_kind { CU_POD, CU_CTR, CU_RAW } cu_kind;

/* Flags common to the list commands: -o -q -v --no-trunc -l -n. */
typedef struct cu_list_opts {
    ctl_out out;
    bool quiet, verbose, no_trunc, latest;
    uint64_t last;
} cu_list_opts;
int cu_list_opt(ctl *c, cu_list_opts *l, int id, const char *val);
/* How many of n items to show under --latest / --last. */
size_t cu_limit(const cu_list_opts *l, size_t n);

/* --label KEY=VALUE filters as map entries of descriptor d. */
typedef struct cu_labels {
    const ProtobufCMessageDescriptor *d;
    ProtobufCMessage **ents;
    size_t n;
} cu_labels;
int cu_labels_add(ctl *c, cu_labels *l, const char *kv, const char *flag);
void cu_labels_free(cu_labels *l);

/* A -o only option table: arg is a cu_out_arg. */
typedef struct cu_out_arg {
    ctl *c;
    ctl_out *out;
    bool table_ok;
} cu_out_arg;
int cu_out_opt(void *arg, int id, const char *val);
/* ctl_parse for a command whose one flag is -o/--output (into oa) and that
 * takes no arguments (noargs: the usage error when it gets some).
 * Nonzero when the command is to stop and return *rc (help, usage error). */
int cu_parse_out_only(ctl *c, int argc, char **argv, const char *help, cu_out_arg *oa,
                      const char *noargs, int *rc);

/* -o and crictl's -q/--quiet ("do not show verbose information") of info
 * and the inspect commands: arg is a cu_inspect. */
typedef struct cu_inspect {
    ctl *c;
    ctl_out out;
    bool quiet;
} cu_inspect;
int cu_inspect_opt(void *arg, int id, const char *val);
/* ctl_parse of -o and -q into o (info and the inspect commands). */
int cu_parse_inspect(ctl *c, int argc, char **argv, const char *help, cu_inspect *o, int *first,
                     int *rc);
/* Prints a status answer as JSON/YAML, without its "info" under -q. */
void cu_print_status(const ProtobufCMessage *m, const cu_inspect *o);
int cu_no_opt(void *arg, int id, const char *val);

/* Resolves each ref (by kind) and calls fn, which returns 0 or -1 with e
 * set; prints each failure once (ctl_fail) and goes on with the others.
 * Returns 0 or CTL_EXIT_FAIL if any failed. */
typedef int (*cu_each_fn)(ctl *c, const char *id, void *arg, sl_error *e);
int cu_each(ctl *c, int n, char **refs, cu_kind kind, cu_each_fn fn, void *arg);
/* cu_each over argv[first..argc) (what ctl_parse left), which must not
 * be empty: need is the usage error then. */
int cu_each_arg(ctl *c, int argc, char **argv, int first, const char *need, cu_kind kind,
                cu_each_fn fn, void *arg);
/* A whole command without flags (start, stopp): one or more refs of kind,
 * each done by fn (arg NULL). */
int cu_plain_cmd(ctl *c, int argc, char **argv, const char *help, const char *need, cu_kind kind,
                 cu_each_fn fn);
/* A whole inspect command (inspect, inspectp, inspecti): -o (json by
 * default), -q, then one or more refs of kind, each shown by fn (arg: the
 * cu_inspect). */
int cu_inspect_cmd(ctl *c, int argc, char **argv, const char *help, const char *need, cu_kind kind,
                   cu_each_fn fn);

bool cu_regex_match(const char *pattern, const char *s);
/* "Title:\n    k -> v" for a string map (entries of any *Entry type). */
void cu_print_map(const char *title, ProtobufCMessage **ents, size_t n);
void cu_print_msg(const ProtobufCMessage *m, ctl_out out);
/* {"key": [items...]} as JSON or YAML. */
void cu_print_list(const char *key, ProtobufCMessage **items, size_t n, ctl_out out);

/* ---- commands that run until interrupted (stats -w, events) ---- */
/* SIGINT, SIGTERM and SIGHUP set a flag instead of killing sluicectl, so
 * such a command ends its calls and exits 0 (as crictl does on ^C). */
void cu_catch_interrupts(void);
bool cu_interrupted(void);
/* Sleeps ms, or less when interrupted; false when interrupted. */
bool cu_sleep_ms(uint64_t ms);
/* Clears a terminal (crictl's watch mode), only when stdout is one. */
void cu_clear_screen(void);
#define CU_WATCH_PERIOD_MS 500 /* -w: between the end of one display and the next */

/* ---- stats (cmd_stats.c) ---- */
/* CPU % between two samples as crictl computes it (0 without CPU time);
 * -1 when the runtime took no new sample in between. */
double cu_cpu_percent(const Runtime__V1__CpuUsage *now, const Runtime__V1__CpuUsage *before);
/* stats and statsp: one answer printed as JSON/YAML, or two samples
 * seconds apart and the table made from them; with watch, again until
 * interrupted. */
typedef struct cu_sampler {
    ctl *c;
    const char *method; /* ListContainerStats, ListPodSandboxStats */
    const ProtobufCMessage *req;
    const ProtobufCMessageDescriptor *resp;
    void (*sort)(ProtobufCMessage *r); /* the answer's entries, by ID */
    /* Prints the table of two samples (after clearing a terminal under
     * watch); 0 or -1 with e set. */
    int (*table)(void *arg, const ProtobufCMessage *old, const ProtobufCMessage *now, sl_error *e);
    void *arg;
    ctl_out out;
    bool watch;
    uint64_t seconds;
} cu_sampler;
/* 0 (an interrupt too) or -1 with e set. */
int cu_sample(const cu_sampler *s, sl_error *e);

/* ---- pulling (cmd_pull.c), shared by pull, create and run ---- */
enum {
    CU_CREDS = 1100,
    CU_AUTH,
    CU_USERNAME,
    CU_PULL_TIMEOUT,
    CU_WITH_PULL,
    CU_NO_PULL,
    CU_CANCEL_TIMEOUT,
};
/* crictl's registry and pull-deadline flags (pull adds -u for --username). */
#define CU_PULL_AUTH_OPTS                                                                          \
    {"creds", required_argument, NULL, CU_CREDS}, {"auth", required_argument, NULL, CU_AUTH},      \
        {"username", required_argument, NULL, CU_USERNAME},                                        \
        {"pull-timeout", required_argument, NULL, CU_PULL_TIMEOUT},                                \
    {                                                                                              \
        "pt", required_argument, NULL, CU_PULL_TIMEOUT                                             \
    }
/* ... and create's and run's: --with-pull, --no-pull, -T/--cancel-timeout. */
#define CU_PULL_CREATE_OPTS                                                                        \
    CU_PULL_AUTH_OPTS, {"with-pull", no_argument, NULL, CU_WITH_PULL},                             \
        {"no-pull", no_argument, NULL, CU_NO_PULL},                                                \
    {                                                                                              \
        "cancel-timeout", required_argument, NULL, CU_CANCEL_TIMEOUT                               \
    }
typedef struct cu_pull {
    const char *creds, *auth, *username;
    uint64_t timeout_ms; /* --pull-timeout; 0 = none */
    uint64_t cancel_ms;  /* --cancel-timeout (create, run); 0 = the default */
    bool with, without;  /* --with-pull, --no-pull */
    Runtime__V1__AuthConfig ac;
    char *password, *user; /* owned */
} cu_pull;
/* One of the flags above: 0, -1 (a usage error, printed) or 1 when id is
 * not one. */
int cu_pull_opt(ctl *c, cu_pull *p, int id, const char *val);
/* PullImage of img (for sandbox, may be NULL) with the credentials of p;
 * with only_missing, nothing is pulled when ImageStatus has the image.
 * Returns the image reference (malloc'd) or NULL with e set. */
char *cu_pull_image(ctl *c, cu_pull *p, Runtime__V1__ImageSpec *img,
                    Runtime__V1__PodSandboxConfig *sandbox, bool only_missing, sl_error *e);
void cu_pull_fini(cu_pull *p);

/* ---- create, start, runp pieces shared with run ---- */
/* The deadline of a slow call: cancel_ms when given, else the default. */
uint32_t cu_slow_deadline(ctl *c, uint64_t cancel_ms);
/* Whether to pull: --with-pull/--no-pull, else dflt (the config file). */
int cu_want_pull(ctl *c, const cu_pull *p, bool dflt, bool *pull);
/* CreateContainer (after pulling a missing image when pull); the new ID
 * (malloc'd) or NULL with e set. */
char *cu_create_ctr(ctl *c, cu_pull *p, bool pull, const char *pod,
                    Runtime__V1__ContainerConfig *cfg, Runtime__V1__PodSandboxConfig *pcfg,
                    sl_error *e);
/* StartContainer; prints the ID as crictl does. 0 or -1 with e set. */
int cu_start_ctr(ctl *c, const char *id, sl_error *e);
/* RunPodSandbox; the pod ID (malloc'd) or NULL with e set. */
char *cu_run_pod(ctl *c, Runtime__V1__PodSandboxConfig *cfg, const char *handler,
                 uint64_t cancel_ms, sl_error *e);

#endif
