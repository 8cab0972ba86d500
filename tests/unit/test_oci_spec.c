/* The OCI spec we generate: its fields, and that runc really runs it on
 * an overlay rootfs (when run as root with runc and busybox installed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/oci_spec.h"
#include "container/rootfs.h"
#include "fsutil.h"

static const char *args[] = {"sh", "-c", "echo hi"};
static const char *env[] = {"A=1", "B=two words"};

static json_t *build(sl_oci_input *in)
{
    sl_error e;
    char *text = sl_oci_spec_build(in, &e);
    assert_non_null(text);
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(j);
    return j;
}

static void fields(void **state)
{
    (void)state;
    sl_oci_mount m = {"/data", "/srv/data", true, 1, false};
    sl_oci_input in = {.rootfs = "/r",
                       .args = args,
                       .nargs = 3,
                       .env = env,
                       .nenv = 2,
                       .cwd = "/work",
                       .uid = 5,
                       .gid = 6,
                       .tty = true,
                       .hostname = "pod",
                       .netns = "/run/p/net",
                       .ipcns = "/run/p/ipc",
                       .utsns = "/run/p/uts",
                       .mounts = &m,
                       .nmounts = 1,
                       .cgroups_path = "/sluice/p/c"};
    json_t *j = build(&in);
    json_t *p = json_object_get(j, "process");
    assert_true(json_is_true(json_object_get(p, "terminal")));
    assert_string_equal(json_string_value(json_array_get(json_object_get(p, "args"), 2)),
                        "echo hi");
    json_t *envs = json_object_get(p, "env");
    assert_int_equal(json_array_size(envs), 4); /* PATH added, TERM for the terminal */
    assert_string_equal(json_string_value(json_array_get(envs, 1)), "B=two words");
    assert_string_equal(json_string_value(json_array_get(envs, 3)), "TERM=xterm");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "user"), "uid")), 5);
    assert_string_equal(json_string_value(json_object_get(p, "cwd")), "/work");
    assert_string_equal(json_string_value(json_object_get(j, "hostname")), "pod");
    json_t *ns = json_object_get(json_object_get(j, "linux"), "namespaces");
    assert_int_equal(json_array_size(ns), 5);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ns, 2), "path")),
                        "/run/p/net");
    json_t *mounts = json_object_get(j, "mounts");
    json_t *last = json_array_get(mounts, json_array_size(mounts) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "source")), "/srv/data");
    assert_string_equal(json_string_value(json_array_get(json_object_get(last, "options"), 1)),
                        "rslave");
    assert_string_equal(json_string_value(json_array_get(json_object_get(last, "options"), 2)),
                        "ro");
    json_decref(j);
}

/* A terminal gets TERM=xterm as containerd gives it, unless the config
 * sets one; no terminal, no TERM. */
static void term_for_terminals(void **state)
{
    (void)state;
    const char *own[] = {"TERM=vt100"};
    sl_oci_input in = {.rootfs = "/r", .args = args, .nargs = 1, .env = own, .nenv = 1, .tty = 1};
    json_t *j = build(&in);
    json_t *envs = json_object_get(json_object_get(j, "process"), "env");
    assert_int_equal(json_array_size(envs), 2);
    assert_string_equal(json_string_value(json_array_get(envs, 0)), "TERM=vt100");
    json_decref(j);
    in.nenv = 0, in.tty = false;
    j = build(&in);
    envs = json_object_get(json_object_get(j, "process"), "env");
    assert_int_equal(json_array_size(envs), 1); /* PATH only */
    json_decref(j);
}

static void host_namespaces_are_not_joined(void **state)
{
    (void)state;
    sl_oci_input in = {.rootfs = "/r", .args = args, .nargs = 1, .hostname = "ignored"};
    json_t *j = build(&in);
    json_t *ns = json_object_get(json_object_get(j, "linux"), "namespaces");
    assert_int_equal(json_array_size(ns), 2); /* pid and mount only */
    assert_null(json_object_get(j, "hostname"));
    json_decref(j);
}

static const char *mount_opt(json_t *m, size_t i)
{
    return json_string_value(json_array_get(json_object_get(m, "options"), i));
}

static json_t *mount_at(json_t *mounts, const char *dest)
{
    size_t i;
    json_t *m, *found = NULL;
    json_array_foreach(mounts, i,
                       m) if (!strcmp(json_string_value(json_object_get(m, "destination")), dest))
        found = m;
    return found;
}

/* A container mount replaces the standard one at its destination; /dev
 * replaces everything under it too. rro and rshared as asked. */
