/* The image store after a crash (what an interrupted import or removal
 * leaves), opening errors, and importing a directory of tarballs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "image_fixture.h"

/* ---- crash recovery ---- */

static void touch(const char *root, const char *rel)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    char *dir = strdup(path);
    assert_int_equal(sl_mkdir_p(dirname(dir), 0700, NULL), 0);
    free(dir);
    assert_int_equal(sl_write_file_atomic(path, "junk", 4, 0600, NULL), 0);
}

static void reopen(fx *f)
{
    sl_image_store_close(f->s);
    sl_error e = {0};
    f->s = sl_image_store_open(f->root, NULL, &e);
    if (!f->s)
        fail_msg("reopen: %s", e.msg);
}

static void test_recovery(void **state)
{
    fx *f = *state;
    built b;
    opts o = {.name = "localhost/c:1"};
    write_oci(wpath(f, "c.tar"), &o, &b);
    import_ok(f, wpath(f, "c.tar"), NULL, 1);
    /* what a SIGKILL in the middle of an import or removal leaves */
    touch(f->root, "tmp/import-abc123/0");
    touch(f->root, "tmp/layer-def456/usr/bin/half");
    touch(f->root, "tmp/gc-777777/d/x");
    touch(f->root, "layers/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/f");
    touch(f->root, "blobs/sha256/bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    touch(f->root, "images.json.tmp4242");
    reopen(f);
    const sl_image_recovery *r = sl_image_store_recovery(f->s);
    assert_int_equal(r->tmp_removed, 4);
    assert_int_equal(r->layers_removed, 1);
    assert_int_equal(r->blobs_removed, 1);
    assert_int_equal(r->images_dropped, 0);
    char dir[256];
    snprintf(dir, sizeof(dir), "%s/tmp", f->root);
    assert_int_equal(count_dir(dir), 0);
    check_layers(find_ok(f, "localhost/c:1"), &b);
    /* an image whose layer vanished is dropped, and what only it used goes */
    snprintf(dir, sizeof(dir), "%s/layers/%s", f->root, b.d2 + 7);
    assert_int_equal(sl_rm_rf(dir, NULL), 0);
    reopen(f);
    r = sl_image_store_recovery(f->s);
    assert_int_equal(r->images_dropped, 1);
    assert_int_equal(r->layers_removed, 1);
    assert_int_equal(r->blobs_removed, 2);
    assert_absent(f, "localhost/c:1");
    reopen(f); /* the index was rewritten: nothing more to do */
    r = sl_image_store_recovery(f->s);
    assert_int_equal(r->images_dropped + r->layers_removed + r->blobs_removed + r->tmp_removed, 0);
}

static void test_open_errors(void **state)
{
    fx *f = *state;
    sl_error e = {0};
    assert_null(sl_image_store_open(f->root, NULL, &e)); /* the first one holds the lock */
    assert_int_equal(e.errnum, EBUSY);
    sl_image_store_close(f->s);
    f->s = NULL;
    touch(f->root, "images.json");
    assert_null(sl_image_store_open(f->root, NULL, &e));
    assert_int_equal(e.errnum, EINVAL);
    assert_non_null(strstr(e.msg, "images.json"));
    char idx[128];
    snprintf(idx, sizeof(idx), "%s/images.json", f->root);
    const char *wrong = "{\"version\":1,\"images\":[{\"id\":\"nope\"}]}";
    assert_int_equal(sl_write_file_atomic(idx, wrong, strlen(wrong), 0600, NULL), 0);
    assert_null(sl_image_store_open(f->root, NULL, &e));
    assert_non_null(strstr(e.msg, "not a valid image index"));
    unlink(idx);
    reopen(f);
}

static void test_import_dir(void **state)
{
    fx *f = *state;
    built b1, b2;
    opts o1 = {.name = "localhost/d:1"};
    opts o2 = {.name = "d:2"};
    char dir[128];
    snprintf(dir, sizeof(dir), "%s/images", f->work);
    assert_int_equal(mkdir(dir, 0700), 0);
    write_oci(wpath(f, "images/a.tar"), &o1, &b1);
    write_docker(wpath(f, "images/b.tar"), &o2, &b2);
    touch(f->work, "images/notes.txt");
    size_t imported = 9, skipped = 9;
    sl_error e = {0};
    assert_int_equal(sl_image_store_import_dir(f->s, dir, &imported, &skipped, &e), 0);
    assert_int_equal(imported, 2);
    assert_int_equal(skipped, 0);
    assert_int_equal(sl_image_store_import_dir(f->s, dir, &imported, &skipped, &e), 0);
    assert_int_equal(imported, 0);
    assert_int_equal(skipped, 2);
    /* a removed image stays removed across a restart (rmi sticks); a pull
     * of its tag brings it back, the unchanged other file is skipped */
    assert_int_equal(sl_image_store_remove(f->s, "d:2", &e), 0);
    reopen(f); /* the source records survive a restart */
    assert_int_equal(sl_image_store_import_dir(f->s, dir, &imported, &skipped, &e), 0);
    assert_int_equal(imported, 0);
    assert_int_equal(skipped, 2);
    assert_absent(f, "docker.io/library/d:2");
    assert_int_equal(sl_image_store_import_dir_for(f->s, dir, "d:2", &imported, &skipped, &e), 0);
    assert_int_equal(imported, 1);
    assert_int_equal(skipped, 1);
    find_ok(f, "docker.io/library/d:2");
    /* a bad file is reported and does not stop the others */
    touch(f->work, "images/0-bad.tar");
    write_oci(wpath(f, "images/a.tar"), &(opts){.name = "localhost/d:3", .cmd = "3"}, &b1);
    assert_int_equal(sl_image_store_import_dir(f->s, dir, &imported, &skipped, &e), -1);
    assert_non_null(strstr(e.msg, "0-bad.tar"));
    assert_int_equal(imported, 1);
    find_ok(f, "localhost/d:3");
    assert_int_equal(sl_image_store_import_dir(f->s, "/nonexistent-dir", NULL, NULL, &e), -1);
}

/* Drops the tags of every source record, as versions before them wrote. */
static void forget_source_tags(fx *f)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/images.json", f->root);
    json_t *doc = json_load_file(path, 0, NULL);
    size_t i;
    json_t *src;
    assert_non_null(doc);
    json_array_foreach(json_object_get(doc, "sources"), i, src) json_object_del(src, "tags");
    assert_int_equal(json_dump_file(doc, path, JSON_COMPACT), 0);
    json_decref(doc);
    reopen(f);
}

