/* Container resources: the checks (field named, code), the resolution
 * (swap default, oom floor), the OCI form, the update merge and the
 * record form, against made-up hosts (v1 with and without memsw or
 * hugetlb, v2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "container/oci_resources.h"
#include "grpc/grpc_status.h"

#define MIB (1024 * 1024)

static sl_cg_host host_v1(void)
{
    sl_cg_host h;
    const char *why;
    memset(&h, 0, sizeof(h));
    h.memsw = true;
    assert_int_equal(sl_cg_list_parse("0-1", &h.cpus, &why), 0);
    assert_int_equal(sl_cg_list_parse("0", &h.mems, &why), 0);
    strcpy(h.cpus_text, "0-1");
    strcpy(h.mems_text, "0");
    h.hugepages[0] = (sl_cg_hugepage){2 * MIB, 0};
    h.n_hugepages = 1;
    h.oom_floor = 0;
    return h;
}

/* Checks r; on failure expects code and a message starting with the
 * field. */
static void expect_fail(sl_res *r, const sl_cg_host *h, int code, const char *start)
{
    sl_error e = {0};
    assert_int_equal(sl_res_check(r, h, "linux.resources", &e), -1);
    assert_int_equal(e.code, code);
    if (strncmp(e.msg, start, strlen(start)))
        fail_msg("message \"%s\" does not start with \"%s\"", e.msg, start);
}

static void expect_ok(sl_res *r, const sl_cg_host *h)
{
    sl_error e = {0};
    if (sl_res_check(r, h, "linux.resources", &e) < 0)
        fail_msg("refused: %s", e.msg);
}

static json_int_t oci_int(const json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(json_object_get(o, a), b);
    assert_non_null(v);
    return json_integer_value(v);
}

static void empty_is_nothing(void **state)
{
    (void)state;
    sl_cg_host h = host_v1();
    sl_res r = {0};
    expect_ok(&r, &h);
    json_t *o = sl_res_oci(&r, &h);
    assert_int_equal(json_object_size(o), 0);
    json_decref(o);
}

static void full_v1(void **state)
{
    (void)state;
    sl_cg_host h = host_v1();
    sl_res r = {.cpu_period = 100000,
                .cpu_quota = 50000,
                .cpu_shares = 512,
                .memory_limit_in_bytes = 64 * MIB,
                .oom_score_adj = 500,
                .cpuset_cpus = "1",
                .cpuset_mems = "0"};
    expect_ok(&r, &h);
    assert_int_equal(r.memory_swap_limit_in_bytes, 64 * MIB); /* no swap unless asked */
    json_t *o = sl_res_oci(&r, &h);
    assert_int_equal(oci_int(o, "memory", "limit"), 64 * MIB);
    assert_int_equal(oci_int(o, "memory", "swap"), 64 * MIB);
    assert_int_equal(oci_int(o, "cpu", "shares"), 512);
    assert_int_equal(oci_int(o, "cpu", "quota"), 50000);
    assert_int_equal(oci_int(o, "cpu", "period"), 100000);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "cpu"), "cpus")), "1");
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "cpu"), "mems")), "0");
    assert_null(json_object_get(o, "hugepageLimits"));
    assert_null(json_object_get(o, "unified"));
    json_decref(o);
}

static void cpu_ranges(void **state)
{
    (void)state;
    sl_cg_host h = host_v1();
    sl_res r = {.cpu_period = 999};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.cpu_period: 999");
    r = (sl_res){.cpu_period = 1000001};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.cpu_period: 1000001");
    r = (sl_res){.cpu_quota = -2};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.cpu_quota: -2");
    r = (sl_res){.cpu_quota = 999};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.cpu_quota: 999");
    r = (sl_res){.cpu_quota = SL_RES_CPU_QUOTA_MAX + 1};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.cpu_quota:");
    r = (sl_res){.cpu_shares = 1};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.cpu_shares: 1");
    r = (sl_res){.cpu_shares = 262145};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.cpu_shares: 262145");
    r = (sl_res){.cpu_shares = -5};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.cpu_shares: -5");
    r = (sl_res){.cpu_quota = -1, .cpu_period = 1000, .cpu_shares = 2};
    expect_ok(&r, &h);
    json_t *o = sl_res_oci(&r, &h);
    assert_int_equal(oci_int(o, "cpu", "quota"), -1);
    json_decref(o);
}

