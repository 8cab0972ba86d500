/* ps: list containers like crictl ps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_util.h"

static const char ps_help[] =
    "Usage: sluicectl ps [FLAGS]\n"
    "\n"
    "Lists containers, newest first; only running ones unless -a or --state.\n"
    "\n"
    "  -a, --all              every container, whatever its state\n"
    "      --id ID            only this ID (or ID prefix)\n"
    "  -p, --pod POD-ID       only containers of this pod sandbox\n"
    "      --name REGEX       only names matching REGEX\n"
    "      --image IMAGE      only containers of this image (name or ID prefix)\n"
    "  -s, --state STATE      created, running, exited or unknown\n"
    "      --label KEY=VALUE  only containers with this label (repeatable)\n"
    "  -l, --latest           only the newest container\n"
    "  -n, --last N           only the N newest containers\n"
    "  -q, --quiet            only IDs\n"
    "  -v, --verbose          key: value blocks instead of a table\n"
    "      --no-trunc         full IDs\n"
    "  -o, --output FORMAT    table (default), json or yaml\n"
    "  -h, --help             this help\n";

enum { O_ID = 256, O_NAME, O_IMAGE, O_LABEL, O_NOTRUNC };

typedef struct ps_opts {
    ctl *c;
    cu_list_opts l;
    bool all;
    const char *id, *pod, *name, *image, *state;
    cu_labels labels;
} ps_opts;

static int ps_opt(void *arg, int id, const char *val)
{
    ps_opts *o = arg;
    switch (id) {
    case 'a':
        o->all = true;
        return 0;
    case O_ID:
        o->id = val;
        return 0;
    case 'p':
        o->pod = val;
        return 0;
    case O_NAME:
        o->name = val;
        return 0;
    case O_IMAGE:
        o->image = val;
        return 0;
    case 's':
        o->state = val;
        return 0;
    case O_LABEL:
        return cu_labels_add(o->c, &o->labels, val, "--label");
    default:
        return cu_list_opt(o->c, &o->l, id == O_NOTRUNC ? CU_NO_TRUNC : id, val);
    }
}

static int parse_state(ctl *c, const char *s, int *out)
{
    static const char *const names[] = {"created", "running", "exited", "unknown"};
    for (int i = 0; i < 4; i++)
        if (!strcasecmp(s, names[i])) {
            *out = i;
            return 0;
        }
    return ctl_usage(c, "--state must be created, running, exited or unknown, not \"%s\"", s);
}

static bool ctr_matches(const ps_opts *o, const Runtime__V1__Container *ct)
{
    if (o->id && strncmp(ct->id, o->id, strlen(o->id)))
        return false;
    if (o->name && !cu_regex_match(o->name, ct->metadata ? ct->metadata->name : ""))
        return false;
    if (o->image) {
        const char *img = ct->image ? ct->image->image : "";
        const char *ref = ct->image_ref ? ct->image_ref : "";
        const char *bare = strncmp(ref, "sha256:", 7) ? ref : ref + 7;
        if (strcmp(img, o->image) && strcmp(ref, o->image) &&
            strncmp(bare, o->image, strlen(o->image)))
            return false;
    }
    return true;
}

static int cmp_ctr(const void *a, const void *b)
{
    const Runtime__V1__Container *x = *(void *const *)a, *y = *(void *const *)b;
    return x->created_at < y->created_at ? 1 : x->created_at > y->created_at ? -1 : 0;
}

/* Pod names and namespaces for the POD and NAMESPACE columns. */
static Runtime__V1__ListPodSandboxResponse *list_pods(ctl *c)
{
    Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
    return (void *)ctl_rt_call(c, "ListPodSandbox", &req.base,
                               &runtime__v1__list_pod_sandbox_response__descriptor);
}

static const Runtime__V1__PodSandboxMetadata *pod_md(Runtime__V1__ListPodSandboxResponse *pods,
                                                     const char *id)
{
    for (size_t i = 0; pods && i < pods->n_items; i++)
        if (!strcmp(pods->items[i]->id, id))
            return pods->items[i]->metadata;
    return NULL;
}

static void ctr_row(ctl_table *t, const Runtime__V1__Container *ct, bool no_trunc,
                    Runtime__V1__ListPodSandboxResponse *pods)
{
    char id[128], pod[128], img[512], ago[64], att[16];
    ctl_trunc_id(ct->id, no_trunc, id, sizeof id);
    ctl_trunc_id(ct->pod_sandbox_id, no_trunc, pod, sizeof pod);
    const char *image = ct->image ? ct->image->image : "";
    if (!strncmp(image, "sha256:", 7))
        ctl_trunc_id(image, no_trunc, img, sizeof img);
    else
        snprintf(img, sizeof img, "%s", image);
    ctl_ago(ct->created_at, ago, sizeof ago);
    snprintf(att, sizeof att, "%u", ct->metadata ? ct->metadata->attempt : 0);
    const Runtime__V1__PodSandboxMetadata *md = pod_md(pods, ct->pod_sandbox_id);
    const char *cells[] = {id,
                           img,
                           ago,
                           ctl_ctr_state(ct->state),
                           ct->metadata ? ct->metadata->name : "",
                           att,
                           pod,
                           md ? md->name : "",
                           md ? md->namespace_ : ""};
    ctl_table_add(t, cells);
}

