/* sluicectl's pod and container config reading (docload.c over pbjson.c):
 * crictl-style YAML and JSON give the same messages; plain YAML scalars
 * take their field's type; anchors and aliases; every error names the
 * file and the line and column or the field's path; alias bombs, alias
 * cycles, deep nesting and oversized files are refused, never expanded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"

#define POD_YAML                                                                                   \
    "# as written for crictl\n"                                                                    \
    "metadata:\n"                                                                                  \
    "  name: web\n"                                                                                \
    "  uid: 12345\n"                                                                               \
    "  namespace: default\n"                                                                       \
    "  attempt: 2\n"                                                                               \
    "hostname: ~\n"                                                                                \
    "log_directory: /var/log/pods/web\n"                                                           \
    "labels: &l {app: web, tier: 1}\n"                                                             \
    "annotations: *l\n"                                                                            \
    "dns_config:\n"                                                                                \
    "  servers: [10.0.0.10]\n"                                                                     \
    "  searches:\n"                                                                                \
    "    - svc.cluster.local\n"                                                                    \
    "linux:\n"                                                                                     \
    "  security_context:\n"                                                                        \
    "    namespace_options: {network: NODE, pid: 1}\n"

#define POD_JSON                                                                                   \
    "  {\"metadata\": {\"name\": \"web\", \"uid\": \"12345\", \"namespace\": \"default\",\n"       \
    "   \"attempt\": 2}, \"logDirectory\": \"/var/log/pods/web\",\n"                               \
    "   \"labels\": {\"app\": \"web\", \"tier\": \"1\"},\n"                                        \
    "   \"annotations\": {\"app\": \"web\", \"tier\": \"1\"},\n"                                   \
    "   \"dns_config\": {\"servers\": [\"10.0.0.10\"], \"searches\": [\"svc.cluster.local\"]},\n"  \
    "   \"linux\": {\"security_context\": {\"namespace_options\": {\"network\": 2, \"pid\": "      \
    "\"CONTAINER\"}}}}\n"

typedef struct fx {
    ctl_arena *a;
    sl_error err;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->a = ctl_arena_new();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    ctl_arena_free(f->a);
    free(f);
    return 0;
}

static ProtobufCMessage *parse(fx *f, const char *text, const ProtobufCMessageDescriptor *d)
{
    sl_error_clear(&f->err);
    return ctl_doc_parse(text, strlen(text), "cfg.yaml", d, f->a, &f->err);
}

static Runtime__V1__PodSandboxConfig *pod(fx *f, const char *text)
{
    return (void *)parse(f, text, &runtime__v1__pod_sandbox_config__descriptor);
}

static const char *map_get(ProtobufCMessage **ents, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        Runtime__V1__PodSandboxConfig__LabelsEntry *e = (void *)ents[i];
        if (!strcmp(e->key, key))
            return e->value;
    }
    return NULL;
}

static void expect_err(fx *f, const char *text, const char *want)
{
    assert_null(pod(f, text));
    if (!strstr(f->err.msg, want))
        fail_msg("error \"%s\" lacks \"%s\"", f->err.msg, want);
}

static void test_yaml_pod_as_crictl_writes_it(void **state)
{
    fx *f = *state;
    Runtime__V1__PodSandboxConfig *p = pod(f, POD_YAML);
    assert_non_null(p);
    assert_string_equal(p->metadata->name, "web");
    assert_string_equal(p->metadata->uid, "12345"); /* a plain number, read as the string */
    assert_int_equal(p->metadata->attempt, 2);
    assert_string_equal(p->hostname, ""); /* ~ is null: absent */
    assert_string_equal(p->log_directory, "/var/log/pods/web");
    assert_int_equal(p->n_labels, 2);
    assert_string_equal(map_get((void *)p->labels, p->n_labels, "tier"), "1");
    assert_string_equal(map_get((void *)p->annotations, p->n_annotations, "app"), "web");
    assert_string_equal(p->dns_config->servers[0], "10.0.0.10");
    assert_string_equal(p->dns_config->searches[0], "svc.cluster.local");
    const Runtime__V1__NamespaceOption *ns = p->linux->security_context->namespace_options;
    assert_int_equal(ns->network, RUNTIME__V1__NAMESPACE_MODE__NODE);
    assert_int_equal(ns->pid, RUNTIME__V1__NAMESPACE_MODE__CONTAINER);
}

/* The same config in JSON (other spellings: camelCase, enum by number and
 * by name) is the same message, byte for byte. */
static void test_json_equals_yaml(void **state)
{
    fx *f = *state;
    ProtobufCMessage *y = parse(f, POD_YAML, &runtime__v1__pod_sandbox_config__descriptor);
    ProtobufCMessage *j = parse(f, POD_JSON, &runtime__v1__pod_sandbox_config__descriptor);
    assert_non_null(y);
    assert_non_null(j);
    size_t ny = protobuf_c_message_get_packed_size(y), nj = protobuf_c_message_get_packed_size(j);
    assert_int_equal(ny, nj);
    uint8_t *by = malloc(ny), *bj = malloc(nj);
    protobuf_c_message_pack(y, by);
    protobuf_c_message_pack(j, bj);
    assert_memory_equal(by, bj, ny);
    free(by);
    free(bj);
}