static void cpusets(void **state)
{
    (void)state;
    sl_cg_host h = host_v1();
    sl_res r = {.cpuset_cpus = "0-1", .cpuset_mems = "0"};
    expect_ok(&r, &h);
    r = (sl_res){.cpuset_cpus = "0-2"};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT,
                "linux.resources.cpuset_cpus: \"0-2\": cpu 2 is not online on this host (0-1)");
    r = (sl_res){.cpuset_cpus = "zero"};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.cpuset_cpus: \"zero\"");
    r = (sl_res){.cpuset_mems = "1"};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT,
                "linux.resources.cpuset_mems: \"1\": memory node 1 is not online");
    r = (sl_res){.cpuset_mems = "0,"};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.cpuset_mems: \"0,\"");
}

static void memory_and_swap(void **state)
{
    (void)state;
    sl_cg_host h = host_v1();
    sl_res r = {.memory_limit_in_bytes = -2};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.memory_limit_in_bytes: -2");
    r = (sl_res){.memory_limit_in_bytes = 4096};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.memory_limit_in_bytes: 4096");
    r = (sl_res){.memory_limit_in_bytes = 64 * MIB, .memory_swap_limit_in_bytes = 32 * MIB};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT,
                "linux.resources.memory_swap_limit_in_bytes: 33554432: below");
    r = (sl_res){.memory_swap_limit_in_bytes = 32 * MIB};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT,
                "linux.resources.memory_swap_limit_in_bytes: 33554432: needs");
    r = (sl_res){.memory_swap_limit_in_bytes = -3};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.memory_swap_limit_in_bytes: -3");
    r = (sl_res){.memory_limit_in_bytes = 64 * MIB, .memory_swap_limit_in_bytes = 128 * MIB};
    expect_ok(&r, &h);
    assert_int_equal(r.memory_swap_limit_in_bytes, 128 * MIB);
    r = (sl_res){.memory_limit_in_bytes = -1, .memory_swap_limit_in_bytes = -1};
    expect_ok(&r, &h);
    json_t *o = sl_res_oci(&r, &h);
    assert_int_equal(oci_int(o, "memory", "limit"), -1);
    assert_int_equal(oci_int(o, "memory", "swap"), -1);
    json_decref(o);
}

/* Without swap accounting only "no more swap than memory" is honoured
 * (trivially), and memsw never reaches runc. */
static void swap_without_memsw(void **state)
{
    (void)state;
    sl_cg_host h = host_v1();
    h.memsw = false;
    sl_res r = {.memory_limit_in_bytes = 64 * MIB, .memory_swap_limit_in_bytes = 128 * MIB};
    expect_fail(&r, &h, SL_GRPC_UNIMPLEMENTED,
                "linux.resources.memory_swap_limit_in_bytes: 134217728: this host");
    r = (sl_res){.memory_limit_in_bytes = 64 * MIB, .memory_swap_limit_in_bytes = 64 * MIB};
    expect_ok(&r, &h);
    json_t *o = sl_res_oci(&r, &h);
    assert_int_equal(oci_int(o, "memory", "limit"), 64 * MIB);
    assert_null(json_object_get(json_object_get(o, "memory"), "swap"));
    json_decref(o);
    r = (sl_res){.memory_limit_in_bytes = 64 * MIB};
    expect_ok(&r, &h);
    assert_int_equal(r.memory_swap_limit_in_bytes, 0);
}

static void hugepages(void **state)
{
    (void)state;
    sl_cg_host h = host_v1(); /* 2MB pages, empty pool, no controller */
    sl_res r = {.hugepage_limits = {{"2MB", 0}}, .n_hugepage_limits = 1};
    expect_ok(&r, &h); /* the kubelet's default: nothing, and the pool has nothing */
    json_t *o = sl_res_oci(&r, &h);
    assert_null(json_object_get(o, "hugepageLimits"));
    json_decref(o);
    h.hugepages[0].pool = 10;
    expect_fail(&r, &h, SL_GRPC_UNIMPLEMENTED, "linux.resources.hugepage_limits[0]: this host");
    r.hugepage_limits[0].limit = 10 * 2 * MIB; /* the whole pool: the limit holds */
    expect_ok(&r, &h);
    h.hugetlb = true;
    r.hugepage_limits[0].limit = 0;
    expect_ok(&r, &h);
    o = sl_res_oci(&r, &h);
    json_t *hp = json_array_get(json_object_get(o, "hugepageLimits"), 0);
    assert_string_equal(json_string_value(json_object_get(hp, "pageSize")), "2MB");
    assert_int_equal(json_integer_value(json_object_get(hp, "limit")), 0);
    json_decref(o);
    r = (sl_res){.hugepage_limits = {{"1GB", 0}}, .n_hugepage_limits = 1};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT,
                "linux.resources.hugepage_limits[0].page_size: \"1GB\": not a huge page size of "
                "this host (it has: 2MB)");
    r = (sl_res){.hugepage_limits = {{"2 MB", 0}}, .n_hugepage_limits = 1};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT,
                "linux.resources.hugepage_limits[0].page_size: \"2 MB\"");
    r = (sl_res){.hugepage_limits = {{"2MB", 0}, {"2048KB", 0}}, .n_hugepage_limits = 2};
    expect_fail(
        &r, &h, SL_GRPC_INVALID_ARGUMENT,
        "linux.resources.hugepage_limits[1].page_size: \"2048KB\": that page size is given");
    r = (sl_res){.hugepage_limits = {{"2MB", UINT64_MAX}}, .n_hugepage_limits = 1};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.hugepage_limits[0].limit:");
}

