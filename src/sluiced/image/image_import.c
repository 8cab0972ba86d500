/* Imports. Order, so that a crash or a failure at any point leaves the
 * store as it was (or with unreferenced files that the next open removes):
 * stage the tarball in tmp/, verify every digest, unpack each new layer into
 * tmp/ and check its diff id, sync, rename the layers into layers/, write
 * the blobs, and only then write the index that makes the images visible.
 *
 * Everything up to the index is the slow half (sl_image_import_run): it
 * works on files and on the import alone, against a copy of the layer
 * records taken at begin, so it can run on a worker thread while the
 * store's own thread goes on using the store. The commit checks that what
 * the import counted on is still there (a removal may have run meanwhile)
 * and writes the index. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "image_int.h"

#define TAR_SUFFIX ".tar"

/* A layer unpacked by this import, still in tmp/. */
typedef struct new_layer {
    char diff_id[SL_DIGEST_STR_LEN];
    char *tmp;       /* its directory under tmp/ */
    int placed;      /* renamed into layers/ */
    uint64_t stream; /* uncompressed tar bytes */
    sl_layer_rec rec;
} new_layer;

struct sl_image_import {
    sl_image_store *s; /* run: only its fixed paths and limits */
    char *path;
    char *abs; /* realpath of path at begin, for the source record */
    struct stat fst;
    sl_layer_rec *have; /* the store's layers at begin */
    size_t nhave;
    char *stage_dir;
    sl_stage st;
    sl_pending *p;
    size_t np;
    new_layer *nl;
    size_t nnl;
    sl_image_ref extra;
    int has_extra;
    int ran, run_rc, committed;
    _Atomic uint64_t bytes_read; /* of the tarball: run writes, anyone reads */
    atomic_bool read_through;
    sl_error err;
    sl_error *e; /* where the run's errors go (&err) */
};

typedef sl_image_import import_ctx;

void sl_image_ids_free(char **ids)
{
    for (size_t i = 0; ids && ids[i]; i++)
        free(ids[i]);
    free(ids);
}

/* ---- disk usage of an unpacked layer ---- */

typedef struct usage {
    uint64_t disk, inodes;
} usage;

/* Walks the tree; a file with n links inside the layer (all its links are
 * inside: the layer started empty) counts 1/n of its blocks per link. */
static void tree_usage(int fd, usage *u, uint64_t *frac_inodes)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        uint64_t links = S_ISDIR(st.st_mode) || st.st_nlink < 1 ? 1 : st.st_nlink;
        u->disk += (uint64_t)st.st_blocks * 512 / links;
        *frac_inodes += 1000000 / links; /* millionths of an inode */
        if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                tree_usage(sub, u, frac_inodes);
        }
    }
    closedir(d);
}

static void layer_usage(const char *dir, sl_layer_rec *rec)
{
    usage u = {0, 0};
    uint64_t frac = 1000000; /* the root */
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
        tree_usage(fd, &u, &frac);
    rec->disk = u.disk + 4096;
    rec->inodes = (frac + 999999) / 1000000;
}

/* ---- unpacking ---- */

static const sl_layer_rec *had_layer(const import_ctx *c, const char *diff_id)
{
    for (size_t i = 0; i < c->nhave; i++)
        if (!strcmp(c->have[i].diff_id, diff_id))
            return &c->have[i];
    return NULL;
}

static new_layer *find_new(const import_ctx *c, const char *diff_id)
{
    for (size_t i = 0; i < c->nnl; i++)
        if (!strcmp(c->nl[i].diff_id, diff_id))
            return &c->nl[i];
    return NULL;
}

static char *make_tmp_dir(sl_image_store *s, const char *prefix, sl_error *e)
{
    char tmpl[64];
    snprintf(tmpl, sizeof(tmpl), "%s-XXXXXX", prefix);
    char *dir = sl_path_join(s->tmp_dir, tmpl);
    if (!dir || !mkdtemp(dir)) {
        sl_error_set(e, dir ? errno : ENOMEM, "create a directory in %s", s->tmp_dir);
        free(dir);
        return NULL;
    }
    return dir;
}

