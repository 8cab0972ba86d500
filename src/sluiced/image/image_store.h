/* Image store of sluiced: imports OCI image-layout and docker-archive
 * tarballs, unpacks every layer once (as an overlayfs lower directory, with
 * whiteouts turned into overlay whiteouts) and finds images by name:tag,
 * repo digest, image id or short id.
 *
 * Layout under the root (default SL_IMAGE_DEFAULT_ROOT):
 *   images.json          the index, written atomically: image id -> repo tags,
 *                        manifest digest, layer diff ids in order, config
 *                        fields; layer sizes; imported tarballs
 *   blobs/sha256/<hex>   manifest and config blobs of every image
 *   layers/<hex>/        a layer unpacked, keyed by its diff id (the digest of
 *                        its uncompressed tar, so layers shared by images at
 *                        any position are unpacked once); complete once there:
 *                        it is unpacked in tmp/ and renamed in
 *   tmp/                 imports and removals in progress; emptied at open
 *   lock                 flock()ed while a store is open
 *
 * An image's id is its config digest ("sha256:<hex>"). Repo digests are
 * "<repo>@<manifest digest>" for each repository an image is tagged in
 * (docker-archive tarballs carry no manifest, so their images have none).
 *
 * Not thread-safe: the store belongs to one thread (sluiced's loop), with
 * one exception: the slow half of an import (sl_image_import_run) may run
 * on another thread while the owner goes on using the store, one import at
 * a time per store. The synchronous sl_image_store_import does all three
 * halves at once. */
#ifndef SL_IMAGE_STORE_H
#define SL_IMAGE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image_ref.h"
#include "image_tar.h"
#include "sys_error.h"

#define SL_IMAGE_DEFAULT_ROOT "/var/lib/sluice/images"
/* Uncompressed layer bytes (and declared file sizes) of one image. */
#define SL_IMAGE_DEFAULT_MAX_IMAGE_BYTES (32ULL << 30)
/* Bytes of the files of one imported tarball (it is staged on disk). */
#define SL_IMAGE_DEFAULT_MAX_ARCHIVE_BYTES (32ULL << 30)
/* Members of one imported tarball. */
#define SL_IMAGE_DEFAULT_MAX_ARCHIVE_ENTRIES 100000u
/* Layers of one image. */
#define SL_IMAGE_DEFAULT_MAX_LAYERS 256u
/* Bytes of one index.json, manifest or config. */
#define SL_IMAGE_MAX_JSON (4u << 20)
/* Bytes of images.json. */
#define SL_IMAGE_MAX_INDEX (64u << 20)
/* Entries of one index.json (or nested index) or docker manifest.json. */
#define SL_IMAGE_MAX_MANIFESTS 1000u
/* Nesting of OCI indexes (index -> index -> manifest). */
#define SL_IMAGE_MAX_INDEX_DEPTH 2

typedef struct sl_image_limits {
    uint64_t max_image_bytes;     /* SL_IMAGE_DEFAULT_MAX_IMAGE_BYTES */
    uint64_t max_archive_bytes;   /* SL_IMAGE_DEFAULT_MAX_ARCHIVE_BYTES */
    uint64_t max_archive_entries; /* SL_IMAGE_DEFAULT_MAX_ARCHIVE_ENTRIES */
    uint64_t max_layer_entries;   /* SL_LAYER_DEFAULT_MAX_ENTRIES */
    uint32_t max_layers;          /* SL_IMAGE_DEFAULT_MAX_LAYERS */
    uint32_t max_path;            /* SL_LAYER_DEFAULT_MAX_PATH, bytes of a member path */
} sl_image_limits;

/* Fields of the image config that a container starts from. Arrays hold
 * n_* strings followed by a NULL. Strings are "" when unset. */
typedef struct sl_image_config {
    const char *const *entrypoint;
    size_t n_entrypoint;
    const char *const *cmd;
    size_t n_cmd;
    const char *const *env; /* "KEY=VALUE" */
    size_t n_env;
    const char *workdir;
    const char *user; /* "uid", "uid:gid", "name" or "name:group" */
    const char *stop_signal;
} sl_image_config;

/* A read-only view of one image, owned by the store. It stays valid until
 * the next sl_image_store_import, _import_dir, _remove or _close. */
typedef struct sl_image {
    const char *id; /* "sha256:<hex>" of the config */
    const char *const *repo_tags;
    size_t n_repo_tags;
    const char *const *repo_digests;
    size_t n_repo_digests;
    uint64_t size;                 /* unpacked bytes of its layers */
    const char *const *layer_dirs; /* absolute paths, lowest layer first */
    size_t n_layers;
    sl_image_config config;
} sl_image;

