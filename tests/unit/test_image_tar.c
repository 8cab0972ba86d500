#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fsutil.h"
#include "image/image_ref.h"
#include "image/image_tar.h"
#include "tar_build.h"

/* ---- a scratch layer directory per test ---- */

typedef struct fx {
    char dir[64];
    int fd;
    char outside[64]; /* a directory next to it: nothing may land there */
} fx;

static int fx_setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    strcpy(f->dir, "/tmp/sl-layer-XXXXXX");
    strcpy(f->outside, "/tmp/sl-outside-XXXXXX");
    if (!mkdtemp(f->dir) || !mkdtemp(f->outside))
        return -1;
    f->fd = open(f->dir, O_RDONLY | O_DIRECTORY);
    *state = f;
    return f->fd < 0 ? -1 : 0;
}

static int fx_teardown(void **state)
{
    fx *f = *state;
    close(f->fd);
    sl_rm_rf(f->dir, NULL);
    sl_rm_rf(f->outside, NULL);
    free(f);
    return 0;
}

static char *at(const fx *f, const char *rel)
{
    static char p[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof(p[k]), "%s/%s", f->dir, rel);
    return p[k];
}

static int is_whiteout(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0);
}

static size_t count_entries(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "find %s -mindepth 1 | wc -l", dir);
    return tar_shell_count(cmd);
}

static int unpack(fx *f, const tar_buf *b, const sl_layer_limits *lim, sl_layer_stats *st,
                  sl_error *e)
{
    return sl_layer_unpack_mem(b->p, b->len, SL_LAYER_AUTO, f->fd, lim, st, e);
}

/* ---- path normalisation ---- */

static void test_path_clean(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } ok[] = {{"./a/b", "a/b"},
              {"a//b/", "a/b"},
              {".", ""},
              {"./", ""},
              {"a/./b/.", "a/b"},
              {"..a/b..", "..a/b.."},
              {"a/.wh..wh..opq", "a/.wh..wh..opq"}};
    char out[64];
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_int_equal(sl_layer_path_clean(ok[i].in, 64, out, sizeof(out), NULL), 0);
        assert_string_equal(out, ok[i].out);
    }
    static const char *bad[] = {"/etc/passwd", "..", "../x", "a/../../x", "a/..", "//x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sl_error e = {0};
        assert_int_equal(sl_layer_path_clean(bad[i], 64, out, sizeof(out), &e), -1);
        assert_int_equal(e.errnum, EINVAL);
    }
    char longname[300];
    memset(longname, 'n', 256);
    longname[256] = '\0';
    assert_int_equal(sl_layer_path_clean(longname, 4096, out, sizeof(out), NULL), -1);
    assert_int_equal(sl_layer_path_clean("aaaa/bbbb/cccc", 10, out, sizeof(out), NULL), -1);
    assert_int_equal(sl_layer_path_clean("aaaa/bbbb", 10, out, sizeof(out), NULL), 0);
}

/* ---- the sample layer: every kind of entry ---- */

static const tar_ent sample[] = {
    {.path = "./", .type = AE_IFDIR, .mode = 0755, .mtime = 1111},
    {.path = "bin/", .type = AE_IFDIR, .mode = 0755, .mtime = 2222},
    {.path = "bin/tool",
     .type = AE_IFREG,
     .mode = 04755,
     .data = "#!tool\n",
     .uid = 1000,
     .gid = 2000,
     .mtime = 3333},
    {.path = "bin/sh", .type = AE_IFLNK, .link = "tool", .mtime = 4444},
    {.path = "bin/tool2", .link = "bin/tool"},
    {.path = "etc/deep/conf", .type = AE_IFREG, .mode = 0600, .data = "k=v\n"},
    {.path = "etc/.wh.removed", .type = AE_IFREG},
    {.path = "var/.wh..wh..opq", .type = AE_IFREG},
    {.path = "var/keep", .type = AE_IFREG, .data = "kept"},
    {.path = ".wh..wh.plnk", .type = AE_IFDIR},
    {.path = "dev/null", .type = AE_IFCHR, .mode = 0666, .rdev = 0x103},
    {.path = "dev/wh", .type = AE_IFCHR, .rdev = 0},
    {.path = "run/fifo", .type = AE_IFIFO, .mode = 0640},
    {.path = "tmp/", .type = AE_IFDIR, .mode = 01777},
    {.path = "x/user", .type = AE_IFREG, .data = "u", .xattr = "user.sluice"},
    {.path = "x/trusted", .type = AE_IFREG, .data = "t", .xattr = "trusted.overlay.redirect"},
    {.path = "x/uov", .type = AE_IFREG, .data = "o", .xattr = "user.overlay.origin"},
};
#define NSAMPLE (sizeof(sample) / sizeof(sample[0]))