/* An unchanged tarball is imported again for a pull of a tag it gave that
 * was removed (the image kept by its other tag), and only then. */
static void test_import_dir_restores_a_removed_tag(void **state)
{
    fx *f = *state;
    built b;
    opts o = {.name = "localhost/t:1", .alias = "localhost/t:2"};
    char dir[128];
    snprintf(dir, sizeof(dir), "%s/images", f->work);
    assert_int_equal(mkdir(dir, 0700), 0);
    write_oci(wpath(f, "images/t.tar"), &o, &b);
    size_t imported = 9, skipped = 9;
    sl_error e = {0};
    assert_int_equal(sl_image_store_import_dir(f->s, dir, &imported, &skipped, &e), 0);
    assert_string_equal(find_ok(f, "localhost/t:2")->id, b.id);
    assert_int_equal(sl_image_store_remove(f->s, "localhost/t:2", &e), 0);
    assert_string_equal(find_ok(f, "localhost/t:1")->id, b.id); /* untagged only */
    assert_absent(f, "localhost/t:2");
    /* a removal stays without a pull of it, and pulls of other tags skip */
    assert_int_equal(sl_image_store_import_dir(f->s, dir, &imported, &skipped, &e), 0);
    assert_int_equal(skipped, 1);
    assert_int_equal(
        sl_image_store_import_dir_for(f->s, dir, "localhost/t:1", &imported, &skipped, &e), 0);
    assert_int_equal(skipped, 1);
    assert_int_equal(
        sl_image_store_import_dir_for(f->s, dir, "localhost/t:9", &imported, &skipped, &e), 0);
    assert_int_equal(skipped, 1);
    assert_absent(f, "localhost/t:2");
    reopen(f); /* the tags of the source record survive a restart */
    assert_int_equal(
        sl_image_store_import_dir_for(f->s, dir, "localhost/t:2", &imported, &skipped, &e), 0);
    assert_int_equal(imported, 1);
    assert_string_equal(find_ok(f, "localhost/t:2")->id, b.id);
    /* a record without tags (older versions) is imported again once */
    assert_int_equal(sl_image_store_remove(f->s, "localhost/t:2", &e), 0);
    forget_source_tags(f);
    assert_int_equal(
        sl_image_store_import_dir_for(f->s, dir, "localhost/t:2", &imported, &skipped, &e), 0);
    assert_int_equal(imported, 1);
    find_ok(f, "localhost/t:2");
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_recovery),
        T(test_open_errors),
        T(test_import_dir),
        T(test_import_dir_restores_a_removed_tag),
    };
    if (image_tests_skipped())
        return 0;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
