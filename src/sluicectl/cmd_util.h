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
int cu_labels_add(ctl *c, cu_labels *l, const char *kv);
void cu_labels_free(cu_labels *l);

/* A -o only option table: arg is a cu_out_arg. */
typedef struct cu_out_arg {
    ctl *c;
    ctl_out *out;
    bool table_ok;
} cu_out_arg;
int cu_out_opt(void *arg, int id, const char *val);
int cu_no_opt(void *arg, int id, const char *val);

/* Resolves each ref (by kind) and calls fn; returns 0 or CTL_EXIT_FAIL if
 * any failed (the others still run). */
int cu_each(ctl *c, int n, char **refs, cu_kind kind, int (*fn)(ctl *c, const char *id, void *arg),
            void *arg);

bool cu_regex_match(const char *pattern, const char *s);
/* "Title:\n    k -> v" for a string map (entries of any *Entry type). */
void cu_print_map(const char *title, ProtobufCMessage **ents, size_t n);
void cu_print_msg(const ProtobufCMessage *m, ctl_out out);
/* {"key": [items...]} as JSON or YAML. */
void cu_print_list(const char *key, ProtobufCMessage **items, size_t n, ctl_out out);

#endif
