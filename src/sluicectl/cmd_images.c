/* Image commands: images, inspecti, rmi. (image import: cmd_import.c) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_util.h"

static const char images_help[] = "Usage: sluicectl images [FLAGS] [IMAGE]\n"
                                  "\n"
                                  "Lists images (only those matching IMAGE when given).\n"
                                  "\n"
                                  "      --digests          add a DIGEST column\n"
                                  "      --pinned           add a PINNED column (true/false)\n"
                                  "  -q, --quiet            only image IDs\n"
                                  "  -v, --verbose          key: value blocks instead of a table\n"
                                  "      --no-trunc         full IDs\n"
                                  "  -o, --output FORMAT    table (default), json or yaml\n"
                                  "  -h, --help             this help\n";

enum { I_DIGESTS = 256, I_NOTRUNC, I_PINNED };

typedef struct images_opts {
    ctl *c;
    cu_list_opts l;
    bool digests, pinned;
} images_opts;

static int images_opt(void *arg, int id, const char *val)
{
    images_opts *o = arg;
    if (id == I_DIGESTS || id == I_PINNED) {
        *(id == I_DIGESTS ? &o->digests : &o->pinned) = true;
        return 0;
    }
    return cu_list_opt(o->c, &o->l, id == I_NOTRUNC ? CU_NO_TRUNC : id, val);
}

/* "repo:tag" → repo, tag (the ':' after the last '/'). */
static void split_tag(const char *rt, char *repo, size_t rl, char *tag, size_t tl)
{
    const char *slash = strrchr(rt, '/');
    const char *colon = strrchr(slash ? slash : rt, ':');
    if (!colon) {
        snprintf(repo, rl, "%s", rt);
        snprintf(tag, tl, "<none>");
        return;
    }
    snprintf(repo, rl, "%.*s", (int)(colon - rt), rt);
    snprintf(tag, tl, "%s", colon + 1);
}

static const char *digest_of(const Runtime__V1__Image *im, const char *repo)
{
    size_t rl = strlen(repo);
    for (size_t i = 0; i < im->n_repo_digests; i++) {
        const char *d = im->repo_digests[i];
        if (!strncmp(d, repo, rl) && d[rl] == '@')
            return d + rl + 1;
    }
    return im->n_repo_digests ? strchr(im->repo_digests[0], '@') + 1 : "<none>";
}

static void image_rows(ctl_table *t, const Runtime__V1__Image *im, const images_opts *o)
{
    char id[128], size[32], repo[512], tag[256], dg[128];
    ctl_trunc_id(im->id, o->l.no_trunc, id, sizeof id);
    ctl_human_size(im->size, size, sizeof size);
    size_t n = im->n_repo_tags ? im->n_repo_tags : 1;
    for (size_t i = 0; i < n; i++) {
        if (im->n_repo_tags)
            split_tag(im->repo_tags[i], repo, sizeof repo, tag, sizeof tag);
        else
            snprintf(repo, sizeof repo, "<none>"), snprintf(tag, sizeof tag, "<none>");
        ctl_trunc_id(digest_of(im, repo), o->l.no_trunc, dg, sizeof dg);
        const char *cells[6] = {repo, tag};
        int k = 2;
        if (o->digests)
            cells[k++] = dg;
        cells[k++] = id;
        cells[k++] = size;
        cells[k] = im->pinned ? "true" : "false"; /* read only with --pinned */
        ctl_table_add(t, cells);
    }
}

static void image_verbose(const Runtime__V1__Image *im)
{
    printf("ID: %s\n", im->id);
    for (size_t i = 0; i < im->n_repo_tags; i++)
        printf("RepoTags: %s\n", im->repo_tags[i]);
    for (size_t i = 0; i < im->n_repo_digests; i++)
        printf("RepoDigests: %s\n", im->repo_digests[i]);
    printf("Size: %llu\n", (unsigned long long)im->size);
    if (im->uid)
        printf("Uid: %lld\n", (long long)im->uid->value);
    if (im->username && *im->username)
        printf("Username: %s\n", im->username);
    if (im->pinned)
        printf("Pinned: true\n");
    putchar('\n');
}

