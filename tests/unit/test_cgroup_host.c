/* The host cgroup parsers (lists, page sizes, counters, /proc/<pid>/cgroup,
 * mountinfo) on fixed texts, and the probe on the machine it runs on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup_host.h"
#include "fsutil.h"

static bool has(const sl_cg_bits *b, int i)
{
    return b->w[i / 64] & (UINT64_C(1) << (i % 64));
}

static void lists(void **state)
{
    (void)state;
    sl_cg_bits b;
    const char *why = NULL;
    assert_int_equal(sl_cg_list_parse("0-3,8,10-11", &b, &why), 0);
    for (int i = 0; i < 16; i++)
        assert_int_equal(has(&b, i), (i <= 3 || i == 8 || i == 10 || i == 11));
    assert_int_equal(sl_cg_list_parse("", &b, &why), 0);
    assert_int_equal(sl_cg_bits_missing(&b, &b), -1);
    assert_int_equal(sl_cg_list_parse("8191", &b, &why), 0);
    assert_true(has(&b, 8191));
    const char *bad[] = {"a",
                         "1-",
                         "-1",
                         "3-1",
                         "1,,2",
                         "1,",
                         ",1",
                         " 1",
                         "1 ",
                         "8192",
                         "0-8192",
                         "1-2-3",
                         "99999999999999999999999",
                         "1\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why = NULL;
        assert_int_equal(sl_cg_list_parse(bad[i], &b, &why), -1);
        assert_non_null(why);
    }
    char *long_list = malloc(SL_CG_LIST_MAX + 2);
    memset(long_list, '1', SL_CG_LIST_MAX + 1);
    long_list[SL_CG_LIST_MAX + 1] = '\0';
    assert_int_equal(sl_cg_list_parse(long_list, &b, &why), -1);
    free(long_list);
}

static void missing_bits(void **state)
{
    (void)state;
    sl_cg_bits a, online;
    const char *why;
    assert_int_equal(sl_cg_list_parse("0-1", &online, &why), 0);
    assert_int_equal(sl_cg_list_parse("1", &a, &why), 0);
    assert_int_equal(sl_cg_bits_missing(&a, &online), -1);
    assert_int_equal(sl_cg_list_parse("0-3", &a, &why), 0);
    assert_int_equal(sl_cg_bits_missing(&a, &online), 2);
    assert_int_equal(sl_cg_list_parse("700", &a, &why), 0);
    assert_int_equal(sl_cg_bits_missing(&a, &online), 700);
}

static void page_sizes(void **state)
{
    (void)state;
    uint64_t n;
    assert_int_equal(sl_cg_page_size_parse("2MB", &n), 0);
    assert_int_equal(n, 2 * 1024 * 1024);
    assert_int_equal(sl_cg_page_size_parse("1GB", &n), 0);
    assert_int_equal(n, UINT64_C(1) << 30);
    assert_int_equal(sl_cg_page_size_parse("64KB", &n), 0);
    assert_int_equal(n, 65536);
    const char *bad[] = {"",          "MB", "2mb",  "2M",   "2 MB",
                         "0MB",       "2B", "2MBB", "-2MB", "99999999999999999999PB",
                         "16777216PB"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(sl_cg_page_size_parse(bad[i], &n), -1);
    char name[SL_CG_PAGE_SIZE_MAX];
    sl_cg_page_size_name(2 * 1024 * 1024, name);
    assert_string_equal(name, "2MB");
    sl_cg_page_size_name(UINT64_C(1) << 30, name);
    assert_string_equal(name, "1GB");
    sl_cg_page_size_name(65536, name);
    assert_string_equal(name, "64KB");
    sl_cg_page_size_name(1536 * 1024, name);
    assert_string_equal(name, "1536KB");
}

static void counters(void **state)
{
    (void)state;
    uint64_t n = 99;
    const char *v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
    assert_int_equal(sl_cg_kv_get(v1, "oom_kill", &n), 0);
    assert_int_equal(n, 3);
    const char *v2 = "low 0\nhigh 0\nmax 5\noom 2\noom_kill 1\noom_group_kill 0\n";
    assert_int_equal(sl_cg_kv_get(v2, "oom_kill", &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(sl_cg_kv_get(v2, "oom", &n), 0);
    assert_int_equal(n, 2);
    /* a kernel before 4.13 has no counter */
    assert_int_equal(sl_cg_kv_get("oom_kill_disable 0\nunder_oom 0\n", "oom_kill", &n), -1);
    assert_int_equal(sl_cg_kv_get("oom_kill x\n", "oom_kill", &n), -1);
    assert_int_equal(sl_cg_kv_get("", "oom_kill", &n), -1);
}

