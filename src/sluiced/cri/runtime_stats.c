/* ContainerStats, ListContainerStats, PodSandboxStats, ListPodSandboxStats.
 * A handler picks the objects, a stats job samples them off the loop
 * (cri/stats.h), and the answer is built when it is done. Every container
 * in the model is listed (created and exited ones without CPU and memory,
 * their cgroup being gone), as containerd does; pods only when ready. */
#include <stdlib.h>
#include <string.h>

#include "cri/cri_util.h"
#include "cri/stats_msg.h"

enum { CALL_CTR, CALL_CTRS, CALL_POD, CALL_PODS };

typedef struct stats_call {
    sl_rt *rt;
    sl_stats *stats;
    sl_grpc_call *call;
    int kind;
} stats_call;

/* What every answer is built from: the samples' messages, by index. */
typedef struct built {
    sl_stats_msgs *msgs;
    Runtime__V1__ContainerStats **ctr; /* per sample; NULL: not a container or gone */
    Runtime__V1__ContainerStats **list;
    size_t nlist;
} built;

static bool prefix(const char *id, const char *want)
{
    return !*want || !strncmp(id, want, strlen(want)); /* crictl passes id prefixes */
}

static bool ctr_matches(const sl_ctr *c, const Runtime__V1__ContainerStatsFilter *f)
{
    return !f || (prefix(c->id, f->id) && prefix(c->pod_id, f->pod_sandbox_id) &&
                  sl_cri_labels_match((sl_kv *const *)c->config->labels, c->config->n_labels,
                                      (sl_kv *const *)f->label_selector, f->n_label_selector));
}

static bool pod_matches(const sl_pod *p, const Runtime__V1__PodSandboxStatsFilter *f)
{
    return p->ready &&
           (!f || (prefix(p->id, f->id) &&
                   sl_cri_labels_match((sl_kv *const *)p->config->labels, p->config->n_labels,
                                       (sl_kv *const *)f->label_selector, f->n_label_selector)));
}

/* ---- answers ---- */

static void built_free(built *b)
{
    sl_stats_msgs_free(b->msgs);
    free(b->ctr);
    free(b->list);
}

/* The container messages of every sample still in the model. */
static int build_ctrs(built *b, const sl_stats_job *j, stats_call *sc)
{
    memset(b, 0, sizeof(*b));
    b->msgs = sl_stats_msgs_new(j->n);
    b->ctr = calloc(j->n ? j->n : 1, sizeof(*b->ctr));
    b->list = calloc(j->n ? j->n : 1, sizeof(*b->list));
    if (!b->msgs || !b->ctr || !b->list)
        return -1;
    for (size_t i = 0; i < j->n; i++) {
        const sl_sample *v = &j->v[i];
        sl_ctr *c = v->kind == SL_SAMPLE_CTR ? sl_model_ctr(&sc->rt->model, v->id) : NULL;
        if (c && !(b->ctr[i] = sl_stats_msg_ctr(b->msgs, i, sc->stats, v, c)))
            return -1;
    }
    return 0;
}

static void reply_ctrs(stats_call *sc, built *b, const sl_stats_job *j)
{
    for (size_t i = 0; i < j->n; i++)
        if (b->ctr[i])
            b->list[b->nlist++] = b->ctr[i];
    if (sc->kind == CALL_CTR) {
        Runtime__V1__ContainerStatsResponse resp = RUNTIME__V1__CONTAINER_STATS_RESPONSE__INIT;
        if (!b->nlist) { /* removed while sampled */
            sl_grpc_call_fail(sc->call, SL_GRPC_NOT_FOUND, "container \"%s\" not found",
                              j->n ? j->v[0].id : "");
            return;
        }
        resp.stats = b->list[0];
        sl_grpc_call_reply(sc->call, &resp.base);
        return;
    }
    Runtime__V1__ListContainerStatsResponse resp = RUNTIME__V1__LIST_CONTAINER_STATS_RESPONSE__INIT;
    resp.n_stats = b->nlist;
    resp.stats = b->list;
    sl_grpc_call_reply(sc->call, &resp.base);
}

/* The pod sample at i and the container samples that follow it (a job
 * lists each pod before its containers). */
static Runtime__V1__PodSandboxStats *pod_at(stats_call *sc, built *b, const sl_stats_job *j,
                                            size_t i)
{
    const sl_sample *v = &j->v[i];
    sl_pod *p = sl_model_pod(&sc->rt->model, v->id);
    if (!p)
        return NULL;
    size_t first = b->nlist;
    uint64_t nprocs = 0;
    for (size_t k = i + 1; k < j->n && j->v[k].kind == SL_SAMPLE_CTR; k++) {
        if (j->v[k].cg_ok && j->v[k].cg.procs)
            nprocs += j->v[k].cg.nprocs;
        if (b->ctr[k])
            b->list[b->nlist++] = b->ctr[k];
    }
    return sl_stats_msg_pod(b->msgs, i, sc->stats, v, p, b->list + first, b->nlist - first, nprocs);
}

