/* Layer unpacker. Two libarchive readers are chained: `raw` only
 * decompresses (format "raw"), `tar` parses the tar stream that our read
 * callback hands it from `raw`, so the diff id is hashed over exactly the
 * uncompressed bytes in a single pass. Every entry is created relative to
 * the destination fd, walking each parent component with O_NOFOLLOW. */
#include "image_tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fsutil.h"
#include "image_ref.h"

#define WH_PREFIX ".wh."
#define WH_META_PREFIX ".wh..wh."
#define WH_OPAQUE ".wh..wh..opq"
#define OPAQUE_XATTR "trusted.overlay.opaque"

typedef struct dir_time {
    char *path; /* cleaned path, "" for the root */
    struct timespec ts[2];
} dir_time;

typedef struct unpacker {
    struct archive *raw; /* decompressor */
    struct archive *tar; /* tar parser fed from raw */
    sl_layer_read_fn fn;
    void *fn_ctx;
    EVP_MD_CTX *sha;
    sl_layer_limits lim;
    sl_layer_stats *st;
    sl_error *e;
    int rootfd;
    int raw_eof;
    int cb_failed; /* *e already says why the tar reader failed */
    int is_root;
    dir_time *dirs;
    size_t ndirs, capdirs;
    char *path; /* current entry, cleaned */
    char *link; /* hard-link target, cleaned */
    unsigned char chunk[SL_LAYER_READ_CHUNK];
} unpacker;

void sl_layer_limits_default(sl_layer_limits *l)
{
    l->max_bytes = SL_LAYER_DEFAULT_MAX_BYTES;
    l->max_entries = SL_LAYER_DEFAULT_MAX_ENTRIES;
    l->max_path = SL_LAYER_DEFAULT_MAX_PATH;
}

/* ---- path handling ---- */

int sl_layer_path_clean(const char *name, size_t max_path, char *out, size_t outlen, sl_error *e)
{
    if (name[0] == '/')
        return sl_error_set(e, EINVAL, "%.200s: absolute path", name);
    size_t o = 0, depth = 0;
    const char *p = name;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return sl_error_set(e, EINVAL, "%.200s: \"..\" component", name);
        if (n > SL_LAYER_MAX_NAME)
            return sl_error_set(e, ENAMETOOLONG, "%.200s: component over %u bytes", name,
                                SL_LAYER_MAX_NAME);
        size_t len = o + (o ? 1 : 0) + n;
        if (n > 0 && !(n == 1 && p[0] == '.')) {
            if (len >= outlen || len >= max_path)
                return sl_error_set(e, ENAMETOOLONG, "%.200s: path over %zu bytes", name, max_path);
            if (++depth > SL_LAYER_MAX_DEPTH)
                return sl_error_set(e, ENAMETOOLONG, "%.200s: over %u levels deep", name,
                                    SL_LAYER_MAX_DEPTH);
            if (o)
                out[o++] = '/';
            memcpy(out + o, p, n);
            o += n;
        }
        p += n;
        while (*p == '/')
            p++;
    }
    out[o] = '\0';
    return 0;
}

/* Splits a cleaned path in place: returns the last component; *path keeps
 * the parent ("" for the root). */
static char *split_last(char *path)
{
    char *slash = strrchr(path, '/');
    if (!slash)
        return path;
    *slash = '\0';
    return slash + 1;
}

/* Opens the parent directory of the cleaned path `path` (whose last
 * component is not walked), never following a symlink. Missing components
 * are created (0755, like tar) when create is set. Returns an fd or -1. */
