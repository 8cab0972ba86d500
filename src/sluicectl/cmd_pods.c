/* Pod sandbox commands: runp, stopp, rmp, pods, inspectp. */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_util.h"

/* ---- runp ---- */

static const char runp_help[] =
    "Usage: sluicectl runp [-r HANDLER] [-T DURATION] POD-CONFIG.[json|yaml]\n"
    "\n"
    "Runs a new pod sandbox from a PodSandboxConfig file and prints its ID.\n"
    "The file is YAML or JSON (JSON when it starts with '{'), field names as in\n"
    "the CRI proto (log_directory) or lowerCamelCase (logDirectory).\n"
    "\n"
    "  -r, --runtime HANDLER       runtime handler (default: the runtime's default)\n"
    "  -T, --cancel-timeout D      deadline of RunPodSandbox (default 60 s, or the\n"
    "                              global timeout when that is longer)\n"
    "  -h, --help                  this help\n";

typedef struct runp_opts {
    ctl *c;
    const char *handler;
    uint64_t cancel_ms;
} runp_opts;

static int runp_opt(void *arg, int id, const char *val)
{
    runp_opts *o = arg;
    if (id == 'r') {
        o->handler = val;
        return 0;
    }
    if (ctl_parse_duration_ms(val, &o->cancel_ms) < 0)
        return ctl_usage(o->c, "--cancel-timeout: \"%s\" is not a duration such as 2m", val);
    return 0;
}

char *cu_run_pod(ctl *c, Runtime__V1__PodSandboxConfig *cfg, const char *handler,
                 uint64_t cancel_ms, sl_error *e)
{
    Runtime__V1__RunPodSandboxRequest req = RUNTIME__V1__RUN_POD_SANDBOX_REQUEST__INIT;
    req.config = cfg;
    req.runtime_handler = (char *)(handler ? handler : "");
    ProtobufCMessage *r;
    sl_error ce;
    int st = ctl_call_raw(c, false, "RunPodSandbox", &req.base,
                          &runtime__v1__run_pod_sandbox_response__descriptor, &r,
                          cu_slow_deadline(c, cancel_ms), &ce, e);
    char *id =
        st == SL_CRI_OK ? strdup(((Runtime__V1__RunPodSandboxResponse *)r)->pod_sandbox_id) : NULL;
    if (st == SL_CRI_OK && !id)
        sl_error_set(e, ENOMEM, "RunPodSandbox");
    ctl_free_msg(r);
    return id;
}

