/* Thread-pool jobs and the pool of CRI connections they use. The CRI
 * client is synchronous, so every call runs off the loop's thread. */
#include <stdio.h>
#include <string.h>

#include "kube.h"

static sl_cri_client *pool_take(sk_server *srv)
{
    sl_cri_client *cli = NULL;
    pthread_mutex_lock(&srv->pool_lock);
    if (srv->npool > 0)
        cli = srv->pool[--srv->npool];
    pthread_mutex_unlock(&srv->pool_lock);
    return cli;
}

sl_cri_client *sk_cri_get(sk_server *srv, sl_error *err)
{
    sl_cri_client *cli;
    while ((cli = pool_take(srv))) {
        if (sl_cri_client_usable(cli))
            return cli;
        sl_cri_client_free(cli); /* the runtime closed it while it idled */
    }
    if (sl_cri_client_connect(srv->cfg.endpoint, 0, &cli, err) != 0)
        return NULL;
    return cli;
}

void sk_cri_put(sk_server *srv, sl_cri_client *cli, bool broken)
{
    if (!cli)
        return;
    pthread_mutex_lock(&srv->pool_lock);
    if (!broken && srv->npool < SK_CRI_POOL_MAX) {
        srv->pool[srv->npool++] = cli;
        cli = NULL;
    }
    pthread_mutex_unlock(&srv->pool_lock);
    sl_cri_client_free(cli);
}

void sk_cri_pool_free(sk_server *srv)
{
    pthread_mutex_lock(&srv->pool_lock);
    while (srv->npool > 0)
        sl_cri_client_free(srv->pool[--srv->npool]);
    pthread_mutex_unlock(&srv->pool_lock);
}

int sk_cri_http_status(int code)
{
    switch (code) {
    case SL_CRI_NOT_FOUND:
        return 404;
    case SL_CRI_RESOURCE_EXHAUSTED:
        return 429;
    default:
        return 500;
    }
}

/* The text grpc-go's status.Error gives, which the kubelet writes. */
void sk_cri_err_text(const sl_error *err, char *out, size_t len)
{
    snprintf(out, len, "rpc error: code = %s desc = %s", sl_cri_code_name(err->code), err->msg);
}

static sk_server *job_server(sk_job *j)
{
    return j->c->srv;
}

static void work_cb(uv_work_t *req)
{
    sk_job *j = req->data;
    sk_server *srv = job_server(j);
    sl_error_clear(&j->err);
    sl_cri_client *cli = sk_cri_get(srv, &j->err);
    j->run(j, cli);
    /* A transport failure breaks the client for good: drop it. */
    sk_cri_put(srv, cli, sl_cri_transport_failed(&j->err));
}

static void after_cb(uv_work_t *req, int status)
{
    sk_job *j = req->data;
    (void)status;
    sk_conn *c = j->c;
    if (!sk_conn_gone(c))
        j->done(j);
    j->free(j);
    sk_conn_unref(c);
}

int sk_job_queue(sk_server *srv, sk_job *j)
{
    j->req.data = j;
    if (uv_queue_work(srv->loop, &j->req, work_cb, after_cb) != 0)
        return -1;
    sk_conn_ref(j->c);
    return 0;
}
