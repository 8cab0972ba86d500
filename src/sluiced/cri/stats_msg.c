#include "cri/stats_msg.h"

#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "pod/cni.h"

/* The loopback interface: traffic that never leaves the pod, left out of
 * the interface list as cAdvisor does. */
#define LOOPBACK "lo"

enum { U_CPU_TOTAL, U_CPU_RATE, U_WS, U_AVAIL, U_USAGE, U_RSS, U_PF, U_MPF, U_NSLOTS };

/* CPU and memory of one cgroup sample. */
typedef struct usage_msgs {
    Runtime__V1__CpuUsage cpu;
    Runtime__V1__MemoryUsage mem;
    Runtime__V1__UInt64Value u[U_NSLOTS];
} usage_msgs;

typedef struct ctr_msgs {
    Runtime__V1__ContainerStats st;
    Runtime__V1__ContainerAttributes attr;
    usage_msgs use;
    Runtime__V1__SwapUsage swap;
    Runtime__V1__UInt64Value swap_used, swap_avail;
    Runtime__V1__FilesystemUsage fs;
    Runtime__V1__FilesystemIdentifier fs_id;
    Runtime__V1__UInt64Value fs_bytes, fs_inodes;
    char *mountpoint;
} ctr_msgs;

/* One interface's four counters. */
typedef struct if_msgs {
    Runtime__V1__NetworkInterfaceUsage it;
    Runtime__V1__UInt64Value rx, rx_err, tx, tx_err;
} if_msgs;

typedef struct pod_msgs {
    Runtime__V1__PodSandboxStats st;
    Runtime__V1__PodSandboxAttributes attr;
    Runtime__V1__LinuxPodSandboxStats lin;
    usage_msgs use;
    Runtime__V1__NetworkUsage net;
    if_msgs *ifs;
    Runtime__V1__NetworkInterfaceUsage **others;
    Runtime__V1__ProcessUsage proc;
    Runtime__V1__UInt64Value nprocs;
} pod_msgs;

struct sl_stats_msgs {
    size_t n;
    ctr_msgs *ctrs;
    pod_msgs *pods;
};

sl_stats_msgs *sl_stats_msgs_new(size_t n)
{
    sl_stats_msgs *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->n = n;
    m->ctrs = calloc(n ? n : 1, sizeof(*m->ctrs));
    m->pods = calloc(n ? n : 1, sizeof(*m->pods));
    if (!m->ctrs || !m->pods) {
        sl_stats_msgs_free(m);
        return NULL;
    }
    return m;
}

void sl_stats_msgs_free(sl_stats_msgs *m)
{
    if (!m)
        return;
    for (size_t i = 0; m->ctrs && i < m->n; i++)
        free(m->ctrs[i].mountpoint);
    for (size_t i = 0; m->pods && i < m->n; i++) {
        free(m->pods[i].ifs);
        free(m->pods[i].others);
    }
    free(m->ctrs);
    free(m->pods);
    free(m);
}

static Runtime__V1__UInt64Value *u64(Runtime__V1__UInt64Value *slot, uint64_t v)
{
    runtime__v1__uint64_value__init(slot);
    slot->value = v;
    return slot;
}

static Runtime__V1__CpuUsage *cpu_msg(usage_msgs *o, sl_stats *s, const sl_sample *v)
{
    if (!v->cg_ok || !v->cg.cpu)
        return NULL;
    runtime__v1__cpu_usage__init(&o->cpu);
    o->cpu.timestamp = v->real_ns;
    o->cpu.usage_core_nano_seconds = u64(&o->u[U_CPU_TOTAL], v->cg.cpu_ns);
    uint64_t rate;
    if (sl_stats_nano_cores(s, v, &rate)) /* unset until two samples span a window */
        o->cpu.usage_nano_cores = u64(&o->u[U_CPU_RATE], rate);
    return &o->cpu;
}

static Runtime__V1__MemoryUsage *mem_msg(usage_msgs *o, const sl_sample *v)
{
    if (!v->cg_ok || !v->cg.mem)
        return NULL;
    const sl_cg_stats *cg = &v->cg;
    Runtime__V1__MemoryUsage *m = &o->mem;
    runtime__v1__memory_usage__init(m);
    m->timestamp = v->real_ns;
    m->working_set_bytes = u64(&o->u[U_WS], sl_cg_working_set(cg));
    uint64_t avail;
    if (sl_cg_available(cg, &avail)) /* only under a limit */
        m->available_bytes = u64(&o->u[U_AVAIL], avail);
    m->usage_bytes = u64(&o->u[U_USAGE], cg->mem_usage);
    m->rss_bytes = u64(&o->u[U_RSS], cg->rss);
    m->page_faults = u64(&o->u[U_PF], cg->pgfault);
    m->major_page_faults = u64(&o->u[U_MPF], cg->pgmajfault);
    return m;
}

static Runtime__V1__SwapUsage *swap_msg(ctr_msgs *o, const sl_sample *v)
{
    if (!v->cg_ok || !v->cg.swap)
        return NULL;
    runtime__v1__swap_usage__init(&o->swap);
    o->swap.timestamp = v->real_ns;
    o->swap.swap_usage_bytes = u64(&o->swap_used, v->cg.swap_usage);
    uint64_t avail;
    if (sl_cg_swap_available(&v->cg, &avail))
        o->swap.swap_available_bytes = u64(&o->swap_avail, avail);
    return &o->swap;
}

/* The writable layer as last walked. fs_id is the directory holding every
 * container's state (the kubelet asks cAdvisor for its file system). */
