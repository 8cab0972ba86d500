/* A container's user: the CRI fields, the image's USER, /etc/passwd and
 * /etc/group of a rootfs (symlinks resolved inside it, FIFOs not read),
 * and the supplemental groups policies, as containerd resolves them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tmp_root.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cri/ctr_user.h"
#include "fsutil.h"
#include "grpc/grpc_status.h"

static const char *passwd = "root:x:0:0:root:/root:/bin/sh\n"
                            "app:x:1000:1000:App:/home/app:/bin/sh\n"
                            "web:x:1001:50::/:/bin/sh\n"
                            "a broken line\n"
                            "bad:x:notanumber:1::/:/bin/sh\n"
                            "nobody:x:65534:65534::/nonexistent:/bin/false";
static const char *group = "root:x:0:\n"
                           "wheel:x:10:root\n"
                           "staff:x:50:app,web\n"
                           "audio:x:63:app\n"
                           "web:x:1001:web\n";

static void put(const char *rootfs, const char *rel, const char *text)
{
    SL_AUTOFREE char *path = sl_path_join(rootfs, rel);
    sl_error e;
    assert_int_equal(sl_write_file_atomic(path, text, strlen(text), 0644, &e), 0);
}

static int setup(void **state)
{
    (void)state;
    tmp_root_make();
    SL_AUTOFREE char *etc = sl_path_join(root, "etc");
    assert_int_equal(mkdir(etc, 0755), 0);
    put(root, "etc/passwd", passwd);
    put(root, "etc/group", group);
    return 0;
}

typedef Runtime__V1__LinuxContainerSecurityContext sctx;

/* The INIT macro sets the deprecated string fields too. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static sctx new_ctx(void)
{
    sctx sc = RUNTIME__V1__LINUX_CONTAINER_SECURITY_CONTEXT__INIT;
    return sc;
}
#pragma GCC diagnostic pop

/* Resolves and checks uid, gid and the groups (terminated by -1). */
static void expect(const sctx *sc, const char *image_user, uint32_t uid, uint32_t gid, ...)
{
    sl_ctr_user u;
    sl_error e = {0};
    if (sl_ctr_user_resolve(sc, image_user, root, &u, &e) < 0)
        fail_msg("USER \"%s\": %s", image_user, e.msg);
    assert_int_equal(u.uid, uid);
    assert_int_equal(u.gid, gid);
    va_list ap;
    va_start(ap, gid);
    size_t n = 0;
    for (int g = va_arg(ap, int); g >= 0; g = va_arg(ap, int), n++) {
        assert_true(n < u.ngids);
        assert_int_equal(u.gids[n], (uint32_t)g);
    }
    va_end(ap);
    assert_int_equal(u.ngids, n);
    sl_ctr_user_fini(&u);
}

static void refused(const sctx *sc, const char *image_user, const char *want)
{
    sl_ctr_user u;
    sl_error e = {0};
    assert_int_equal(sl_ctr_user_resolve(sc, image_user, root, &u, &e), -1);
    assert_int_equal(e.code, SL_GRPC_INVALID_ARGUMENT);
    if (!strstr(e.msg, want))
        fail_msg("got \"%s\", want \"%s\"", e.msg, want);
}

static void image_user(void **state)
{
    (void)state;
    expect(NULL, "", 0, 0, 0, 10, -1); /* root, and wheel lists root */
    expect(NULL, "app", 1000, 1000, 50, 63, 1000, -1);
    expect(NULL, "1000", 1000, 1000, 50, 63, 1000, -1);
    expect(NULL, "app:staff", 1000, 50, 50, 63, -1);
    expect(NULL, "1000:7", 1000, 7, 7, 50, 63, -1);
    expect(NULL, "4242", 4242, 0, 0, -1); /* no entry: gid 0, no groups */
    /* web's own group shares its name and is skipped, as containerd does */
    expect(NULL, "web", 1001, 50, 50, -1);
    refused(NULL, "ghost", "image USER: no user \"ghost\" in the image's /etc/passwd");
    refused(NULL, "app:ghosts", "image USER: no group \"ghosts\" in the image's /etc/group");
}

