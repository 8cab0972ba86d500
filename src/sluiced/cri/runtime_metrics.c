/* ListMetricDescriptors and ListPodSandboxMetrics: the kubelet's
 * PodAndContainerStatsFromCRI feature reads cAdvisor-named metrics from
 * the runtime instead of cAdvisor. sluice offers the ones its stats samples
 * hold (the same numbers as ListPodSandboxStats), with containerd's label
 * keys. The descriptor list is static, as the CRI asks. */
#include <stdlib.h>
#include <string.h>

#include "cri/cri_util.h"
#include "cri/stats.h"
#include "pod/cni.h"

#define NS_PER_S 1000000000ull
/* Metrics of one container, at most; four per pod interface. */
#define CTR_METRICS 6
#define IF_METRICS 4
#define CTR_LABELS 5 /* pod, namespace, container, id, image */
#define IF_LABELS 6  /* ... and interface */
#define LOOPBACK "lo"

enum {
    M_CPU,
    M_MEM_USAGE,
    M_MEM_WS,
    M_MEM_RSS,
    M_MEM_SWAP,
    M_PROCS,
    M_RX,
    M_RX_ERR,
    M_TX,
    M_TX_ERR,
    M_N
};

static char *ctr_keys[] = {"pod", "namespace", "container", "id", "image"};
static char *if_keys[] = {"pod", "namespace", "container", "id", "image", "interface"};

static const struct {
    const char *name, *help;
    int type;
    bool iface;
} defs[M_N] = {
    [M_CPU] = {"container_cpu_usage_seconds_total", "Cumulative CPU time consumed in seconds.",
               RUNTIME__V1__METRIC_TYPE__COUNTER, false},
    [M_MEM_USAGE] = {"container_memory_usage_bytes",
                     "Current memory usage in bytes, including all memory regardless of when it "
                     "was accessed",
                     RUNTIME__V1__METRIC_TYPE__GAUGE, false},
    [M_MEM_WS] = {"container_memory_working_set_bytes", "Current working set in bytes.",
                  RUNTIME__V1__METRIC_TYPE__GAUGE, false},
    [M_MEM_RSS] = {"container_memory_rss", "Size of RSS in bytes.", RUNTIME__V1__METRIC_TYPE__GAUGE,
                   false},
    [M_MEM_SWAP] = {"container_memory_swap", "Container swap usage in bytes.",
                    RUNTIME__V1__METRIC_TYPE__GAUGE, false},
    [M_PROCS] = {"container_processes", "Number of processes running inside the container.",
                 RUNTIME__V1__METRIC_TYPE__GAUGE, false},
    [M_RX] = {"container_network_receive_bytes_total", "Cumulative count of bytes received",
              RUNTIME__V1__METRIC_TYPE__COUNTER, true},
    [M_RX_ERR] = {"container_network_receive_errors_total",
                  "Cumulative count of errors encountered while receiving",
                  RUNTIME__V1__METRIC_TYPE__COUNTER, true},
    [M_TX] = {"container_network_transmit_bytes_total", "Cumulative count of bytes transmitted",
              RUNTIME__V1__METRIC_TYPE__COUNTER, true},
    [M_TX_ERR] = {"container_network_transmit_errors_total",
                  "Cumulative count of errors encountered while transmitting",
                  RUNTIME__V1__METRIC_TYPE__COUNTER, true},
};

void sl_cri_list_metric_descriptors(sl_grpc_call *call, void *arg)
{
    (void)arg;
    Runtime__V1__MetricDescriptor d[M_N];
    Runtime__V1__MetricDescriptor *ptrs[M_N];
    for (size_t i = 0; i < M_N; i++) {
        runtime__v1__metric_descriptor__init(&d[i]);
        d[i].name = (char *)defs[i].name;
        d[i].help = (char *)defs[i].help;
        d[i].n_label_keys = defs[i].iface ? IF_LABELS : CTR_LABELS;
        d[i].label_keys = defs[i].iface ? if_keys : ctr_keys;
        ptrs[i] = &d[i];
    }
    Runtime__V1__ListMetricDescriptorsResponse resp =
        RUNTIME__V1__LIST_METRIC_DESCRIPTORS_RESPONSE__INIT;
    resp.n_descriptors = M_N;
    resp.descriptors = ptrs;
    sl_grpc_call_reply(call, &resp.base);
}

