/* Building tar archives in tests (tar_build.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <archive_entry.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "tar_build.h"

la_ssize_t tar_buf_write(struct archive *a, void *arg, const void *data, size_t n)
{
    (void)a;
    tar_buf *b = arg;
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return (la_ssize_t)n;
}

void tar_add_bytes(struct archive *a, const tar_ent *x, const void *data, size_t size)
{
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, x->path);
    archive_entry_set_filetype(e, x->type ? x->type : AE_IFREG);
    if (!x->type && x->link)
        archive_entry_set_hardlink(e, x->link);
    if (x->type == AE_IFLNK)
        archive_entry_set_symlink(e, x->link);
    archive_entry_set_perm(e, x->mode ? x->mode : 0644);
    archive_entry_set_uid(e, x->uid);
    archive_entry_set_gid(e, x->gid);
    archive_entry_set_mtime(e, x->mtime ? x->mtime : 1000000, 0);
    archive_entry_set_rdev(e, x->rdev);
    archive_entry_set_size(e, size);
    if (x->xattr)
        archive_entry_xattr_add_entry(e, x->xattr, "v", 1);
    assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
    if (size)
        assert_int_equal(archive_write_data(a, data, size), (la_ssize_t)size);
    archive_entry_free(e);
}

void tar_add(struct archive *a, const tar_ent *x)
{
    int hard = !x->type && x->link;
    tar_add_bytes(a, x, x->data, hard || !x->data ? 0 : strlen(x->data));
}

tar_buf tar_make(const tar_ent *ents, size_t n, int gzip)
{
    tar_buf b = {0};
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    if (gzip)
        archive_write_add_filter_gzip(a);
    archive_write_set_bytes_in_last_block(a, 1);
    assert_int_equal(archive_write_open(a, &b, NULL, tar_buf_write, NULL), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++)
        tar_add(a, &ents[i]);
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    return b;
}

void tar_sha256(const void *data, size_t len, char out[SL_DIGEST_STR_LEN])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen;
    EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
    sl_digest_format(md, out);
}

void tar_raw_header(unsigned char h[512], const char *name, char type, const char *size_octal)
{
    memset(h, 0, 512);
    snprintf((char *)h, 100, "%s", name);
    memcpy(h + 100, "0000644", 8);
    memcpy(h + 108, "0000000", 8);
    memcpy(h + 116, "0000000", 8);
    snprintf((char *)h + 124, 12, "%s", size_octal);
    memcpy(h + 136, "00000000000", 12);
    h[156] = (unsigned char)type;
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
}

void tar_assert_file(const char *path, const char *content)
{
    char *data;
    size_t len;
    if (sl_read_file(path, 1 << 20, &data, &len, NULL) != 0)
        fail_msg("read %s", path);
    assert_int_equal(len, strlen(content));
    assert_memory_equal(data, content, len);
    free(data);
}

size_t tar_shell_count(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = 0;
    assert_int_equal(fscanf(p, "%zu", &n), 1);
    pclose(p);
    return n;
}