static void security_context(void **state)
{
    (void)state;
    sctx sc = new_ctx();
    Runtime__V1__Int64Value uid = RUNTIME__V1__INT64_VALUE__INIT, gid = uid;
    sc.run_as_user = &uid;
    uid.value = 1001;
    expect(&sc, "app", 1001, 50, 50, -1); /* run_as_user wins over the image */
    uid.value = 0;
    expect(&sc, "app", 0, 0, 0, 10, -1);
    sc.run_as_group = &gid;
    gid.value = 5;
    expect(&sc, "", 0, 5, 5, 10, -1);
    sc.run_as_user = NULL;
    sc.run_as_username = "app";
    expect(&sc, "", 1000, 5, 5, 50, 63, -1);
    int64_t sup[] = {63, 7};
    sc.supplemental_groups = sup;
    sc.n_supplemental_groups = 2;
    expect(&sc, "", 1000, 5, 5, 7, 50, 63, -1);
    sc.supplemental_groups_policy = RUNTIME__V1__SUPPLEMENTAL_GROUPS_POLICY__Strict;
    expect(&sc, "", 1000, 5, 5, 7, 63, -1);
    sc.run_as_username = "nobody";
    sc.run_as_group = NULL;
    expect(&sc, "", 65534, 65534, 7, 63, 65534, -1);
}

static void bad_values(void **state)
{
    (void)state;
    sctx sc = new_ctx();
    Runtime__V1__Int64Value uid = RUNTIME__V1__INT64_VALUE__INIT, gid = uid;
    sc.run_as_group = &gid;
    refused(&sc, "app", "linux.security_context.run_as_group: set without run_as_user");
    sc.run_as_group = NULL;
    sc.run_as_user = &uid;
    sc.run_as_username = "app";
    refused(&sc, "", "run_as_username: only one of run_as_user and run_as_username");
    sc.run_as_username = "";
    uid.value = -1;
    refused(&sc, "", "linux.security_context.run_as_user: -1 is not a valid id");
    uid.value = 4294967295LL;
    refused(&sc, "", "run_as_user: 4294967295 is not a valid id");
    uid.value = 0;
    int64_t sup[] = {5, -3};
    sc.supplemental_groups = sup;
    sc.n_supplemental_groups = 2;
    refused(&sc, "", "linux.security_context.supplemental_groups: -3 is not a valid id");
    sc.n_supplemental_groups = 0;
    sc.supplemental_groups_policy = 7;
    refused(&sc, "", "supplemental_groups_policy: unknown policy 7");
    sc.supplemental_groups_policy = 0;
    sc.run_as_user = NULL;
    sc.run_as_username = "ghost";
    refused(&sc, "", "linux.security_context.run_as_username: no user \"ghost\"");
}

/* An image's /etc/passwd that links elsewhere is read inside the rootfs;
 * one that is a FIFO is not read at all (no hang). */
static void links_stay_inside_and_fifos_are_skipped(void **state)
{
    (void)state;
    SL_AUTOFREE char *other = sl_path_join(root, "other");
    SL_AUTOFREE char *link = sl_path_join(root, "etc/passwd");
    assert_int_equal(mkdir(other, 0755), 0);
    put(root, "other/passwd", "linked:x:2000:2001::/:/bin/sh\n");
    assert_int_equal(unlink(link), 0);
    assert_int_equal(symlink("/../../../other/passwd", link), 0);
    expect(NULL, "linked", 2000, 2001, 2001, -1);
    assert_int_equal(unlink(link), 0);
    assert_int_equal(mkfifo(link, 0644), 0);
    refused(NULL, "app", "no user \"app\"");
    expect(NULL, "1000", 1000, 0, 0, -1);
    assert_int_equal(unlink(link), 0);
    put(root, "etc/passwd", passwd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(image_user),
        cmocka_unit_test(security_context),
        cmocka_unit_test(bad_values),
        cmocka_unit_test(links_stay_inside_and_fifos_are_skipped),
    };
    return cmocka_run_group_tests(tests, setup, tmp_root_teardown);
}
