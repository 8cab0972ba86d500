/* The protobuf-c → JSON part sluiced and sluicectl share: element sizes,
 * which repeated fields are maps (labels are, CRI's KeyValue list is
 * not), and one value's JSON (64-bit numbers, enums by name or number,
 * NULL strings, padded base64, sub-messages through the caller). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "grpc/api.pb-c.h"
#include "pb_value.h"

static const ProtobufCFieldDescriptor *field(const ProtobufCMessageDescriptor *d, const char *name)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, name);
    assert_non_null(f);
    return f;
}

static void test_maps_and_sizes(void **state)
{
    (void)state;
    const ProtobufCMessageDescriptor *pod = &runtime__v1__pod_sandbox_config__descriptor;
    const ProtobufCMessageDescriptor *ctr = &runtime__v1__container_config__descriptor;
    assert_true(sl_pb_is_map(field(pod, "labels")));
    assert_true(sl_pb_is_map(field(pod, "annotations")));
    assert_false(sl_pb_is_map(field(ctr, "envs"))); /* repeated KeyValue: a list */
    assert_false(sl_pb_is_map(field(ctr, "command")));
    assert_false(sl_pb_is_map(field(pod, "metadata")));
    assert_int_equal(sl_pb_elem_size(PROTOBUF_C_TYPE_INT64), 8);
    assert_int_equal(sl_pb_elem_size(PROTOBUF_C_TYPE_DOUBLE), 8);
    assert_int_equal(sl_pb_elem_size(PROTOBUF_C_TYPE_INT32), 4);
    assert_int_equal(sl_pb_elem_size(PROTOBUF_C_TYPE_ENUM), sizeof(int));
    assert_int_equal(sl_pb_elem_size(PROTOBUF_C_TYPE_BOOL), sizeof(protobuf_c_boolean));
    assert_int_equal(sl_pb_elem_size(PROTOBUF_C_TYPE_STRING), sizeof(char *));
    assert_int_equal(sl_pb_elem_size(PROTOBUF_C_TYPE_BYTES), sizeof(ProtobufCBinaryData));
}

/* The caller's sub-message hook: records what it was given. */
static json_t *hook(const ProtobufCMessage *m, void *arg)
{
    *(const ProtobufCMessage **)arg = m;
    return json_string(m ? "sub" : "none");
}

static void expect_text(json_t *j, const char *want)
{
    char *text = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
    assert_string_equal(text, want);
    free(text);
    json_decref(j);
}

static void test_values(void **state)
{
    (void)state;
    const ProtobufCMessage *seen = NULL;
    int64_t i64 = -5000000000;
    uint64_t u64 = 9000000000000000000u;
    expect_text(
        sl_pb_value_json(field(&runtime__v1__int64_value__descriptor, "value"), &i64, hook, &seen),
        "-5000000000");
    expect_text(
        sl_pb_value_json(field(&runtime__v1__uint64_value__descriptor, "value"), &u64, hook, &seen),
        "9000000000000000000");
    const ProtobufCFieldDescriptor *net =
        field(&runtime__v1__namespace_option__descriptor, "network");
    int mode = RUNTIME__V1__NAMESPACE_MODE__NODE;
    expect_text(sl_pb_value_json(net, &mode, hook, &seen), "\"NODE\"");
    mode = 0; /* the zero enum keeps its name */
    expect_text(sl_pb_value_json(net, &mode, hook, &seen), "\"POD\"");
    mode = 77; /* a value the descriptor does not know: its number */
    expect_text(sl_pb_value_json(net, &mode, hook, &seen), "77");
    const char *s = NULL;
    const ProtobufCFieldDescriptor *id =
        field(&runtime__v1__container_status_request__descriptor, "container_id");
    expect_text(sl_pb_value_json(id, &s, hook, &seen), "\"\"");
    s = "c1";
    expect_text(sl_pb_value_json(id, &s, hook, &seen), "\"c1\"");
    protobuf_c_boolean b = 1;
    expect_text(
        sl_pb_value_json(field(&runtime__v1__container_status_request__descriptor, "verbose"), &b,
                         hook, &seen),
        "true");
}

static void test_bytes_and_messages(void **state)
{
    (void)state;
    const ProtobufCMessage *seen = NULL;
    const ProtobufCFieldDescriptor *out =
        field(&runtime__v1__exec_sync_response__descriptor, "stdout");
    ProtobufCBinaryData bin = {3, (uint8_t *)"hi\xff"};
    expect_text(sl_pb_value_json(out, &bin, hook, &seen), "\"aGn/\"");
    bin.len = 2;
    expect_text(sl_pb_value_json(out, &bin, hook, &seen), "\"aGk=\"");
    bin.len = 1;
    expect_text(sl_pb_value_json(out, &bin, hook, &seen), "\"aA==\"");
    bin.len = 0;
    expect_text(sl_pb_value_json(out, &bin, hook, &seen), "\"\"");
    /* a sub-message, set or not, goes to the caller's hook */
    Runtime__V1__PodSandboxMetadata md = RUNTIME__V1__POD_SANDBOX_METADATA__INIT;
    const ProtobufCMessage *p = &md.base;
    const ProtobufCFieldDescriptor *meta =
        field(&runtime__v1__pod_sandbox_config__descriptor, "metadata");
    expect_text(sl_pb_value_json(meta, &p, hook, &seen), "\"sub\"");
    assert_ptr_equal(seen, &md.base);
    p = NULL;
    expect_text(sl_pb_value_json(meta, &p, hook, &seen), "\"none\"");
    assert_null(seen);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maps_and_sizes),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_bytes_and_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
