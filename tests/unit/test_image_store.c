/* The image store: importing OCI and docker-archive tarballs, naming,
 * tagging, removal, listing and usage. Recovery: test_image_recovery.c;
 * bad input: test_image_bad.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <archive_entry.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image_fixture.h"

/* ---- imports ---- */

static void check_config(const sl_image *img, const char *cmd)
{
    assert_int_equal(img->config.n_entrypoint, 1);
    assert_string_equal(img->config.entrypoint[0], "/bin/app");
    assert_int_equal(img->config.n_cmd, 1);
    assert_string_equal(img->config.cmd[0], cmd);
    assert_int_equal(img->config.n_env, 2);
    assert_string_equal(img->config.env[1], "A=b");
    assert_string_equal(img->config.workdir, "/work");
    assert_string_equal(img->config.user, "1000:1000");
    assert_string_equal(img->config.stop_signal, "SIGINT");
}

static void test_import_oci(void **state)
{
    fx *f = *state;
    built b;
    opts o = {.name = "localhost/sluice/test:v1"};
    write_oci(wpath(f, "oci.tar"), &o, &b);
    import_ok(f, wpath(f, "oci.tar"), NULL, 1);
    const sl_image *img = find_ok(f, "localhost/sluice/test:v1");
    assert_string_equal(img->id, b.id);
    assert_int_equal(img->n_repo_tags, 1);
    assert_string_equal(img->repo_tags[0], "localhost/sluice/test:v1");
    char rd[300];
    snprintf(rd, sizeof(rd), "localhost/sluice/test@%s", b.manifest);
    assert_int_equal(img->n_repo_digests, 1);
    assert_string_equal(img->repo_digests[0], rd);
    assert_int_equal(img->size, 6 + 3 + 1 + 1 + 1 + 3);
    check_layers(img, &b);
    check_config(img, "one");
    /* every way of naming it */
    char ref[100];
    assert_ptr_equal(find_ok(f, b.id), img);
    assert_ptr_equal(find_ok(f, b.id + 7), img);
    snprintf(ref, sizeof(ref), "%.12s", b.id + 7);
    assert_ptr_equal(find_ok(f, ref), img);
    snprintf(ref, sizeof(ref), "sha256:%.20s", b.id + 7);
    assert_ptr_equal(find_ok(f, ref), img);
    assert_ptr_equal(find_ok(f, rd), img);
    snprintf(ref, sizeof(ref), "localhost/sluice/test:v1@%s", b.manifest);
    assert_ptr_equal(find_ok(f, ref), img);
    snprintf(ref, sizeof(ref), "%.11s", b.id + 7); /* too short */
    sl_error e = {0};
    assert_null(sl_image_store_find(f->s, ref, &e));
    assert_absent(f, "localhost/sluice/test:v2");
    assert_absent(f, "busybox");
    snprintf(ref, sizeof(ref), "other/name@%s", b.manifest);
    assert_absent(f, ref);
    assert_null(sl_image_store_find(f->s, "Bad:Ref:", &e));
    assert_int_equal(e.errnum, EINVAL);
    /* the same manifest listed twice: one image, both names */
    opts o2 = {.name = "localhost/sluice/test:v1", .alias = "example.com/test:alias"};
    write_oci(wpath(f, "oci2.tar"), &o2, &b);
    import_ok(f, wpath(f, "oci2.tar"), NULL, 1);
    img = find_ok(f, "example.com/test:alias");
    assert_string_equal(img->id, b.id);
    assert_int_equal(img->n_repo_tags, 2);
    assert_int_equal(img->n_repo_digests, 2);
}