static Runtime__V1__FilesystemUsage *fs_msg(ctr_msgs *o, const sl_stats *s, const sl_ctr *c)
{
    sl_fsusage u;
    int64_t at;
    SL_AUTOFREE char *bundle = strdup(sl_rec_str(c->rec, "bundle"));
    if (!bundle || !sl_stats_fs(s, c->id, &u, &at) || !(o->mountpoint = strdup(dirname(bundle))))
        return NULL;
    runtime__v1__filesystem_identifier__init(&o->fs_id);
    o->fs_id.mountpoint = o->mountpoint;
    runtime__v1__filesystem_usage__init(&o->fs);
    o->fs.timestamp = at;
    o->fs.fs_id = &o->fs_id;
    o->fs.used_bytes = u64(&o->fs_bytes, u.bytes);
    o->fs.inodes_used = u64(&o->fs_inodes, u.inodes);
    return &o->fs;
}

Runtime__V1__ContainerStats *sl_stats_msg_ctr(sl_stats_msgs *m, size_t i, sl_stats *s,
                                              const sl_sample *v, const sl_ctr *c)
{
    ctr_msgs *o = &m->ctrs[i];
    runtime__v1__container_attributes__init(&o->attr);
    o->attr.id = (char *)c->id;
    o->attr.metadata = c->config->metadata;
    o->attr.n_labels = c->config->n_labels;
    o->attr.labels = (Runtime__V1__ContainerAttributes__LabelsEntry **)c->config->labels;
    o->attr.n_annotations = c->config->n_annotations;
    o->attr.annotations =
        (Runtime__V1__ContainerAttributes__AnnotationsEntry **)c->config->annotations;
    runtime__v1__container_stats__init(&o->st);
    o->st.attributes = &o->attr;
    bool live = sl_sample_live(v); /* not an exited container */
    o->st.cpu = live ? cpu_msg(&o->use, s, v) : NULL;
    o->st.memory = live ? mem_msg(&o->use, v) : NULL;
    o->st.swap = live ? swap_msg(o, v) : NULL;
    o->st.writable_layer = fs_msg(o, s, c);
    return &o->st;
}

static Runtime__V1__NetworkInterfaceUsage *if_msg(if_msgs *o, const sl_netdev *d)
{
    runtime__v1__network_interface_usage__init(&o->it);
    o->it.name = (char *)d->name;
    o->it.rx_bytes = u64(&o->rx, d->rx_bytes);
    o->it.rx_errors = u64(&o->rx_err, d->rx_errors);
    o->it.tx_bytes = u64(&o->tx, d->tx_bytes);
    o->it.tx_errors = u64(&o->tx_err, d->tx_errors);
    return &o->it;
}

/* eth0 as the default interface, every other but loopback in the list. */
static Runtime__V1__NetworkUsage *net_msg(pod_msgs *o, const sl_sample *v)
{
    if (v->nifs < 0)
        return NULL;
    size_t n = (size_t)v->nifs;
    o->ifs = calloc(n ? n : 1, sizeof(*o->ifs));
    o->others = calloc(n ? n : 1, sizeof(*o->others));
    if (!o->ifs || !o->others)
        return NULL;
    runtime__v1__network_usage__init(&o->net);
    o->net.timestamp = v->real_ns;
    for (size_t k = 0; k < n; k++) {
        const sl_netdev *d = &v->ifs[k];
        if (!strcmp(d->name, LOOPBACK))
            continue;
        if (!strcmp(d->name, SL_CNI_IFNAME))
            o->net.default_interface = if_msg(&o->ifs[k], d);
        else
            o->others[o->net.n_interfaces++] = if_msg(&o->ifs[k], d);
    }
    o->net.interfaces = o->others;
    return &o->net;
}

/* Processes of the pod's cgroup, else those its containers counted. */
static Runtime__V1__ProcessUsage *proc_msg(pod_msgs *o, const sl_sample *v, uint64_t nctr)
{
    runtime__v1__process_usage__init(&o->proc);
    o->proc.timestamp = v->real_ns;
    o->proc.process_count = u64(&o->nprocs, v->cg_ok && v->cg.procs ? v->cg.nprocs : nctr);
    return &o->proc;
}

Runtime__V1__PodSandboxStats *sl_stats_msg_pod(sl_stats_msgs *m, size_t i, sl_stats *s,
                                               const sl_sample *v, const sl_pod *p,
                                               Runtime__V1__ContainerStats **ctrs, size_t nctrs,
                                               uint64_t nprocs_ctrs)
{
    pod_msgs *o = &m->pods[i];
    runtime__v1__pod_sandbox_attributes__init(&o->attr);
    o->attr.id = (char *)p->id;
    o->attr.metadata = p->config->metadata;
    o->attr.n_labels = p->config->n_labels;
    o->attr.labels = (Runtime__V1__PodSandboxAttributes__LabelsEntry **)p->config->labels;
    o->attr.n_annotations = p->config->n_annotations;
    o->attr.annotations =
        (Runtime__V1__PodSandboxAttributes__AnnotationsEntry **)p->config->annotations;
    runtime__v1__linux_pod_sandbox_stats__init(&o->lin);
    o->lin.cpu = cpu_msg(&o->use, s, v);
    o->lin.memory = mem_msg(&o->use, v);
    o->lin.network = net_msg(o, v);
    if (v->nifs >= 0 && !o->lin.network)
        return NULL; /* ENOMEM */
    o->lin.process = proc_msg(o, v, nprocs_ctrs);
    o->lin.n_containers = nctrs;
    o->lin.containers = ctrs;
    runtime__v1__pod_sandbox_stats__init(&o->st);
    o->st.attributes = &o->attr;
    o->st.linux = &o->lin;
    return &o->st;
}
