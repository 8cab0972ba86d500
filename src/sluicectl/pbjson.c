/* protobuf-c messages to and from JSON through their descriptors.
 *
 * Out: lowerCamelCase names (as protojson and crictl print), enums by
 * name, maps as objects, 64-bit integers as JSON numbers, bytes as base64
 * text; scalars are printed even when zero, absent sub-messages are left
 * out. Values of an "info" map are JSON documents (verbose status) and
 * are embedded as such when they parse.
 * In: proto names (log_directory) or lowerCamelCase (logDirectory), enums
 * by name or number, integers as numbers or decimal strings; an unknown
 * field is an error (it is almost always a typo). Everything is allocated
 * in an arena freed at once. YAML files reach this as JSON trees
 * (docload.c). Nothing here prints: errors are returned in an sl_error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "pb_value.h"

struct ctl_arena {
    void **p;
    size_t n, cap;
};

ctl_arena *ctl_arena_new(void)
{
    return calloc(1, sizeof(ctl_arena));
}

void ctl_arena_free(ctl_arena *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++)
        free(a->p[i]);
    free(a->p);
    free(a);
}

static void *arena_alloc(ctl_arena *a, size_t n)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        void **np = realloc(a->p, cap * sizeof *np);
        if (!np)
            return NULL;
        a->p = np;
        a->cap = cap;
    }
    void *m = calloc(1, n ? n : 1);
    if (m)
        a->p[a->n++] = m;
    return m;
}

static void camel(const char *name, char *out, size_t outlen)
{
    size_t o = 0;
    bool up = false;
    for (const char *p = name; *p && o + 1 < outlen; p++) {
        if (*p == '_') {
            up = true;
            continue;
        }
        out[o++] = up && *p >= 'a' && *p <= 'z' ? (char)(*p - 32) : *p;
        up = false;
    }
    out[o] = '\0';
}

/* ---- out ---- */

static json_t *sub_message(const ProtobufCMessage *m, void *arg)
{
    (void)arg;
    return m ? ctl_msg_to_json(m) : json_null();
}

static json_t *scalar_to_json(const ProtobufCFieldDescriptor *f, const void *v)
{
    return sl_pb_value_json(f, v, sub_message, NULL);
}

static json_t *map_to_json(const ProtobufCFieldDescriptor *f, ProtobufCMessage *const *ents,
                           size_t n)
{
    json_t *o = json_object();
    bool info = !strcmp(f->name, "info");
    for (size_t i = 0; i < n; i++) {
        const ProtobufCMessageDescriptor *d = f->descriptor;
        const char *k = *(char *const *)((const char *)ents[i] + d->fields[0].offset);
        json_t *v = NULL;
        if (info && d->fields[1].type == PROTOBUF_C_TYPE_STRING) {
            const char *s = *(char *const *)((const char *)ents[i] + d->fields[1].offset);
            v = s ? json_loads(s, JSON_DECODE_ANY, NULL) : NULL;
        }
        if (!v)
            v = scalar_to_json(&d->fields[1], (const char *)ents[i] + d->fields[1].offset);
        json_object_set_new(o, k ? k : "", v);
    }
    return o;
}

static json_t *field_to_json(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    const char *base = (const char *)m;
    const void *v = base + f->offset;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
        size_t n = *(const size_t *)(base + f->quantifier_offset);
        const char *arr = *(char *const *)v;
        if (sl_pb_is_map(f))
            return map_to_json(f, (ProtobufCMessage *const *)arr, n);
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(a, scalar_to_json(f, arr + i * sl_pb_elem_size(f->type)));
        return a;
    }
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
        if (*(const uint32_t *)(base + f->quantifier_offset) != f->id)
            return NULL;
    } else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset &&
               f->type != PROTOBUF_C_TYPE_MESSAGE && f->type != PROTOBUF_C_TYPE_STRING) {
        if (!*(const protobuf_c_boolean *)(base + f->quantifier_offset))
            return NULL;
    }
    if (f->type == PROTOBUF_C_TYPE_MESSAGE && !*(ProtobufCMessage *const *)v)
        return NULL;
    return scalar_to_json(f, v);
}

