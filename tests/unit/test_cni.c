/* CNI execution against fake plugins (shell scripts) that record what
 * they were given and answer like real plugins. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "pod/cni.h"
#include "tmp_root.h"

static void write_file(const char *dir, const char *name, const char *text, int mode)
{
    char *p = sl_path_join(dir, name);
    sl_error e;
    assert_int_equal(sl_write_file_atomic(p, text, strlen(text), mode, &e), 0);
    free(p);
}

/* A plugin that logs "<COMMAND> <prevResult present?>" and its env, then
 * answers a result with an IP (bridge) or passes prevResult on (portmap). */
static const char *fake_bridge =
    "#!/bin/sh\nin=$(cat)\n"
    "echo \"$CNI_COMMAND bridge $CNI_CONTAINERID $CNI_NETNS $CNI_IFNAME\" >> \"$(dirname "
    "$0)/log\"\n"
    "case \"$in\" in *'\"name\":\"testnet\"'*) ;; *) echo name-missing >> \"$(dirname $0)/log\";; "
    "esac\n"
    "if [ \"$CNI_COMMAND\" = ADD ]; then\n"
    "  echo '{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.89.0.7/24\"}]}'\nfi\n";
static const char *fake_portmap =
    "#!/bin/sh\nin=$(cat)\n"
    "case \"$in\" in *prevResult*) p=prev;; *) p=noprev;; esac\n"
    "echo \"$CNI_COMMAND portmap $p\" >> \"$(dirname $0)/log\"\n"
    "if [ \"$CNI_COMMAND\" = ADD ]; then echo \"$in\" | sed 's/.*\"prevResult\"://; s/}$//'; fi\n";
static const char *fake_failing =
    "#!/bin/sh\ncat >/dev/null\necho \"$CNI_COMMAND failing\" >> \"$(dirname $0)/log\"\n"
    "if [ \"$CNI_COMMAND\" = ADD ]; then echo '{\"code\":11,\"msg\":\"no address left\"}'; exit 1; "
    "fi\n";

/* Hangs on ADD (after logging), answers DEL at once. */
static const char *fake_hang =
    "#!/bin/sh\ncat >/dev/null\necho \"$CNI_COMMAND hang\" >> \"$(dirname $0)/log\"\n"
    "if [ \"$CNI_COMMAND\" = ADD ]; then sleep 30; fi\n";

/* Keeps its stdin as <bin>/<COMMAND>.stdin and passes prevResult on. */
static const char *fake_recorder =
    "#!/bin/sh\nin=$(cat)\nprintf '%s' \"$in\" > \"$(dirname $0)/$CNI_COMMAND.stdin\"\n"
    "if [ \"$CNI_COMMAND\" = ADD ]; then echo \"$in\" | sed 's/.*\"prevResult\"://; s/}$//'; fi\n";

static int setup(void **state)
{
    (void)state;
    tmp_root_make();
    char d[128];
    snprintf(d, sizeof(d), "%s/bin", root);
    mkdir(d, 0755);
    write_file(d, "bridge", fake_bridge, 0755);
    write_file(d, "portmap", fake_portmap, 0755);
    write_file(d, "failing", fake_failing, 0755);
    write_file(d, "recorder", fake_recorder, 0755);
    write_file(d, "hang", fake_hang, 0755);
    snprintf(d, sizeof(d), "%s/conf", root);
    mkdir(d, 0755);
    return 0;
}

static char *read_log(void)
{
    char p[128];
    snprintf(p, sizeof(p), "%s/bin/log", root);
    char *s = NULL;
    sl_error e;
    if (sl_read_file(p, 65536, &s, NULL, &e) < 0)
        return strdup("");
    unlink(p);
    return s;
}

static sl_cni_opts opts(void)
{
    static char conf[128], bin[128];
    snprintf(conf, sizeof(conf), "%s/conf", root);
    snprintf(bin, sizeof(bin), "%s/bin", root);
    sl_cni_opts o = {.conf_dir = conf,
                     .bin_dir = bin,
                     .container_id = "pod1",
                     .netns = "/run/x/net",
                     .pod_namespace = "ns",
                     .pod_name = "p",
                     .pod_uid = "u"};
    return o;
}