static void reply_pods(stats_call *sc, built *b, const sl_stats_job *j)
{
    Runtime__V1__PodSandboxStats **pods = calloc(j->n ? j->n : 1, sizeof(*pods));
    size_t n = 0;
    for (size_t i = 0; pods && i < j->n; i++)
        if (j->v[i].kind == SL_SAMPLE_POD && (pods[n] = pod_at(sc, b, j, i)))
            n++;
    if (!pods) {
        sl_grpc_call_fail(sc->call, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
    } else if (sc->kind == CALL_POD && !n) {
        sl_grpc_call_fail(sc->call, SL_GRPC_NOT_FOUND, "pod sandbox \"%s\" not found",
                          j->n ? j->v[0].id : "");
    } else if (sc->kind == CALL_POD) {
        Runtime__V1__PodSandboxStatsResponse resp = RUNTIME__V1__POD_SANDBOX_STATS_RESPONSE__INIT;
        resp.stats = pods[0];
        sl_grpc_call_reply(sc->call, &resp.base);
    } else {
        Runtime__V1__ListPodSandboxStatsResponse resp =
            RUNTIME__V1__LIST_POD_SANDBOX_STATS_RESPONSE__INIT;
        resp.n_stats = n;
        resp.stats = pods;
        sl_grpc_call_reply(sc->call, &resp.base);
    }
    free(pods);
}

static void job_done(sl_stats_job *j, void *arg)
{
    stats_call *sc = arg;
    built b;
    if (build_ctrs(&b, j, sc) < 0)
        sl_grpc_call_fail(sc->call, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
    else if (sc->kind == CALL_CTR || sc->kind == CALL_CTRS)
        reply_ctrs(sc, &b, j);
    else
        reply_pods(sc, &b, j);
    built_free(&b);
    free(sc);
}

/* ---- requests ---- */

static sl_stats_job *new_job(sl_grpc_call *call, void *arg, int kind)
{
    stats_call *sc = calloc(1, sizeof(*sc));
    sl_stats_job *j = sc ? sl_stats_job_new(((sl_cri *)arg)->stats, job_done, sc) : NULL;
    if (!j) {
        free(sc);
        sl_grpc_call_fail(call, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    sc->rt = cri_rt(arg);
    sc->stats = ((sl_cri *)arg)->stats;
    sc->call = call;
    sc->kind = kind;
    return j;
}

static void run_or_fail(sl_stats_job *j, int rc)
{
    if (rc == 0) {
        sl_stats_job_run(j);
        return;
    }
    stats_call *sc = j->arg;
    sl_grpc_call_fail(sc->call, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
    sl_stats_job_free(j);
    free(sc);
}

void sl_cri_container_stats(sl_grpc_call *call, void *arg)
{
    const Runtime__V1__ContainerStatsRequest *req = (const void *)sl_grpc_call_request(call);
    sl_ctr *c = sl_model_ctr(&cri_rt(arg)->model, req->container_id);
    if (!c) {
        sl_grpc_call_fail(call, SL_GRPC_NOT_FOUND, "container \"%s\" not found", req->container_id);
        return;
    }
    sl_stats_job *j = new_job(call, arg, CALL_CTR);
    if (j)
        run_or_fail(j, sl_stats_job_add_ctr(j, c));
}

void sl_cri_list_container_stats(sl_grpc_call *call, void *arg)
{
    const Runtime__V1__ListContainerStatsRequest *req = (const void *)sl_grpc_call_request(call);
    sl_stats_job *j = new_job(call, arg, CALL_CTRS);
    int rc = 0;
    for (sl_ctr *c = j ? cri_rt(arg)->model.ctrs : NULL; c && rc == 0; c = c->next)
        if (ctr_matches(c, req->filter))
            rc = sl_stats_job_add_ctr(j, c);
    if (j)
        run_or_fail(j, rc);
}

void sl_cri_pod_stats(sl_grpc_call *call, void *arg)
{
    const Runtime__V1__PodSandboxStatsRequest *req = (const void *)sl_grpc_call_request(call);
    sl_pod *p = sl_cri_ready_pod(call, cri_rt(arg), req->pod_sandbox_id);
    if (!p)
        return;
    sl_stats_job *j = new_job(call, arg, CALL_POD);
    if (j)
        run_or_fail(j, sl_stats_job_add_pod(j, p));
}

void sl_cri_list_pod_stats(sl_grpc_call *call, void *arg)
{
    const Runtime__V1__ListPodSandboxStatsRequest *req = (const void *)sl_grpc_call_request(call);
    sl_stats_job *j = new_job(call, arg, CALL_PODS);
    int rc = 0;
    for (sl_pod *p = j ? cri_rt(arg)->model.pods : NULL; p && rc == 0; p = p->next)
        if (pod_matches(p, req->filter))
            rc = sl_stats_job_add_pod(j, p);
    if (j)
        run_or_fail(j, rc);
}
