/* stats: container resource usage (ListContainerStats), as `crictl stats`:
 * the table samples twice, --seconds apart, for the CPU rate; -o json|yaml
 * prints one answer; -w repeats until interrupted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_util.h"

#define STATS_MAX_SECONDS 3600 /* --seconds at most */

static const char stats_help[] =
    "Usage: sluicectl stats [FLAGS] [CONTAINER-ID]\n"
    "\n"
    "Shows containers' resource usage (CRI ListContainerStats), sorted by ID.\n"
    "The table samples twice, --seconds apart: CPU % is the CPU time used\n"
    "between the two samples over the time between their timestamps; MEM is\n"
    "the working set, DISK and INODES the writable layer's. Containers that\n"
    "show neither CPU time nor memory are left out unless -a, and so are those\n"
    "that appeared between the samples.\n"
    "\n"
    "  -a, --all              also containers that are not running\n"
    "      --id ID            only this container (ID, unique prefix or name)\n"
    "  -p, --pod POD          only containers of this pod sandbox\n"
    "      --label KEY=VALUE  only containers with this label (repeatable)\n"
    "  -s, --seconds N        seconds between the two samples (default 1)\n"
    "  -w, --watch            repeat until interrupted (a terminal is cleared first)\n"
    "  -o, --output FORMAT    table (default), json or yaml (one answer, no sampling)\n"
    "  -h, --help             this help\n";

enum { S_ID = 256, S_LABEL };

typedef struct stats_opts {
    ctl *c;
    bool all, watch;
    const char *id, *pod;
    uint64_t seconds;
    ctl_out out;
    cu_labels labels;
} stats_opts;

static int stats_opt(void *arg, int id, const char *val)
{
    stats_opts *o = arg;
    switch (id) {
    case 'a':
        o->all = true;
        return 0;
    case 'w':
        o->watch = true;
        return 0;
    case S_ID:
        o->id = val;
        return 0;
    case 'p':
        o->pod = val;
        return 0;
    case S_LABEL:
        return cu_labels_add(o->c, &o->labels, val, "--label");
    case 's':
        return ctl_parse_uint(o->c, "--seconds", val, STATS_MAX_SECONDS, &o->seconds);
    default:
        return ctl_parse_out(o->c, val, &o->out, true);
    }
}

static int cmp_stats(const void *a, const void *b)
{
    const Runtime__V1__ContainerStats *x = *(void *const *)a, *y = *(void *const *)b;
    return strcmp(x->attributes ? x->attributes->id : "", y->attributes ? y->attributes->id : "");
}

static void sort_stats(ProtobufCMessage *m)
{
    Runtime__V1__ListContainerStatsResponse *r = (void *)m;
    qsort(r->stats, r->n_stats, sizeof *r->stats, cmp_stats);
}

static uint64_t u64(const Runtime__V1__UInt64Value *v)
{
    return v ? v->value : 0;
}

static const Runtime__V1__ContainerStats *
find_old(const Runtime__V1__ListContainerStatsResponse *old, const char *id)
{
    for (size_t i = 0; i < old->n_stats; i++)
        if (old->stats[i]->attributes && !strcmp(old->stats[i]->attributes->id, id))
            return old->stats[i];
    return NULL;
}

/* CPU % between two samples, as crictl computes it; -1 when the runtime
 * did not take a new sample in between. */
double cu_cpu_percent(const Runtime__V1__CpuUsage *now, const Runtime__V1__CpuUsage *before)
{
    uint64_t used = now ? u64(now->usage_core_nano_seconds) : 0;
    if (!used)
        return 0;
    int64_t dt = now->timestamp - (before ? before->timestamp : 0);
    uint64_t was = before ? u64(before->usage_core_nano_seconds) : 0;
    if (dt <= 0)
        return -1;
    return (double)(used - (was < used ? was : used)) / (double)dt * 100;
}

static int stats_row(ctl_table *t, const Runtime__V1__ContainerStats *s,
                     const Runtime__V1__ContainerStats *old)
{
    char id[64], cpu[32], mem[32], disk[32], inodes[32], swap[32];
    double pct = cu_cpu_percent(s->cpu, old->cpu);
    if (pct < 0)
        return -1;
    ctl_trunc_id(s->attributes->id, false, id, sizeof id);
    snprintf(cpu, sizeof cpu, "%.2f", pct);
    ctl_human_size_prec(s->memory ? u64(s->memory->working_set_bytes) : 0, 4, mem, sizeof mem);
    const Runtime__V1__FilesystemUsage *wl = s->writable_layer;
    ctl_human_size_prec(wl ? u64(wl->used_bytes) : 0, 4, disk, sizeof disk);
    snprintf(inodes, sizeof inodes, "%llu", (unsigned long long)(wl ? u64(wl->inodes_used) : 0));
    ctl_human_size_prec(s->swap ? u64(s->swap->swap_usage_bytes) : 0, 4, swap, sizeof swap);
    const char *row[] = {
        id,  s->attributes->metadata ? s->attributes->metadata->name : "", cpu, mem, disk, inodes,
        swap};
    ctl_table_add(t, row);
    return 0;
}

