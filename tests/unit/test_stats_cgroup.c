/* The cgroup reader (stats/cgroup.h): the parsers on text as the kernel
 * writes it (v1 and v2 memory.stat, cpu.stat, limits), and whole reads of
 * fixture trees laid out like a v1 and a v2 hierarchy. */
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
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "stats/cgroup.h"

/* memory.stat of a v1 cgroup (kernel 6.x), trimmed. */
static const char *v1_memory_stat = "cache 11382784\n"
                                    "rss 10801152\n"
                                    "rss_huge 0\n"
                                    "shmem 9580544\n"
                                    "inactive_file 315392\n"
                                    "pgfault 89191\n"
                                    "pgmajfault 0\n"
                                    "hierarchical_memory_limit 9223372036854771712\n"
                                    "total_cache 2331688960\n"
                                    "total_rss 268324864\n"
                                    "total_shmem 9580544\n"
                                    "total_pgfault 34138234\n"
                                    "total_pgmajfault 4473\n"
                                    "total_inactive_anon 257208320\n"
                                    "total_inactive_file 951955456\n";

/* memory.stat of a v2 cgroup, trimmed. */
static const char *v2_memory_stat = "anon 1523712\n"
                                    "file 69632000\n"
                                    "kernel 610304\n"
                                    "shmem 0\n"
                                    "anon_thp 0\n"
                                    "inactive_anon 1478656\n"
                                    "active_anon 45056\n"
                                    "inactive_file 52056064\n"
                                    "active_file 17575936\n"
                                    "pgfault 12043\n"
                                    "pgmajfault 7\n";

static const char *v2_cpu_stat = "usage_usec 1234567\n"
                                 "user_usec 1000000\n"
                                 "system_usec 234567\n"
                                 "nr_periods 0\n";

static void put(const char *dir, const char *file, const char *text)
{
    char *d = sl_path_join(root, dir);
    char *p = sl_path_join(d, file);
    sl_error e;
    assert_int_equal(sl_mkdir_p(d, 0755, &e), 0);
    assert_int_equal(sl_write_file_atomic(p, text, strlen(text), 0644, &e), 0);
    free(p);
    free(d);
}

static void test_parse_value(void **state)
{
    (void)state;
    uint64_t v;
    assert_true(sl_cg_parse_value("123\n", &v));
    assert_int_equal(v, 123);
    assert_true(sl_cg_parse_value("0", &v));
    assert_int_equal(v, 0);
    assert_true(sl_cg_parse_value("max\n", &v));
    assert_true(v == SL_CG_NO_LIMIT);
    /* v1's "no limit": PAGE_COUNTER_MAX pages */
    assert_true(sl_cg_parse_value("9223372036854771712\n", &v));
    assert_true(v == SL_CG_NO_LIMIT);
    assert_true(sl_cg_parse_value("4611686018427387904\n", &v)); /* exactly the bound */
    assert_true(v == (1ULL << 62));
    assert_false(sl_cg_parse_value("", &v));
    assert_false(sl_cg_parse_value("\n", &v));
    assert_false(sl_cg_parse_value("12a\n", &v));
    assert_false(sl_cg_parse_value("-1\n", &v));
    assert_false(sl_cg_parse_value("maximum\n", &v));
    assert_false(sl_cg_parse_value("18446744073709551616\n", &v)); /* 2^64 */
    assert_false(sl_cg_parse_value("1 2\n", &v));
}

static void test_keyed_v1(void **state)
{
    (void)state;
    uint64_t v;
    assert_true(sl_cg_keyed(v1_memory_stat, "total_inactive_file", &v));
    assert_int_equal(v, 951955456);
    assert_true(sl_cg_keyed(v1_memory_stat, "inactive_file", &v)); /* not total_inactive_file */
    assert_int_equal(v, 315392);
    assert_true(sl_cg_keyed(v1_memory_stat, "total_rss", &v));
    assert_int_equal(v, 268324864);
    assert_true(sl_cg_keyed(v1_memory_stat, "rss", &v)); /* not rss_huge */
    assert_int_equal(v, 10801152);
    assert_true(sl_cg_keyed(v1_memory_stat, "total_pgmajfault", &v));
    assert_int_equal(v, 4473);
    assert_false(sl_cg_keyed(v1_memory_stat, "total_swap", &v));
    assert_false(sl_cg_keyed(v1_memory_stat, "total", &v));
    assert_false(sl_cg_keyed("key\n", "key", &v));
    assert_false(sl_cg_keyed("key x\n", "key", &v));
    assert_false(sl_cg_keyed("key 12x\n", "key", &v));
    assert_true(sl_cg_keyed("a 1\nkey 7", "key", &v)); /* no final newline */
    assert_int_equal(v, 7);
}

