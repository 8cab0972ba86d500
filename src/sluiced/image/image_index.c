/* images.json: the store's index. The file is the truth; the in-memory
 * records mirror it and are rebuilt from it whenever a write fails, so a
 * failed operation leaves the store as it was. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "image_int.h"

/* ---- records ---- */

sl_image_rec *sl_image_rec_new(const char *id)
{
    sl_image_rec *r = calloc(1, sizeof(*r));
    if (r)
        snprintf(r->id, sizeof(r->id), "%s", id);
    return r;
}

void sl_image_rec_free(sl_image_rec *r)
{
    if (!r)
        return;
    sl_strv_free(&r->tags);
    sl_strv_free(&r->digests);
    sl_strv_free(&r->layer_ids);
    sl_strv_free(&r->layer_dirs);
    sl_config_fields_free(&r->cfg);
    free(r);
}

char *sl_index_layer_dir(const sl_image_store *s, const char *diff_id)
{
    return sl_path_join(s->layers_dir, diff_id + strlen("sha256:"));
}

char *sl_index_blob_path(const sl_image_store *s, const char *digest)
{
    return sl_path_join(s->blobs_dir, digest + strlen("sha256:"));
}

static const char *const empty_strv[] = {NULL};

static const char *const *strv_view(const sl_strv *sv)
{
    return sv->v ? (const char *const *)sv->v : empty_strv;
}

static int derive_digests(sl_image_rec *r)
{
    sl_strv_free(&r->digests);
    if (!r->manifest[0])
        return 0;
    for (size_t i = 0; i < r->tags.n; i++) {
        sl_image_ref ref;
        char rd[SL_IMAGE_REF_MAX];
        if (sl_image_ref_parse(r->tags.v[i], &ref, NULL) < 0 ||
            sl_image_ref_name_digest(ref.name, r->manifest, rd, sizeof(rd)) < 0)
            continue;
        if (!sl_strv_has(&r->digests, rd) && sl_strv_push(&r->digests, rd) < 0)
            return -1;
    }
    return 0;
}

int sl_image_rec_refresh(const sl_image_store *s, sl_image_rec *r)
{
    if (derive_digests(r) < 0)
        return -1;
    sl_strv_free(&r->layer_dirs);
    uint64_t size = 0;
    for (size_t i = 0; i < r->layer_ids.n; i++) {
        SL_AUTOFREE char *dir = sl_index_layer_dir(s, r->layer_ids.v[i]);
        if (!dir || sl_strv_push(&r->layer_dirs, dir) < 0)
            return -1;
        const sl_layer_rec *l = sl_index_layer(s, r->layer_ids.v[i]);
        size += l ? l->size : 0;
    }
    sl_image *v = &r->view;
    v->id = r->id;
    v->repo_tags = strv_view(&r->tags);
    v->n_repo_tags = r->tags.n;
    v->repo_digests = strv_view(&r->digests);
    v->n_repo_digests = r->digests.n;
    v->size = size;
    v->layer_dirs = strv_view(&r->layer_dirs);
    v->n_layers = r->layer_dirs.n;
    v->config.entrypoint = strv_view(&r->cfg.entrypoint);
    v->config.n_entrypoint = r->cfg.entrypoint.n;
    v->config.cmd = strv_view(&r->cfg.cmd);
    v->config.n_cmd = r->cfg.cmd.n;
    v->config.env = strv_view(&r->cfg.env);
    v->config.n_env = r->cfg.env.n;
    v->config.workdir = r->cfg.workdir ? r->cfg.workdir : "";
    v->config.user = r->cfg.user ? r->cfg.user : "";
    v->config.stop_signal = r->cfg.stop_signal ? r->cfg.stop_signal : "";
    return 0;
}

/* ---- collections ---- */

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 16;
    void *na = realloc(*arr, nc * elem);
    if (!na)
        return -1;
    *arr = na;
    *cap = nc;
    return 0;
}

int sl_index_add_image(sl_image_store *s, sl_image_rec *r)
{
    if (grow((void **)&s->img, &s->capimg, s->nimg, sizeof(*s->img)) < 0)
        return -1;
    s->img[s->nimg++] = r;
    return 0;
}

