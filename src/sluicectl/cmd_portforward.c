/* port-forward POD [LOCAL:]REMOTE...: local listeners whose connections
 * are forwarded into the pod sandbox. SPDY and tunnelled WebSocket carry
 * every connection on one session; legacy WebSocket channels carry one
 * connection per port per session, so each connection gets its own
 * PortForward call and session. A failed connection is reported as a
 * warning and the others go on; what ends the command (a listener that
 * cannot bind, the session's failure) is an sl_error in pfrun, printed
 * once by cmd_port_forward. SIGINT/SIGTERM end the session cleanly
 * (exit 0). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cmd_util.h"
#include "stream.h"

#define PF_MAX_PORTS 64
#define PF_MAX_ADDRS 8
#define PF_BACKLOG 128

static const char pf_help[] =
    "Usage: sluicectl port-forward [-r spdy|websocket|legacy] [--address ADDR,...] POD\n"
    "                              [LOCAL:]REMOTE...\n"
    "\n"
    "Listens on LOCAL (REMOTE when omitted; \":REMOTE\" picks a free port) and forwards\n"
    "every connection to port REMOTE inside the pod sandbox. Many connections may run\n"
    "at once; one that fails is reported and the others go on. Ctrl-C ends.\n"
    "\n"
    "  -r, --transport T     spdy (default); websocket: SPDY tunnelled in WebSocket\n"
    "                        (SPDY/3.1+portforward.k8s.io), falling back to SPDY when\n"
    "                        refused; legacy: WebSocket v4.channel.k8s.io channels (one\n"
    "                        session per connection)\n"
    "      --address ADDR    addresses to listen on, comma-separated (default localhost:\n"
    "                        127.0.0.1 and ::1)\n"
    "  -h, --help            this help\n";

typedef struct listener {
    struct pfrun *p;
    int fd;
    uint16_t local, remote;
    char addr[64];
    uv_poll_t poll;
} listener;

typedef struct conn_rec { /* for messages: which forward a connection belongs to */
    uint64_t id;
    uint16_t local, remote;
} conn_rec;

typedef struct lsess { /* a legacy session: one connection */
    struct lsess *next;
    struct pfrun *p;
    sl_client_pf *h;
    uint16_t local, remote;
} lsess;

typedef struct pfrun {
    ctl *c;
    uv_loop_t loop;
    char *pod;
    sl_transport transport;
    listener l[PF_MAX_PORTS * PF_MAX_ADDRS];
    size_t nl;
    sl_client_pf *h;
    conn_rec *conns;
    size_t nconns, capconns;
    lsess *legacy;
    uv_signal_t sig[2];
    bool listening, closing, over;
    int rc;
    sl_error err; /* why the command failed, when rc says it did */
} pfrun;

typedef struct pf_opts {
    ctl *c;
    sl_transport transport;
    const char *address;
} pf_opts;

static int pf_opt(void *arg, int id, const char *val)
{
    pf_opts *o = arg;
    if (id == 'a') {
        o->address = val;
        return 0;
    }
    if (ctl_parse_transport(o->c, val, true, &o->transport) != 0)
        return -1;
    if (o->transport == SL_TRANSPORT_WEBSOCKET)
        o->transport = SL_TRANSPORT_WEBSOCKET_TUNNEL;
    return 0;
}

/* ---- listeners ---- */

static int parse_port(const char *s, size_t n, bool zero_ok, uint16_t *out)
{
    unsigned v = 0;
    if (n == 0 || n > 5)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v > 65535 || (v == 0 && !zero_ok))
        return -1;
    *out = (uint16_t)v;
    return 0;
}

static int parse_spec(const char *spec, uint16_t *local, uint16_t *remote)
{
    const char *colon = strchr(spec, ':');
    if (!colon)
        return parse_port(spec, strlen(spec), false, remote) < 0 ? -1 : (*local = *remote, 0);
    if (colon == spec)
        *local = 0;
    else if (parse_port(spec, (size_t)(colon - spec), true, local) < 0)
        return -1;
    return parse_port(colon + 1, strlen(colon + 1), false, remote);
}