static int open_parent(unpacker *u, const char *path, int create)
{
    int fd = openat(u->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return sl_error_set(u->e, errno, "open layer directory");
    const char *p = path;
    char comp[SL_LAYER_MAX_NAME + 1];
    for (const char *slash; (slash = strchr(p, '/')); p = slash + 1) {
        size_t n = (size_t)(slash - p);
        memcpy(comp, p, n);
        comp[n] = '\0';
        int nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (nfd < 0 && errno == ENOENT && create) {
            if (mkdirat(fd, comp, 0755) < 0 && errno != EEXIST) {
                int err = errno;
                close(fd);
                return sl_error_set(u->e, err, "%s: create parent %s", path, comp);
            }
            nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        int err = errno;
        close(fd);
        if (nfd < 0 && (err == ELOOP || err == ENOTDIR))
            return sl_error_set(u->e, EINVAL, "%s: %s is a symlink or not a directory", path, comp);
        if (nfd < 0)
            return sl_error_set(u->e, err, "%s: open %s", path, comp);
        fd = nfd;
    }
    return fd;
}

/* rm -rf of name in dirfd, never following symlinks. */
static int rm_tree_at(int pfd, const char *name)
{
    int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return unlinkat(pfd, name, 0);
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN)
            rc = rm_tree_at(dirfd(d), de->d_name);
        else
            rc = unlinkat(dirfd(d), de->d_name, 0);
    }
    closedir(d);
    return rc < 0 ? rc : unlinkat(pfd, name, AT_REMOVEDIR);
}

/* Makes room for a new entry `name` in pfd (tar semantics: a later entry
 * replaces an earlier one). Returns 1 if a directory is there and keep_dir
 * is set, 0 when the name is free, -1 on error. */
static int clear_name(unpacker *u, int pfd, const char *name, int keep_dir)
{
    struct stat st;
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : sl_error_set(u->e, errno, "%s: stat", u->path);
    if (S_ISDIR(st.st_mode) && keep_dir)
        return 1;
    int rc = S_ISDIR(st.st_mode) ? rm_tree_at(pfd, name) : unlinkat(pfd, name, 0);
    if (rc < 0)
        return sl_error_set(u->e, errno, "%s: replace existing entry", u->path);
    return 0;
}

/* ---- metadata ---- */

static int entry_owner(unpacker *u, struct archive_entry *ent, uid_t *uid, gid_t *gid)
{
    la_int64_t ou = archive_entry_uid(ent), og = archive_entry_gid(ent);
    if (ou < 0 || og < 0 || ou >= (la_int64_t)UINT32_MAX || og >= (la_int64_t)UINT32_MAX)
        return sl_error_set(u->e, EINVAL, "%s: bad owner %lld:%lld", u->path, (long long)ou,
                            (long long)og);
    *uid = (uid_t)ou;
    *gid = (gid_t)og;
    return 0;
}

static void entry_times(struct archive_entry *ent, struct timespec ts[2])
{
    ts[1].tv_nsec = UTIME_OMIT;
    ts[0].tv_nsec = UTIME_OMIT;
    if (!archive_entry_mtime_is_set(ent))
        return;
    long ns = archive_entry_mtime_nsec(ent);
    ts[1].tv_sec = archive_entry_mtime(ent);
    ts[1].tv_nsec = ns >= 0 && ns < 1000000000L ? ns : 0;
    ts[0] = ts[1];
    if (archive_entry_atime_is_set(ent)) {
        ns = archive_entry_atime_nsec(ent);
        ts[0].tv_sec = archive_entry_atime(ent);
        ts[0].tv_nsec = ns >= 0 && ns < 1000000000L ? ns : 0;
    }
}

/* Only xattrs that cannot change how overlayfs or the kernel treat the
 * tree beyond the file itself. */
static int xattr_allowed(const char *name)
{
    if (!strcmp(name, "security.capability"))
        return 1;
    return !strncmp(name, "user.", 5) && strncmp(name, "user.overlay.", 13) != 0;
}

static void apply_xattrs(int fd, struct archive_entry *ent)
{
    const char *name;
    const void *value;
    size_t size;
    archive_entry_xattr_reset(ent);
    while (archive_entry_xattr_next(ent, &name, &value, &size) == ARCHIVE_OK)
        if (name && xattr_allowed(name))
            (void)fsetxattr(fd, name, value, size, 0); /* optional: ignore ENOTSUP etc. */
}

