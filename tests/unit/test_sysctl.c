/* Pod sysctls: which namespace a name belongs to (as the kubelet and runc
 * classify it), its /proc/sys path in both name forms, and the checks with
 * the field named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "grpc/grpc_status.h"
#include "pod/sysctl.h"

static void classify(void **state)
{
    (void)state;
    const char *ipc[] = {"kernel.shmmax",          "kernel.shmall",       "kernel.shmmni",
                         "kernel.shm_rmid_forced", "kernel.msgmax",       "kernel.msgmnb",
                         "kernel.msgmni",          "kernel.sem",          "fs.mqueue.msg_max",
                         "kernel/shmmax",          "fs/mqueue/queues_max"};
    for (size_t i = 0; i < sizeof(ipc) / sizeof(ipc[0]); i++)
        assert_int_equal(sl_sysctl_classify(ipc[i]), SL_SYSCTL_IPC);
    const char *netns[] = {"net.ipv4.ip_forward", "net.core.somaxconn",
                           "net/ipv4/conf/eth0.100/rp_filter", "net.ipv4.conf.eth0/100.rp_filter"};
    for (size_t i = 0; i < sizeof(netns) / sizeof(netns[0]); i++)
        assert_int_equal(sl_sysctl_classify(netns[i]), SL_SYSCTL_NET);
    const char *host[] = {"kernel.panic",  "kernel.hostname", "kernel.semx",
                          "vm.swappiness", "fs.file-max",     "fs.mqueue",
                          "network.x",     "kernel",          ""};
    for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
        assert_int_equal(sl_sysctl_classify(host[i]), SL_SYSCTL_NOT_NAMESPACED);
}

static void paths_of_both_forms(void **state)
{
    (void)state;
    char p[SL_SYSCTL_PATH_MAX];
    assert_int_equal(sl_sysctl_path("net.ipv4.ip_forward", p, sizeof(p)), 0);
    assert_string_equal(p, "net/ipv4/ip_forward");
    assert_int_equal(sl_sysctl_path("net/ipv4/ip_forward", p, sizeof(p)), 0);
    assert_string_equal(p, "net/ipv4/ip_forward");
    /* A VLAN interface: its '.' is a '/' in the dot form. */
    assert_int_equal(sl_sysctl_path("net.ipv4.conf.eth0/100.rp_filter", p, sizeof(p)), 0);
    assert_string_equal(p, "net/ipv4/conf/eth0.100/rp_filter");
    assert_int_equal(sl_sysctl_path("net/ipv4/conf/eth0.100/rp_filter", p, sizeof(p)), 0);
    assert_string_equal(p, "net/ipv4/conf/eth0.100/rp_filter");
}

static void malformed_names(void **state)
{
    (void)state;
    char p[SL_SYSCTL_PATH_MAX];
    const char *bad[] = {"",
                         "net..ipv4",
                         "net.ipv4.",
                         ".net.ipv4",
                         "net/../etc",
                         "net/./ipv4/x",
                         "net/ipv4//x",
                         "net.ipv4.a b",
                         "net.ipv4.\n",
                         "net/ipv4/x\\y",
                         "net.ipv4.ip_fo*"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(sl_sysctl_path(bad[i], p, sizeof(p)), -1);
    char longname[SL_SYSCTL_NAME_MAX + 2];
    memset(longname, 'a', sizeof(longname) - 1);
    memcpy(longname, "net.", 4);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(sl_sysctl_path(longname, p, sizeof(p)), -1);
    longname[SL_SYSCTL_NAME_MAX] = '\0'; /* exactly the limit */
    assert_int_equal(sl_sysctl_path(longname, p, sizeof(p)), 0);
    assert_int_equal(sl_sysctl_path("net.ipv4.ip_forward", p, 8), -1); /* does not fit out */
}

static void check_names_the_field(void **state)
{
    (void)state;
    sl_error e;
    assert_int_equal(sl_sysctl_check("net.ipv4.ip_forward", "1", false, false, &e), 0);
    assert_int_equal(sl_sysctl_check("kernel.shmmax", "1", true, false, &e), 0);
    assert_int_equal(
        sl_sysctl_check("net.ipv4.ip_local_port_range", "1024\t65000", false, true, &e), 0);
    struct {
        const char *name, *value;
        bool hostnet, hostipc;
        const char *msg;
    } cases[] = {
        {"kernel.panic", "1", false, false,
         "linux.sysctls[\"kernel.panic\"]: not a namespaced sysctl"},
        {"net.ipv4.ip_forward", "1", true, false,
         "linux.sysctls[\"net.ipv4.ip_forward\"]: a net.* sysctl cannot be set on a pod with "
         "host network"},
        {"kernel.sem", "1 2 3 4", false, true,
         "linux.sysctls[\"kernel.sem\"]: an IPC sysctl cannot be set on a pod with host IPC"},
        {"net/../x", "1", false, false, "linux.sysctls[\"net/../x\"]: not a sysctl name"},
        {"kernel.shmmax", "", false, false, "linux.sysctls[\"kernel.shmmax\"]: empty value"},
        {"kernel.shmmax", "1\n2", false, false,
         "linux.sysctls[\"kernel.shmmax\"]: value has a control character"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        e.code = 0;
        assert_int_equal(
            sl_sysctl_check(cases[i].name, cases[i].value, cases[i].hostnet, cases[i].hostipc, &e),
            -1);
        assert_int_equal(e.code, SL_GRPC_INVALID_ARGUMENT);
        assert_memory_equal(e.msg, cases[i].msg, strlen(cases[i].msg));
    }
    char big[SL_SYSCTL_VALUE_MAX + 2];
    memset(big, '1', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(sl_sysctl_check("kernel.shmmax", big, false, false, &e), -1);
    assert_non_null(strstr(e.msg, "more than 4095"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(classify),
        cmocka_unit_test(paths_of_both_forms),
        cmocka_unit_test(malformed_names),
        cmocka_unit_test(check_names_the_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
