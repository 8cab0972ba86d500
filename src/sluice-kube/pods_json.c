/* Pod, PodList and Table JSON, shaped as the apiserver sends them. */
#include <stdio.h>
#include <string.h>

#include "grpc/api.pb-c.h"
#include "kube.h"
#include "pods.h"

static json_t *time_str(int64_t ns)
{
    char buf[32];
    sk_time_rfc3339(ns, buf);
    return json_string(buf);
}

static json_t *meta_json(const sk_pod *p)
{
    json_t *m =
        json_pack("{s:s, s:s, s:s, s:s, s:o}", "name", p->name, "namespace", p->ns, "uid", p->uid,
                  "resourceVersion", "1", "creationTimestamp", time_str(p->created));
    if (m && json_object_size(p->labels))
        json_object_set(m, "labels", p->labels);
    if (m && json_object_size(p->annotations))
        json_object_set(m, "annotations", p->annotations);
    return m;
}

static bool is_running(const sk_ctr *c)
{
    return c->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
}

static json_t *state_json(const sk_ctr *c, const char *cid)
{
    if (is_running(c))
        return json_pack("{s:{s:o}}", "running", "startedAt", time_str(c->started));
    if (c->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED) {
        json_t *t = json_pack("{s:i, s:o, s:o, s:s}", "exitCode", c->exit_code, "startedAt",
                              time_str(c->started), "finishedAt", time_str(c->finished),
                              "containerID", cid);
        if (t && *c->reason)
            json_object_set_new(t, "reason", json_string(c->reason));
        if (t && *c->message)
            json_object_set_new(t, "message", json_string(c->message));
        return json_pack("{s:o}", "terminated", t);
    }
    const char *why = c->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED
                          ? "ContainerCreating"
                          : "Unknown";
    return json_pack("{s:{s:s}}", "waiting", "reason", why);
}

/* lastState: the previous attempt's termination, as the kubelet reports
 * it after a restart; {} when there is none (or it did not end). */
static json_t *last_state_json(const sk_ctr *c, const char *runtime)
{
    const sk_ctr *p = c->prev;
    if (!p || p->state != RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED)
        return json_object();
    char cid[256];
    snprintf(cid, sizeof cid, "%s://%s", runtime, p->id);
    return state_json(p, cid);
}

static json_t *ctr_status_json(const sk_ctr *c, const char *runtime)
{
    char cid[256];
    snprintf(cid, sizeof cid, "%s://%s", runtime, c->id);
    const char *image_id = *c->image_ref ? c->image_ref : c->image_id;
    return json_pack("{s:s, s:s, s:s, s:s, s:b, s:b, s:i, s:o, s:o}", "name", c->name, "image",
                     c->image, "imageID", image_id, "containerID", cid, "ready", is_running(c),
                     "started", is_running(c), "restartCount", (int)c->attempt, "state",
                     state_json(c, cid), "lastState", last_state_json(c, runtime));
}

static json_t *spec_json(const sk_pod *p, const char *node)
{
    json_t *ctrs = json_array();
    for (size_t i = 0; ctrs && i < p->nctrs; i++) {
        const sk_ctr *c = &p->ctrs[i];
        json_t *o =
            json_pack("{s:s, s:s, s:s, s:s}", "name", c->name, "image", c->image, "imagePullPolicy",
                      "IfNotPresent", "terminationMessagePolicy", "File");
        if (o && c->tty)
            json_object_set_new(o, "tty", json_true());
        if (o && c->stdin_open)
            json_object_set_new(o, "stdin", json_true());
        json_array_append_new(ctrs, o);
    }
    return json_pack("{s:o, s:s, s:s}", "containers", ctrs, "nodeName", node, "restartPolicy",
                     "Never");
}

static json_t *status_json(const sk_pod *p, const char *runtime)
{
    json_t *cs = json_array();
    bool all_ready = p->nctrs > 0;
    for (size_t i = 0; cs && i < p->nctrs; i++) {
        json_array_append_new(cs, ctr_status_json(&p->ctrs[i], runtime));
        all_ready &= is_running(&p->ctrs[i]);
    }
    const char *ready = p->ready && all_ready ? "True" : "False";
    json_t *st = json_pack("{s:s, s:o, s:o, s:[{s:s, s:s}]}", "phase", sk_pod_phase(p), "startTime",
                           time_str(p->created), "containerStatuses", cs, "conditions", "type",
                           "Ready", "status", ready);
    if (st && *p->ip) {
        json_object_set_new(st, "podIP", json_string(p->ip));
        json_object_set_new(st, "podIPs", json_pack("[{s:s}]", "ip", p->ip));
    }
    return st;
}

