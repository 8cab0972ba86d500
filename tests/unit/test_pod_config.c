/* The pod config's identity and network fields as RunPodSandbox checks and
 * converts them, and a container's log_path as CreateContainer checks it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "cri/pod_config.h"
#include "grpc/grpc_status.h"

static Runtime__V1__PodSandboxConfig cfg(void)
{
    Runtime__V1__PodSandboxConfig c = RUNTIME__V1__POD_SANDBOX_CONFIG__INIT;
    return c;
}

static void expect_invalid(const Runtime__V1__PodSandboxConfig *c, bool hostnet, bool hostipc,
                           const char *prefix)
{
    sl_error e = {0};
    assert_int_equal(sl_pod_config_check(c, hostnet, hostipc, &e), -1);
    assert_int_equal(e.code, SL_GRPC_INVALID_ARGUMENT);
    if (strncmp(e.msg, prefix, strlen(prefix)))
        fail_msg("\"%s\" does not start with \"%s\"", e.msg, prefix);
}

static void identity(void **state)
{
    (void)state;
    sl_error e;
    Runtime__V1__PodSandboxConfig c = cfg();
    assert_int_equal(sl_pod_config_check(&c, false, false, &e), 0);
    assert_int_equal(sl_pod_config_check(&c, true, true, &e), 0);
    c.hostname = "web-0";
    assert_int_equal(sl_pod_config_check(&c, false, false, &e), 0);
    expect_invalid(&c, true, false, "hostname: cannot be set on a pod with host network");
    c.hostname = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"; /* 65 */
    expect_invalid(&c, false, false, "hostname: 65 bytes, more than 64");
    c = cfg();
    c.log_directory = "/var/log/pods/x";
    assert_int_equal(sl_pod_config_check(&c, false, false, &e), 0);
    c.log_directory = "var/log/pods/x";
    expect_invalid(&c, false, false, "log_directory: \"var/log/pods/x\" is not an absolute path");
    c.log_directory = "/var/log/pods/../../etc";
    expect_invalid(&c, false, false,
                   "log_directory: \"/var/log/pods/../../etc\" has a \"..\" component");
    c.log_directory = "/var/log/pods/..";
    expect_invalid(&c, false, false, "log_directory: \"/var/log/pods/..\" has a \"..\" component");
    c.log_directory = "/var/log/pods/x..y/.../..a";
    assert_int_equal(sl_pod_config_check(&c, false, false, &e), 0);
}

static void port_mappings(void **state)
{
    (void)state;
    sl_error e;
    Runtime__V1__PortMapping m[4];
    Runtime__V1__PortMapping *pm[4];
    for (size_t i = 0; i < 4; i++) {
        runtime__v1__port_mapping__init(&m[i]);
        pm[i] = &m[i];
    }
    Runtime__V1__PodSandboxConfig c = cfg();
    c.port_mappings = pm;
    c.n_port_mappings = 4;
    m[0] = (Runtime__V1__PortMapping){m[0].base, RUNTIME__V1__PROTOCOL__TCP, 80, 8080, ""};
    m[1] = (Runtime__V1__PortMapping){m[1].base, RUNTIME__V1__PROTOCOL__UDP, 53, 5353, "::1"};
    m[2] = (Runtime__V1__PortMapping){m[2].base, RUNTIME__V1__PROTOCOL__SCTP, 9, 9, "10.0.0.1"};
    m[3] = (Runtime__V1__PortMapping){m[3].base, RUNTIME__V1__PROTOCOL__TCP, 7070, 0, ""};
    assert_int_equal(sl_pod_config_check(&c, false, false, &e), 0);
    assert_int_equal(sl_pod_config_first_host_port(&c), 0);
    sl_cni_portmap *out = NULL;
    assert_int_equal(sl_pod_config_portmaps(&c, &out), 3);
    assert_string_equal(out[0].protocol, "tcp");
    assert_int_equal(out[0].host_port, 8080);
    assert_int_equal(out[0].container_port, 80);
    assert_string_equal(out[1].protocol, "udp");
    assert_string_equal(out[1].host_ip, "::1");
    assert_string_equal(out[2].protocol, "sctp");
    free(out);
    /* On host network a mapping must change nothing. */
    expect_invalid(&c, true, false,
                   "port_mappings[0].host_port: 8080 differs from container_port 80");
    m[0].host_port = 80;
    m[1].host_port = 53;
    expect_invalid(&c, true, false, "port_mappings[1].host_ip: cannot be enforced");
    m[1].host_ip = "";
    m[2].host_ip = "";
    assert_int_equal(sl_pod_config_check(&c, true, false, &e), 0);

    m[3] = m[0];
    m[3].container_port = 81;
    expect_invalid(&c, false, false,
                   "port_mappings[3].host_port: 80/tcp is mapped already by port_mappings[0]");
    m[3].protocol = RUNTIME__V1__PROTOCOL__UDP; /* 80/udp is another port */
    m[3].host_ip = "127.0.0.1";
    assert_int_equal(sl_pod_config_check(&c, false, false, &e), 0);
    m[3].protocol = (Runtime__V1__Protocol)7;
    expect_invalid(&c, false, false, "port_mappings[3].protocol: unknown value 7");
    m[3].protocol = RUNTIME__V1__PROTOCOL__TCP;
    m[3].host_port = -5;
    expect_invalid(&c, false, false, "port_mappings[3].host_port: -5 is not a port");
    m[3].host_port = 65536;
    expect_invalid(&c, false, false, "port_mappings[3].host_port: 65536 is not a port");
    m[3].host_port = 8081;
    m[3].container_port = 0;
    expect_invalid(&c, false, false, "port_mappings[3].container_port: required with a host_port");
    m[3].container_port = 81;
    m[3].host_ip = "0x7f.1";
    expect_invalid(&c, false, false, "port_mappings[3].host_ip: \"0x7f.1\" is not an IP address");
    c.n_port_mappings = SL_POD_MAX_PORT_MAPPINGS + 1;
    expect_invalid(&c, false, false, "port_mappings: 1025 mappings, more than 1024");

    Runtime__V1__PodSandboxConfig none = cfg();
    assert_int_equal(sl_pod_config_first_host_port(&none), -1);
    assert_int_equal(sl_pod_config_portmaps(&none, &out), 0);
    assert_null(out);
}

