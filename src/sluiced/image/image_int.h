/* Internals of the image store shared by its files: the staged members of
 * an imported tarball, the images parsed out of them, and string vectors. */
#ifndef SL_IMAGE_INT_H
#define SL_IMAGE_INT_H

#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "image_store.h"

/* Symlink/hard-link hops followed when looking a member up. */
#define SL_STAGE_MAX_ALIAS_HOPS 8

/* ---- string vectors: n strings and a NULL ---- */
typedef struct sl_strv {
    char **v;
    size_t n;
} sl_strv;

int sl_strv_push(sl_strv *sv, const char *s);
int sl_strv_has(const sl_strv *sv, const char *s);
/* Removes every copy of s; returns how many were removed. */
size_t sl_strv_remove(sl_strv *sv, const char *s);
void sl_strv_free(sl_strv *sv);
/* Appends the strings of a JSON array; fails (-1) on a non-string item
 * or ENOMEM. A missing (NULL) or null array appends nothing. */
int sl_strv_from_json(sl_strv *sv, const json_t *arr);
json_t *sl_strv_to_json(const sl_strv *sv);

/* ---- a tarball's members, copied into a staging directory ---- */
typedef struct sl_staged {
    char *path;  /* cleaned member path */
    char *alias; /* cleaned target of a symlink or hard link; NULL for files */
    unsigned no; /* file name in the staging directory */
    uint64_t size;
    char digest[SL_DIGEST_STR_LEN]; /* of the content */
} sl_staged;

typedef struct sl_stage {
    int dirfd;
    _Atomic uint64_t *bytes_read; /* of the tarball file, or NULL */
    sl_staged *m;
    size_t n, cap;
    uint64_t bytes;
} sl_stage;

/* Copies every regular member of the tarball at path into the (empty)
 * directory stage_dirfd, hashing each; records links as aliases. Returns 0
 * or -1 (*e) on a bad member path, a limit, or *cancel turning non-zero.
 * *bytes_read (when not NULL) follows the bytes of the file read so far
 * (before decompression), for another thread to read. */
int sl_stage_archive(const char *path, int stage_dirfd, const sl_image_limits *lim,
                     const atomic_int *cancel, _Atomic uint64_t *bytes_read, sl_stage *st,
                     sl_error *e);
/* The file member at path (following aliases), or NULL. */
const sl_staged *sl_stage_find(const sl_stage *st, const char *path);
/* Opens a staged member for reading; -1 (*e) on failure. */
int sl_stage_open(const sl_stage *st, const sl_staged *m, sl_error *e);
/* Reads a staged JSON member (at most SL_IMAGE_MAX_JSON bytes): the parsed
 * value and, if raw is not NULL, its exact bytes (malloc'd). */
int sl_stage_json(const sl_stage *st, const sl_staged *m, json_t **out, char **raw, size_t *rawlen,
                  sl_error *e);
void sl_stage_fini(sl_stage *st);

/* ---- images found in a tarball ---- */
typedef struct sl_pending_layer {
    const sl_staged *blob;
    sl_layer_compression comp;
    char diff_id[SL_DIGEST_STR_LEN]; /* from the config */
} sl_pending_layer;

/* Config fields, owned. */
typedef struct sl_config_fields {
    sl_strv entrypoint, cmd, env;
    char *workdir, *user, *stop_signal;
} sl_config_fields;

typedef struct sl_pending {
    char id[SL_DIGEST_STR_LEN];       /* config digest */
    char manifest[SL_DIGEST_STR_LEN]; /* "" for docker-archive */
    char *manifest_raw, *config_raw;
    size_t manifest_len, config_len;
    sl_strv tags; /* normalised name:tag */
    sl_pending_layer *layers;
    size_t nlayers;
    sl_config_fields cfg;
} sl_pending;

/* Finds the images of a staged tarball (OCI layout or docker-archive) and
 * checks every manifest, config and compressed-layer digest. Images listed
 * twice are merged. Returns 0 with a malloc'd array (free with
 * sl_pending_free) or -1 (*e). */
int sl_pending_parse(const sl_stage *st, const sl_image_limits *lim, sl_pending **out, size_t *n,
                     sl_error *e);
void sl_pending_free(sl_pending *p, size_t n);