void sl_index_del_image(sl_image_store *s, size_t i)
{
    sl_image_rec_free(s->img[i]);
    memmove(&s->img[i], &s->img[i + 1], (s->nimg - i - 1) * sizeof(*s->img));
    s->nimg--;
}

sl_image_rec *sl_index_image(const sl_image_store *s, const char *id)
{
    for (size_t i = 0; i < s->nimg; i++)
        if (!strcmp(s->img[i]->id, id))
            return s->img[i];
    return NULL;
}

sl_layer_rec *sl_index_layer(const sl_image_store *s, const char *diff_id)
{
    for (size_t i = 0; i < s->nlay; i++)
        if (!strcmp(s->lay[i].diff_id, diff_id))
            return &s->lay[i];
    return NULL;
}

int sl_index_add_layer(sl_image_store *s, const sl_layer_rec *l)
{
    sl_layer_rec *have = sl_index_layer(s, l->diff_id);
    if (have) {
        *have = *l;
        return 0;
    }
    if (grow((void **)&s->lay, &s->caplay, s->nlay, sizeof(*s->lay)) < 0)
        return -1;
    s->lay[s->nlay++] = *l;
    return 0;
}

size_t sl_index_layer_users(const sl_image_store *s, const char *diff_id)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nimg; i++)
        n += sl_strv_has(&s->img[i]->layer_ids, diff_id) ? 1 : 0;
    return n;
}

void sl_index_del_layer(sl_image_store *s, const char *diff_id)
{
    sl_layer_rec *l = sl_index_layer(s, diff_id);
    if (!l)
        return;
    size_t i = (size_t)(l - s->lay);
    memmove(&s->lay[i], &s->lay[i + 1], (s->nlay - i - 1) * sizeof(*s->lay));
    s->nlay--;
}

static void source_fini(sl_source_rec *src)
{
    free(src->path);
    sl_strv_free(&src->ids);
    sl_strv_free(&src->tags);
}

static int strv_copy(sl_strv *dst, const sl_strv *src)
{
    memset(dst, 0, sizeof(*dst));
    for (size_t i = 0; i < src->n; i++)
        if (sl_strv_push(dst, src->v[i]) < 0)
            return -1;
    return 0;
}

const sl_source_rec *sl_index_source(const sl_image_store *s, const char *path)
{
    for (size_t i = 0; i < s->nsrc; i++)
        if (!strcmp(s->src[i].path, path))
            return &s->src[i];
    return NULL;
}

int sl_index_set_source(sl_image_store *s, const sl_source_rec *src)
{
    sl_source_rec copy = *src;
    copy.path = strdup(src->path);
    int ids = strv_copy(&copy.ids, &src->ids), tags = strv_copy(&copy.tags, &src->tags);
    if (!copy.path || ids < 0 || tags < 0) {
        source_fini(&copy);
        return -1;
    }
    sl_source_rec *have = (sl_source_rec *)sl_index_source(s, src->path);
    if (have) {
        source_fini(have);
        *have = copy;
        return 0;
    }
    if (grow((void **)&s->src, &s->capsrc, s->nsrc, sizeof(*s->src)) < 0) {
        source_fini(&copy);
        return -1;
    }
    s->src[s->nsrc++] = copy;
    return 0;
}

void sl_index_clear(sl_image_store *s)
{
    for (size_t i = 0; i < s->nimg; i++)
        sl_image_rec_free(s->img[i]);
    for (size_t i = 0; i < s->nsrc; i++)
        source_fini(&s->src[i]);
    free(s->img);
    free(s->lay);
    free(s->src);
    s->img = NULL;
    s->lay = NULL;
    s->src = NULL;
    s->nimg = s->capimg = s->nlay = s->caplay = s->nsrc = s->capsrc = 0;
}

/* ---- JSON ---- */

