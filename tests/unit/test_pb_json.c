/* protobuf-c messages as JSON for the verbose info: names as in the
 * .proto, empty values left out (enums are names, kept even at zero),
 * maps as objects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cri/pb_json.h"
#include "grpc/api.pb-c.h"

static void test_pod_config(void **state)
{
    (void)state;
    Runtime__V1__PodSandboxMetadata md = RUNTIME__V1__POD_SANDBOX_METADATA__INIT;
    md.name = "web";
    md.namespace_ = "prod";
    md.attempt = 2;
    Runtime__V1__PodSandboxConfig__LabelsEntry l1 =
        RUNTIME__V1__POD_SANDBOX_CONFIG__LABELS_ENTRY__INIT;
    l1.key = "app";
    l1.value = "x";
    Runtime__V1__PodSandboxConfig__LabelsEntry *labels[] = {&l1};
    Runtime__V1__DNSConfig dns = RUNTIME__V1__DNSCONFIG__INIT;
    char *servers[] = {"10.0.0.10", "10.0.0.11"};
    dns.servers = servers;
    dns.n_servers = 2;
    Runtime__V1__NamespaceOption nso = RUNTIME__V1__NAMESPACE_OPTION__INIT;
    nso.network = RUNTIME__V1__NAMESPACE_MODE__NODE;
    /* The init function, not the macro: the macro names the deprecated
     * seccomp_profile_path field, which clang warns about. */
    Runtime__V1__LinuxSandboxSecurityContext sc;
    runtime__v1__linux_sandbox_security_context__init(&sc);
    sc.namespace_options = &nso;
    Runtime__V1__LinuxPodSandboxConfig lin = RUNTIME__V1__LINUX_POD_SANDBOX_CONFIG__INIT;
    lin.security_context = &sc;
    Runtime__V1__PodSandboxConfig c = RUNTIME__V1__POD_SANDBOX_CONFIG__INIT;
    c.metadata = &md;
    c.hostname = "";
    c.labels = labels;
    c.n_labels = 1;
    c.dns_config = &dns;
    c.linux = &lin;
    json_t *j = sl_pb_json(&c.base);
    char *text = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(text, "{\"dns_config\":{\"servers\":[\"10.0.0.10\",\"10.0.0.11\"]},"
                              "\"labels\":{\"app\":\"x\"},\"linux\":{\"security_context\":"
                              "{\"namespace_options\":{\"ipc\":\"POD\",\"network\":\"NODE\","
                              "\"pid\":\"POD\"},\"supplemental_groups_policy\":\"Merge\"}},"
                              "\"metadata\":{\"attempt\":2,\"name\":\"web\",\"namespace\":"
                              "\"prod\"}}");
    free(text);
    json_decref(j);
}

static void test_bytes_and_numbers(void **state)
{
    (void)state;
    Runtime__V1__Int64Value v = RUNTIME__V1__INT64_VALUE__INIT;
    v.value = -5;
    json_t *j = sl_pb_json(&v.base);
    assert_int_equal(json_integer_value(json_object_get(j, "value")), -5);
    json_decref(j);
    v.value = 0; /* zero: left out */
    j = sl_pb_json(&v.base);
    assert_int_equal(json_object_size(j), 0);
    json_decref(j);
    Runtime__V1__CheckpointContainerRequest r = RUNTIME__V1__CHECKPOINT_CONTAINER_REQUEST__INIT;
    r.container_id = "c";
    r.timeout = 7;
    j = sl_pb_json(&r.base);
    assert_string_equal(json_string_value(json_object_get(j, "container_id")), "c");
    assert_int_equal(json_integer_value(json_object_get(j, "timeout")), 7);
    assert_null(json_object_get(j, "location"));
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pod_config),
        cmocka_unit_test(test_bytes_and_numbers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