static void unified(void **state)
{
    (void)state;
    sl_cg_host h = host_v1();
    sl_res r = {.unified = {{"memory.high", "100000000"}}, .n_unified = 1};
    expect_fail(&r, &h, SL_GRPC_UNIMPLEMENTED,
                "linux.resources.unified: needs the cgroup v2 unified hierarchy");
    h.v2 = true;
    expect_ok(&r, &h);
    json_t *o = sl_res_oci(&r, &h);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(o, "unified"), "memory.high")),
        "100000000");
    json_decref(o);
    const char *bad_keys[] = {"../x", "memory/high", "", ".x", "nodot", "memory.high\n"};
    for (size_t i = 0; i < sizeof(bad_keys) / sizeof(bad_keys[0]); i++) {
        r = (sl_res){.unified = {{bad_keys[i], "1"}}, .n_unified = 1};
        expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.unified:");
    }
    r = (sl_res){.unified = {{"memory.high", "1\n2"}}, .n_unified = 1};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.unified: \"memory.high\"");
    r = (sl_res){.unified = {{"memory.high", "\xff"}}, .n_unified = 1};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.unified: \"memory.high\"");
    r = (sl_res){.unified = {{"memory.high", "1"}, {"memory.high", "2"}}, .n_unified = 2};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.unified: \"memory.high\" given");
}

static void oom_score_adj(void **state)
{
    (void)state;
    sl_cg_host h = host_v1();
    sl_res r = {.oom_score_adj = 1001};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.oom_score_adj: 1001");
    r = (sl_res){.oom_score_adj = -1001};
    expect_fail(&r, &h, SL_GRPC_INVALID_ARGUMENT, "linux.resources.oom_score_adj: -1001");
    r = (sl_res){.oom_score_adj = -998};
    expect_ok(&r, &h);
    assert_int_equal(r.oom_score_adj, 0); /* never below the daemon's own */
    h.oom_floor = SL_CG_OOM_MIN;          /* a daemon with CAP_SYS_RESOURCE */
    r = (sl_res){.oom_score_adj = -998};
    expect_ok(&r, &h);
    assert_int_equal(r.oom_score_adj, -998);
    h.oom_floor = 300;
    r = (sl_res){.oom_score_adj = 0};
    expect_ok(&r, &h);
    assert_int_equal(r.oom_score_adj, 300);
}

