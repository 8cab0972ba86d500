#include "admin/session_metrics.h"

#include "admin/prom.h"
#include "cri/mon_client.h"

static void add_live(sl_sess_live *sum, const sl_sess_live *l)
{
    for (int op = 0; op < SL_SESS_OPS; op++)
        for (int tr = 0; tr < SL_SESS_TRANSPORTS; tr++)
            sum->n[op][tr] += l->n[op][tr];
}

/* One sample per operation and transport. */
static void by_op_tr(FILE *f, const char *name, const char *type, const char *help,
                     uint64_t (*value)(const void *src, int op, int tr), const void *src)
{
    sl_prom_family(f, name, type, help);
    for (int op = 0; op < SL_SESS_OPS; op++) {
        for (int tr = 0; tr < SL_SESS_TRANSPORTS; tr++) {
            const char *labels[] = {"operation", sl_sess_operations[op], "transport",
                                    sl_sess_transports[tr], NULL};
            sl_prom_sample(f, name, labels, value(src, op, tr));
        }
    }
}

static uint64_t live_value(const void *src, int op, int tr)
{
    return ((const sl_sess_live *)src)->n[op][tr];
}

static uint64_t started_value(const void *src, int op, int tr)
{
    return ((const sl_sess_stats *)src)->started[op][tr];
}

static void write_active(FILE *f, const sl_rt *rt)
{
    sl_sess_live sum = rt->sess_stats.local;
    for (const sl_pod *p = rt->model.pods; p; p = p->next) {
        const sl_sess_live *l = sl_monc_live_sessions(p->mon);
        if (l)
            add_live(&sum, l);
    }
    by_op_tr(f, "sluice_stream_sessions_active", "gauge",
             "Streaming sessions live now (served by the pod monitors sluiced is connected to, "
             "or by sluiced), by operation and transport.",
             live_value, &sum);
}

static void write_ends(FILE *f, const sl_sess_stats *s)
{
    const char *name = "sluice_stream_session_ends_total";
    sl_prom_family(
        f, name, "counter",
        "Streaming sessions ended, by operation and reason (exit: the session ended "
        "its own way; client_closed; idle_timeout; error; shutdown: its server closed).");
    for (int op = 0; op < SL_SESS_OPS; op++) {
        for (int r = 0; r < SL_SESS_REASONS; r++) {
            const char *labels[] = {"operation", sl_sess_operations[op], "reason",
                                    sl_sess_reasons[r], NULL};
            sl_prom_sample(f, name, labels, s->ends[op][r]);
        }
    }
}

static void write_bytes(FILE *f, const sl_sess_stats *s)
{
    const char *name = "sluice_stream_bytes_total";
    sl_prom_family(f, name, "counter",
                   "Bytes of ended streaming sessions on the wire after the request head, by "
                   "direction.");
    const char *to[] = {"direction", "to_client", NULL},
               *from[] = {"direction", "from_client", NULL};
    sl_prom_sample(f, name, to, s->bytes_to_client);
    sl_prom_sample(f, name, from, s->bytes_from_client);
}

static void write_refused(FILE *f, const sl_sess_stats *s, const sl_server *stream)
{
    const char *name = "sluice_stream_connections_refused_total";
    sl_prom_family(f, name, "counter",
                   "Streaming connections answered 503 or 502, by reason (max_stream_connections: "
                   "sluiced's listener was full; monitor_refused: the pod monitor refused the "
                   "session, e.g. max-sessions live; monitor_gone: it went away).");
    const char *full[] = {"reason", "max_stream_connections", NULL};
    const char *mon[] = {"reason", "monitor_refused", NULL};
    const char *gone[] = {"reason", "monitor_gone", NULL};
    sl_prom_sample(f, name, full, stream ? sl_server_refused_count(stream) : 0);
    sl_prom_sample(f, name, mon, s->refused_monitor);
    sl_prom_sample(f, name, gone, s->refused_gone);
}

void sl_session_metrics_write(FILE *f, const sl_rt *rt, const sl_server *stream)
{
    const sl_sess_stats *s = &rt->sess_stats;
    write_active(f, rt);
    by_op_tr(f, "sluice_stream_sessions_total", "counter",
             "Streaming sessions started, by operation and transport.", started_value, s);
    write_ends(f, s);
    write_bytes(f, s);
    sl_prom_family(f, "sluice_stream_tokens_pending", "gauge",
                   "Streaming URLs issued (Exec, Attach, PortForward) neither used nor expired.");
    sl_prom_sample(f, "sluice_stream_tokens_pending", NULL,
                   stream ? sl_server_pending_tokens(stream) : 0);
    write_refused(f, s, stream);
}