static int stats_table(void *arg, const ProtobufCMessage *old_msg, const ProtobufCMessage *now_msg,
                       sl_error *e)
{
    const stats_opts *o = arg;
    const Runtime__V1__ListContainerStatsResponse *old = (const void *)old_msg,
                                                  *now = (const void *)now_msg;
    static const char *const hdr[] = {"CONTAINER", "NAME",   "CPU %", "MEM",
                                      "DISK",      "INODES", "SWAP"};
    ctl_table *t = ctl_table_new(7, hdr);
    int rc = 0;
    for (size_t i = 0; i < now->n_stats && rc == 0; i++) {
        const Runtime__V1__ContainerStats *s = now->stats[i], *was;
        bool idle = !(s->cpu && u64(s->cpu->usage_core_nano_seconds)) &&
                    !(s->memory && u64(s->memory->working_set_bytes));
        if (!s->attributes || (idle && !o->all) || !(was = find_old(old, s->attributes->id)))
            continue;
        if (stats_row(t, s, was) < 0)
            rc = sl_error_set(
                e, 0, "the runtime took no new CPU sample of %s in %llu s (raise --seconds)",
                s->attributes->id, (unsigned long long)o->seconds);
    }
    if (rc == 0 && o->watch)
        cu_clear_screen();
    if (rc == 0)
        ctl_table_print(t);
    else
        ctl_table_free(t);
    return rc;
}

/* One sample, or two and the table (the stats commands' common part). */
static int sample_once(const cu_sampler *s, sl_error *e)
{
    ProtobufCMessage *old = ctl_rt_call(s->c, s->method, s->req, s->resp, e), *now = NULL;
    if (!old)
        return -1;
    s->sort(old);
    int rc = 0;
    if (s->out != CTL_OUT_TABLE) {
        cu_print_msg(old, s->out);
    } else if (cu_sleep_ms(s->seconds * 1000) &&
               (now = ctl_rt_call(s->c, s->method, s->req, s->resp, e))) {
        s->sort(now);
        rc = s->table(s->arg, old, now, e);
    } else if (!cu_interrupted()) {
        rc = -1;
    }
    fflush(stdout);
    ctl_free_msg(old);
    ctl_free_msg(now);
    return rc;
}

int cu_sample(const cu_sampler *s, sl_error *e)
{
    if (s->watch)
        cu_catch_interrupts();
    int rc;
    do
        rc = sample_once(s, e);
    while (rc == 0 && s->watch && cu_sleep_ms(CU_WATCH_PERIOD_MS));
    return rc;
}

static int run_stats(stats_opts *o, const char *arg)
{
    sl_error e;
    ctl *c = o->c;
    Runtime__V1__ListContainerStatsRequest req = RUNTIME__V1__LIST_CONTAINER_STATS_REQUEST__INIT;
    Runtime__V1__ContainerStatsFilter f = RUNTIME__V1__CONTAINER_STATS_FILTER__INIT;
    const char *ref = o->id ? o->id : arg;
    char *id = ref ? ctl_resolve_ctr(c, ref, &e) : NULL,
         *pod = o->pod ? ctl_resolve_pod(c, o->pod, &e) : NULL;
    int rc = -1;
    if ((!ref || id) && (!o->pod || pod)) {
        f.id = id ? id : (char *)"";
        f.pod_sandbox_id = pod ? pod : (char *)"";
        f.n_label_selector = o->labels.n;
        f.label_selector = (void *)o->labels.ents;
        req.filter = &f;
        cu_sampler s = {.c = c,
                        .method = "ListContainerStats",
                        .req = &req.base,
                        .resp = &runtime__v1__list_container_stats_response__descriptor,
                        .sort = sort_stats,
                        .table = stats_table,
                        .arg = o,
                        .out = o->out,
                        .watch = o->watch,
                        .seconds = o->seconds};
        rc = cu_sample(&s, &e);
    }
    free(id);
    free(pod);
    return rc < 0 ? ctl_fail(c, &e) : 0;
}

int cmd_stats(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {{"all", no_argument, NULL, 'a'},
                                       {"id", required_argument, NULL, S_ID},
                                       {"pod", required_argument, NULL, 'p'},
                                       {"label", required_argument, NULL, S_LABEL},
                                       {"seconds", required_argument, NULL, 's'},
                                       {"watch", no_argument, NULL, 'w'},
                                       {"output", required_argument, NULL, 'o'},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    stats_opts o = {.c = c,
                    .seconds = 1,
                    .labels.d =
                        &runtime__v1__container_stats_filter__label_selector_entry__descriptor};
    int first, rc;
    if (ctl_parse(c, argc, argv, "ap:s:wo:", lo, stats_help, stats_opt, &o, &first, &rc) == 0) {
        if (argc - first > 1)
            rc = ctl_usage(c, "takes at most one CONTAINER-ID (see sluicectl stats --help)");
        else
            rc = run_stats(&o, first < argc ? argv[first] : NULL);
    }
    cu_labels_free(&o.labels);
    return rc;
}