/* Everything one answer points into, sized before filling (no realloc:
 * the messages hold pointers into these arrays). */
typedef struct out {
    Runtime__V1__Metric *m;
    Runtime__V1__UInt64Value *v;
    Runtime__V1__Metric **mp;
    size_t nm, capm;
    char **labels;
    size_t nl, capl;
    Runtime__V1__ContainerMetrics *cm;
    Runtime__V1__ContainerMetrics **cmp;
    size_t ncm;
    Runtime__V1__PodSandboxMetrics *pm;
    Runtime__V1__PodSandboxMetrics **pmp;
    size_t npm;
} out;

static void out_free(out *o)
{
    free(o->m);
    free(o->v);
    free(o->mp);
    free(o->labels);
    free(o->cm);
    free(o->cmp);
    free(o->pm);
    free(o->pmp);
}

static int out_init(out *o, const sl_stats_job *j)
{
    memset(o, 0, sizeof(*o));
    for (size_t i = 0; i < j->n; i++) {
        size_t nifs = j->v[i].nifs > 0 ? (size_t)j->v[i].nifs : 0;
        o->capm += j->v[i].kind == SL_SAMPLE_CTR ? CTR_METRICS : IF_METRICS * nifs;
        o->capl += j->v[i].kind == SL_SAMPLE_CTR ? CTR_LABELS : IF_LABELS * nifs;
    }
    size_t n = j->n ? j->n : 1, cm = o->capm ? o->capm : 1, cl = o->capl ? o->capl : 1;
    o->m = calloc(cm, sizeof(*o->m));
    o->v = calloc(cm, sizeof(*o->v));
    o->mp = calloc(cm, sizeof(*o->mp));
    o->labels = calloc(cl, sizeof(*o->labels));
    o->cm = calloc(n, sizeof(*o->cm));
    o->cmp = calloc(n, sizeof(*o->cmp));
    o->pm = calloc(n, sizeof(*o->pm));
    o->pmp = calloc(n, sizeof(*o->pmp));
    return o->m && o->v && o->mp && o->labels && o->cm && o->cmp && o->pm && o->pmp ? 0 : -1;
}

/* Label values (borrowed strings) into the shared array. */
static char **labels(out *o, const char *const *vals, size_t n)
{
    char **l = &o->labels[o->nl];
    for (size_t i = 0; i < n; i++)
        l[i] = (char *)vals[i];
    o->nl += n;
    return l;
}

static void metric(out *o, int which, int64_t ts, char **lv, uint64_t value)
{
    Runtime__V1__Metric *m = &o->m[o->nm];
    runtime__v1__metric__init(m);
    m->name = (char *)defs[which].name;
    m->timestamp = ts;
    m->metric_type = defs[which].type;
    m->n_label_values = defs[which].iface ? IF_LABELS : CTR_LABELS;
    m->label_values = lv;
    runtime__v1__uint64_value__init(&o->v[o->nm]);
    o->v[o->nm].value = value;
    m->value = &o->v[o->nm];
    o->mp[o->nm++] = m;
}

static void ctr_metrics(out *o, const sl_sample *v, const sl_ctr *c, const sl_pod *p)
{
    const char *vals[CTR_LABELS] = {p->config->metadata->name, p->config->metadata->namespace_,
                                    c->config->metadata->name, c->id,
                                    sl_rec_str(c->rec, "image_name")};
    char **lv = labels(o, vals, CTR_LABELS);
    Runtime__V1__ContainerMetrics *cm = &o->cm[o->ncm];
    runtime__v1__container_metrics__init(cm);
    cm->container_id = (char *)c->id;
    cm->metrics = &o->mp[o->nm];
    size_t first = o->nm;
    const sl_cg_stats *cg = &v->cg;
    if (cg->cpu)
        metric(o, M_CPU, v->real_ns, lv, cg->cpu_ns / NS_PER_S);
    if (cg->mem) {
        metric(o, M_MEM_USAGE, v->real_ns, lv, cg->mem_usage);
        metric(o, M_MEM_WS, v->real_ns, lv, sl_cg_working_set(cg));
        metric(o, M_MEM_RSS, v->real_ns, lv, cg->rss);
    }
    if (cg->swap)
        metric(o, M_MEM_SWAP, v->real_ns, lv, cg->swap_usage);
    if (cg->procs)
        metric(o, M_PROCS, v->real_ns, lv, cg->nprocs);
    cm->n_metrics = o->nm - first;
    o->cmp[o->ncm++] = cm;
}

