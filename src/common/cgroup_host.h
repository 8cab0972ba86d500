/* What the host's cgroups offer, for sluiced (to validate and convert a
 * container's resources before runc sees them) and sluice-mon (to find a
 * container's OOM-kill counter). The parsers are pure functions over the
 * text of /proc and /sys files; sl_cg_probe and sl_cg_oom_file read them.
 *
 * Two layouts are handled: cgroup v1 (one hierarchy per controller, e.g.
 * /sys/fs/cgroup/memory, possibly with an empty v2 hierarchy beside it,
 * which runc leaves alone) and the v2 unified hierarchy at /sys/fs/cgroup. */
#ifndef SL_CGROUP_HOST_H
#define SL_CGROUP_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sys_error.h"

#define SL_CG_ROOT "/sys/fs/cgroup"
#define SL_CG_MAX_CPUS 8192        /* cpus (and memory nodes) a list may name */
#define SL_CG_LIST_MAX 4096        /* bytes of a cpu or node list */
#define SL_CG_MAX_HUGEPAGE_SIZES 8 /* huge page sizes of one host */
#define SL_CG_FILE_MAX 65536       /* bytes read of a /proc or cgroup file */
#define SL_CG_OOM_MIN (-1000)      /* oom_score_adj range */
#define SL_CG_OOM_MAX 1000
#define SL_CG_PAGE_SIZE_MAX 16         /* bytes of a page size name such as "2MB" */
#define SL_CG_MOUNTINFO_LINE_MAX 16384 /* longer mountinfo lines are skipped */

typedef struct sl_cg_bits {
    uint64_t w[SL_CG_MAX_CPUS / 64];
} sl_cg_bits;

typedef struct sl_cg_hugepage {
    uint64_t size; /* bytes */
    uint64_t pool; /* pages that can exist: nr_hugepages + nr_overcommit_hugepages */
} sl_cg_hugepage;

typedef struct sl_cg_host {
    bool v2;         /* the unified hierarchy is mounted at SL_CG_ROOT */
    bool memsw;      /* swap accounting: v1 memory.memsw.*, v2 memory.swap.max */
    bool hugetlb;    /* a hugetlb controller runc uses (v1 hierarchy, or v2) */
    sl_cg_bits cpus; /* online cpus */
    sl_cg_bits mems; /* online memory nodes */
    char cpus_text[SL_CG_LIST_MAX], mems_text[SL_CG_LIST_MAX];
    sl_cg_hugepage hugepages[SL_CG_MAX_HUGEPAGE_SIZES];
    size_t n_hugepages;
    int oom_floor; /* lowest oom_score_adj a container may get (see .c) */
} sl_cg_host;

/* Parses a kernel cpu/node list ("0-3,8,10-11") into bits (cleared
 * first). Strict: no spaces, ranges ascending, every number below
 * SL_CG_MAX_CPUS; "" is the empty set. Returns 0, or -1 with a short reason
 * in *why (static text). */
int sl_cg_list_parse(const char *text, sl_cg_bits *bits, const char **why);
/* The first bit set in a and not in b, or -1 when a is a subset of b. */
int sl_cg_bits_missing(const sl_cg_bits *a, const sl_cg_bits *b);

/* A huge page size name as the kubelet and runc write it ("64KB", "2MB",
 * "1GB": a number and one of KB MB GB TB PB, 1024-based) into bytes.
 * Returns 0 or -1. */
int sl_cg_page_size_parse(const char *name, uint64_t *bytes);
/* The name of a size in bytes, into out (SL_CG_PAGE_SIZE_MAX bytes). */
void sl_cg_page_size_name(uint64_t bytes, char *out);

/* The number after "key " on its own line of text (memory.events,
 * memory.oom_control). Returns 0, or -1 when the key is absent. */
int sl_cg_kv_get(const char *text, const char *key, uint64_t *value);

/* From the text of /proc/<pid>/cgroup: the path of controller's hierarchy
 * (v1, a line "N:a,b:/path" naming it), or of the unified one when
 * controller is NULL (the "0::/path" line). Returns 0 (out filled), or -1. */
int sl_cg_proc_path(const char *text, const char *controller, char *out, size_t outlen);

/* From the text of /proc/self/mountinfo: the mount point and the mount
 * root of the v1 hierarchy whose super options name controller (NULL: the
 * v2 hierarchy, fstype cgroup2). Returns 0, or -1 when no such hierarchy is
 * mounted. */
int sl_cg_mountinfo_find(const char *text, const char *controller, char *mnt, size_t mntlen,
                         char *root, size_t rootlen);

/* Reads everything above from the running host. Returns 0 or -1 (*e). */
int sl_cg_probe(sl_cg_host *h, sl_error *e);

/* The file holding pid's memory cgroup OOM-kill counter ("oom_kill N"):
 * memory.events on v2, memory.oom_control on v1. Malloc'd, or NULL when
 * pid has no memory cgroup (or is gone). */
char *sl_cg_oom_file(pid_t pid);
/* The counter in that file. Returns 0 or -1 (file gone, no counter: a
 * kernel before 4.13). */
int sl_cg_oom_kills(const char *file, uint64_t *n);

#endif
