/* The image store for an event loop: an import in three halves whose slow
 * one runs on another thread while the owner reads the store, a removal
 * between the halves (EAGAIN, the store intact), cancellation, deferred
 * deletes, and the scan of an import directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "image_fixture.h"

static char *tmp_dir(const fx *f)
{
    static char dir[128];
    snprintf(dir, sizeof(dir), "%s/tmp", f->root);
    return dir;
}

static void test_halves_equal_sync(void **state)
{
    fx *f = *state;
    built b;
    write_oci(wpath(f, "a.tar"), &(opts){.name = "localhost/a:1"}, &b);
    sl_error e = {0};
    sl_image_import *imp = sl_image_import_begin(f->s, wpath(f, "a.tar"), "localhost/x:9", &e);
    assert_non_null(imp);
    struct stat st;
    assert_int_equal(stat(wpath(f, "a.tar"), &st), 0);
    sl_import_progress p;
    sl_image_import_progress(imp, &p); /* nothing read yet */
    assert_int_equal(p.bytes_read, 0);
    assert_int_equal(p.bytes_total, st.st_size);
    assert_false(p.unpacking);
    assert_int_equal(sl_image_import_run(imp), 0);
    sl_image_import_progress(imp, &p); /* read through */
    assert_int_equal(p.bytes_read, st.st_size);
    assert_true(p.unpacking);
    assert_absent(f, "localhost/a:1"); /* not visible before the commit */
    char **ids = NULL;
    assert_int_equal(sl_image_import_commit(imp, &ids, &e), 0);
    sl_image_import_free(imp);
    assert_string_equal(ids[0], b.id);
    assert_null(ids[1]);
    sl_image_ids_free(ids);
    check_layers(find_ok(f, "localhost/a:1"), &b);
    assert_string_equal(find_ok(f, "localhost/x:9")->id, b.id);
    assert_int_equal(count_dir(tmp_dir(f)), 0);
    /* a failed run comes out of the commit, and leaves nothing */
    char *before = snapshot(f);
    imp = sl_image_import_begin(f->s, wpath(f, "a.tar"), NULL, &e);
    assert_int_equal(truncate(wpath(f, "a.tar"), 1000), 0);
    assert_int_equal(sl_image_import_run(imp), -1);
    sl_image_import_progress(imp, &p); /* the file shrank after begin */
    assert_int_equal(p.bytes_total, st.st_size);
    assert_in_range(p.bytes_read, 1, 1000);
    assert_false(p.unpacking);
    assert_int_equal(sl_image_import_commit(imp, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "a.tar"));
    sl_image_import_free(imp);
    char *after = snapshot(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
    assert_null(sl_image_import_begin(f->s, wpath(f, "missing.tar"), NULL, &e));
    assert_int_equal(e.errnum, ENOENT);
}

typedef struct runner {
    sl_image_import *imp;
    atomic_int done;
} runner;

static void *run_thread(void *arg)
{
    runner *r = arg;
    sl_image_import_run(r->imp);
    atomic_store(&r->done, 1);
    return NULL;
}

/* The owner keeps finding and listing while a worker thread runs. */
static void test_run_on_a_thread(void **state)
{
    fx *f = *state;
    built a, b;
    write_oci(wpath(f, "a.tar"), &(opts){.name = "localhost/a:1"}, &a);
    import_ok(f, wpath(f, "a.tar"), NULL, 1);
    size_t big_len = 8 << 20; /* the run takes a while: many lookups meet it */
    char *big = malloc(big_len + 1);
    assert_non_null(big);
    for (size_t i = 0; i < big_len; i++)
        big[i] = (char)('a' + (i * 7919 % 26));
    big[big_len] = '\0';
    const tar_ent l2[] = {{.path = "big", .data = big}};
    write_docker(wpath(f, "b.tar"), &(opts){.name = "b:1", .cmd = "b", .l2 = l2, .nl2 = 1}, &b);
    free(big);
    sl_error e = {0};
    runner r = {.imp = sl_image_import_begin(f->s, wpath(f, "b.tar"), NULL, &e)};
    assert_non_null(r.imp);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, run_thread, &r), 0);
    unsigned lookups = 0;
    do {
        assert_string_equal(find_ok(f, "localhost/a:1")->id, a.id);
        const sl_image **list;
        size_t n;
        assert_int_equal(sl_image_store_list(f->s, NULL, &list, &n, &e), 0);
        assert_int_equal(n, 1);
        free(list);
        lookups++;
    } while (!atomic_load(&r.done));
    pthread_join(t, NULL);
    assert_true(lookups > 0);
    assert_int_equal(sl_image_import_commit(r.imp, NULL, &e), 0);
    sl_image_import_free(r.imp);
    assert_string_equal(find_ok(f, "docker.io/library/b:1")->id, b.id);
}