/* A non-blocking socket bound to addr:*port (0: a free port, written
 * back); -1 with e naming the address (errnum: the failing call's). */
static int bind_one(const char *addr, uint16_t *port, sl_error *e)
{
    struct sockaddr_storage ss = {0};
    socklen_t len;
    struct sockaddr_in *s4 = (void *)&ss;
    struct sockaddr_in6 *s6 = (void *)&ss;
    if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET, s4->sin_port = htons(*port), len = sizeof *s4;
    } else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6, s6->sin6_port = htons(*port), len = sizeof *s6;
    } else {
        return sl_error_set(e, 0, "--address: \"%s\" is not an IPv4 or IPv6 address (or localhost)",
                            addr);
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0 && ss.ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, (struct sockaddr *)&ss, len) < 0) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        return sl_error_set(e, err, "cannot listen on %s:%u", addr, *port);
    }
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
        *port = ntohs(ss.ss_family == AF_INET ? s4->sin_port : s6->sin6_port);
    return fd;
}

static void on_accept(uv_poll_t *h, int status, int events);

/* Binds every address for one forward; ::1 may be missing (skipped when
 * it came from "localhost"). -1 with e set. */
static int bind_forward(pfrun *p, char **addrs, size_t naddrs, bool from_localhost, uint16_t local,
                        uint16_t remote, sl_error *e)
{
    size_t bound = 0;
    for (size_t i = 0; i < naddrs; i++) {
        listener *l = &p->l[p->nl];
        uint16_t port = local;
        int fd = bind_one(addrs[i], &port, e);
        if (fd < 0 && from_localhost && strchr(addrs[i], ':') && e->errnum == EADDRNOTAVAIL)
            continue;
        if (fd < 0)
            return -1;
        local = port; /* ":REMOTE" → the same free port on every address */
        *l = (listener){.p = p, .fd = fd, .local = port, .remote = remote};
        snprintf(l->addr, sizeof l->addr, strchr(addrs[i], ':') ? "[%s]" : "%s", addrs[i]);
        uv_poll_init(&p->loop, &l->poll, fd);
        l->poll.data = l;
        p->nl++, bound++;
    }
    return bound ? 0 : sl_error_set(e, 0, "--address: no address to listen on for port %u", local);
}

static void start_listening(pfrun *p)
{
    if (p->listening)
        return;
    p->listening = true;
    for (size_t i = 0; i < p->nl; i++) {
        listener *l = &p->l[i];
        if (listen(l->fd, PF_BACKLOG) < 0) { /* the other listeners go on */
            ctl_warn(p->c, "listen on %s:%u: %s", l->addr, l->local, strerror(errno));
            continue;
        }
        uv_poll_start(&l->poll, UV_READABLE, on_accept);
        printf("Forwarding from %s:%u -> %u\n", l->addr, l->local, l->remote);
    }
    fflush(stdout);
}

/* ---- sessions ---- */

static void shutdown_all(pfrun *p, int rc);
static int open_main(pfrun *p, sl_error *e);

/* The streaming URL of a PortForward call (port 0: none named, for a
 * session carrying every port); NULL with e saying why. */
static char *pf_url(pfrun *p, uint16_t port, sl_error *e)
{
    Runtime__V1__PortForwardRequest q = RUNTIME__V1__PORT_FORWARD_REQUEST__INIT;
    int32_t ports[1] = {port};
    q.pod_sandbox_id = p->pod;
    if (port) {
        q.port = ports;
        q.n_port = 1;
    }
    Runtime__V1__PortForwardResponse *r = (void *)ctl_rt_call(
        p->c, "PortForward", &q.base, &runtime__v1__port_forward_response__descriptor, e);
    if (!r)
        return NULL;
    char *url = r->url && *r->url ? strdup(r->url) : NULL;
    if (!url)
        sl_error_set(e, r->url && *r->url ? ENOMEM : 0,
                     "the runtime returned an empty streaming URL");
    ctl_free_msg(r);
    return url;
}

