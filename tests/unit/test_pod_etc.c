/* The pod's /etc files: hostname and dns_config checks, resolv.conf and
 * hosts as containerd and the kubelet write them, the files a pod gets
 * (with a stand-in host /etc), and which of them a container mounts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tmp_root.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "grpc/grpc_status.h"
#include "pod/etc_files.h"

static char *slurp(const char *dir, const char *name)
{
    char *p = sl_path_join(dir, name);
    char *s = NULL;
    sl_error e;
    assert_int_equal(sl_read_file(p, 1 << 20, &s, NULL, &e), 0);
    free(p);
    return s;
}

static void expect_invalid(int rc, const sl_error *e, const char *prefix)
{
    assert_int_equal(rc, -1);
    assert_int_equal(e->code, SL_GRPC_INVALID_ARGUMENT);
    if (strncmp(e->msg, prefix, strlen(prefix)))
        fail_msg("\"%s\" does not start with \"%s\"", e->msg, prefix);
}

static void hostnames(void **state)
{
    (void)state;
    sl_error e;
    char h64[65], h65[66];
    memset(h64, 'a', 64);
    h64[64] = '\0';
    memset(h65, 'a', 65);
    h65[65] = '\0';
    assert_int_equal(sl_pod_hostname_check("web-0", &e), 0);
    assert_int_equal(sl_pod_hostname_check("web-0.svc_x", &e), 0);
    assert_int_equal(sl_pod_hostname_check(h64, &e), 0);
    expect_invalid(sl_pod_hostname_check(h65, &e), &e, "hostname: 65 bytes, more than 64");
    expect_invalid(sl_pod_hostname_check("a b", &e), &e, "hostname: \"a b\" is not a host name");
    expect_invalid(sl_pod_hostname_check("a\n127.0.0.1 evil", &e), &e, "hostname: ");
    expect_invalid(sl_pod_hostname_check("", &e), &e, "hostname: ");
}

static void dns_checks(void **state)
{
    (void)state;
    sl_error e;
    char *four[] = {"1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"};
    char *v6[] = {"fd00::1", "fe80::1%eth0", "10.0.0.1"};
    char *bad_ip[] = {"10.0.0.256"};
    char *bad_zone[] = {"fe80::1%"};
    char *v4_zone[] = {"10.0.0.1%eth0"};
    assert_int_equal(sl_pod_dns_check(NULL, &e), 0);
    sl_pod_dns d = {.servers = v6, .n_servers = 3};
    assert_int_equal(sl_pod_dns_check(&d, &e), 0);
    d = (sl_pod_dns){.servers = four, .n_servers = 4};
    expect_invalid(sl_pod_dns_check(&d, &e), &e, "dns_config.servers: 4 servers, more than 3");
    d = (sl_pod_dns){.servers = bad_ip, .n_servers = 1};
    expect_invalid(sl_pod_dns_check(&d, &e), &e, "dns_config.servers[0]: \"10.0.0.256\"");
    d = (sl_pod_dns){.servers = bad_zone, .n_servers = 1};
    expect_invalid(sl_pod_dns_check(&d, &e), &e, "dns_config.servers[0]: ");
    d = (sl_pod_dns){.servers = v4_zone, .n_servers = 1};
    expect_invalid(sl_pod_dns_check(&d, &e), &e, "dns_config.servers[0]: ");

    char *searches[SL_DNS_MAX_SEARCHES + 1];
    char names[SL_DNS_MAX_SEARCHES + 1][16];
    for (size_t i = 0; i <= SL_DNS_MAX_SEARCHES; i++) {
        snprintf(names[i], sizeof(names[i]), "d%zu.example", i);
        searches[i] = names[i];
    }
    d = (sl_pod_dns){.searches = searches, .n_searches = SL_DNS_MAX_SEARCHES};
    assert_int_equal(sl_pod_dns_check(&d, &e), 0);
    d.n_searches++;
    expect_invalid(sl_pod_dns_check(&d, &e), &e, "dns_config.searches: 33 domains, more than 32");
    /* 8 names of 253 and one of 20: 2044 + 8 spaces = 2052 characters. */
    char big[9][SL_DNS_MAX_NAME + 1];
    char *bigs[9];
    for (size_t i = 0; i < 9; i++) {
        memset(big[i], 'a', SL_DNS_MAX_NAME);
        big[i][i == 8 ? 20 : SL_DNS_MAX_NAME] = '\0';
        bigs[i] = big[i];
    }
    d = (sl_pod_dns){.searches = bigs, .n_searches = 8};
    assert_int_equal(sl_pod_dns_check(&d, &e), 0); /* 2031 characters */
    d.n_searches = 9;
    expect_invalid(sl_pod_dns_check(&d, &e), &e,
                   "dns_config.searches: 2052 characters, more than 2048");
    char toolong[SL_DNS_MAX_NAME + 2];
    memset(toolong, 'b', sizeof(toolong) - 1);
    toolong[sizeof(toolong) - 1] = '\0';
    char *one[] = {toolong};
    d = (sl_pod_dns){.searches = one, .n_searches = 1};
    expect_invalid(sl_pod_dns_check(&d, &e), &e, "dns_config.searches[0]: ");
    char *spaced[] = {"ok.example", "a\tb"};
    d = (sl_pod_dns){.searches = spaced, .n_searches = 2};
    expect_invalid(sl_pod_dns_check(&d, &e), &e, "dns_config.searches[1]: ");

    char *opts[] = {"ndots:5", "timeout:2", "rotate", "edns0"};
    d = (sl_pod_dns){.options = opts, .n_options = 4};
    assert_int_equal(sl_pod_dns_check(&d, &e), 0);
    char *badopt[] = {"ndots:5", "x y"};
    d = (sl_pod_dns){.options = badopt, .n_options = 2};
    expect_invalid(sl_pod_dns_check(&d, &e), &e, "dns_config.options[1]: \"x y\"");
    char *emptyopt[] = {""};
    d = (sl_pod_dns){.options = emptyopt, .n_options = 1};
    expect_invalid(sl_pod_dns_check(&d, &e), &e, "dns_config.options[0]: ");
    char *many[SL_DNS_MAX_OPTIONS + 1];
    for (size_t i = 0; i <= SL_DNS_MAX_OPTIONS; i++)
        many[i] = "rotate";
    d = (sl_pod_dns){.options = many, .n_options = SL_DNS_MAX_OPTIONS + 1};
    expect_invalid(sl_pod_dns_check(&d, &e), &e, "dns_config.options: 33 options, more than 32");
}

