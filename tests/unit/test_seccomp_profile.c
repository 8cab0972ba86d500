/* Seccomp profiles: parsing and libseccomp validation of Localhost
 * profiles (each bad part named), file reading (missing, directory, FIFO,
 * too large), and the RuntimeDefault profile resolved per capability set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/seccomp_profile.h"
#include "fsutil.h"

#define BIT(n) ((uint64_t)1 << (n))
#define DEFAULT_CAPS 0xa80425fbULL
#define SYS_ADMIN 21
#define SYS_PTRACE 19

static const char *good = "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 1,"
                          " \"architectures\": [\"SCMP_ARCH_X86_64\", \"SCMP_ARCH_X86\"],"
                          " \"syscalls\": ["
                          "  {\"names\": [\"read\", \"write\", \"exit_group\"],"
                          "   \"action\": \"SCMP_ACT_ALLOW\"},"
                          "  {\"names\": [\"personality\"], \"action\": \"SCMP_ACT_ALLOW\","
                          "   \"args\": [{\"index\": 0, \"value\": 0, \"op\": \"SCMP_CMP_EQ\"},"
                          "              {\"index\": 0, \"value\": 8, \"op\": \"SCMP_CMP_EQ\"}]},"
                          "  {\"names\": [\"mkdir\"], \"action\": \"SCMP_ACT_ERRNO\","
                          "   \"errnoRet\": 1}]}";

static void parses_a_good_profile(void **state)
{
    (void)state;
    sl_error e;
    json_t *p = sl_seccomp_parse(good, &e);
    assert_non_null(p);
    assert_string_equal(json_string_value(json_object_get(p, "defaultAction")), "SCMP_ACT_ERRNO");
    assert_int_equal(json_array_size(json_object_get(p, "syscalls")), 3);
    json_decref(p);
    /* the smallest profile: a default action */
    p = sl_seccomp_parse("{\"defaultAction\": \"SCMP_ACT_LOG\"}", &e);
    assert_non_null(p);
    json_decref(p);
}

/* Parses text, expects failure with msg containing want. */
static void bad(const char *text, const char *want)
{
    sl_error e = {0};
    json_t *p = sl_seccomp_parse(text, &e);
    if (p || !strstr(e.msg, want))
        fail_msg("profile %s: got \"%s\", want \"%s\"", text, p ? "accepted" : e.msg, want);
}

static void names_the_bad_part(void **state)
{
    (void)state;
    bad("{\"defaultAction\": ", "invalid JSON at line 1");
    bad("[]", "a JSON object is expected");
    bad("{}", "defaultAction: a string is expected");
    bad("{\"defaultAction\": \"SCMP_ACT_MAYBE\"}",
        "defaultAction: unknown action \"SCMP_ACT_MAYBE\"");
    bad("{\"defaultAction\": \"SCMP_ACT_NOTIFY\"}", "SCMP_ACT_NOTIFY is not supported");
    bad("{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": -1}",
        "defaultErrnoRet: an integer 0..4095");
    bad("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"archMap\": []}", "unknown key \"archMap\"");
    bad("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"comment\": \"x\"}", "unknown key \"comment\"");
    bad("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": [\"SCMP_ARCH_Z80\"]}",
        "architectures[0]: unknown architecture \"SCMP_ARCH_Z80\"");
    bad("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"flags\": [\"SECCOMP_FILTER_FLAG_LOG\"]}",
        "flags: not supported");
    bad("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"listenerPath\": \"/run/agent.sock\"}",
        "listenerPath: not supported");
    bad("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": {}}", "syscalls: an array");
    bad("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\", "
        "\"no_such_call\"], \"action\": \"SCMP_ACT_ERRNO\"}]}",
        "syscalls[0].names[1]: unknown system call \"no_such_call\"");
    bad("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [], \"action\": "
        "\"SCMP_ACT_ERRNO\"}]}",
        "syscalls[0].names: a non-empty array");
    bad("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"name\": \"read\", \"action\": "
        "\"SCMP_ACT_ERRNO\"}]}",
        "syscalls[0]: unknown key \"name\"");
    bad("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"], "
        "\"action\": \"SCMP_ACT_DENY\"}]}",
        "syscalls[0].action: unknown action \"SCMP_ACT_DENY\"");
    bad("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"], "
        "\"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 70000}]}",
        "syscalls[0].errnoRet: an integer 0..4095");
    bad("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"], "
        "\"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 6, \"value\": 1, \"op\": "
        "\"SCMP_CMP_EQ\"}]}]}",
        "syscalls[0].args[0].index: an integer 0..5");
    bad("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"], "
        "\"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 0, \"value\": 1, \"op\": "
        "\"SCMP_CMP_ABOUT\"}]}]}",
        "syscalls[0].args[0].op: unknown operator \"SCMP_CMP_ABOUT\"");
    bad("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"], "
        "\"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"value\": 1, \"op\": \"SCMP_CMP_EQ\"}]}]}",
        "syscalls[0].args[0].index: required");
    bad("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"defaultAction\": \"SCMP_ACT_LOG\"}",
        "duplicate object key");
}

static char *write_tmp(const char *dir, const char *name, const char *text)
{
    char *path = sl_path_join(dir, name);
    sl_error e;
    assert_int_equal(sl_write_file_atomic(path, text, strlen(text), 0644, &e), 0);
    return path;
}

