/* Image references: normalisation to the canonical docker form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>

#include "image/image_ref.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_ref_normalize(void **state)
{
    (void)state;
    static const char *const h64 =
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    char in[200], want[300], out[SL_IMAGE_REF_MAX];
    static const struct {
        const char *in, *out;
    } ok[] = {
        {"busybox", "docker.io/library/busybox:latest"},
        {"busybox:1.36", "docker.io/library/busybox:1.36"},
        {"library/busybox", "docker.io/library/busybox:latest"},
        {"docker.io/busybox", "docker.io/library/busybox:latest"},
        {"index.docker.io/library/busybox:x", "docker.io/library/busybox:x"},
        {"localhost/sluice/busybox:latest", "localhost/sluice/busybox:latest"},
        {"localhost:5000/a/b", "localhost:5000/a/b:latest"},
        {"quay.io/coreos/etcd:v3.5_x-1", "quay.io/coreos/etcd:v3.5_x-1"},
        {"registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9"},
        {"a__b/c-d.e", "docker.io/a__b/c-d.e:latest"},
        {"user/repo", "docker.io/user/repo:latest"},
    };
    for (size_t i = 0; i < N(ok); i++) {
        sl_error e = {0};
        if (sl_image_ref_normalize(ok[i].in, out, sizeof(out), &e) != 0)
            fail_msg("%s: %s", ok[i].in, e.msg);
        assert_string_equal(out, ok[i].out);
    }
    snprintf(in, sizeof(in), "busybox@sha256:%s", h64);
    snprintf(want, sizeof(want), "docker.io/library/busybox@sha256:%s", h64);
    assert_int_equal(sl_image_ref_normalize(in, out, sizeof(out), NULL), 0);
    assert_string_equal(out, want);
    snprintf(in, sizeof(in), "k8s.gcr.io/pause:3.1@sha256:%s", h64);
    snprintf(want, sizeof(want), "k8s.gcr.io/pause:3.1@sha256:%s", h64);
    assert_int_equal(sl_image_ref_normalize(in, out, sizeof(out), NULL), 0);
    assert_string_equal(out, want);
    static const char *bad[] = {
        "",         "Busybox",    "a:b:c", "busybox@sha256:abc", "a/-b", "a//b",
        "busybox:", "busybox:-x", "a..b",  "localhost:99999x/a", ":tag", "busybox@md5:0123",
        "-a.io/x",  "a.io:/x"};
    for (size_t i = 0; i < N(bad); i++) {
        sl_error e = {0};
        if (sl_image_ref_normalize(bad[i], out, sizeof(out), &e) != -1)
            fail_msg("\"%s\" accepted as %s", bad[i], out);
        assert_int_equal(e.errnum, EINVAL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref_normalize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
