/* The sampling behind the CRI stats calls. A handler fills a job with one
 * sample per container and pod it wants; the job reads every file on a
 * libuv worker thread (cgroup files, the pod's /proc/net/dev from inside
 * its network namespace, the writable-layer walk), never on the loop; its
 * done callback then runs on the loop and builds the answer.
 *
 * sl_stats also remembers, per container and pod id:
 *   - the last CPU sample, for usage_nano_cores (stats/cpu_rate.h);
 *   - the container's cgroup path, read once from linux.cgroupsPath of its
 *     bundle's config.json (the spec is the one place that names it);
 *   - the writable layer's usage, walked again only after stats-fs-refresh-ms
 *     (longer when the last walk was slow: SL_STATS_WALK_BACKOFF), and by
 *     one job at a time.
 * Entries of removed objects are dropped once there are more entries than
 * objects (plus SL_STATS_CACHE_SLACK). */
#ifndef SL_CRI_STATS_H
#define SL_CRI_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config/config.h"
#include "cri/model.h"
#include "stats/cgroup.h"
#include "stats/fsusage.h"
#include "stats/netdev.h"

/* The next walk of a writable layer waits at least this many times as long
 * as the last walk took, so a tree of millions of files costs at most a
 * tenth of one worker thread. */
#define SL_STATS_WALK_BACKOFF 10
/* Cache entries beyond the number of objects before the stale are dropped. */
#define SL_STATS_CACHE_SLACK 64
/* Bytes of a container's config.json read for its cgroupsPath. */
#define SL_STATS_SPEC_MAX (1024 * 1024)

typedef struct sl_stats sl_stats;

enum { SL_SAMPLE_CTR, SL_SAMPLE_POD };

/* One object to sample. Inputs are set by sl_stats_job_add_*; outputs by
 * the worker. */
typedef struct sl_sample {
    int kind;
    char id[SL_ID_HEX + 1];
    char pod_id[SL_ID_HEX + 1]; /* containers: their pod; pods: the pod */
    /* inputs (malloc'd, or NULL) */
    char *cgroup;    /* cgroup path when known */
    char *spec_path; /* config.json to take linux.cgroupsPath from */
    char *upper;     /* writable layer to walk now */
    char *netns;     /* pods: the pinned network namespace (NULL: host's) */
    /* outputs */
    int64_t real_ns, mono_ns; /* when the cgroup was read */
    bool cg_ok;
    sl_cg_stats cg;
    bool fs_ok;
    sl_fsusage fs;
    int64_t walk_ns; /* how long the walk took */
    int nifs;        /* interfaces in ifs, -1 when not read */
    sl_netdev *ifs;
} sl_sample;

typedef struct sl_stats_job sl_stats_job;
/* Runs on the loop once every sample is taken. The samples stay valid
 * until the callback returns; the job is freed after. */
typedef void (*sl_stats_done_fn)(sl_stats_job *j, void *arg);

struct sl_stats_job {
    uv_work_t req;
    sl_stats *stats;
    sl_sample *v;
    size_t n, cap;
    sl_stats_done_fn done;
    void *arg;
};

/* cfg and model are borrowed; cg_root is the cgroup mount (SL_CG_ROOT). */
sl_stats *sl_stats_new(uv_loop_t *loop, const sl_config *cfg, const sl_model *model,
                       const char *cg_root);
void sl_stats_free(sl_stats *s);
/* The cgroup version found at start (for Status). */
sl_cg_mode sl_stats_cgroup_mode(const sl_stats *s);

sl_stats_job *sl_stats_job_new(sl_stats *s, sl_stats_done_fn done, void *arg);
/* Adds a container: its cgroup (from the cache or its spec) and, when due,
 * a walk of its writable layer. Returns 0 or -1 (ENOMEM). */
int sl_stats_job_add_ctr(sl_stats_job *j, const sl_ctr *c);
/* Adds a pod: its cgroup (the parent of its containers' cgroups, else the
 * config's linux.cgroup_parent) and network namespace, then each of its
 * containers, right after it (answers rely on that order). */
int sl_stats_job_add_pod(sl_stats_job *j, const sl_pod *p);
/* Queues the job on the thread pool. On failure the done callback runs at
 * once with no sample taken (every cg_ok false). */
void sl_stats_job_run(sl_stats_job *j);
/* Frees a job that was never run. */
void sl_stats_job_free(sl_stats_job *j);

/* True when the sample's cgroup was read and still has processes (or
 * cannot say): an exited container keeps its cgroup, without processes,
 * until RemoveContainer (runc delete), and is not reported as using CPU or
 * memory, as in containerd, which deletes the task at exit. */
bool sl_sample_live(const sl_sample *v);
/* After a job (on the loop): the rate of the sample's object, when known;
 * the sample becomes the next base. */
bool sl_stats_nano_cores(sl_stats *s, const sl_sample *v, uint64_t *nano_cores);
/* The last writable-layer usage of a container, and when it was taken
 * (CLOCK_REALTIME ns); false when never walked. */
bool sl_stats_fs(const sl_stats *s, const char *id, sl_fsusage *u, int64_t *at_ns);

#endif