json_t *sk_pod_json(const sk_pod *p, const char *runtime, const char *node)
{
    return json_pack("{s:s, s:s, s:o, s:o, s:o}", "kind", "Pod", "apiVersion", "v1", "metadata",
                     meta_json(p), "spec", spec_json(p, node), "status", status_json(p, runtime));
}

json_t *sk_pod_list_json(const sk_pods *ps, const char *runtime, const char *node)
{
    json_t *items = json_array();
    for (size_t i = 0; items && i < ps->n; i++)
        json_array_append_new(items, sk_pod_json(&ps->items[i], runtime, node));
    return json_pack("{s:s, s:s, s:{s:s}, s:o}", "kind", "PodList", "apiVersion", "v1", "metadata",
                     "resourceVersion", "1", "items", items);
}

/* ---- Table (kubectl get) ---- */

static json_t *column(const char *name, const char *format, const char *desc, int priority)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:i}", "name", name, "type", "string", "format", format,
                     "description", desc, "priority", priority);
}

static json_t *columns(void)
{
    return json_pack(
        "[o, o, o, o, o, o, o]",
        column("Name", "name", "Name must be unique within a namespace.", 0),
        column("Ready", "", "The aggregate readiness state of this pod for accepting traffic.", 0),
        column("Status", "", "The aggregate status of the containers in this pod.", 0),
        column("Restarts", "",
               "The number of times the containers in this pod have been restarted and when the "
               "last container in this pod has restarted.",
               0),
        column("Age", "",
               "CreationTimestamp is a timestamp representing the server time when "
               "this object was created.",
               0),
        column("IP", "", "IP address allocated to the pod.", 1),
        column("Node", "", "NodeName is the node the pod runs on.", 1));
}

/* The STATUS cell as the apiserver's pod printer makes it. */
static void status_cell(const sk_pod *p, char *out, size_t len)
{
    snprintf(out, len, "%s", sk_pod_phase(p));
    bool running = false;
    for (size_t k = p->nctrs; k-- > 0;) {
        const sk_ctr *c = &p->ctrs[k];
        if (c->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED)
            snprintf(out, len, "ContainerCreating");
        else if (c->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED && *c->reason)
            snprintf(out, len, "%s", c->reason);
        else if (c->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED)
            snprintf(out, len, "ExitCode:%d", c->exit_code);
        else if (is_running(c))
            running = true;
    }
    if (running && strcmp(out, "Completed") == 0)
        snprintf(out, len, "Running");
}

static json_t *row(const sk_pod *p, const char *node)
{
    unsigned ready = 0, restarts = 0;
    int64_t last_end = 0; /* the latest lastState.terminated.finishedAt */
    for (size_t i = 0; i < p->nctrs; i++) {
        const sk_ctr *prev = p->ctrs[i].prev;
        ready += is_running(&p->ctrs[i]);
        restarts += p->ctrs[i].attempt;
        if (prev && prev->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED &&
            prev->finished > last_end)
            last_end = prev->finished;
    }
    char rd[32], rs[64], st[64], age[32], ago[32];
    snprintf(rd, sizeof rd, "%u/%zu", ready, p->nctrs);
    snprintf(rs, sizeof rs, "%u", restarts);
    if (restarts && last_end) { /* the apiserver's printer: "1 (5m ago)" */
        sk_age(last_end, ago);
        snprintf(rs, sizeof rs, "%u (%s ago)", restarts, ago);
    }
    status_cell(p, st, sizeof st);
    sk_age(p->created, age);
    json_t *obj = json_pack("{s:s, s:s, s:o}", "kind", "PartialObjectMetadata", "apiVersion",
                            "meta.k8s.io/v1", "metadata", meta_json(p));
    return json_pack("{s:[s, s, s, s, s, s, s], s:o}", "cells", p->name, rd, st, rs, age,
                     *p->ip ? p->ip : "<none>", node, "object", obj);
}

json_t *sk_pod_table_json(const sk_pods *ps, const char *node)
{
    json_t *rows = json_array();
    for (size_t i = 0; rows && i < ps->n; i++)
        json_array_append_new(rows, row(&ps->items[i], node));
    return json_pack("{s:s, s:s, s:{s:s}, s:o, s:o}", "kind", "Table", "apiVersion",
                     "meta.k8s.io/v1", "metadata", "resourceVersion", "1", "columnDefinitions",
                     columns(), "rows", rows);
}
