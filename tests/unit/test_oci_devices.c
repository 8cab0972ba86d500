/* Device nodes for the OCI spec: permission strings, stat of host nodes,
 * directories walked, the JSON entries and allow rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "container/oci_devices.h"
#include "fsutil.h"

static void access_strings(void **state)
{
    (void)state;
    char out[4];
    assert_int_equal(sl_oci_device_access("mrw", out), 0);
    assert_string_equal(out, "rwm");
    assert_int_equal(sl_oci_device_access("w", out), 0);
    assert_string_equal(out, "w");
    assert_int_equal(sl_oci_device_access("", out), -1);
    assert_int_equal(sl_oci_device_access("rx", out), -1);
    assert_int_equal(sl_oci_device_access("rr", out), -1);
    assert_int_equal(sl_oci_device_access("rwmr", out), -1);
}

static void one_node(void **state)
{
    (void)state;
    sl_oci_devices d = {0};
    sl_error e;
    assert_int_equal(sl_oci_devices_add(&d, "/dev/null", "/dev/mynull", "rw", &e), 0);
    assert_int_equal(sl_oci_devices_add(&d, "/dev/zero", NULL, "r", &e), 0);
    assert_int_equal(d.n, 2);
    assert_string_equal(d.v[0].path, "/dev/mynull");
    assert_int_equal(d.v[0].type, 'c');
    assert_int_equal(d.v[0].major, 1);
    assert_int_equal(d.v[0].minor, 3);
    assert_string_equal(d.v[1].path, "/dev/zero"); /* no container path: the host's */
    assert_int_equal(sl_oci_devices_add(&d, "/dev/sl-nope", NULL, "r", &e), -1);
    assert_int_equal(e.errnum, ENOENT);
    assert_int_equal(sl_oci_devices_add(&d, "/etc/passwd", NULL, "r", &e), -1);
    assert_int_equal(e.errnum, ENODEV);
    json_t *l =
        json_pack("{s:{s:[{s:b, s:s}]}}", "resources", "devices", "allow", 0, "access", "rwm");
    sl_oci_devices_json(l, d.v, d.n);
    json_t *devs = json_object_get(l, "devices");
    json_t *rules = json_object_get(json_object_get(l, "resources"), "devices");
    assert_int_equal(json_array_size(devs), 2);
    assert_int_equal(json_array_size(rules), 3); /* the deny-all first */
    assert_false(json_is_true(json_object_get(json_array_get(rules, 0), "allow")));
    json_t *r = json_array_get(rules, 2);
    assert_true(json_is_true(json_object_get(r, "allow")));
    assert_string_equal(json_string_value(json_object_get(r, "access")), "r");
    assert_int_equal(json_integer_value(json_object_get(r, "minor")), 5);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(devs, 0), "fileMode")),
                     0666);
    json_decref(l);
    sl_oci_devices_fini(&d);
}

/* A directory: its nodes, not its files, symlinks or pts/. */
static void directory_walk(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip(); /* mknod needs root */
    char dir[] = "/tmp/sl-dev-XXXXXX", p[160];
    assert_non_null(mkdtemp(dir));
    snprintf(p, sizeof(p), "%s/sub/pts", dir);
    sl_error e;
    assert_int_equal(sl_mkdir_p(p, 0755, &e), 0);
    const char *nodes[] = {"n1", "sub/n2", "sub/pts/skipped"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, nodes[i]);
        assert_int_equal(mknod(p, S_IFCHR | 0600, makedev(1, 3)), 0);
    }
    snprintf(p, sizeof(p), "%s/file", dir);
    assert_int_equal(sl_write_file_atomic(p, "x", 1, 0644, &e), 0);
    snprintf(p, sizeof(p), "%s/link", dir);
    assert_int_equal(symlink("/dev/null", p), 0);
    sl_oci_devices d = {0};
    assert_int_equal(sl_oci_devices_add(&d, dir, "/dev/x", "rw", &e), 0);
    assert_int_equal(d.n, 2);
    bool n1 = false, n2 = false;
    for (size_t i = 0; i < d.n; i++) {
        n1 |= !strcmp(d.v[i].path, "/dev/x/n1");
        n2 |= !strcmp(d.v[i].path, "/dev/x/sub/n2");
        assert_int_equal(d.v[i].mode, 0600);
    }
    assert_true(n1 && n2);
    sl_oci_devices_fini(&d);
    sl_rm_rf(dir, &e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(access_strings),
        cmocka_unit_test(one_node),
        cmocka_unit_test(directory_walk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
