/* Image store: open with crash recovery, lookups, removal, usage. Imports
 * live in image_import.c, the index file in image_index.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "image_int.h"

#define INDEX_NAME "images.json"
#define LOCK_NAME "lock"
#define DIR_MODE 0711 /* traversable, not listable, like containerd's root */

typedef enum match { MATCH_ID, MATCH_TAG, MATCH_DIGEST } match;

void sl_image_limits_default(sl_image_limits *l)
{
    l->max_image_bytes = SL_IMAGE_DEFAULT_MAX_IMAGE_BYTES;
    l->max_archive_bytes = SL_IMAGE_DEFAULT_MAX_ARCHIVE_BYTES;
    l->max_archive_entries = SL_IMAGE_DEFAULT_MAX_ARCHIVE_ENTRIES;
    l->max_layer_entries = SL_LAYER_DEFAULT_MAX_ENTRIES;
    l->max_layers = SL_IMAGE_DEFAULT_MAX_LAYERS;
    l->max_path = SL_LAYER_DEFAULT_MAX_PATH;
}

const sl_image_recovery *sl_image_store_recovery(const sl_image_store *s)
{
    return &s->rec;
}

void sl_image_store_import_counts(const sl_image_store *s, uint64_t *done, uint64_t *failed)
{
    *done = __atomic_load_n(&s->imports_done, __ATOMIC_RELAXED);
    *failed = __atomic_load_n(&s->imports_failed, __ATOMIC_RELAXED);
}

void sl_image_store_close(sl_image_store *s)
{
    if (!s)
        return;
    sl_index_clear(s);
    sl_strv_free(&s->garbage);
    if (s->lockfd >= 0)
        close(s->lockfd); /* releases the flock */
    free(s->root);
    free(s->index_path);
    free(s->layers_dir);
    free(s->blobs_dir);
    free(s->tmp_dir);
    free(s);
}

/* ---- open and recovery ---- */

static int make_paths(sl_image_store *s, const char *root, sl_error *e)
{
    if (sl_mkdir_p(root, DIR_MODE, e) < 0)
        return -1;
    if (!(s->root = realpath(root, NULL)))
        return sl_error_set(e, errno, "resolve %s", root);
    s->index_path = sl_path_join(s->root, INDEX_NAME);
    s->layers_dir = sl_path_join(s->root, "layers");
    s->blobs_dir = sl_path_join(s->root, "blobs/sha256");
    s->tmp_dir = sl_path_join(s->root, "tmp");
    if (!s->index_path || !s->layers_dir || !s->blobs_dir || !s->tmp_dir)
        return sl_error_set(e, ENOMEM, "open image store");
    if (sl_mkdir_p(s->layers_dir, DIR_MODE, e) < 0 || sl_mkdir_p(s->blobs_dir, 0700, e) < 0 ||
        sl_mkdir_p(s->tmp_dir, 0700, e) < 0)
        return -1;
    return 0;
}

static int take_lock(sl_image_store *s, sl_error *e)
{
    SL_AUTOFREE char *path = sl_path_join(s->root, LOCK_NAME);
    if (!path)
        return sl_error_set(e, ENOMEM, "lock");
    s->lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (s->lockfd < 0)
        return sl_error_set(e, errno, "open %s", path);
    if (flock(s->lockfd, LOCK_EX | LOCK_NB) < 0)
        return sl_error_set(e, errno == EWOULDBLOCK ? EBUSY : errno, "image store %s is in use",
                            s->root);
    return 0;
}

/* Deletes path now, or leaves it to the caller's garbage collection. */
static int delete_or_defer(sl_image_store *s, const char *path, sl_error *e)
{
    if (!s->defer_deletes)
        return sl_rm_rf(path, e);
    if (sl_strv_push(&s->garbage, path) < 0)
        return sl_rm_rf(path, e); /* no memory to wait: now */
    return 0;
}

/* Calls fn for every entry of dir except "." and "..". */
static int for_each_entry(const char *dir, int (*fn)(sl_image_store *, const char *, void *),
                          sl_image_store *s, void *arg, sl_error *e)
{
    DIR *d = opendir(dir);
    if (!d)
        return sl_error_set(e, errno, "open %s", dir);
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            rc = fn(s, de->d_name, arg);
    closedir(d);
    return rc;
}

