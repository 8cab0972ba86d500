/* A cgroup's usage figures, for the CRI stats calls: cgroup v1 (one
 * hierarchy per controller, <root>/<controller>/<path>) or v2 (the unified
 * hierarchy, <root>/<path>). A path is a cgroup path as in an OCI spec's
 * linux.cgroupsPath ("/sluice/<pod>/<container>"), relative to the root of
 * each hierarchy. Files are read as the kernel writes them; the parsers are
 * pure functions on their text, so fixtures of both versions test them.
 *
 * Field sources (v1 | v2):
 *   cpu_ns         cpuacct.usage                | cpu.stat usage_usec * 1000
 *   mem_usage      memory.usage_in_bytes        | memory.current
 *   mem_limit      memory.limit_in_bytes        | memory.max
 *   inactive_file  memory.stat total_inactive_file | memory.stat inactive_file
 *   rss            memory.stat total_rss        | memory.stat anon
 *   pgfault, pgmajfault  memory.stat total_pgfault, total_pgmajfault | pgfault, pgmajfault
 *   swap_usage     memory.memsw.usage_in_bytes - memory.usage_in_bytes | memory.swap.current
 *   swap_limit     memory.memsw.limit_in_bytes - memory.limit_in_bytes | memory.swap.max
 *   nprocs         lines of cgroup.procs in the cgroup and its descendants
 *                  (v1: in the pids hierarchy, else cpuacct's) */
#ifndef SL_STATS_CGROUP_H
#define SL_STATS_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys_error.h"

#define SL_CG_ROOT "/sys/fs/cgroup"
/* Bytes of one cgroup file read whole (memory.stat is about 1.5 KiB). */
#define SL_CG_FILE_MAX 65536
/* A limit above this means "no limit": v1 writes PAGE_COUNTER_MAX pages
 * (9223372036854771712), rounded by the kernel; containerd and cAdvisor use
 * the same bound. */
#define SL_CG_UNLIMITED_ABOVE (1ULL << 62)
/* Levels of descendant cgroups searched for processes. */
#define SL_CG_MAX_DEPTH 32
/* Value of a limit that is not set. */
#define SL_CG_NO_LIMIT UINT64_MAX

typedef enum sl_cg_mode {
    SL_CG_NONE = 0, /* no cgroup file system at root */
    SL_CG_V1 = 1,
    SL_CG_V2 = 2,
} sl_cg_mode;

/* What one read found; a flag is false when the files were missing. */
typedef struct sl_cg_stats {
    bool cpu;
    uint64_t cpu_ns; /* cumulative CPU time, all cores */
    bool mem;
    uint64_t mem_usage, mem_limit; /* mem_limit SL_CG_NO_LIMIT when unset */
    uint64_t inactive_file, rss, pgfault, pgmajfault;
    bool swap;
    uint64_t swap_usage, swap_limit; /* swap_limit SL_CG_NO_LIMIT when unset */
    bool procs;
    uint64_t nprocs;
} sl_cg_stats;

/* v2 when root is a cgroup2 mount, v1 when it holds a v1 cpuacct or memory
 * hierarchy, else SL_CG_NONE. */
sl_cg_mode sl_cg_detect(const char *root);

/* Reads the cgroup at path (absolute in its hierarchy). Returns 0 when it
 * exists (each part flagged as found), or -1 (*e, errnum ENOENT when the
 * cgroup is gone in every hierarchy, EINVAL for a path with "..").
 * Thread-safe; does file I/O (call it off the loop). */
int sl_cg_read(const char *root, sl_cg_mode mode, const char *path, sl_cg_stats *st, sl_error *e);

/* ---- parsers (pure) ---- */

/* A file holding one number, or "max" (v2, -> SL_CG_NO_LIMIT). Values above
 * SL_CG_UNLIMITED_ABOVE read as SL_CG_NO_LIMIT too. False when the text is
 * neither. */
bool sl_cg_parse_value(const char *text, uint64_t *v);
/* The value of key in a flat-keyed file ("key value" per line), e.g.
 * memory.stat or cpu.stat. False when the key is absent or malformed. */
bool sl_cg_keyed(const char *text, const char *key, uint64_t *v);
/* Lines of a cgroup.procs text (one pid per line). */
uint64_t sl_cg_count_lines(const char *text, size_t len);

/* Working set: usage minus inactive file pages, floored at 0 (what the
 * kubelet, containerd and cAdvisor call working set). */
uint64_t sl_cg_working_set(const sl_cg_stats *st);
/* Memory left before the limit: limit - working set (floored at 0); false
 * when there is no limit. */
bool sl_cg_available(const sl_cg_stats *st, uint64_t *avail);
/* Swap left before the swap limit; false when there is no limit. */
bool sl_cg_swap_available(const sl_cg_stats *st, uint64_t *avail);

#endif
