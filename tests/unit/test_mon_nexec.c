/* The native exec path's plan (mon_nexec_plan.c): env as runc's init sets
 * it, HOME from an /etc/passwd text, and the config.json fields that send
 * an exec to runc (an error with code 0 naming the field). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "mon.h"
#include "mon_nexec.h"

int mon_log_level = MON_ERR;
void mon_log(int level, const char *fmt, ...)
{
    (void)level;
    (void)fmt;
}

static void test_env_first_place_last_value(void **state)
{
    (void)state;
    json_t *env = json_pack("[s,s,s,s]", "A=1", "B=2", "A=3", "C=x=y");
    sl_error e = {0};
    char **v = mon_nexec_env(env, 1, &e);
    assert_non_null(v);
    assert_string_equal(v[0], "A=3");
    assert_string_equal(v[1], "B=2");
    assert_string_equal(v[2], "C=x=y");
    assert_null(v[3]);
    assert_null(v[4]); /* the spare slot */
    for (size_t i = 0; v[i]; i++)
        free(v[i]);
    free(v);
    json_decref(env);
}

static void test_env_bad_entry(void **state)
{
    (void)state;
    const char *bad[] = {"NOEQUALS", "=value"};
    for (size_t i = 0; i < 2; i++) {
        json_t *env = json_pack("[s,s]", "OK=1", bad[i]);
        sl_error e = {0};
        assert_null(mon_nexec_env(env, 1, &e));
        assert_int_equal(e.code, 0);
        assert_non_null(strstr(e.msg, "process.env[1]"));
        json_decref(env);
    }
}

static void test_passwd_home(void **state)
{
    (void)state;
    const char *pw = "root:x:0:0:root:/root:/bin/sh\n"
                     "bad line\n"
                     "app:x:1000:1000::/home/app:/bin/sh\n"
                     "x10:x:10000:1::/ten:/bin/sh";
    char home[64];
    mon_nexec_passwd_home(pw, 0, home, sizeof(home));
    assert_string_equal(home, "/root");
    mon_nexec_passwd_home(pw, 1000, home, sizeof(home));
    assert_string_equal(home, "/home/app");
    mon_nexec_passwd_home(pw, 10000, home, sizeof(home));
    assert_string_equal(home, "/ten");
    mon_nexec_passwd_home(pw, 100, home, sizeof(home)); /* not a prefix match of 1000 */
    assert_string_equal(home, "/");
    mon_nexec_passwd_home("", 0, home, sizeof(home));
    assert_string_equal(home, "/");
}

/* A bundle whose config.json is base with process/linux edits. */
static char *bundle_with(const char *config)
{
    char tmpl[] = "/tmp/nexec-XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    char *path = sl_path_join(dir, "config.json");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(config, f);
    fclose(f);
    free(path);
    return strdup(dir);
}

static void expect_fallback(const char *config, const char *what)
{
    char *dir = bundle_with(config);
    json_t *cmd = json_pack("[s]", "true");
    sl_error e = {0};
    assert_null(mon_nexec_plan_new(dir, getpid(), cmd, false, 0, 0, &e));
    assert_int_equal(e.code, 0);
    if (!strstr(e.msg, what))
        fail_msg("\"%s\" does not name %s", e.msg, what);
    json_decref(cmd);
    sl_rm_rf(dir, NULL);
    free(dir);
}

#define CAPS "\"capabilities\":{\"bounding\":[],\"effective\":[]}"

static void test_fallbacks(void **state)
{
    (void)state;
    expect_fallback("{\"process\":{\"cwd\":\"/\"," CAPS ",\"apparmorProfile\":\"p\"},"
                    "\"linux\":{}}",
                    "process.apparmorProfile");
    expect_fallback("{\"process\":{\"cwd\":\"/\"," CAPS ",\"selinuxLabel\":\"l\"},\"linux\":{}}",
                    "process.selinuxLabel");
    expect_fallback("{\"process\":{\"cwd\":\"/\"," CAPS ",\"ioPriority\":{}},\"linux\":{}}",
                    "process.ioPriority");
    expect_fallback("{\"process\":{\"cwd\":\"/\"," CAPS ",\"user\":{\"username\":\"x\"}},"
                    "\"linux\":{}}",
                    "process.user.username");
    expect_fallback("{\"process\":{\"cwd\":\"/\"," CAPS "},"
                    "\"linux\":{\"namespaces\":[{\"type\":\"user\"}]}}",
                    "a user namespace");
    expect_fallback("{\"process\":{\"cwd\":\"/\",\"capabilities\":{\"bounding\":[\"CAP_NEW\"]}},"
                    "\"linux\":{}}",
                    "unknown capability CAP_NEW");
    expect_fallback("{\"process\":{\"cwd\":\"/\"," CAPS ",\"env\":[\"X\"]},\"linux\":{}}",
                    "process.env[0]");
}

static void test_plan_of_own_process(void **state)
{
    (void)state;
    char *dir =
        bundle_with("{\"process\":{\"cwd\":\"/tmp\",\"user\":{\"uid\":1000,\"gid\":1000,"
                    "\"additionalGids\":[2000,3000]},\"env\":[\"PATH=/bin\",\"HOME=/h\"],"
                    "\"capabilities\":{\"bounding\":[\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"],"
                    "\"effective\":[\"CAP_KILL\"]},\"noNewPrivileges\":true,\"oomScoreAdj\":5,"
                    "\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":100,\"soft\":50}]},"
                    "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"}],"
                    "\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":"
                    "[\"unshare\"],\"action\":\"SCMP_ACT_ERRNO\"}]}}}");
    json_t *cmd = json_pack("[s,s]", "sh", "-c");
    sl_error e = {0};
    mon_nexec_plan *p = mon_nexec_plan_new(dir, getpid(), cmd, true, 80, 24, &e);
    if (!p)
        fail_msg("%s", e.msg);
    assert_int_equal(p->uid, 1000);
    assert_int_equal(p->ngids, 2);
    assert_int_equal(p->gids[1], 3000);
    assert_true(p->bounding == ((1u << 5) | (1u << 10)));
    assert_true(p->effective == (1u << 5));
    assert_true(p->no_new_privs && p->has_oom && p->oom_score_adj == 5);
    assert_int_equal(p->nrlimits, 1);
    assert_int_equal(p->rlimits[0].lim.rlim_cur, 50);
    assert_non_null(p->seccomp.filter);
    assert_true(p->seccomp.len > 0);
    assert_true(p->has_home);
    assert_string_equal(p->path, "/bin");
    assert_string_equal(p->envp[2], "TERM=xterm"); /* a terminal: as the runc path */
    assert_string_equal(p->argv[0], "sh");
    assert_true(p->ncgroups > 0); /* our own cgroups, from /proc/PID/cgroup */
    mon_nexec_plan_free(p);
    json_decref(cmd);
    sl_rm_rf(dir, NULL);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_first_place_last_value),
        cmocka_unit_test(test_env_bad_entry),
        cmocka_unit_test(test_passwd_home),
        cmocka_unit_test(test_fallbacks),
        cmocka_unit_test(test_plan_of_own_process),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
