#include "portforward/pfconn.h"

#include <stdlib.h>
#include <unistd.h>

/* Set while the runtime's connect call runs, to tell a synchronous answer
 * apart (the handle is freed before sl_pfconn_request returns). */
typedef struct pending {
    sl_pfconn c;
    int in_call;
    int answered;
} pending;

sl_pfconn *sl_pfconn_request(const sl_runtime *rt, const char *sandbox, uint16_t port,
                             sl_pfconn_result_fn fn, void *owner)
{
    pending *p = calloc(1, sizeof(*p));
    if (!p) {
        fn(owner, -1, "out of memory");
        return NULL;
    }
    p->c.rt = rt;
    p->c.owner = owner;
    p->c.on_result = fn;
    p->in_call = 1;
    rt->ops->portforward_connect(rt->data, &p->c, sandbox, port);
    p->in_call = 0;
    if (p->answered) {
        free(p);
        return NULL;
    }
    return &p->c;
}

static void answer(sl_pfconn *c, int fd, const char *err)
{
    pending *p = (pending *)c;
    if (p->answered)
        return;
    p->answered = 1;
    if (c->owner)
        c->on_result(c->owner, fd, err);
    else if (fd >= 0)
        close(fd);
    if (!p->in_call)
        free(p);
}

void sl_pfconn_connected(sl_pfconn *c, int fd)
{
    answer(c, fd, NULL);
}

void sl_pfconn_failed(sl_pfconn *c, const char *message)
{
    answer(c, -1, message ? message : "connection failed");
}

void sl_pfconn_abandon(sl_pfconn *c)
{
    c->owner = NULL;
    if (c->rt->ops->portforward_cancel)
        c->rt->ops->portforward_cancel(c->rt->data, c);
}

void sl_pfconn_set_data(sl_pfconn *c, void *data)
{
    c->data = data;
}

void *sl_pfconn_data(const sl_pfconn *c)
{
    return c->data;
}
