/* What a staged tarball holds: OCI image layouts (index.json -> manifests,
 * perhaps via a nested index) and docker-archives (manifest.json). Every
 * blob named by digest is checked against the hash taken while staging. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "image_int.h"

#define MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define ANN_CONTAINERD_NAME "io.containerd.image.name"
#define ANN_OCI_REF_NAME "org.opencontainers.image.ref.name"

#if defined(__x86_64__)
#define PLATFORM_ARCH "amd64"
#elif defined(__aarch64__)
#define PLATFORM_ARCH "arm64"
#elif defined(__arm__)
#define PLATFORM_ARCH "arm"
#elif defined(__powerpc64__)
#define PLATFORM_ARCH "ppc64le"
#elif defined(__s390x__)
#define PLATFORM_ARCH "s390x"
#elif defined(__riscv) && __riscv_xlen == 64
#define PLATFORM_ARCH "riscv64"
#else
#define PLATFORM_ARCH "unknown"
#endif

typedef struct parse_ctx {
    const sl_stage *st;
    const sl_image_limits *lim;
    sl_pending *p;
    size_t n, cap;
    sl_error *e;
} parse_ctx;

static const char *jstr(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

/* ---- config ---- */

static int dup_str(char **dst, const json_t *obj, const char *key)
{
    return (*dst = strdup(jstr(obj, key))) ? 0 : -1;
}

int sl_config_parse(const json_t *config, sl_config_fields *f, sl_strv *diff_ids, sl_error *e)
{
    memset(f, 0, sizeof(*f));
    if (!json_is_object(config))
        return sl_error_set(e, EINVAL, "config is not a JSON object");
    const json_t *c = json_object_get(config, "config");
    if (c && !json_is_null(c) && !json_is_object(c))
        return sl_error_set(e, EINVAL, "config: \"config\" is not an object");
    if (sl_strv_from_json(&f->entrypoint, json_object_get(c, "Entrypoint")) < 0 ||
        sl_strv_from_json(&f->cmd, json_object_get(c, "Cmd")) < 0 ||
        sl_strv_from_json(&f->env, json_object_get(c, "Env")) < 0)
        return sl_error_set(e, EINVAL, "config: Entrypoint, Cmd or Env is not a string array");
    if (dup_str(&f->workdir, c, "WorkingDir") < 0 || dup_str(&f->user, c, "User") < 0 ||
        dup_str(&f->stop_signal, c, "StopSignal") < 0)
        return sl_error_set(e, ENOMEM, "config");
    const json_t *rootfs = json_object_get(config, "rootfs");
    if (strcmp(jstr(rootfs, "type"), "layers") != 0)
        return sl_error_set(e, EINVAL, "config: rootfs.type is not \"layers\"");
    if (sl_strv_from_json(diff_ids, json_object_get(rootfs, "diff_ids")) < 0)
        return sl_error_set(e, EINVAL, "config: rootfs.diff_ids is not a string array");
    for (size_t i = 0; i < diff_ids->n; i++)
        if (!sl_digest_valid(diff_ids->v[i]))
            return sl_error_set(e, EINVAL, "config: diff_id %zu is not a sha256 digest", i);
    return 0;
}

void sl_config_fields_free(sl_config_fields *f)
{
    sl_strv_free(&f->entrypoint);
    sl_strv_free(&f->cmd);
    sl_strv_free(&f->env);
    free(f->workdir);
    free(f->user);
    free(f->stop_signal);
    memset(f, 0, sizeof(*f));
}

/* ---- pending images ---- */

void sl_pending_free(sl_pending *p, size_t n)
{
    for (size_t i = 0; p && i < n; i++) {
        free(p[i].manifest_raw);
        free(p[i].config_raw);
        sl_strv_free(&p[i].tags);
        free(p[i].layers);
        sl_config_fields_free(&p[i].cfg);
    }
    free(p);
}

/* The pending image with this id, or a new one (merging duplicates). */
static sl_pending *pending_get(parse_ctx *c, const char *id, int *is_new)
{
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->p[i].id, id)) {
            *is_new = 0;
            return &c->p[i];
        }
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 4;
        sl_pending *np = realloc(c->p, cap * sizeof(*np));
        if (!np)
            return NULL;
        c->p = np;
        c->cap = cap;
    }
    sl_pending *p = &c->p[c->n++];
    memset(p, 0, sizeof(*p));
    snprintf(p->id, sizeof(p->id), "%s", id);
    *is_new = 1;
    return p;
}

