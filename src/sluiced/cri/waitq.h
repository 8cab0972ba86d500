/* Calls waiting for something the loop is still working on (a probe, an
 * image import): each waiter is called once, in arrival order, when the
 * queue is run. */
#ifndef SL_CRI_WAITQ_H
#define SL_CRI_WAITQ_H

#include <stddef.h>

#include "grpc/grpc_call.h"

typedef void (*sl_waitq_fn)(void *arg);

typedef struct sl_waiter sl_waiter;

typedef struct sl_waitq {
    sl_waiter *head, *tail;
    size_t n;
} sl_waitq;

/* Adds fn(arg). Returns 0, or -1 on ENOMEM (fn will not be called). */
int sl_waitq_add(sl_waitq *q, sl_waitq_fn fn, void *arg);

/* Calls every waiter queued now (waiters added meanwhile wait for the
 * next run) and empties the queue of them. */
void sl_waitq_run(sl_waitq *q);

/* handler(call, arg) packed as a queue's fn(arg), for any queue that
 * calls it once: sl_call_retry_new gives the arg (NULL on ENOMEM; free()
 * it if the queue refuses it), sl_call_retry_run calls and frees it. */
void *sl_call_retry_new(sl_grpc_handler handler, sl_grpc_call *call, void *arg);
void sl_call_retry_run(void *retry);

/* Runs handler(call, arg) again once q is run: a handler that must wait
 * starts over (it is called on the loop, as by the gRPC server). On ENOMEM
 * the call is answered RESOURCE_EXHAUSTED. */
void sl_waitq_retry(sl_waitq *q, sl_grpc_handler handler, sl_grpc_call *call, void *arg);

#endif