static void loads_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/sl-seccomp-XXXXXX";
    assert_non_null(mkdtemp(dir));
    sl_error e;
    char *ok = write_tmp(dir, "ok.json", good);
    json_t *p = sl_seccomp_load(ok, &e);
    assert_non_null(p);
    json_decref(p);

    char *missing = sl_path_join(dir, "missing.json");
    assert_null(sl_seccomp_load(missing, &e));
    assert_non_null(strstr(e.msg, "cannot read"));
    assert_non_null(strstr(e.msg, "No such file or directory"));

    assert_null(sl_seccomp_load(dir, &e));
    assert_non_null(strstr(e.msg, "not a regular file"));

    char *fifo = sl_path_join(dir, "fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_null(sl_seccomp_load(fifo, &e)); /* returns at once: never opened for reading data */
    assert_non_null(strstr(e.msg, "not a regular file"));

    char *invalid = write_tmp(dir, "bad.json", "{\"defaultAction\": \"SCMP_ACT_ALLOW\",");
    assert_null(sl_seccomp_load(invalid, &e));
    assert_non_null(strstr(e.msg, "bad.json\": invalid JSON"));

    char *big = malloc(SL_SECCOMP_MAX_PROFILE_BYTES + 2);
    memset(big, ' ', SL_SECCOMP_MAX_PROFILE_BYTES + 1);
    big[SL_SECCOMP_MAX_PROFILE_BYTES + 1] = '\0';
    char *huge = write_tmp(dir, "huge.json", big);
    assert_null(sl_seccomp_load(huge, &e));
    assert_non_null(strstr(e.msg, "larger than"));

    char *paths[] = {ok, missing, fifo, invalid, huge, big};
    for (size_t i = 0; i < 6; i++)
        free(paths[i]);
    sl_rm_rf(dir, &e);
}

/* The first rule naming call (NULL: none). */
static const json_t *rule_for(const json_t *p, const char *call)
{
    const json_t *rules = json_object_get(p, "syscalls");
    for (size_t i = 0; i < json_array_size(rules); i++) {
        const json_t *names = json_object_get(json_array_get(rules, i), "names");
        for (size_t j = 0; j < json_array_size(names); j++)
            if (!strcmp(json_string_value(json_array_get(names, j)), call))
                return json_array_get(rules, i);
    }
    return NULL;
}

static void runtime_default_per_capability(void **state)
{
    (void)state;
    sl_error e;
    json_t *p = sl_seccomp_runtime_default(DEFAULT_CAPS, &e);
    assert_non_null(p);
    assert_string_equal(json_string_value(json_object_get(p, "defaultAction")), "SCMP_ACT_ERRNO");
    assert_int_equal(json_integer_value(json_object_get(p, "defaultErrnoRet")), 1);
    assert_true(json_array_size(json_object_get(p, "architectures")) >= 1);
    assert_null(json_object_get(p, "comment"));
    assert_non_null(rule_for(p, "read"));
    assert_non_null(rule_for(p, "chroot")); /* CAP_SYS_CHROOT is a default capability */
    const char *blocked[] = {"mount",           "umount2",
                             "unshare",         "setns",
                             "keyctl",          "add_key",
                             "ptrace",          "bpf",
                             "perf_event_open", "reboot",
                             "kexec_load",      "swapon",
                             "init_module",     "open_by_handle_at",
                             "request_key"};
    for (size_t i = 0; i < sizeof(blocked) / sizeof(blocked[0]); i++)
        if (rule_for(p, blocked[i]))
            fail_msg("%s is allowed without its capability", blocked[i]);
    const json_t *clone = rule_for(p, "clone");
    assert_non_null(clone); /* allowed, but only without CLONE_NEW* flags */
    assert_non_null(json_object_get(clone, "args"));
    assert_null(json_object_get(clone, "ifNoCap"));
    const json_t *clone3 = rule_for(p, "clone3");
    assert_string_equal(json_string_value(json_object_get(clone3, "action")), "SCMP_ACT_ERRNO");
    assert_int_equal(json_integer_value(json_object_get(clone3, "errnoRet")), 38);
    json_decref(p);

    p = sl_seccomp_runtime_default(DEFAULT_CAPS | BIT(SYS_ADMIN) | BIT(SYS_PTRACE), &e);
    assert_non_null(p);
    assert_non_null(rule_for(p, "mount"));
    assert_non_null(rule_for(p, "unshare"));
    assert_non_null(rule_for(p, "ptrace"));
    assert_null(rule_for(p, "keyctl"));
    assert_null(json_object_get(rule_for(p, "clone"), "args")); /* any clone */
    assert_string_equal(json_string_value(json_object_get(rule_for(p, "clone3"), "action")),
                        "SCMP_ACT_ALLOW");
    json_decref(p);
}

static void data_keys_only_in_default_data(void **state)
{
    (void)state;
    sl_error e;
    const char *data = "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"comment\": \"c\", \"syscalls\": ["
                       "{\"names\": [\"read\", \"future_call_9000\"], \"action\": "
                       "\"SCMP_ACT_ALLOW\", \"comment\": \"x\"},"
                       "{\"names\": [\"mount\"], \"action\": \"SCMP_ACT_ALLOW\", "
                       "\"ifAnyCap\": [\"CAP_SYS_ADMIN\"]},"
                       "{\"names\": [\"write\"], \"action\": \"SCMP_ACT_ALLOW\", "
                       "\"ifArch\": [\"z80\"]}]}";
    json_t *p = sl_seccomp_resolve_text(data, 0, &e);
    assert_non_null(p); /* unknown names are skipped in our own data */
    assert_int_equal(json_array_size(json_object_get(p, "syscalls")), 1);
    assert_null(json_object_get(json_array_get(json_object_get(p, "syscalls"), 0), "comment"));
    json_decref(p);
    bad(data, "unknown key \"comment\""); /* but not in a Localhost profile */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_a_good_profile),
        cmocka_unit_test(names_the_bad_part),
        cmocka_unit_test(loads_files),
        cmocka_unit_test(runtime_default_per_capability),
        cmocka_unit_test(data_keys_only_in_default_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
