/* See refuse_rt.h. */
#include "refuse_rt.h"

static void no_exec(void *rt, sl_proc *proc, const sl_exec_request *req, const sl_term_size *sz)
{
    (void)rt;
    (void)req;
    (void)sz;
    sl_proc_failed(proc, "none");
}

static void no_attach(void *rt, sl_proc *proc, const sl_attach_request *req, const sl_term_size *sz)
{
    (void)rt;
    (void)req;
    (void)sz;
    sl_proc_failed(proc, "none");
}

static void no_pf(void *rt, sl_pfconn *conn, const char *sandbox_id, uint16_t port)
{
    (void)rt;
    (void)sandbox_id;
    (void)port;
    sl_pfconn_failed(conn, "none");
}

const sl_runtime_ops refuse_rt_ops = {.struct_size = SL_STRUCT_SIZE(sl_runtime_ops),
                                      .exec_start = no_exec,
                                      .attach_start = no_attach,
                                      .portforward_connect = no_pf};