static int add_tag(parse_ctx *c, sl_pending *p, const char *ref)
{
    char norm[SL_IMAGE_REF_MAX];
    sl_image_ref r;
    if (sl_image_ref_parse(ref, &r, c->e) < 0 || !r.tag[0])
        return sl_error_set(c->e, EINVAL, "image name \"%.300s\" is not a name:tag", ref);
    if (sl_image_ref_name_tag(&r, norm, sizeof(norm)) < 0)
        return sl_error_set(c->e, EINVAL, "image name \"%.300s\" too long", ref);
    if (!sl_strv_has(&p->tags, norm) && sl_strv_push(&p->tags, norm) < 0)
        return sl_error_set(c->e, ENOMEM, "image name");
    return 0;
}

/* The blob named by digest (blobs/sha256/<hex>), its content verified. */
static const sl_staged *find_blob(parse_ctx *c, const char *digest, const char *what)
{
    if (!sl_digest_valid(digest))
        return sl_error_set(c->e, EINVAL, "%s: invalid digest \"%.100s\"", what, digest), NULL;
    char path[96];
    snprintf(path, sizeof(path), "blobs/sha256/%s", digest + 7);
    const sl_staged *m = sl_stage_find(c->st, path);
    if (!m)
        return sl_error_set(c->e, ENOENT, "%s %s: blob missing", what, digest), NULL;
    if (strcmp(m->digest, digest) != 0)
        return sl_error_set(c->e, EINVAL, "%s %s: digest mismatch (content is %s)", what, digest,
                            m->digest),
               NULL;
    return m;
}

static sl_layer_compression layer_compression(const char *mt)
{
    size_t n = strlen(mt);
#define ENDS(s) (n >= strlen(s) && !strcmp(mt + n - strlen(s), s))
    if (!mt[0])
        return SL_LAYER_AUTO;
    if (ENDS("+gzip") || ENDS(".tar.gzip"))
        return SL_LAYER_GZIP;
    if (ENDS("+zstd") || ENDS(".tar.zstd"))
        return SL_LAYER_ZSTD;
    if (ENDS(".tar") || ENDS(".diff.tar"))
        return SL_LAYER_NONE;
#undef ENDS
    return (sl_layer_compression)-1;
}

/* Reads the config at m, fills a new pending image's fields and checks the
 * layer count. Returns the pending image (NULL with *e), *is_new set. */
static sl_pending *load_config(parse_ctx *c, const sl_staged *m, size_t nlayers, int *is_new)
{
    sl_pending *p = pending_get(c, m->digest, is_new);
    if (!p)
        return sl_error_set(c->e, ENOMEM, "config"), NULL;
    if (!*is_new)
        return p;
    json_t *cfg;
    if (sl_stage_json(c->st, m, &cfg, &p->config_raw, &p->config_len, c->e) < 0)
        return NULL;
    sl_strv diff_ids = {0};
    int rc = sl_config_parse(cfg, &p->cfg, &diff_ids, c->e);
    json_decref(cfg);
    if (rc == 0 && diff_ids.n != nlayers)
        rc = sl_error_set(c->e, EINVAL, "config lists %zu diff_ids for %zu layers", diff_ids.n,
                          nlayers);
    if (rc == 0 && nlayers > c->lim->max_layers)
        rc = sl_error_set(c->e, EFBIG, "%zu layers, over %u", nlayers, c->lim->max_layers);
    if (rc == 0 && nlayers && !(p->layers = calloc(nlayers, sizeof(*p->layers))))
        rc = sl_error_set(c->e, ENOMEM, "config");
    for (size_t i = 0; rc == 0 && i < nlayers; i++)
        snprintf(p->layers[i].diff_id, sizeof(p->layers[i].diff_id), "%s", diff_ids.v[i]);
    p->nlayers = rc == 0 ? nlayers : 0;
    sl_strv_free(&diff_ids);
    if (rc < 0) {
        sl_error_wrap(c->e, "config %s", m->digest);
        return NULL;
    }
    return p;
}

/* ---- OCI image layout ---- */

static int oci_layers(parse_ctx *c, sl_pending *p, const json_t *layers)
{
    for (size_t i = 0; i < p->nlayers; i++) {
        const json_t *d = json_array_get(layers, i);
        char what[64];
        snprintf(what, sizeof(what), "layer %zu", i + 1);
        const sl_staged *b = find_blob(c, jstr(d, "digest"), what);
        if (!b)
            return -1;
        sl_layer_compression comp = layer_compression(jstr(d, "mediaType"));
        if ((int)comp < 0)
            return sl_error_set(c->e, ENOTSUP, "%s %s: unsupported media type %.200s", what,
                                jstr(d, "digest"), jstr(d, "mediaType"));
        p->layers[i].blob = b;
        p->layers[i].comp = comp;
    }
    return 0;
}

