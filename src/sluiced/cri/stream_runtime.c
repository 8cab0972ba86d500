/* Placeholder streaming backend: every exec, attach and port-forward fails
 * with a clear message until the monitor-backed runtime replaces this. */
#include "cri/service.h"

#define NOT_IMPLEMENTED "sluiced: the streaming runtime backend is not implemented yet"

static void exec_start(void *rt, sl_proc *proc, const sl_exec_request *req,
                       const sl_term_size *initial)
{
    (void)rt;
    (void)req;
    (void)initial;
    sl_proc_failed(proc, NOT_IMPLEMENTED);
}

static void attach_start(void *rt, sl_proc *proc, const sl_attach_request *req,
                         const sl_term_size *initial)
{
    (void)rt;
    (void)req;
    (void)initial;
    sl_proc_failed(proc, NOT_IMPLEMENTED);
}

static void cancel(void *rt, sl_proc *proc)
{
    (void)rt;
    (void)proc;
}

static void release(void *rt, sl_proc *proc)
{
    (void)rt;
    (void)proc;
}

static void pf_connect(void *rt, sl_pfconn *conn, const char *sandbox_id, uint16_t port)
{
    (void)rt;
    (void)sandbox_id;
    (void)port;
    sl_pfconn_failed(conn, NOT_IMPLEMENTED);
}

static void pf_cancel(void *rt, sl_pfconn *conn)
{
    (void)rt;
    (void)conn;
}

static const sl_runtime_ops ops = {
    .exec_start = exec_start,
    .attach_start = attach_start,
    .resize = NULL,
    .cancel = cancel,
    .release = release,
    .portforward_connect = pf_connect,
    .portforward_cancel = pf_cancel,
};

const sl_runtime *sluiced_runtime(sl_cri *cri)
{
    static sl_runtime rt;
    rt.ops = &ops;
    rt.data = cri;
    return &rt;
}