static void resolv_conf_text(void **state)
{
    (void)state;
    assert_null(sl_pod_resolv_conf(NULL));
    sl_pod_dns empty = {0};
    assert_null(sl_pod_resolv_conf(&empty));
    char *servers[] = {"10.96.0.10", "fd00::a"};
    char *searches[] = {"ns.svc.cluster.local", "svc.cluster.local"};
    char *options[] = {"ndots:5", "timeout:2"};
    sl_pod_dns d = {servers, 2, searches, 2, options, 2};
    char *t = sl_pod_resolv_conf(&d);
    assert_string_equal(t, "search ns.svc.cluster.local svc.cluster.local\n"
                           "nameserver 10.96.0.10\nnameserver fd00::a\n"
                           "options ndots:5 timeout:2\n");
    free(t);
    sl_pod_dns only = {.options = options, .n_options = 1};
    t = sl_pod_resolv_conf(&only);
    assert_string_equal(t, "options ndots:5\n");
    free(t);
}

static const char kubelet_lines[] = "127.0.0.1\tlocalhost\n"
                                    "::1\tlocalhost ip6-localhost ip6-loopback\n"
                                    "fe00::0\tip6-localnet\n"
                                    "fe00::0\tip6-mcastprefix\n"
                                    "fe00::1\tip6-allnodes\n"
                                    "fe00::2\tip6-allrouters\n";

static void hosts_text(void **state)
{
    (void)state;
    char *t = sl_pod_hosts("10.89.0.7", "web-0");
    const char *nl = strchr(t, '\n');
    assert_non_null(nl);
    assert_int_equal(t[0], '#');
    char want[512];
    snprintf(want, sizeof(want), "%s10.89.0.7\tweb-0\n", kubelet_lines);
    assert_string_equal(nl + 1, want);
    free(t);
    t = sl_pod_hosts(NULL, "web-0");
    assert_string_equal(strchr(t, '\n') + 1, kubelet_lines);
    free(t);
}

static void host_etc(char *out, size_t n, bool with_files)
{
    snprintf(out, n, "%s/hostetc", root);
    sl_error e;
    assert_int_equal(sl_mkdir_p(out, 0755, &e), 0);
    if (!with_files)
        return;
    char *p = sl_path_join(out, "hosts");
    assert_int_equal(sl_write_file_atomic(p, "1.2.3.4 host-file\n", 18, 0644, &e), 0);
    free(p);
    p = sl_path_join(out, "resolv.conf");
    assert_int_equal(sl_write_file_atomic(p, "nameserver 9.9.9.9\n", 19, 0644, &e), 0);
    free(p);
}

