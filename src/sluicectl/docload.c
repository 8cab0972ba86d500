/* Pod and container config files, as crictl reads them: JSON when the
 * first non-blank byte is '{', else YAML. YAML is read with libyaml's
 * document loader and turned into a JSON tree for pbjson.c, guided by the
 * message descriptor: a plain scalar becomes what its field wants (a
 * string field keeps "123" as text, a bool field reads yes/no/true/false,
 * an enum its name or number), so the YAML a user writes for crictl means
 * the same here. Unknown fields are found during the walk, where the line
 * is still known. Aliases are followed within a node budget. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "ctl.h"
#include "pb_value.h"

typedef struct yconv {
    yaml_document_t *doc;
    const char *name;
    size_t nodes;
    sl_error *e;
    char path[256]; /* the field being converted, for errors */
} yconv;

static json_t *yfail(yconv *y, const yaml_node_t *n, const char *what, const char *detail)
{
    sl_error_set(y->e, 0, "%s:%zu:%zu: %s%s%s%s", y->name, n->start_mark.line + 1,
                 n->start_mark.column + 1, y->path, y->path[0] ? ": " : "", what, detail);
    return NULL;
}

static bool is_null_plain(const yaml_node_t *n)
{
    const char *v = (const char *)n->data.scalar.value;
    return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
           (!*v || !strcmp(v, "~") || !strcasecmp(v, "null"));
}

static int plain_bool(const char *v)
{
    static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
    for (size_t i = 0; i < 3; i++) {
        if (!strcasecmp(v, yes[i]))
            return 1;
        if (!strcasecmp(v, no[i]))
            return 0;
    }
    return -1;
}

static bool whole_int(const char *v, long long *out)
{
    char *end;
    errno = 0;
    *out = strtoll(v, &end, 10);
    return *v && !*end && !errno;
}

static bool whole_real(const char *v, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(v, &end);
    return *v && !*end && !errno;
}

/* A plain scalar with no field to guide it: YAML's core schema. */
static json_t *untyped_scalar(const yaml_node_t *n)
{
    const char *v = (const char *)n->data.scalar.value;
    long long i;
    double d;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return json_stringn(v, n->data.scalar.length);
    if (is_null_plain(n))
        return json_null();
    if (!strcmp(v, "true") || !strcmp(v, "false"))
        return json_boolean(v[0] == 't');
    if (whole_int(v, &i))
        return json_integer(i);
    if (whole_real(v, &d))
        return json_real(d);
    return json_stringn(v, n->data.scalar.length);
}

/* A scalar for a field of type t. Mismatches are left for pbjson to name. */
static json_t *typed_scalar(const yaml_node_t *n, ProtobufCType t)
{
    const char *v = (const char *)n->data.scalar.value;
    bool plain = n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    long long i;
    double d;
    if (is_null_plain(n))
        return json_null();
    if (t == PROTOBUF_C_TYPE_BOOL && plain && plain_bool(v) >= 0)
        return json_boolean(plain_bool(v));
    if (t == PROTOBUF_C_TYPE_ENUM && whole_int(v, &i))
        return json_integer(i);
    if ((t == PROTOBUF_C_TYPE_FLOAT || t == PROTOBUF_C_TYPE_DOUBLE) && whole_real(v, &d))
        return json_real(d);
    if (t == PROTOBUF_C_TYPE_MESSAGE || (t == PROTOBUF_C_TYPE_BOOL && plain))
        return untyped_scalar(n);
    /* strings as they are; integers as text, which pbjson parses */
    return json_stringn(v, n->data.scalar.length);
}

static json_t *conv_msg(yconv *y, yaml_node_t *n, const ProtobufCMessageDescriptor *d, int depth);
static json_t *conv_field(yconv *y, yaml_node_t *n, const ProtobufCFieldDescriptor *f, int depth);

static yaml_node_t *node(yconv *y, int id)
{
    return yaml_document_get_node(y->doc, id);
}

/* Counts a node against the budget and the depth limit. */
static bool budget(yconv *y, yaml_node_t *n, int depth)
{
    if (++y->nodes > CTL_MAX_CONFIG_NODES) {
        char d[64];
        snprintf(d, sizeof d, " (at most %u; aliases expand to copies)", CTL_MAX_CONFIG_NODES);
        return yfail(y, n, "too many nodes", d), false;
    }
    if (depth > CTL_MAX_CONFIG_DEPTH)
        return yfail(y, n, "nested too deeply", ""), false;
    return true;
}

/* Any node with no field to guide it (an unknown field's value is never
 * converted: it is an error before). */
