/* What the sessions served here were: each start and end is logged (debug,
 * with its numbers) and sent to sluiced as an event (session_started,
 * session_ended), and the live ones are counted by operation and transport
 * for `hello`, so that a restarted sluiced knows what is active. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mon.h"
#include "mon_sess_report.h"
#include "sl_log.h"

static const char *const operations[MON_SESS_OPS] = {"exec", "attach", "portforward"};
static const char *const transports[MON_SESS_TRANSPORTS] = {"spdy", "websocket",
                                                            "websocket-tunnel"};

static int transport_index(const char *t)
{
    for (int i = 0; i < MON_SESS_TRANSPORTS; i++)
        if (t && !strcmp(t, transports[i]))
            return i;
    return -1;
}

static void count(mon_sess_live *live, const sl_session_info *info, int delta)
{
    int op = (int)info->kind - 1, tr = transport_index(info->transport);
    if (op < 0 || op >= MON_SESS_OPS || tr < 0)
        return;
    uint32_t *n = &live->n[op][tr];
    if (delta > 0)
        (*n)++;
    else if (*n > 0)
        (*n)--;
}

static const char *target_key(sl_stream_kind kind)
{
    return kind == SL_STREAM_PORTFORWARD ? "pod_sandbox_id" : "container_id";
}

static void log_session(const mon *m, const sl_session_info *i)
{
    const char *op = operations[i->kind - 1];
    if (!i->end_reason) {
        sl_log(SL_LOG_DEBUG, "session started", "pod", m->pod_id, "operation", op, "transport",
               i->transport, "protocol", i->protocol, target_key(i->kind), i->target, NULL);
        return;
    }
    char out[24], in[24], ms[24];
    snprintf(out, sizeof(out), "%" PRIu64, i->bytes_to_client);
    snprintf(in, sizeof(in), "%" PRIu64, i->bytes_from_client);
    snprintf(ms, sizeof(ms), "%" PRIu64, i->duration_ms);
    sl_log(SL_LOG_DEBUG, "session ended", "pod", m->pod_id, "operation", op, "transport",
           i->transport, "protocol", i->protocol, target_key(i->kind), i->target, "reason",
           i->end_reason, "bytes_to_client", out, "bytes_from_client", in, "duration_ms", ms, NULL);
}

static json_t *event_json(const sl_session_info *i)
{
    json_t *ev = json_pack("{s:s, s:s, s:s, s:s, s:s}", "type",
                           i->end_reason ? "session_ended" : "session_started", "operation",
                           operations[i->kind - 1], "transport", i->transport, "protocol",
                           i->protocol, target_key(i->kind), i->target);
    if (ev && i->end_reason) {
        json_object_set_new(ev, "reason", json_string(i->end_reason));
        json_object_set_new(ev, "bytes_to_client", json_integer((json_int_t)i->bytes_to_client));
        json_object_set_new(ev, "bytes_from_client",
                            json_integer((json_int_t)i->bytes_from_client));
        json_object_set_new(ev, "duration_ms", json_integer((json_int_t)i->duration_ms));
    }
    return ev;
}

void mon_sess_report(mon *m, mon_sess_live *live, const sl_session_info *info)
{
    if (info->kind < SL_STREAM_EXEC || info->kind > SL_STREAM_PORTFORWARD)
        return;
    count(live, info, info->end_reason ? -1 : 1);
    log_session(m, info);
    json_t *ev = event_json(info);
    if (ev)
        mon_event(m, ev);
}

json_t *mon_sess_live_json(const mon_sess_live *live)
{
    json_t *list = json_array();
    for (int op = 0; list && op < MON_SESS_OPS; op++)
        for (int tr = 0; tr < MON_SESS_TRANSPORTS; tr++)
            if (live->n[op][tr])
                json_array_append_new(list, json_pack("{s:s, s:s, s:i}", "operation",
                                                      operations[op], "transport", transports[tr],
                                                      "count", (int)live->n[op][tr]));
    return list;
}