static void test_keyed_v2(void **state)
{
    (void)state;
    uint64_t v;
    assert_true(sl_cg_keyed(v2_memory_stat, "anon", &v)); /* not anon_thp */
    assert_int_equal(v, 1523712);
    assert_true(sl_cg_keyed(v2_memory_stat, "inactive_file", &v));
    assert_int_equal(v, 52056064);
    assert_true(sl_cg_keyed(v2_memory_stat, "pgmajfault", &v));
    assert_int_equal(v, 7);
    assert_true(sl_cg_keyed(v2_cpu_stat, "usage_usec", &v));
    assert_int_equal(v, 1234567);
}

static void test_working_set_and_available(void **state)
{
    (void)state;
    sl_cg_stats st = {.mem = true, .mem_usage = 100, .inactive_file = 30};
    st.mem_limit = SL_CG_NO_LIMIT;
    uint64_t a;
    assert_int_equal(sl_cg_working_set(&st), 70);
    assert_false(sl_cg_available(&st, &a));
    st.mem_limit = 1000;
    assert_true(sl_cg_available(&st, &a));
    assert_int_equal(a, 930);
    st.inactive_file = 200; /* more inactive file than usage: floored */
    assert_int_equal(sl_cg_working_set(&st), 0);
    st.mem_limit = 0;
    assert_true(sl_cg_available(&st, &a));
    assert_int_equal(a, 0);
    sl_cg_stats sw = {.swap = true, .swap_usage = 5, .swap_limit = SL_CG_NO_LIMIT};
    assert_false(sl_cg_swap_available(&sw, &a));
    sw.swap_limit = 12;
    assert_true(sl_cg_swap_available(&sw, &a));
    assert_int_equal(a, 7);
}

static void test_count_lines(void **state)
{
    (void)state;
    assert_int_equal(sl_cg_count_lines("", 0), 0);
    assert_int_equal(sl_cg_count_lines("12\n345\n", 7), 2);
}

static void test_detect(void **state)
{
    (void)state;
    assert_int_equal(sl_cg_detect(root), SL_CG_NONE);
    put("memory", "tasks", "");
    assert_int_equal(sl_cg_detect(root), SL_CG_V1);
    /* this machine's own hierarchy, v1 or v2, is recognised */
    assert_int_not_equal(sl_cg_detect(SL_CG_ROOT), SL_CG_NONE);
}

static void v1_tree(void)
{
    put("cpuacct/pod/ctr", "cpuacct.usage", "5000000000\n");
    put("memory/pod/ctr", "memory.usage_in_bytes", "1048576000\n");
    put("memory/pod/ctr", "memory.limit_in_bytes", "2097152000\n");
    put("memory/pod/ctr", "memory.stat", v1_memory_stat);
    put("memory/pod/ctr", "memory.memsw.usage_in_bytes", "1048776000\n");
    put("memory/pod/ctr", "memory.memsw.limit_in_bytes", "2097352000\n");
    put("pids/pod/ctr", "cgroup.procs", "1\n2\n3\n");
    put("pids/pod/ctr/sub", "cgroup.procs", "4\n");
    put("pids/pod", "cgroup.procs", "");
}