static json_t *config_to_json(const sl_config_fields *f)
{
    return json_pack("{s:o,s:o,s:o,s:s,s:s,s:s}", "entrypoint", sl_strv_to_json(&f->entrypoint),
                     "cmd", sl_strv_to_json(&f->cmd), "env", sl_strv_to_json(&f->env), "workdir",
                     f->workdir ? f->workdir : "", "user", f->user ? f->user : "", "stop_signal",
                     f->stop_signal ? f->stop_signal : "");
}

static json_t *image_to_json(const sl_image_rec *r)
{
    return json_pack("{s:s,s:s,s:o,s:o,s:o}", "id", r->id, "manifest", r->manifest, "repo_tags",
                     sl_strv_to_json(&r->tags), "layers", sl_strv_to_json(&r->layer_ids), "config",
                     config_to_json(&r->cfg));
}

static json_t *layer_to_json(const sl_layer_rec *l)
{
    return json_pack("{s:s,s:I,s:I,s:I}", "diff_id", l->diff_id, "size", (json_int_t)l->size,
                     "disk", (json_int_t)l->disk, "inodes", (json_int_t)l->inodes);
}

static json_t *source_to_json(const sl_source_rec *r)
{
    json_t *j = json_pack("{s:s,s:I,s:I,s:I,s:I,s:o}", "path", r->path, "size", (json_int_t)r->size,
                          "ino", (json_int_t)r->ino, "dev", (json_int_t)r->dev, "mtime_ns",
                          (json_int_t)r->mtime_ns, "ids", sl_strv_to_json(&r->ids));
    if (j && r->has_tags && json_object_set_new(j, "tags", sl_strv_to_json(&r->tags)) < 0) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static json_t *index_to_json(const sl_image_store *s)
{
    json_t *imgs = json_array(), *lays = json_array(), *srcs = json_array();
    int bad = !imgs || !lays || !srcs;
    for (size_t i = 0; !bad && i < s->nimg; i++)
        bad = json_array_append_new(imgs, image_to_json(s->img[i])) < 0;
    for (size_t i = 0; !bad && i < s->nlay; i++)
        bad = json_array_append_new(lays, layer_to_json(&s->lay[i])) < 0;
    for (size_t i = 0; !bad && i < s->nsrc; i++)
        bad = json_array_append_new(srcs, source_to_json(&s->src[i])) < 0;
    if (bad) {
        json_decref(imgs);
        json_decref(lays);
        json_decref(srcs);
        return NULL;
    }
    return json_pack("{s:i,s:o,s:o,s:o}", "version", SL_INDEX_VERSION, "images", imgs, "layers",
                     lays, "sources", srcs);
}

int sl_index_save(const sl_image_store *s, sl_error *e)
{
    json_t *doc = index_to_json(s);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!text)
        return sl_error_set(e, ENOMEM, "write %s", s->index_path);
    int rc = sl_write_file_atomic(s->index_path, text, strlen(text), 0600, e);
    free(text);
    return rc;
}