static void container_mounts_replace_standard_ones(void **state)
{
    (void)state;
    sl_oci_mount m[] = {{"/dev/shm/", "/srv/shm", false, 0, false},
                        {"/ro", "/srv/ro", true, 0, true},
                        {"/both", "/srv/both", false, 2, false}};
    sl_oci_input in = {.rootfs = "/r",
                       .args = args,
                       .nargs = 1,
                       .mounts = m,
                       .nmounts = 3,
                       .rootfs_propagation = "rshared",
                       .pidns = "/run/p/pid"};
    json_t *j = build(&in);
    json_t *mounts = json_object_get(j, "mounts");
    json_t *shm = mount_at(mounts, "/dev/shm/");
    assert_non_null(shm);
    assert_null(mount_at(mounts, "/dev/shm"));
    assert_string_equal(json_string_value(json_object_get(shm, "source")), "/srv/shm");
    assert_non_null(mount_at(mounts, "/dev/pts")); /* the others stay */
    json_t *ro = mount_at(mounts, "/ro");
    assert_string_equal(mount_opt(ro, 2), "ro");
    assert_string_equal(mount_opt(ro, 3), "rro");
    assert_string_equal(mount_opt(mount_at(mounts, "/both"), 1), "rshared");
    json_t *l = json_object_get(j, "linux");
    assert_string_equal(json_string_value(json_object_get(l, "rootfsPropagation")), "rshared");
    json_t *pid = json_array_get(json_object_get(l, "namespaces"), 0);
    assert_string_equal(json_string_value(json_object_get(pid, "type")), "pid");
    assert_string_equal(json_string_value(json_object_get(pid, "path")), "/run/p/pid");
    json_decref(j);
    sl_oci_mount dev[] = {{"/dev", "/srv/dev", false, 0, false}};
    sl_oci_input in2 = {
        .rootfs = "/r", .args = args, .nargs = 1, .mounts = dev, .nmounts = 1, .host_pid = true};
    j = build(&in2);
    mounts = json_object_get(j, "mounts");
    assert_null(mount_at(mounts, "/dev/pts"));
    assert_null(mount_at(mounts, "/dev/mqueue"));
    assert_non_null(mount_at(mounts, "/proc"));
    json_t *ns = json_object_get(json_object_get(j, "linux"), "namespaces");
    assert_int_equal(json_array_size(ns), 1); /* mount only: the host's pid namespace */
    json_decref(j);
}

static void refuses_empty_command(void **state)
{
    (void)state;
    sl_oci_input in = {.rootfs = "/r", .args = args, .nargs = 0};
    sl_error e;
    assert_null(sl_oci_spec_build(&in, &e));
    assert_non_null(strstr(e.msg, "no command"));
}

static size_t array_len(const json_t *obj, const char *key)
{
    const json_t *a = json_object_get(obj, key);
    assert_true(json_is_array(a));
    return json_array_size(a);
}

/* Without a security context: runc's default set, default paths. */
static void security_defaults(void **state)
{
    (void)state;
    sl_oci_input in = {.rootfs = "/r", .args = args, .nargs = 1};
    json_t *j = build(&in);
    json_t *p = json_object_get(j, "process"), *l = json_object_get(j, "linux");
    json_t *caps = json_object_get(p, "capabilities");
    assert_int_equal(array_len(caps, "bounding"), 14);
    assert_int_equal(array_len(caps, "effective"), 14);
    assert_int_equal(array_len(caps, "inheritable"), 0);
    assert_int_equal(array_len(caps, "ambient"), 0);
    assert_true(json_is_false(json_object_get(p, "noNewPrivileges")));
    assert_int_equal(array_len(l, "maskedPaths"), 11);
    assert_int_equal(array_len(l, "readonlyPaths"), 5);
    assert_null(json_object_get(l, "seccomp"));
    json_decref(j);
}