static void files_of_a_pod_network_pod(void **state)
{
    (void)state;
    char etc[128], dir[128];
    host_etc(etc, sizeof(etc), true);
    snprintf(dir, sizeof(dir), "%s/pod/etc", root);
    char *servers[] = {"10.96.0.10"};
    sl_pod_dns d = {.servers = servers, .n_servers = 1};
    sl_pod_etc in = {
        .dir = dir, .hostname = "web-0", .ip = "10.89.0.9", .dns = &d, .host_etc = etc};
    sl_error e;
    assert_int_equal(sl_pod_etc_write(&in, &e), 0);
    char *s = slurp(dir, "hostname");
    assert_string_equal(s, "web-0\n");
    free(s);
    s = slurp(dir, "hosts");
    assert_non_null(strstr(s, "\n10.89.0.9\tweb-0\n"));
    free(s);
    s = slurp(dir, "resolv.conf");
    assert_string_equal(s, "nameserver 10.96.0.10\n");
    free(s);
    /* No hostname: the node's; no dns_config: the host's resolv.conf. */
    in.hostname = "";
    in.dns = NULL;
    assert_int_equal(sl_pod_etc_write(&in, &e), 0);
    char node[128] = "";
    gethostname(node, sizeof(node) - 1);
    char want[160];
    snprintf(want, sizeof(want), "%s\n", node);
    s = slurp(dir, "hostname");
    assert_string_equal(s, want);
    free(s);
    snprintf(want, sizeof(want), "\n10.89.0.9\t%s\n", node);
    s = slurp(dir, "hosts");
    assert_non_null(strstr(s, want));
    free(s);
    s = slurp(dir, "resolv.conf");
    assert_string_equal(s, "nameserver 9.9.9.9\n");
    free(s);
}

static void files_of_a_host_network_pod(void **state)
{
    (void)state;
    char etc[128], dir[128];
    host_etc(etc, sizeof(etc), true);
    snprintf(dir, sizeof(dir), "%s/hostpod", root);
    sl_pod_etc in = {.dir = dir, .host_network = true, .host_etc = etc};
    sl_error e;
    assert_int_equal(sl_pod_etc_write(&in, &e), 0);
    char *s = slurp(dir, "hosts");
    assert_string_equal(s, "1.2.3.4 host-file\n");
    free(s);
    /* A host without the files: empty ones. */
    host_etc(etc, sizeof(etc), false);
    char *p = sl_path_join(etc, "hosts");
    unlink(p);
    free(p);
    p = sl_path_join(etc, "resolv.conf");
    unlink(p);
    free(p);
    assert_int_equal(sl_pod_etc_write(&in, &e), 0);
    s = slurp(dir, "hosts");
    assert_string_equal(s, "");
    free(s);
    s = slurp(dir, "resolv.conf");
    assert_string_equal(s, "");
    free(s);
}

static void mounts_skip_what_the_config_mounts(void **state)
{
    (void)state;
    char etc[128], dir[128];
    host_etc(etc, sizeof(etc), true);
    snprintf(dir, sizeof(dir), "%s/m", root);
    sl_pod_etc in = {.dir = dir, .hostname = "h", .ip = "10.0.0.2", .host_etc = etc};
    sl_error e;
    assert_int_equal(sl_pod_etc_write(&in, &e), 0);
    sl_oci_mount m[2 + SL_POD_ETC_FILES] = {
        {"/data", "/srv/data", false, 0, false},
        {"//etc//hosts/", "/var/lib/kubelet/pods/x/etc-hosts", false, 0, false},
    };
    size_t n = 2;
    char *keep[SL_POD_ETC_FILES];
    sl_pod_etc_mounts(dir, true, m, &n, keep);
    assert_int_equal(n, 4);
    assert_string_equal(m[2].container_path, "/etc/hostname");
    assert_true(m[2].readonly);
    assert_string_equal(m[3].container_path, "/etc/resolv.conf");
    assert_non_null(strstr(m[3].host_path, "/m/resolv.conf"));
    assert_null(keep[1]); /* hosts: the config's own */
    for (size_t i = 0; i < SL_POD_ETC_FILES; i++)
        free(keep[i]);
    /* A pod made before these files existed: nothing to mount. */
    n = 0;
    char missing[160];
    snprintf(missing, sizeof(missing), "%s/none", root);
    sl_pod_etc_mounts(missing, false, m, &n, keep);
    assert_int_equal(n, 0);
    sl_pod_etc_mounts(NULL, false, m, &n, keep);
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hostnames),
        cmocka_unit_test(dns_checks),
        cmocka_unit_test(resolv_conf_text),
        cmocka_unit_test(hosts_text),
        cmocka_unit_test_setup_teardown(files_of_a_pod_network_pod, tmp_root_setup,
                                        tmp_root_teardown),
        cmocka_unit_test_setup_teardown(files_of_a_host_network_pod, tmp_root_setup,
                                        tmp_root_teardown),
        cmocka_unit_test_setup_teardown(mounts_skip_what_the_config_mounts, tmp_root_setup,
                                        tmp_root_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
