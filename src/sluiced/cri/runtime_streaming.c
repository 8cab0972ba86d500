/* Exec, Attach, PortForward: URLs from the streaming server (ExecSync is
 * in exec_sync.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cri/cri_util.h"
#include "cri/stream_sess.h"
#include "mon_session.h"

sl_ctr *sl_cri_running_ctr(sl_grpc_call *call, sl_rt *rt, const char *id)
{
    if (!*id) {
        sl_grpc_call_fail(call, SL_GRPC_INVALID_ARGUMENT, "missing required container_id");
        return NULL;
    }
    sl_ctr *c = sl_model_ctr(&rt->model, id);
    if (!c) {
        sl_grpc_call_fail(call, SL_GRPC_NOT_FOUND, "container \"%s\" not found", id);
        return NULL;
    }
    sl_ctr_status st;
    sl_model_ctr_status(&rt->model, c, &st);
    if (st.state != RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING) {
        sl_grpc_call_fail(call, SL_GRPC_FAILED_PRECONDITION, "container \"%s\" is not running", id);
        return NULL;
    }
    return c;
}

static void reply_url(sl_grpc_call *call, int rc, char *url, const char *msg,
                      const ProtobufCMessageDescriptor *d)
{
    if (rc == SL_ERR_FULL) {
        sl_grpc_call_fail(call, SL_GRPC_RESOURCE_EXHAUSTED,
                          "maximum number of in-flight requests exceeded");
    } else if (rc < 0) {
        sl_grpc_call_fail(call, rc == SL_ERR_INVAL ? SL_GRPC_INVALID_ARGUMENT : SL_GRPC_INTERNAL,
                          "%s", msg ? msg : sl_strerror(rc));
    } else {
        /* Exec, Attach and PortForward responses are all {1: url}. */
        Runtime__V1__ExecResponse resp = RUNTIME__V1__EXEC_RESPONSE__INIT;
        resp.base.descriptor = d;
        resp.url = url;
        sl_grpc_call_reply(call, &resp.base);
    }
    free(url);
}

void sl_cri_exec(sl_grpc_call *call, void *arg)
{
    sl_cri *cri = arg;
    const Runtime__V1__ExecRequest *req = (const void *)sl_grpc_call_request(call);
    if (!sl_cri_running_ctr(call, &cri->rt, req->container_id))
        return;
    sl_exec_request r = {.struct_size = SL_STRUCT_SIZE(sl_exec_request),
                         .container_id = req->container_id,
                         .cmd = (const char *const *)req->cmd,
                         .ncmd = req->n_cmd,
                         .tty = req->tty,
                         .in = req->stdin,
                         .out = req->stdout,
                         .err = req->stderr};
    char *url = NULL;
    const char *msg = NULL;
    int rc = sl_server_get_exec(cri->stream, &r, &url, &msg);
    reply_url(call, rc, url, msg, &runtime__v1__exec_response__descriptor);
}

void sl_cri_attach(sl_grpc_call *call, void *arg)
{
    sl_cri *cri = arg;
    const Runtime__V1__AttachRequest *req = (const void *)sl_grpc_call_request(call);
    if (!sl_cri_running_ctr(call, &cri->rt, req->container_id))
        return;
    sl_attach_request r = {.struct_size = SL_STRUCT_SIZE(sl_attach_request),
                           .container_id = req->container_id,
                           .tty = req->tty,
                           .in = req->stdin,
                           .out = req->stdout,
                           .err = req->stderr};
    char *url = NULL;
    const char *msg = NULL;
    int rc = sl_server_get_attach(cri->stream, &r, &url, &msg);
    reply_url(call, rc, url, msg, &runtime__v1__attach_response__descriptor);
}

void sl_cri_port_forward(sl_grpc_call *call, void *arg)
{
    sl_cri *cri = arg;
    const Runtime__V1__PortForwardRequest *req = (const void *)sl_grpc_call_request(call);
    if (*req->pod_sandbox_id && !sl_cri_ready_pod(call, &cri->rt, req->pod_sandbox_id))
        return;
    uint16_t ports[SL_MON_SESSION_MAX_PORTS];
    size_t n = 0;
    if (req->n_port > SL_MON_SESSION_MAX_PORTS) { /* the hand-off to the monitor carries no more */
        sl_grpc_call_fail(call, SL_GRPC_INVALID_ARGUMENT, "port: %zu ports, at most %d",
                          req->n_port, SL_MON_SESSION_MAX_PORTS);
        return;
    }
    for (size_t i = 0; i < req->n_port; i++) {
        if (req->port[i] < 1 || req->port[i] > 65535) {
            sl_grpc_call_fail(call, SL_GRPC_INVALID_ARGUMENT, "invalid port %d", req->port[i]);
            return;
        }
        ports[n++] = (uint16_t)req->port[i];
    }
    sl_portforward_request r = {.struct_size = SL_STRUCT_SIZE(sl_portforward_request),
                                .pod_sandbox_id = req->pod_sandbox_id,
                                .ports = ports,
                                .nports = n};
    char *url = NULL;
    const char *msg = NULL;
    int rc = sl_server_get_portforward(cri->stream, &r, &url, &msg);
    reply_url(call, rc, url, msg, &runtime__v1__port_forward_response__descriptor);
}