static void check_sample_tree(const fx *f)
{
    struct stat st;
    assert_int_equal(lstat(at(f, "bin/tool"), &st), 0);
    assert_int_equal(st.st_mode & 07777, 04755); /* setuid kept after chown */
    assert_int_equal(st.st_uid, 1000);
    assert_int_equal(st.st_gid, 2000);
    assert_int_equal(st.st_mtime, 3333);
    assert_int_equal(st.st_nlink, 2);
    struct stat st2;
    assert_int_equal(lstat(at(f, "bin/tool2"), &st2), 0);
    assert_int_equal(st2.st_ino, st.st_ino);
    tar_assert_file(at(f, "bin/tool"), "#!tool\n");
    char target[64] = {0};
    assert_int_equal(readlink(at(f, "bin/sh"), target, sizeof(target) - 1), 4);
    assert_string_equal(target, "tool");
    assert_int_equal(lstat(at(f, "bin/sh"), &st), 0);
    assert_int_equal(st.st_mtime, 4444);
    tar_assert_file(at(f, "etc/deep/conf"), "k=v\n");
    assert_true(is_whiteout(at(f, "etc/removed")));
    assert_int_equal(access(at(f, "etc/.wh.removed"), F_OK), -1);
    char v[8] = {0};
    assert_int_equal(getxattr(at(f, "var"), "trusted.overlay.opaque", v, sizeof(v)), 1);
    assert_string_equal(v, "y");
    assert_int_equal(access(at(f, "var/.wh..wh..opq"), F_OK), -1);
    tar_assert_file(at(f, "var/keep"), "kept");
    assert_int_equal(access(at(f, ".wh..wh.plnk"), F_OK), -1);
    assert_int_equal(access(at(f, "dev/null"), F_OK), -1); /* not created */
    assert_true(is_whiteout(at(f, "dev/wh")));
    assert_int_equal(lstat(at(f, "run/fifo"), &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0640);
    assert_int_equal(lstat(at(f, "tmp"), &st), 0);
    assert_int_equal(st.st_mode & 07777, 01777);
    assert_int_equal(lstat(at(f, "bin"), &st), 0);
    assert_int_equal(st.st_mtime, 2222); /* set after its children */
    assert_int_equal(fstat(f->fd, &st), 0);
    assert_int_equal(st.st_mtime, 1111);
    assert_int_equal(st.st_mode & 07777, 0755);
    assert_int_equal(getxattr(at(f, "x/trusted"), "trusted.overlay.redirect", v, sizeof(v)), -1);
    assert_int_equal(getxattr(at(f, "x/uov"), "user.overlay.origin", v, sizeof(v)), -1);
    /* user.* is optional (the file system may lack it) but never wrong */
    ssize_t n = getxattr(at(f, "x/user"), "user.sluice", v, sizeof(v));
    assert_true(n == -1 || (n == 1 && v[0] == 'v'));
}

static void test_sample_layer(void **state)
{
    fx *f = *state;
    if (geteuid() != 0)
        skip(); /* chown and mknod need root */
    tar_buf b = tar_make(sample, NSAMPLE, 0);
    sl_layer_stats st;
    sl_error e = {0};
    assert_int_equal(unpack(f, &b, NULL, &st, &e), 0);
    check_sample_tree(f);
    char want[SL_DIGEST_STR_LEN];
    tar_sha256(b.p, b.len, want);
    assert_string_equal(st.diff_id, want);
    assert_int_equal(st.stream_bytes, b.len);
    assert_int_equal(st.entries, NSAMPLE);
    assert_int_equal(st.whiteouts, 3); /* etc/removed, var opaque, dev/wh */
    assert_int_equal(st.skipped, 2);   /* aufs metadata, dev/null */
    assert_int_equal(st.file_bytes, 7 + 4 + 4 + 3);
    free(b.p);
}

/* The diff id is over the uncompressed stream, whatever the compression. */
static void test_gzip_layer(void **state)
{
    fx *f = *state;
    if (geteuid() != 0)
        skip();
    tar_buf plain = tar_make(sample, NSAMPLE, 0), gz = tar_make(sample, NSAMPLE, 1);
    assert_int_equal(gz.p[0], 0x1f);
    char want[SL_DIGEST_STR_LEN];
    tar_sha256(plain.p, plain.len, want);
    sl_layer_stats st;
    assert_int_equal(sl_layer_unpack_mem(gz.p, gz.len, SL_LAYER_GZIP, f->fd, NULL, &st, NULL), 0);
    assert_string_equal(st.diff_id, want);
    check_sample_tree(f);
    /* a gzip blob declared uncompressed is not silently decompressed */
    sl_error e = {0};
    int fd2 = open(f->outside, O_RDONLY | O_DIRECTORY);
    assert_int_equal(sl_layer_unpack_mem(gz.p, gz.len, SL_LAYER_NONE, fd2, NULL, &st, &e), -1);
    close(fd2);
    free(plain.p);
    free(gz.p);
}

/* Reads in chunks given by a split list: every split must give the same. */
typedef struct chunker {
    const unsigned char *p;
    size_t len, off, step, cut; /* step 0: two pieces at cut */
} chunker;

static ssize_t chunk_read(void *ctx, const void **out)
{
    chunker *c = ctx;
    size_t n = c->len - c->off;
    if (c->step)
        n = n < c->step ? n : c->step;
    else if (c->off < c->cut)
        n = c->cut - c->off;
    *out = c->p + c->off;
    c->off += n;
    return (ssize_t)n;
}

static const tar_ent small[] = {
    {.path = "d/", .type = AE_IFDIR, .mode = 0755},
    {.path = "d/f", .type = AE_IFREG, .data = "hello world"},
    {.path = "d/.wh.g", .type = AE_IFREG},
    {.path = "l", .type = AE_IFLNK, .link = "d/f"},
};

static void unpack_split(fx *f, const tar_buf *b, size_t step, size_t cut, const char *want)
{
    sl_rm_rf(f->outside, NULL);
    assert_int_equal(mkdir(f->outside, 0700), 0);
    int fd = open(f->outside, O_RDONLY | O_DIRECTORY);
    chunker c = {b->p, b->len, 0, step, cut};
    sl_layer_stats st;
    sl_error e = {0};
    int rc = sl_layer_unpack(chunk_read, &c, SL_LAYER_AUTO, fd, NULL, &st, &e);
    if (rc != 0)
        fail_msg("split %zu/%zu: %s", step, cut, e.msg);
    assert_string_equal(st.diff_id, want);
    char p[128];
    snprintf(p, sizeof(p), "%s/d/f", f->outside);
    tar_assert_file(p, "hello world");
    close(fd);
}

static void test_every_split(void **state)
{
    fx *f = *state;
    if (geteuid() != 0)
        skip();
    for (int gz = 0; gz <= 1; gz++) {
        tar_buf plain = tar_make(small, 4, 0), b = tar_make(small, 4, gz);
        char want[SL_DIGEST_STR_LEN];
        tar_sha256(plain.p, plain.len, want);
        unpack_split(f, &b, 1, 0, want); /* byte by byte */
        for (size_t cut = 0; cut <= b.len; cut += gz ? 1 : 7)
            unpack_split(f, &b, 0, cut, want);
        free(plain.p);
        free(b.p);
    }
}

static void test_fd_source(void **state)
{
    fx *f = *state;
    if (geteuid() != 0)
        skip();
    tar_buf b = tar_make(small, 4, 1);
    char path[128];
    snprintf(path, sizeof(path), "%s/layer.tgz", f->outside);
    assert_int_equal(sl_write_file_atomic(path, b.p, b.len, 0600, NULL), 0);
    int fd = open(path, O_RDONLY);
    sl_layer_stats st;
    assert_int_equal(sl_layer_unpack_fd(fd, SL_LAYER_AUTO, f->fd, NULL, &st, NULL), 0);
    close(fd);
    tar_assert_file(at(f, "d/f"), "hello world");
    assert_true(is_whiteout(at(f, "d/g")));
    free(b.p);
}

/* Later entries replace earlier ones, never writing through them. */
static void test_replace(void **state)
{
    fx *f = *state;
    char outside_file[128];
    snprintf(outside_file, sizeof(outside_file), "%s/victim", f->outside);
    assert_int_equal(sl_write_file_atomic(outside_file, "orig", 4, 0644, NULL), 0);
    const tar_ent ents[] = {
        {.path = "s", .type = AE_IFLNK, .link = outside_file},
        {.path = "s", .type = AE_IFREG, .data = "new"},
        {.path = "a", .type = AE_IFREG, .data = "A"},
        {.path = "b", .link = "a"},
        {.path = "b", .type = AE_IFREG, .data = "B"},
        {.path = "d/x", .type = AE_IFREG, .data = "x"},
        {.path = "d", .type = AE_IFREG, .data = "d is a file now"},
        {.path = "e", .type = AE_IFREG, .data = "e"},
        {.path = "e/", .type = AE_IFDIR, .mode = 0700},
        {.path = "e/in", .type = AE_IFREG, .data = "in"},
        {.path = "a", .link = "a"},
    };
    tar_buf b = tar_make(ents, N(ents), 0);
    sl_error e = {0};
    assert_int_equal(unpack(f, &b, NULL, NULL, &e), 0);
    tar_assert_file(outside_file, "orig");
    tar_assert_file(at(f, "s"), "new");
    tar_assert_file(at(f, "a"), "A");
    tar_assert_file(at(f, "b"), "B");
    tar_assert_file(at(f, "d"), "d is a file now");
    tar_assert_file(at(f, "e/in"), "in");
    free(b.p);
}

/* ---- hostile layers: each fails with a message and writes nothing outside ---- */

static void expect_reject(fx *f, const tar_ent *ents, size_t n, const char *needle)
{
    tar_buf b = tar_make(ents, n, 0);
    sl_error e = {0};
    assert_int_equal(unpack(f, &b, NULL, NULL, &e), -1);
    if (!strstr(e.msg, needle))
        fail_msg("message \"%s\" lacks \"%s\"", e.msg, needle);
    assert_int_equal(count_entries(f->outside), 0);
    free(b.p);
}

static void test_reject_dotdot(void **state)
{
    fx *f = *state;
    char rel[128];
    snprintf(rel, sizeof(rel), "../%s/evil", strrchr(f->outside, '/') + 1);
    const tar_ent ents[] = {{.path = "ok", .type = AE_IFREG, .data = "1"},
                            {.path = rel, .type = AE_IFREG, .data = "evil"}};
    expect_reject(f, ents, 2, "\"..\" component");
    const tar_ent ents2[] = {{.path = "a/../../x", .type = AE_IFDIR}};
    expect_reject(f, ents2, 1, "\"..\"");
}

static void test_reject_absolute(void **state)
{
    fx *f = *state;
    char abs[128];
    snprintf(abs, sizeof(abs), "%s/evil", f->outside);
    const tar_ent ents[] = {{.path = abs, .type = AE_IFREG, .data = "evil"}};
    expect_reject(f, ents, 1, "absolute path");
}

static void test_reject_through_symlink(void **state)
{
    fx *f = *state;
    const tar_ent ents[] = {{.path = "link", .type = AE_IFLNK, .link = f->outside},
                            {.path = "link/evil", .type = AE_IFREG, .data = "evil"}};
    expect_reject(f, ents, 2, "link/evil: link is a symlink or not a directory");
    const tar_ent ents2[] = {{.path = "up", .type = AE_IFLNK, .link = ".."},
                             {.path = "up/x", .type = AE_IFREG, .data = "evil"}};
    expect_reject(f, ents2, 2, "symlink");
    const tar_ent ents3[] = {{.path = "d", .type = AE_IFLNK, .link = f->outside},
                             {.path = "d/.wh..wh..opq", .type = AE_IFREG}};
    expect_reject(f, ents3, 2, "symlink");
}

static void test_reject_hardlinks(void **state)
{
    fx *f = *state;
    char victim[128];
    snprintf(victim, sizeof(victim), "%s/victim", f->outside);
    sl_write_file_atomic(victim, "v", 1, 0644, NULL);
    const tar_ent out1[] = {{.path = "h", .link = victim}};
    tar_buf b = tar_make(out1, 1, 0);
    sl_error e = {0};
    assert_int_equal(unpack(f, &b, NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "absolute path"));
    free(b.p);
    struct stat st;
    assert_int_equal(stat(victim, &st), 0);
    assert_int_equal(st.st_nlink, 1);
    char rel[128];
    snprintf(rel, sizeof(rel), "../%s/victim", strrchr(f->outside, '/') + 1);
    const tar_ent out2[] = {{.path = "h", .link = rel}};
    b = tar_make(out2, 1, 0);
    assert_int_equal(unpack(f, &b, NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "hard link"));
    free(b.p);
    const tar_ent out3[] = {{.path = "s", .type = AE_IFLNK, .link = f->outside},
                            {.path = "h", .link = "s/victim"}};
    b = tar_make(out3, 2, 0);
    assert_int_equal(unpack(f, &b, NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "symlink"));
    free(b.p);
    const tar_ent missing[] = {{.path = "h", .link = "nowhere"}};
    b = tar_make(missing, 1, 0);
    assert_int_equal(unpack(f, &b, NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "not an earlier entry"));
    free(b.p);
    assert_int_equal(stat(victim, &st), 0);
    assert_int_equal(st.st_nlink, 1);
}

static void test_reject_bad_whiteout(void **state)
{
    fx *f = *state;
    const tar_ent ents[] = {{.path = "a/.wh.", .type = AE_IFREG}};
    expect_reject(f, ents, 1, "bad whiteout name");
    const tar_ent ents2[] = {{.path = "a/.wh...", .type = AE_IFREG}};
    expect_reject(f, ents2, 1, "bad whiteout name");
}

static void test_reject_huge_size(void **state)
{
    fx *f = *state;
    unsigned char t[512 * 4];
    memset(t, 0, sizeof(t));
    tar_raw_header(t, "big", '0', "77777777777"); /* 8 GiB - 1, no data follows */
    sl_layer_limits lim = {1 << 20, 100, 4096};
    sl_error e = {0};
    assert_int_equal(sl_layer_unpack_mem(t, sizeof(t), SL_LAYER_NONE, f->fd, &lim, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "big: declares 8589934591 bytes"));
    assert_int_equal(e.errnum, EFBIG);
    /* within the limit but the data is not there: truncated */
    tar_raw_header(t, "big", '0', "00000100000");
    assert_int_equal(sl_layer_unpack_mem(t, sizeof(t), SL_LAYER_NONE, f->fd, NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "big"));
}

static void test_reject_truncated(void **state)
{
    fx *f = *state;
    char data[3000];
    memset(data, 'z', sizeof(data) - 1);
    data[sizeof(data) - 1] = '\0';
    const tar_ent ents[] = {{.path = "f", .type = AE_IFREG, .data = data},
                            {.path = "g", .type = AE_IFREG, .data = "g"}};
    tar_buf b = tar_make(ents, 2, 0);
    for (size_t cut = 1; cut < b.len - 1024; cut += 97) {
        sl_rm_rf(f->dir, NULL);
        mkdir(f->dir, 0700);
        int fd = open(f->dir, O_RDONLY | O_DIRECTORY);
        sl_error e = {0};
        int rc = sl_layer_unpack_mem(b.p, cut, SL_LAYER_NONE, fd, NULL, NULL, &e);
        close(fd);
        if (rc != -1)
            fail_msg("cut at %zu accepted", cut);
        assert_true(e.msg[0] != '\0');
    }
    free(b.p);
}

static void test_limits(void **state)
{
    fx *f = *state;
    const tar_ent three[] = {{.path = "a", .type = AE_IFREG, .data = "1"},
                             {.path = "b", .type = AE_IFREG, .data = "2"},
                             {.path = "c", .type = AE_IFREG, .data = "3"}};
    tar_buf b = tar_make(three, 3, 0);
    sl_layer_limits lim = {1 << 20, 2, 4096};
    sl_error e = {0};
    assert_int_equal(unpack(f, &b, &lim, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "over 2 entries"));
    lim = (sl_layer_limits){2048, 100, 4096}; /* the stream is bigger than that */
    assert_int_equal(unpack(f, &b, &lim, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "over 2048 bytes uncompressed"));
    free(b.p);
    const tar_ent deep[] = {{.path = "aaaaaaaaaa/bbbbbbbbbb/cccccccccc", .type = AE_IFREG}};
    b = tar_make(deep, 1, 0);
    lim = (sl_layer_limits){1 << 20, 100, 16};
    assert_int_equal(unpack(f, &b, &lim, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "path over 16 bytes"));
    free(b.p);
    char deeper[2 * 300];
    for (int i = 0; i < 257; i++)
        memcpy(deeper + 2 * i, "a/", 2);
    deeper[2 * 257 - 1] = '\0';
    const tar_ent too_deep[] = {{.path = deeper, .type = AE_IFREG}};
    b = tar_make(too_deep, 1, 0);
    assert_int_equal(unpack(f, &b, NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "over 256 levels deep"));
    free(b.p);
}

/* A gzip bomb: a small blob that inflates past the budget stops early. */
static void test_gzip_bomb(void **state)
{
    fx *f = *state;
    char *zeros = calloc(1, 8 << 20);
    memset(zeros, 'a', (8 << 20) - 1);
    const tar_ent ents[] = {{.path = "bomb", .type = AE_IFREG, .data = zeros}};
    tar_buf b = tar_make(ents, 1, 1);
    free(zeros);
    assert_true(b.len < 100000);
    sl_layer_limits lim = {1 << 20, 100, 4096};
    sl_error e = {0};
    assert_int_equal(unpack(f, &b, &lim, NULL, &e), -1);
    assert_int_equal(e.errnum, EFBIG);
    free(b.p);
}

static void test_garbage(void **state)
{
    fx *f = *state;
    sl_error e = {0};
    const char junk[] = "this is not a tar archive at all, not even close; just words..";
    assert_int_equal(sl_layer_unpack_mem(junk, sizeof(junk), SL_LAYER_AUTO, f->fd, NULL, NULL, &e),
                     -1);
    assert_non_null(strstr(e.msg, "layer tar"));
    /* an empty stream is an empty layer */
    sl_layer_stats st;
    assert_int_equal(sl_layer_unpack_mem("", 0, SL_LAYER_AUTO, f->fd, NULL, &st, &e), 0);
    assert_int_equal(st.entries, 0);
    char want[SL_DIGEST_STR_LEN];
    tar_sha256("", 0, want);
    assert_string_equal(st.diff_id, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_clean),
        cmocka_unit_test_setup_teardown(test_sample_layer, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_gzip_layer, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_every_split, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_fd_source, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_replace, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reject_dotdot, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reject_absolute, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reject_through_symlink, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reject_hardlinks, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reject_bad_whiteout, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reject_huge_size, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reject_truncated, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_limits, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_gzip_bomb, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_garbage, fx_setup, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