/* containerd's update semantics. */
static void merge(void **state)
{
    (void)state;
    sl_cg_host h = host_v1();
    sl_error e;
    sl_res cur = {.cpu_period = 100000,
                  .cpu_quota = 50000,
                  .cpu_shares = 512,
                  .memory_limit_in_bytes = 64 * MIB,
                  .oom_score_adj = 500,
                  .cpuset_cpus = "1",
                  .hugepage_limits = {{"2MB", 0}},
                  .n_hugepage_limits = 1};
    expect_ok(&cur, &h); /* swap resolved to 64 MiB */
    sl_res upd = {.memory_limit_in_bytes = 128 * MIB,
                  .cpu_quota = 20000,
                  .hugepage_limits = {{"2MB", 4 * MIB}},
                  .n_hugepage_limits = 1};
    assert_int_equal(sl_res_merge(&cur, &upd, "linux", &e), 0);
    expect_ok(&cur, &h);
    assert_int_equal(cur.memory_limit_in_bytes, 128 * MIB);
    assert_int_equal(cur.memory_swap_limit_in_bytes, 128 * MIB); /* follows the new limit */
    assert_int_equal(cur.cpu_quota, 20000);
    assert_int_equal(cur.cpu_period, 100000);
    assert_int_equal(cur.cpu_shares, 512);
    assert_int_equal(cur.oom_score_adj, 500);
    assert_string_equal(cur.cpuset_cpus, "1");
    assert_int_equal(cur.n_hugepage_limits, 1);
    assert_int_equal(cur.hugepage_limits[0].limit, 4 * MIB);
    upd = (sl_res){
        .cpuset_cpus = "0", .oom_score_adj = 700, .unified = {{"a.b", "1"}}, .n_unified = 1};
    assert_int_equal(sl_res_merge(&cur, &upd, "linux", &e), 0);
    assert_string_equal(cur.cpuset_cpus, "0");
    assert_int_equal(cur.oom_score_adj, 700);
    assert_int_equal(cur.memory_limit_in_bytes, 128 * MIB);
    upd = (sl_res){.unified = {{"a.b", "2"}}, .n_unified = 1};
    assert_int_equal(sl_res_merge(&cur, &upd, "linux", &e), 0);
    assert_int_equal(cur.n_unified, 1);
    assert_string_equal(cur.unified[0].value, "2");
}

static void merge_overflow(void **state)
{
    (void)state;
    sl_error e = {0};
    sl_res cur = {0}, upd = {0};
    char keys[SL_RES_MAX_UNIFIED + 1][16];
    for (size_t i = 0; i <= SL_RES_MAX_UNIFIED; i++) {
        snprintf(keys[i], sizeof(keys[i]), "k.%zu", i);
        upd.unified[0] = (sl_res_kv){keys[i], "1"};
        upd.n_unified = 1;
        int rc = sl_res_merge(&cur, &upd, "linux", &e);
        assert_int_equal(rc, i < SL_RES_MAX_UNIFIED ? 0 : -1);
    }
    assert_int_equal(e.code, SL_GRPC_INVALID_ARGUMENT);
    assert_non_null(strstr(e.msg, "linux.unified: more than"));
}

static void record_round_trip(void **state)
{
    (void)state;
    sl_res r = {.cpu_period = 100000,
                .cpu_quota = -1,
                .cpu_shares = 2,
                .memory_limit_in_bytes = 64 * MIB,
                .memory_swap_limit_in_bytes = 96 * MIB,
                .oom_score_adj = -5,
                .cpuset_cpus = "0-1",
                .cpuset_mems = "0",
                .hugepage_limits = {{"2MB", 8 * MIB}},
                .n_hugepage_limits = 1,
                .unified = {{"memory.high", "max"}},
                .n_unified = 1};
    json_t *j = sl_res_to_json(&r);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    json_t *back = json_loads(text, 0, NULL);
    free(text);
    sl_res b;
    sl_res_from_json(back, &b);
    assert_int_equal(b.cpu_period, 100000);
    assert_int_equal(b.cpu_quota, -1);
    assert_int_equal(b.cpu_shares, 2);
    assert_int_equal(b.memory_limit_in_bytes, 64 * MIB);
    assert_int_equal(b.memory_swap_limit_in_bytes, 96 * MIB);
    assert_int_equal(b.oom_score_adj, -5);
    assert_string_equal(b.cpuset_cpus, "0-1");
    assert_string_equal(b.cpuset_mems, "0");
    assert_int_equal(b.n_hugepage_limits, 1);
    assert_string_equal(b.hugepage_limits[0].page_size, "2MB");
    assert_int_equal(b.hugepage_limits[0].limit, 8 * MIB);
    assert_int_equal(b.n_unified, 1);
    assert_string_equal(b.unified[0].key, "memory.high");
    assert_string_equal(b.unified[0].value, "max");
    json_decref(back);
    sl_res_from_json(NULL, &b); /* records from before: nothing applied */
    assert_int_equal(b.memory_limit_in_bytes, 0);
    assert_null(b.cpuset_cpus);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty_is_nothing), cmocka_unit_test(full_v1),
        cmocka_unit_test(cpu_ranges),       cmocka_unit_test(cpusets),
        cmocka_unit_test(memory_and_swap),  cmocka_unit_test(swap_without_memsw),
        cmocka_unit_test(hugepages),        cmocka_unit_test(unified),
        cmocka_unit_test(oom_score_adj),    cmocka_unit_test(merge),
        cmocka_unit_test(merge_overflow),   cmocka_unit_test(record_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
