#include "server/stream_req.h"

#include <stdlib.h>
#include <string.h>

#include "sluice/error.h"
#include "util/abi.h"

/* The first version's sizes (0.3.0, when the requests gained struct_size):
 * a smaller struct_size is refused. */
#define EXEC_SIZE_0_3 SL_ABI_SIZE_THROUGH(sl_exec_request, err)
#define ATTACH_SIZE_0_3 SL_ABI_SIZE_THROUGH(sl_attach_request, err)
#define PF_SIZE_0_3 SL_ABI_SIZE_THROUGH(sl_portforward_request, nports)

int sl_stream_req_read(sl_stream_kind kind, void *dst, const void *src)
{
    size_t size, min;
    switch (kind) {
    case SL_STREAM_EXEC:
        size = sizeof(sl_exec_request), min = EXEC_SIZE_0_3;
        break;
    case SL_STREAM_ATTACH:
        size = sizeof(sl_attach_request), min = ATTACH_SIZE_0_3;
        break;
    case SL_STREAM_PORTFORWARD:
        size = sizeof(sl_portforward_request), min = PF_SIZE_0_3;
        break;
    default:
        return SL_ERR_INVAL;
    }
    memset(dst, 0, size); /* every field's default is 0 / NULL / false */
    return sl_abi_copy(dst, size, src, min);
}

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

/* The own_* replace the caller's strings and arrays in a request read by
 * sl_stream_req_read() with copies (freed by sl_stream_req_free). */
static int own_exec(sl_exec_request *e)
{
    const char *const *cmd = e->cmd;
    e->container_id = dup_or_empty(e->container_id);
    char **argv = calloc(e->ncmd + 1, sizeof(char *));
    e->cmd = (const char *const *)argv;
    if (!e->container_id || !argv)
        return SL_ERR_NOMEM;
    for (size_t i = 0; i < e->ncmd; i++)
        if (!(argv[i] = strdup(cmd[i])))
            return SL_ERR_NOMEM;
    return SL_OK;
}

static int own_attach(sl_attach_request *a)
{
    a->container_id = dup_or_empty(a->container_id);
    return a->container_id ? SL_OK : SL_ERR_NOMEM;
}

static int own_pf(sl_portforward_request *p)
{
    const uint16_t *in = p->ports;
    p->pod_sandbox_id = dup_or_empty(p->pod_sandbox_id);
    uint16_t *ports = calloc(p->nports ? p->nports : 1, sizeof(uint16_t));
    p->ports = ports;
    if (!p->pod_sandbox_id || !ports)
        return SL_ERR_NOMEM;
    if (p->nports)
        memcpy(ports, in, p->nports * sizeof(uint16_t));
    return SL_OK;
}

int sl_stream_req_new(sl_stream_kind kind, const void *req, sl_stream_req **out)
{
    sl_stream_req *r = calloc(1, sizeof(*r));
    if (!r)
        return SL_ERR_NOMEM;
    r->struct_size = sizeof(*r);
    int rc = sl_stream_req_read(kind, &r->u, req);
    if (rc < 0) {
        free(r);
        return rc;
    }
    r->kind = kind;
    if (kind == SL_STREAM_EXEC)
        rc = own_exec(&r->u.exec);
    else if (kind == SL_STREAM_ATTACH)
        rc = own_attach(&r->u.attach);
    else
        rc = own_pf(&r->u.pf);
    if (rc < 0) {
        sl_stream_req_free(r);
        return rc;
    }
    *out = r;
    return SL_OK;
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

/* The outer struct carries the member: it must hold the member's
 * struct_size, and the member as large as that says (sluice/server.h). */
int sl_stream_request_copy(const sl_stream_request *r, sl_stream_request **out)
{
    const size_t at = offsetof(sl_stream_request, u);
    if (!r || !out || r->struct_size < at + sizeof(size_t))
        return SL_ERR_INVAL;
    size_t member;
    memcpy(&member, &r->u, sizeof(member));
    if (member > r->struct_size - at)
        return SL_ERR_INVAL;
    return sl_stream_req_new(r->kind, &r->u, out);
}

void sl_stream_request_free(sl_stream_request *r)
{
    sl_stream_req_free(r);
}