static int u64_field(const json_t *obj, const char *key, uint64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int load_layer(sl_image_store *s, const json_t *j)
{
    sl_layer_rec l = {0};
    const char *d = json_string_value(json_object_get(j, "diff_id"));
    if (!d || !sl_digest_valid(d) || u64_field(j, "size", &l.size) < 0 ||
        u64_field(j, "disk", &l.disk) < 0 || u64_field(j, "inodes", &l.inodes) < 0)
        return -1;
    strcpy(l.diff_id, d);
    return sl_index_add_layer(s, &l);
}

static int load_config_fields(sl_config_fields *f, const json_t *c)
{
    const char *w = json_string_value(json_object_get(c, "workdir"));
    const char *u = json_string_value(json_object_get(c, "user"));
    const char *sig = json_string_value(json_object_get(c, "stop_signal"));
    if (!w || !u || !sig || sl_strv_from_json(&f->entrypoint, json_object_get(c, "entrypoint")) ||
        sl_strv_from_json(&f->cmd, json_object_get(c, "cmd")) ||
        sl_strv_from_json(&f->env, json_object_get(c, "env")))
        return -1;
    f->workdir = strdup(w);
    f->user = strdup(u);
    f->stop_signal = strdup(sig);
    return f->workdir && f->user && f->stop_signal ? 0 : -1;
}

static int load_image(sl_image_store *s, const json_t *j)
{
    const char *id = json_string_value(json_object_get(j, "id"));
    const char *man = json_string_value(json_object_get(j, "manifest"));
    if (!id || !sl_digest_valid(id) || !man || (man[0] && !sl_digest_valid(man)) ||
        sl_index_image(s, id))
        return -1;
    sl_image_rec *r = sl_image_rec_new(id);
    if (!r)
        return -1;
    strcpy(r->manifest, man);
    int rc = sl_strv_from_json(&r->tags, json_object_get(j, "repo_tags"));
    if (rc == 0)
        rc = sl_strv_from_json(&r->layer_ids, json_object_get(j, "layers"));
    for (size_t i = 0; rc == 0 && i < r->layer_ids.n; i++)
        rc = sl_digest_valid(r->layer_ids.v[i]) ? 0 : -1;
    if (rc == 0)
        rc = load_config_fields(&r->cfg, json_object_get(j, "config"));
    if (rc == 0)
        rc = sl_index_add_image(s, r);
    if (rc < 0)
        sl_image_rec_free(r);
    return rc;
}

static int load_source(sl_image_store *s, const json_t *j)
{
    sl_source_rec src = {0};
    uint64_t mtime;
    src.path = (char *)json_string_value(json_object_get(j, "path"));
    const json_t *tags = json_object_get(j, "tags");
    src.has_tags = tags != NULL;
    if (!src.path || u64_field(j, "size", &src.size) < 0 || u64_field(j, "ino", &src.ino) < 0 ||
        u64_field(j, "dev", &src.dev) < 0 || u64_field(j, "mtime_ns", &mtime) < 0 ||
        sl_strv_from_json(&src.ids, json_object_get(j, "ids")) < 0 ||
        sl_strv_from_json(&src.tags, tags) < 0) {
        sl_strv_free(&src.ids);
        sl_strv_free(&src.tags);
        return -1;
    }
    src.mtime_ns = (int64_t)mtime;
    int rc = sl_index_set_source(s, &src);
    sl_strv_free(&src.ids);
    sl_strv_free(&src.tags);
    return rc;
}

static int load_doc(sl_image_store *s, const json_t *doc)
{
    const json_t *v = json_object_get(doc, "version");
    if (!json_is_integer(v) || json_integer_value(v) != SL_INDEX_VERSION)
        return -1;
    const json_t *lays = json_object_get(doc, "layers"), *imgs = json_object_get(doc, "images");
    const json_t *srcs = json_object_get(doc, "sources");
    for (size_t i = 0; i < json_array_size(lays); i++)
        if (load_layer(s, json_array_get(lays, i)) < 0)
            return -1;
    for (size_t i = 0; i < json_array_size(imgs); i++)
        if (load_image(s, json_array_get(imgs, i)) < 0)
            return -1;
    for (size_t i = 0; i < json_array_size(srcs); i++)
        if (load_source(s, json_array_get(srcs, i)) < 0)
            return -1;
    for (size_t i = 0; i < s->nimg; i++)
        if (sl_image_rec_refresh(s, s->img[i]) < 0)
            return -1;
    return 0;
}

int sl_index_load(sl_image_store *s, sl_error *e)
{
    char *text;
    size_t len;
    sl_error err = {0};
    if (sl_read_file(s->index_path, SL_IMAGE_MAX_INDEX, &text, &len, &err) < 0) {
        if (err.errnum == ENOENT)
            return 0;
        if (e)
            *e = err;
        return -1;
    }
    json_error_t je;
    json_t *doc = json_loadb(text, len, 0, &je);
    free(text);
    if (!doc)
        return sl_error_set(e, EINVAL, "%s: invalid JSON: %s", s->index_path, je.text);
    int rc = load_doc(s, doc);
    json_decref(doc);
    if (rc < 0) {
        sl_index_clear(s);
        return sl_error_set(e, EINVAL, "%s: not a valid image index", s->index_path);
    }
    return 0;
}

int sl_index_reload(sl_image_store *s, sl_error *e)
{
    sl_index_clear(s);
    return sl_index_load(s, e);
}