/* For ImageFsInfo. */
typedef struct sl_image_fs_usage {
    const char *mountpoint; /* the store root (absolute); owned by the store */
    uint64_t used_bytes;    /* blocks of layers, blobs and index */
    uint64_t inodes_used;
} sl_image_fs_usage;

/* What opening the store found and cleaned after a crash. */
typedef struct sl_image_recovery {
    unsigned tmp_removed;    /* leftovers of interrupted imports or removals */
    unsigned layers_removed; /* unpacked layers that no image uses */
    unsigned blobs_removed;  /* blobs that no image uses */
    unsigned images_dropped; /* index entries whose layers or blobs are missing */
} sl_image_recovery;

typedef struct sl_image_store sl_image_store;

void sl_image_limits_default(sl_image_limits *l);

/* Opens (creating if needed) the store at root (NULL: the default) with
 * limits (NULL: the defaults). Recovers from a crash: removes tmp/, unpacked
 * layers and blobs no indexed image uses, and drops index entries whose
 * layers or blobs are gone. Fails with EBUSY when another open store holds
 * the root, with EINVAL (naming the file) when images.json is not a valid
 * index. Returns the store, or NULL with *e. */
sl_image_store *sl_image_store_open(const char *root, const sl_image_limits *limits, sl_error *e);
/* Flags of sl_image_store_open_flags. SL_IMAGE_DEFER_DELETES: directories
 * that must go (recovery's leftovers in tmp/, removed images' layers,
 * layers of failed imports) are moved out of sight at once and deleted by
 * the caller (sl_image_store_take_garbage), e.g. on a worker thread, so no
 * store call spends the time of deleting a large tree. */
#define SL_IMAGE_DEFER_DELETES 1u
sl_image_store *sl_image_store_open_flags(const char *root, const sl_image_limits *limits,
                                          unsigned flags, sl_error *e);
/* The directories waiting to be deleted (with SL_IMAGE_DEFER_DELETES), as a
 * NULL-terminated malloc'd array of paths under tmp/ (free with
 * sl_image_ids_free), NULL when none. The caller deletes them (sl_rm_rf)
 * on any thread; nothing in the store uses them any more. */
char **sl_image_store_take_garbage(sl_image_store *s);
/* Makes every import running now or later fail soon with ECANCELED (for
 * shutdown). Safe from any thread. */
void sl_image_store_cancel(sl_image_store *s);
void sl_image_store_close(sl_image_store *s);
const sl_image_recovery *sl_image_store_recovery(const sl_image_store *s);

/* Imports the tarball at path: an OCI image layout (index.json) or a
 * docker-archive (manifest.json), possibly gzip-compressed. Names come from
 * the OCI annotations io.containerd.image.name (or a full reference in
 * org.opencontainers.image.ref.name) or docker's RepoTags, normalised. A tag
 * that named another image moves to the imported one (the other image stays,
 * perhaps untagged). extra_tag (NULL: none) is one more reference to give
 * the image; it requires the tarball to hold exactly one image (EINVAL).
 * Every blob, config and layer digest is verified; a mismatch, a layer that
 * breaks the unpacking rules (image_tar.h) or a limit aborts the import with
 * an error naming the layer, and the store is left as it was. On success
 * returns 0 and, if ids is not NULL, a NULL-terminated array of the image
 * ids in tarball order (free with sl_image_ids_free). */
int sl_image_store_import(sl_image_store *s, const char *path, const char *extra_tag, char ***ids,
                          sl_error *e);
/* ---- an import in three halves ----
 * begin and commit run on the store's thread and are quick; run does the
 * slow work (staging, digests, unpacking, syncing) and may run on another
 * thread meanwhile. At most one import per store runs at a time. */
typedef struct sl_image_import sl_image_import;

/* Checks extra_tag (see sl_image_store_import), notes the file's identity
 * (for the import-directory record) and the layers the store has. NULL
 * with *e when path cannot be read or the tag is invalid. */
sl_image_import *sl_image_import_begin(sl_image_store *s, const char *path, const char *extra_tag,
                                       sl_error *e);
/* Stages, verifies and unpacks the new layers, moves them into layers/ and
 * writes the blobs. Touches no index state. Returns 0 or -1 (the error
 * comes out of commit). */
int sl_image_import_run(sl_image_import *imp);
/* Makes the images visible: the run's error, or EAGAIN when a layer or
 * blob it counted on went away meanwhile (a removal: begin anew), or the
 * index write. On success 0 with ids as sl_image_store_import. */
