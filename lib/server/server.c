#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/server_impl.h"
#include "server/stream_req.h"
#include "sluice/limits.h"

void sl_server_config_init(sl_server_config *c)
{
    memset(c, 0, sizeof(*c));
    c->struct_size = sizeof(*c);
    c->address = SL_DEFAULT_ADDRESS;
    c->port = SL_DEFAULT_PORT;
    c->base_path = "/";
    c->token_ttl_ms = SL_DEFAULT_TOKEN_TTL_MS;
    c->max_pending_tokens = SL_DEFAULT_MAX_PENDING_TOKENS;
    c->idle_timeout_ms = SL_DEFAULT_IDLE_TIMEOUT_MS;
    c->creation_timeout_ms = SL_DEFAULT_CREATION_TIMEOUT_MS;
    c->head_timeout_ms = SL_DEFAULT_HEAD_TIMEOUT_MS;
    c->max_request_line = SL_DEFAULT_MAX_REQUEST_LINE;
    c->max_headers = SL_DEFAULT_MAX_HEADERS;
    c->max_head_size = SL_DEFAULT_MAX_HEAD_SIZE;
    c->max_ws_message = SL_DEFAULT_MAX_WS_MESSAGE;
    c->max_sessions = SL_DEFAULT_MAX_SESSIONS;
    c->output_high_water = SL_DEFAULT_OUTPUT_HIGH_WATER;
    c->keepalive_idle_ms = SL_DEFAULT_KEEPALIVE_IDLE_MS;
    c->keepalive_interval_ms = SL_DEFAULT_KEEPALIVE_INTERVAL_MS;
    c->keepalive_count = SL_DEFAULT_KEEPALIVE_COUNT;
    c->max_connections = SL_DEFAULT_MAX_CONNECTIONS;
    c->tty_size_wait_ms = SL_DEFAULT_TTY_SIZE_WAIT_MS;
    c->listen_backlog = SL_DEFAULT_LISTEN_BACKLOG;
    c->spdy_initial_window = SL_DEFAULT_SPDY_INITIAL_WINDOW;
    c->spdy_max_streams = SL_DEFAULT_SPDY_MAX_STREAMS;
    c->spdy_max_header_block = SL_DEFAULT_SPDY_MAX_HEADER_BLOCK;
    c->spdy_max_header_pairs = SL_DEFAULT_SPDY_MAX_HEADER_PAIRS;
    c->spdy_max_control_frame = SL_DEFAULT_SPDY_MAX_CONTROL_FRAME;
    c->spdy_max_data_frame = SL_DEFAULT_SPDY_MAX_DATA_FRAME;
}

static void free_payload(void *p)
{
    sl_stream_req_free(p);
}