static void ctr_verbose(const Runtime__V1__Container *ct)
{
    char ago[64];
    ctl_ago(ct->created_at, ago, sizeof ago);
    printf("ID: %s\nPodID: %s\n", ct->id, ct->pod_sandbox_id);
    if (ct->metadata)
        printf("Name: %s\nAttempt: %u\n", ct->metadata->name, ct->metadata->attempt);
    printf("State: %s\nImage: %s\nCreated: %s\n", ctl_ctr_state(ct->state),
           ct->image ? ct->image->image : "", ago);
    cu_print_map("Labels", (void *)ct->labels, ct->n_labels);
    cu_print_map("Annotations", (void *)ct->annotations, ct->n_annotations);
    putchar('\n');
}

static void print_ctrs(ctl *c, ps_opts *o, Runtime__V1__ListContainersResponse *r)
{
    static const char *const hdr[] = {"CONTAINER", "IMAGE",  "CREATED", "STATE",    "NAME",
                                      "ATTEMPT",   "POD ID", "POD",     "NAMESPACE"};
    Runtime__V1__Container **v = calloc(r->n_containers + 1, sizeof *v);
    if (!v)
        return;
    size_t n = 0;
    for (size_t i = 0; i < r->n_containers; i++)
        if (ctr_matches(o, r->containers[i]))
            v[n++] = r->containers[i];
    qsort(v, n, sizeof *v, cmp_ctr);
    size_t shown = cu_limit(&o->l, n);
    if (o->l.out != CTL_OUT_TABLE) {
        cu_print_list("containers", (ProtobufCMessage **)v, shown, o->l.out);
        free(v);
        return;
    }
    Runtime__V1__ListPodSandboxResponse *pods = o->l.quiet || o->l.verbose ? NULL : list_pods(c);
    ctl_table *t = o->l.quiet || o->l.verbose ? NULL : ctl_table_new(9, hdr);
    for (size_t i = 0; i < shown; i++) {
        if (o->l.quiet)
            puts(v[i]->id);
        else if (o->l.verbose)
            ctr_verbose(v[i]);
        else
            ctr_row(t, v[i], o->l.no_trunc, pods);
    }
    ctl_table_print(t);
    ctl_free_msg(pods);
    free(v);
}

static int run_ps(ctl *c, ps_opts *o)
{
    Runtime__V1__ListContainersRequest req = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
    Runtime__V1__ContainerFilter f = RUNTIME__V1__CONTAINER_FILTER__INIT;
    Runtime__V1__ContainerStateValue sv = RUNTIME__V1__CONTAINER_STATE_VALUE__INIT;
    int st = RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
    char *pod = NULL;
    req.filter = &f;
    if (o->state && parse_state(c, o->state, &st) != 0)
        return CTL_EXIT_USAGE;
    if (o->state || !o->all) {
        sv.state = (Runtime__V1__ContainerState)st;
        f.state = &sv;
    }
    if (o->pod && !(pod = ctl_resolve_pod(c, o->pod)))
        return CTL_EXIT_FAIL;
    f.pod_sandbox_id = pod ? pod : (char *)"";
    f.n_label_selector = o->labels.n;
    f.label_selector = (void *)o->labels.ents;
    Runtime__V1__ListContainersResponse *r = (void *)ctl_rt_call(
        c, "ListContainers", &req.base, &runtime__v1__list_containers_response__descriptor);
    free(pod);
    if (!r)
        return CTL_EXIT_FAIL;
    print_ctrs(c, o, r);
    ctl_free_msg(r);
    return 0;
}

int cmd_ps(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {{"all", no_argument, NULL, 'a'},
                                       {"id", required_argument, NULL, O_ID},
                                       {"pod", required_argument, NULL, 'p'},
                                       {"name", required_argument, NULL, O_NAME},
                                       {"image", required_argument, NULL, O_IMAGE},
                                       {"state", required_argument, NULL, 's'},
                                       {"label", required_argument, NULL, O_LABEL},
                                       {"latest", no_argument, NULL, 'l'},
                                       {"last", required_argument, NULL, 'n'},
                                       {"quiet", no_argument, NULL, 'q'},
                                       {"verbose", no_argument, NULL, 'v'},
                                       {"no-trunc", no_argument, NULL, O_NOTRUNC},
                                       {"output", required_argument, NULL, 'o'},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    ps_opts o = {.c = c,
                 .labels.d = &runtime__v1__container_filter__label_selector_entry__descriptor};
    int first, rc;
    if (ctl_parse(c, argc, argv, "ap:s:ln:qvo:", lo, ps_help, ps_opt, &o, &first, &rc)) {
        cu_labels_free(&o.labels);
        return rc;
    }
    if (first < argc) {
        cu_labels_free(&o.labels);
        return ctl_usage(c, "takes no arguments, got \"%s\" (filters are flags: --id, --name)",
                         argv[first]);
    }
    rc = run_ps(c, &o);
    cu_labels_free(&o.labels);
    return rc;
}
