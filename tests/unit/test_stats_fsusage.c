/* Directory usage (stats/fsusage.h) against du(1) on the same tree: bytes
 * in blocks and distinct inodes, hard links once, symlinks not followed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tmp_root.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "stats/fsusage.h"

static void put(const char *name, size_t bytes)
{
    char *p = sl_path_join(root, name);
    char *buf = calloc(1, bytes ? bytes : 1);
    sl_error e;
    assert_int_equal(sl_write_file_atomic(p, buf, bytes, 0644, &e), 0);
    free(buf);
    free(p);
}

static uint64_t du(const char *opt)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "du -s %s %s", opt, root);
    FILE *f = popen(cmd, "r");
    unsigned long long v = 0;
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%llu", &v), 1);
    pclose(f);
    return v;
}

static void test_tree_like_du(void **state)
{
    (void)state;
    char p[128], q[128];
    snprintf(p, sizeof(p), "%s/a/b/c", root);
    sl_error e;
    assert_int_equal(sl_mkdir_p(p, 0755, &e), 0);
    put("big", 1 << 20);
    put("a/small", 10);
    put("a/b/c/empty", 0);
    put("a/b/mid", 70000);
    snprintf(p, sizeof(p), "%s/big", root);
    snprintf(q, sizeof(q), "%s/a/hardlink", root);
    assert_int_equal(link(p, q), 0); /* the same 1 MiB, counted once */
    snprintf(q, sizeof(q), "%s/a/b/link", root);
    assert_int_equal(symlink("/usr", q), 0); /* never followed */
    sl_fsusage u;
    assert_int_equal(sl_fsusage_walk(root, &u, &e), 0);
    assert_false(u.partial);
    assert_int_equal(u.inodes, du("--inodes"));
    assert_int_equal(u.inodes, 9); /* root, a, b, c, big, small, empty, mid, link */
    assert_int_equal(u.bytes, du("-B1"));
    assert_true(u.bytes >= (1 << 20) + 70000);
}

static void test_missing(void **state)
{
    (void)state;
    sl_fsusage u;
    sl_error e;
    char p[128];
    snprintf(p, sizeof(p), "%s/none", root);
    assert_int_equal(sl_fsusage_walk(p, &u, &e), -1);
    assert_int_equal(e.errnum, ENOENT);
}

static void test_many_links(void **state)
{
    (void)state;
    put("f", 4096);
    char p[128], q[128];
    snprintf(p, sizeof(p), "%s/f", root);
    for (int i = 0; i < 300; i++) { /* grows the link set past its first size */
        snprintf(q, sizeof(q), "%s/l%d", root, i);
        assert_int_equal(link(p, q), 0);
    }
    sl_fsusage u;
    sl_error e;
    assert_int_equal(sl_fsusage_walk(root, &u, &e), 0);
    assert_int_equal(u.inodes, 2);
    assert_int_equal(u.bytes, du("-B1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tree_like_du, tmp_root_setup, tmp_root_teardown),
        cmocka_unit_test_setup_teardown(test_missing, tmp_root_setup, tmp_root_teardown),
        cmocka_unit_test_setup_teardown(test_many_links, tmp_root_setup, tmp_root_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