static void security_applied(void **state)
{
    (void)state;
    const char *masked[] = {"/proc/keys"};
    const uint32_t gids[] = {0, 5};
    json_t *filter = json_pack("{s:s}", "defaultAction", "SCMP_ACT_ERRNO");
    sl_oci_security sec = {
        .caps = {.bounding = 3, .effective = 3, .permitted = 3, .inheritable = 2, .ambient = 2},
        .no_new_privs = true,
        .masked_paths = masked,
        .n_masked = 1,
        .seccomp = filter,
        .gids = gids,
        .ngids = 2};
    sl_oci_input in = {.rootfs = "/r", .args = args, .nargs = 1, .security = &sec};
    json_t *j = build(&in);
    json_t *p = json_object_get(j, "process"), *l = json_object_get(j, "linux");
    json_t *caps = json_object_get(p, "capabilities");
    assert_string_equal(json_string_value(json_array_get(json_object_get(caps, "bounding"), 1)),
                        "CAP_DAC_OVERRIDE");
    assert_int_equal(array_len(caps, "bounding"), 2);
    assert_string_equal(json_string_value(json_array_get(json_object_get(caps, "ambient"), 0)),
                        "CAP_DAC_OVERRIDE");
    assert_true(json_is_true(json_object_get(p, "noNewPrivileges")));
    json_t *ag = json_object_get(json_object_get(p, "user"), "additionalGids");
    assert_int_equal(json_integer_value(json_array_get(ag, 1)), 5);
    assert_int_equal(array_len(l, "maskedPaths"), 1);
    assert_int_equal(array_len(l, "readonlyPaths"), 5); /* none sent: the defaults */
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(l, "seccomp"), "defaultAction")),
        "SCMP_ACT_ERRNO");
    json_decref(j);

    sec.n_masked = 0; /* an empty list that was sent: nothing masked */
    j = build(&in);
    assert_int_equal(array_len(json_object_get(j, "linux"), "maskedPaths"), 0);
    json_decref(j);

    /* privileged: no paths, no seccomp, /sys rw, every host device */
    in.privileged = true;
    j = build(&in);
    l = json_object_get(j, "linux");
    assert_null(json_object_get(l, "maskedPaths"));
    assert_null(json_object_get(l, "readonlyPaths"));
    assert_null(json_object_get(l, "seccomp"));
    json_t *m, *devs = json_object_get(l, "devices");
    size_t i;
    bool null_dev = false;
    json_array_foreach(devs, i, m)
    {
        null_dev |= !strcmp(json_string_value(json_object_get(m, "path")), "/dev/null");
    }
    assert_true(null_dev);
    json_t *rule = json_array_get(json_object_get(json_object_get(l, "resources"), "devices"), 0);
    assert_true(json_is_true(json_object_get(rule, "allow")));
    json_array_foreach(json_object_get(j, "mounts"), i, m)
    {
        const char *type = json_string_value(json_object_get(m, "type"));
        json_t *opts = json_object_get(m, "options");
        if (strcmp(type, "sysfs") && strcmp(type, "cgroup"))
            continue;
        for (size_t k = 0; k < json_array_size(opts); k++)
            assert_string_not_equal(json_string_value(json_array_get(opts, k)), "ro");
    }
    json_decref(j);
    json_decref(filter);
}

/* The real thing: runc runs our spec on an overlay of a busybox layer. */
static void runc_runs_it(void **state)
{
    (void)state;
    if (geteuid() != 0 || access("/usr/sbin/runc", X_OK) < 0 || access("/bin/busybox", X_OK) < 0)
        skip();
    char dir[] = "/tmp/sl-oci-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char layer[128], bundle[128], cmd[512];
    snprintf(layer, sizeof(layer), "%s/layer/bin", dir);
    sl_error e;
    assert_int_equal(sl_mkdir_p(layer, 0755, &e), 0);
    snprintf(cmd, sizeof(cmd), "cp /bin/busybox %s/ && ln -s busybox %s/sh && ln -s busybox %s/cat",
             layer, layer, layer);
    assert_int_equal(system(cmd), 0);
    snprintf(layer, sizeof(layer), "%s/layer", dir);
    snprintf(bundle, sizeof(bundle), "%s/bundle", dir);
    const char *layers[] = {layer};
    assert_int_equal(sl_rootfs_mount(bundle, layers, 1, NULL, &e), 0);
    char rootfs[160];
    snprintf(rootfs, sizeof(rootfs), "%s/rootfs", bundle);
    const char *run_args[] = {"sh", "-c",
                              "echo \"$A\" > /out; cat /proc/self/status | grep -c ^Cap"};
    sl_oci_input in = {.rootfs = rootfs, .args = run_args, .nargs = 3, .env = env, .nenv = 1};
    char *text = sl_oci_spec_build(&in, &e);
    assert_non_null(text);
    char cfg[200];
    snprintf(cfg, sizeof(cfg), "%s/config.json", bundle);
    assert_int_equal(sl_write_file_atomic(cfg, text, strlen(text), 0644, &e), 0);
    free(text);
    snprintf(cmd, sizeof(cmd), "cd %s && runc --root %s/runc run sl-oci-test >/dev/null", bundle,
             dir);
    int rc = system(cmd);
    char out[160];
    snprintf(out, sizeof(out), "%s/upper/out", bundle); /* the write went to the upper layer */
    char *got = NULL;
    int read_rc = sl_read_file(out, 100, &got, NULL, &e);
    sl_rootfs_umount(bundle, &e);
    sl_rm_rf(dir, &e);
    assert_int_equal(rc, 0);
    assert_int_equal(read_rc, 0);
    assert_string_equal(got, "1\n");
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fields),
        cmocka_unit_test(term_for_terminals),
        cmocka_unit_test(host_namespaces_are_not_joined),
        cmocka_unit_test(container_mounts_replace_standard_ones),
        cmocka_unit_test(refuses_empty_command),
        cmocka_unit_test(security_defaults),
        cmocka_unit_test(security_applied),
        cmocka_unit_test(runc_runs_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