/* Reads a staged layer blob, until the store is cancelled. */
typedef struct blob_reader {
    int fd;
    const atomic_int *cancel;
    char buf[SL_LAYER_READ_CHUNK];
} blob_reader;

static ssize_t blob_read(void *ctx, const void **buf)
{
    blob_reader *r = ctx;
    if (atomic_load(r->cancel)) {
        errno = ECANCELED;
        return -1;
    }
    ssize_t n;
    do
        n = read(r->fd, r->buf, sizeof(r->buf));
    while (n < 0 && errno == EINTR);
    *buf = r->buf;
    return n;
}

/* Unpacks one layer into a new tmp/ directory and checks its diff id. */
static int unpack_one(import_ctx *c, const sl_pending_layer *pl, uint64_t budget, new_layer *nl)
{
    sl_image_store *s = c->s;
    if (!(nl->tmp = make_tmp_dir(s, "layer", c->e)))
        return -1;
    SL_AUTOCLOSE int dfd = open(nl->tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    SL_AUTOCLOSE int bfd = sl_stage_open(&c->st, pl->blob, c->e);
    if (dfd < 0 || bfd < 0 || fchmod(dfd, 0755) < 0)
        return dfd < 0 ? sl_error_set(c->e, errno, "open %s", nl->tmp) : -1;
    sl_layer_limits lim = {budget, s->lim.max_layer_entries, s->lim.max_path};
    sl_layer_stats st;
    blob_reader *r = malloc(sizeof(*r));
    if (!r)
        return sl_error_set(c->e, ENOMEM, "unpack");
    r->fd = bfd;
    r->cancel = &s->cancel;
    int rc = sl_layer_unpack(blob_read, r, pl->comp, dfd, &lim, &st, c->e);
    free(r);
    if (rc < 0)
        return -1;
    if (strcmp(st.diff_id, pl->diff_id) != 0)
        return sl_error_set(c->e, EINVAL, "diff_id mismatch: the config says %s, the content is %s",
                            pl->diff_id, st.diff_id);
    snprintf(nl->diff_id, sizeof(nl->diff_id), "%s", pl->diff_id);
    nl->stream = st.stream_bytes;
    nl->rec = (sl_layer_rec){.size = st.file_bytes};
    snprintf(nl->rec.diff_id, sizeof(nl->rec.diff_id), "%s", pl->diff_id);
    layer_usage(nl->tmp, &nl->rec);
    return 0;
}

static int unpack_image(import_ctx *c, const sl_pending *p)
{
    uint64_t used = 0, max = c->s->lim.max_image_bytes;
    for (size_t i = 0; i < p->nlayers; i++) {
        const sl_pending_layer *pl = &p->layers[i];
        const sl_layer_rec *have = had_layer(c, pl->diff_id);
        const new_layer *fresh = find_new(c, pl->diff_id);
        if (have || fresh) { /* unpacked before: its recorded or streamed bytes count */
            used += have ? have->size : fresh->stream;
            continue;
        }
        if (used >= max)
            return sl_error_set(c->e, EFBIG, "image %s: over %llu bytes unpacked", p->id,
                                (unsigned long long)max);
        new_layer *nl = &c->nl[c->nnl++];
        memset(nl, 0, sizeof(*nl));
        if (unpack_one(c, pl, max - used, nl) < 0)
            return sl_error_wrap(c->e, "image %s: layer %zu/%zu (%s)", p->id, i + 1, p->nlayers,
                                 pl->diff_id);
        used += nl->stream;
    }
    return 0;
}

static int unpack_all(import_ctx *c)
{
    size_t total = 0;
    for (size_t i = 0; i < c->np; i++)
        total += c->p[i].nlayers;
    if (total && !(c->nl = calloc(total, sizeof(*c->nl))))
        return sl_error_set(c->e, ENOMEM, "import");
    for (size_t i = 0; i < c->np; i++)
        if (unpack_image(c, &c->p[i]) < 0)
            return -1;
    return 0;
}

/* Makes the unpacked layers durable, then moves them into layers/. */
static int place_layers(import_ctx *c)
{
    if (c->nnl == 0)
        return 0;
    SL_AUTOCLOSE int tfd = open(c->s->tmp_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (tfd < 0 || syncfs(tfd) < 0)
        return sl_error_set(c->e, errno, "sync %s", c->s->tmp_dir);
    for (size_t i = 0; i < c->nnl; i++) {
        SL_AUTOFREE char *dst = sl_index_layer_dir(c->s, c->nl[i].diff_id);
        if (!dst)
            return sl_error_set(c->e, ENOMEM, "import");
        if (rename(c->nl[i].tmp, dst) == 0)
            c->nl[i].placed = 1;
        else if (errno != EEXIST && errno != ENOTEMPTY) /* else: already there, complete */
            return sl_error_set(c->e, errno, "rename %s to %s", c->nl[i].tmp, dst);
    }
    SL_AUTOCLOSE int lfd = open(c->s->layers_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lfd < 0 || fsync(lfd) < 0)
        return sl_error_set(c->e, errno, "sync %s", c->s->layers_dir);
    return 0;
}

static int write_blob(import_ctx *c, const char *digest, const char *raw, size_t len)
{
    SL_AUTOFREE char *path = sl_index_blob_path(c->s, digest);
    if (!path)
        return sl_error_set(c->e, ENOMEM, "import");
    return sl_write_file_atomic(path, raw, len, 0600, c->e);
}

static int write_blobs(import_ctx *c)
{
    for (size_t i = 0; i < c->np; i++) {
        const sl_pending *p = &c->p[i];
        if (write_blob(c, p->id, p->config_raw, p->config_len) < 0 ||
            (p->manifest[0] && write_blob(c, p->manifest, p->manifest_raw, p->manifest_len) < 0))
            return -1;
    }
    return 0;
}

/* ---- the index update ---- */

/* Gives tag to r, taking it from any other image (like docker load). */
static int move_tag(sl_image_store *s, sl_image_rec *r, const char *tag)
{
    for (size_t i = 0; i < s->nimg; i++)
        if (s->img[i] != r)
            sl_strv_remove(&s->img[i]->tags, tag);
    return sl_strv_has(&r->tags, tag) ? 0 : sl_strv_push(&r->tags, tag);
}

static int take_config(sl_image_rec *r, sl_pending *p)
{
    r->cfg = p->cfg; /* moved */
    memset(&p->cfg, 0, sizeof(p->cfg));
    snprintf(r->manifest, sizeof(r->manifest), "%s", p->manifest);
    for (size_t i = 0; i < p->nlayers; i++)
        if (sl_strv_push(&r->layer_ids, p->layers[i].diff_id) < 0)
            return -1;
    return 0;
}

static int index_image(import_ctx *c, sl_pending *p)
{
    sl_image_rec *r = sl_index_image(c->s, p->id);
    if (!r) {
        if (!(r = sl_image_rec_new(p->id)) || take_config(r, p) < 0 ||
            sl_index_add_image(c->s, r) < 0) {
            sl_image_rec_free(r);
            return -1;
        }
    } else if (!r->manifest[0] && p->manifest[0]) {
        snprintf(r->manifest, sizeof(r->manifest), "%s", p->manifest);
    }
    for (size_t i = 0; i < p->tags.n; i++)
        if (move_tag(c->s, r, p->tags.v[i]) < 0)
            return -1;
    char tag[SL_IMAGE_REF_MAX];
    if (c->has_extra &&
        (sl_image_ref_name_tag(&c->extra, tag, sizeof(tag)) < 0 || move_tag(c->s, r, tag) < 0))
        return -1;
    return 0;
}

static int record_source(import_ctx *c)
{
    const struct stat *st = &c->fst;
    sl_source_rec src = {.path = c->abs,
                         .size = (uint64_t)st->st_size,
                         .ino = st->st_ino,
                         .dev = st->st_dev,
                         .mtime_ns =
                             (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec};
    if (!c->abs)
        return 0; /* only an optimisation for import_dir */
    int rc = 0;
    src.has_tags = 1;
    for (size_t i = 0; rc == 0 && i < c->np; i++) {
        rc = sl_strv_push(&src.ids, c->p[i].id);
        for (size_t t = 0; rc == 0 && t < c->p[i].tags.n; t++)
            if (!sl_strv_has(&src.tags, c->p[i].tags.v[t]))
                rc = sl_strv_push(&src.tags, c->p[i].tags.v[t]);
    }
    if (rc == 0)
        rc = sl_index_set_source(c->s, &src);
    sl_strv_free(&src.ids);
    sl_strv_free(&src.tags);
    return rc;
}

static int update_index(import_ctx *c, sl_error *e)
{
    sl_image_store *s = c->s;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < c->nnl; i++)
        rc = sl_index_add_layer(s, &c->nl[i].rec);
    for (size_t i = 0; rc == 0 && i < c->np; i++)
        rc = index_image(c, &c->p[i]);
    if (rc == 0)
        rc = record_source(c);
    for (size_t i = 0; rc == 0 && i < s->nimg; i++)
        rc = sl_image_rec_refresh(s, s->img[i]);
    if (rc < 0 || sl_index_save(s, e) < 0) {
        if (rc < 0)
            sl_error_set(e, ENOMEM, "update the index");
        sl_index_reload(s, NULL);
        return -1;
    }
    return 0;
}

static int exists(const char *path, int dir)
{
    struct stat st;
    return path && lstat(path, &st) == 0 && (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));
}

/* Everything the images need is still there: a removal on the store's
 * thread may have taken a layer or blob the run counted on. */
static int still_complete(const import_ctx *c, sl_error *e)
{
    for (size_t i = 0; i < c->np; i++) {
        const sl_pending *p = &c->p[i];
        for (size_t k = 0; k < p->nlayers; k++) {
            const char *id = p->layers[k].diff_id;
            SL_AUTOFREE char *dir = sl_index_layer_dir(c->s, id);
            if ((!sl_index_layer(c->s, id) && !find_new(c, id)) || !exists(dir, 1))
                return sl_error_set(e, EAGAIN, "layer %s went away during the import", id);
        }
        SL_AUTOFREE char *cfg = sl_index_blob_path(c->s, p->id);
        SL_AUTOFREE char *man = p->manifest[0] ? sl_index_blob_path(c->s, p->manifest) : NULL;
        if (!exists(cfg, 0) || (p->manifest[0] && !exists(man, 0)))
            return sl_error_set(e, EAGAIN, "a blob of image %s went away during the import", p->id);
    }
    return 0;
}

/* ---- driver ---- */

/* The run's own temporary files: the staged tarball and unplaced layers. */
static void remove_tmp(import_ctx *c)
{
    for (size_t i = 0; i < c->nnl; i++)
        if (c->nl[i].tmp && !c->nl[i].placed) {
            sl_rm_rf(c->nl[i].tmp, NULL);
            free(c->nl[i].tmp);
            c->nl[i].tmp = NULL;
        }
    if (c->st.dirfd >= 0)
        close(c->st.dirfd);
    c->st.dirfd = -1;
    sl_stage_fini(&c->st);
    if (c->stage_dir)
        sl_rm_rf(c->stage_dir, NULL);
    free(c->stage_dir);
    c->stage_dir = NULL;
}

/* Layers this import placed in layers/ that no index entry took: out of
 * sight (deleted now, or later when the store defers deletes). */
static void discard_placed(import_ctx *c)
{
    for (size_t i = 0; i < c->nnl; i++) {
        if (!c->nl[i].placed)
            continue;
        SL_AUTOFREE char *dst = sl_index_layer_dir(c->s, c->nl[i].diff_id);
        if (dst && !sl_index_layer(c->s, c->nl[i].diff_id))
            sl_store_discard_dir(c->s, dst, NULL);
        c->nl[i].placed = 0;
    }
}

static int stage_and_parse(import_ctx *c)
{
    if (!(c->stage_dir = make_tmp_dir(c->s, "import", c->e)))
        return -1;
    int dfd = open(c->stage_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return sl_error_set(c->e, errno, "open %s", c->stage_dir);
    if (sl_stage_archive(c->path, dfd, &c->s->lim, &c->s->cancel, &c->bytes_read, &c->st, c->e) <
        0) {
        c->st.dirfd = dfd;
        return -1;
    }
    atomic_store(&c->read_through, true);
    if (sl_pending_parse(&c->st, &c->s->lim, &c->p, &c->np, c->e) < 0)
        return -1;
    if (c->has_extra && c->np != 1)
        return sl_error_set(c->e, EINVAL,
                            "an extra tag needs exactly one image, the archive "
                            "holds %zu",
                            c->np);
    return 0;
}

static int fill_ids(const import_ctx *c, char ***ids, sl_error *e)
{
    if (!ids)
        return 0;
    *ids = calloc(c->np + 1, sizeof(**ids));
    for (size_t i = 0; *ids && i < c->np; i++)
        if (!((*ids)[i] = strdup(c->p[i].id))) {
            sl_image_ids_free(*ids);
            *ids = NULL;
        }
    return *ids ? 0 : sl_error_set(e, ENOMEM, "import");
}

static int snapshot_layers(import_ctx *c)
{
    if (!c->s->nlay)
        return 0;
    c->have = malloc(c->s->nlay * sizeof(*c->have));
    if (!c->have)
        return -1;
    memcpy(c->have, c->s->lay, c->s->nlay * sizeof(*c->have));
    c->nhave = c->s->nlay;
    return 0;
}

/* Counts an import's outcome (the admin listener's metrics; atomic, as
 * the metrics are read from any thread). */
static int counted(sl_image_store *s, int rc)
{
    __atomic_add_fetch(rc < 0 ? &s->imports_failed : &s->imports_done, 1, __ATOMIC_RELAXED);
    return rc;
}

static sl_image_import *begin(sl_image_store *s, const char *path, const char *extra_tag,
                              sl_error *e)
{
    import_ctx *c = calloc(1, sizeof(*c));
    if (c) {
        c->s = s;
        c->e = &c->err;
        c->st.dirfd = -1;
    }
    if (!c || !(c->path = strdup(path)) || snapshot_layers(c) < 0) {
        sl_image_import_free(c);
        sl_error_set(e, ENOMEM, "import %s", path);
        return NULL;
    }
    if (stat(path, &c->fst) < 0) {
        sl_error_set(e, errno, "import %s", path);
        sl_image_import_free(c);
        return NULL;
    }
    c->abs = realpath(path, NULL);
    if (extra_tag && extra_tag[0]) {
        if (sl_image_ref_parse(extra_tag, &c->extra, e) < 0 || !c->extra.tag[0]) {
            sl_error_set(e, EINVAL, "import %s: extra tag \"%.300s\" is not a name:tag", path,
                         extra_tag);
            sl_image_import_free(c);
            return NULL;
        }
        c->has_extra = 1;
    }
    return c;
}

sl_image_import *sl_image_import_begin(sl_image_store *s, const char *path, const char *extra_tag,
                                       sl_error *e)
{
    sl_image_import *c = begin(s, path, extra_tag, e);
    if (!c)
        counted(s, -1);
    return c;
}

int sl_image_import_run(sl_image_import *c)
{
    int rc = stage_and_parse(c);
    if (rc == 0)
        rc = unpack_all(c);
    if (rc == 0)
        rc = place_layers(c);
    if (rc == 0)
        rc = write_blobs(c);
    if (rc < 0 && atomic_load(&c->s->cancel))
        sl_error_set(c->e, ECANCELED, "cancelled");
    if (rc < 0) /* placed layers no index names: out of sight, then deleted */
        for (size_t i = 0; i < c->nnl; i++)
            if (c->nl[i].placed) {
                SL_AUTOFREE char *dst = sl_index_layer_dir(c->s, c->nl[i].diff_id);
                if (dst)
                    sl_store_discard_dir_now(c->s, dst, NULL);
                c->nl[i].placed = 0;
            }
    remove_tmp(c);
    c->ran = 1;
    c->run_rc = rc;
    return rc;
}

int sl_image_import_commit(sl_image_import *c, char ***ids, sl_error *e)
{
    if (ids)
        *ids = NULL;
    int rc = c->run_rc;
    if (!c->ran)
        rc = sl_error_set(e, EINVAL, "the import has not run");
    else if (rc < 0 && e)
        *e = c->err;
    if (rc == 0)
        rc = still_complete(c, e);
    if (rc == 0)
        rc = update_index(c, e);
    if (rc == 0)
        rc = fill_ids(c, ids, e);
    c->committed = rc == 0;
    if (rc < 0)
        discard_placed(c);
    if (rc == 0 || !e || e->errnum != EAGAIN) /* EAGAIN: the caller runs it again */
        counted(c->s, rc);
    return rc < 0 ? sl_error_wrap(e, "import %s", c->path) : 0;
}

void sl_image_import_progress(const sl_image_import *c, sl_import_progress *out)
{
    out->bytes_total = (uint64_t)c->fst.st_size;
    out->bytes_read = atomic_load_explicit(&c->bytes_read, memory_order_relaxed);
    out->unpacking = atomic_load(&c->read_through);
    /* read through: the tar's end was found (what follows it is not read) */
    if (out->unpacking || out->bytes_read > out->bytes_total)
        out->bytes_read = out->bytes_total;
}

void sl_image_import_free(sl_image_import *c)
{
    if (!c)
        return;
    if (c->s && !c->committed)
        discard_placed(c);
    remove_tmp(c);
    for (size_t i = 0; i < c->nnl; i++)
        free(c->nl[i].tmp);
    free(c->nl);
    sl_pending_free(c->p, c->np);
    free(c->have);
    free(c->path);
    free(c->abs);
    free(c);
}

int sl_image_store_import(sl_image_store *s, const char *path, const char *extra_tag, char ***ids,
                          sl_error *e)
{
    if (ids)
        *ids = NULL;
    sl_image_import *c = sl_image_import_begin(s, path, extra_tag, e);
    if (!c)
        return -1;
    sl_image_import_run(c);
    int rc = sl_image_import_commit(c, ids, e);
    sl_image_import_free(c);
    return rc;
}

/* ---- directories of tarballs ---- */

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.tar names of dir, sorted. */
static int list_tars(const char *dir, sl_strv *names, sl_error *e)
{
    DIR *d = opendir(dir);
    if (!d)
        return sl_error_set(e, errno, "open %s", dir);
    struct dirent *de;
    size_t sl = strlen(TAR_SUFFIX);
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n > sl && !strcmp(de->d_name + n - sl, TAR_SUFFIX) && sl_strv_push(names, de->d_name))
            break;
    }
    closedir(d);
    if (names->n)
        qsort(names->v, names->n, sizeof(*names->v), name_cmp);
    return 0;
}