static int oci_manifest(parse_ctx *c, const json_t *man, const sl_staged *mblob,
                        const sl_strv *names)
{
    const json_t *layers = json_object_get(man, "layers");
    if (!json_is_array(layers))
        return sl_error_set(c->e, EINVAL, "manifest %s: no layers array", mblob->digest);
    const sl_staged *cb = find_blob(c, jstr(json_object_get(man, "config"), "digest"), "config");
    if (!cb)
        return sl_error_wrap(c->e, "manifest %s", mblob->digest);
    int is_new;
    sl_pending *p = load_config(c, cb, json_array_size(layers), &is_new);
    if (!p)
        return -1;
    if (is_new) {
        snprintf(p->manifest, sizeof(p->manifest), "%s", mblob->digest);
        if (oci_layers(c, p, layers) < 0)
            return sl_error_wrap(c->e, "manifest %s", mblob->digest);
    }
    for (size_t i = 0; i < names->n; i++)
        if (add_tag(c, p, names->v[i]) < 0)
            return -1;
    return 0;
}

static int platform_ok(const json_t *desc)
{
    const json_t *pl = json_object_get(desc, "platform");
    return !pl ||
           (!strcmp(jstr(pl, "os"), "linux") && !strcmp(jstr(pl, "architecture"), PLATFORM_ARCH));
}

static int oci_descriptor(parse_ctx *c, const json_t *desc, const sl_strv *names, int depth);

/* A nested index: the manifest for this platform whose blob is present. */
static int oci_nested(parse_ctx *c, const json_t *idx, const sl_strv *names, int depth,
                      const char *digest)
{
    const json_t *mans = json_object_get(idx, "manifests");
    if (json_array_size(mans) > SL_IMAGE_MAX_MANIFESTS)
        return sl_error_set(c->e, EFBIG, "index %s: over %u manifests", digest,
                            SL_IMAGE_MAX_MANIFESTS);
    for (size_t i = 0; i < json_array_size(mans); i++) {
        const json_t *d = json_array_get(mans, i);
        const char *digest_d = jstr(d, "digest");
        if (!sl_digest_valid(digest_d) || !platform_ok(d))
            continue;
        char path[96];
        snprintf(path, sizeof(path), "blobs/sha256/%s", digest_d + 7);
        if (sl_stage_find(c->st, path))
            return oci_descriptor(c, d, names, depth + 1);
    }
    return sl_error_set(c->e, ENOENT, "index %s: no linux/%s manifest in the archive", digest,
                        PLATFORM_ARCH);
}

/* A manifest seen before only adds names: an index listing one manifest
 * many times must not parse it many times. */
static sl_pending *seen_manifest(parse_ctx *c, const char *digest)
{
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->p[i].manifest, digest))
            return &c->p[i];
    return NULL;
}

static int oci_descriptor(parse_ctx *c, const json_t *desc, const sl_strv *names, int depth)
{
    if (depth > SL_IMAGE_MAX_INDEX_DEPTH)
        return sl_error_set(c->e, EINVAL, "indexes nested over %d deep", SL_IMAGE_MAX_INDEX_DEPTH);
    const char *dg = jstr(desc, "digest");
    sl_pending *seen = sl_digest_valid(dg) ? seen_manifest(c, dg) : NULL;
    for (size_t i = 0; seen && i < names->n; i++)
        if (add_tag(c, seen, names->v[i]) < 0)
            return -1;
    if (seen)
        return 0;
    const sl_staged *m = find_blob(c, jstr(desc, "digest"), "manifest");
    if (!m)
        return -1;
    json_t *doc;
    if (sl_stage_json(c->st, m, &doc, NULL, NULL, c->e) < 0)
        return -1;
    const char *mt = jstr(desc, "mediaType")[0] ? jstr(desc, "mediaType") : jstr(doc, "mediaType");
    int rc;
    if (!strcmp(mt, MT_OCI_INDEX) || !strcmp(mt, MT_DOCKER_LIST))
        rc = oci_nested(c, doc, names, depth, m->digest);
    else
        rc = oci_manifest(c, doc, m, names);
    json_decref(doc);
    return rc;
}

/* The name of an index entry: containerd's annotation, or a ref.name that
 * is a whole reference (a bare tag like "latest" names no repository). */
static int oci_names(parse_ctx *c, const json_t *desc, sl_strv *names)
{
    const json_t *ann = json_object_get(desc, "annotations");
    const char *name = jstr(ann, ANN_CONTAINERD_NAME);
    const char *ref = jstr(ann, ANN_OCI_REF_NAME);
    if (!name[0] && (strchr(ref, '/') || strchr(ref, ':')))
        name = ref;
    if (name[0] && sl_strv_push(names, name) < 0)
        return sl_error_set(c->e, ENOMEM, "index.json");
    return 0;
}