static const conn_rec *find_conn(pfrun *p, uint64_t id)
{
    for (size_t i = 0; i < p->nconns; i++)
        if (p->conns[i].id == id)
            return &p->conns[i];
    return NULL;
}

static void on_upgraded(void *arg, const char *protocol)
{
    pfrun *p = arg;
    ctl_debug(p->c, "port-forward session upgraded: %s", protocol ? protocol : "(none)");
    start_listening(p);
}

static void on_conn_end(void *arg, uint64_t id, const char *err)
{
    pfrun *p = arg;
    const conn_rec *r = find_conn(p, id);
    if (err && !p->closing)
        ctl_warn(p->c, "connection %llu (%u -> %u) failed: %s; other connections go on",
                 (unsigned long long)id, r ? r->local : 0, r ? r->remote : 0, err);
    else
        ctl_debug(p->c, "connection %llu ended", (unsigned long long)id);
}

static void on_main_end(void *arg, const sl_client_error *e)
{
    pfrun *p = arg;
    if (e && p->transport == SL_TRANSPORT_WEBSOCKET_TUNNEL && e->kind == SL_CLIENT_ERR_UPGRADE &&
        (e->http_status == 400 || e->http_status == 403)) {
        ctl_debug(p->c, "tunnelled WebSocket refused (%s); falling back to SPDY with a new URL",
                  e->message ? e->message : "");
        sl_client_pf_free(p->h);
        p->h = NULL;
        p->transport = SL_TRANSPORT_SPDY;
        if (open_main(p, &p->err) < 0)
            shutdown_all(p, CTL_EXIT_FAIL);
        return;
    }
    sl_client_pf_free(p->h);
    p->h = NULL;
    if (p->closing) {
        shutdown_all(p, p->rc);
        return;
    }
    char msg[1200];
    if (e)
        ctl_stream_explain(e, msg, sizeof msg);
    else
        snprintf(msg, sizeof msg, "the streaming server ended the port-forward session");
    sl_error_set(&p->err, 0, "%s", msg);
    shutdown_all(p, CTL_EXIT_FAIL);
}

static int open_main(pfrun *p, sl_error *e)
{
    char *url = pf_url(p, 0, e);
    if (!url)
        return -1;
    ctl_debug(p->c, "streaming URL %s, transport %s", url,
              p->transport == SL_TRANSPORT_SPDY ? "spdy" : "websocket (tunnel)");
    sl_client_pf_opts o;
    sl_client_pf_opts_init(&o);
    o.url = url;
    o.transport = p->transport;
    static const sl_client_pf_cb cb = {SL_STRUCT_SIZE(sl_client_pf_cb), on_upgraded, on_conn_end,
                                       on_main_end};
    int rc = sl_client_pf_new(&p->loop, &o, &cb, p, &p->h);
    free(url);
    if (rc != SL_OK) {
        p->h = NULL;
        return sl_error_set(e, 0, "cannot start the port-forward session: %s", sl_strerror(rc));
    }
    return 0;
}

static void remember(pfrun *p, uint64_t id, const listener *l)
{
    if (p->nconns == p->capconns) {
        size_t cap = p->capconns ? p->capconns * 2 : 16;
        conn_rec *n = realloc(p->conns, cap * sizeof *n);
        if (!n)
            return;
        p->conns = n, p->capconns = cap;
    }
    p->conns[p->nconns++] = (conn_rec){id, l->local, l->remote};
}

/* ---- legacy: one session per connection ---- */

