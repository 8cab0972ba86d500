/* The CRI side of container resources: messages in (limits, field names),
 * ContainerStatus.resources out, the update merge on this host, and the
 * pod's cgroup_parent checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cri/ctr_resources.h"
#include "cri/pod_cgroup.h"
#include "grpc/grpc_status.h"

#define MIB (1024 * 1024)

static void too_many_entries(void **state)
{
    (void)state;
    Runtime__V1__LinuxContainerResources c = RUNTIME__V1__LINUX_CONTAINER_RESOURCES__INIT;
    Runtime__V1__HugepageLimit hp = RUNTIME__V1__HUGEPAGE_LIMIT__INIT;
    Runtime__V1__HugepageLimit *list[SL_RES_MAX_HUGEPAGES + 1];
    for (size_t i = 0; i <= SL_RES_MAX_HUGEPAGES; i++)
        list[i] = &hp;
    c.hugepage_limits = list;
    c.n_hugepage_limits = SL_RES_MAX_HUGEPAGES + 1;
    sl_res r;
    sl_error e = {0};
    assert_int_equal(sl_cri_res_in(&c, "linux.resources", &r, &e), -1);
    assert_int_equal(e.code, SL_GRPC_INVALID_ARGUMENT);
    assert_non_null(strstr(e.msg, "linux.resources.hugepage_limits: 9 entries"));
    c.n_hugepage_limits = 1;
    c.n_unified = SL_RES_MAX_UNIFIED + 1;
    assert_int_equal(sl_cri_res_in(&c, "linux", &r, &e), -1);
    assert_non_null(strstr(e.msg, "linux.unified: 65 entries"));
    c.n_unified = 0;
    assert_int_equal(sl_cri_res_in(&c, "linux", &r, &e), 0);
    assert_int_equal(r.n_hugepage_limits, 1);
    assert_int_equal(sl_cri_res_in(NULL, "linux", &r, &e), 0);
}

static Runtime__V1__ContainerConfig *config_with(Runtime__V1__LinuxContainerResources *res)
{
    static Runtime__V1__ContainerConfig c;
    static Runtime__V1__LinuxContainerConfig l;
    runtime__v1__container_config__init(&c);
    runtime__v1__linux_container_config__init(&l);
    l.resources = res;
    c.linux = &l;
    return &c;
}

/* Create then update, on the machine the test runs on, and report. */
static void create_update_report(void **state)
{
    (void)state;
    Runtime__V1__LinuxContainerResources c = RUNTIME__V1__LINUX_CONTAINER_RESOURCES__INIT;
    c.memory_limit_in_bytes = 64 * MIB;
    c.cpu_quota = 50000;
    c.cpu_period = 100000;
    c.cpu_shares = 512;
    c.cpuset_cpus = "0";
    sl_ctr_res res;
    sl_error e = {0};
    assert_int_equal(sl_cri_res_create(config_with(&c), &res, &e), 0);
    json_t *mem = json_object_get(res.oci, "memory");
    assert_int_equal(json_integer_value(json_object_get(mem, "limit")), 64 * MIB);
    Runtime__V1__LinuxContainerResources upd = RUNTIME__V1__LINUX_CONTAINER_RESOURCES__INIT;
    upd.cpu_quota = 20000;
    sl_ctr_res after;
    assert_int_equal(sl_cri_res_update(res.rec, &upd, &after, &e), 0);
    sl_cri_res_report rep;
    sl_cri_res_status(after.rec, &rep);
    assert_ptr_equal(rep.res.linux, &rep.linux);
    assert_int_equal(rep.linux.cpu_quota, 20000);
    assert_int_equal(rep.linux.cpu_period, 100000);
    assert_int_equal(rep.linux.cpu_shares, 512);
    assert_int_equal(rep.linux.memory_limit_in_bytes, 64 * MIB);
    assert_string_equal(rep.linux.cpuset_cpus, "0");
    assert_string_equal(rep.linux.cpuset_mems, "");
    upd.cpu_quota = -7;
    sl_ctr_res bad;
    assert_int_equal(sl_cri_res_update(res.rec, &upd, &bad, &e), -1);
    assert_int_equal(e.code, SL_GRPC_INVALID_ARGUMENT);
    assert_non_null(strstr(e.msg, "linux.cpu_quota: -7"));
    sl_ctr_res_fini(&after);
    sl_ctr_res_fini(&res);
    c.memory_limit_in_bytes = 1;
    assert_int_equal(sl_cri_res_create(config_with(&c), &res, &e), -1);
    assert_non_null(strstr(e.msg, "linux.resources.memory_limit_in_bytes: 1"));
    assert_int_equal(sl_cri_res_create(config_with(NULL), &res, &e), 0);
    sl_ctr_res_fini(&res);
}

static void report_of_nothing(void **state)
{
    (void)state;
    sl_cri_res_report rep;
    sl_cri_res_status(NULL, &rep);
    assert_non_null(rep.res.linux);
    assert_int_equal(rep.linux.memory_limit_in_bytes, 0);
    assert_int_equal(rep.linux.n_hugepage_limits, 0);
    assert_string_equal(rep.linux.cpuset_cpus, "");
}