static int tag_present(const sl_image_store *s, const char *tag)
{
    for (size_t i = 0; i < s->nimg; i++)
        if (sl_strv_has(&s->img[i]->tags, tag))
            return 1;
    return 0;
}

/* The wanted tag is gone, and this file gave it (or may have: a record
 * from before tags were kept): import it again, so a removed tag can be
 * pulled back. */
static int gives_missing(const sl_source_rec *src, const sl_image_store *s, const char *want)
{
    return want && *want && !tag_present(s, want) &&
           (!src->has_tags || sl_strv_has(&src->tags, want));
}

/* Was this file imported before and is it unchanged (and is the wanted
 * tag here, if it gave it)? Its images need not be: a removed image stays
 * removed, across restarts too, until a pull of a tag the file gave. */
static int unchanged(const sl_image_store *s, const char *path, const char *want)
{
    struct stat st;
    SL_AUTOFREE char *abs = realpath(path, NULL);
    if (!abs || stat(abs, &st) < 0 || !S_ISREG(st.st_mode))
        return 0;
    const sl_source_rec *src = sl_index_source(s, abs);
    int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    if (!src || src->size != (uint64_t)st.st_size || src->ino != st.st_ino ||
        src->dev != st.st_dev || src->mtime_ns != mtime || src->ids.n == 0)
        return 0;
    return !gives_missing(src, s, want);
}