static void unlink_lsess(pfrun *p, lsess *s)
{
    for (lsess **pp = &p->legacy; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
}

static void l_conn_end(void *arg, uint64_t id, const char *err)
{
    lsess *s = arg;
    (void)id;
    if (err && !s->p->closing)
        ctl_warn(s->p->c, "connection (%u -> %u) failed: %s; other connections go on", s->local,
                 s->remote, err);
    sl_client_pf_close(s->h); /* the session served its one connection */
}

static void l_end(void *arg, const sl_client_error *e)
{
    lsess *s = arg;
    pfrun *p = s->p;
    if (e) {
        char msg[1200];
        ctl_stream_explain(e, msg, sizeof msg);
        ctl_warn(p->c, "connection (%u -> %u) failed: %s", s->local, s->remote, msg);
    }
    sl_client_pf_free(s->h);
    unlink_lsess(p, s);
    free(s);
    if (p->closing && !p->legacy)
        shutdown_all(p, p->rc);
}

static void legacy_conn(pfrun *p, const listener *l, int fd)
{
    sl_error e; /* set by pf_url when it fails, else below */
    char *url = pf_url(p, l->remote, &e);
    lsess *s = url ? calloc(1, sizeof *s) : NULL;
    static const sl_client_pf_cb cb = {SL_STRUCT_SIZE(sl_client_pf_cb), NULL, l_conn_end, l_end};
    sl_client_pf_opts o;
    sl_client_pf_opts_init(&o);
    o.url = url;
    o.transport = SL_TRANSPORT_WEBSOCKET_LEGACY;
    int rc = s ? sl_client_pf_new(&p->loop, &o, &cb, s, &s->h) : SL_ERR_NOMEM;
    if (rc != SL_OK && url)
        sl_error_set(&e, 0, "no session: %s", sl_strerror(rc));
    if (rc != SL_OK) { /* this connection only: the listeners go on */
        ctl_warn(p->c, "connection (%u -> %u) dropped: %s", l->local, l->remote, e.msg);
        close(fd);
        free(s);
        free(url);
        return;
    }
    free(url);
    s->p = p, s->local = l->local, s->remote = l->remote;
    s->next = p->legacy;
    p->legacy = s;
    if (sl_client_pf_forward(s->h, l->remote, fd, NULL) != SL_OK)
        sl_client_pf_close(s->h);
}

static void on_accept(uv_poll_t *h, int status, int events)
{
    listener *l = h->data;
    pfrun *p = l->p;
    (void)status;
    (void)events;
    int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return;
    ctl_debug(p->c, "accepted a connection on %s:%u", l->addr, l->local);
    if (p->transport == SL_TRANSPORT_WEBSOCKET_LEGACY) {
        legacy_conn(p, l, fd);
        return;
    }
    uint64_t id;
    int rc = p->h ? sl_client_pf_forward(p->h, l->remote, fd, &id) : SL_ERR_CLOSED;
    if (rc == SL_OK)
        remember(p, id, l);
    else
        ctl_warn(p->c, "connection (%u -> %u) dropped: %s", l->local, l->remote, sl_strerror(rc));
}

/* ---- run ---- */

static void noop_close(uv_handle_t *h)
{
    (void)h;
}

static void listener_closed(uv_handle_t *h)
{
    listener *l = h->data;
    close(l->fd);
}

static void shutdown_all(pfrun *p, int rc)
{
    if (p->over)
        return;
    p->over = true;
    p->rc = rc;
    for (size_t i = 0; i < p->nl; i++)
        uv_close((uv_handle_t *)&p->l[i].poll, listener_closed);
    for (int i = 0; i < 2; i++)
        uv_close((uv_handle_t *)&p->sig[i], noop_close);
    if (p->h)
        sl_client_pf_free(p->h);
    p->h = NULL;
    while (p->legacy) {
        lsess *s = p->legacy;
        p->legacy = s->next;
        sl_client_pf_free(s->h);
        free(s);
    }
}

static void on_signal(uv_signal_t *s, int sig)
{
    pfrun *p = s->data;
    ctl_debug(p->c, "signal %d: closing", sig);
    if (p->closing) { /* a second signal: stop at once */
        shutdown_all(p, 0);
        return;
    }
    p->closing = true;
    p->rc = 0;
    if (p->h) {
        sl_client_pf_close(p->h); /* on_main_end finishes */
        return;
    }
    for (lsess *l = p->legacy; l; l = l->next)
        sl_client_pf_close(l->h);
    if (!p->legacy)
        shutdown_all(p, 0);
}

/* Binds every forward's listeners (specs were checked by the caller). */
static int setup(pfrun *p, const pf_opts *o, char **specs, int nspecs, sl_error *e)
{
    char buf[512], *addrs[PF_MAX_ADDRS];
    size_t naddrs = 0;
    bool lh = !o->address || !strcmp(o->address, "localhost");
    snprintf(buf, sizeof buf, "%s", lh ? "127.0.0.1,::1" : o->address);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && naddrs < PF_MAX_ADDRS;
         t = strtok_r(NULL, ",", &save))
        addrs[naddrs++] = !strcmp(t, "localhost") ? (char *)"127.0.0.1" : t;
    for (int i = 0; i < nspecs; i++) {
        uint16_t local, remote;
        parse_spec(specs[i], &local, &remote);
        if (bind_forward(p, addrs, naddrs, lh, local, remote, e) < 0)
            return -1;
    }
    return 0;
}

