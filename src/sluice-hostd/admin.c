/* The admin endpoint of sluice-hostd: a stand-in for the CRI calls
 * (Exec, Attach, PortForward) that answers with the streaming URL, plus
 * counters the tests use to prove that nothing leaks. Loopback only. */
#include "admin.h"

#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "http/http_head.h"
#include "http/http_response.h"
#include "util/bufq.h"
#include "query.h"

#define ADMIN_BUF 8192
#define ADMIN_MAX_ARGS 256

typedef struct admin_conn {
    uv_tcp_t tcp;
    uv_write_t wreq;
    sl_admin *admin;
    sl_http_head_parser head;
    sl_bufq out;
    char buf[ADMIN_BUF];
    uv_buf_t wbuf;
    char *wdata;
} admin_conn;

static void conn_closed(uv_handle_t *h)
{
    admin_conn *c = h->data;
    sl_http_head_fini(&c->head);
    sl_bufq_fini(&c->out);
    free(c->wdata);
    free(c);
}

static void written(uv_write_t *w, int status)
{
    (void)status;
    admin_conn *c = w->data;
    uv_close((uv_handle_t *)&c->tcp, conn_closed);
}

static void send_out(admin_conn *c)
{
    size_t n = sl_bufq_len(&c->out);
    c->wdata = malloc(n ? n : 1);
    if (!c->wdata) {
        uv_close((uv_handle_t *)&c->tcp, conn_closed);
        return;
    }
    sl_bufq_copyout(&c->out, c->wdata, n);
    c->wbuf = uv_buf_init(c->wdata, (unsigned)n);
    c->wreq.data = c;
    uv_read_stop((uv_stream_t *)&c->tcp);
    if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &c->wbuf, 1, written) < 0)
        uv_close((uv_handle_t *)&c->tcp, conn_closed);
}