static void test_read_v1(void **state)
{
    (void)state;
    v1_tree();
    sl_cg_stats st;
    sl_error e;
    assert_int_equal(sl_cg_read(root, SL_CG_V1, "/pod/ctr", &st, &e), 0);
    assert_true(st.cpu);
    assert_true(st.cpu_ns == 5000000000ull);
    assert_true(st.mem);
    assert_int_equal(st.mem_usage, 1048576000);
    assert_int_equal(st.mem_limit, 2097152000);
    assert_int_equal(st.inactive_file, 951955456);
    assert_int_equal(sl_cg_working_set(&st), 1048576000 - 951955456);
    assert_int_equal(st.rss, 268324864);
    assert_int_equal(st.pgfault, 34138234);
    assert_int_equal(st.pgmajfault, 4473);
    assert_true(st.swap);
    assert_int_equal(st.swap_usage, 200000);
    assert_int_equal(st.swap_limit, 200000); /* memsw limit - memory limit */
    assert_true(st.procs);
    assert_int_equal(st.nprocs, 4); /* descendants count */
    /* the pod: processes of every container below it */
    assert_int_equal(sl_cg_read(root, SL_CG_V1, "/pod", &st, &e), 0);
    assert_int_equal(st.nprocs, 4);
    assert_false(st.cpu);
}

static void test_read_v1_unlimited_no_swap(void **state)
{
    (void)state;
    put("cpuacct/c", "cpuacct.usage", "7\n");
    put("memory/c", "memory.usage_in_bytes", "4096\n");
    put("memory/c", "memory.limit_in_bytes", "9223372036854771712\n");
    put("memory/c", "memory.stat", "total_inactive_file 8192\n");
    sl_cg_stats st;
    sl_error e;
    assert_int_equal(sl_cg_read(root, SL_CG_V1, "/c", &st, &e), 0);
    assert_true(st.mem_limit == SL_CG_NO_LIMIT);
    assert_int_equal(sl_cg_working_set(&st), 0);
    assert_false(st.swap);
    assert_false(st.procs); /* no pids hierarchy and no cgroup.procs in cpuacct */
    /* memsw with an unlimited memsw limit: usage, no limit */
    put("memory/c", "memory.memsw.usage_in_bytes", "4096\n");
    put("memory/c", "memory.memsw.limit_in_bytes", "9223372036854771712\n");
    assert_int_equal(sl_cg_read(root, SL_CG_V1, "/c", &st, &e), 0);
    assert_true(st.swap);
    assert_int_equal(st.swap_usage, 0);
    assert_true(st.swap_limit == SL_CG_NO_LIMIT);
}

static void test_read_v2(void **state)
{
    (void)state;
    put("kubepods/pod1/ctr", "cpu.stat", v2_cpu_stat);
    put("kubepods/pod1/ctr", "memory.current", "73400320\n");
    put("kubepods/pod1/ctr", "memory.max", "max\n");
    put("kubepods/pod1/ctr", "memory.stat", v2_memory_stat);
    put("kubepods/pod1/ctr", "memory.swap.current", "4096\n");
    put("kubepods/pod1/ctr", "memory.swap.max", "1048576\n");
    put("kubepods/pod1/ctr", "cgroup.procs", "10\n11\n");
    put("kubepods/pod1", "cgroup.procs", "");
    sl_cg_stats st;
    sl_error e;
    assert_int_equal(sl_cg_read(root, SL_CG_V2, "/kubepods/pod1/ctr", &st, &e), 0);
    assert_true(st.cpu);
    assert_int_equal(st.cpu_ns, 1234567000);
    assert_int_equal(st.mem_usage, 73400320);
    assert_true(st.mem_limit == SL_CG_NO_LIMIT);
    assert_int_equal(sl_cg_working_set(&st), 73400320 - 52056064);
    assert_int_equal(st.rss, 1523712);
    assert_int_equal(st.pgfault, 12043);
    assert_int_equal(st.pgmajfault, 7);
    assert_true(st.swap);
    assert_int_equal(st.swap_usage, 4096);
    assert_int_equal(st.swap_limit, 1048576);
    assert_int_equal(st.nprocs, 2);
    assert_int_equal(sl_cg_read(root, SL_CG_V2, "/kubepods/pod1", &st, &e), 0);
    assert_int_equal(st.nprocs, 2);
}

