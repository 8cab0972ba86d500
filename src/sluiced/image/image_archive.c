/* Staging of an imported tarball: its members are copied into numbered
 * files of a private directory and hashed on the way, because the JSON that
 * says what they are (index.json, manifest.json) may come after them. Member
 * names are never used as file names, so they cannot escape anything; links
 * between members become aliases resolved by name. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "image_int.h"

#define STAGE_CHUNK 65536

/* ---- string vectors ---- */

int sl_strv_push(sl_strv *sv, const char *s)
{
    char *copy = strdup(s);
    char **nv = copy ? realloc(sv->v, (sv->n + 2) * sizeof(*nv)) : NULL;
    if (!nv) {
        free(copy);
        return -1;
    }
    nv[sv->n++] = copy;
    nv[sv->n] = NULL;
    sv->v = nv;
    return 0;
}

int sl_strv_has(const sl_strv *sv, const char *s)
{
    for (size_t i = 0; i < sv->n; i++)
        if (!strcmp(sv->v[i], s))
            return 1;
    return 0;
}

size_t sl_strv_remove(sl_strv *sv, const char *s)
{
    size_t o = 0, removed = 0;
    for (size_t i = 0; i < sv->n; i++) {
        if (!strcmp(sv->v[i], s)) {
            free(sv->v[i]);
            removed++;
        } else {
            sv->v[o++] = sv->v[i];
        }
    }
    sv->n = o;
    if (sv->v)
        sv->v[o] = NULL;
    return removed;
}

void sl_strv_free(sl_strv *sv)
{
    for (size_t i = 0; i < sv->n; i++)
        free(sv->v[i]);
    free(sv->v);
    sv->v = NULL;
    sv->n = 0;
}

int sl_strv_from_json(sl_strv *sv, const json_t *arr)
{
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr))
        return -1;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const json_t *item = json_array_get(arr, i);
        if (!json_is_string(item) || sl_strv_push(sv, json_string_value(item)) < 0)
            return -1;
    }
    return 0;
}

json_t *sl_strv_to_json(const sl_strv *sv)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < sv->n; i++)
        if (json_array_append_new(arr, json_string(sv->v[i])) < 0) {
            json_decref(arr);
            return NULL;
        }
    return arr;
}

/* ---- member names ---- */

/* Resolves target (of a symlink in directory dir) lexically into out,
 * staying inside the archive. Returns 0 or -1. */
static int resolve_link(const char *dir, const char *target, char *out, size_t outlen)
{
    if (target[0] == '/' || strlen(dir) + strlen(target) + 2 > outlen)
        return -1;
    char buf[SL_LAYER_DEFAULT_MAX_PATH * 2 + 2];
    if (strlen(dir) + strlen(target) + 2 > sizeof(buf))
        return -1;
    snprintf(buf, sizeof(buf), "%s%s%s", dir, dir[0] ? "/" : "", target);
    size_t o = 0;
    for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (!strcmp(c, "."))
            continue;
        if (!strcmp(c, "..")) {
            if (o == 0)
                return -1;
            while (o > 0 && out[o - 1] != '/')
                o--;
            o = o > 0 ? o - 1 : 0;
            continue;
        }
        size_t n = strlen(c);
        if (o + n + 2 > outlen)
            return -1;
        if (o)
            out[o++] = '/';
        memcpy(out + o, c, n);
        o += n;
    }
    out[o] = '\0';
    return 0;
}

/* ---- staging ---- */

static sl_staged *stage_add(sl_stage *st, const char *path, sl_error *e)
{
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 32;
        sl_staged *nm = realloc(st->m, cap * sizeof(*nm));
        if (!nm)
            return sl_error_set(e, ENOMEM, "stage %s", path), NULL;
        st->m = nm;
        st->cap = cap;
    }
    sl_staged *m = &st->m[st->n];
    memset(m, 0, sizeof(*m));
    if (!(m->path = strdup(path)))
        return sl_error_set(e, ENOMEM, "stage %s", path), NULL;
    m->no = (unsigned)st->n++;
    return m;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Publishes how far into the file the reading is (the raw bytes libarchive
 * consumed, whatever the compression). */
static void note_read(struct archive *a, const sl_stage *st)
{
    la_int64_t n = archive_filter_bytes(a, -1);
    if (st->bytes_read && n > 0)
        atomic_store_explicit(st->bytes_read, (uint64_t)n, memory_order_relaxed);
}

