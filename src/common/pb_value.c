/* One protobuf-c value as JSON, by reflection (see pb_value.h). */
#include "pb_value.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"

size_t sl_pb_elem_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_ENUM:
        return sizeof(int);
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    default:
        return 4;
    }
}

bool sl_pb_is_map(const ProtobufCFieldDescriptor *f)
{
    if (f->type != PROTOBUF_C_TYPE_MESSAGE || f->label != PROTOBUF_C_LABEL_REPEATED)
        return false;
    const ProtobufCMessageDescriptor *d = f->descriptor;
    size_t n = strlen(d->name);
    return n > 5 && !strcmp(d->name + n - 5, "Entry") && d->n_fields == 2 &&
           !strcmp(d->fields[0].name, "key") && !strcmp(d->fields[1].name, "value") &&
           d->fields[0].type == PROTOBUF_C_TYPE_STRING;
}

static json_t *enum_json(const ProtobufCEnumDescriptor *d, int v)
{
    const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(d, v);
    return ev ? json_string(ev->name) : json_integer(v);
}

static json_t *bytes_json(const ProtobufCBinaryData *b)
{
    char *text = malloc(sl_base64_encoded_len(b->len, 0) + 1);
    if (!text)
        return NULL;
    sl_base64_encode(text, b->data, b->len, 0);
    json_t *j = json_string(text);
    free(text);
    return j;
}

json_t *sl_pb_value_json(const ProtobufCFieldDescriptor *f, const void *v, sl_pb_msg_json_fn msg,
                         void *arg)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        return json_integer(*(const int32_t *)v);
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        return json_integer(*(const uint32_t *)v);
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        return json_integer(*(const int64_t *)v);
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return json_integer((json_int_t) * (const uint64_t *)v);
    case PROTOBUF_C_TYPE_FLOAT:
        return json_real(*(const float *)v);
    case PROTOBUF_C_TYPE_DOUBLE:
        return json_real(*(const double *)v);
    case PROTOBUF_C_TYPE_BOOL:
        return json_boolean(*(const protobuf_c_boolean *)v);
    case PROTOBUF_C_TYPE_ENUM:
        return enum_json(f->descriptor, *(const int *)v);
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(const char *const *)v;
        return json_string(s ? s : "");
    }
    case PROTOBUF_C_TYPE_BYTES:
        return bytes_json(v);
    case PROTOBUF_C_TYPE_MESSAGE:
        return msg(*(const ProtobufCMessage *const *)v, arg);
    }
    return json_null();
}
