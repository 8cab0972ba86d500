#include "cri/cri_fields.h"

#include <stdio.h>

#include "grpc/grpc_status.h"

static int walk(const ProtobufCMessage *m, const char *path, int depth, sl_error *e);

static int unknown(const ProtobufCMessage *m, const char *path, sl_error *e)
{
    return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                         "%s: field %u of %s is not known to sluiced (CRI runtime.v1 as of "
                         "1.32); refusing rather than ignoring it",
                         path, m->unknown_fields[0].tag, m->descriptor->name);
}

/* The sub-messages of field f, in *subs (n of them). */
static size_t submessages(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
                          ProtobufCMessage *const **subs)
{
    const char *base = (const char *)m;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
        *subs = *(ProtobufCMessage *const *const *)(base + f->offset);
        return *(const size_t *)(base + f->quantifier_offset);
    }
    *subs = (ProtobufCMessage *const *)(base + f->offset);
    return **subs ? 1 : 0;
}

static int walk_field(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
                      const char *path, int depth, sl_error *e)
{
    ProtobufCMessage *const *subs;
    size_t n = submessages(m, f, &subs);
    for (size_t i = 0; i < n; i++) {
        char sub[512];
        if (f->label == PROTOBUF_C_LABEL_REPEATED)
            snprintf(sub, sizeof(sub), "%s.%s[%zu]", path, f->name, i);
        else
            snprintf(sub, sizeof(sub), "%s.%s", path, f->name);
        if (subs[i] && walk(subs[i], sub, depth + 1, e) < 0)
            return -1;
    }
    return 0;
}

static int walk(const ProtobufCMessage *m, const char *path, int depth, sl_error *e)
{
    if (m->n_unknown_fields)
        return unknown(m, path, e);
    if (depth >= SL_CRI_FIELDS_MAX_DEPTH)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT, "%s: nested deeper than %d messages",
                             path, SL_CRI_FIELDS_MAX_DEPTH);
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->type == PROTOBUF_C_TYPE_MESSAGE && walk_field(m, f, path, depth, e) < 0)
            return -1;
    }
    return 0;
}

int sl_cri_check_fields(const ProtobufCMessage *msg, const char *path, sl_error *e)
{
    return msg ? walk(msg, path, 0, e) : 0;
}