/* "name:tag" of ref into out ("" when it has no tag or does not parse). */
static void want_tag(const char *ref, char *out, size_t n)
{
    sl_image_ref r;
    out[0] = '\0';
    if (ref && *ref && sl_image_ref_parse(ref, &r, NULL) == 0 && r.tag[0] &&
        sl_image_ref_name_tag(&r, out, n) < 0)
        out[0] = '\0';
}

int sl_image_store_file_unchanged(const sl_image_store *s, const char *path, const char *want)
{
    char tag[SL_IMAGE_REF_MAX];
    want_tag(want, tag, sizeof(tag));
    return unchanged(s, path, tag);
}

int sl_image_store_source_gave(const sl_image_store *s, const char *path, const char *ref)
{
    char tag[SL_IMAGE_REF_MAX];
    want_tag(ref, tag, sizeof(tag));
    SL_AUTOFREE char *abs = realpath(path, NULL);
    const sl_source_rec *src = abs ? sl_index_source(s, abs) : NULL;
    if (!src)
        return -1;
    return tag[0] && (!src->has_tags || sl_strv_has(&src->tags, tag));
}

int sl_image_store_dir_changes(const sl_image_store *s, const char *dir, const char *want,
                               char ***paths, size_t *skipped, sl_error *e)
{
    char tag[SL_IMAGE_REF_MAX];
    want_tag(want, tag, sizeof(tag));
    sl_strv names = {0}, todo = {0};
    size_t ns = 0;
    int rc = list_tars(dir, &names, e);
    for (size_t i = 0; rc == 0 && i < names.n; i++) {
        SL_AUTOFREE char *path = sl_path_join(dir, names.v[i]);
        int same = path && unchanged(s, path, tag);
        if (!path || (!same && sl_strv_push(&todo, path) < 0))
            rc = sl_error_set(e, ENOMEM, "scan %s", dir);
        else if (same)
            ns++;
    }
    sl_strv_free(&names);
    if (rc == 0 && !todo.v && !(todo.v = calloc(1, sizeof(char *))))
        rc = sl_error_set(e, ENOMEM, "scan %s", dir);
    if (rc < 0) {
        sl_strv_free(&todo);
        return -1;
    }
    *paths = todo.v;
    if (skipped)
        *skipped = ns;
    return 0;
}

int sl_image_store_import_dir(sl_image_store *s, const char *dir, size_t *imported, size_t *skipped,
                              sl_error *e)
{
    return sl_image_store_import_dir_for(s, dir, NULL, imported, skipped, e);
}

int sl_image_store_import_dir_for(sl_image_store *s, const char *dir, const char *want,
                                  size_t *imported, size_t *skipped, sl_error *e)
{
    char **paths;
    size_t ni = 0;
    int failed = 0;
    if (sl_image_store_dir_changes(s, dir, want, &paths, skipped, e) < 0)
        return -1;
    for (size_t i = 0; paths[i]; i++) {
        sl_error err = {0};
        if (sl_image_store_import(s, paths[i], NULL, NULL, &err) == 0)
            ni++;
        else if (!failed++ && e)
            *e = err;
    }
    sl_image_ids_free(paths);
    if (imported)
        *imported = ni;
    return failed ? -1 : 0;
}
