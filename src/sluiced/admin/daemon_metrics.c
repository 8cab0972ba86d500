/* sluiced's /metrics page (see daemon_metrics.h). */
#include "admin/daemon_metrics.h"

#include <stdio.h>
#include <stdlib.h>

#include "admin/prom.h"
#include "admin/session_metrics.h"
#include "cri/sluice_version.h"

static void gauge(FILE *f, const char *name, const char *help, uint64_t v)
{
    sl_prom_family(f, name, "gauge", help);
    sl_prom_sample(f, name, NULL, v);
}

static void counter(FILE *f, const char *name, const char *help, uint64_t v)
{
    sl_prom_family(f, name, "counter", help);
    sl_prom_sample(f, name, NULL, v);
}

static void write_pods(FILE *f, const sl_rt *rt)
{
    uint64_t ready = 0, notready = 0, monitors = 0;
    for (const sl_pod *p = rt->model.pods; p; p = p->next) {
        if (p->ready)
            ready++;
        else
            notready++;
        if (p->mon && sl_monc_alive(p->mon))
            monitors++;
    }
    sl_prom_family(f, "sluice_pods", "gauge", "Pod sandboxes, by state.");
    const char *lr[] = {"state", "ready", NULL}, *ln[] = {"state", "notready", NULL};
    sl_prom_sample(f, "sluice_pods", lr, ready);
    sl_prom_sample(f, "sluice_pods", ln, notready);
    gauge(f, "sluice_monitors_alive",
          "Pod monitors (sluice-mon) sluiced holds a working control connection to; one per pod "
          "is expected.",
          monitors);
}

static void write_containers(FILE *f, const sl_rt *rt)
{
    static const char *const names[] = {"created", "running", "exited", "unknown"};
    uint64_t n[4] = {0};
    for (const sl_ctr *c = rt->model.ctrs; c; c = c->next) {
        sl_ctr_status st;
        sl_model_ctr_status(&rt->model, c, &st);
        int s = st.state >= 0 && st.state <= 3 ? st.state : 3; /* the CRI enum's order */
        n[s]++;
    }
    sl_prom_family(f, "sluice_containers", "gauge", "Containers, by state.");
    for (int i = 0; i < 4; i++) {
        const char *labels[] = {"state", names[i], NULL};
        sl_prom_sample(f, "sluice_containers", labels, n[i]);
    }
}

/* Whole CRI log records the monitors dropped (a full log disk), as they
 * reported them to this sluiced: the totals, and per container. */
static void write_log_drops(FILE *f, const sl_rt *rt)
{
    counter(f, "sluice_log_dropped_bytes_total",
            "CRI log bytes the pod monitors dropped because the log could not be written (a "
            "full disk), since sluiced started.",
            rt->log_dropped_bytes);
    counter(f, "sluice_log_dropped_records_total", "Those dropped CRI log records.",
            rt->log_dropped_records);
    sl_prom_family(f, "sluice_container_log_dropped_bytes_total", "counter",
                   "CRI log bytes dropped since the container started, as its monitor last "
                   "reported, for each container that dropped any.");
    for (const sl_ctr *c = rt->model.ctrs; c; c = c->next) {
        if (c->log_dropped_seen[0] <= 0)
            continue;
        const char *labels[] = {"pod", c->pod_id, "container", c->id, NULL};
        sl_prom_sample(f, "sluice_container_log_dropped_bytes_total", labels,
                       (uint64_t)c->log_dropped_seen[0]);
    }
}

static void write_images(FILE *f, const sl_rt *rt)
{
    uint64_t done = 0, failed = 0;
    if (rt->images)
        sl_image_store_import_counts(rt->images, &done, &failed);
    counter(f, "sluice_image_imports_total",
            "Image tarballs imported (at start, by PullImage from the import directory, by "
            "sluicectl image import).",
            done);
    counter(f, "sluice_image_import_failures_total", "Image tarball imports that failed.", failed);
}

static void write_grpc(FILE *f, const sl_grpc_server *grpc, const sl_rt *rt)
{
    sl_grpc_server_stats st = {0};
    if (grpc)
        sl_grpc_server_get_stats(grpc, &st);
    gauge(f, "sluice_grpc_connections", "Open CRI (gRPC) connections.", st.connections);
    counter(f, "sluice_grpc_connections_evicted_total",
            "Idle CRI connections closed to make room at max-grpc-connections.", st.evicted);
    counter(f, "sluice_grpc_connections_refused_total",
            "CRI connections refused at max-grpc-connections (every open one busy).", st.refused);
    counter(f, "sluice_grpc_connections_idle_closed_total",
            "CRI connections closed by grpc-idle-timeout-ms.", st.idle_closed);
    gauge(f, "sluice_event_subscribers", "Open GetContainerEvents streams.", rt->events.nsubs);
}

int sl_daemon_metrics(const sl_calls *calls, const sl_cri *cri, const sl_grpc_server *grpc,
                      char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    FILE *f = open_memstream(text, len);
    if (!f)
        return -1;
    sl_prom_family(f, "sluice_build_info", "gauge", "The running sluiced's version.");
    const char *labels[] = {"version", SLUICE_VERSION, NULL};
    sl_prom_sample(f, "sluice_build_info", labels, 1);
    sl_calls_write_metrics(calls, f);
    write_pods(f, &cri->rt);
    write_containers(f, &cri->rt);
    write_log_drops(f, &cri->rt);
    write_images(f, &cri->rt);
    write_grpc(f, grpc, &cri->rt);
    /* Sessions are served by the pod monitors, which report them. */
    sl_session_metrics_write(f, &cri->rt, cri->stream);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        free(*text);
        *text = NULL;
        return -1;
    }
    return 0;
}
