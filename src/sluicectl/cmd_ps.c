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
    "      --image IMAGE      only containers of this image: a name, an ID or a unique\n"
    "                         ID prefix (matched by image ID, as crictl does)\n"
    "      --namespace REGEX  only containers of pods whose namespace matches REGEX\n"
    "  -r, --resolve-image-path  the image's repo tag in the table, not its ID\n"
    "  -s, --state STATE      created, running, exited or unknown\n"
    "      --label KEY=VALUE  only containers with this label (repeatable)\n"
    "  -l, --latest           only the newest container (in any state)\n"
    "  -n, --last N           only the N newest containers (in any state)\n"
    "  -q, --quiet            only IDs\n"
    "  -v, --verbose          key: value blocks instead of a table\n"
    "      --no-trunc         full IDs\n"
    "  -o, --output FORMAT    table (default), json or yaml\n"
    "  -h, --help             this help\n";

enum { O_ID = 256, O_NAME, O_IMAGE, O_LABEL, O_NOTRUNC, O_NS };

typedef struct ps_opts {
    ctl *c;
    cu_list_opts l;
    bool all, resolve;
    const char *id, *pod, *name, *image, *state, *ns;
    char *image_id; /* --image resolved to an image ID ("" when no image matches) */
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
    case O_NS:
        o->ns = val;
        return 0;
    case 'r':
        o->resolve = true;
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

/* Pod names and namespaces for the POD and NAMESPACE columns. */
static Runtime__V1__ListPodSandboxResponse *list_pods(ctl *c)
{
    sl_error e;
    Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
    void *r = ctl_rt_call(c, "ListPodSandbox", &req.base,
                          &runtime__v1__list_pod_sandbox_response__descriptor, &e);
    if (!r) /* the containers are still listed */
        ctl_warn(c, "%s (the POD and NAMESPACE columns stay empty)", e.msg);
    return r;
}

static const Runtime__V1__PodSandboxMetadata *pod_md(Runtime__V1__ListPodSandboxResponse *pods,
                                                     const char *id)
{
    for (size_t i = 0; pods && i < pods->n_items; i++)
        if (!strcmp(pods->items[i]->id, id))
            return pods->items[i]->metadata;
    return NULL;
}

/* ---- --image: matched by image ID, as crictl does ---- */

static char *status_id(ctl *c, const char *ref)
{
    Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
    spec.image = (char *)ref;
    Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
    req.image = &spec;
    ProtobufCMessage *r;
    sl_error ce;
    sl_error e; /* not found here is not an error: prefix_id looks next */
    char *id = NULL;
    if (ctl_call_raw(c, true, "ImageStatus", &req.base,
                     &runtime__v1__image_status_response__descriptor, &r, c->timeout_ms, &ce,
                     &e) == SL_CRI_OK) {
        Runtime__V1__ImageStatusResponse *s = (void *)r;
        id = s->image ? strdup(s->image->id) : NULL;
    }
    ctl_free_msg(r);
    return id;
}

/* The ID of the one image whose ID starts with prefix (with or without
 * "sha256:"), for runtimes whose ImageStatus takes whole IDs only. */
static char *prefix_id(ctl *c, const char *prefix)
{
    sl_error e;
    Runtime__V1__ListImagesRequest req = RUNTIME__V1__LIST_IMAGES_REQUEST__INIT;
    Runtime__V1__ListImagesResponse *r = (void *)ctl_img_call(
        c, "ListImages", &req.base, &runtime__v1__list_images_response__descriptor, &e);
    if (!r) /* ps goes on: no container matches */
        ctl_warn(c, "--image %s: %s", prefix, e.msg);
    const char *hit = NULL;
    size_t hits = 0, pl = strlen(prefix);
    for (size_t i = 0; r && pl && i < r->n_images; i++) {
        const char *id = r->images[i]->id;
        const char *bare = strncmp(id, "sha256:", 7) ? id : id + 7;
        if (!strncmp(id, prefix, pl) || !strncmp(bare, prefix, pl))
            hit = id, hits++;
    }
    char *out = hits == 1 ? strdup(hit) : NULL;
    ctl_free_msg(r);
    return out;
}

/* --image as an image ID: a name, a whole ID or a unique ID prefix. */
static char *resolve_image(ctl *c, const char *ref)
{
    char *id = status_id(c, ref);
    if (!id)
        id = prefix_id(c, ref);
    if (!id)
        ctl_debug(c, "--image %s: no such image, so no container matches", ref);
    return id ? id : strdup("");
}

/* The container's image ID: image_id (CRI 1.32) or ImageStatus of its
 * image (cached in *cache for the last reference asked). */
static bool image_is(ps_opts *o, const Runtime__V1__Container *ct, char **cache_ref,
                     char **cache_id)
{
    if (!*o->image_id)
        return false;
    if (ct->image_id && *ct->image_id)
        return !strcmp(ct->image_id, o->image_id);
    const char *ref = ct->image && ct->image->image ? ct->image->image : "";
    if (!*cache_ref || strcmp(*cache_ref, ref)) {
        free(*cache_ref);
        free(*cache_id);
        *cache_ref = strdup(ref);
        *cache_id = status_id(o->c, ref);
    }
    return *cache_id && !strcmp(*cache_id, o->image_id);
}

static bool ctr_matches(ps_opts *o, const Runtime__V1__Container *ct,
                        Runtime__V1__ListPodSandboxResponse *pods, char **cref, char **cid)
{
    if (o->id && strncmp(ct->id, o->id, strlen(o->id)))
        return false;
    if (o->name && !cu_regex_match(o->name, ct->metadata ? ct->metadata->name : ""))
        return false;
    if (o->ns) {
        const Runtime__V1__PodSandboxMetadata *md = pod_md(pods, ct->pod_sandbox_id);
        if (!cu_regex_match(o->ns, md ? md->namespace_ : ""))
            return false;
    }
    return !o->image || image_is(o, ct, cref, cid);
}

static int cmp_ctr(const void *a, const void *b)
{
    const Runtime__V1__Container *x = *(void *const *)a, *y = *(void *const *)b;
    return x->created_at < y->created_at ? 1 : x->created_at > y->created_at ? -1 : 0;
}

/* -r: the image's first repo tag instead of an ID (crictl's getRepoImage). */
static void repo_image(ctl *c, const char *image, char *out, size_t outlen)
{
    sl_error e;
    Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
    spec.image = (char *)image;
    Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
    req.image = &spec;
    Runtime__V1__ImageStatusResponse *r = (void *)ctl_img_call(
        c, "ImageStatus", &req.base, &runtime__v1__image_status_response__descriptor, &e);
    if (!r) /* the row keeps the image as the container names it */
        ctl_warn(c, "%s", e.msg);
    if (r && r->image && r->image->n_repo_tags)
        snprintf(out, outlen, "%s", r->image->repo_tags[0]);
    ctl_free_msg(r);
}

static void ctr_row(ps_opts *o, ctl_table *t, const Runtime__V1__Container *ct,
                    Runtime__V1__ListPodSandboxResponse *pods)
{
    char id[128], pod[128], img[512], ago[64], att[16];
    bool no_trunc = o->l.no_trunc;
    ctl_trunc_id(ct->id, no_trunc, id, sizeof id);
    ctl_trunc_id(ct->pod_sandbox_id, no_trunc, pod, sizeof pod);
    const char *image = ct->image ? ct->image->image : "";
    if (!strncmp(image, "sha256:", 7))
        ctl_trunc_id(image, no_trunc, img, sizeof img);
    else
        snprintf(img, sizeof img, "%s", image);
    if (o->resolve)
        repo_image(o->c, image, img, sizeof img);
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
    char *cref = NULL, *cid = NULL;
    bool need_pods = !(o->l.quiet || o->l.verbose) || o->ns;
    Runtime__V1__ListPodSandboxResponse *pods = need_pods ? list_pods(c) : NULL;
    for (size_t i = 0; i < r->n_containers; i++)
        if (ctr_matches(o, r->containers[i], pods, &cref, &cid))
            v[n++] = r->containers[i];
    free(cref);
    free(cid);
    qsort(v, n, sizeof *v, cmp_ctr);
    size_t shown = cu_limit(&o->l, n);
    if (o->l.out != CTL_OUT_TABLE) {
        cu_print_list("containers", (ProtobufCMessage **)v, shown, o->l.out);
        ctl_free_msg(pods);
        free(v);
        return;
    }
    ctl_table *t = o->l.quiet || o->l.verbose ? NULL : ctl_table_new(9, hdr);
    for (size_t i = 0; i < shown; i++) {
        if (o->l.quiet)
            puts(v[i]->id);
        else if (o->l.verbose)
            ctr_verbose(v[i]);
        else
            ctr_row(o, t, v[i], pods);
    }
    ctl_table_print(t);
    ctl_free_msg(pods);
    free(v);
}

static int run_ps(ctl *c, ps_opts *o)
{
    sl_error e;
    Runtime__V1__ListContainersRequest req = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
    Runtime__V1__ContainerFilter f = RUNTIME__V1__CONTAINER_FILTER__INIT;
    Runtime__V1__ContainerStateValue sv = RUNTIME__V1__CONTAINER_STATE_VALUE__INIT;
    int st = RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
    char *pod = NULL;
    req.filter = &f;
    if (o->state && parse_state(c, o->state, &st) != 0)
        return CTL_EXIT_USAGE;
    /* -l and -n look at every state, as crictl does */
    if ((o->state || !o->all) && !o->l.latest && !o->l.last) {
        sv.state = (Runtime__V1__ContainerState)st;
        f.state = &sv;
    }
    if (o->pod && !(pod = ctl_resolve_pod(c, o->pod, &e)))
        return ctl_fail(c, &e);
    if (o->image && !(o->image_id = resolve_image(c, o->image))) {
        free(pod);
        return CTL_EXIT_FAIL;
    }
    f.pod_sandbox_id = pod ? pod : (char *)"";
    f.n_label_selector = o->labels.n;
    f.label_selector = (void *)o->labels.ents;
    Runtime__V1__ListContainersResponse *r = (void *)ctl_rt_call(
        c, "ListContainers", &req.base, &runtime__v1__list_containers_response__descriptor, &e);
    free(pod);
    if (!r)
        return ctl_fail(c, &e);
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
                                       {"namespace", required_argument, NULL, O_NS},
                                       {"resolve-image-path", no_argument, NULL, 'r'},
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
    if (ctl_parse(c, argc, argv, "ap:s:ln:qvo:r", lo, ps_help, ps_opt, &o, &first, &rc)) {
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
    free(o.image_id);
    return rc;
}