static void reply_json(admin_conn *c, int status, json_t *j)
{
    char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    sl_bufq_appendf(&c->out,
                    "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                    status, sl_http_reason(status), body ? strlen(body) : 0, body ? body : "");
    free(body);
    send_out(c);
}

static void reply_error(admin_conn *c, int rc, const char *msg)
{
    int status = rc == SL_ERR_FULL ? 429 : rc == SL_ERR_INVAL ? 400 : 500;
    reply_json(c, status, json_pack("{s:s}", "error", msg ? msg : sl_strerror(rc)));
}

static void reply_url(admin_conn *c, int rc, char *url, const char *msg)
{
    if (rc < 0)
        reply_error(c, rc, msg);
    else
        reply_json(c, 200, json_pack("{s:s}", "url", url));
    free(url);
}

static void do_exec(admin_conn *c, sl_query *q)
{
    const char *argv[ADMIN_MAX_ARGS];
    size_t n = sl_query_all(q, "cmd", argv, ADMIN_MAX_ARGS);
    sl_exec_request r = {
        .struct_size = SL_STRUCT_SIZE(sl_exec_request),
        .container_id = sl_query_get(q, "container", "host"),
        .cmd = argv,
        .ncmd = n,
        .tty = sl_query_bool(q, "tty"),
        .in = sl_query_bool(q, "stdin"),
        .out = sl_query_bool(q, "stdout"),
        .err = sl_query_bool(q, "stderr"),
    };
    char *url = NULL;
    const char *msg = NULL;
    int rc = sl_server_get_exec(c->admin->server, &r, &url, &msg);
    reply_url(c, rc, url, msg);
}

static void do_attach(admin_conn *c, sl_query *q)
{
    sl_attach_request r = {
        .struct_size = SL_STRUCT_SIZE(sl_attach_request),
        .container_id = sl_query_get(q, "container", ""),
        .tty = sl_query_bool(q, "tty"),
        .in = sl_query_bool(q, "stdin"),
        .out = sl_query_bool(q, "stdout"),
        .err = sl_query_bool(q, "stderr"),
    };
    char *url = NULL;
    const char *msg = NULL;
    int rc = sl_server_get_attach(c->admin->server, &r, &url, &msg);
    reply_url(c, rc, url, msg);
}

static void do_portforward(admin_conn *c, sl_query *q)
{
    const char *vals[ADMIN_MAX_ARGS];
    uint16_t ports[ADMIN_MAX_ARGS];
    size_t n = sl_query_all(q, "port", vals, ADMIN_MAX_ARGS);
    for (size_t i = 0; i < n; i++)
        ports[i] = (uint16_t)atoi(vals[i]);
    sl_portforward_request r = {
        .struct_size = SL_STRUCT_SIZE(sl_portforward_request),
        .pod_sandbox_id = sl_query_get(q, "sandbox", ""),
        .ports = ports,
        .nports = n,
    };
    char *url = NULL;
    const char *msg = NULL;
    int rc = sl_server_get_portforward(c->admin->server, &r, &url, &msg);
    reply_url(c, rc, url, msg);
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n - 3; /* ".", ".." and the directory's own fd */
}

static void do_stats(admin_conn *c)
{
    reply_json(c, 200,
               json_pack("{s:I, s:I, s:i}", "sessions",
                         (json_int_t)sl_server_session_count(c->admin->server), "running",
                         (json_int_t)sl_hostproc_running(c->admin->hp), "fds", count_fds()));
}

static void dispatch(admin_conn *c, const sl_http_request *r)
{
    sl_query q;
    if (sl_query_parse(&q, r->query) < 0) {
        reply_error(c, SL_ERR_INVAL, "malformed query");
        return;
    }
    if (!strcmp(r->path, "/exec"))
        do_exec(c, &q);
    else if (!strcmp(r->path, "/attach"))
        do_attach(c, &q);
    else if (!strcmp(r->path, "/portforward"))
        do_portforward(c, &q);
    else if (!strcmp(r->path, "/stats"))
        do_stats(c);
    else
        reply_json(c, 404, json_pack("{s:s}", "error", "unknown admin path"));
    sl_query_fini(&q);
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    (void)hint;
    admin_conn *c = h->data;
    *b = uv_buf_init(c->buf, sizeof(c->buf));
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    admin_conn *c = s->data;
    if (n < 0) {
        uv_close((uv_handle_t *)&c->tcp, conn_closed);
        return;
    }
    sl_http_head_feed(&c->head, (const uint8_t *)b->base, (size_t)n);
    if (c->head.state == SL_HTTP_HEAD_DONE)
        dispatch(c, &c->head.req);
    else if (c->head.state == SL_HTTP_HEAD_ERROR)
        reply_error(c, SL_ERR_INVAL, c->head.err_text);
}

static void accept_cb(uv_stream_t *l, int status)
{
    sl_admin *a = l->data;
    if (status < 0)
        return;
    admin_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return;
    c->admin = a;
    sl_bufq_init(&c->out);
    sl_http_limits lim = {SL_DEFAULT_MAX_REQUEST_LINE, SL_DEFAULT_MAX_HEADERS,
                          SL_DEFAULT_MAX_HEAD_SIZE};
    sl_http_head_init(&c->head, &lim);
    uv_tcp_init(l->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(l, (uv_stream_t *)&c->tcp) < 0) {
        uv_close((uv_handle_t *)&c->tcp, conn_closed);
        return;
    }
    uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
}

int sl_admin_start(sl_admin *a, uv_loop_t *loop, const char *address, uint16_t port)
{
    struct sockaddr_storage ss;
    if (uv_ip4_addr(address, port, (struct sockaddr_in *)&ss) != 0 &&
        uv_ip6_addr(address, port, (struct sockaddr_in6 *)&ss) != 0)
        return SL_ERR_INVAL;
    uv_tcp_init(loop, &a->listener);
    a->listener.data = a;
    if (uv_tcp_bind(&a->listener, (struct sockaddr *)&ss, 0) < 0 ||
        uv_listen((uv_stream_t *)&a->listener, 128, accept_cb) < 0)
        return SL_ERR_SYS;
    int len = sizeof(ss);
    uv_tcp_getsockname(&a->listener, (struct sockaddr *)&ss, &len);
    a->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return SL_OK;
}

void sl_admin_close(sl_admin *a)
{
    uv_close((uv_handle_t *)&a->listener, NULL);
}