int sl_image_import_commit(sl_image_import *imp, char ***ids, sl_error *e);
/* Frees the import; layers it placed that no image took are discarded. */
void sl_image_import_free(sl_image_import *imp);

/* How far a running import is, readable from any thread while run runs:
 * the bytes of the tarball file read (as stored, before decompression) of
 * its size at begin; once read through, run goes on checking digests,
 * unpacking the layers and syncing (unpacking). */
typedef struct sl_import_progress {
    uint64_t bytes_read, bytes_total;
    bool unpacking;
} sl_import_progress;
void sl_image_import_progress(const sl_image_import *imp, sl_import_progress *out);

/* The "*.tar" files of dir that sl_image_store_import_dir_for(dir, want)
 * would import now (new, changed, or giving want's missing tag), in name
 * order, as a NULL-terminated malloc'd array of paths (free with
 * sl_image_ids_free; an empty array when none); *skipped (may be NULL)
 * gets the count of the others. Returns 0 or -1 (*e: dir unreadable). */
int sl_image_store_dir_changes(const sl_image_store *s, const char *dir, const char *want,
                               char ***paths, size_t *skipped, sl_error *e);
/* True when the tarball at path was imported before and is unchanged
 * (path, size, mtime, inode), and, when want is not NULL, did not give
 * want's name:tag that no image has now. Whether its images are still
 * present does not matter: a removed image stays removed. */
int sl_image_store_file_unchanged(const sl_image_store *s, const char *path, const char *want);
/* 1 when the record of the tarball at path says it gave ref's name:tag
 * (records from before tags were kept: any tag), 0 when not, -1 when the
 * tarball has no record (never imported: what it holds is unknown). */
int sl_image_store_source_gave(const sl_image_store *s, const char *path, const char *ref);

/* Imports every "*.tar" file of dir in name order, skipping files that were
 * imported before (same path, size, mtime and inode), even when their
 * images were removed since. A failing file does not stop the others. Counts go to
 * *imported and *skipped (either may be NULL). Returns 0, or -1 with *e
 * describing the first failure. */
int sl_image_store_import_dir(sl_image_store *s, const char *dir, size_t *imported, size_t *skipped,
                              sl_error *e);
/* The same, for a pull of want (a reference): a file that gave want's
 * name:tag is imported again when no image has that tag any more (it was
 * removed), although the file and its images are unchanged. */
int sl_image_store_import_dir_for(sl_image_store *s, const char *dir, const char *want,
                                  size_t *imported, size_t *skipped, sl_error *e);
void sl_image_ids_free(char **ids);
/* Tarball imports (sl_image_store_import, also through _import_dir) since
 * the store was opened that ended well and that failed. Safe from any
 * thread. */
void sl_image_store_import_counts(const sl_image_store *s, uint64_t *done, uint64_t *failed);

/* Finds an image by id ("sha256:<hex>" or the 64 hex), repo tag (any form
 * that normalises to one: "busybox" is docker.io/library/busybox:latest),
 * repo digest ("name@sha256:<hex>") or unique id prefix of at least
 * SL_IMAGE_ID_PREFIX_MIN hex digits (optionally after "sha256:"). Returns
 * the view, or NULL with *e: ENOENT when absent, EINVAL for an invalid or
 * ambiguous reference. */
const sl_image *sl_image_store_find(const sl_image_store *s, const char *ref, sl_error *e);
/* Lists the images (filter NULL or "": all; otherwise the image filter
 * finds, if any; an invalid filter matches nothing). Sets *images to a
 * malloc'd array of *n views (the caller frees the array, not the views).
 * Returns 0 or -1 (ENOMEM). */
int sl_image_store_list(const sl_image_store *s, const char *filter, const sl_image ***images,
                        size_t *n, sl_error *e);
/* Removes by reference. A repo tag is untagged, and the image deleted when
 * that was its last tag; an id, short id or repo digest deletes the image
 * with all its tags. Layers and blobs no other image uses are deleted too.
 * An absent image is not an error (returns 0). Returns -1 with *e for an
 * invalid reference or a failure to write the index (the store then stays
 * as it was). */
int sl_image_store_remove(sl_image_store *s, const char *ref, sl_error *e);
/* Usage of the store's files, from the sizes recorded at import (no tree
 * walk). Returns 0 or -1 (*e). */
int sl_image_store_fs_usage(const sl_image_store *s, sl_image_fs_usage *u, sl_error *e);

#endif
