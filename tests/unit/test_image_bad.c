/* The image store against hostile or broken tarballs: a clear error,
 * and the store unchanged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "image_fixture.h"

/* ---- hostile or broken tarballs: a clear error, and the store unchanged ---- */

static void expect_fail(fx *f, image_writer w, const opts *o, const char *needle,
                        const char *needle2)
{
    built b;
    w(wpath(f, "bad.tar"), o, &b);
    char *before = snapshot(f);
    sl_error e = {0};
    char **ids = (char **)1;
    assert_int_equal(sl_image_store_import(f->s, wpath(f, "bad.tar"), NULL, &ids, &e), -1);
    assert_null(ids);
    if (!strstr(e.msg, needle) || (needle2 && !strstr(e.msg, needle2)))
        fail_msg("message \"%s\" lacks \"%s\"/\"%s\"", e.msg, needle, needle2 ? needle2 : "");
    char *after = snapshot(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

static void test_reject_digests(void **state)
{
    fx *f = *state;
    built good;
    opts base = {.name = "localhost/base:1", .cmd = "base"};
    write_oci(wpath(f, "base.tar"), &base, &good);
    import_ok(f, wpath(f, "base.tar"), NULL, 1); /* unchanged means: this stays */
    expect_fail(f, write_oci, &(opts){.name = "localhost/e:1", .tamper_layer = 1},
                "layer 2 sha256:", "digest mismatch");
    expect_fail(f, write_oci, &(opts){.name = "localhost/e:1", .tamper_config = 1}, "config",
                "digest mismatch");
    expect_fail(f, write_docker, &(opts){.tamper_config = 1}, "config", "digest mismatch");
    expect_fail(f, write_oci, &(opts){.name = "localhost/e:1", .wrong_diff_id = 1, .cmd = "w"},
                "layer 2/2", "diff_id mismatch");
    expect_fail(f, write_docker, &(opts){.wrong_diff_id = 1}, "layer 2/2", "diff_id mismatch");
    find_ok(f, "localhost/base:1");
}

static void test_reject_evil_layers(void **state)
{
    fx *f = *state;
    static const tar_ent dotdot[] = {{.path = "../../escaped", .type = AE_IFREG, .data = "x"}};
    static const tar_ent absolute[] = {{.path = "/tmp/sl-escaped", .type = AE_IFREG, .data = "x"}};
    static const tar_ent through[] = {{.path = "l", .type = AE_IFLNK, .link = "/tmp"},
                                      {.path = "l/sl-escaped", .type = AE_IFREG, .data = "x"}};
    static const tar_ent hard[] = {{.path = "h", .link = "../../../etc/passwd"}};
    static const struct {
        const tar_ent *l;
        size_t n;
        const char *msg;
    } cases[] = {{dotdot, 1, "\"..\" component"},
                 {absolute, 1, "absolute path"},
                 {through, 2, "l is a symlink"},
                 {hard, 1, "hard link"}};
    for (size_t i = 0; i < N(cases); i++) {
        opts o = {.name = "localhost/evil:1", .l2 = cases[i].l, .nl2 = cases[i].n};
        expect_fail(f, write_oci, &o, "layer 2/2", cases[i].msg);
        expect_fail(f, write_docker, &o, "layer 2/2", cases[i].msg);
    }
    assert_int_equal(access("/tmp/sl-escaped", F_OK), -1);
    assert_int_equal(access("/tmp/sl-escaped", F_OK), -1);
}

static void write_file(const char *path, const void *data, size_t len)
{
    assert_int_equal(sl_write_file_atomic(path, data, len, 0600, NULL), 0);
}

static void test_reject_archives(void **state)
{
    fx *f = *state;
    sl_error e = {0};
    char *before = snapshot(f);
    /* truncated: every prefix of a good tarball fails cleanly */
    built b;
    write_oci(wpath(f, "good.tar"), &(opts){.name = "localhost/t:1"}, &b);
    char *data;
    size_t len;
    assert_int_equal(sl_read_file(wpath(f, "good.tar"), 1 << 24, &data, &len, NULL), 0);
    for (size_t cut = 0; cut + 1024 < len; cut += len / 9) {
        write_file(wpath(f, "cut.tar"), data, cut);
        if (sl_image_store_import(f->s, wpath(f, "cut.tar"), NULL, NULL, &e) != -1)
            fail_msg("cut at %zu accepted", cut);
        assert_non_null(strstr(e.msg, "cut.tar"));
    }
    free(data);
    /* a member declaring a huge size */
    unsigned char h[2048] = {0};
    tar_raw_header(h, "index.json", '0', "77777777777");
    write_file(wpath(f, "huge.tar"), h, sizeof(h));
    sl_image_limits lim;
    sl_image_limits_default(&lim);
    lim.max_archive_bytes = 1 << 30;
    sl_image_store_close(f->s);
    f->s = sl_image_store_open(f->root, &lim, &e);
    assert_non_null(f->s);
    assert_int_equal(sl_image_store_import(f->s, wpath(f, "huge.tar"), NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "index.json: declares 8589934591 bytes"));
    /* a member path escaping, and a tar that is no image */
    member m[1] = {{.name = "../index.json", .data = (unsigned char *)"{}", .len = 2}};
    write_outer(wpath(f, "esc.tar"), m, 1);
    assert_int_equal(sl_image_store_import(f->s, wpath(f, "esc.tar"), NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "\"..\""));
    strcpy(m[0].name, "hello.txt");
    write_outer(wpath(f, "none.tar"), m, 1);
    assert_int_equal(sl_image_store_import(f->s, wpath(f, "none.tar"), NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "neither an OCI layout"));
    assert_int_equal(sl_image_store_import(f->s, wpath(f, "missing.tar"), NULL, NULL, &e), -1);
    assert_int_equal(e.errnum, ENOENT);
    char *after = snapshot(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

/* Small limits: the image's unpacked size and the layer entry count. */
static void test_import_limits(void **state)
{
    fx *f = *state;
    sl_image_limits lim;
    sl_image_limits_default(&lim);
    lim.max_image_bytes = 4000; /* layer 1's tar alone is bigger */
    sl_image_store_close(f->s);
    sl_error e = {0};
    f->s = sl_image_store_open(f->root, &lim, &e);
    assert_non_null(f->s);
    expect_fail(f, write_oci, &(opts){.name = "localhost/big:1"}, "layer 1/2",
                "bytes uncompressed");
    lim.max_image_bytes = 1 << 20;
    lim.max_layer_entries = 5;
    sl_image_store_close(f->s);
    f->s = sl_image_store_open(f->root, &lim, &e);
    expect_fail(f, write_docker, &(opts){0}, "layer 1/2", "over 5 entries");
    lim.max_layers = 1;
    sl_image_store_close(f->s);
    f->s = sl_image_store_open(f->root, &lim, &e);
    expect_fail(f, write_oci, &(opts){.name = "localhost/big:1"}, "2 layers, over 1", NULL);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_reject_digests),
        T(test_reject_evil_layers),
        T(test_reject_archives),
        T(test_import_limits),
    };
    if (image_tests_skipped())
        return 0;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