json_t *ctl_msg_to_json(const ProtobufCMessage *m)
{
    json_t *o = json_object();
    if (!m || !o)
        return o;
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        json_t *v = field_to_json(m, &d->fields[i]);
        if (!v)
            continue;
        char name[128];
        camel(d->fields[i].name, name, sizeof name);
        json_object_set_new(o, name, v);
    }
    return o;
}

/* ---- in ---- */

typedef struct in_ctx {
    ctl_arena *a;
    sl_error *e;
    char path[256]; /* where we are, for errors */
} in_ctx;

static int fail(in_ctx *x, const char *what, const char *detail)
{
    sl_error_set(x->e, 0, "%s%s%s", x->path[0] ? x->path : "(top level)", what, detail);
    return -1;
}

static ProtobufCMessage *msg_in(in_ctx *x, const ProtobufCMessageDescriptor *d, json_t *j,
                                int depth);

static int int_in(in_ctx *x, json_t *j, bool is_signed, long long *out)
{
    if (json_is_integer(j)) {
        *out = json_integer_value(j);
    } else if (json_is_string(j)) {
        char *end;
        errno = 0;
        *out = strtoll(json_string_value(j), &end, 10);
        if (errno || *end || end == json_string_value(j))
            return fail(x, ": not an integer", "");
    } else {
        return fail(x, ": expected an integer", "");
    }
    if (!is_signed && *out < 0)
        return fail(x, ": must not be negative", "");
    return 0;
}

static int enum_in(in_ctx *x, const ProtobufCEnumDescriptor *d, json_t *j, int *out)
{
    if (json_is_string(j)) {
        const ProtobufCEnumValue *v =
            protobuf_c_enum_descriptor_get_value_by_name(d, json_string_value(j));
        if (!v)
            return fail(x, ": unknown value ", json_string_value(j));
        *out = v->value;
        return 0;
    }
    long long v;
    if (int_in(x, j, true, &v) < 0)
        return -1;
    *out = (int)v;
    return 0;
}

static char *str_in(in_ctx *x, const char *s)
{
    size_t n = strlen(s);
    char *p = arena_alloc(x->a, n + 1);
    if (p)
        memcpy(p, s, n + 1);
    return p;
}

static int scalar_in(in_ctx *x, const ProtobufCFieldDescriptor *f, json_t *j, void *v, int depth)
{
    long long iv = 0;
    switch (f->type) {
    case PROTOBUF_C_TYPE_BOOL:
        if (!json_is_boolean(j))
            return fail(x, ": expected true or false", "");
        *(protobuf_c_boolean *)v = json_is_true(j);
        return 0;
    case PROTOBUF_C_TYPE_ENUM:
        return enum_in(x, f->descriptor, j, v);
    case PROTOBUF_C_TYPE_STRING:
        if (!json_is_string(j))
            return fail(x, ": expected a string", "");
        *(char **)v = str_in(x, json_string_value(j));
        return *(char **)v ? 0 : fail(x, ": out of memory", "");
    case PROTOBUF_C_TYPE_MESSAGE:
        *(ProtobufCMessage **)v = msg_in(x, f->descriptor, j, depth + 1);
        return *(ProtobufCMessage **)v ? 0 : -1;
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE:
        if (!json_is_number(j))
            return fail(x, ": expected a number", "");
        if (f->type == PROTOBUF_C_TYPE_FLOAT)
            *(float *)v = (float)json_number_value(j);
        else
            *(double *)v = json_number_value(j);
        return 0;
    case PROTOBUF_C_TYPE_BYTES:
        return fail(x, ": bytes fields are not accepted in configs", "");
    default:
        break;
    }
    bool sgn = f->type == PROTOBUF_C_TYPE_INT32 || f->type == PROTOBUF_C_TYPE_SINT32 ||
               f->type == PROTOBUF_C_TYPE_SFIXED32 || f->type == PROTOBUF_C_TYPE_INT64 ||
               f->type == PROTOBUF_C_TYPE_SINT64 || f->type == PROTOBUF_C_TYPE_SFIXED64;
    if (int_in(x, j, sgn, &iv) < 0)
        return -1;
    if (sl_pb_elem_size(f->type) == 8)
        *(int64_t *)v = iv;
    else
        *(int32_t *)v = (int32_t)iv;
    return 0;
}

