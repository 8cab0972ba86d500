/* protobuf-c message → JSON by reflection, Go encoding/json style (see
 * pb_json.h); the values themselves come from the shared pb_value.c. */
#include "cri/pb_json.h"

#include <stdbool.h>

#include "pb_value.h"

static json_t *message(const ProtobufCMessage *m, int depth);

/* A sub-message one level deeper than the field holding it. */
static json_t *sub_message(const ProtobufCMessage *m, void *depth)
{
    return message(m, *(const int *)depth + 1);
}

/* One value of fd at p (a single element for repeated fields). */
static json_t *value(const ProtobufCFieldDescriptor *fd, const void *p, int depth)
{
    return sl_pb_value_json(fd, p, sub_message, &depth);
}

static json_t *repeated(const ProtobufCFieldDescriptor *fd, const void *base, size_t n, int depth)
{
    bool map = sl_pb_is_map(fd);
    json_t *out = map ? json_object() : json_array();
    size_t size = sl_pb_elem_size(fd->type);
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
