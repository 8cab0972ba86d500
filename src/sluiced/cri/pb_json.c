/* protobuf-c message → JSON by reflection (see pb_json.h). */
#include "cri/pb_json.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"

static json_t *message(const ProtobufCMessage *m, int depth);

static json_t *enum_value(const ProtobufCFieldDescriptor *fd, int v)
{
    const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(fd->descriptor, v);
    return ev ? json_string(ev->name) : json_integer(v);
}

static json_t *bytes_value(const ProtobufCBinaryData *b)
{
    char *text = malloc(sl_base64_encoded_len(b->len, 0) + 1);
    if (!text)
        return NULL;
    sl_base64_encode(text, b->data, b->len, 0);
    json_t *j = json_string(text);
    free(text);
    return j;
}

/* One value of fd at p (a single element for repeated fields). */
static json_t *value(const ProtobufCFieldDescriptor *fd, const void *p, int depth)
{
    switch (fd->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        return json_integer(*(const int32_t *)p);
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        return json_integer(*(const uint32_t *)p);
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        return json_integer(*(const int64_t *)p);
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return json_integer((json_int_t) * (const uint64_t *)p);
    case PROTOBUF_C_TYPE_FLOAT:
        return json_real(*(const float *)p);
    case PROTOBUF_C_TYPE_DOUBLE:
        return json_real(*(const double *)p);
    case PROTOBUF_C_TYPE_BOOL:
        return json_boolean(*(const protobuf_c_boolean *)p);
    case PROTOBUF_C_TYPE_ENUM:
        return enum_value(fd, *(const int *)p);
    case PROTOBUF_C_TYPE_STRING:
        return json_string(*(const char *const *)p ? *(const char *const *)p : "");
    case PROTOBUF_C_TYPE_BYTES:
        return bytes_value(p);
    case PROTOBUF_C_TYPE_MESSAGE:
        return message(*(const ProtobufCMessage *const *)p, depth + 1);
    }
    return json_null();
}

static size_t elem_size(ProtobufCType t)
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

/* A map<K,V> field: repeated entries with exactly the fields key, value. */
static bool is_map(const ProtobufCFieldDescriptor *fd)
{
    const ProtobufCMessageDescriptor *d = fd->descriptor;
    return fd->type == PROTOBUF_C_TYPE_MESSAGE && d->n_fields == 2 &&
           !strcmp(d->fields[0].name, "key") && !strcmp(d->fields[1].name, "value") &&
           d->fields[0].type == PROTOBUF_C_TYPE_STRING;
}

static json_t *repeated(const ProtobufCFieldDescriptor *fd, const void *base, size_t n, int depth)
{
    bool map = is_map(fd);
    json_t *out = map ? json_object() : json_array();
    size_t size = elem_size(fd->type);
    for (size_t i = 0; out && i < n; i++) {
        const void *p = (const char *)base + i * size;
        if (map) {
            const ProtobufCMessage *entry = *(const ProtobufCMessage *const *)p;
            const ProtobufCFieldDescriptor *kf = &entry->descriptor->fields[0];
            const ProtobufCFieldDescriptor *vf = &entry->descriptor->fields[1];
            const char *key = *(const char *const *)((const char *)entry + kf->offset);
            json_object_set_new(out, key ? key : "",
                                value(vf, (const char *)entry + vf->offset, depth));
        } else {
            json_array_append_new(out, value(fd, p, depth));
        }
    }
    return out;
}

/* Go's omitempty: zero numbers, false, "", empty lists and unset messages. */
static bool empty(const json_t *j)
{
    return !j || json_is_null(j) || json_is_false(j) ||
           (json_is_integer(j) && json_integer_value(j) == 0) ||
           (json_is_real(j) && json_real_value(j) == 0) ||
           (json_is_string(j) && !json_string_length(j)) ||
           (json_is_array(j) && !json_array_size(j)) || (json_is_object(j) && !json_object_size(j));
}

static json_t *message(const ProtobufCMessage *m, int depth)
{
    if (!m || depth > SL_PB_JSON_MAX_DEPTH)
        return json_null();
    json_t *obj = json_object();
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; obj && i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *fd = &d->fields[i];
        const char *p = (const char *)m + fd->offset;
        const uint32_t *q = (const uint32_t *)((const char *)m + fd->quantifier_offset);
        if ((fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) && *q != fd->id)
            continue; /* another member of the oneof is set */
        json_t *v;
        if (fd->label == PROTOBUF_C_LABEL_REPEATED)
            v = repeated(fd, *(void *const *)p, *(const size_t *)(const void *)q, depth);
        else
            v = value(fd, p, depth);
        if (empty(v))
            json_decref(v);
        else
            json_object_set_new(obj, fd->name, v);
    }
    return obj;
}

json_t *sl_pb_json(const ProtobufCMessage *m)
{
    return message(m, 0);
}