static void not_ready_without_config(void **state)
{
    (void)state;
    sl_cni_opts o = opts();
    assert_false(sl_cni_ready(o.conf_dir));
    char *ip, *res;
    sl_error e;
    assert_int_equal(sl_cni_add(&o, &ip, &res, &e), -1);
    assert_non_null(strstr(e.msg, "no network configuration"));
}

static void chain_add_and_del(void **state)
{
    (void)state;
    sl_cni_opts o = opts();
    write_file(o.conf_dir, "10-test.conflist",
               "{\"cniVersion\":\"1.0.0\",\"name\":\"testnet\",\"plugins\":["
               "{\"type\":\"bridge\"},{\"type\":\"portmap\"}]}",
               0644);
    assert_true(sl_cni_ready(o.conf_dir));
    char *ip = NULL, *res = NULL;
    sl_error e;
    assert_int_equal(sl_cni_add(&o, &ip, &res, &e), 0);
    assert_string_equal(ip, "10.89.0.7");
    assert_non_null(strstr(res, "10.89.0.7/24"));
    char *log = read_log();
    assert_string_equal(log, "ADD bridge pod1 /run/x/net eth0\nADD portmap prev\n");
    free(log);
    assert_int_equal(sl_cni_del(&o, res, &e), 0);
    log = read_log();
    assert_string_equal(log, "DEL portmap prev\nDEL bridge pod1 /run/x/net eth0\n");
    free(log);
    free(ip);
    free(res);
}

static void failure_undoes_earlier_plugins(void **state)
{
    (void)state;
    sl_cni_opts o = opts();
    write_file(o.conf_dir, "10-test.conflist",
               "{\"cniVersion\":\"1.0.0\",\"name\":\"testnet\",\"plugins\":["
               "{\"type\":\"bridge\"},{\"type\":\"failing\"}]}",
               0644);
    char *ip = NULL, *res = NULL;
    sl_error e;
    assert_int_equal(sl_cni_add(&o, &ip, &res, &e), -1);
    assert_non_null(strstr(e.msg, "no address left"));
    assert_null(ip);
    char *log = read_log();
    assert_string_equal(log, "ADD bridge pod1 /run/x/net eth0\nADD failing\nDEL failing\n"
                             "DEL bridge pod1 /run/x/net eth0\n");
    free(log);
}

static void missing_plugin_is_named(void **state)
{
    (void)state;
    sl_cni_opts o = opts();
    write_file(o.conf_dir, "10-test.conflist",
               "{\"cniVersion\":\"1.0.0\",\"name\":\"testnet\",\"plugins\":[{\"type\":\"nope\"}]}",
               0644);
    char *ip, *res;
    sl_error e;
    assert_int_equal(sl_cni_add(&o, &ip, &res, &e), -1);
    assert_non_null(strstr(e.msg, "CNI plugin nope not found"));
}

/* A plugin past its deadline is killed (with what it started), the ADD
 * fails naming it and the timeout key, and the list is undone with DEL. */