int cmd_runp(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {{"runtime", required_argument, NULL, 'r'},
                                       {"cancel-timeout", required_argument, NULL, 'T'},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    runp_opts o = {.c = c};
    int first, rc;
    if (ctl_parse(c, argc, argv, "r:T:", lo, runp_help, runp_opt, &o, &first, &rc))
        return rc;
    if (argc - first != 1)
        return ctl_usage(c, "needs exactly one POD-CONFIG file (see sluicectl runp --help)");
    ctl_arena *a = ctl_arena_new();
    sl_error e;
    Runtime__V1__PodSandboxConfig *cfg =
        (void *)ctl_doc_load(argv[first], &runtime__v1__pod_sandbox_config__descriptor, a, &e);
    char *id = cfg ? cu_run_pod(c, cfg, o.handler, o.cancel_ms, &e) : NULL;
    if (id)
        puts(id);
    free(id);
    ctl_arena_free(a);
    return id ? 0 : ctl_fail(c, &e);
}

/* ---- stopp / rmp ---- */

static const char stopp_help[] = "Usage: sluicectl stopp POD-ID...\n"
                                 "\n"
                                 "Stops pod sandboxes (ID, unique ID prefix or name) and every\n"
                                 "container in them.\n"
                                 "\n"
                                 "  -h, --help   this help\n";

static int pod_call(ctl *c, const char *method, const ProtobufCMessage *req,
                    const ProtobufCMessageDescriptor *d, sl_error *e)
{
    ProtobufCMessage *r = ctl_rt_call_slow(c, method, req, d, e);
    if (!r)
        return -1;
    ctl_free_msg(r);
    return 0;
}

static int stop_pod(ctl *c, const char *id, sl_error *e)
{
    Runtime__V1__StopPodSandboxRequest req = RUNTIME__V1__STOP_POD_SANDBOX_REQUEST__INIT;
    req.pod_sandbox_id = (char *)id;
    return pod_call(c, "StopPodSandbox", &req.base,
                    &runtime__v1__stop_pod_sandbox_response__descriptor, e);
}

static int stopp_one(ctl *c, const char *id, void *arg, sl_error *e)
{
    (void)arg;
    if (stop_pod(c, id, e) < 0)
        return -1;
    printf("Stopped sandbox %s\n", id);
    return 0;
}

int cmd_stopp(ctl *c, int argc, char **argv)
{
    return cu_plain_cmd(c, argc, argv, stopp_help,
                        "needs at least one POD-ID (see sluicectl stopp --help)", CU_POD,
                        stopp_one);
}

static const char rmp_help[] = "Usage: sluicectl rmp [-f] [-a] [POD-ID...]\n"
                               "\n"
                               "Removes pod sandboxes (ID, unique ID prefix or name).\n"
                               "\n"
                               "  -f, --force   stop the sandbox first if it is ready\n"
                               "  -a, --all     remove every pod sandbox\n"
                               "  -h, --help    this help\n";

typedef struct rm_opts {
    bool force, all;
} rm_opts;

static int rm_opt(void *arg, int id, const char *val)
{
    (void)val;
    rm_opts *o = arg;
    if (id == 'f')
        o->force = true;
    else
        o->all = true;
    return 0;
}

static int rmp_one(ctl *c, const char *id, void *arg, sl_error *e)
{
    rm_opts *o = arg;
    if (o->force && stop_pod(c, id, e) < 0)
        return -1;
    Runtime__V1__RemovePodSandboxRequest req = RUNTIME__V1__REMOVE_POD_SANDBOX_REQUEST__INIT;
    req.pod_sandbox_id = (char *)id;
    if (pod_call(c, "RemovePodSandbox", &req.base,
                 &runtime__v1__remove_pod_sandbox_response__descriptor, e) < 0)
        return -1;
    printf("Removed sandbox %s\n", id);
    return 0;
}

static int all_pods(ctl *c, rm_opts *o)
{
    sl_error e;
    Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
    Runtime__V1__ListPodSandboxResponse *r = (void *)ctl_rt_call(
        c, "ListPodSandbox", &req.base, &runtime__v1__list_pod_sandbox_response__descriptor, &e);
    if (!r)
        return ctl_fail(c, &e);
    int rc = 0;
    for (size_t i = 0; i < r->n_items; i++)
        if (rmp_one(c, r->items[i]->id, o, &e) < 0)
            rc = ctl_fail(c, &e); /* each pod's failure; the others go on */
    ctl_free_msg(r);
    return rc;
}

int cmd_rmp(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {{"force", no_argument, NULL, 'f'},
                                       {"all", no_argument, NULL, 'a'},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    rm_opts o = {0};
    int first, rc;
    if (ctl_parse(c, argc, argv, "fa", lo, rmp_help, rm_opt, &o, &first, &rc))
        return rc;
    if (o.all)
        return all_pods(c, &o);
    return cu_each_arg(c, argc, argv, first,
                       "needs at least one POD-ID, or -a (see sluicectl rmp --help)", CU_POD,
                       rmp_one, &o);
}

/* ---- pods ---- */

static const char pods_help[] = "Usage: sluicectl pods [FLAGS]\n"
                                "\n"
                                "Lists pod sandboxes, newest first.\n"
                                "\n"
                                "      --id ID            only this ID (or ID prefix)\n"
                                "      --name REGEX       only names matching REGEX\n"
                                "      --namespace REGEX  only namespaces matching REGEX\n"
                                "  -s, --state STATE      ready or notready\n"
                                "      --label KEY=VALUE  only pods with this label (repeatable)\n"
                                "  -l, --latest           only the newest pod\n"
                                "  -n, --last N           only the N newest pods\n"
                                "  -q, --quiet            only IDs\n"
                                "  -v, --verbose          key: value blocks instead of a table\n"
                                "      --no-trunc         full IDs\n"
                                "  -o, --output FORMAT    table (default), json or yaml\n"
                                "  -h, --help             this help\n";

enum { P_ID = 256, P_NAME, P_NS, P_LABEL, P_NOTRUNC };

typedef struct pods_opts {
    ctl *c;
    cu_list_opts l;
    const char *id, *name, *ns, *state;
    cu_labels labels;
} pods_opts;

static int pods_opt(void *arg, int id, const char *val)
{
    pods_opts *o = arg;
    switch (id) {
    case P_ID:
        o->id = val;
        return 0;
    case P_NAME:
        o->name = val;
        return 0;
    case P_NS:
        o->ns = val;
        return 0;
    case 's':
        o->state = val;
        return 0;
    case P_LABEL:
        return cu_labels_add(o->c, &o->labels, val, "--label");
    default:
        return cu_list_opt(o->c, &o->l, id == P_NOTRUNC ? CU_NO_TRUNC : id, val);
    }
}

static bool pod_matches(const pods_opts *o, const Runtime__V1__PodSandbox *p)
{
    const Runtime__V1__PodSandboxMetadata *md = p->metadata;
    if (o->id && strncmp(p->id, o->id, strlen(o->id)))
        return false;
    if (o->name && !cu_regex_match(o->name, md ? md->name : ""))
        return false;
    if (o->ns && !cu_regex_match(o->ns, md ? md->namespace_ : ""))
        return false;
    return true;
}

static void pod_row(ctl_table *t, const Runtime__V1__PodSandbox *p, bool no_trunc)
{
    char id[128], ago[64], att[16];
    ctl_trunc_id(p->id, no_trunc, id, sizeof id);
    ctl_ago(p->created_at, ago, sizeof ago);
    const Runtime__V1__PodSandboxMetadata *md = p->metadata;
    snprintf(att, sizeof att, "%u", md ? md->attempt : 0);
    const char *cells[] = {id,
                           ago,
                           ctl_pod_state(p->state),
                           md ? md->name : "",
                           md ? md->namespace_ : "",
                           att,
                           p->runtime_handler && *p->runtime_handler ? p->runtime_handler
                                                                     : "(default)"};
    ctl_table_add(t, cells);
}

static void pod_verbose(const Runtime__V1__PodSandbox *p)
{
    char ago[64];
    ctl_ago(p->created_at, ago, sizeof ago);
    printf("ID: %s\n", p->id);
    if (p->metadata)
        printf("Name: %s\nUID: %s\nNamespace: %s\nAttempt: %u\n", p->metadata->name,
               p->metadata->uid, p->metadata->namespace_, p->metadata->attempt);
    printf("Status: %s\nCreated: %s\n", ctl_pod_state(p->state), ago);
    cu_print_map("Labels", (void *)p->labels, p->n_labels);
    cu_print_map("Annotations", (void *)p->annotations, p->n_annotations);
    putchar('\n');
}

static int cmp_pod(const void *a, const void *b)
{
    const Runtime__V1__PodSandbox *x = *(void *const *)a, *y = *(void *const *)b;
    return x->created_at < y->created_at ? 1 : x->created_at > y->created_at ? -1 : 0;
}

static void print_pods(pods_opts *o, Runtime__V1__ListPodSandboxResponse *r)
{
    static const char *const hdr[] = {"POD ID",    "CREATED", "STATE",  "NAME",
                                      "NAMESPACE", "ATTEMPT", "RUNTIME"};
    Runtime__V1__PodSandbox **v = calloc(r->n_items + 1, sizeof *v);
    if (!v)
        return;
    size_t n = 0;
    for (size_t i = 0; i < r->n_items; i++)
        if (pod_matches(o, r->items[i]))
            v[n++] = r->items[i];
    qsort(v, n, sizeof *v, cmp_pod);
    size_t shown = cu_limit(&o->l, n);
    if (o->l.out != CTL_OUT_TABLE) {
        cu_print_list("items", (ProtobufCMessage **)v, shown, o->l.out);
        free(v);
        return;
    }
    ctl_table *t = o->l.quiet || o->l.verbose ? NULL : ctl_table_new(7, hdr);
    for (size_t i = 0; i < shown; i++) {
        if (o->l.quiet)
            puts(v[i]->id);
        else if (o->l.verbose)
            pod_verbose(v[i]);
        else
            pod_row(t, v[i], o->l.no_trunc);
    }
    ctl_table_print(t);
    free(v);
}

int cmd_pods(ctl *c, int argc, char **argv)
{
    sl_error e;
    static const struct option lo[] = {{"id", required_argument, NULL, P_ID},
                                       {"name", required_argument, NULL, P_NAME},
                                       {"namespace", required_argument, NULL, P_NS},
                                       {"state", required_argument, NULL, 's'},
                                       {"label", required_argument, NULL, P_LABEL},
                                       {"latest", no_argument, NULL, 'l'},
                                       {"last", required_argument, NULL, 'n'},
                                       {"quiet", no_argument, NULL, 'q'},
                                       {"verbose", no_argument, NULL, 'v'},
                                       {"no-trunc", no_argument, NULL, P_NOTRUNC},
                                       {"output", required_argument, NULL, 'o'},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    pods_opts o = {.c = c,
                   .labels.d = &runtime__v1__pod_sandbox_filter__label_selector_entry__descriptor};
    int first, rc;
    if (ctl_parse(c, argc, argv, "s:ln:qvo:", lo, pods_help, pods_opt, &o, &first, &rc))
        return rc;
    if (first < argc)
        return ctl_usage(c, "takes no arguments, got \"%s\" (filters are flags: --id, --name)",
                         argv[first]);
    Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
    Runtime__V1__PodSandboxFilter f = RUNTIME__V1__POD_SANDBOX_FILTER__INIT;
    Runtime__V1__PodSandboxStateValue sv = RUNTIME__V1__POD_SANDBOX_STATE_VALUE__INIT;
    req.filter = &f;
    if (o.state) {
        if (!strcasecmp(o.state, "ready"))
            sv.state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY;
        else if (!strcasecmp(o.state, "notready"))
            sv.state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_NOTREADY;
        else
            return ctl_usage(c, "--state must be ready or notready, not \"%s\"", o.state);
        f.state = &sv;
    }
    f.n_label_selector = o.labels.n;
    f.label_selector = (void *)o.labels.ents;
    Runtime__V1__ListPodSandboxResponse *r = (void *)ctl_rt_call(
        c, "ListPodSandbox", &req.base, &runtime__v1__list_pod_sandbox_response__descriptor, &e);
    cu_labels_free(&o.labels);
    if (!r)
        return ctl_fail(c, &e);
    print_pods(&o, r);
    ctl_free_msg(r);
    return 0;
}

/* ---- inspectp ---- */

static const char inspectp_help[] =
    "Usage: sluicectl inspectp [-o json|yaml|table] [-q] POD-ID...\n"
    "\n"
    "Shows the status of pod sandboxes (verbose PodSandboxStatus: {\"status\": ...,\n"
    "\"info\": ...}).\n"
    "\n"
    "  -o, --output FORMAT   json (default), yaml or table\n"
    "  -q, --quiet           the status only, not the runtime's verbose info\n"
    "  -h, --help            this help\n";

static void pod_status_table(const Runtime__V1__PodSandboxStatus *s)
{
    char ago[64];
    ctl_ago(s->created_at, ago, sizeof ago);
    printf("ID: %s\n", s->id);
    if (s->metadata)
        printf("Name: %s\nUID: %s\nNamespace: %s\nAttempt: %u\n", s->metadata->name,
               s->metadata->uid, s->metadata->namespace_, s->metadata->attempt);
    printf("Status: %s\nCreated: %s\n", ctl_pod_state(s->state), ago);
    if (s->network && s->network->ip && *s->network->ip)
        printf("IP Addresses: %s\n", s->network->ip);
    cu_print_map("Labels", (void *)s->labels, s->n_labels);
    cu_print_map("Annotations", (void *)s->annotations, s->n_annotations);
}

static int inspectp_one(ctl *c, const char *id, void *arg, sl_error *e)
{
    const cu_inspect *o = arg;
    ctl_out out = o->out;
    Runtime__V1__PodSandboxStatusRequest req = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;
    req.pod_sandbox_id = (char *)id;
    req.verbose = out != CTL_OUT_TABLE && !o->quiet;
    Runtime__V1__PodSandboxStatusResponse *r = (void *)ctl_rt_call(
        c, "PodSandboxStatus", &req.base, &runtime__v1__pod_sandbox_status_response__descriptor, e);
    if (!r)
        return -1;
    if (out == CTL_OUT_TABLE && r->status)
        pod_status_table(r->status);
    else
        cu_print_status(&r->base, o);
    ctl_free_msg(r);
    return 0;
}

int cmd_inspectp(ctl *c, int argc, char **argv)
{
    return cu_inspect_cmd(c, argc, argv, inspectp_help,
                          "needs at least one POD-ID (see sluicectl inspectp --help)", CU_POD,
                          inspectp_one);
}