/* Owner, then mode (chown clears setuid), xattrs, times (unless deferred). */
static int apply_meta_fd(unpacker *u, int fd, struct archive_entry *ent, int times)
{
    uid_t uid = 0;
    gid_t gid = 0;
    if (entry_owner(u, ent, &uid, &gid) < 0)
        return -1;
    if (fchown(fd, uid, gid) < 0 && (errno != EPERM || u->is_root))
        return sl_error_set(u->e, errno, "%s: chown", u->path);
    if (fchmod(fd, archive_entry_perm(ent) & 07777) < 0)
        return sl_error_set(u->e, errno, "%s: chmod", u->path);
    apply_xattrs(fd, ent);
    struct timespec ts[2];
    entry_times(ent, ts);
    if (times && futimens(fd, ts) < 0)
        return sl_error_set(u->e, errno, "%s: set times", u->path);
    return 0;
}

/* Owner and times of a name that must not be opened (symlink, whiteout). */
static int apply_meta_at(unpacker *u, int pfd, const char *name, struct archive_entry *ent)
{
    uid_t uid = 0;
    gid_t gid = 0;
    if (entry_owner(u, ent, &uid, &gid) < 0)
        return -1;
    if (fchownat(pfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0 && (errno != EPERM || u->is_root))
        return sl_error_set(u->e, errno, "%s: chown", u->path);
    struct timespec ts[2];
    entry_times(ent, ts);
    if (utimensat(pfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
        return sl_error_set(u->e, errno, "%s: set times", u->path);
    return 0;
}

/* Directory times are set last: creating children would change them. */
static int defer_dir_time(unpacker *u, const char *path, struct archive_entry *ent)
{
    if (u->ndirs == u->capdirs) {
        size_t cap = u->capdirs ? u->capdirs * 2 : 64;
        dir_time *nd = realloc(u->dirs, cap * sizeof(*nd));
        if (!nd)
            return sl_error_set(u->e, ENOMEM, "%s", path);
        u->dirs = nd;
        u->capdirs = cap;
    }
    dir_time *d = &u->dirs[u->ndirs];
    if (!(d->path = strdup(path)))
        return sl_error_set(u->e, ENOMEM, "%s", path);
    entry_times(ent, d->ts);
    u->ndirs++;
    return 0;
}

static void apply_dir_times(unpacker *u)
{
    for (size_t i = u->ndirs; i-- > 0;) {
        dir_time *d = &u->dirs[i];
        if (!d->path[0]) {
            (void)futimens(u->rootfd, d->ts);
            continue;
        }
        int pfd = open_parent(u, d->path, 0);
        if (pfd < 0)
            continue; /* replaced by a later entry: nothing to date */
        char *base = strrchr(d->path, '/');
        (void)utimensat(pfd, base ? base + 1 : d->path, d->ts, AT_SYMLINK_NOFOLLOW);
        close(pfd);
    }
}

/* ---- entry kinds ---- */

static int make_dir(unpacker *u, int pfd, const char *name, struct archive_entry *ent)
{
    int have = clear_name(u, pfd, name, 1);
    if (have < 0)
        return -1;
    if (!have && mkdirat(pfd, name, 0700) < 0)
        return sl_error_set(u->e, errno, "%s: mkdir", u->path);
    SL_AUTOCLOSE int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return sl_error_set(u->e, errno, "%s: open", u->path);
    return apply_meta_fd(u, fd, ent, 0);
}

static int write_all_at(int fd, const char *p, size_t n, off_t off)
{
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
        off += w;
    }
    return 0;
}

static int copy_data(unpacker *u, int fd)
{
    const void *buf;
    size_t size;
    la_int64_t off;
    for (;;) {
        int r = archive_read_data_block(u->tar, &buf, &size, &off);
        if (r == ARCHIVE_EOF)
            return 0;
        if (r < ARCHIVE_WARN)
            return u->cb_failed
                       ? -1
                       : sl_error_set(u->e, EIO, "%s: %s", u->path, archive_error_string(u->tar));
        if (off < 0 || write_all_at(fd, buf, size, (off_t)off) < 0)
            return sl_error_set(u->e, off < 0 ? EINVAL : errno, "%s: write", u->path);
    }
}

static int make_file(unpacker *u, int pfd, const char *name, struct archive_entry *ent)
{
    la_int64_t size = archive_entry_size_is_set(ent) ? archive_entry_size(ent) : 0;
    uint64_t left = u->lim.max_bytes - u->st->file_bytes;
    if (size < 0 || (uint64_t)size > left)
        return sl_error_set(u->e, EFBIG, "%s: declares %lld bytes, over the %llu bytes left",
                            u->path, (long long)size, (unsigned long long)left);
    u->st->file_bytes += (uint64_t)size;
    if (clear_name(u, pfd, name, 0) < 0)
        return -1;
    SL_AUTOCLOSE int fd =
        openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return sl_error_set(u->e, errno, "%s: create", u->path);
    if (copy_data(u, fd) < 0)
        return -1;
    if (ftruncate(fd, (off_t)size) < 0) /* sparse tail, or data shorter than declared */
        return sl_error_set(u->e, errno, "%s: truncate", u->path);
    return apply_meta_fd(u, fd, ent, 1);
}

static const char *entry_symlink(struct archive_entry *ent)
{
    const char *t = archive_entry_symlink(ent);
    return t ? t : archive_entry_symlink_utf8(ent);
}

static int make_symlink(unpacker *u, int pfd, const char *name, struct archive_entry *ent)
{
    const char *target = entry_symlink(ent);
    if (!target || !target[0] || strlen(target) >= u->lim.max_path)
        return sl_error_set(u->e, EINVAL, "%s: bad symlink target", u->path);
    if (clear_name(u, pfd, name, 0) < 0)
        return -1;
    if (symlinkat(target, pfd, name) < 0)
        return sl_error_set(u->e, errno, "%s: symlink", u->path);
    return apply_meta_at(u, pfd, name, ent);
}

/* A 0:0 character device: an overlay whiteout for `name`. */
static int make_whiteout(unpacker *u, int pfd, const char *name, struct archive_entry *ent)
{
    if (clear_name(u, pfd, name, 0) < 0)
        return -1;
    if (mknodat(pfd, name, S_IFCHR, makedev(0, 0)) < 0)
        return sl_error_set(u->e, errno, "%s: mknod whiteout", u->path);
    u->st->whiteouts++;
    return apply_meta_at(u, pfd, name, ent);
}

static int make_fifo(unpacker *u, int pfd, const char *name, struct archive_entry *ent)
{
    if (clear_name(u, pfd, name, 0) < 0)
        return -1;
    if (mkfifoat(pfd, name, 0600) < 0)
        return sl_error_set(u->e, errno, "%s: mkfifo", u->path);
    /* never opened: opening a FIFO for I/O would block */
    if (apply_meta_at(u, pfd, name, ent) < 0)
        return -1;
    if (fchmodat(pfd, name, archive_entry_perm(ent) & 07777, 0) < 0)
        return sl_error_set(u->e, errno, "%s: chmod", u->path);
    return 0;
}

static const char *entry_hardlink(struct archive_entry *ent)
{
    const char *t = archive_entry_hardlink(ent);
    return t ? t : archive_entry_hardlink_utf8(ent);
}

/* A hard link may only join an entry already unpacked in this layer: the
 * target is walked from the layer root like any other path. */
static int make_hardlink(unpacker *u, int pfd, const char *name, const char *target)
{
    if (sl_layer_path_clean(target, u->lim.max_path, u->link, u->lim.max_path + 1, u->e) < 0)
        return sl_error_wrap(u->e, "%s: hard link", u->path);
    if (!strcmp(u->link, u->path))
        return 0;
    if (!u->link[0])
        return sl_error_set(u->e, EINVAL, "%s: hard link to the layer root", u->path);
    SL_AUTOCLOSE int tfd = open_parent(u, u->link, 0);
    if (tfd < 0)
        return sl_error_wrap(u->e, "%s: hard link target", u->path);
    const char *tname = split_last(u->link);
    struct stat st;
    if (fstatat(tfd, tname, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode))
        return sl_error_set(u->e, EINVAL, "%s: hard link target %s is not an earlier entry",
                            u->path, target);
    if (clear_name(u, pfd, name, 0) < 0)
        return -1;
    if (linkat(tfd, tname, pfd, name, 0) < 0)
        return sl_error_set(u->e, errno, "%s: link", u->path);
    return 0;
}

/* .wh.<name>, .wh..wh..opq, or other .wh..wh.* metadata. */
static int do_whiteout(unpacker *u, int pfd, const char *base, struct archive_entry *ent)
{
    if (!strcmp(base, WH_OPAQUE)) {
        if (fsetxattr(pfd, OPAQUE_XATTR, "y", 1, 0) < 0)
            return sl_error_set(u->e, errno, "%s: set %s", u->path, OPAQUE_XATTR);
        u->st->whiteouts++;
        return 0;
    }
    if (!strncmp(base, WH_META_PREFIX, strlen(WH_META_PREFIX))) {
        u->st->skipped++;
        return 0;
    }
    const char *name = base + strlen(WH_PREFIX);
    if (!name[0] || !strcmp(name, ".") || !strcmp(name, ".."))
        return sl_error_set(u->e, EINVAL, "%s: bad whiteout name", u->path);
    return make_whiteout(u, pfd, name, ent);
}

static int do_typed(unpacker *u, int pfd, const char *base, struct archive_entry *ent)
{
    switch (archive_entry_filetype(ent)) {
    case AE_IFDIR:
        return make_dir(u, pfd, base, ent);
    case AE_IFREG:
        return make_file(u, pfd, base, ent);
    case AE_IFLNK:
        return make_symlink(u, pfd, base, ent);
    case AE_IFIFO:
        return make_fifo(u, pfd, base, ent);
    case AE_IFCHR: /* only 0:0, an overlay whiteout already */
        if (archive_entry_rdev(ent) == 0)
            return make_whiteout(u, pfd, base, ent);
        break;
    default: /* other device nodes and sockets are not created */
        break;
    }
    u->st->skipped++;
    return 0;
}

static int do_root(unpacker *u, struct archive_entry *ent)
{
    if (archive_entry_filetype(ent) != AE_IFDIR || entry_hardlink(ent))
        return sl_error_set(u->e, EINVAL, "layer root entry is not a directory");
    if (apply_meta_fd(u, u->rootfd, ent, 0) < 0)
        return -1;
    return defer_dir_time(u, "", ent);
}

static int do_entry(unpacker *u, struct archive_entry *ent)
{
    const char *name = archive_entry_pathname(ent);
    if (!name)
        name = archive_entry_pathname_utf8(ent);
    if (!name)
        return sl_error_set(u->e, EINVAL, "entry %llu: no usable name",
                            (unsigned long long)u->st->entries);
    if (sl_layer_path_clean(name, u->lim.max_path, u->path, u->lim.max_path + 1, u->e) < 0)
        return -1;
    if (!u->path[0])
        return do_root(u, ent);
    SL_AUTOCLOSE int pfd = open_parent(u, u->path, 1);
    if (pfd < 0)
        return -1;
    const char *slash = strrchr(u->path, '/');
    const char *base = slash ? slash + 1 : u->path;
    if (!strncmp(base, WH_PREFIX, strlen(WH_PREFIX)))
        return do_whiteout(u, pfd, base, ent);
    const char *link = entry_hardlink(ent);
    if (link)
        return make_hardlink(u, pfd, base, link);
    int rc = do_typed(u, pfd, base, ent);
    if (rc == 0 && archive_entry_filetype(ent) == AE_IFDIR)
        rc = defer_dir_time(u, u->path, ent);
    return rc;
}

/* ---- the two readers ---- */

static la_ssize_t raw_read_cb(struct archive *a, void *arg, const void **buf)
{
    unpacker *u = arg;
    ssize_t n = u->fn(u->fn_ctx, buf);
    if (n < 0)
        archive_set_error(a, errno ? errno : EIO, "read layer");
    return n;
}

/* Feeds the tar parser uncompressed bytes, hashing and counting them. */
static la_ssize_t tar_read_cb(struct archive *a, void *arg, const void **buf)
{
    (void)a;
    unpacker *u = arg;
    if (u->raw_eof)
        return 0;
    la_ssize_t n = archive_read_data(u->raw, u->chunk, sizeof(u->chunk));
    if (n < 0) {
        u->cb_failed = 1;
        sl_error_set(u->e, EIO, "decompress layer: %s", archive_error_string(u->raw));
        return -1;
    }
    if (n == 0)
        u->raw_eof = 1;
    u->st->stream_bytes += (uint64_t)n;
    if (u->st->stream_bytes > u->lim.max_bytes) {
        u->cb_failed = 1;
        sl_error_set(u->e, EFBIG, "layer over %llu bytes uncompressed",
                     (unsigned long long)u->lim.max_bytes);
        return -1;
    }
    EVP_DigestUpdate(u->sha, u->chunk, (size_t)n);
    *buf = u->chunk;
    return n;
}

static int enable_filters(unpacker *u, sl_layer_compression comp)
{
    int rc = ARCHIVE_OK;
    if (comp == SL_LAYER_AUTO || comp == SL_LAYER_GZIP)
        rc |= archive_read_support_filter_gzip(u->raw);
    if (comp == SL_LAYER_AUTO || comp == SL_LAYER_ZSTD)
        rc |= archive_read_support_filter_zstd(u->raw);
    if (comp == SL_LAYER_AUTO) {
        rc |= archive_read_support_filter_bzip2(u->raw);
        rc |= archive_read_support_filter_xz(u->raw);
    }
    /* ARCHIVE_WARN means "would run an external program": refuse. */
    if (rc != ARCHIVE_OK)
        return sl_error_set(u->e, ENOTSUP, "no built-in decompressor in libarchive");
    return 0;
}

static int open_readers(unpacker *u, sl_layer_compression comp)
{
    u->raw = archive_read_new();
    u->tar = archive_read_new();
    if (!u->raw || !u->tar)
        return sl_error_set(u->e, ENOMEM, "libarchive");
    if (enable_filters(u, comp) < 0)
        return -1;
    archive_read_support_format_raw(u->raw);
    archive_read_support_format_empty(u->raw);
    if (archive_read_open(u->raw, u, NULL, raw_read_cb, NULL) != ARCHIVE_OK)
        return sl_error_set(u->e, EIO, "open layer: %s", archive_error_string(u->raw));
    struct archive_entry *ent;
    int r = archive_read_next_header(u->raw, &ent);
    if (r == ARCHIVE_EOF)
        u->raw_eof = 1; /* an empty stream */
    else if (r < ARCHIVE_WARN)
        return sl_error_set(u->e, EIO, "open layer: %s", archive_error_string(u->raw));
    archive_read_support_format_tar(u->tar);
    archive_read_support_format_empty(u->tar);
    if (archive_read_open(u->tar, u, NULL, tar_read_cb, NULL) != ARCHIVE_OK)
        return u->cb_failed
                   ? -1
                   : sl_error_set(u->e, EIO, "layer tar: %s", archive_error_string(u->tar));
    return 0;
}

static int tar_failed(unpacker *u, const char *what)
{
    if (u->cb_failed)
        return -1;
    return sl_error_set(u->e, EIO, "layer tar%s%s: %s", what[0] ? " at " : "", what,
                        archive_error_string(u->tar));
}

static int read_entries(unpacker *u)
{
    struct archive_entry *ent;
    for (;;) {
        int r = archive_read_next_header(u->tar, &ent);
        if (r == ARCHIVE_EOF)
            return 0;
        if (r < ARCHIVE_WARN)
            return tar_failed(u, u->st->entries ? u->path : "");
        if (++u->st->entries > u->lim.max_entries)
            return sl_error_set(u->e, EFBIG, "layer has over %llu entries",
                                (unsigned long long)u->lim.max_entries);
        if (do_entry(u, ent) < 0)
            return -1;
    }
}

/* Hashes whatever follows the end-of-archive blocks: the diff id covers the
 * whole uncompressed stream. */
static int drain(unpacker *u)
{
    const void *buf;
    la_ssize_t n;
    while ((n = tar_read_cb(NULL, u, &buf)) > 0)
        ;
    return n < 0 ? -1 : 0;
}

static void finish_digest(unpacker *u)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_DigestFinal_ex(u->sha, md, &mdlen);
    sl_digest_format(md, u->st->diff_id);
}

static void unpacker_fini(unpacker *u)
{
    if (u->tar)
        archive_read_free(u->tar);
    if (u->raw)
        archive_read_free(u->raw);
    EVP_MD_CTX_free(u->sha);
    for (size_t i = 0; i < u->ndirs; i++)
        free(u->dirs[i].path);
    free(u->dirs);
    free(u->path);
    free(u->link);
    free(u);
}

static unpacker *unpacker_new(int dest_dirfd, const sl_layer_limits *lim, sl_layer_stats *st,
                              sl_error *e)
{
    /* chunk is left unset: it is always filled before it is read (zeroing
     * its 64 KiB per layer was a tenth of the image_tar fuzz target's time) */
    unpacker *u = malloc(sizeof(*u));
    if (!u) {
        sl_error_set(e, ENOMEM, "unpack layer");
        return NULL;
    }
    memset(u, 0, offsetof(unpacker, chunk));
    if (lim)
        u->lim = *lim;
    else
        sl_layer_limits_default(&u->lim);
    u->st = st;
    u->e = e;
    u->rootfd = dest_dirfd;
    u->is_root = geteuid() == 0;
    u->path = malloc(u->lim.max_path + 1);
    u->link = malloc(u->lim.max_path + 1);
    u->sha = EVP_MD_CTX_new();
    if (!u->path || !u->link || !u->sha || !EVP_DigestInit_ex(u->sha, EVP_sha256(), NULL)) {
        sl_error_set(e, ENOMEM, "unpack layer");
        unpacker_fini(u);
        return NULL;
    }
    return u;
}

int sl_layer_unpack(sl_layer_read_fn fn, void *ctx, sl_layer_compression comp, int dest_dirfd,
                    const sl_layer_limits *lim, sl_layer_stats *st, sl_error *e)
{
    sl_layer_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof(*st));
    unpacker *u = unpacker_new(dest_dirfd, lim, st, e);
    if (!u)
        return -1;
    u->fn = fn;
    u->fn_ctx = ctx;
    int rc = open_readers(u, comp);
    if (rc == 0)
        rc = read_entries(u);
    if (rc == 0)
        rc = drain(u);
    if (rc == 0) {
        apply_dir_times(u);
        finish_digest(u);
    }
    unpacker_fini(u);
    return rc;
}