static int run_pf(pfrun *p, const pf_opts *o, char **specs, int nspecs)
{
    int rc = setup(p, o, specs, nspecs, &p->err);
    static const int sigs[2] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        uv_signal_init(&p->loop, &p->sig[i]);
        p->sig[i].data = p;
        uv_signal_start(&p->sig[i], on_signal, sigs[i]);
    }
    if (rc < 0) /* a bad --address or a port in use: as a bad flag */
        shutdown_all(p, CTL_EXIT_USAGE);
    else if (p->transport == SL_TRANSPORT_WEBSOCKET_LEGACY)
        start_listening(p);
    else if (open_main(p, &p->err) < 0)
        shutdown_all(p, CTL_EXIT_FAIL);
    uv_run(&p->loop, UV_RUN_DEFAULT);
    return p->rc;
}

int cmd_port_forward(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {{"transport", required_argument, NULL, 'r'},
                                       {"address", required_argument, NULL, 'a'},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    pf_opts o = {.c = c, .transport = SL_TRANSPORT_SPDY};
    int first, rc;
    if (ctl_parse(c, argc, argv, "r:", lo, pf_help, pf_opt, &o, &first, &rc))
        return rc;
    if (argc - first < 2)
        return ctl_usage(c, "needs POD and at least one [LOCAL:]REMOTE port (see sluicectl "
                            "port-forward --help)");
    if (argc - first - 1 > PF_MAX_PORTS)
        return ctl_usage(c, "at most %d ports", PF_MAX_PORTS);
    for (int i = first + 1; i < argc; i++) {
        uint16_t l, r;
        if (parse_spec(argv[i], &l, &r) < 0)
            return ctl_usage(c, "\"%s\" is not [LOCAL:]REMOTE with ports from 1 to 65535", argv[i]);
    }
    pfrun *p = calloc(1, sizeof *p);
    if (!p || uv_loop_init(&p->loop) != 0) {
        free(p);
        sl_error e;
        sl_error_set(&e, ENOMEM, "cannot set up the event loop");
        return ctl_fail(c, &e);
    }
    p->c = c;
    p->transport = o.transport;
    sl_error_set(&p->err, 0, "the port-forward session failed"); /* each failure says more */
    p->pod = ctl_resolve_pod(c, argv[first], &p->err);
    rc = p->pod ? run_pf(p, &o, argv + first + 1, argc - first - 1) : CTL_EXIT_FAIL;
    if (!p->pod)
        uv_run(&p->loop, UV_RUN_DEFAULT);
    if (rc != 0) /* the one report of why the command failed */
        ctl_fail(c, &p->err);
    uv_loop_close(&p->loop);
    free(p->conns);
    free(p->pod);
    free(p);
    return rc;
}
