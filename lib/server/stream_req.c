#include "server/stream_req.h"

#include <stdlib.h>
#include <string.h>

static sl_stream_req *req_new(sl_stream_kind kind)
{
    sl_stream_req *r = calloc(1, sizeof(*r));
    if (r)
        r->kind = kind;
    return r;
}

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

sl_stream_req *sl_stream_req_exec(const sl_exec_request *in)
{
    sl_stream_req *r = req_new(SL_TOKEN_EXEC);
    if (!r)
        return NULL;
    sl_exec_request *e = &r->u.exec;
    *e = *in;
    e->container_id = dup_or_empty(in->container_id);
    char **argv = calloc(in->ncmd + 1, sizeof(char *));
    e->cmd = (const char *const *)argv;
    if (!e->container_id || !argv)
        goto fail;
    for (size_t i = 0; i < in->ncmd; i++)
        if (!(argv[i] = strdup(in->cmd[i])))
            goto fail;
    return r;
fail:
    sl_stream_req_free(r);
    return NULL;
}

sl_stream_req *sl_stream_req_attach(const sl_attach_request *in)
{
    sl_stream_req *r = req_new(SL_TOKEN_ATTACH);
    if (!r)
        return NULL;
    r->u.attach = *in;
    r->u.attach.container_id = dup_or_empty(in->container_id);
    if (!r->u.attach.container_id) {
        free(r);
        return NULL;
    }
    return r;
}

sl_stream_req *sl_stream_req_portforward(const sl_portforward_request *in)
{
    sl_stream_req *r = req_new(SL_TOKEN_PORTFORWARD);
    if (!r)
        return NULL;
    sl_portforward_request *p = &r->u.pf;
    *p = *in;
    p->pod_sandbox_id = dup_or_empty(in->pod_sandbox_id);
    uint16_t *ports = calloc(in->nports ? in->nports : 1, sizeof(uint16_t));
    p->ports = ports;
    if (!p->pod_sandbox_id || !ports) {
        sl_stream_req_free(r);
        return NULL;
    }
    if (in->nports)
        memcpy(ports, in->ports, in->nports * sizeof(uint16_t));
    return r;
}

void sl_stream_req_free(sl_stream_req *r)
{
    if (!r)
        return;
    switch (r->kind) {
    case SL_TOKEN_EXEC:
        if (r->u.exec.cmd)
            for (size_t i = 0; i < r->u.exec.ncmd; i++)
                free((char *)r->u.exec.cmd[i]);
        free((void *)r->u.exec.cmd);
        free((char *)r->u.exec.container_id);
        break;
    case SL_TOKEN_ATTACH:
        free((char *)r->u.attach.container_id);
        break;
    case SL_TOKEN_PORTFORWARD:
        free((char *)r->u.pf.pod_sandbox_id);
        free((void *)r->u.pf.ports);
        break;
    }
    free(r);
}

sl_stream_request *sl_stream_request_copy(const sl_stream_request *r)
{
    if (!r)
        return NULL;
    switch (r->kind) {
    case SL_STREAM_EXEC:
        return sl_stream_req_exec(&r->u.exec);
    case SL_STREAM_ATTACH:
        return sl_stream_req_attach(&r->u.attach);
    case SL_STREAM_PORTFORWARD:
        return sl_stream_req_portforward(&r->u.pf);
    }
    return NULL;
}

void sl_stream_request_free(sl_stream_request *r)
{
    sl_stream_req_free(r);
}