static void print_images(images_opts *o, Runtime__V1__ListImagesResponse *r)
{
    if (o->l.out != CTL_OUT_TABLE) {
        cu_print_list("images", (ProtobufCMessage **)r->images, r->n_images, o->l.out);
        return;
    }
    const char *hdr[6] = {"IMAGE", "TAG"};
    int n = 2;
    if (o->digests)
        hdr[n++] = "DIGEST";
    hdr[n++] = "IMAGE ID";
    hdr[n++] = "SIZE";
    if (o->pinned)
        hdr[n++] = "PINNED";
    ctl_table *t = o->l.quiet || o->l.verbose ? NULL : ctl_table_new(n, hdr);
    for (size_t i = 0; i < r->n_images; i++) {
        if (o->l.quiet)
            puts(r->images[i]->id);
        else if (o->l.verbose)
            image_verbose(r->images[i]);
        else
            image_rows(t, r->images[i], o);
    }
    ctl_table_print(t);
}

int cmd_images(ctl *c, int argc, char **argv)
{
    sl_error e;
    static const struct option lo[] = {{"digests", no_argument, NULL, I_DIGESTS},
                                       {"pinned", no_argument, NULL, I_PINNED},
                                       {"quiet", no_argument, NULL, 'q'},
                                       {"verbose", no_argument, NULL, 'v'},
                                       {"no-trunc", no_argument, NULL, I_NOTRUNC},
                                       {"output", required_argument, NULL, 'o'},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    images_opts o = {.c = c};
    int first, rc;
    if (ctl_parse(c, argc, argv, "qvo:", lo, images_help, images_opt, &o, &first, &rc))
        return rc;
    if (argc - first > 1)
        return ctl_usage(c, "takes at most one IMAGE filter");
    Runtime__V1__ListImagesRequest req = RUNTIME__V1__LIST_IMAGES_REQUEST__INIT;
    Runtime__V1__ImageFilter f = RUNTIME__V1__IMAGE_FILTER__INIT;
    Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
    if (first < argc) {
        spec.image = argv[first];
        f.image = &spec;
        req.filter = &f;
    }
    Runtime__V1__ListImagesResponse *r = (void *)ctl_img_call(
        c, "ListImages", &req.base, &runtime__v1__list_images_response__descriptor, &e);
    if (!r)
        return ctl_fail(c, &e);
    print_images(&o, r);
    ctl_free_msg(r);
    return 0;
}

/* ---- inspecti ---- */

static const char inspecti_help[] =
    "Usage: sluicectl inspecti [-o json|yaml|table] [-q] IMAGE...\n"
    "\n"
    "Shows the status of images (verbose ImageStatus: {\"status\": ..., \"info\": ...}).\n"
    "IMAGE is a name, an ID or a unique ID prefix.\n"
    "\n"
    "  -o, --output FORMAT   json (default), yaml or table\n"
    "  -q, --quiet           the status only, not the runtime's verbose info\n"
    "  -h, --help            this help\n";

/* The image's status, or NULL with e set (an unknown image too). */
static Runtime__V1__ImageStatusResponse *image_status(ctl *c, const char *ref, bool verbose,
                                                      sl_error *e)
{
    Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
    Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
    spec.image = (char *)ref;
    req.image = &spec;
    req.verbose = verbose;
    Runtime__V1__ImageStatusResponse *r = (void *)ctl_img_call(
        c, "ImageStatus", &req.base, &runtime__v1__image_status_response__descriptor, e);
    if (r && !r->image) {
        sl_error_code(e, SL_CRI_NOT_FOUND, "image \"%s\" not found (`sluicectl images` lists them)",
                      ref);
        ctl_free_msg(r);
        return NULL;
    }
    return r;
}

static int inspecti_one(ctl *c, const char *ref, void *arg, sl_error *e)
{
    const cu_inspect *o = arg;
    ctl_out out = o->out;
    Runtime__V1__ImageStatusResponse *r =
        image_status(c, ref, out != CTL_OUT_TABLE && !o->quiet, e);
    if (!r)
        return -1;
    if (out == CTL_OUT_TABLE) {
        image_verbose(r->image);
    } else {
        json_t *j = ctl_msg_to_json(&r->base), *doc = json_object();
        json_object_set(doc, "status", json_object_get(j, "image"));
        if (json_object_get(j, "info") && !o->quiet)
            json_object_set(doc, "info", json_object_get(j, "info"));
        ctl_print_doc(doc, out);
        json_decref(doc);
        json_decref(j);
    }
    ctl_free_msg(r);
    return 0;
}

int cmd_inspecti(ctl *c, int argc, char **argv)
{
    return cu_inspect_cmd(c, argc, argv, inspecti_help,
                          "needs at least one IMAGE (see sluicectl inspecti --help)", CU_RAW,
                          inspecti_one);
}

/* ---- rmi ---- */

static const char rmi_help[] =
    "Usage: sluicectl rmi [-a | --prune] [IMAGE...]\n"
    "\n"
    "Removes images with all their tags (IMAGE: name, ID or unique ID prefix).\n"
    "\n"
    "  -a, --all     remove every image\n"
    "  -q, --prune   remove every image no container uses (pinned ones stay)\n"
    "  -h, --help    this help\n";

typedef struct rmi_opts {
    bool all, prune;
} rmi_opts;

static int rmi_opt(void *arg, int id, const char *val)
{
    (void)val;
    rmi_opts *o = arg;
    if (id == 'a')
        o->all = true;
    else
        o->prune = true;
    return 0;
}

static int remove_image(ctl *c, const Runtime__V1__Image *im, sl_error *e)
{
    Runtime__V1__RemoveImageRequest req = RUNTIME__V1__REMOVE_IMAGE_REQUEST__INIT;
    Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
    spec.image = im->id;
    req.image = &spec;
    void *r = ctl_img_call(c, "RemoveImage", &req.base,
                           &runtime__v1__remove_image_response__descriptor, e);
    if (!r)
        return -1;
    ctl_free_msg(r);
    for (size_t i = 0; i < im->n_repo_tags; i++)
        printf("Deleted: %s\n", im->repo_tags[i]);
    if (!im->n_repo_tags)
        printf("Deleted: %s\n", im->id);
    return 0;
}

static int rmi_one(ctl *c, const char *ref, void *arg, sl_error *e)
{
    (void)arg;
    Runtime__V1__ImageStatusResponse *r = image_status(c, ref, false, e);
    if (!r)
        return -1;
    int rc = remove_image(c, r->image, e);
    ctl_free_msg(r);
    return rc;
}

static bool in_use(const Runtime__V1__ListContainersResponse *cs, const Runtime__V1__Image *im)
{
    for (size_t i = 0; cs && i < cs->n_containers; i++) {
        const Runtime__V1__Container *ct = cs->containers[i];
        if ((ct->image_ref && !strcmp(ct->image_ref, im->id)) ||
            (ct->image_id && !strcmp(ct->image_id, im->id)))
            return true;
        for (size_t t = 0; ct->image && t < im->n_repo_tags; t++)
            if (!strcmp(ct->image->image, im->repo_tags[t]))
                return true;
    }
    return false;
}

static int rmi_all(ctl *c, bool prune)
{
    sl_error e;
    Runtime__V1__ListImagesRequest req = RUNTIME__V1__LIST_IMAGES_REQUEST__INIT;
    Runtime__V1__ListImagesResponse *r = (void *)ctl_img_call(
        c, "ListImages", &req.base, &runtime__v1__list_images_response__descriptor, &e);
    if (!r)
        return ctl_fail(c, &e);
    Runtime__V1__ListContainersResponse *cs = NULL;
    if (prune) {
        Runtime__V1__ListContainersRequest creq = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
        cs = (void *)ctl_rt_call(c, "ListContainers", &creq.base,
                                 &runtime__v1__list_containers_response__descriptor, &e);
        if (!cs) {
            ctl_free_msg(r);
            return ctl_fail(c, &e);
        }
    }
    int rc = 0;
    for (size_t i = 0; i < r->n_images; i++)
        /* prune keeps pinned images (the sandbox image), as crictl does */
        if ((!prune || (!in_use(cs, r->images[i]) && !r->images[i]->pinned)) &&
            remove_image(c, r->images[i], &e) < 0)
            rc = ctl_fail(c, &e); /* each image's failure; the others go on */
    ctl_free_msg(cs);
    ctl_free_msg(r);
    return rc;
}

int cmd_rmi(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {{"all", no_argument, NULL, 'a'},
                                       {"prune", no_argument, NULL, 'q'},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    rmi_opts o = {0};
    int first, rc;
    if (ctl_parse(c, argc, argv, "aq", lo, rmi_help, rmi_opt, &o, &first, &rc))
        return rc;
    if (o.all || o.prune)
        return rmi_all(c, o.prune && !o.all);
    return cu_each_arg(c, argc, argv, first,
                       "needs at least one IMAGE, or -a / --prune (see sluicectl rmi --help)",
                       CU_RAW, rmi_one, NULL);
}