static void test_import_docker(void **state)
{
    fx *f = *state;
    built b, bo;
    opts o = {0};
    write_docker(wpath(f, "docker.tar"), &o, &b);
    import_ok(f, wpath(f, "docker.tar"), NULL, 1);
    const sl_image *img = find_ok(f, "test:docker");
    assert_string_equal(img->id, b.id);
    assert_string_equal(img->repo_tags[0], "docker.io/library/test:docker");
    assert_int_equal(img->n_repo_digests, 0); /* docker-archive has no manifest digest */
    check_layers(img, &b);
    check_config(img, "docker");
    /* an OCI image sharing both layers: nothing new unpacked */
    opts oo = {.name = "localhost/sluice/test:v1"};
    write_oci(wpath(f, "oci.tar"), &oo, &bo);
    import_ok(f, wpath(f, "oci.tar"), NULL, 1);
    assert_string_equal(bo.d1, b.d1);
    char layers[128];
    snprintf(layers, sizeof(layers), "%s/layers", f->root);
    assert_int_equal(count_dir(layers), 2);
    const sl_image **all;
    size_t n;
    assert_int_equal(sl_image_store_list(f->s, NULL, &all, &n, NULL), 0);
    assert_int_equal(n, 2);
    free(all);
}

static void test_tag_moves(void **state)
{
    fx *f = *state;
    built b1, b2;
    opts o1 = {.name = "localhost/app:1", .cmd = "first"};
    opts o2 = {.name = "localhost/app:1", .cmd = "second"};
    write_oci(wpath(f, "1.tar"), &o1, &b1);
    write_oci(wpath(f, "2.tar"), &o2, &b2);
    import_ok(f, wpath(f, "1.tar"), "localhost/app:keep", 1);
    import_ok(f, wpath(f, "2.tar"), NULL, 1);
    assert_string_equal(find_ok(f, "localhost/app:1")->id, b2.id);
    const sl_image *old = find_ok(f, b1.id);
    assert_int_equal(old->n_repo_tags, 1);
    assert_string_equal(old->repo_tags[0], "localhost/app:keep");
    /* importing again is idempotent and moves the tag back */
    import_ok(f, wpath(f, "1.tar"), NULL, 1);
    assert_string_equal(find_ok(f, "localhost/app:1")->id, b1.id);
    assert_int_equal(find_ok(f, b2.id)->n_repo_tags, 0); /* kept, untagged, like docker */
    assert_int_equal(find_ok(f, b1.id)->n_repo_tags, 2);
}

