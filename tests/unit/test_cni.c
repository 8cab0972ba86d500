/* CNI execution against fake plugins (shell scripts) that record what
 * they were given and answer like real plugins. */
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

#include "fsutil.h"
#include "pod/cni.h"

static char root[64];

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

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/sl-cni-XXXXXX");
    assert_non_null(mkdtemp(root));
    char d[128];
    snprintf(d, sizeof(d), "%s/bin", root);
    mkdir(d, 0755);
    write_file(d, "bridge", fake_bridge, 0755);
    write_file(d, "portmap", fake_portmap, 0755);
    write_file(d, "failing", fake_failing, 0755);
    snprintf(d, sizeof(d), "%s/conf", root);
    mkdir(d, 0755);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sl_error e;
    sl_rm_rf(root, &e);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(not_ready_without_config, setup, teardown),
        cmocka_unit_test_setup_teardown(chain_add_and_del, setup, teardown),
        cmocka_unit_test_setup_teardown(failure_undoes_earlier_plugins, setup, teardown),
        cmocka_unit_test_setup_teardown(missing_plugin_is_named, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