/* Garbage that cannot be deleted (EBUSY: something mounted there) stays
 * where nothing looks at it; it must not keep the store from opening. */
static int remove_tmp_entry(sl_image_store *s, const char *name, void *arg)
{
    (void)arg;
    SL_AUTOFREE char *p = sl_path_join(s->tmp_dir, name);
    if (p && delete_or_defer(s, p, NULL) == 0)
        s->rec.tmp_removed++;
    return 0;
}

/* Leftover temp files of sl_write_file_atomic ("images.json.tmp<pid>"). */
static int remove_index_tmp(sl_image_store *s, const char *name, void *arg)
{
    (void)arg;
    if (strncmp(name, INDEX_NAME ".tmp", strlen(INDEX_NAME ".tmp")) != 0)
        return 0;
    SL_AUTOFREE char *p = sl_path_join(s->root, name);
    if (p && unlink(p) == 0)
        s->rec.tmp_removed++;
    return 0;
}

static int is_dir(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* An image whose layer directories or blobs are gone cannot run. */
static int image_complete(const sl_image_store *s, const sl_image_rec *r)
{
    for (size_t i = 0; i < r->layer_ids.n; i++)
        if (!sl_index_layer(s, r->layer_ids.v[i]) || !is_dir(r->layer_dirs.v[i]))
            return 0;
    SL_AUTOFREE char *cfg = sl_index_blob_path(s, r->id);
    SL_AUTOFREE char *man = r->manifest[0] ? sl_index_blob_path(s, r->manifest) : NULL;
    return cfg && is_file(cfg) && (!r->manifest[0] || (man && is_file(man)));
}

/* Moves a directory out of sight (into tmp/) before deleting it, so a
 * half-deleted layer is never found under layers/. *moved gets where it
 * went (tmp/gc-XXXXXX, malloc'd), NULL when dir was missing. */
static int hide_dir(sl_image_store *s, const char *dir, char **moved, sl_error *e)
{
    *moved = NULL;
    char tmpl[64];
    snprintf(tmpl, sizeof(tmpl), "gc-XXXXXX");
    SL_AUTOFREE char *dst = sl_path_join(s->tmp_dir, tmpl);
    if (!dst || !mkdtemp(dst))
        return sl_error_set(e, errno ? errno : ENOMEM, "discard %s", dir);
    SL_AUTOFREE char *inner = sl_path_join(dst, "d");
    if (!inner || rename(dir, inner) < 0) {
        int err = inner ? errno : ENOMEM;
        rmdir(dst);
        return err == ENOENT ? 0 : sl_error_set(e, err, "discard %s", dir);
    }
    *moved = dst;
    dst = NULL;
    return 0;
}

int sl_store_discard_dir_now(sl_image_store *s, const char *dir, sl_error *e)
{
    SL_AUTOFREE char *moved = NULL;
    if (hide_dir(s, dir, &moved, e) < 0)
        return -1;
    return moved ? sl_rm_rf(moved, e) : 0;
}

int sl_store_discard_dir(sl_image_store *s, const char *dir, sl_error *e)
{
    SL_AUTOFREE char *moved = NULL;
    if (hide_dir(s, dir, &moved, e) < 0)
        return -1;
    return moved ? delete_or_defer(s, moved, e) : 0;
}

static int drop_unused_layer(sl_image_store *s, const char *name, void *arg)
{
    char id[SL_DIGEST_STR_LEN + 8];
    if (snprintf(id, sizeof(id), "sha256:%s", name) >= (int)sizeof(id))
        id[0] = '\0'; /* too long to be a digest: not ours, so unused */
    if (sl_digest_valid(id) && sl_index_layer_users(s, id) > 0)
        return 0;
    SL_AUTOFREE char *p = sl_path_join(s->layers_dir, name);
    if (p && sl_store_discard_dir(s, p, arg) == 0)
        s->rec.layers_removed++;
    return 0;
}

static int blob_used(const sl_image_store *s, const char *digest)
{
    for (size_t i = 0; i < s->nimg; i++)
        if (!strcmp(s->img[i]->id, digest) || !strcmp(s->img[i]->manifest, digest))
            return 1;
    return 0;
}

static int drop_unused_blob(sl_image_store *s, const char *name, void *arg)
{
    (void)arg;
    char id[SL_DIGEST_STR_LEN + 8];
    if (snprintf(id, sizeof(id), "sha256:%s", name) >= (int)sizeof(id))
        id[0] = '\0'; /* too long to be a digest: not ours, so unused */
    if (sl_digest_valid(id) && blob_used(s, id))
        return 0;
    SL_AUTOFREE char *p = sl_path_join(s->blobs_dir, name);
    if (p && unlink(p) == 0)
        s->rec.blobs_removed++;
    return 0;
}

/* Drops incomplete images and layer records nothing uses. Returns 1 when
 * the index changed. */
static int prune_index(sl_image_store *s)
{
    int changed = 0;
    for (size_t i = s->nimg; i-- > 0;)
        if (!image_complete(s, s->img[i])) {
            sl_index_del_image(s, i);
            s->rec.images_dropped++;
            changed = 1;
        }
    for (size_t i = s->nlay; i-- > 0;) {
        SL_AUTOFREE char *dir = sl_index_layer_dir(s, s->lay[i].diff_id);
        if (sl_index_layer_users(s, s->lay[i].diff_id) == 0 || !dir || !is_dir(dir)) {
            sl_index_del_layer(s, s->lay[i].diff_id);
            changed = 1;
        }
    }
    return changed;
}

static int recover(sl_image_store *s, sl_error *e)
{
    if (for_each_entry(s->tmp_dir, remove_tmp_entry, s, NULL, e) < 0 ||
        for_each_entry(s->root, remove_index_tmp, s, NULL, e) < 0)
        return sl_error_wrap(e, "recover %s", s->root);
    if (sl_index_load(s, e) < 0)
        return -1;
    if (prune_index(s) && sl_index_save(s, e) < 0)
        return -1;
    if (for_each_entry(s->layers_dir, drop_unused_layer, s, NULL, e) < 0 ||
        for_each_entry(s->blobs_dir, drop_unused_blob, s, NULL, e) < 0)
        return sl_error_wrap(e, "recover %s", s->root);
    return 0;
}

sl_image_store *sl_image_store_open(const char *root, const sl_image_limits *limits, sl_error *e)
{
    return sl_image_store_open_flags(root, limits, 0, e);
}

sl_image_store *sl_image_store_open_flags(const char *root, const sl_image_limits *limits,
                                          unsigned flags, sl_error *e)
{
    sl_image_store *s = calloc(1, sizeof(*s));
    if (!s) {
        sl_error_set(e, ENOMEM, "open image store");
        return NULL;
    }
    s->lockfd = -1;
    s->defer_deletes = (flags & SL_IMAGE_DEFER_DELETES) != 0;
    if (limits)
        s->lim = *limits;
    else
        sl_image_limits_default(&s->lim);
    root = root ? root : SL_IMAGE_DEFAULT_ROOT;
    if (make_paths(s, root, e) < 0 || take_lock(s, e) < 0 || recover(s, e) < 0) {
        sl_error_wrap(e, "image store %s", root);
        sl_image_store_close(s);
        return NULL;
    }
    return s;
}

char **sl_image_store_take_garbage(sl_image_store *s)
{
    char **v = s->garbage.v;
    s->garbage.v = NULL;
    s->garbage.n = 0;
    return v;
}

void sl_image_store_cancel(sl_image_store *s)
{
    atomic_store(&s->cancel, 1);
}

/* ---- lookups ---- */

static sl_image_rec *find_id(const sl_image_store *s, const char *ref)
{
    char id[SL_DIGEST_STR_LEN + 8];
    if (sl_hex_valid(ref, 64, 1))
        snprintf(id, sizeof(id), "sha256:%s", ref);
    else if (sl_digest_valid(ref))
        snprintf(id, sizeof(id), "%s", ref);
    else
        return NULL;
    return sl_index_image(s, id);
}

/* A unique image whose id starts with the hex prefix; NULL with *e. */
static sl_image_rec *find_prefix(const sl_image_store *s, const char *hex, const char *ref,
                                 sl_error *e)
{
    sl_image_rec *found = NULL;
    size_t n = strlen(hex);
    for (size_t i = 0; i < s->nimg; i++) {
        if (strncmp(s->img[i]->id + 7, hex, n) != 0)
            continue;
        if (found)
            return sl_error_set(e, EINVAL, "image id prefix %.100s is ambiguous", ref), NULL;
        found = s->img[i];
    }
    if (!found)
        sl_error_set(e, ENOENT, "image %.300s not found", ref);
    return found;
}

static sl_image_rec *find_named(const sl_image_store *s, const sl_image_ref *r, match *how,
                                char *tag)
{
    char want[SL_IMAGE_REF_MAX];
    if (r->digest[0]) {
        sl_image_ref_name_digest(r->name, r->digest, want, sizeof(want));
        for (size_t i = 0; i < s->nimg; i++)
            if (sl_strv_has(&s->img[i]->digests, want)) {
                *how = MATCH_DIGEST;
                return s->img[i];
            }
        return NULL;
    }
    sl_image_ref_name_tag(r, want, sizeof(want));
    for (size_t i = 0; i < s->nimg; i++)
        if (sl_strv_has(&s->img[i]->tags, want)) {
            *how = MATCH_TAG;
            if (tag)
                strcpy(tag, want);
            return s->img[i];
        }
    return NULL;
}

/* Resolves ref (see sl_image_store_find); *how says what matched and tag
 * (SL_IMAGE_REF_MAX bytes, may be NULL) receives the matching repo tag. */
static sl_image_rec *resolve(const sl_image_store *s, const char *ref, match *how, char *tag,
                             sl_error *e)
{
    if (!ref || !ref[0])
        return sl_error_set(e, EINVAL, "empty image reference"), NULL;
    *how = MATCH_ID;
    sl_image_rec *r = find_id(s, ref);
    if (r)
        return r;
    if (sl_digest_valid(ref) || sl_hex_valid(ref, 64, 1))
        return sl_error_set(e, ENOENT, "image %.300s not found", ref), NULL;
    sl_image_ref parsed;
    sl_error perr;
    int parsed_ok = sl_image_ref_parse(ref, &parsed, &perr) == 0;
    if (parsed_ok && (r = find_named(s, &parsed, how, tag)))
        return r;
    const char *hex = strncmp(ref, "sha256:", 7) ? ref : ref + 7;
    size_t n = strlen(hex);
    if (n >= SL_IMAGE_ID_PREFIX_MIN && n < 64 && sl_hex_valid(hex, n, 1)) {
        *how = MATCH_ID;
        return find_prefix(s, hex, ref, e);
    }
    if (!parsed_ok) {
        if (e)
            *e = perr;
        return NULL;
    }
    return sl_error_set(e, ENOENT, "image %.300s not found", ref), NULL;
}

const sl_image *sl_image_store_find(const sl_image_store *s, const char *ref, sl_error *e)
{
    match how;
    sl_image_rec *r = resolve(s, ref, &how, NULL, e);
    return r ? &r->view : NULL;
}

int sl_image_store_list(const sl_image_store *s, const char *filter, const sl_image ***images,
                        size_t *n, sl_error *e)
{
    *images = calloc(s->nimg + 1, sizeof(**images));
    *n = 0;
    if (!*images)
        return sl_error_set(e, ENOMEM, "list images");
    if (filter && filter[0]) {
        match how;
        sl_image_rec *r = resolve(s, filter, &how, NULL, NULL);
        if (r)
            (*images)[(*n)++] = &r->view;
        return 0;
    }
    for (size_t i = 0; i < s->nimg; i++)
        (*images)[(*n)++] = &s->img[i]->view;
    return 0;
}

/* ---- removal ---- */

/* Deletes image i from the index, with the layers only it used; the files
 * go after the index is written. */
static int delete_image(sl_image_store *s, size_t i, sl_error *e)
{
    sl_strv layers = {0};
    char id[SL_DIGEST_STR_LEN], man[SL_DIGEST_STR_LEN];
    strcpy(id, s->img[i]->id);
    strcpy(man, s->img[i]->manifest);
    for (size_t k = 0; k < s->img[i]->layer_ids.n; k++)
        if (sl_strv_push(&layers, s->img[i]->layer_ids.v[k]) < 0) {
            sl_strv_free(&layers);
            return sl_error_set(e, ENOMEM, "remove image");
        }
    sl_index_del_image(s, i);
    for (size_t k = 0; k < layers.n; k++)
        if (sl_index_layer_users(s, layers.v[k]) == 0)
            sl_index_del_layer(s, layers.v[k]);
    int rc = sl_index_save(s, e);
    if (rc < 0) {
        sl_index_reload(s, NULL);
        sl_strv_free(&layers);
        return -1;
    }
    for (size_t k = 0; k < layers.n; k++) {
        SL_AUTOFREE char *dir = sl_index_layer_dir(s, layers.v[k]);
        if (dir && !sl_index_layer(s, layers.v[k]))
            sl_store_discard_dir(s, dir, NULL); /* a leftover is removed at the next open */
    }
    const char *blobs[2] = {id, man};
    for (size_t k = 0; k < 2; k++) {
        SL_AUTOFREE char *p = blobs[k][0] ? sl_index_blob_path(s, blobs[k]) : NULL;
        if (p)
            unlink(p);
    }
    sl_strv_free(&layers);
    return 0;
}

int sl_image_store_remove(sl_image_store *s, const char *ref, sl_error *e)
{
    match how;
    char tag[SL_IMAGE_REF_MAX];
    sl_error err = {0};
    sl_image_rec *r = resolve(s, ref, &how, tag, &err);
    if (!r) {
        if (err.errnum == ENOENT)
            return 0;
        if (e)
            *e = err;
        return -1;
    }
    if (how == MATCH_TAG && r->tags.n > 1) {
        sl_strv_remove(&r->tags, tag);
        if (sl_image_rec_refresh(s, r) < 0 || sl_index_save(s, e) < 0) {
            sl_index_reload(s, NULL);
            return sl_error_wrap(e, "untag %s", tag);
        }
        return 0;
    }
    size_t i = 0;
    while (s->img[i] != r)
        i++;
    return delete_image(s, i, e) < 0 ? sl_error_wrap(e, "remove %s", r->id) : 0;
}

/* ---- usage ---- */

static uint64_t file_blocks(const char *path)
{
    struct stat st;
    return path && lstat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

/* The store's own directories and files (the lock and the index too), as
 * they are on disk now: 7 lstat calls. */
static void own_usage(const sl_image_store *s, sl_image_fs_usage *u)
{
    SL_AUTOFREE char *blobs = sl_path_join(s->root, "blobs");
    SL_AUTOFREE char *lock = sl_path_join(s->root, LOCK_NAME);
    const char *paths[] = {s->root,    blobs, s->blobs_dir, s->layers_dir,
                           s->tmp_dir, lock,  s->index_path};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        struct stat st;
        if (paths[i] && lstat(paths[i], &st) == 0) {
            u->used_bytes += (uint64_t)st.st_blocks * 512;
            u->inodes_used++;
        }
    }
}

int sl_image_store_fs_usage(const sl_image_store *s, sl_image_fs_usage *u, sl_error *e)
{
    (void)e;
    u->mountpoint = s->root;
    u->used_bytes = 0;
    u->inodes_used = 0;
    own_usage(s, u);
    for (size_t i = 0; i < s->nlay; i++) {
        u->used_bytes += s->lay[i].disk;
        u->inodes_used += s->lay[i].inodes;
    }
    for (size_t i = 0; i < s->nimg; i++) {
        SL_AUTOFREE char *cfg = sl_index_blob_path(s, s->img[i]->id);
        SL_AUTOFREE char *man =
            s->img[i]->manifest[0] ? sl_index_blob_path(s, s->img[i]->manifest) : NULL;
        u->used_bytes += file_blocks(cfg) + file_blocks(man);
        u->inodes_used += man ? 2 : 1;
    }
    return 0;
}