static void proc_paths(void **state)
{
    (void)state;
    char out[256];
    const char *v1 = "9:name=systemd:/a\n4:memory:/sluice/p/c\n2:cpu,cpuacct:/x\n0::/u\n";
    assert_int_equal(sl_cg_proc_path(v1, "memory", out, sizeof(out)), 0);
    assert_string_equal(out, "/sluice/p/c");
    assert_int_equal(sl_cg_proc_path(v1, "cpuacct", out, sizeof(out)), 0);
    assert_string_equal(out, "/x");
    assert_int_equal(sl_cg_proc_path(v1, "name=systemd", out, sizeof(out)), 0);
    assert_string_equal(out, "/a");
    assert_int_equal(sl_cg_proc_path(v1, NULL, out, sizeof(out)), 0);
    assert_string_equal(out, "/u");
    assert_int_equal(sl_cg_proc_path(v1, "hugetlb", out, sizeof(out)), -1);
    assert_int_equal(sl_cg_proc_path(v1, "mem", out, sizeof(out)), -1);
    assert_int_equal(sl_cg_proc_path("0::/only", NULL, out, sizeof(out)), 0);
    assert_string_equal(out, "/only");
    assert_int_equal(sl_cg_proc_path("4:memory:/sluice/p/c", "memory", out, 5), -1);
    assert_int_equal(sl_cg_proc_path("garbage\n", "memory", out, sizeof(out)), -1);
}

static void mountinfo(void **state)
{
    (void)state;
    const char *text =
        "22 1 0:21 / /sys rw,nosuid shared:7 - sysfs sysfs rw\n"
        "30 22 0:26 / /sys/fs/cgroup rw shared:9 - tmpfs tmpfs rw,mode=755\n"
        "31 30 0:27 / /sys/fs/cgroup/unified rw shared:10 - cgroup2 cgroup2 rw,memory\n"
        "33 30 0:29 / /sys/fs/cgroup/cpu,cpuacct rw shared:12 - cgroup cgroup rw,cpu,cpuacct\n"
        "34 30 0:30 /nested /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
    char mnt[256], root[256];
    assert_int_equal(sl_cg_mountinfo_find(text, "memory", mnt, sizeof(mnt), root, sizeof(root)), 0);
    assert_string_equal(mnt, "/sys/fs/cgroup/memory");
    assert_string_equal(root, "/nested");
    assert_int_equal(sl_cg_mountinfo_find(text, "cpuacct", mnt, sizeof(mnt), root, sizeof(root)),
                     0);
    assert_string_equal(mnt, "/sys/fs/cgroup/cpu,cpuacct");
    assert_string_equal(root, "/");
    assert_int_equal(sl_cg_mountinfo_find(text, "hugetlb", mnt, sizeof(mnt), root, sizeof(root)),
                     -1);
    assert_int_equal(sl_cg_mountinfo_find("1 2 3:4 / /x rw - cgroup\n", "memory", mnt, sizeof(mnt),
                                          root, sizeof(root)),
                     -1);
    assert_int_equal(sl_cg_mountinfo_find("", "memory", mnt, sizeof(mnt), root, sizeof(root)), -1);
}

/* The probe agrees with the files it reads on this machine. */
static void probe_this_host(void **state)
{
    (void)state;
    sl_cg_host h;
    sl_error e;
    assert_int_equal(sl_cg_probe(&h, &e), 0);
    char *online = NULL;
    assert_int_equal(sl_read_file("/sys/devices/system/cpu/online", 4096, &online, NULL, &e), 0);
    online[strcspn(online, "\n")] = '\0';
    assert_string_equal(h.cpus_text, online);
    free(online);
    assert_int_equal(sl_cg_bits_missing(&h.cpus, &h.cpus), -1);
    assert_true(h.oom_floor >= SL_CG_OOM_MIN && h.oom_floor <= SL_CG_OOM_MAX);
    if (access("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes", F_OK) == 0)
        assert_true(h.memsw);
    char *file = sl_cg_oom_file(getpid());
    uint64_t n;
    if (file) /* a memory cgroup: its counter is readable (kernel >= 4.13) */
        assert_int_equal(sl_cg_oom_kills(file, &n), 0);
    free(file);
    assert_null(sl_cg_oom_file(0x7ffffff0)); /* no such process */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lists),           cmocka_unit_test(missing_bits),
        cmocka_unit_test(page_sizes),      cmocka_unit_test(counters),
        cmocka_unit_test(proc_paths),      cmocka_unit_test(mountinfo),
        cmocka_unit_test(probe_this_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
