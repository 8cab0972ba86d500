/* Which mount holds a path, and its propagation, from mountinfo text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "container/mountinfo.h"

static const char text[] = "26 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
                           "40 26 0:50 / /run/a rw shared:7 - tmpfs none rw\n"
                           "41 40 0:51 / /run/a/b rw master:7 - tmpfs none rw\n"
                           "42 26 0:52 / /run/with\\040space rw shared:9 master:3 - tmpfs none rw\n"
                           "43 26 0:53 / /run/ab rw - tmpfs none rw\n"
                           "44 40 0:54 / /run/a rw - tmpfs stacked rw\n"
                           "garbage\n";

static sl_mount_prop find(const char *path)
{
    sl_mount_prop p;
    memset(&p, 0, sizeof(p));
    if (sl_mountinfo_find(text, path, &p) < 0)
        fail_msg("nothing holds %s", path);
    return p;
}

static void longest_prefix_by_component(void **state)
{
    (void)state;
    sl_mount_prop p = find("/etc/passwd");
    assert_string_equal(p.mountpoint, "/");
    assert_false(p.shared || p.slave);
    p = find("/run/a/b/c");
    assert_string_equal(p.mountpoint, "/run/a/b");
    assert_true(p.slave);
    assert_false(p.shared);
    p = find("/run/abc"); /* not under /run/ab nor /run/a */
    assert_string_equal(p.mountpoint, "/");
    p = find("/run/ab");
    assert_string_equal(p.mountpoint, "/run/ab");
}

static void stacked_mount_wins(void **state)
{
    (void)state;
    sl_mount_prop p = find("/run/a/x");
    assert_string_equal(p.mountpoint, "/run/a");
    assert_false(p.shared); /* the later, private one is on top */
}

static void escapes_and_both_fields(void **state)
{
    (void)state;
    sl_mount_prop p = find("/run/with space/d");
    assert_string_equal(p.mountpoint, "/run/with space");
    assert_true(p.shared && p.slave);
}

static void nothing_found(void **state)
{
    (void)state;
    sl_mount_prop p;
    assert_int_equal(sl_mountinfo_find("1 2 3:4 / /only rw - x y rw\n", "/else", &p), -1);
    assert_int_equal(sl_mountinfo_find("", "/", &p), -1);
}

static void real_mountinfo(void **state)
{
    (void)state;
    sl_mount_prop p;
    sl_error e;
    assert_int_equal(sl_mountinfo_lookup("/proc/self", &p, &e), 0);
    assert_string_equal(p.mountpoint, "/proc");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(longest_prefix_by_component),
        cmocka_unit_test(stacked_mount_wins),
        cmocka_unit_test(escapes_and_both_fields),
        cmocka_unit_test(nothing_found),
        cmocka_unit_test(real_mountinfo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
