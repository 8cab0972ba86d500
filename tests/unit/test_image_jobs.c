/* sluiced's image import queue (cri/image_jobs.c) on a real libuv loop:
 * an import of the import directory runs on a worker and is visible once
 * its waiters run; what a queued import may give; a failure is reported
 * with its cause and not tried again while the file is unchanged; a
 * second scan of unchanged files queues nothing; stop ends the waiters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <uv.h>

#include "cri/image_jobs.h"
#include "fsutil.h"
#include "image_fixture.h"

typedef struct jfx {
    fx *f;
    uv_loop_t loop;
    sl_imgq *q;
    char dir[128];
} jfx;

static void reopen_deferred(fx *f)
{
    sl_image_store_close(f->s);
    sl_error e = {0};
    f->s = sl_image_store_open_flags(f->root, NULL, SL_IMAGE_DEFER_DELETES, &e);
    if (!f->s)
        fail_msg("reopen: %s", e.msg);
}

static int setup(void **state)
{
    jfx *j = calloc(1, sizeof(*j));
    if (!j || fx_setup((void **)&j->f) < 0)
        return -1;
    reopen_deferred(j->f);
    if (uv_loop_init(&j->loop) < 0 || !(j->q = sl_imgq_new(&j->loop, j->f->s)))
        return -1;
    snprintf(j->dir, sizeof(j->dir), "%s/import", j->f->work);
    *state = j;
    return mkdir(j->dir, 0700);
}

static int teardown(void **state)
{
    jfx *j = *state;
    sl_imgq_stop(j->q);
    uv_run(&j->loop, UV_RUN_DEFAULT);
    sl_imgq_free(j->q);
    assert_int_equal(uv_loop_close(&j->loop), 0);
    void *f = j->f;
    free(j);
    return fx_teardown(&f);
}

static void count_cb(void *arg)
{
    ++*(int *)arg;
}

static void scan(jfx *j)
{
    sl_error e = {0};
    assert_int_equal(sl_imgq_scan(j->q, j->dir, NULL, &e), 0);
}

static void test_import_then_waiters(void **state)
{
    jfx *j = *state;
    built b;
    write_oci(wpath(j->f, "import/a.tar"), &(opts){.name = "localhost/a:1"}, &b);
    scan(j);
    /* never imported: it may give anything, but its record gives nothing */
    assert_true(sl_imgq_may_give(j->q, "localhost/a:1", true));
    assert_false(sl_imgq_may_give(j->q, "localhost/a:1", false));
    int ran = 0;
    assert_int_equal(sl_imgq_after(j->q, count_cb, &ran), 0);
    assert_int_equal(ran, 0); /* the import runs on the loop's worker */
    assert_absent(j->f, "localhost/a:1");
    uv_run(&j->loop, UV_RUN_DEFAULT);
    assert_int_equal(ran, 1);
    check_layers(find_ok(j->f, "localhost/a:1"), &b);
    assert_false(sl_imgq_may_give(j->q, "localhost/a:1", true));
    /* unchanged: a second scan queues nothing, a waiter runs at once */
    scan(j);
    assert_int_equal(sl_imgq_after(j->q, count_cb, &ran), 0);
    assert_int_equal(ran, 2);
    /* removed: the scan at a restart leaves it removed */
    sl_error e = {0};
    assert_int_equal(sl_image_store_remove(j->f->s, "localhost/a:1", &e), 0);
    sl_imgq_collect(j->q);
    scan(j);
    assert_false(sl_imgq_may_give(j->q, "localhost/a:1", true));
    uv_run(&j->loop, UV_RUN_DEFAULT);
    assert_absent(j->f, "localhost/a:1");
    /* a pull of its tag brings it back */
    assert_int_equal(sl_imgq_scan(j->q, j->dir, "localhost/a:1", &e), 0);
    assert_true(sl_imgq_may_give(j->q, "localhost/a:1", false)); /* its record says so */
    uv_run(&j->loop, UV_RUN_DEFAULT);
    assert_string_equal(find_ok(j->f, "localhost/a:1")->id, b.id);
}

static void test_failure_remembered(void **state)
{
    jfx *j = *state;
    char failed[1024];
    assert_string_equal(sl_imgq_failures(j->q, failed, sizeof(failed)), "");
    built b;
    write_oci(wpath(j->f, "import/bad.tar"), &(opts){.name = "localhost/bad:1", .tamper_layer = 1},
              &b);
    scan(j);
    uv_run(&j->loop, UV_RUN_DEFAULT);
    assert_absent(j->f, "localhost/bad:1");
    sl_imgq_failures(j->q, failed, sizeof(failed));
    /* the file and the real cause */
    assert_non_null(strstr(failed, "import/bad.tar"));
    assert_non_null(strstr(failed, "digest mismatch"));
    /* unchanged, so not tried again */
    scan(j);
    assert_false(sl_imgq_may_give(j->q, "localhost/bad:1", true));
    /* fixed: imported, and the failure forgotten */
    write_oci(wpath(j->f, "import/bad.tar"), &(opts){.name = "localhost/bad:1"}, &b);
    scan(j);
    uv_run(&j->loop, UV_RUN_DEFAULT);
    find_ok(j->f, "localhost/bad:1");
    assert_string_equal(sl_imgq_failures(j->q, failed, sizeof(failed)), "");
}

static void test_stop_runs_waiters(void **state)
{
    jfx *j = *state;
    built b;
    write_oci(wpath(j->f, "import/a.tar"), &(opts){.name = "localhost/a:1"}, &b);
    write_oci(wpath(j->f, "import/b.tar"), &(opts){.name = "localhost/b:1", .cmd = "b"}, &b);
    scan(j);
    int ran = 0;
    assert_int_equal(sl_imgq_after(j->q, count_cb, &ran), 0);
    sl_imgq_stop(j->q); /* a.tar running is cancelled (or done), b.tar dropped */
    uv_run(&j->loop, UV_RUN_DEFAULT);
    assert_int_equal(ran, 1);
    assert_absent(j->f, "localhost/b:1");
    /* stopped: nothing more is queued */
    scan(j);
    assert_false(sl_imgq_may_give(j->q, "localhost/b:1", true));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_import_then_waiters),
        T(test_failure_remembered),
        T(test_stop_runs_waiters),
    };
    if (image_tests_skipped())
        return 0;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