static void expect_parent(const char *parent, int code, const char *part)
{
    sl_error e = {0};
    int rc = sl_pod_cgroup_parent_check(parent, &e);
    if (!code) {
        if (rc != 0)
            fail_msg("\"%s\" refused: %s", parent, e.msg);
        return;
    }
    assert_int_equal(rc, -1);
    assert_int_equal(e.code, code);
    if (strncmp(e.msg, "linux.cgroup_parent: ", 21) || !strstr(e.msg, part))
        fail_msg("\"%s\": message \"%s\" lacks \"%s\"", parent, e.msg, part);
}

static void cgroup_parents(void **state)
{
    (void)state;
    expect_parent("/kubepods/besteffort/pod1234", 0, NULL);
    expect_parent("/kubepods/pod-a_b.c", 0, NULL);
    expect_parent("/", 0, NULL);
    expect_parent("kubepods/pod1", SL_GRPC_INVALID_ARGUMENT, "is relative");
    expect_parent("/kubepods.slice/kubepods-besteffort.slice", SL_GRPC_UNIMPLEMENTED,
                  "systemd slice");
    expect_parent("kubepods-besteffort-pod1.slice", SL_GRPC_UNIMPLEMENTED, "systemd slice");
    expect_parent("system.slice:cri:x", SL_GRPC_UNIMPLEMENTED, "systemd slice");
    expect_parent("/a/../b", SL_GRPC_INVALID_ARGUMENT, "\"..\" part");
    expect_parent("/a/./b", SL_GRPC_INVALID_ARGUMENT, "\"..\" part");
    expect_parent("/a//b", SL_GRPC_INVALID_ARGUMENT, "empty");
    expect_parent("/a/", SL_GRPC_INVALID_ARGUMENT, "empty");
    expect_parent("/a\nb", SL_GRPC_INVALID_ARGUMENT, "printable ASCII");
    expect_parent("/caf\xc3\xa9", SL_GRPC_INVALID_ARGUMENT, "printable ASCII");
    expect_parent("/a\xff", SL_GRPC_INVALID_ARGUMENT, "printable ASCII");
    char *long_parent = malloc(SL_CGROUP_PARENT_MAX + 2);
    long_parent[0] = '/';
    memset(long_parent + 1, 'a', SL_CGROUP_PARENT_MAX);
    long_parent[SL_CGROUP_PARENT_MAX + 1] = '\0';
    expect_parent(long_parent, SL_GRPC_INVALID_ARGUMENT, "at most");
    free(long_parent);
}

static void pod_levels(void **state)
{
    (void)state;
    Runtime__V1__PodSandboxConfig c = RUNTIME__V1__POD_SANDBOX_CONFIG__INIT;
    Runtime__V1__LinuxPodSandboxConfig l = RUNTIME__V1__LINUX_POD_SANDBOX_CONFIG__INIT;
    Runtime__V1__LinuxContainerResources res = RUNTIME__V1__LINUX_CONTAINER_RESOURCES__INIT;
    const char *id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    sl_error e = {0};
    json_t *rec = json_object();
    assert_int_equal(sl_pod_cgroup_setup(&c, id, rec, &e), 0);
    assert_string_equal(json_string_value(json_object_get(rec, "cgroup_parent")),
                        "/sluice/0123456789abcdef");
    assert_true(json_is_true(json_object_get(rec, "cgroup_owned")));
    sl_pod p = {.rec = rec};
    char *path = sl_pod_cgroup_ctr_path(&p, "ctr");
    assert_string_equal(path, "/sluice/0123456789abcdef/ctr");
    free(path);
    c.linux = &l;
    l.cgroup_parent = "/kubepods/besteffort/pod1";
    assert_int_equal(sl_pod_cgroup_setup(&c, id, rec, &e), 0);
    assert_true(json_is_false(json_object_get(rec, "cgroup_owned")));
    path = sl_pod_cgroup_ctr_path(&p, "ctr");
    assert_string_equal(path, "/kubepods/besteffort/pod1/ctr");
    free(path);
    l.cgroup_parent = "/";
    assert_int_equal(sl_pod_cgroup_setup(&c, id, rec, &e), 0);
    path = sl_pod_cgroup_ctr_path(&p, "ctr");
    assert_string_equal(path, "/ctr");
    free(path);
    l.resources = &res;
    res.cpu_quota = -3;
    assert_int_equal(sl_pod_cgroup_setup(&c, id, rec, &e), -1);
    assert_non_null(strstr(e.msg, "linux.resources.cpu_quota: -3"));
    res.cpu_quota = 0;
    l.overhead = &res;
    l.resources = NULL;
    res.memory_limit_in_bytes = -9;
    assert_int_equal(sl_pod_cgroup_setup(&c, id, rec, &e), -1);
    assert_non_null(strstr(e.msg, "linux.overhead.memory_limit_in_bytes: -9"));
    json_decref(rec);
    json_t *old = json_object(); /* a record from before: sluice's own level */
    sl_pod q = {.rec = old};
    snprintf(q.id, sizeof(q.id), "%s", id);
    path = sl_pod_cgroup_ctr_path(&q, "c");
    assert_string_equal(path, "/sluice/0123456789abcdef/c");
    free(path);
    json_decref(old);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(too_many_entries),  cmocka_unit_test(create_update_report),
        cmocka_unit_test(report_of_nothing), cmocka_unit_test(cgroup_parents),
        cmocka_unit_test(pod_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