static char *dup_opt(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* The first release's sizes (0.2.0): a smaller struct_size is refused. */
#define CONFIG_SIZE_0_2 SL_ABI_SIZE_THROUGH(sl_server_config, tty_size_wait_ms)
#define OPS_SIZE_0_2 SL_ABI_SIZE_THROUGH(sl_runtime_ops, attach_stdin_eof)

/* The fields added after 0.2.0: 0 means the default. */
static void default_zeros(sl_server_config *c)
{
    sl_server_config d;
    sl_server_config_init(&d);
#define SL_ZERO_DEFAULT(f)                                                                         \
    if (c->f == 0)                                                                                 \
        c->f = d.f;
    SL_ZERO_DEFAULT(listen_backlog)
    SL_ZERO_DEFAULT(spdy_initial_window)
    SL_ZERO_DEFAULT(spdy_max_streams)
    SL_ZERO_DEFAULT(spdy_max_header_block)
    SL_ZERO_DEFAULT(spdy_max_header_pairs)
    SL_ZERO_DEFAULT(spdy_max_control_frame)
    SL_ZERO_DEFAULT(spdy_max_data_frame)
#undef SL_ZERO_DEFAULT
}

/* The session limits the library cannot honour outside their range. */
static bool session_limits_valid(const sl_server_config *c)
{
    return c->spdy_initial_window >= SL_SPDY_MIN_INITIAL_WINDOW &&
           c->spdy_initial_window <= SL_SPDY_MAX_INITIAL_WINDOW &&
           c->spdy_max_control_frame <= SL_SPDY_MAX_FRAME &&
           c->spdy_max_data_frame <= SL_SPDY_MAX_FRAME;
}

/* c: the caller's config read at this library's size over the defaults. */
static int read_config(sl_server_config *c, const sl_server_config *cfg)
{
    sl_server_config_init(c);
    int rc = sl_abi_copy(c, sizeof(*c), cfg, CONFIG_SIZE_0_2);
    if (rc < 0)
        return rc;
    default_zeros(c);
    if (!c->address || c->max_pending_tokens == 0 || c->max_headers == 0 || c->max_head_size < 64 ||
        c->max_connections == 0 || c->listen_backlog > INT_MAX || !session_limits_valid(c))
        return SL_ERR_INVAL;
    return SL_OK;
}

static int read_runtime(sl_server *s, const sl_runtime *rt)
{
    if (!rt)
        return SL_ERR_INVAL;
    memset(&s->ops, 0, sizeof(s->ops)); /* an op the caller's size lacks is NULL */
    int rc = sl_abi_copy(&s->ops, sizeof(s->ops), rt->ops, OPS_SIZE_0_2);
    if (rc < 0)
        return rc;
    if (!s->ops.exec_start || !s->ops.attach_start || !s->ops.portforward_connect)
        return SL_ERR_INVAL;
    s->runtime.ops = &s->ops;
    s->runtime.data = rt->data;
    s->rt = &s->runtime;
    return SL_OK;
}

int sl_server_new(uv_loop_t *loop, const sl_server_config *cfg, const sl_runtime *rt,
                  sl_server **out)
{
    sl_server_config c;
    *out = NULL;
    int rc = read_config(&c, cfg);
    if (rc < 0)
        return rc;
    sl_server *s = calloc(1, sizeof(*s));
    if (!s)
        return SL_ERR_NOMEM;
    if ((rc = read_runtime(s, rt)) < 0) {
        free(s);
        return rc;
    }
    s->loop = loop;
    s->cfg = c;
    s->address = strdup(c.address);
    s->base_path = strdup(c.base_path ? c.base_path : "/");
    s->advertise_host = dup_opt(c.advertise_host);
    s->cfg.address = s->address;
    s->cfg.base_path = s->base_path;
    s->cfg.advertise_host = s->advertise_host;
    s->tokens = sl_token_cache_new(c.max_pending_tokens, c.token_ttl_ms, free_payload);
    if (!s->address || !s->base_path || (c.advertise_host && !s->advertise_host) || !s->tokens) {
        sl_server_free(s);
        return SL_ERR_NOMEM;
    }
    *out = s;
    return SL_OK;
}

static void maybe_closed(sl_server *s);

static void refused_closed_cb(uv_handle_t *h)
{
    sl_server *s = h->data;
    free(h);
    s->open_handles--;
    maybe_closed(s);
}

/* Beyond max_connections: the answer fits an empty socket buffer, so it is
 * sent without waiting, and what the peer already sent is read first so
 * that closing sends FIN rather than a RST that could destroy the answer. */
static void refuse(sl_server *s, uv_stream_t *l)
{
#define REFUSED_BODY "too many streaming connections\n"
    _Static_assert(sizeof(REFUSED_BODY) - 1 == 31, "Content-Length below");
    static const char answer[] = "HTTP/1.1 503 Service Unavailable\r\n"
                                 "Content-Type: text/plain; charset=utf-8\r\n"
                                 "X-Content-Type-Options: nosniff\r\n"
                                 "Content-Length: 31\r\n"
                                 "Connection: close\r\n"
                                 "\r\n" REFUSED_BODY;
    uv_tcp_t *t = malloc(sizeof(*t));
    if (!t)
        return; /* the connection stays in the backlog */
    uv_tcp_init(s->loop, t);
    t->data = s;
    s->open_handles++;
    uv_os_fd_t fd;
    if (uv_accept(l, (uv_stream_t *)t) == 0 && uv_fileno((uv_handle_t *)t, &fd) == 0) {
        char scratch[4096];
        while (recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT) > 0)
            ;
        (void)!send(fd, answer, sizeof(answer) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        shutdown(fd, SHUT_WR);
        s->refused++;
    }
    uv_close((uv_handle_t *)t, refused_closed_cb);
}

static void listen_cb(uv_stream_t *l, int status)
{
    sl_server *s = l->data;
    if (status < 0 || s->closing)
        return;
    /* Handshakes in progress count; a finished one is a connection. */
    if (s->nconns + s->ntls_handshaking >= s->cfg.max_connections)
        refuse(s, l);
    else if (s->tls_ctx)
        sl_tls_accept(s, l);
    else
        sl_conn_accept(s, l);
}

/* Keeps why start failed for sl_server_errmsg(), and errno for
 * SL_ERR_SYS (libuv's code negated). */
static int start_failed(sl_server *s, int rc, int uv_err, const char *what)
{
    if (uv_err < 0) {
        errno = -uv_err;
        snprintf(s->errmsg, sizeof(s->errmsg), "%s %s port %u: %s", what, s->address,
                 (unsigned)s->cfg.port, uv_strerror(uv_err));
    } else {
        snprintf(s->errmsg, sizeof(s->errmsg), "%s", what);
    }
    return rc;
}

static int bind_listener(sl_server *s)
{
    struct sockaddr_storage ss;
    if (uv_ip4_addr(s->address, s->cfg.port, (struct sockaddr_in *)&ss) != 0 &&
        uv_ip6_addr(s->address, s->cfg.port, (struct sockaddr_in6 *)&ss) != 0)
        return start_failed(s, SL_ERR_INVAL, 0, "address: not an IPv4 or IPv6 literal");
    if (s->listening)
        return start_failed(s, SL_ERR_STATE, 0, "already started");
    uv_tcp_init(s->loop, &s->listener);
    s->listener.data = s;
    s->open_handles++;
    s->listening = true;
    int err = uv_tcp_bind(&s->listener, (struct sockaddr *)&ss, 0);
    if (err < 0)
        return start_failed(s, SL_ERR_SYS, err, "bind");
    if ((err = uv_listen((uv_stream_t *)&s->listener, (int)s->cfg.listen_backlog, listen_cb)) < 0)
        return start_failed(s, SL_ERR_SYS, err, "listen on");
    int len = sizeof(ss);
    uv_tcp_getsockname(&s->listener, (struct sockaddr *)&ss, &len);
    s->cfg.port = ntohs(((struct sockaddr_in *)&ss)->sin_port); /* same offset for v6 */
    return SL_OK;
}

int sl_server_start(sl_server *s)
{
    s->started = true;
    s->errmsg[0] = '\0';
    int rc = bind_listener(s);
    if (rc < 0)
        return rc;
    char hostport[SL_URL_MAX_HOSTPORT];
    if (s->advertise_host)
        snprintf(hostport, sizeof(hostport), "%s", s->advertise_host);
    else if (sl_url_format_hostport(hostport, sizeof(hostport), s->address, s->cfg.port) < 0)
        return start_failed(s, SL_ERR_INVAL, 0, "address: too long for a URL");
    rc = sl_url_base_init(&s->url, s->tls_ctx ? "https" : "http", hostport, s->base_path);
    if (rc < 0)
        return start_failed(s, rc, 0,
                            rc == SL_ERR_NOMEM ? "out of memory"
                                               : "advertise_host or base_path: not valid in a URL");
    size_t n = strlen(s->url.origin) + strlen(s->url.prefix) + 1;
    s->base_url = malloc(n);
    if (!s->base_url)
        return start_failed(s, SL_ERR_NOMEM, 0, "out of memory");
    snprintf(s->base_url, n, "%s%s", s->url.origin, s->url.prefix);
    return SL_OK;
}

const char *sl_server_errmsg(const sl_server *s)
{
    return s->errmsg;
}

const char *sl_server_base_url(const sl_server *s)
{
    return s->base_url;
}

uint16_t sl_server_port(const sl_server *s)
{
    return s->cfg.port;
}

/* The session-scope fields of limits (sluice/limits.h) over cfg. */
static int adopt_limits(sl_server_config *cfg, const sl_server_config *limits)
{
    sl_server_config lim = *cfg;
    int rc = sl_abi_copy(&lim, sizeof(lim), limits, CONFIG_SIZE_0_2);
    if (rc < 0)
        return rc;
    default_zeros(&lim);
    if (!session_limits_valid(&lim))
        return SL_ERR_INVAL;
#define SL_ADOPT_FIELD(field, key, flag, arg, def, min, max, scope, help)                          \
    if ((scope) == SL_LIMIT_SESSION)                                                               \
        cfg->field = lim.field;
    SL_SERVER_LIMITS(SL_ADOPT_FIELD)
#undef SL_ADOPT_FIELD
    return SL_OK;
}

int sl_server_adopt(sl_server *s, int fd, const uint8_t *head, size_t len,
                    const sl_stream_request *req, const sl_server_config *limits)
{
    if (fd < 0)
        return SL_ERR_INVAL;
    if (s->closing || !req || (!head && len) || req->kind < SL_STREAM_EXEC ||
        req->kind > SL_STREAM_PORTFORWARD) {
        close(fd);
        return s->closing ? SL_ERR_CLOSED : SL_ERR_INVAL;
    }
    sl_stream_req *copy = NULL;
    int rc = sl_stream_request_copy(req, &copy);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    sl_server_config cfg = s->cfg;
    rc = limits ? adopt_limits(&cfg, limits) : SL_OK;
    if (rc < 0) {
        sl_stream_req_free(copy);
        close(fd);
        return rc;
    }
    return sl_conn_adopt(s, fd, head, len, copy, &cfg);
}

size_t sl_server_session_count(const sl_server *s)
{
    return s->nsessions;
}

size_t sl_server_connection_count(const sl_server *s)
{
    return s->nconns;
}

uint64_t sl_server_refused_count(const sl_server *s)
{
    return s->refused;
}

void sl_server_set_session_observer(sl_server *s, sl_server_session_fn fn, void *arg)
{
    s->session_fn = fn;
    s->session_arg = arg;
}

size_t sl_server_pending_tokens(const sl_server *s)
{
    return sl_token_cache_pending(s->tokens, uv_now(s->loop));
}

/* Parks a deep copy of in, a request of kind read by read_req() and
 * validated. */
static int park(sl_server *s, sl_stream_kind kind, const void *in, const char *method, char **url)
{
    if (!s->base_url || s->closing) /* no URL to hand out, or nobody to serve it */
        return SL_ERR_STATE;
    sl_stream_req *req = NULL;
    int rc = sl_stream_req_new(kind, in, &req);
    if (rc < 0)
        return rc;
    char token[SL_TOKEN_LEN + 1];
    rc = sl_token_cache_insert(s->tokens, req->kind, req, uv_now(s->loop), token);
    if (rc < 0) {
        sl_stream_req_free(req);
        return rc;
    }
    *url = sl_url_build(&s->url, method, token);
    if (!*url) {
        sl_token_cache_consume(s->tokens, token, strlen(token), req->kind, uv_now(s->loop));
        return SL_ERR_NOMEM;
    }
    return SL_OK;
}

/* The caller's request at this library's size (the size rule of
 * sluice/runtime.h), with the words for a refusal. */
static int read_req(sl_stream_kind kind, void *dst, const void *req, const char **errmsg)
{
    int rc = sl_stream_req_read(kind, dst, req);
    if (rc == SL_ERR_INVAL)
        *errmsg = "struct_size below this library's first version";
    else if (rc < 0)
        *errmsg = "the request sets a field this library does not know";
    return rc;
}

/* The kubelet library's checks (protocol notes §2.4), same texts. */
static const char *check_streams(const char *id, bool tty, bool in, bool out, bool err,
                                 const char *none_text)
{
    if (!id || !*id)
        return "missing required container_id";
    if (tty && err)
        return "tty and stderr cannot both be true";
    if (!in && !out && !err)
        return none_text;
    return NULL;
}

int sl_server_get_exec(sl_server *s, const sl_exec_request *in, char **url, const char **errmsg)
{
    sl_exec_request req;
    *url = NULL;
    int rc = read_req(SL_STREAM_EXEC, &req, in, errmsg);
    if (rc < 0)
        return rc;
    *errmsg = check_streams(req.container_id, req.tty, req.in, req.out, req.err,
                            "one of stdin, stdout, or stderr must be set");
    if (!*errmsg && req.ncmd == 0)
        *errmsg = "missing required cmd";
    if (*errmsg)
        return SL_ERR_INVAL;
    return park(s, SL_STREAM_EXEC, &req, "exec", url);
}

int sl_server_get_attach(sl_server *s, const sl_attach_request *in, char **url, const char **errmsg)
{
    sl_attach_request req;
    *url = NULL;
    int rc = read_req(SL_STREAM_ATTACH, &req, in, errmsg);
    if (rc < 0)
        return rc;
    *errmsg = check_streams(req.container_id, req.tty, req.in, req.out, req.err,
                            "one of stdin, stdout, and stderr must be set");
    if (*errmsg)
        return SL_ERR_INVAL;
    return park(s, SL_STREAM_ATTACH, &req, "attach", url);
}

int sl_server_get_portforward(sl_server *s, const sl_portforward_request *in, char **url,
                              const char **errmsg)
{
    sl_portforward_request req;
    *url = NULL;
    int rc = read_req(SL_STREAM_PORTFORWARD, &req, in, errmsg);
    if (rc < 0)
        return rc;
    *errmsg = NULL;
    if (!req.pod_sandbox_id || !*req.pod_sandbox_id) {
        *errmsg = "missing required pod_sandbox_id";
        return SL_ERR_INVAL;
    }
    return park(s, SL_STREAM_PORTFORWARD, &req, "portforward", url);
}

static void maybe_closed(sl_server *s)
{
    if (s->closing && s->open_handles == 0 && s->nconns == 0 && s->ntls == 0 && s->close_cb)
        s->close_cb(s, s->close_arg);
}

void sl_server_tls_gone(sl_server *s)
{
    s->ntls--;
    maybe_closed(s);
}

void sl_server_conn_gone(sl_server *s, sl_conn *c, bool was_session)
{
    (void)c;
    s->nconns--;
    if (was_session)
        s->nsessions--;
    maybe_closed(s);
}

static void listener_closed_cb(uv_handle_t *h)
{
    sl_server *s = h->data;
    s->open_handles--;
    maybe_closed(s);
}

void sl_server_close(sl_server *s, void (*cb)(sl_server *s, void *arg), void *arg)
{
    s->closing = true;
    s->close_cb = cb;
    s->close_arg = arg;
    if (s->listening && !uv_is_closing((uv_handle_t *)&s->listener))
        uv_close((uv_handle_t *)&s->listener, listener_closed_cb);
    sl_tls_close_all(s);
    sl_conn_close_all(s);
    maybe_closed(s);
}

void sl_server_free(sl_server *s)
{
    if (!s)
        return;
    sl_tls_ctx_free(s->tls_ctx);
    sl_token_cache_free(s->tokens);
    sl_url_base_fini(&s->url);
    free(s->base_url);
    free(s->address);
    free(s->base_path);
    free(s->advertise_host);
    free(s);
}