static void test_yaml_container(void **state)
{
    fx *f = *state;
    const char *text = "metadata: {name: c}\n"
                       "image: {image: 'localhost/sluice/busybox:latest'}\n"
                       "command: [sh, -c, 'echo \"hi: there\"']\n"
                       "args: [1, true]\n"
                       "envs:\n"
                       "  - {key: A, value: 1}\n"
                       "  - key: B\n"
                       "    value: \"two words\"\n"
                       "tty: yes\n"
                       "stdin: false\n"
                       "linux:\n"
                       "  resources:\n"
                       "    memory_limit_in_bytes: 1073741824\n"
                       "    cpuShares: 512\n"
                       "  security_context:\n"
                       "    privileged: on\n"
                       "    run_as_user: {value: 1000}\n";
    Runtime__V1__ContainerConfig *c =
        (void *)parse(f, text, &runtime__v1__container_config__descriptor);
    assert_non_null(c);
    assert_string_equal(c->image->image, "localhost/sluice/busybox:latest");
    assert_int_equal(c->n_command, 3);
    assert_string_equal(c->command[2], "echo \"hi: there\"");
    assert_int_equal(c->n_args, 2);
    assert_string_equal(c->args[0], "1");
    assert_string_equal(c->args[1], "true");
    assert_string_equal(c->envs[0]->value, "1");
    assert_string_equal(c->envs[1]->value, "two words");
    assert_true(c->tty);
    assert_false(c->stdin);
    assert_int_equal(c->linux->resources->memory_limit_in_bytes, 1073741824);
    assert_int_equal(c->linux->resources->cpu_shares, 512);
    assert_true(c->linux->security_context->privileged);
    assert_int_equal(c->linux->security_context->run_as_user->value, 1000);
}

static void test_errors_name_the_place(void **state)
{
    fx *f = *state;
    expect_err(f, "metadata:\n  name: x\n  nmespace: y\n",
               "cfg.yaml:3:3: metadata.nmespace: unknown field (not in PodSandboxMetadata)");
    expect_err(f, "metadata: [1\n", "cfg.yaml:2:1: did not find expected ',' or ']'");
    expect_err(f, "metadata:\n  name: a\n  name: b\n", "cfg.yaml:3:3: metadata.name: given twice");
    expect_err(f, "labels: {a: 1, a: 2}\n", "cfg.yaml:1:16: labels: duplicate key a");
    expect_err(f, "metadata: {name: x}\n---\nhostname: y\n", "more than one YAML document");
    expect_err(f, "# nothing\n", "cfg.yaml: no YAML or JSON document");
    expect_err(f, "- a\n- b\n", "cfg.yaml:1:1: expected a mapping of PodSandboxConfig");
    expect_err(f, "linux:\n  security_context:\n    privileged: maybe\n",
               "PodSandboxConfig: linux.security_context.privileged: expected true or false");
    expect_err(f, "linux: {security_context: {namespace_options: {network: MOON}}}\n",
               "network: unknown value MOON");
    expect_err(f, "metadata: {attempt: -1}\n", "metadata.attempt: must not be negative");
    expect_err(f, "metadata: {attempt: x1}\n", "metadata.attempt: not an integer");
    expect_err(f, "labels: [a, b]\n", "labels: expected an object (a map)");
    expect_err(f, "{\"metadata\": {\"name\": \"x\",}\n", "cfg.yaml:1:");
    expect_err(f, "{\"metadata\": {\"nmespace\": \"x\"}}",
               "PodSandboxConfig: metadata.nmespace: unknown field");
}

/* A billion laughs: 9 levels of 10 aliases would be 10^9 nodes. */
static void test_alias_bomb_and_cycles(void **state)
{
    fx *f = *state;
    char text[2048];
    size_t o = (size_t)snprintf(text, sizeof text, "labels:\n  a0: &a0 [x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i < 10; i++)
        o += (size_t)snprintf(text + o, sizeof text - o,
                              "  a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i,
                              i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
    expect_err(f, text, "too many nodes");
    expect_err(f, "annotations: &a {k: *a}\n", "annotations");
    char deep[512] = "";
    for (int i = 0; i < 40; i++)
        strcat(deep, "[");
    for (int i = 0; i < 40; i++)
        strcat(deep, "]");
    char doc[600];
    snprintf(doc, sizeof doc, "labels: {k: %s}\n", deep);
    expect_err(f, doc, "nested too deeply");
}

static void test_files(void **state)
{
    fx *f = *state;
    char path[] = "/tmp/ctl-docload-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *small = "metadata: {name: from-file}\n";
    assert_int_equal(write(fd, small, strlen(small)), (ssize_t)strlen(small));
    Runtime__V1__PodSandboxConfig *p =
        (void *)ctl_doc_load(path, &runtime__v1__pod_sandbox_config__descriptor, f->a, &f->err);
    assert_non_null(p);
    assert_string_equal(p->metadata->name, "from-file");
    assert_int_equal(ftruncate(fd, CTL_MAX_CONFIG_FILE + 1), 0);
    assert_null(ctl_doc_load(path, &runtime__v1__pod_sandbox_config__descriptor, f->a, &f->err));
    assert_non_null(strstr(f->err.msg, "larger than 1048576 bytes"));
    assert_int_equal(f->err.errnum, 0);
    close(fd);
    unlink(path);
    assert_null(ctl_doc_load(path, &runtime__v1__pod_sandbox_config__descriptor, f->a, &f->err));
    assert_non_null(strstr(f->err.msg, "No such file or directory"));
    assert_int_equal(f->err.errnum, ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_yaml_pod_as_crictl_writes_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_equals_yaml, setup, teardown),
        cmocka_unit_test_setup_teardown(test_yaml_container, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors_name_the_place, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alias_bomb_and_cycles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_files, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