static void test_extra_tag(void **state)
{
    fx *f = *state;
    built b;
    opts o = {.name = "localhost/x:1", .second_image = 1};
    write_oci(wpath(f, "two.tar"), &o, &b);
    char *before = snapshot(f);
    sl_error e = {0};
    assert_int_equal(sl_image_store_import(f->s, wpath(f, "two.tar"), "mine", NULL, &e), -1);
    assert_non_null(strstr(e.msg, "exactly one image"));
    char *after = snapshot(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
    assert_int_equal(sl_image_store_import(f->s, wpath(f, "two.tar"), "bad tag!", NULL, &e), -1);
    import_ok(f, wpath(f, "two.tar"), NULL, 2);
    /* both index entries carry the same name: the later one gets it */
    assert_string_equal(find_ok(f, "localhost/x:1")->id, b.id2);
    opts one = {.cmd = "alone"};
    write_oci(wpath(f, "one.tar"), &one, &b);
    import_ok(f, wpath(f, "one.tar"), "mine", 1);
    const sl_image *img = find_ok(f, "mine");
    assert_string_equal(img->id, b.id);
    assert_string_equal(img->repo_tags[0], "docker.io/library/mine:latest");
}

/* ---- removal and listing ---- */

static void test_remove(void **state)
{
    fx *f = *state;
    built b1, b2;
    opts o1 = {.name = "localhost/r:1", .cmd = "r1"};
    static const tar_ent other[] = {{.path = "only-here", .type = AE_IFREG, .data = "2"}};
    opts o2 = {.name = "localhost/r:2", .cmd = "r2", .l2 = other, .nl2 = 1};
    write_oci(wpath(f, "1.tar"), &o1, &b1);
    write_oci(wpath(f, "2.tar"), &o2, &b2);
    import_ok(f, wpath(f, "1.tar"), "localhost/r:alias", 1);
    import_ok(f, wpath(f, "2.tar"), NULL, 1);
    char layers[128], blobs[128];
    snprintf(layers, sizeof(layers), "%s/layers", f->root);
    snprintf(blobs, sizeof(blobs), "%s/blobs/sha256", f->root);
    assert_int_equal(count_dir(layers), 3);
    assert_int_equal(count_dir(blobs), 4);
    sl_error e = {0};
    assert_int_equal(sl_image_store_remove(f->s, "localhost/r:alias", &e), 0); /* untag */
    assert_int_equal(find_ok(f, b1.id)->n_repo_tags, 1);
    assert_absent(f, "localhost/r:alias");
    assert_int_equal(sl_image_store_remove(f->s, "localhost/r:alias", &e), 0); /* idempotent */
    assert_int_equal(sl_image_store_remove(f->s, "localhost/r:2", &e), 0);     /* last tag */
    assert_absent(f, b2.id);
    assert_int_equal(count_dir(layers), 2); /* layer 1 is shared, still used */
    assert_int_equal(count_dir(blobs), 2);
    assert_int_equal(sl_image_store_remove(f->s, "Bad!", &e), -1);
    assert_int_equal(e.errnum, EINVAL);
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "%.14s", b1.id + 7);
    assert_int_equal(sl_image_store_remove(f->s, prefix, &e), 0); /* by short id */
    assert_absent(f, "localhost/r:1");
    assert_int_equal(count_dir(layers), 0);
    assert_int_equal(count_dir(blobs), 0);
    assert_int_equal(sl_image_store_remove(f->s, b1.id, &e), 0);
    /* by repo digest, with all its tags */
    import_ok(f, wpath(f, "1.tar"), "localhost/r:alias", 1);
    char rd[300];
    snprintf(rd, sizeof(rd), "localhost/r@%s", b1.manifest);
    assert_int_equal(sl_image_store_remove(f->s, rd, &e), 0);
    assert_absent(f, "localhost/r:1");
    assert_absent(f, "localhost/r:alias");
}

static void test_list_filter(void **state)
{
    fx *f = *state;
    built b;
    opts o = {.name = "localhost/l:1"};
    write_oci(wpath(f, "l.tar"), &o, &b);
    const sl_image **imgs;
    size_t n;
    assert_int_equal(sl_image_store_list(f->s, NULL, &imgs, &n, NULL), 0);
    assert_int_equal(n, 0);
    free(imgs);
    import_ok(f, wpath(f, "l.tar"), NULL, 1);
    static const char *const hits[] = {"localhost/l:1", "", NULL};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(sl_image_store_list(f->s, hits[i], &imgs, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_string_equal(imgs[0]->id, b.id);
        free(imgs);
    }
    static const char *const misses[] = {"localhost/l:2", "not valid!", "busybox"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(sl_image_store_list(f->s, misses[i], &imgs, &n, NULL), 0);
        assert_int_equal(n, 0);
        free(imgs);
    }
}

/* du -s of the store's root (the usage ImageFsInfo should report). */
static uint64_t du_root(const char *root, const char *opt)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "du -s %s %s", opt, root);
    FILE *p = popen(cmd, "r");
    unsigned long long v = 0;
    assert_non_null(p);
    assert_int_equal(fscanf(p, "%llu", &v), 1);
    pclose(p);
    return v;
}

