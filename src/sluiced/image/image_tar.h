/* Layer unpacker: turns one (possibly compressed) layer tar into an overlayfs
 * lower directory. The input is untrusted: nothing it names may land outside
 * the destination, no symlink inside the destination is ever followed while
 * creating entries (every component is opened with O_NOFOLLOW relative to the
 * destination's fd), hard links only join entries of the same layer, and
 * device nodes other than overlay whiteouts are not created.
 *
 * Whiteouts: `.wh.<name>` becomes a character device 0:0 named <name>;
 * `.wh..wh..opq` sets `trusted.overlay.opaque=y` on its directory. Other
 * `.wh..wh.*` entries (aufs metadata) are skipped. Ownership, mode (setuid
 * and sticky bits included), and mtimes are kept; xattrs only in the
 * `user.` namespace (not `user.overlay.`) and `security.capability`, so a
 * layer cannot smuggle in overlay redirects. The diff id (sha256 of the
 * uncompressed tar stream, trailing padding included) is computed on the
 * way. */
#ifndef SL_IMAGE_TAR_H
#define SL_IMAGE_TAR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sys_error.h"

/* Defaults of the per-layer limits (see sl_layer_limits). */
#define SL_LAYER_DEFAULT_MAX_BYTES (32ULL << 30) /* uncompressed bytes */
#define SL_LAYER_DEFAULT_MAX_ENTRIES 1000000u    /* tar entries */
#define SL_LAYER_DEFAULT_MAX_PATH 4096u          /* bytes of one entry path */
/* Longest path component (NAME_MAX of Linux file systems). */
#define SL_LAYER_MAX_NAME 255u
/* Deepest path: recursive removal and usage walks hold one directory fd per
 * level, so depth is bounded well under the usual 1024 open files. */
#define SL_LAYER_MAX_DEPTH 256u
/* Bytes read from the decompressor per callback. */
#define SL_LAYER_READ_CHUNK 65536u
/* "sha256:" + 64 hex + NUL */
#define SL_DIGEST_STR_LEN 72

typedef struct sl_layer_limits {
    uint64_t max_bytes;   /* uncompressed stream bytes, and declared file sizes */
    uint64_t max_entries; /* entries of the tar */
    size_t max_path;      /* bytes of one entry (or hard-link target) path */
} sl_layer_limits;

/* Which decompressors may run. AUTO allows gzip, bzip2, xz and zstd (docker's
 * layer.tar may be any); libarchive's external-program fallbacks are never
 * enabled. */
typedef enum sl_layer_compression {
    SL_LAYER_AUTO = 0,
    SL_LAYER_NONE,
    SL_LAYER_GZIP,
    SL_LAYER_ZSTD,
} sl_layer_compression;

typedef struct sl_layer_stats {
    char diff_id[SL_DIGEST_STR_LEN]; /* "sha256:<hex>" of the uncompressed stream */
    uint64_t stream_bytes;           /* uncompressed bytes read */
    uint64_t file_bytes;             /* regular-file data written */
    uint64_t entries;                /* tar entries seen */
    uint64_t whiteouts;              /* .wh. entries turned into whiteouts */
    uint64_t skipped;                /* device nodes, sockets, aufs metadata */
} sl_layer_stats;

/* Pulls the next bytes of the (compressed) layer: sets *buf and returns the
 * count, 0 at the end, or -1 on an error (errno set). */
typedef ssize_t (*sl_layer_read_fn)(void *ctx, const void **buf);

/* Fills *l with the defaults above. */
void sl_layer_limits_default(sl_layer_limits *l);

/* Unpacks the layer read through fn into the directory dest_dirfd (which
 * should be empty: entries already there are treated as part of this
 * layer). On success fills *st (may be NULL) and returns 0. On failure
 * returns -1 with *e naming the entry and the reason; dest is left partly
 * written, so the caller unpacks into a temporary directory and discards it.
 * lim NULL means the defaults. The caller is expected to be root; ownership
 * changes that fail with EPERM are ignored when it is not. */
int sl_layer_unpack(sl_layer_read_fn fn, void *ctx, sl_layer_compression comp, int dest_dirfd,
                    const sl_layer_limits *lim, sl_layer_stats *st, sl_error *e);
/* The same, reading len bytes from memory. */
int sl_layer_unpack_mem(const void *data, size_t len, sl_layer_compression comp, int dest_dirfd,
                        const sl_layer_limits *lim, sl_layer_stats *st, sl_error *e);
/* The same, reading the file fd from its current offset to its end. */
int sl_layer_unpack_fd(int fd, sl_layer_compression comp, int dest_dirfd,
                       const sl_layer_limits *lim, sl_layer_stats *st, sl_error *e);

/* Normalises a tar member name into out (size outlen): drops leading "./",
 * empty and "." components and a trailing '/'. Returns 0, or -1 with *e for
 * an absolute path, a ".." component, a component over SL_LAYER_MAX_NAME,
 * over SL_LAYER_MAX_DEPTH components, or
 * a result of max_path bytes or more. The layer root normalises to "". */
int sl_layer_path_clean(const char *name, size_t max_path, char *out, size_t outlen, sl_error *e);

#endif