/* Copies the current member's data into fd, hashing it. */
static int copy_member(struct archive *a, int fd, sl_staged *m, const sl_stage *st,
                       const atomic_int *cancel, sl_error *e)
{
    EVP_MD_CTX *sha = EVP_MD_CTX_new();
    SL_AUTOFREE char *buf = malloc(STAGE_CHUNK);
    if (!sha || !buf || !EVP_DigestInit_ex(sha, EVP_sha256(), NULL)) {
        EVP_MD_CTX_free(sha);
        return sl_error_set(e, ENOMEM, "stage %s", m->path);
    }
    int rc = 0;
    for (;;) {
        if (cancel && atomic_load(cancel)) {
            rc = sl_error_set(e, ECANCELED, "stage %s", m->path);
            break;
        }
        la_ssize_t n = archive_read_data(a, buf, STAGE_CHUNK);
        if (n == 0)
            break;
        if (n < 0 || write_all(fd, buf, (size_t)n) < 0) {
            rc = n < 0 ? sl_error_set(e, EIO, "%s: %s", m->path, archive_error_string(a))
                       : sl_error_set(e, errno, "stage %s", m->path);
            break;
        }
        EVP_DigestUpdate(sha, buf, (size_t)n);
        m->size += (uint64_t)n;
        note_read(a, st);
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_DigestFinal_ex(sha, md, &mdlen);
    EVP_MD_CTX_free(sha);
    sl_digest_format(md, m->digest);
    return rc;
}

static int stage_file(struct archive *a, struct archive_entry *ent, const char *path,
                      const sl_image_limits *lim, const atomic_int *cancel, sl_stage *st,
                      sl_error *e)
{
    la_int64_t size = archive_entry_size(ent);
    uint64_t left = lim->max_archive_bytes - st->bytes;
    if (size < 0 || (uint64_t)size > left)
        return sl_error_set(e, EFBIG, "%s: declares %lld bytes, over the %llu bytes left", path,
                            (long long)size, (unsigned long long)left);
    st->bytes += (uint64_t)size;
    sl_staged *m = stage_add(st, path, e);
    if (!m)
        return -1;
    char name[32];
    snprintf(name, sizeof(name), "%u", m->no);
    SL_AUTOCLOSE int fd =
        openat(st->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return sl_error_set(e, errno, "stage %s", path);
    if (copy_member(a, fd, m, st, cancel, e) < 0)
        return -1;
    if (m->size != (uint64_t)size)
        return sl_error_set(e, EIO, "%s: %llu bytes instead of %lld", path,
                            (unsigned long long)m->size, (long long)size);
    return 0;
}

static int stage_alias(const char *path, const char *target, int symlink, sl_stage *st, sl_error *e)
{
    char resolved[SL_LAYER_DEFAULT_MAX_PATH + 1];
    int rc;
    if (symlink) {
        SL_AUTOFREE char *dir = strdup(path);
        if (!dir)
            return sl_error_set(e, ENOMEM, "stage %s", path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            dir[0] = '\0';
        rc = resolve_link(dir, target, resolved, sizeof(resolved));
    } else {
        rc = resolve_link("", target, resolved, sizeof(resolved));
    }
    if (rc < 0)
        return sl_error_set(e, EINVAL, "%s: link target %.200s leaves the archive", path, target);
    sl_staged *m = stage_add(st, path, e);
    if (!m || !(m->alias = strdup(resolved)))
        return sl_error_set(e, ENOMEM, "stage %s", path);
    return 0;
}

static int stage_entry(struct archive *a, struct archive_entry *ent, const sl_image_limits *lim,
                       const atomic_int *cancel, sl_stage *st, sl_error *e)
{
    char path[SL_LAYER_DEFAULT_MAX_PATH + 1];
    const char *name = archive_entry_pathname(ent);
    if (!name)
        name = archive_entry_pathname_utf8(ent);
    if (!name)
        return sl_error_set(e, EINVAL, "archive member without a usable name");
    size_t max = lim->max_path < sizeof(path) ? lim->max_path : sizeof(path);
    if (sl_layer_path_clean(name, max, path, sizeof(path), e) < 0)
        return sl_error_wrap(e, "archive member");
    const char *hl = archive_entry_hardlink(ent);
    if (hl)
        return stage_alias(path, hl, 0, st, e);
    switch (archive_entry_filetype(ent)) {
    case AE_IFREG:
        return stage_file(a, ent, path, lim, cancel, st, e);
    case AE_IFLNK:
        return archive_entry_symlink(ent)
                   ? stage_alias(path, archive_entry_symlink(ent), 1, st, e)
                   : sl_error_set(e, EINVAL, "%s: symlink without a target", path);
    default: /* directories and anything else carry nothing we read */
        return 0;
    }
}

static struct archive *open_outer(const char *path, sl_error *e)
{
    struct archive *a = archive_read_new();
    if (!a)
        return sl_error_set(e, ENOMEM, "read %s", path), NULL;
    /* built-in decompressors only (ARCHIVE_WARN: an external program) */
    if (archive_read_support_filter_gzip(a) != ARCHIVE_OK ||
        archive_read_support_filter_zstd(a) != ARCHIVE_OK) {
        archive_read_free(a);
        return sl_error_set(e, ENOTSUP, "read %s: no built-in gzip/zstd", path), NULL;
    }
    archive_read_support_format_tar(a);
    if (archive_read_open_filename(a, path, STAGE_CHUNK) != ARCHIVE_OK) {
        int err = archive_errno(a);
        sl_error_set(e, err > 0 ? err : EIO, "open %s: %s", path, archive_error_string(a));
        archive_read_free(a);
        return NULL;
    }
    return a;
}

int sl_stage_archive(const char *path, int stage_dirfd, const sl_image_limits *lim,
                     const atomic_int *cancel, _Atomic uint64_t *bytes_read, sl_stage *st,
                     sl_error *e)
{
    memset(st, 0, sizeof(*st));
    st->dirfd = stage_dirfd;
    st->bytes_read = bytes_read;
    struct archive *a = open_outer(path, e);
    if (!a)
        return -1;
    struct archive_entry *ent;
    int rc = 0, r;
    uint64_t count = 0;
    while (rc == 0 && (r = archive_read_next_header(a, &ent)) != ARCHIVE_EOF) {
        if (r < ARCHIVE_WARN)
            rc = sl_error_set(e, EIO, "%s", archive_error_string(a));
        else if (++count > lim->max_archive_entries)
            rc = sl_error_set(e, EFBIG, "over %llu members",
                              (unsigned long long)lim->max_archive_entries);
        else
            rc = stage_entry(a, ent, lim, cancel, st, e);
        note_read(a, st);
    }
    archive_read_free(a);
    return rc < 0 ? sl_error_wrap(e, "read %s", path) : 0;
}

const sl_staged *sl_stage_find(const sl_stage *st, const char *path)
{
    char want[SL_LAYER_DEFAULT_MAX_PATH + 1];
    if (sl_layer_path_clean(path, sizeof(want), want, sizeof(want), NULL) < 0)
        return NULL;
    for (int hop = 0; hop <= SL_STAGE_MAX_ALIAS_HOPS; hop++) {
        const sl_staged *m = NULL;
        for (size_t i = st->n; i-- > 0;) /* a later member replaces an earlier one */
            if (!strcmp(st->m[i].path, want)) {
                m = &st->m[i];
                break;
            }
        if (!m || !m->alias)
            return m;
        if (strlen(m->alias) >= sizeof(want))
            return NULL;
        strcpy(want, m->alias);
    }
    return NULL;
}

int sl_stage_open(const sl_stage *st, const sl_staged *m, sl_error *e)
{
    char name[32];
    snprintf(name, sizeof(name), "%u", m->no);
    int fd = openat(st->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return sl_error_set(e, errno, "open staged %s", m->path);
    return fd;
}

int sl_stage_json(const sl_stage *st, const sl_staged *m, json_t **out, char **raw, size_t *rawlen,
                  sl_error *e)
{
    if (m->size > SL_IMAGE_MAX_JSON)
        return sl_error_set(e, EFBIG, "%s: over %u bytes", m->path, SL_IMAGE_MAX_JSON);
    SL_AUTOCLOSE int fd = sl_stage_open(st, m, e);
    if (fd < 0)
        return -1;
    char *buf = malloc(m->size + 1);
    if (!buf)
        return sl_error_set(e, ENOMEM, "read %s", m->path);
    ssize_t n = pread(fd, buf, m->size, 0);
    if (n < 0 || (uint64_t)n != m->size) {
        free(buf);
        return sl_error_set(e, n < 0 ? errno : EIO, "read %s", m->path);
    }
    json_error_t je;
    *out = json_loadb(buf, m->size, JSON_REJECT_DUPLICATES, &je);
    if (!*out) {
        free(buf);
        return sl_error_set(e, EINVAL, "%s: invalid JSON: %s", m->path, je.text);
    }
    if (raw) {
        *raw = buf;
        *rawlen = m->size;
    } else {
        free(buf);
    }
    return 0;
}

void sl_stage_fini(sl_stage *st)
{
    for (size_t i = 0; i < st->n; i++) {
        free(st->m[i].path);
        free(st->m[i].alias);
    }
    free(st->m);
    memset(st, 0, sizeof(*st));
    st->dirfd = -1;
}
