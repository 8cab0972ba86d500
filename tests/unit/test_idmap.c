/* User namespaces and idmapped mounts (root, Linux 5.12+ on a file system
 * that supports them, as CI's machines are): a namespace made with the
 * asked maps, a clone of a directory whose owners show shifted through it,
 * and sl_rm_rf, which must never reach through such a mount into its
 * source. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/idmap.h"
#include "fsutil.h"

static char *tmp_dir(void)
{
    char tmpl[] = "/tmp/sl-idmap-XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static void supported_here(void **state)
{
    (void)state;
    char why[192] = "";
    SL_AUTOFREE char *dir = tmp_dir();
    if (!sl_idmap_supported(dir, why, sizeof(why)))
        fail_msg("idmapped mounts on %s: %s", dir, why);
    rmdir(dir);
}

/* A file the disk says root owns shows as owned by the host id that root
 * maps to, through the clone; the source is unchanged. */
static void clone_shifts_owners(void **state)
{
    (void)state;
    SL_AUTOFREE char *dir = tmp_dir(), *src = tmp_dir();
    SL_AUTOFREE char *dst = sl_path_join(dir, "dst");
    SL_AUTOFREE char *file = sl_path_join(src, "f");
    SL_AUTOFREE char *seen = sl_path_join(dst, "f");
    assert_int_equal(mkdir(dst, 0755), 0);
    int fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(chown(file, 7, 8), 0);
    sl_idmap u = {0, 100000, 65536}, g = {0, 200000, 65536};
    sl_error e = {0};
    int ns = sl_userns_open(&u, &g, &e);
    if (ns < 0)
        fail_msg("%s", e.msg);
    if (sl_idmap_mount(src, dst, ns, true, &e) < 0)
        fail_msg("%s", e.msg);
    close(ns);
    struct stat st;
    assert_int_equal(stat(seen, &st), 0);
    assert_int_equal(st.st_uid, 100007);
    assert_int_equal(st.st_gid, 200008);
    assert_int_equal(stat(file, &st), 0);
    assert_int_equal(st.st_uid, 7);
    /* sl_rm_rf of the directory the clone is attached in leaves the
     * source (same file system, so st_dev alone would not tell), and says
     * so */
    assert_int_equal(sl_rm_rf(dir, &e), -1);
    assert_non_null(strstr(e.msg, "dst"));
    assert_int_equal(stat(file, &st), 0);
    assert_int_equal(umount2(dst, MNT_DETACH), 0);
    if (sl_rm_rf(dir, &e) < 0 || sl_rm_rf(src, &e) < 0)
        fail_msg("%s", e.msg);
    assert_int_equal(stat(dir, &st), -1);
}

static void bad_maps_refused(void **state)
{
    (void)state;
    sl_idmap none = {0, 100000, 0};
    sl_error e = {0};
    assert_int_equal(sl_userns_open(&none, &none, &e), -1);
    assert_non_null(strstr(e.msg, "uid_map"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(supported_here),
        cmocka_unit_test(clone_shifts_owners),
        cmocka_unit_test(bad_maps_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
