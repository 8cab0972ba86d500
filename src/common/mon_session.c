#include "mon_session.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mon_proto.h"
#include "sluice/error.h"
#include "sluice/limits.h"

static const char *const kinds[] = {NULL, "exec", "attach", "portforward"};

static json_t *exec_json(const sl_exec_request *e)
{
    json_t *cmd = json_array();
    for (size_t i = 0; cmd && i < e->ncmd; i++)
        if (json_array_append_new(cmd, json_string(e->cmd[i])) < 0) {
            json_decref(cmd);
            return NULL;
        }
    return json_pack("{s:s, s:s, s:o, s:b, s:b, s:b, s:b}", "kind", "exec", "container_id",
                     e->container_id ? e->container_id : "", "cmd", cmd, "tty", e->tty, "stdin",
                     e->in, "stdout", e->out, "stderr", e->err);
}

json_t *sl_mon_session_request_json(const sl_stream_request *r)
{
    if (r->kind == SL_STREAM_EXEC)
        return exec_json(&r->u.exec);
    if (r->kind == SL_STREAM_ATTACH) {
        const sl_attach_request *a = &r->u.attach;
        return json_pack("{s:s, s:s, s:b, s:b, s:b, s:b}", "kind", "attach", "container_id",
                         a->container_id ? a->container_id : "", "tty", a->tty, "stdin", a->in,
                         "stdout", a->out, "stderr", a->err);
    }
    if (r->kind != SL_STREAM_PORTFORWARD)
        return NULL;
    json_t *ports = json_array();
    for (size_t i = 0; ports && i < r->u.pf.nports; i++)
        json_array_append_new(ports, json_integer(r->u.pf.ports[i]));
    return json_pack("{s:s, s:s, s:o}", "kind", "portforward", "pod_sandbox_id",
                     r->u.pf.pod_sandbox_id ? r->u.pf.pod_sandbox_id : "", "ports", ports);
}

static int parse_flags(const json_t *j, bool *tty, bool *in, bool *out, bool *err)
{
    return sl_mon_bool(j, "tty", false, tty) || sl_mon_bool(j, "stdin", false, in) ||
                   sl_mon_bool(j, "stdout", false, out) || sl_mon_bool(j, "stderr", false, err)
               ? -1
               : 0;
}

static int parse_exec(const json_t *j, sl_exec_request *e, const char **why)
{
    const json_t *cmd = json_object_get(j, "cmd");
    size_t n = json_array_size(cmd);
    if (!json_is_array(cmd) || n == 0 || n > SL_MON_SESSION_MAX_ARGS)
        return *why = "cmd must be an array of 1 to 4096 strings", -1;
    const char **argv = calloc(n, sizeof(char *));
    if (!argv)
        return *why = "out of memory", -1;
    e->cmd = argv;
    e->ncmd = n;
    for (size_t i = 0; i < n; i++)
        if (!(argv[i] = json_string_value(json_array_get(cmd, i))))
            return *why = "cmd must be an array of strings", -1;
    if (parse_flags(j, &e->tty, &e->in, &e->out, &e->err) < 0)
        return *why = "tty, stdin, stdout and stderr must be booleans", -1;
    return 0;
}

static int parse_pf(const json_t *j, sl_portforward_request *p, const char **why)
{
    const json_t *ports = json_object_get(j, "ports");
    size_t n = json_array_size(ports);
    if (!json_is_array(ports) || n > SL_MON_SESSION_MAX_PORTS)
        return *why = "ports must be an array of at most 128 ports", -1;
    uint16_t *v = calloc(n ? n : 1, sizeof(uint16_t));
    if (!v)
        return *why = "out of memory", -1;
    p->ports = v;
    p->nports = n;
    for (size_t i = 0; i < n; i++) {
        const json_t *x = json_array_get(ports, i);
        if (!json_is_integer(x) || json_integer_value(x) < 1 || json_integer_value(x) > 65535)
            return *why = "ports must be 1-65535", -1;
        v[i] = (uint16_t)json_integer_value(x);
    }
    return 0;
}

int sl_mon_session_request_parse(const json_t *j, sl_stream_request *out, const char **why)
{
    memset(out, 0, sizeof(*out));
    out->struct_size = SL_STRUCT_SIZE(sl_stream_request);
    const char *kind = sl_mon_str(j, "kind");
    for (int k = SL_STREAM_EXEC; kind && k <= SL_STREAM_PORTFORWARD; k++)
        if (!strcmp(kind, kinds[k]))
            out->kind = (sl_stream_kind)k;
    if (!out->kind)
        return *why = "request.kind must be exec, attach or portforward", -1;
    if (out->kind == SL_STREAM_PORTFORWARD) {
        out->u.pf.struct_size = SL_STRUCT_SIZE(sl_portforward_request);
        out->u.pf.pod_sandbox_id = sl_mon_str(j, "pod_sandbox_id");
        if (!out->u.pf.pod_sandbox_id)
            return *why = "request.pod_sandbox_id must be a string", -1;
        return parse_pf(j, &out->u.pf, why);
    }
    const char *id = sl_mon_str(j, "container_id");
    if (!id)
        return *why = "request.container_id must be a string", -1;
    if (out->kind == SL_STREAM_EXEC) {
        out->u.exec.struct_size = SL_STRUCT_SIZE(sl_exec_request);
        out->u.exec.container_id = id;
        return parse_exec(j, &out->u.exec, why);
    }
    sl_attach_request *a = &out->u.attach;
    a->struct_size = SL_STRUCT_SIZE(sl_attach_request);
    a->container_id = id;
    if (parse_flags(j, &a->tty, &a->in, &a->out, &a->err) < 0)
        return *why = "tty, stdin, stdout and stderr must be booleans", -1;
    return 0;
}

