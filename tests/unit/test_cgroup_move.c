/* sluice-mon's move out of sluiced's cgroup: the parsing helpers, and a
 * real move of a child process into a fresh cgroup in every hierarchy of
 * this machine, seen in its /proc/self/cgroup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_host.h"
#include "cgroup_move.h"
#include "fsutil.h"

static void test_first_controller(void **state)
{
    (void)state;
    char out[16];
    assert_int_equal(sl_cg_first_controller("cpu,cpuacct", 11, out, sizeof(out)), 0);
    assert_string_equal(out, "cpu");
    assert_int_equal(sl_cg_first_controller("name=systemd", 12, out, sizeof(out)), 0);
    assert_string_equal(out, "name=systemd");
    assert_int_equal(sl_cg_first_controller("", 0, out, sizeof(out)), 0);
    assert_string_equal(out, "");
    assert_int_equal(sl_cg_first_controller("averyveryverylongname", 21, out, sizeof(out)), -1);
}

static const char mountinfo[] =
    "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

/* The v2 mount is found by its fstype; v1 ones by their super options. */
static void test_mountinfo(void **state)
{
    (void)state;
    char mnt[64], root[64];
    assert_int_equal(sl_cg_mountinfo_find(mountinfo, NULL, mnt, sizeof(mnt), root, sizeof(root)),
                     0);
    assert_string_equal(mnt, "/sys/fs/cgroup/unified");
    assert_int_equal(
        sl_cg_mountinfo_find(mountinfo, "name=systemd", mnt, sizeof(mnt), root, sizeof(root)), 0);
    assert_string_equal(mnt, "/sys/fs/cgroup/systemd");
    assert_int_equal(
        sl_cg_mountinfo_find(mountinfo, "cpuacct", mnt, sizeof(mnt), root, sizeof(root)), 0);
    assert_string_equal(mnt, "/sys/fs/cgroup/cpu,cpuacct");
    assert_int_equal(
        sl_cg_mountinfo_find(mountinfo, "memory", mnt, sizeof(mnt), root, sizeof(root)), -1);
    assert_int_equal(sl_cg_mountinfo_find("31 30 0:28 / /x rw - cgroup cgroup rw,cpu\n", NULL, mnt,
                                          sizeof(mnt), root, sizeof(root)),
                     -1);
}

/* Every line of /proc/self/cgroup names path. */
static int all_in(const char *path)
{
    char *text = NULL;
    if (sl_read_file("/proc/self/cgroup", 65536, &text, NULL, NULL) < 0)
        return 0;
    int lines = 0, in = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char *p = strchr(strchr(l, ':') + 1, ':') + 1;
        lines++;
        in += !strcmp(p, path);
    }
    free(text);
    return lines > 0 && lines == in ? lines : -1;
}

static void remove_test_dirs(const char *top, const char *leaf)
{
    DIR *d = opendir("/sys/fs/cgroup");
    struct dirent *de;
    char p[512];
    snprintf(p, sizeof(p), "/sys/fs/cgroup%s", leaf);
    rmdir(p);
    snprintf(p, sizeof(p), "/sys/fs/cgroup%s", top);
    rmdir(p);
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "/sys/fs/cgroup/%s%s", de->d_name, leaf);
        rmdir(p);
        snprintf(p, sizeof(p), "/sys/fs/cgroup/%s%s", de->d_name, top);
        rmdir(p);
    }
    if (d)
        closedir(d);
}

static void test_move_self(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip(); /* writing cgroup.procs needs root */
    char top[64], leaf[96];
    snprintf(top, sizeof(top), "/sluice-unit-%d", (int)getpid());
    snprintf(leaf, sizeof(leaf), "%s/mon", top);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        sl_error e = {0};
        int n = sl_cg_move_self(leaf, &e);
        if (n <= 0)
            fprintf(stderr, "sl_cg_move_self: %d %s\n", n, e.msg);
        _exit(n > 0 && all_in(leaf) >= n ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    remove_test_dirs(top, leaf);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_controller),
        cmocka_unit_test(test_mountinfo),
        cmocka_unit_test(test_move_self),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