static void test_fs_usage(void **state)
{
    fx *f = *state;
    sl_image_fs_usage u0, u1;
    assert_int_equal(sl_image_store_fs_usage(f->s, &u0, NULL), 0);
    assert_string_equal(u0.mountpoint, f->root);
    built b;
    opts o = {.name = "localhost/u:1"};
    write_oci(wpath(f, "u.tar"), &o, &b);
    import_ok(f, wpath(f, "u.tar"), NULL, 1);
    assert_int_equal(sl_image_store_fs_usage(f->s, &u1, NULL), 0);
    /* layer 1: 5 directories, 5 inodes of files and links; layer 2: 4 and 3; 2 blobs */
    assert_true(u1.inodes_used >= u0.inodes_used + 19);
    assert_true(u1.used_bytes >= u0.used_bytes + 8 * 4096);
    /* everything the store holds, as du counts it */
    assert_int_equal(u1.inodes_used, du_root(f->root, "--inodes"));
    assert_int_equal(u1.used_bytes, du_root(f->root, "-B1"));
    assert_int_equal(sl_image_store_remove(f->s, b.id, NULL), 0);
    sl_image_fs_usage u2;
    assert_int_equal(sl_image_store_fs_usage(f->s, &u2, NULL), 0);
    assert_int_equal(u2.inodes_used, du_root(f->root, "--inodes"));
    assert_int_equal(u2.used_bytes, du_root(f->root, "-B1"));
}

/* ---- the project's busybox image (scripts/busybox-image) ---- */

static int source_root(char *out, size_t n)
{
    /* the build root is three levels above this executable
     * (<build>/tests/unit/x); __FILE__ is relative to it (or absolute) */
    char exe[512];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (len <= 0)
        return -1;
    exe[len] = '\0';
    char file[1024];
    if (__FILE__[0] == '/')
        snprintf(file, sizeof(file), "%s", __FILE__);
    else
        snprintf(file, sizeof(file), "%s/%s", dirname(dirname(dirname(exe))), __FILE__);
    char *real = realpath(file, NULL);
    if (!real)
        return -1;
    snprintf(out, n, "%s/../..", dirname(real));
    free(real);
    return 0;
}

static void test_busybox_image(void **state)
{
    fx *f = *state;
    char root[1024], cmd[2048];
    if (access("/bin/busybox", X_OK) != 0 || source_root(root, sizeof(root)) != 0) {
        print_message("busybox-static or the source tree is missing: skipped\n");
        skip();
    }
    snprintf(cmd, sizeof(cmd), "%s/scripts/busybox-image %s >/dev/null 2>&1", root,
             wpath(f, "busybox.tar"));
    if (system(cmd) != 0) {
        print_message("scripts/busybox-image failed: skipped\n");
        skip();
    }
    import_ok(f, wpath(f, "busybox.tar"), NULL, 2);
    const sl_image *bb = find_ok(f, "localhost/sluice/busybox:latest");
    const sl_image *pause = find_ok(f, "localhost/sluice/pause");
    assert_int_equal(bb->n_layers, 1);
    assert_string_equal(bb->layer_dirs[0], pause->layer_dirs[0]);
    assert_int_equal(bb->config.n_cmd, 1);
    assert_string_equal(bb->config.cmd[0], "sh");
    assert_string_equal(pause->config.entrypoint[0], "/bin/pause");
    assert_string_equal(bb->config.workdir, "/");
    assert_int_equal(bb->n_repo_digests, 1);
    char path[1024];
    snprintf(path, sizeof(path), "%s/bin/busybox", bb->layer_dirs[0]);
    assert_int_equal(access(path, X_OK), 0);
    char target[32] = {0};
    snprintf(path, sizeof(path), "%s/bin/sh", bb->layer_dirs[0]);
    assert_int_equal(readlink(path, target, sizeof(target) - 1), 7);
    assert_string_equal(target, "busybox");
    struct stat st;
    snprintf(path, sizeof(path), "%s/tmp", bb->layer_dirs[0]);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 01777);
    assert_true(bb->size > 100000);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_import_oci), T(test_import_docker), T(test_tag_moves), T(test_extra_tag),
        T(test_remove),     T(test_list_filter),   T(test_fs_usage),  T(test_busybox_image),
    };
    if (image_tests_skipped())
        return 0;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
