/* GetContainerEvents: subscribers and the events broadcast to them. */
#include "cri/events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cri/cri_util.h"
#include "sl_log.h"
#include "sluice/error.h"

struct sl_events_sub {
    sl_events_sub *next;
    sl_events *ev;
    sl_grpc_call *call;
};

void sl_events_init(sl_events *ev, uint32_t max_subs)
{
    memset(ev, 0, sizeof(*ev));
    ev->max_subs = max_subs;
}

size_t sl_events_subscribers(const sl_events *ev)
{
    return ev->nsubs;
}

static void unlink_sub(sl_events_sub *sub)
{
    sl_events *ev = sub->ev;
    for (sl_events_sub **pp = &ev->subs; *pp; pp = &(*pp)->next) {
        if (*pp == sub) {
            *pp = sub->next;
            ev->nsubs--;
            return;
        }
    }
}

/* The client went away (or the deadline passed): end our side. */
static void sub_cancelled(sl_grpc_call *call, void *arg)
{
    sl_events_sub *sub = arg;
    unlink_sub(sub);
    free(sub);
    sl_grpc_call_finish(call); /* frees the call */
}

void sl_events_fini(sl_events *ev)
{
    while (ev->subs) {
        sl_events_sub *sub = ev->subs;
        unlink_sub(sub);
        sl_grpc_call_fail(sub->call, SL_GRPC_UNAVAILABLE, "sluiced is shutting down");
        free(sub);
    }
}

void sl_cri_container_events(sl_grpc_call *call, void *arg)
{
    sl_events *ev = &cri_rt(arg)->events;
    if (ev->nsubs >= ev->max_subs) {
        sl_grpc_call_fail(call, SL_GRPC_RESOURCE_EXHAUSTED,
                          "%zu GetContainerEvents streams are open, the limit "
                          "(max-event-subscribers %u)",
                          ev->nsubs, ev->max_subs);
        return;
    }
    sl_events_sub *sub = calloc(1, sizeof(*sub));
    if (!sub) {
        sl_grpc_call_fail(call, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    sub->ev = ev;
    sub->call = call;
    sub->next = ev->subs;
    ev->subs = sub;
    ev->nsubs++;
    sl_grpc_call_on_cancel(call, sub_cancelled, sub);
    /* The client then knows it is subscribed, before any event. */
    sl_grpc_call_send_headers(call);
}

/* Sends msg to every subscriber; those that fell behind are ended (the
 * server already told them why) and forgotten. */
static void broadcast(sl_events *ev, const ProtobufCMessage *msg)
{
    for (sl_events_sub *sub = ev->subs, *next; sub; sub = next) {
        next = sub->next;
        int rc = sl_grpc_call_send(sub->call, msg);
        if (rc == SL_ERR_FULL || rc == SL_ERR_CLOSED) {
            unlink_sub(sub);
            sl_grpc_call_finish(sub->call);
            free(sub);
        } else if (rc < 0) {
            sl_log(SL_LOG_WARN, "container event not sent to a subscriber", "error",
                   sl_strerror(rc), NULL);
        }
    }
}

/* The pod's containers' statuses: *out (malloc'd, caller frees) and its
 * pointer array *ptrs; returns the count (0 on allocation failure). */
static size_t pod_ctr_statuses(const sl_rt *rt, const char *pod_id, sl_ctr_status_msg **out,
                               Runtime__V1__ContainerStatus ***ptrs)
{
    size_t n = 0, k = 0;
    for (const sl_ctr *c = rt->model.ctrs; c; c = c->next)
        n += !strcmp(c->pod_id, pod_id);
    *out = n ? calloc(n, sizeof(**out)) : NULL;
    *ptrs = n ? calloc(n, sizeof(**ptrs)) : NULL;
    if (!*out || !*ptrs) {
        free(*out);
        free(*ptrs);
        *out = NULL;
        *ptrs = NULL;
        return 0;
    }
    for (const sl_ctr *c = rt->model.ctrs; c && k < n; c = c->next) {
        if (strcmp(c->pod_id, pod_id))
            continue;
        sl_cri_ctr_status_fill(rt, c, &(*out)[k]);
        (*ptrs)[k] = &(*out)[k].st;
        k++;
    }
    return k;
}

static void emit(sl_rt *rt, int type, const char *id, const sl_pod *p)
{
    if (!rt->events.subs)
        return; /* nobody listens: build nothing */
    sl_pod_status_msg pod;
    sl_cri_pod_status_fill(p, &pod);
    sl_ctr_status_msg *ctrs;
    Runtime__V1__ContainerEventResponse msg = RUNTIME__V1__CONTAINER_EVENT_RESPONSE__INIT;
    msg.container_id = (char *)id;
    msg.container_event_type = type;
    msg.created_at = sl_now_ns();
    msg.pod_sandbox_status = &pod.st;
    msg.n_containers_statuses = pod_ctr_statuses(rt, p->id, &ctrs, &msg.containers_statuses);
    broadcast(&rt->events, &msg.base);
    free(ctrs);
    free(msg.containers_statuses);
}

void sl_events_ctr(sl_rt *rt, int type, const char *ctr_id, const char *pod_id)
{
    const sl_pod *p = sl_model_pod(&rt->model, pod_id);
    if (p)
        emit(rt, type, ctr_id, p);
}

void sl_events_pod(sl_rt *rt, int type, const sl_pod *p)
{
    emit(rt, type, p->id, p);
}

void sl_events_mon(sl_rt *rt, const sl_pod *p, const json_t *event)
{
    const char *type = json_string_value(json_object_get(event, "type"));
    const char *id = json_string_value(json_object_get(event, "container_id"));
    if (!type || strcmp(type, "exited") || !id)
        return;
    const sl_ctr *c = sl_model_ctr(&rt->model, id);
    if (c && !strcmp(c->pod_id, p->id))
        emit(rt, RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_STOPPED_EVENT, c->id, p);
}