static json_t *conv_any(yconv *y, yaml_node_t *n, int depth)
{
    if (!budget(y, n, depth))
        return NULL;
    if (n->type == YAML_SCALAR_NODE)
        return untyped_scalar(n);
    json_t *out = n->type == YAML_SEQUENCE_NODE ? json_array() : json_object();
    if (n->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = n->data.sequence.items.start;
             out && it < n->data.sequence.items.top; it++)
            if (json_array_append_new(out, conv_any(y, node(y, *it), depth + 1)) < 0)
                return json_decref(out), NULL;
        return out;
    }
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; out && p < n->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = node(y, p->key);
        if (k->type != YAML_SCALAR_NODE)
            return json_decref(out), yfail(y, k, "a key must be a scalar", "");
        if (json_object_set_new(out, (const char *)k->data.scalar.value,
                                conv_any(y, node(y, p->value), depth + 1)) < 0)
            return json_decref(out), NULL;
    }
    return out;
}

/* The value of a field, one element of a repeated field, or a map value. */
static json_t *conv_value(yconv *y, yaml_node_t *n, const ProtobufCFieldDescriptor *f, int depth)
{
    if (f->type == PROTOBUF_C_TYPE_MESSAGE && n->type == YAML_MAPPING_NODE)
        return conv_msg(y, n, f->descriptor, depth + 1);
    if (n->type != YAML_SCALAR_NODE)
        return conv_any(y, n, depth);
    return budget(y, n, depth) ? typed_scalar(n, f->type) : NULL;
}

static json_t *conv_map(yconv *y, yaml_node_t *n, const ProtobufCFieldDescriptor *f, int depth)
{
    const ProtobufCMessageDescriptor *ed = f->descriptor;
    const ProtobufCFieldDescriptor *vf = &ed->fields[1];
    json_t *out = json_object();
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; out && p < n->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = node(y, p->key);
        if (k->type != YAML_SCALAR_NODE)
            return json_decref(out), yfail(y, k, "a map key must be a scalar", "");
        if (json_object_get(out, (const char *)k->data.scalar.value))
            return json_decref(out),
                   yfail(y, k, "duplicate key ", (const char *)k->data.scalar.value);
        json_t *v = conv_value(y, node(y, p->value), vf, depth + 1);
        if (!v || json_object_set_new(out, (const char *)k->data.scalar.value, v) < 0)
            return json_decref(out), NULL;
    }
    return out;
}

static json_t *conv_field(yconv *y, yaml_node_t *n, const ProtobufCFieldDescriptor *f, int depth)
{
    if (f->label != PROTOBUF_C_LABEL_REPEATED)
        return conv_value(y, n, f, depth);
    if (sl_pb_is_map(f) && n->type == YAML_MAPPING_NODE)
        return budget(y, n, depth) ? conv_map(y, n, f, depth) : NULL;
    if (n->type != YAML_SEQUENCE_NODE)
        return conv_any(y, n, depth);
    json_t *out = json_array();
    for (yaml_node_item_t *it = n->data.sequence.items.start;
         out && it < n->data.sequence.items.top; it++) {
        json_t *v = conv_value(y, node(y, *it), f, depth + 1);
        if (!v || json_array_append_new(out, v) < 0)
            return json_decref(out), NULL;
    }
    return out;
}

/* One key of a message mapping: checked, converted, added to out. */
static int conv_member(yconv *y, json_t *out, yaml_node_pair_t *p,
                       const ProtobufCMessageDescriptor *d, int depth)
{
    yaml_node_t *k = node(y, p->key);
    if (k->type != YAML_SCALAR_NODE)
        return yfail(y, k, "a key must be a scalar", ""), -1;
    const char *key = (const char *)k->data.scalar.value;
    size_t plen = strlen(y->path);
    snprintf(y->path + plen, sizeof y->path - plen, "%s%s", plen ? "." : "", key);
    const ProtobufCFieldDescriptor *f = ctl_pb_field(d, key);
    char what[160];
    snprintf(what, sizeof what, "unknown field (not in %s)", d->short_name);
    if (!f || json_object_get(out, key))
        return yfail(y, k, f ? "given twice" : what, ""), -1;
    json_t *v = conv_field(y, node(y, p->value), f, depth);
    if (!v || json_object_set_new(out, key, v) < 0)
        return -1;
    y->path[plen] = '\0';
    return 0;
}

static json_t *conv_msg(yconv *y, yaml_node_t *n, const ProtobufCMessageDescriptor *d, int depth)
{
    if (!budget(y, n, depth))
        return NULL;
    json_t *out = json_object();
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; out && p < n->data.mapping.pairs.top;
         p++)
        if (conv_member(y, out, p, d, depth) < 0)
            return json_decref(out), NULL;
    return out;
}