static int parse_oci(parse_ctx *c, const sl_staged *index)
{
    json_t *doc;
    if (sl_stage_json(c->st, index, &doc, NULL, NULL, c->e) < 0)
        return -1;
    const json_t *mans = json_object_get(doc, "manifests");
    int rc = json_is_array(mans) ? 0 : sl_error_set(c->e, EINVAL, "index.json: no manifests");
    if (rc == 0 && json_array_size(mans) > SL_IMAGE_MAX_MANIFESTS)
        rc = sl_error_set(c->e, EFBIG, "index.json: over %u manifests", SL_IMAGE_MAX_MANIFESTS);
    for (size_t i = 0; rc == 0 && i < json_array_size(mans); i++) {
        const json_t *d = json_array_get(mans, i);
        sl_strv names = {0};
        if (rc == 0)
            rc = oci_names(c, d, &names);
        if (rc == 0)
            rc = oci_descriptor(c, d, &names, 0);
        sl_strv_free(&names);
    }
    json_decref(doc);
    return rc;
}

/* ---- docker-archive ---- */

static int docker_layers(parse_ctx *c, sl_pending *p, const json_t *layers)
{
    for (size_t i = 0; i < p->nlayers; i++) {
        const char *path = json_string_value(json_array_get(layers, i));
        const sl_staged *b = path ? sl_stage_find(c->st, path) : NULL;
        if (!b)
            return sl_error_set(c->e, ENOENT, "layer %zu (%.200s): missing from the archive", i + 1,
                                path ? path : "?");
        p->layers[i].blob = b;
        p->layers[i].comp = SL_LAYER_AUTO;
    }
    return 0;
}

/* docker names configs "<hex>.json" (or blobs/sha256/<hex>): the name must
 * agree with the content. */
static int docker_config_name_ok(const char *path, const char *digest)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (!sl_hex_valid(base, 64, 0) || (base[64] && strcmp(base + 64, ".json") != 0))
        return 1;
    return !strncmp(base, digest + 7, 64);
}

static int docker_image(parse_ctx *c, const json_t *item)
{
    const char *cpath = jstr(item, "Config");
    const json_t *layers = json_object_get(item, "Layers");
    const sl_staged *cm = sl_stage_find(c->st, cpath);
    if (!cm || !json_is_array(layers))
        return sl_error_set(c->e, EINVAL, "manifest.json: config %.200s or Layers missing", cpath);
    if (!docker_config_name_ok(cpath, cm->digest))
        return sl_error_set(c->e, EINVAL, "config %.200s: digest mismatch (content is %s)", cpath,
                            cm->digest);
    int is_new;
    sl_pending *p = load_config(c, cm, json_array_size(layers), &is_new);
    if (!p)
        return -1;
    if (is_new && docker_layers(c, p, layers) < 0)
        return sl_error_wrap(c->e, "image %s", p->id);
    const json_t *tags = json_object_get(item, "RepoTags");
    for (size_t i = 0; i < json_array_size(tags); i++) {
        const char *t = json_string_value(json_array_get(tags, i));
        if (!t || add_tag(c, p, t) < 0)
            return sl_error_set(c->e, EINVAL, "manifest.json: bad RepoTags");
    }
    return 0;
}

static int parse_docker(parse_ctx *c, const sl_staged *manifest)
{
    json_t *doc;
    if (sl_stage_json(c->st, manifest, &doc, NULL, NULL, c->e) < 0)
        return -1;
    int rc = json_is_array(doc) ? 0 : sl_error_set(c->e, EINVAL, "manifest.json: not an array");
    if (rc == 0 && json_array_size(doc) > SL_IMAGE_MAX_MANIFESTS)
        rc = sl_error_set(c->e, EFBIG, "manifest.json: over %u images", SL_IMAGE_MAX_MANIFESTS);
    for (size_t i = 0; rc == 0 && i < json_array_size(doc); i++)
        rc = docker_image(c, json_array_get(doc, i));
    json_decref(doc);
    return rc;
}

int sl_pending_parse(const sl_stage *st, const sl_image_limits *lim, sl_pending **out, size_t *n,
                     sl_error *e)
{
    parse_ctx c = {.st = st, .lim = lim, .e = e};
    const sl_staged *index = sl_stage_find(st, "index.json");
    const sl_staged *manifest = sl_stage_find(st, "manifest.json");
    int rc;
    if (index)
        rc = parse_oci(&c, index);
    else if (manifest)
        rc = parse_docker(&c, manifest);
    else
        rc = sl_error_set(e, EINVAL,
                          "neither an OCI layout (index.json) nor a docker-archive "
                          "(manifest.json)");
    if (rc == 0 && c.n == 0)
        rc = sl_error_set(e, EINVAL, "no image in the archive");
    if (rc < 0) {
        sl_pending_free(c.p, c.n);
        return -1;
    }
    *out = c.p;
    *n = c.n;
    return 0;
}
