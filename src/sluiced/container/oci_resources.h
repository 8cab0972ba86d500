/* A container's Linux resources as sluiced applies them: the fields of the
 * CRI LinuxContainerResources (same names, same units), checked against
 * what the host offers and resolved (swap default, oom_score_adj floor),
 * their OCI linux.resources form for `runc create` and `runc update`, and
 * the record form kept with the container. Pure: the host comes in as an
 * sl_cg_host. */
#ifndef SL_OCI_RESOURCES_H
#define SL_OCI_RESOURCES_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup_host.h"
#include "sys_error.h"

#define SL_RES_MAX_HUGEPAGES SL_CG_MAX_HUGEPAGE_SIZES /* one limit per size */
#define SL_RES_MAX_UNIFIED 64                         /* entries of unified */
#define SL_RES_UNIFIED_KEY_MAX 64                     /* bytes of a unified key */
#define SL_RES_UNIFIED_VALUE_MAX 1024                 /* bytes of a unified value */
#define SL_RES_MIN_MEMORY (6 * 1024 * 1024)           /* as Docker: runc init itself needs memory */
#define SL_RES_CPU_PERIOD_MIN 1000                    /* µs: the kernel's CFS period range */
#define SL_RES_CPU_PERIOD_MAX 1000000
#define SL_RES_CPU_QUOTA_MIN 1000                     /* µs: the kernel's minimum */
#define SL_RES_CPU_QUOTA_MAX ((INT64_C(1) << 44) - 1) /* µs: the kernel's maximum */
#define SL_RES_CPU_SHARES_MIN 2                       /* cgroup v1 cpu.shares range */
#define SL_RES_CPU_SHARES_MAX 262144

typedef struct sl_res_hugepage {
    const char *page_size; /* "2MB" */
    uint64_t limit;        /* bytes */
} sl_res_hugepage;

typedef struct sl_res_kv {
    const char *key, *value;
} sl_res_kv;

/* Strings are borrowed from whatever the struct was filled from. */
typedef struct sl_res {
    int64_t cpu_period, cpu_quota, cpu_shares; /* 0 = unset; quota -1 = no limit */
    int64_t memory_limit_in_bytes;             /* 0 = unset, -1 = no limit */
    int64_t memory_swap_limit_in_bytes;        /* memory + swap; 0 = unset, -1 = no limit */
    int64_t oom_score_adj;
    const char *cpuset_cpus, *cpuset_mems; /* NULL or "" = unset */
    sl_res_hugepage hugepage_limits[SL_RES_MAX_HUGEPAGES];
    size_t n_hugepage_limits;
    sl_res_kv unified[SL_RES_MAX_UNIFIED];
    size_t n_unified;
} sl_res;

/* Checks r against the host and resolves it in place: swap defaults to the
 * memory limit where the host accounts swap (as containerd does, so a
 * container does not swap unless asked), oom_score_adj is raised to the
 * host's floor. On error returns -1 with e->code INVALID_ARGUMENT (a bad
 * value) or UNIMPLEMENTED (a value this host cannot apply) and a message
 * naming the field as "<prefix>.<field>". */
int sl_res_check(sl_res *r, const sl_cg_host *h, const char *prefix, sl_error *e);

/* The OCI linux.resources members for a checked r (memory, cpu,
 * hugepageLimits, unified; without devices). Hugepage limits are left out
 * where the host has no hugetlb controller: sl_res_check accepted them
 * there only because the host's pool cannot exceed them. NULL on ENOMEM. */
json_t *sl_res_oci(const sl_res *r, const sl_cg_host *h);

/* Update semantics (containerd's): every field upd sets (non-zero,
 * non-empty) replaces cur's; a new memory limit without a swap limit
 * resets the swap limit so that sl_res_check defaults it again; hugepage
 * limits are replaced per page size and unified entries per key. Returns
 * 0, or -1 (*e, INVALID_ARGUMENT) when the merged lists would overflow. */
int sl_res_merge(sl_res *cur, const sl_res *upd, const char *prefix, sl_error *e);

/* The record form: an object with the CRI field names. NULL on ENOMEM. */
json_t *sl_res_to_json(const sl_res *r);
/* Fills r from a record (strings borrowed from j); a NULL or non-object j
 * gives the empty resources. */
void sl_res_from_json(const json_t *j, sl_res *r);

#endif