/* A removal between begin and commit takes the layers the import counted
 * on: the commit says EAGAIN and changes nothing; a new import works. */
static void test_removal_meanwhile(void **state)
{
    fx *f = *state;
    built a, b;
    write_oci(wpath(f, "a.tar"), &(opts){.name = "localhost/a:1"}, &a);
    write_oci(wpath(f, "b.tar"), &(opts){.name = "localhost/b:1", .cmd = "b"}, &b);
    import_ok(f, wpath(f, "a.tar"), NULL, 1);
    assert_string_equal(a.d2, b.d2); /* the same layers */
    sl_error e = {0};
    sl_image_import *imp = sl_image_import_begin(f->s, wpath(f, "b.tar"), NULL, &e);
    assert_int_equal(sl_image_import_run(imp), 0); /* unpacks nothing: the layers are there */
    assert_int_equal(sl_image_store_remove(f->s, "localhost/a:1", &e), 0);
    char *before = snapshot(f);
    assert_int_equal(sl_image_import_commit(imp, NULL, &e), -1);
    assert_int_equal(e.errnum, EAGAIN);
    assert_non_null(strstr(e.msg, "went away during the import"));
    sl_image_import_free(imp);
    char *after = snapshot(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
    assert_absent(f, "localhost/b:1");
    import_ok(f, wpath(f, "b.tar"), NULL, 1);
    check_layers(find_ok(f, "localhost/b:1"), &b);
}

static void test_cancel(void **state)
{
    fx *f = *state;
    built b;
    write_oci(wpath(f, "a.tar"), &(opts){.name = "localhost/a:1"}, &b);
    char *before = snapshot(f);
    sl_image_store_cancel(f->s);
    sl_error e = {0};
    assert_int_equal(sl_image_store_import(f->s, wpath(f, "a.tar"), NULL, NULL, &e), -1);
    assert_int_equal(e.errnum, ECANCELED);
    char *after = snapshot(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

static void reopen_deferred(fx *f)
{
    sl_image_store_close(f->s);
    sl_error e = {0};
    f->s = sl_image_store_open_flags(f->root, NULL, SL_IMAGE_DEFER_DELETES, &e);
    if (!f->s)
        fail_msg("reopen: %s", e.msg);
}

static size_t delete_garbage(fx *f)
{
    char **g = sl_image_store_take_garbage(f->s);
    size_t n = 0;
    for (; g && g[n]; n++) {
        assert_int_equal(strncmp(g[n], tmp_dir(f), strlen(tmp_dir(f))), 0);
        assert_int_equal(sl_rm_rf(g[n], NULL), 0);
    }
    sl_image_ids_free(g);
    return n;
}

/* Deletions are left to the caller, out of sight at once. */
static void test_deferred_deletes(void **state)
{
    fx *f = *state;
    built b;
    write_oci(wpath(f, "a.tar"), &(opts){.name = "localhost/a:1"}, &b);
    char junk[256];
    snprintf(junk, sizeof(junk), "%s/import-left", tmp_dir(f));
    assert_int_equal(mkdir(junk, 0700), 0);
    reopen_deferred(f); /* recovery's leftovers wait too */
    assert_int_equal(sl_image_store_recovery(f->s)->tmp_removed, 1);
    assert_int_equal(delete_garbage(f), 1);
    assert_int_equal(count_dir(tmp_dir(f)), 0);
    import_ok(f, wpath(f, "a.tar"), NULL, 1);
    char layers[256];
    snprintf(layers, sizeof(layers), "%s/layers", f->root);
    assert_int_equal(count_dir(layers), 2);
    sl_error e = {0};
    assert_int_equal(sl_image_store_remove(f->s, "localhost/a:1", &e), 0);
    assert_int_equal(count_dir(layers), 0); /* gone from layers/ at once */
    assert_int_equal(count_dir(tmp_dir(f)), 2);
    assert_int_equal(delete_garbage(f), 2);
    assert_int_equal(count_dir(tmp_dir(f)), 0);
    assert_null(sl_image_store_take_garbage(f->s));
}

static void test_dir_changes(void **state)
{
    fx *f = *state;
    built a, b;
    char dir[128];
    snprintf(dir, sizeof(dir), "%s/images", f->work);
    assert_int_equal(mkdir(dir, 0700), 0);
    write_oci(wpath(f, "images/a.tar"), &(opts){.name = "localhost/a:1"}, &a);
    import_ok(f, wpath(f, "images/a.tar"), NULL, 1);
    write_oci(wpath(f, "images/b.tar"), &(opts){.name = "localhost/b:1", .cmd = "b"}, &b);
    char **paths = NULL;
    size_t skipped = 9;
    sl_error e = {0};
    assert_int_equal(sl_image_store_dir_changes(f->s, dir, NULL, &paths, &skipped, &e), 0);
    assert_string_equal(paths[0], wpath(f, "images/b.tar"));
    assert_null(paths[1]);
    assert_int_equal(skipped, 1);
    sl_image_ids_free(paths);
    assert_true(sl_image_store_file_unchanged(f->s, wpath(f, "images/a.tar"), NULL));
    assert_false(sl_image_store_file_unchanged(f->s, wpath(f, "images/b.tar"), NULL));
    assert_int_equal(sl_image_store_source_gave(f->s, wpath(f, "images/a.tar"), "localhost/a:1"),
                     1);
    assert_int_equal(sl_image_store_source_gave(f->s, wpath(f, "images/a.tar"), "localhost/a:2"),
                     0);
    assert_int_equal(sl_image_store_source_gave(f->s, wpath(f, "images/b.tar"), "localhost/b:1"),
                     -1);
    /* the tag a pull wants is gone: the unchanged file counts as changed */
    sl_error re = {0};
    assert_int_equal(sl_image_store_remove(f->s, "localhost/a:1", &re), 0);
    assert_false(sl_image_store_file_unchanged(f->s, wpath(f, "images/a.tar"), "localhost/a:1"));
    import_ok(f, wpath(f, "images/a.tar"), NULL, 1);
    /* a changed file (same size, another mtime) is imported again */
    struct timespec ts[2] = {{0, UTIME_OMIT}, {12345, 0}};
    assert_int_equal(utimensat(AT_FDCWD, wpath(f, "images/a.tar"), ts, 0), 0);
    assert_false(sl_image_store_file_unchanged(f->s, wpath(f, "images/a.tar"), NULL));
    assert_int_equal(sl_image_store_dir_changes(f->s, dir, NULL, &paths, &skipped, &e), 0);
    assert_non_null(paths[0]);
    assert_non_null(paths[1]);
    assert_int_equal(skipped, 0);
    sl_image_ids_free(paths);
    assert_int_equal(sl_image_store_dir_changes(f->s, "/nonexistent", NULL, &paths, NULL, &e), -1);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_halves_equal_sync), T(test_run_on_a_thread),
        T(test_removal_meanwhile), T(test_cancel),
        T(test_deferred_deletes),  T(test_dir_changes),
    };
    if (image_tests_skipped())
        return 0;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
