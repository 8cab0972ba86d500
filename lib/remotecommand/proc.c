#include "remotecommand/proc.h"

#include <stdlib.h>
#include <unistd.h>

sl_proc *sl_proc_new(const sl_runtime *rt)
{
    sl_proc *p = calloc(1, sizeof(*p));
    if (p)
        p->rt = rt;
    return p;
}

static void release(sl_proc *p)
{
    if (p->rt->ops->release)
        p->rt->ops->release(p->rt->data, p);
    free(p);
}

void sl_proc_detach(sl_proc *p)
{
    p->rc = NULL;
    if (p->state == SL_PROC_NEW || p->state == SL_PROC_ENDED) {
        release(p);
        return;
    }
    if (p->rt->ops->cancel)
        p->rt->ops->cancel(p->rt->data, p);
}

static void close_fd(int fd)
{
    if (fd >= 0)
        close(fd);
}

void sl_proc_started(sl_proc *p, const sl_proc_endpoints *ep)
{
    if (p->state != SL_PROC_STARTING) {
        close_fd(ep->stdin_fd);
        close_fd(ep->stdout_fd);
        close_fd(ep->stderr_fd);
        close_fd(ep->pty_fd);
        return;
    }
    p->state = SL_PROC_RUNNING;
    if (p->rc) {
        sl_rc_proc_started(p->rc, ep);
        return;
    }
    close_fd(ep->stdin_fd);
    close_fd(ep->stdout_fd);
    close_fd(ep->stderr_fd);
    close_fd(ep->pty_fd);
}

static void ended(sl_proc *p, sl_rc_outcome outcome, int code, const char *message)
{
    if (p->state == SL_PROC_ENDED || p->state == SL_PROC_NEW)
        return;
    p->state = SL_PROC_ENDED;
    if (p->rc)
        sl_rc_proc_ended(p->rc, outcome, code, message);
    else
        release(p);
}

void sl_proc_failed(sl_proc *p, const char *message)
{
    ended(p, SL_RC_INTERNAL, 0, message);
}

void sl_proc_exited(sl_proc *p, int code, const char *message)
{
    ended(p, SL_RC_EXITED, code, message);
}

void sl_proc_set_data(sl_proc *p, void *data)
{
    p->data = data;
}

void *sl_proc_data(const sl_proc *p)
{
    return p->data;
}
