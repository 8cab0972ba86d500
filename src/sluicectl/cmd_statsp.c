/* statsp: pod sandbox resource usage (ListPodSandboxStats), as
 * `crictl statsp`: two samples --seconds apart for the table, one answer
 * for -o json|yaml, -w until interrupted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_util.h"

#define STATSP_MAX_SECONDS 3600

static const char statsp_help[] =
    "Usage: sluicectl statsp [FLAGS] [POD-ID]\n"
    "\n"
    "Shows pod sandboxes' resource usage (CRI ListPodSandboxStats), sorted by ID:\n"
    "POD, POD ID, CPU % (between two samples --seconds apart) and MEM (the working\n"
    "set). Pods without CPU time or memory, and pods that appeared between the\n"
    "samples, are left out.\n"
    "\n"
    "      --id ID            only this pod sandbox (ID, unique prefix or name)\n"
    "      --label KEY=VALUE  only pods with this label (repeatable)\n"
    "  -s, --seconds N        seconds between the two samples (default 1)\n"
    "  -w, --watch            repeat until interrupted (a terminal is cleared first)\n"
    "  -o, --output FORMAT    table (default), json or yaml (one answer, no sampling)\n"
    "  -h, --help             this help\n";

enum { SP_ID = 256, SP_LABEL };

typedef struct statsp_opts {
    ctl *c;
    bool watch;
    const char *id;
    uint64_t seconds;
    ctl_out out;
    cu_labels labels;
} statsp_opts;

static int statsp_opt(void *arg, int id, const char *val)
{
    statsp_opts *o = arg;
    switch (id) {
    case 'w':
        o->watch = true;
        return 0;
    case SP_ID:
        o->id = val;
        return 0;
    case SP_LABEL:
        return cu_labels_add(o->c, &o->labels, val, "--label");
    case 's':
        return ctl_parse_uint(o->c, "--seconds", val, STATSP_MAX_SECONDS, &o->seconds);
    default:
        return ctl_parse_out(o->c, val, &o->out, true);
    }
}

static int cmp_pod_stats(const void *a, const void *b)
{
    const Runtime__V1__PodSandboxStats *x = *(void *const *)a, *y = *(void *const *)b;
    return strcmp(x->attributes ? x->attributes->id : "", y->attributes ? y->attributes->id : "");
}

static void sort_pod_stats(ProtobufCMessage *m)
{
    Runtime__V1__ListPodSandboxStatsResponse *r = (void *)m;
    qsort(r->stats, r->n_stats, sizeof *r->stats, cmp_pod_stats);
}

static const Runtime__V1__PodSandboxStats *
find_old(const Runtime__V1__ListPodSandboxStatsResponse *old, const char *id)
{
    for (size_t i = 0; i < old->n_stats; i++)
        if (old->stats[i]->attributes && !strcmp(old->stats[i]->attributes->id, id))
            return old->stats[i];
    return NULL;
}

static bool has_data(const Runtime__V1__PodSandboxStats *s)
{
    const Runtime__V1__LinuxPodSandboxStats *l = s->linux;
    return s->attributes && l &&
           ((l->cpu && l->cpu->usage_core_nano_seconds && l->cpu->usage_core_nano_seconds->value) ||
            (l->memory && l->memory->working_set_bytes && l->memory->working_set_bytes->value));
}

static int pod_row(ctl_table *t, const Runtime__V1__PodSandboxStats *s,
                   const Runtime__V1__PodSandboxStats *old)
{
    char id[64], cpu[32], mem[32];
    double pct = cu_cpu_percent(s->linux->cpu, old->linux ? old->linux->cpu : NULL);
    if (pct < 0)
        return -1;
    ctl_trunc_id(s->attributes->id, false, id, sizeof id);
    snprintf(cpu, sizeof cpu, "%.2f", pct);
    const Runtime__V1__MemoryUsage *m = s->linux->memory;
    ctl_human_size_prec(m && m->working_set_bytes ? m->working_set_bytes->value : 0, 4, mem,
                        sizeof mem);
    const char *row[] = {s->attributes->metadata ? s->attributes->metadata->name : "", id, cpu,
                         mem};
    ctl_table_add(t, row);
    return 0;
}

static int pods_table(void *arg, const ProtobufCMessage *old_msg, const ProtobufCMessage *now_msg,
                      sl_error *e)
{
    const statsp_opts *o = arg;
    const Runtime__V1__ListPodSandboxStatsResponse *old = (const void *)old_msg,
                                                   *now = (const void *)now_msg;
    static const char *const hdr[] = {"POD", "POD ID", "CPU %", "MEM"};
    ctl_table *t = ctl_table_new(4, hdr);
    for (size_t i = 0; i < now->n_stats; i++) {
        const Runtime__V1__PodSandboxStats *s = now->stats[i], *was;
        if (!has_data(s) || !(was = find_old(old, s->attributes->id)))
            continue;
        if (pod_row(t, s, was) < 0) {
            ctl_table_free(t);
            return sl_error_set(
                e, 0, "the runtime took no new CPU sample of pod %s in %llu s (raise --seconds)",
                s->attributes->id, (unsigned long long)o->seconds);
        }
    }
    if (o->watch)
        cu_clear_screen();
    ctl_table_print(t);
    return 0;
}

static int run_statsp(statsp_opts *o, const char *arg)
{
    sl_error e;
    Runtime__V1__ListPodSandboxStatsRequest req = RUNTIME__V1__LIST_POD_SANDBOX_STATS_REQUEST__INIT;
    Runtime__V1__PodSandboxStatsFilter f = RUNTIME__V1__POD_SANDBOX_STATS_FILTER__INIT;
    const char *ref = o->id ? o->id : arg;
    char *id = ref ? ctl_resolve_pod(o->c, ref, &e) : NULL;
    if (ref && !id)
        return ctl_fail(o->c, &e);
    f.id = id ? id : (char *)"";
    f.n_label_selector = o->labels.n;
    f.label_selector = (void *)o->labels.ents;
    req.filter = &f;
    cu_sampler s = {.c = o->c,
                    .method = "ListPodSandboxStats",
                    .req = &req.base,
                    .resp = &runtime__v1__list_pod_sandbox_stats_response__descriptor,
                    .sort = sort_pod_stats,
                    .table = pods_table,
                    .arg = o,
                    .out = o->out,
                    .watch = o->watch,
                    .seconds = o->seconds};
    int rc = cu_sample(&s, &e);
    free(id);
    return rc < 0 ? ctl_fail(o->c, &e) : 0;
}

int cmd_statsp(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {{"id", required_argument, NULL, SP_ID},
                                       {"label", required_argument, NULL, SP_LABEL},
                                       {"seconds", required_argument, NULL, 's'},
                                       {"watch", no_argument, NULL, 'w'},
                                       {"output", required_argument, NULL, 'o'},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    statsp_opts o = {.c = c,
                     .seconds = 1,
                     .labels.d =
                         &runtime__v1__pod_sandbox_stats_filter__label_selector_entry__descriptor};
    int first, rc;
    if (ctl_parse(c, argc, argv, "s:wo:", lo, statsp_help, statsp_opt, &o, &first, &rc) == 0) {
        if (argc - first > 1)
            rc = ctl_usage(c, "takes at most one POD-ID (see sluicectl statsp --help)");
        else
            rc = run_statsp(&o, first < argc ? argv[first] : NULL);
    }
    cu_labels_free(&o.labels);
    return rc;
}