static void parser_fail(const yaml_parser_t *p, const char *name, sl_error *e)
{
    const yaml_mark_t *m = p->problem ? &p->problem_mark : &p->context_mark;
    sl_error_set(e, 0, "%s:%zu:%zu: %s%s%s", name, m->line + 1, m->column + 1,
                 p->problem ? p->problem : "not YAML", p->context ? " " : "",
                 p->context ? p->context : "");
}

/* Loads the one document of text; 0, or -1 with e. */
static int load_doc(const char *text, size_t len, const char *name, yaml_document_t *doc,
                    sl_error *e)
{
    yaml_parser_t p;
    yaml_document_t extra;
    int rc = -1;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    if (!yaml_parser_load(&p, doc)) {
        parser_fail(&p, name, e);
    } else if (!yaml_document_get_root_node(doc)) {
        sl_error_set(e, 0, "%s: no YAML or JSON document in it", name);
        yaml_document_delete(doc);
    } else if (!yaml_parser_load(&p, &extra)) {
        parser_fail(&p, name, e);
        yaml_document_delete(doc);
    } else {
        bool more = yaml_document_get_root_node(&extra) != NULL;
        yaml_document_delete(&extra);
        rc = more ? -1 : 0;
        if (more) {
            sl_error_set(e, 0, "%s: holds more than one YAML document (a config is one)", name);
            yaml_document_delete(doc);
        }
    }
    yaml_parser_delete(&p);
    return rc;
}

static json_t *yaml_tree(const char *text, size_t len, const char *name,
                         const ProtobufCMessageDescriptor *d, sl_error *e)
{
    yaml_document_t doc;
    if (load_doc(text, len, name, &doc, e) < 0)
        return NULL;
    yconv y = {.doc = &doc, .name = name, .e = e};
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    json_t *j = root->type == YAML_MAPPING_NODE
                    ? conv_msg(&y, root, d, 0)
                    : yfail(&y, root, "expected a mapping of ", d->short_name);
    yaml_document_delete(&doc);
    return j;
}

static json_t *json_tree(const char *text, size_t len, const char *name, sl_error *e)
{
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!j)
        sl_error_set(e, 0, "%s:%d:%d: %s (a file starting with '{' is read as JSON)", name, je.line,
                     je.column, je.text);
    return j;
}

ProtobufCMessage *ctl_doc_parse(const char *text, size_t len, const char *name,
                                const ProtobufCMessageDescriptor *d, ctl_arena *a, sl_error *e)
{
    size_t lead = 0;
    while (lead < len && strchr(" \t\r\n", text[lead]))
        lead++;
    json_t *j = lead < len && text[lead] == '{' ? json_tree(text, len, name, e)
                                                : yaml_tree(text, len, name, d, e);
    if (!j)
        return NULL;
    ProtobufCMessage *m = ctl_json_to_msg(d, j, a, e);
    json_decref(j);
    if (!m)
        sl_error_wrap(e, "%s: %s", name, d->short_name);
    return m;
}

/* The whole file, at most CTL_MAX_CONFIG_FILE bytes; NULL with e. */
static char *read_small(const char *path, size_t *len, sl_error *e)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        sl_error_set(e, errno, "%s", path);
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char *buf = malloc(CTL_MAX_CONFIG_FILE + 1);
    size_t n = 0;
    ssize_t r = 1;
    int read_errno = 0;
    while (buf && r > 0 && n <= CTL_MAX_CONFIG_FILE)
        if ((r = read(fd, buf + n, CTL_MAX_CONFIG_FILE + 1 - n)) > 0)
            n += (size_t)r;
        else if (r < 0)
            read_errno = errno; /* before close() can change errno */
    close(fd);
    if (!buf || r < 0 || n > CTL_MAX_CONFIG_FILE) {
        if (buf && r >= 0)
            sl_error_set(e, 0, "%s: larger than %u bytes, which no config is", path,
                         CTL_MAX_CONFIG_FILE);
        else if (buf)
            sl_error_set(e, read_errno, "%s", path);
        else
            sl_error_set(e, 0, "%s: out of memory", path);
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

ProtobufCMessage *ctl_doc_load(const char *path, const ProtobufCMessageDescriptor *d, ctl_arena *a,
                               sl_error *e)
{
    size_t len;
    char *text = read_small(path, &len, e);
    if (!text)
        return NULL;
    ProtobufCMessage *m = ctl_doc_parse(text, len, path, d, a, e);
    free(text);
    return m;
}