static void pod_metrics(out *o, const sl_sample *v, const sl_pod *p)
{
    Runtime__V1__PodSandboxMetrics *pm = &o->pm[o->npm];
    runtime__v1__pod_sandbox_metrics__init(pm);
    pm->pod_sandbox_id = (char *)p->id;
    pm->metrics = &o->mp[o->nm];
    size_t first = o->nm;
    for (int k = 0; k < v->nifs; k++) {
        const sl_netdev *d = &v->ifs[k];
        if (!strcmp(d->name, LOOPBACK))
            continue;
        const char *vals[IF_LABELS] = {
            p->config->metadata->name, p->config->metadata->namespace_, "", p->id, "", d->name};
        char **lv = labels(o, vals, IF_LABELS);
        metric(o, M_RX, v->real_ns, lv, d->rx_bytes);
        metric(o, M_RX_ERR, v->real_ns, lv, d->rx_errors);
        metric(o, M_TX, v->real_ns, lv, d->tx_bytes);
        metric(o, M_TX_ERR, v->real_ns, lv, d->tx_errors);
    }
    pm->n_metrics = o->nm - first;
    pm->container_metrics = &o->cmp[o->ncm];
    o->pmp[o->npm++] = pm;
}

typedef struct metrics_call {
    sl_rt *rt;
    sl_grpc_call *call;
} metrics_call;

/* A job lists each pod before its containers (as runtime_stats.c does). */
static void metrics_done(sl_stats_job *j, void *arg)
{
    metrics_call *mc = arg;
    out o;
    if (out_init(&o, j) < 0) {
        sl_grpc_call_fail(mc->call, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        out_free(&o);
        free(mc);
        return;
    }
    Runtime__V1__PodSandboxMetrics *pm = NULL;
    const sl_pod *p = NULL;
    for (size_t i = 0; i < j->n; i++) {
        const sl_sample *v = &j->v[i];
        if (v->kind == SL_SAMPLE_POD) {
            p = sl_model_pod(&mc->rt->model, v->id);
            pm = p ? (pod_metrics(&o, v, p), o.pmp[o.npm - 1]) : NULL;
            continue;
        }
        const sl_ctr *c = pm && sl_sample_live(v) ? sl_model_ctr(&mc->rt->model, v->id) : NULL;
        if (c) {
            ctr_metrics(&o, v, c, p);
            pm->n_container_metrics++;
        }
    }
    Runtime__V1__ListPodSandboxMetricsResponse resp =
        RUNTIME__V1__LIST_POD_SANDBOX_METRICS_RESPONSE__INIT;
    resp.n_pod_metrics = o.npm;
    resp.pod_metrics = o.pmp;
    sl_grpc_call_reply(mc->call, &resp.base);
    out_free(&o);
    free(mc);
}

void sl_cri_list_pod_metrics(sl_grpc_call *call, void *arg)
{
    sl_rt *rt = cri_rt(arg);
    metrics_call *mc = calloc(1, sizeof(*mc));
    sl_stats_job *j = mc ? sl_stats_job_new(((sl_cri *)arg)->stats, metrics_done, mc) : NULL;
    int rc = j ? 0 : -1;
    for (sl_pod *p = rt->model.pods; p && rc == 0; p = p->next) {
        if (p->ready)
            rc = sl_stats_job_add_pod(j, p);
    }
    if (rc < 0) {
        sl_stats_job_free(j);
        free(mc);
        sl_grpc_call_fail(call, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    mc->rt = rt;
    mc->call = call;
    sl_stats_job_run(j);
}