static void hanging_plugin_is_killed(void **state)
{
    (void)state;
    sl_cni_opts o = opts();
    o.plugin_timeout_ms = 300;
    write_file(o.conf_dir, "10-test.conflist",
               "{\"cniVersion\":\"1.0.0\",\"name\":\"testnet\",\"plugins\":["
               "{\"type\":\"bridge\"},{\"type\":\"hang\"}]}",
               0644);
    char *ip = NULL, *res = NULL;
    sl_error e;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(sl_cni_add(&o, &ip, &res, &e), -1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    assert_true(ms >= 300 && ms < 10000);
    assert_string_equal(e.msg, "CNI plugin hang (ADD) did not finish within 300 ms "
                               "(cni-plugin-timeout-ms): killed");
    char *log = read_log();
    assert_string_equal(log, "ADD bridge pod1 /run/x/net eth0\nADD hang\nDEL hang\n"
                             "DEL bridge pod1 /run/x/net eth0\n");
    free(log);
}

static void empty_plugin_list_is_refused(void **state)
{
    (void)state;
    sl_cni_opts o = opts();
    write_file(o.conf_dir, "10-test.conflist",
               "{\"cniVersion\":\"1.0.0\",\"name\":\"testnet\",\"plugins\":[]}", 0644);
    char *ip, *res;
    sl_error e;
    assert_int_equal(sl_cni_add(&o, &ip, &res, &e), -1);
    assert_non_null(strstr(e.msg, "has no plugins"));
    assert_int_equal(sl_cni_del(&o, NULL, &e), -1);
}

static const sl_cni_portmap two_ports[] = {
    {8080, 80, "tcp", ""},
    {5353, 53, "udp", "127.0.0.1"},
};

static void capability_args_json(void **state)
{
    (void)state;
    sl_cni_opts o = opts();
    json_t *caps = sl_cni_capability_args(&o);
    char *text = json_dumps(caps, JSON_COMPACT);
    assert_string_equal(text, "{}"); /* no host port: no capability args */
    free(text);
    json_decref(caps);
    o.portmaps = two_ports;
    o.n_portmaps = 2;
    caps = sl_cni_capability_args(&o);
    text = json_dumps(caps, JSON_COMPACT);
    assert_string_equal(text, "{\"portMappings\":["
                              "{\"hostPort\":8080,\"containerPort\":80,\"protocol\":\"tcp\"},"
                              "{\"hostPort\":5353,\"containerPort\":53,\"protocol\":\"udp\","
                              "\"hostIP\":\"127.0.0.1\"}]}");
    free(text);
    json_decref(caps);
}

/* runtimeConfig carries what a plugin declares, and only that. */
static void runtime_config_only_where_declared(void **state)
{
    (void)state;
    json_t *list = json_loads("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":["
                              "{\"type\":\"bridge\"},"
                              "{\"type\":\"portmap\",\"capabilities\":{\"portMappings\":true,"
                              "\"bandwidth\":true}},"
                              "{\"type\":\"other\",\"capabilities\":{\"portMappings\":false}}]}",
                              0, NULL);
    json_t *caps = json_loads("{\"portMappings\":[{\"hostPort\":1}],\"dns\":{}}", 0, NULL);
    json_t *prev = json_loads("{\"ips\":[]}", 0, NULL);
    sl_error e;
    json_t *c0 = sl_cni_plugin_conf(list, 0, caps, prev, &e);
    json_t *c1 = sl_cni_plugin_conf(list, 1, caps, prev, &e);
    json_t *c2 = sl_cni_plugin_conf(list, 2, caps, NULL, &e);
    assert_non_null(c0);
    assert_non_null(c1);
    assert_non_null(c2);
    assert_null(json_object_get(c0, "runtimeConfig"));
    assert_null(json_object_get(c2, "runtimeConfig"));
    assert_null(json_object_get(c2, "prevResult"));
    char *rc = json_dumps(json_object_get(c1, "runtimeConfig"), JSON_COMPACT);
    assert_string_equal(rc, "{\"portMappings\":[{\"hostPort\":1}]}");
    assert_string_equal(json_string_value(json_object_get(c1, "name")), "n");
    assert_string_equal(json_string_value(json_object_get(c1, "cniVersion")), "1.0.0");
    assert_true(json_equal(json_object_get(c1, "prevResult"), prev));
    assert_null(sl_cni_plugin_conf(list, 3, caps, NULL, &e)); /* no such plugin */
    free(rc);
    json_decref(c0);
    json_decref(c1);
    json_decref(c2);
    json_decref(caps);
    json_decref(prev);
    json_decref(list);
}

static json_t *recorded(const char *command)
{
    char p[160];
    snprintf(p, sizeof(p), "%s/bin/%s.stdin", root, command);
    json_t *j = json_load_file(p, 0, NULL);
    unlink(p);
    return j;
}

/* portmap deletes its rules only when DEL brings the mappings again. */
static void same_runtime_config_on_add_and_del(void **state)
{
    (void)state;
    sl_cni_opts o = opts();
    o.portmaps = two_ports;
    o.n_portmaps = 2;
    write_file(o.conf_dir, "10-test.conflist",
               "{\"cniVersion\":\"1.0.0\",\"name\":\"testnet\",\"plugins\":[{\"type\":\"bridge\"},"
               "{\"type\":\"recorder\",\"capabilities\":{\"portMappings\":true}}]}",
               0644);
    char *ip = NULL, *res = NULL;
    sl_error e;
    assert_int_equal(sl_cni_add(&o, &ip, &res, &e), 0);
    json_t *add = recorded("ADD");
    assert_int_equal(sl_cni_del(&o, res, &e), 0);
    json_t *del = recorded("DEL");
    json_t *want = sl_cni_capability_args(&o);
    assert_true(json_equal(json_object_get(add, "runtimeConfig"), want));
    assert_true(json_equal(json_object_get(del, "runtimeConfig"), want));
    assert_non_null(json_object_get(del, "prevResult"));
    json_decref(want);
    json_decref(add);
    json_decref(del);
    free(read_log());
    free(ip);
    free(res);
}

static void has_capability(void **state)
{
    (void)state;
    sl_cni_opts o = opts();
    sl_error e;
    char *path = NULL;
    assert_int_equal(sl_cni_has_capability(o.conf_dir, SL_CNI_CAP_PORTMAP, NULL, &e), -1);
    write_file(o.conf_dir, "10-a.conflist",
               "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":[{\"type\":\"bridge\"}]}",
               0644);
    assert_int_equal(sl_cni_has_capability(o.conf_dir, SL_CNI_CAP_PORTMAP, &path, &e), 0);
    assert_non_null(strstr(path, "/conf/10-a.conflist"));
    free(path);
    write_file(o.conf_dir, "05-b.conflist",
               "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":[{\"type\":\"bridge\"},"
               "{\"type\":\"portmap\",\"capabilities\":{\"portMappings\":true}}]}",
               0644);
    assert_int_equal(sl_cni_has_capability(o.conf_dir, SL_CNI_CAP_PORTMAP, NULL, &e), 1);
}

static void result_ips_of_the_pod_interface(void **state)
{
    (void)state;
    const char *res = "{\"interfaces\":[{\"name\":\"cni0\"},{\"name\":\"veth1\"},"
                      "{\"name\":\"eth0\",\"sandbox\":\"/x\"}],\"ips\":["
                      "{\"address\":\"10.0.0.1/24\",\"interface\":0},"
                      "{\"address\":\"10.89.0.5/24\",\"interface\":2},"
                      "{\"address\":\"fd00::5/64\",\"interface\":2},"
                      "{\"address\":\"10.1.1.1\"}]}";
    char *ips[SL_CNI_MAX_IPS];
    size_t n = sl_cni_result_ips(res, ips, SL_CNI_MAX_IPS);
    assert_int_equal(n, 3);
    assert_string_equal(ips[0], "10.89.0.5");
    assert_string_equal(ips[1], "fd00::5");
    assert_string_equal(ips[2], "10.1.1.1");
    for (size_t i = 0; i < n; i++)
        free(ips[i]);
    assert_int_equal(sl_cni_result_ips(res, ips, 1), 1);
    assert_string_equal(ips[0], "10.89.0.5");
    free(ips[0]);
    assert_int_equal(sl_cni_result_ips("not json", ips, 4), 0);
    assert_int_equal(sl_cni_result_ips(NULL, ips, 4), 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* as sluiced: a plugin may not read its input */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(not_ready_without_config, setup, tmp_root_teardown),
        cmocka_unit_test_setup_teardown(chain_add_and_del, setup, tmp_root_teardown),
        cmocka_unit_test_setup_teardown(failure_undoes_earlier_plugins, setup, tmp_root_teardown),
        cmocka_unit_test_setup_teardown(missing_plugin_is_named, setup, tmp_root_teardown),
        cmocka_unit_test_setup_teardown(hanging_plugin_is_killed, setup, tmp_root_teardown),
        cmocka_unit_test_setup_teardown(empty_plugin_list_is_refused, setup, tmp_root_teardown),
        cmocka_unit_test(capability_args_json),
        cmocka_unit_test(runtime_config_only_where_declared),
        cmocka_unit_test_setup_teardown(same_runtime_config_on_add_and_del, setup,
                                        tmp_root_teardown),
        cmocka_unit_test_setup_teardown(has_capability, setup, tmp_root_teardown),
        cmocka_unit_test(result_ips_of_the_pod_interface),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