static void test_read_missing_and_bad(void **state)
{
    (void)state;
    sl_cg_stats st;
    sl_error e;
    assert_int_equal(sl_cg_read(root, SL_CG_V1, "/gone", &st, &e), -1);
    assert_int_equal(e.errnum, ENOENT);
    assert_int_equal(sl_cg_read(root, SL_CG_V2, "/gone", &st, &e), -1);
    assert_int_equal(e.errnum, ENOENT);
    assert_int_equal(sl_cg_read(root, SL_CG_V1, "/a/../../etc", &st, &e), -1);
    assert_int_equal(e.errnum, EINVAL);
    assert_int_equal(sl_cg_read(root, SL_CG_V1, "relative", &st, &e), -1);
    assert_int_equal(e.errnum, EINVAL);
    /* garbage in the files: the parts that do not parse are absent */
    put("cpuacct/junk", "cpuacct.usage", "lots\n");
    put("memory/junk", "memory.usage_in_bytes", "12\n");
    assert_int_equal(sl_cg_read(root, SL_CG_V1, "/junk", &st, &e), -1); /* no memory.stat */
    put("memory/junk", "memory.stat", "nothing 1\n");
    assert_int_equal(sl_cg_read(root, SL_CG_V1, "/junk", &st, &e), 0);
    assert_false(st.cpu);
    assert_true(st.mem);
    assert_int_equal(st.inactive_file, 0);
}

/* The host's own unified hierarchy, where it has one (a v1 host in hybrid
 * mode mounts it at /sys/fs/cgroup/unified, without controllers; cpu.stat
 * and cgroup.procs are always there): a real cgroup with a process that
 * burns CPU. */
static const char *real_v2_root(void)
{
    if (sl_cg_detect(SL_CG_ROOT) == SL_CG_V2)
        return SL_CG_ROOT;
    if (sl_cg_detect(SL_CG_ROOT "/unified") == SL_CG_V2)
        return SL_CG_ROOT "/unified";
    return NULL;
}

static void burn_ms(long ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    do
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

static void test_read_real_v2(void **state)
{
    (void)state;
    const char *v2 = real_v2_root();
    if (!v2 || geteuid() != 0) {
        print_message("skipped: no cgroup2 hierarchy at %s or %s/unified, or not root\n",
                      SL_CG_ROOT, SL_CG_ROOT);
        skip();
        return;
    }
    char rel[64], dir[256], procs[300];
    snprintf(rel, sizeof(rel), "/sl-unit-%d", (int)getpid());
    snprintf(dir, sizeof(dir), "%s%s", v2, rel);
    snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t child = fork();
    if (child == 0) {
        FILE *f = fopen(procs, "w");
        if (!f || fprintf(f, "0\n") < 0 || fclose(f) != 0)
            _exit(1);
        burn_ms(200);
        if (write(ready[1], "x", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    char x;
    assert_int_equal(read(ready[0], &x, 1), 1);
    sl_cg_stats st;
    sl_error e;
    int rc = sl_cg_read(v2, SL_CG_V2, rel, &st, &e);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    close(ready[0]);
    close(ready[1]);
    rmdir(dir);
    assert_int_equal(rc, 0);
    assert_true(st.cpu);
    assert_true(st.cpu_ns >= 150000000ull); /* the child's 200 ms, in usec steps */
    assert_true(st.procs);
    assert_int_equal(st.nprocs, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_value),
        cmocka_unit_test(test_keyed_v1),
        cmocka_unit_test(test_keyed_v2),
        cmocka_unit_test(test_working_set_and_available),
        cmocka_unit_test(test_count_lines),
        cmocka_unit_test_setup_teardown(test_detect, tmp_root_setup, tmp_root_teardown),
        cmocka_unit_test_setup_teardown(test_read_v1, tmp_root_setup, tmp_root_teardown),
        cmocka_unit_test_setup_teardown(test_read_v1_unlimited_no_swap, tmp_root_setup,
                                        tmp_root_teardown),
        cmocka_unit_test_setup_teardown(test_read_v2, tmp_root_setup, tmp_root_teardown),
        cmocka_unit_test_setup_teardown(test_read_missing_and_bad, tmp_root_setup,
                                        tmp_root_teardown),
        cmocka_unit_test(test_read_real_v2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
