#include "cri/stats.h"

#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "container/rootfs.h"
#include "fsutil.h"
#include "pod/netns.h"
#include "stats/cpu_rate.h"

#define NBUCKETS 256
#define MS 1000000LL

typedef struct entry {
    struct entry *next;
    char id[SL_ID_HEX + 1];
    char *cgroup; /* containers: from the spec, once read */
    sl_cpu_rate cpu;
    bool has_fs, walking;
    sl_fsusage fs;
    int64_t fs_at;      /* CLOCK_REALTIME of the walk */
    int64_t fs_next_ns; /* CLOCK_MONOTONIC: walk again from then on */
} entry;

struct sl_stats {
    uv_loop_t *loop;
    const sl_config *cfg;
    const sl_model *model;
    char *cg_root;
    sl_cg_mode cg_mode;
    entry *buckets[NBUCKETS];
    size_t nentries;
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- the cache ---- */

static unsigned bucket_of(const char *id)
{
    unsigned h = 0;
    for (const char *p = id; *p; p++)
        h = h * 31 + (unsigned char)*p;
    return h % NBUCKETS;
}

static entry *find(const sl_stats *s, const char *id)
{
    for (entry *e = s->buckets[bucket_of(id)]; e; e = e->next)
        if (!strcmp(e->id, id))
            return e;
    return NULL;
}

static void free_entry(entry *e)
{
    free(e->cgroup);
    free(e);
}

static bool known(const sl_model *m, const char *id)
{
    return sl_model_ctr((sl_model *)m, id) || sl_model_pod((sl_model *)m, id);
}

/* Drops the entries of objects that are gone, once they outnumber the
 * objects by SL_STATS_CACHE_SLACK. */
static void prune(sl_stats *s)
{
    size_t objects = 0;
    for (const sl_pod *p = s->model->pods; p; p = p->next)
        objects++;
    for (const sl_ctr *c = s->model->ctrs; c; c = c->next)
        objects++;
    if (s->nentries <= objects + SL_STATS_CACHE_SLACK)
        return;
    for (size_t b = 0; b < NBUCKETS; b++) {
        for (entry **pp = &s->buckets[b]; *pp;) {
            entry *e = *pp;
            if (known(s->model, e->id) || e->walking) {
                pp = &e->next;
                continue;
            }
            *pp = e->next;
            free_entry(e);
            s->nentries--;
        }
    }
}

static entry *get(sl_stats *s, const char *id)
{
    entry *e = find(s, id);
    if (e)
        return e;
    prune(s);
    e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    snprintf(e->id, sizeof(e->id), "%s", id);
    unsigned b = bucket_of(id);
    e->next = s->buckets[b];
    s->buckets[b] = e;
    s->nentries++;
    return e;
}

sl_stats *sl_stats_new(uv_loop_t *loop, const sl_config *cfg, const sl_model *model,
                       const char *cg_root)
{
    sl_stats *s = calloc(1, sizeof(*s));
    if (!s || !(s->cg_root = strdup(cg_root))) {
        free(s);
        return NULL;
    }
    s->loop = loop;
    s->cfg = cfg;
    s->model = model;
    s->cg_mode = sl_cg_detect(cg_root);
    return s;
}

void sl_stats_free(sl_stats *s)
{
    if (!s)
        return;
    for (size_t b = 0; b < NBUCKETS; b++) {
        while (s->buckets[b]) {
            entry *e = s->buckets[b];
            s->buckets[b] = e->next;
            free_entry(e);
        }
    }
    free(s->cg_root);
    free(s);
}

sl_cg_mode sl_stats_cgroup_mode(const sl_stats *s)
{
    return s->cg_mode;
}

bool sl_sample_live(const sl_sample *v)
{
    return v->cg_ok && !(v->cg.procs && v->cg.nprocs == 0);
}

bool sl_stats_nano_cores(sl_stats *s, const sl_sample *v, uint64_t *nano_cores)
{
    entry *e = v->cg_ok && v->cg.cpu ? get(s, v->id) : NULL;
    int64_t window = (int64_t)s->cfg->stats_cpu_window_ms * MS;
    return e && sl_cpu_rate_update(&e->cpu, v->mono_ns, v->cg.cpu_ns, window, nano_cores);
}

bool sl_stats_fs(const sl_stats *s, const char *id, sl_fsusage *u, int64_t *at_ns)
{
    const entry *e = find(s, id);
    if (!e || !e->has_fs)
        return false;
    *u = e->fs;
    *at_ns = e->fs_at;
    return true;
}

/* ---- jobs: the loop side ---- */

sl_stats_job *sl_stats_job_new(sl_stats *s, sl_stats_done_fn done, void *arg)
{
    sl_stats_job *j = calloc(1, sizeof(*j));
    if (!j)
        return NULL;
    j->stats = s;
    j->done = done;
    j->arg = arg;
    j->req.data = j;
    return j;
}

void sl_stats_job_free(sl_stats_job *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->n; i++) {
        sl_sample *v = &j->v[i];
        entry *e = v->upper ? find(j->stats, v->id) : NULL;
        if (e) /* the walk this job claimed is over (or never ran) */
            e->walking = false;
        free(v->cgroup);
        free(v->spec_path);
        free(v->upper);
        free(v->netns);
        free(v->ifs);
    }
    free(j->v);
    free(j);
}