void sl_mon_session_request_fini(sl_stream_request *r)
{
    if (r->kind == SL_STREAM_EXEC)
        free((void *)r->u.exec.cmd);
    else if (r->kind == SL_STREAM_PORTFORWARD)
        free((void *)r->u.pf.ports);
    memset(r, 0, sizeof(*r));
}

/* The session limits of sluice/limits.h a hand-off carries, and
 * max_sessions (the monitor's server takes sluiced's limit). */
#define SESSION_LIMIT(field, key, flag, arg, def, min, max, scope, help)                           \
    if ((scope) == SL_LIMIT_SESSION || !strcmp(#field, "max_sessions"))                            \
    X(field, min, max)

/* JSON integers are signed: a larger idle timeout is as good as forever. */
static json_t *limit_json(uint64_t v)
{
    return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

json_t *sl_mon_session_limits_json(const sl_mon_session_limits *l)
{
    const sl_server_config *c = &l->stream;
    json_t *j = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:s}", "portforward_connect_timeout_ms",
        (json_int_t)l->pf_connect_timeout_ms, "attach_backlog", (json_int_t)l->attach_backlog,
        "exec_max_concurrent", (json_int_t)l->exec_max_concurrent, "exec_queue_max",
        (json_int_t)l->exec_queue_max, "exec_stdin_pipe_size", (json_int_t)l->exec_stdin_pipe_size,
        "exec_mode", l->exec_native ? "native" : "runc");
    bool ok = j != NULL;
#define X(field, min, max) ok = ok && !json_object_set_new(j, #field, limit_json(c->field));
    SL_SERVER_LIMITS(SESSION_LIMIT)
#undef X
    if (!ok) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* A u32 field: present and within [min, UINT32_MAX], or absent. */
static int u32(const json_t *j, const char *key, uint32_t min, uint32_t *v)
{
    int64_t x;
    if (sl_mon_int(j, key, min, UINT32_MAX, *v, &x) != SL_OK)
        return -1;
    *v = (uint32_t)x;
    return 0;
}

/* A limit of sluice/limits.h: present and within its range, or absent. */
static int limit(const json_t *j, const char *key, uint64_t min, uint64_t max, void *v, size_t size)
{
    int64_t x;
    uint64_t cur = size == 8 ? *(uint64_t *)v : *(uint32_t *)v;
    if (max > INT64_MAX)
        max = INT64_MAX;
    if (sl_mon_int(j, key, (int64_t)min, (int64_t)max, (int64_t)cur, &x) != SL_OK)
        return -1;
    if (size == 8)
        *(uint64_t *)v = (uint64_t)x;
    else
        *(uint32_t *)v = (uint32_t)x;
    return 0;
}

int sl_mon_session_limits_parse(const json_t *j, sl_mon_session_limits *l, const char **why)
{
    sl_server_config *c = &l->stream;
    sl_server_config_init(c);
    l->pf_connect_timeout_ms = SL_MON_PF_CONNECT_TIMEOUT_MS;
    l->attach_backlog = 0;
    l->exec_max_concurrent = SL_MON_EXEC_MAX_CONCURRENT;
    l->exec_queue_max = SL_MON_EXEC_QUEUE_MAX;
    l->exec_stdin_pipe_size = SL_MON_EXEC_STDIN_PIPE_SIZE;
    if (j && !json_is_object(j))
        return *why = "limits must be an object", -1;
    int bad = 0;
#define X(field, min, max) bad = bad || limit(j, #field, min, max, &c->field, sizeof(c->field));
    SL_SERVER_LIMITS(SESSION_LIMIT)
#undef X
    if (bad || u32(j, "portforward_connect_timeout_ms", 1, &l->pf_connect_timeout_ms) ||
        u32(j, "attach_backlog", 0, &l->attach_backlog) ||
        u32(j, "exec_max_concurrent", 1, &l->exec_max_concurrent) ||
        u32(j, "exec_queue_max", 0, &l->exec_queue_max) ||
        u32(j, "exec_stdin_pipe_size", SL_MON_EXEC_STDIN_PIPE_SIZE_MIN, &l->exec_stdin_pipe_size) ||
        l->exec_stdin_pipe_size > SL_MON_EXEC_STDIN_PIPE_SIZE_MAX)
        return *why = "limits: every field must be an integer within its range", -1;
    const char *mode = sl_mon_str(j, "exec_mode");
    if (mode && strcmp(mode, "native") && strcmp(mode, "runc"))
        return *why = "limits.exec_mode must be native or runc", -1;
    l->exec_native = mode && !strcmp(mode, "native");
    return 0;
}