/* Parses the fields of an image config's "config" object and its diff ids. */
int sl_config_parse(const json_t *config, sl_config_fields *f, sl_strv *diff_ids, sl_error *e);
void sl_config_fields_free(sl_config_fields *f);

/* ---- the store's in-memory index (image_index.c) ---- */
#define SL_INDEX_VERSION 1

typedef struct sl_layer_rec {
    char diff_id[SL_DIGEST_STR_LEN];
    uint64_t size;   /* regular-file bytes */
    uint64_t disk;   /* allocated bytes */
    uint64_t inodes; /* inodes of the unpacked tree */
} sl_layer_rec;

typedef struct sl_image_rec {
    sl_image view; /* points into the fields below */
    char id[SL_DIGEST_STR_LEN];
    char manifest[SL_DIGEST_STR_LEN]; /* "" when none */
    sl_strv tags;
    sl_strv digests;    /* derived: repo@manifest for each tagged repo */
    sl_strv layer_ids;  /* diff ids, lowest first */
    sl_strv layer_dirs; /* derived */
    sl_config_fields cfg;
} sl_image_rec;

/* A tarball imported before: import_dir skips it while unchanged. */
typedef struct sl_source_rec {
    char *path;
    uint64_t size, ino, dev;
    int64_t mtime_ns;
    sl_strv ids;
    sl_strv tags; /* the name:tag references it gave */
    int has_tags; /* tags were recorded (not by versions before them) */
} sl_source_rec;

struct sl_image_store {
    char *root, *index_path, *layers_dir, *blobs_dir, *tmp_dir;
    int lockfd;
    sl_image_limits lim;
    sl_image_rec **img;
    size_t nimg, capimg;
    sl_layer_rec *lay;
    size_t nlay, caplay;
    sl_source_rec *src;
    size_t nsrc, capsrc;
    sl_image_recovery rec;
    atomic_int cancel; /* imports running anywhere stop (ECANCELED) */
    int defer_deletes; /* discarded directories wait in garbage */
    sl_strv garbage;   /* directories under tmp/ to delete */
    /* tarball imports that ended well / failed (atomic: read by any thread) */
    uint64_t imports_done, imports_failed;
};

/* Loads images.json (a missing file is an empty index). -1 (*e) when it
 * cannot be read or is not a valid index. */
int sl_index_load(sl_image_store *s, sl_error *e);
/* Writes images.json atomically. */
int sl_index_save(const sl_image_store *s, sl_error *e);
/* Frees every record. */
void sl_index_clear(sl_image_store *s);
/* Drops the in-memory index and loads the one on disk (rollback). */
int sl_index_reload(sl_image_store *s, sl_error *e);

sl_image_rec *sl_image_rec_new(const char *id);
void sl_image_rec_free(sl_image_rec *r);
/* Recomputes the derived fields and the view. -1 on ENOMEM. */
int sl_image_rec_refresh(const sl_image_store *s, sl_image_rec *r);
int sl_index_add_image(sl_image_store *s, sl_image_rec *r);
/* Removes (and frees) image i. */
void sl_index_del_image(sl_image_store *s, size_t i);
sl_image_rec *sl_index_image(const sl_image_store *s, const char *id);
sl_layer_rec *sl_index_layer(const sl_image_store *s, const char *diff_id);
int sl_index_add_layer(sl_image_store *s, const sl_layer_rec *l);
/* How many images use the layer. */
size_t sl_index_layer_users(const sl_image_store *s, const char *diff_id);
void sl_index_del_layer(sl_image_store *s, const char *diff_id);
/* Records (or replaces) the source record for path. */
int sl_index_set_source(sl_image_store *s, const sl_source_rec *src);
const sl_source_rec *sl_index_source(const sl_image_store *s, const char *path);
/* Absolute path of a layer directory (malloc'd). */
char *sl_index_layer_dir(const sl_image_store *s, const char *diff_id);
char *sl_index_blob_path(const sl_image_store *s, const char *digest);
/* Renames dir into tmp/, then deletes it: a half-deleted layer is never
 * found under layers/. A missing dir is fine. Returns 0 or -1 (*e). With
 * defer_deletes the deletion is left to the caller (garbage); the store's
 * thread only. */
int sl_store_discard_dir(sl_image_store *s, const char *dir, sl_error *e);
/* The same, deleting at once: safe on any thread (it touches no list). */
int sl_store_discard_dir_now(sl_image_store *s, const char *dir, sl_error *e);

#endif