static sl_sample *add(sl_stats_job *j, int kind, const char *id, const char *pod_id)
{
    if (j->n == j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 8;
        sl_sample *v = realloc(j->v, cap * sizeof(*v));
        if (!v)
            return NULL;
        j->v = v;
        j->cap = cap;
    }
    sl_sample *v = &j->v[j->n++];
    memset(v, 0, sizeof(*v));
    v->kind = kind;
    v->nifs = -1;
    snprintf(v->id, sizeof(v->id), "%s", id);
    snprintf(v->pod_id, sizeof(v->pod_id), "%s", pod_id);
    return v;
}

/* The writable layer of e is due for a walk that nobody does yet. */
static bool walk_due(const entry *e)
{
    return !e->walking && (!e->has_fs || mono_ns() >= e->fs_next_ns);
}

int sl_stats_job_add_ctr(sl_stats_job *j, const sl_ctr *c)
{
    entry *e = get(j->stats, c->id);
    sl_sample *v = e ? add(j, SL_SAMPLE_CTR, c->id, c->pod_id) : NULL;
    if (!v)
        return -1;
    const char *bundle = sl_rec_str(c->rec, "bundle");
    if (e->cgroup)
        v->cgroup = strdup(e->cgroup);
    else
        v->spec_path = sl_path_join(bundle, "config.json");
    if (walk_due(e)) {
        v->upper = sl_rootfs_upper_dir(bundle);
        e->walking = v->upper != NULL; /* claimed: other jobs use the cache */
    }
    return v->cgroup || v->spec_path ? 0 : -1;
}

/* The parent of a cgroup path ("/a/b/c" -> "/a/b"), malloc'd. */
static char *cg_parent(const char *path)
{
    SL_AUTOFREE char *copy = strdup(path);
    return copy ? strdup(dirname(copy)) : NULL;
}

static char *pod_cgroup(sl_stats *s, const sl_pod *p)
{
    for (const sl_ctr *c = s->model->ctrs; c; c = c->next) {
        const entry *e = strcmp(c->pod_id, p->id) ? NULL : find(s, c->id);
        if (e && e->cgroup)
            return cg_parent(e->cgroup);
    }
    const Runtime__V1__LinuxPodSandboxConfig *l = p->config->linux;
    return l && l->cgroup_parent && *l->cgroup_parent ? strdup(l->cgroup_parent) : NULL;
}

int sl_stats_job_add_pod(sl_stats_job *j, const sl_pod *p)
{
    sl_sample *v = add(j, SL_SAMPLE_POD, p->id, p->id);
    if (!v)
        return -1;
    v->cgroup = pod_cgroup(j->stats, p);
    v->netns = sl_pod_ns_path(sl_rec_str(p->rec, "ns_dir"), "net");
    int rc = 0;
    for (const sl_ctr *c = j->stats->model->ctrs; c && rc == 0; c = c->next)
        if (!strcmp(c->pod_id, p->id))
            rc = sl_stats_job_add_ctr(j, c);
    return rc;
}