static void sysctls(void **state)
{
    (void)state;
    sl_error e;
    Runtime__V1__LinuxPodSandboxConfig__SysctlsEntry s[2];
    Runtime__V1__LinuxPodSandboxConfig__SysctlsEntry *sp[2] = {&s[0], &s[1]};
    for (size_t i = 0; i < 2; i++)
        runtime__v1__linux_pod_sandbox_config__sysctls_entry__init(&s[i]);
    s[0].key = "net.core.somaxconn";
    s[0].value = "1024";
    s[1].key = "kernel.shmmax";
    s[1].value = "1000";
    Runtime__V1__LinuxPodSandboxConfig l = RUNTIME__V1__LINUX_POD_SANDBOX_CONFIG__INIT;
    l.sysctls = sp;
    l.n_sysctls = 2;
    Runtime__V1__PodSandboxConfig c = cfg();
    c.linux = &l;
    assert_int_equal(sl_pod_config_check(&c, false, false, &e), 0);
    sl_pod_sysctl out[SL_POD_MAX_SYSCTLS];
    assert_int_equal(sl_pod_config_sysctls(&c, out), 2);
    assert_string_equal(out[1].name, "kernel.shmmax");
    assert_string_equal(out[1].value, "1000");
    expect_invalid(&c, true, false, "linux.sysctls[\"net.core.somaxconn\"]: a net.* sysctl");
    expect_invalid(&c, false, true, "linux.sysctls[\"kernel.shmmax\"]: an IPC sysctl");
    l.n_sysctls = SL_POD_MAX_SYSCTLS + 1;
    expect_invalid(&c, false, false, "linux.sysctls: 257 entries, more than 256");
}

static void dns_conversion(void **state)
{
    (void)state;
    Runtime__V1__PodSandboxConfig c = cfg();
    sl_pod_dns buf;
    assert_null(sl_pod_config_dns(&c, &buf));
    char *servers[] = {"1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"};
    Runtime__V1__DNSConfig d = RUNTIME__V1__DNSCONFIG__INIT;
    d.servers = servers;
    d.n_servers = 4;
    c.dns_config = &d;
    const sl_pod_dns *p = sl_pod_config_dns(&c, &buf);
    assert_ptr_equal(p, &buf);
    assert_int_equal(p->n_servers, 4);
    expect_invalid(&c, false, false, "dns_config.servers: 4 servers, more than 3");
}

static void log_paths(void **state)
{
    (void)state;
    const char *ok[] = {"",         "c.log", "name/0.log", "a/../b.log", "./x/./y.log",
                        "a//b.log", "..log", "a/..b"};
    sl_error e;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (sl_cri_log_path_check(ok[i], &e) < 0)
            fail_msg("\"%s\" refused: %s", ok[i], e.msg);
    struct {
        const char *path, *msg;
    } bad[] = {
        {"../x.log", "log_path: \"../x.log\" leaves the pod's log_directory"},
        {"a/../../x.log", "log_path: \"a/../../x.log\" leaves"},
        {"a/./../..", "log_path: \"a/./../..\" leaves"},
        {"/var/log/x.log", "log_path: \"/var/log/x.log\" is absolute"},
        {"a/..", "log_path: \"a/..\" does not name a file"},
        {"dir/", "log_path: \"dir/\" does not name a file"},
        {".", "log_path: \".\" does not name a file"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        e.code = 0;
        assert_int_equal(sl_cri_log_path_check(bad[i].path, &e), -1);
        assert_int_equal(e.code, SL_GRPC_INVALID_ARGUMENT);
        if (strncmp(e.msg, bad[i].msg, strlen(bad[i].msg)))
            fail_msg("\"%s\" does not start with \"%s\"", e.msg, bad[i].msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(identity),  cmocka_unit_test(port_mappings),
        cmocka_unit_test(sysctls),   cmocka_unit_test(dns_conversion),
        cmocka_unit_test(log_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
