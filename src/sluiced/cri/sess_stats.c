#include "cri/sess_stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sl_log.h"

const char *const sl_sess_operations[SL_SESS_OPS] = {"exec", "attach", "portforward"};
const char *const sl_sess_transports[SL_SESS_TRANSPORTS] = {"spdy", "websocket",
                                                            "websocket-tunnel"};
const char *const sl_sess_reasons[SL_SESS_REASONS] = {"exit",  "client_closed", "idle_timeout",
                                                      "error", "shutdown",      "other"};

static int find(const char *const *names, int n, const char *s)
{
    for (int i = 0; s && i < n; i++)
        if (!strcmp(names[i], s))
            return i;
    return -1;
}

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static uint64_t u64(const json_t *o, const char *key)
{
    json_int_t v = json_integer_value(json_object_get(o, key));
    return v > 0 ? (uint64_t)v : 0;
}

/* Operation and transport indexes of a record; false when either is unknown. */
static bool op_tr(const json_t *o, int *op, int *tr)
{
    *op = find(sl_sess_operations, SL_SESS_OPS, str(o, "operation"));
    *tr = find(sl_sess_transports, SL_SESS_TRANSPORTS, str(o, "transport"));
    return *op >= 0 && *tr >= 0;
}

static bool is_type(const json_t *ev, const char *type)
{
    const char *t = str(ev, "type");
    return t && !strcmp(t, type);
}

void sl_sess_live_event(sl_sess_live *l, const json_t *ev)
{
    int op, tr;
    if (!ev || !op_tr(ev, &op, &tr))
        return;
    if (is_type(ev, "session_started"))
        l->n[op][tr]++;
    else if (is_type(ev, "session_ended") && l->n[op][tr] > 0)
        l->n[op][tr]--;
}

void sl_sess_live_hello(sl_sess_live *l, const json_t *reply)
{
    memset(l, 0, sizeof(*l));
    const json_t *list = json_object_get(reply, "live_sessions");
    size_t i;
    const json_t *e;
    int op, tr;
    json_array_foreach(list, i, e)
    {
        if (op_tr(e, &op, &tr))
            l->n[op][tr] = (uint32_t)(u64(e, "count") > UINT32_MAX ? UINT32_MAX : u64(e, "count"));
    }
}

static void count_end(sl_sess_stats *s, int op, const char *reason, uint64_t out, uint64_t in)
{
    int r = find(sl_sess_reasons, SL_SESS_REASONS, reason);
    s->ends[op][r >= 0 ? r : SL_SESS_REASONS - 1]++;
    s->bytes_to_client += out;
    s->bytes_from_client += in;
}

void sl_sess_stats_event(sl_sess_stats *s, const json_t *ev)
{
    int op, tr;
    if (!ev || !op_tr(ev, &op, &tr))
        return;
    if (is_type(ev, "session_started"))
        s->started[op][tr]++;
    else if (is_type(ev, "session_ended"))
        count_end(s, op, str(ev, "reason"), u64(ev, "bytes_to_client"),
                  u64(ev, "bytes_from_client"));
}

static void log_local(const sl_session_info *i, const char *op)
{
    char out[24], in[24], ms[24];
    snprintf(out, sizeof(out), "%" PRIu64, i->bytes_to_client);
    snprintf(in, sizeof(in), "%" PRIu64, i->bytes_from_client);
    snprintf(ms, sizeof(ms), "%" PRIu64, i->duration_ms);
    const char *key = i->kind == SL_STREAM_PORTFORWARD ? "pod_sandbox_id" : "container_id";
    sl_log(SL_LOG_DEBUG, i->end_reason ? "session ended" : "session started", "operation", op,
           "transport", i->transport, "protocol", i->protocol, key, i->target, "reason",
           i->end_reason, "bytes_to_client", i->end_reason ? out : NULL, "bytes_from_client",
           i->end_reason ? in : NULL, "duration_ms", i->end_reason ? ms : NULL, "served_by",
           "sluiced", NULL);
}

void sl_sess_stats_observe(void *arg, const sl_session_info *info)
{
    sl_sess_stats *s = arg;
    int op = (int)info->kind - 1;
    int tr = find(sl_sess_transports, SL_SESS_TRANSPORTS, info->transport);
    if (op < 0 || op >= SL_SESS_OPS || tr < 0)
        return;
    log_local(info, sl_sess_operations[op]);
    uint32_t *live = &s->local.n[op][tr];
    if (!info->end_reason) {
        s->started[op][tr]++;
        (*live)++;
        return;
    }
    if (*live > 0)
        (*live)--;
    count_end(s, op, info->end_reason, info->bytes_to_client, info->bytes_from_client);
}
