#include "cri/waitq.h"

#include <stdlib.h>

struct sl_waiter {
    sl_waiter *next;
    sl_waitq_fn fn;
    void *arg;
};

int sl_waitq_add(sl_waitq *q, sl_waitq_fn fn, void *arg)
{
    sl_waiter *w = calloc(1, sizeof(*w));
    if (!w)
        return -1;
    w->fn = fn;
    w->arg = arg;
    if (q->tail)
        q->tail->next = w;
    else
        q->head = w;
    q->tail = w;
    q->n++;
    return 0;
}

void sl_waitq_run(sl_waitq *q)
{
    sl_waiter *w = q->head;
    q->head = q->tail = NULL;
    q->n = 0;
    while (w) {
        sl_waiter *next = w->next;
        w->fn(w->arg);
        free(w);
        w = next;
    }
}

typedef struct retry {
    sl_grpc_handler handler;
    sl_grpc_call *call;
    void *arg;
} retry;

void *sl_call_retry_new(sl_grpc_handler handler, sl_grpc_call *call, void *arg)
{
    retry *r = malloc(sizeof(*r));
    if (r)
        *r = (retry){handler, call, arg};
    return r;
}

void sl_call_retry_run(void *arg)
{
    retry *r = arg;
    r->handler(r->call, r->arg);
    free(r);
}

void sl_waitq_retry(sl_waitq *q, sl_grpc_handler handler, sl_grpc_call *call, void *arg)
{
    void *r = sl_call_retry_new(handler, call, arg);
    if (r && sl_waitq_add(q, sl_call_retry_run, r) == 0)
        return;
    free(r);
    sl_grpc_call_fail(call, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
}