static int map_in(in_ctx *x, const ProtobufCFieldDescriptor *f, json_t *j, void *base, int depth)
{
    if (!json_is_object(j))
        return fail(x, ": expected an object (a map)", "");
    const ProtobufCMessageDescriptor *d = f->descriptor;
    size_t n = json_object_size(j), i = 0;
    ProtobufCMessage **arr = arena_alloc(x->a, n * sizeof *arr);
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v)
    {
        ProtobufCMessage *e = arena_alloc(x->a, d->sizeof_message);
        if (!arr || !e)
            return fail(x, ": out of memory", "");
        d->message_init(e);
        *(char **)((char *)e + d->fields[0].offset) = str_in(x, k);
        if (scalar_in(x, &d->fields[1], v, (char *)e + d->fields[1].offset, depth) < 0)
            return -1;
        arr[i++] = e;
    }
    *(size_t *)((char *)base + f->quantifier_offset) = n;
    *(void **)((char *)base + f->offset) = arr;
    return 0;
}

static int repeated_in(in_ctx *x, const ProtobufCFieldDescriptor *f, json_t *j, void *base,
                       int depth)
{
    if (sl_pb_is_map(f))
        return map_in(x, f, j, base, depth);
    if (!json_is_array(j))
        return fail(x, ": expected an array", "");
    size_t n = json_array_size(j), es = sl_pb_elem_size(f->type);
    char *arr = arena_alloc(x->a, n * es);
    if (!arr)
        return fail(x, ": out of memory", "");
    for (size_t i = 0; i < n; i++)
        if (scalar_in(x, f, json_array_get(j, i), arr + i * es, depth) < 0)
            return -1;
    *(size_t *)((char *)base + f->quantifier_offset) = n;
    *(void **)((char *)base + f->offset) = arr;
    return 0;
}

const ProtobufCFieldDescriptor *ctl_pb_field(const ProtobufCMessageDescriptor *d, const char *key)
{
    for (unsigned i = 0; i < d->n_fields; i++) {
        char cm[128];
        camel(d->fields[i].name, cm, sizeof cm);
        if (!strcmp(d->fields[i].name, key) || !strcmp(cm, key))
            return &d->fields[i];
    }
    return NULL;
}

static int field_in(in_ctx *x, const ProtobufCFieldDescriptor *f, json_t *v, void *m, int depth)
{
    if (json_is_null(v))
        return 0;
    if (f->label == PROTOBUF_C_LABEL_REPEATED)
        return repeated_in(x, f, v, m, depth);
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
        *(uint32_t *)((char *)m + f->quantifier_offset) = f->id;
    else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset &&
             f->type != PROTOBUF_C_TYPE_MESSAGE && f->type != PROTOBUF_C_TYPE_STRING)
        *(protobuf_c_boolean *)((char *)m + f->quantifier_offset) = 1;
    return scalar_in(x, f, v, (char *)m + f->offset, depth);
}

static ProtobufCMessage *msg_in(in_ctx *x, const ProtobufCMessageDescriptor *d, json_t *j,
                                int depth)
{
    if (depth > CTL_MAX_CONFIG_DEPTH)
        return fail(x, ": nested too deeply", ""), NULL;
    if (!json_is_object(j))
        return fail(x, ": expected an object", ""), NULL;
    ProtobufCMessage *m = arena_alloc(x->a, d->sizeof_message);
    if (!m)
        return fail(x, ": out of memory", ""), NULL;
    d->message_init(m);
    const char *k;
    json_t *v;
    size_t plen = strlen(x->path);
    json_object_foreach(j, k, v)
    {
        snprintf(x->path + plen, sizeof x->path - plen, "%s%s", plen ? "." : "", k);
        const ProtobufCFieldDescriptor *f = ctl_pb_field(d, k);
        if (!f) {
            char what[160];
            snprintf(what, sizeof what, ": unknown field (not in %s)", d->short_name);
            return fail(x, what, ""), NULL;
        }
        if (field_in(x, f, v, m, depth) < 0)
            return NULL;
        x->path[plen] = '\0';
    }
    return m;
}

ProtobufCMessage *ctl_json_to_msg(const ProtobufCMessageDescriptor *d, json_t *j, ctl_arena *a,
                                  sl_error *e)
{
    in_ctx x = {.a = a, .e = e};
    return msg_in(&x, d, j, 0);
}