typedef struct mem_src {
    const void *data;
    size_t len;
} mem_src;

static ssize_t mem_read(void *ctx, const void **buf)
{
    mem_src *m = ctx;
    size_t n = m->len;
    *buf = m->data;
    m->data = (const char *)m->data + n;
    m->len = 0;
    return (ssize_t)n;
}

int sl_layer_unpack_mem(const void *data, size_t len, sl_layer_compression comp, int dest_dirfd,
                        const sl_layer_limits *lim, sl_layer_stats *st, sl_error *e)
{
    mem_src m = {data, len};
    return sl_layer_unpack(mem_read, &m, comp, dest_dirfd, lim, st, e);
}

typedef struct fd_src {
    int fd;
    char buf[SL_LAYER_READ_CHUNK];
} fd_src;

static ssize_t fd_read(void *ctx, const void **buf)
{
    fd_src *f = ctx;
    ssize_t n;
    do
        n = read(f->fd, f->buf, sizeof(f->buf));
    while (n < 0 && errno == EINTR);
    *buf = f->buf;
    return n;
}

int sl_layer_unpack_fd(int fd, sl_layer_compression comp, int dest_dirfd,
                       const sl_layer_limits *lim, sl_layer_stats *st, sl_error *e)
{
    fd_src *f = malloc(sizeof(*f));
    if (!f)
        return sl_error_set(e, ENOMEM, "unpack layer");
    f->fd = fd;
    int rc = sl_layer_unpack(fd_read, f, comp, dest_dirfd, lim, st, e);
    free(f);
    return rc;
}