/* ---- jobs: the worker side ---- */

/* linux.cgroupsPath of an OCI config.json, malloc'd, or NULL. */
static char *spec_cgroup(const char *spec_path)
{
    SL_AUTOFREE char *text = NULL;
    sl_error e;
    if (sl_read_file(spec_path, SL_STATS_SPEC_MAX, &text, NULL, &e) < 0)
        return NULL;
    json_t *j = json_loads(text, 0, NULL);
    const char *cg = json_string_value(json_object_get(json_object_get(j, "linux"), "cgroupsPath"));
    char *out = cg && *cg ? strdup(cg) : NULL;
    json_decref(j);
    return out;
}

static void sample_cgroup(const sl_stats *s, sl_sample *v)
{
    sl_error e;
    v->real_ns = sl_now_ns();
    v->mono_ns = mono_ns();
    v->cg_ok = v->cgroup && sl_cg_read(s->cg_root, s->cg_mode, v->cgroup, &v->cg, &e) == 0;
}

static void sample_ctr(const sl_stats *s, sl_sample *v)
{
    if (!v->cgroup && v->spec_path)
        v->cgroup = spec_cgroup(v->spec_path);
    sample_cgroup(s, v);
    if (v->upper) {
        sl_error e;
        int64_t t0 = mono_ns();
        v->fs_ok = sl_fsusage_walk(v->upper, &v->fs, &e) == 0;
        v->walk_ns = mono_ns() - t0;
    }
}

/* A pod without a cgroup of its own yet: the parent of its containers'. */
static void derive_pod_cgroup(const sl_stats_job *j, sl_sample *pod)
{
    for (size_t i = 0; i < j->n && !pod->cgroup; i++) {
        const sl_sample *c = &j->v[i];
        if (c->kind == SL_SAMPLE_CTR && c->cgroup && !strcmp(c->pod_id, pod->id))
            pod->cgroup = cg_parent(c->cgroup);
    }
}

static void sample_pod(const sl_stats_job *j, sl_sample *v)
{
    derive_pod_cgroup(j, v);
    sample_cgroup(j->stats, v);
    if (!v->netns)
        return;
    v->ifs = calloc(SL_NETDEV_MAX, sizeof(*v->ifs));
    sl_error e;
    v->nifs = v->ifs ? sl_netdev_read_netns(v->netns, v->ifs, SL_NETDEV_MAX, &e) : -1;
}

static void work_cb(uv_work_t *req)
{
    sl_stats_job *j = req->data;
    for (size_t i = 0; i < j->n; i++) /* containers first: pods derive from them */
        if (j->v[i].kind == SL_SAMPLE_CTR)
            sample_ctr(j->stats, &j->v[i]);
    for (size_t i = 0; i < j->n; i++)
        if (j->v[i].kind == SL_SAMPLE_POD)
            sample_pod(j, &j->v[i]);
}

/* Keeps what the worker learnt: cgroup paths and walks. */
static void remember(sl_stats *s, const sl_sample *v)
{
    if (v->kind != SL_SAMPLE_CTR)
        return;
    entry *e = find(s, v->id);
    if (!e)
        return;
    if (!e->cgroup && v->cgroup)
        e->cgroup = strdup(v->cgroup);
    if (!v->upper || !v->fs_ok)
        return;
    int64_t wait = (int64_t)s->cfg->stats_fs_refresh_ms * MS;
    if (v->walk_ns * SL_STATS_WALK_BACKOFF > wait)
        wait = v->walk_ns * SL_STATS_WALK_BACKOFF;
    e->has_fs = true;
    e->fs = v->fs;
    e->fs_at = v->real_ns;
    e->fs_next_ns = mono_ns() + wait;
}

static void after_cb(uv_work_t *req, int status)
{
    sl_stats_job *j = req->data;
    (void)status;
    for (size_t i = 0; i < j->n; i++)
        remember(j->stats, &j->v[i]);
    j->done(j, j->arg);
    sl_stats_job_free(j);
}

void sl_stats_job_run(sl_stats_job *j)
{
    if (uv_queue_work(j->stats->loop, &j->req, work_cb, after_cb) != 0)
        after_cb(&j->req, UV_ECANCELED);
}
