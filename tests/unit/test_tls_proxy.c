#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server/tls.h"
#include "sluice/error.h"
#include "refuse_rt.h"
#include "sluice/server.h"

/* The TLS proxy of the streaming listener (lib/server/tls.c) seen from its
 * two ends, inside this process: an OpenSSL client on a loopback TCP
 * connection (the TLS side) and the plaintext socket a hand-off gives us
 * (the plain side, the far end of the proxy's socketpair). Certificates
 * are made here (EC P-256): a server certificate, a client CA and a client
 * certificate it signed, and a client certificate nobody signed. */

#define WAIT_MS 8000
#define LINGER_WAIT_MS (SL_TLS_LINGER_MS + 10000u)
#define BULK (1024u * 1024)
/* Well above loopback's 64 KiB MSS (see tls_side_pauses_at_high_water). */
#define CLIENT_RCVBUF (128 * 1024)

typedef struct fx {
    char dir[64];
    char srv_cert[128], srv_key[128], ca_cert[128], cli_cert[128], cli_key[128];
    char rogue_cert[128], rogue_key[128];
    uv_loop_t loop;
    sl_runtime rt;
    sl_server *srv;
    char path[256]; /* the exec URL's path, token included */
    int plain;      /* the hand-off's fd: the plain side, -1 before */
    uint8_t head[1024];
    size_t head_len;
    int handoffs;
    int proxy_rcvbuf; /* SO_RCVBUF of the proxy's TCP socket; 0 = the system's */
} fx;

typedef struct cli {
    int fd;
    SSL_CTX *ctx;
    SSL *ssl;
} cli;

static void take(void *arg, sl_handoff *h, int fd, const uint8_t *head, size_t len,
                 const sl_stream_request *req)
{
    (void)req;
    fx *f = arg;
    f->handoffs++;
    f->plain = fd;
    assert_true(len <= sizeof(f->head));
    memcpy(f->head, head, len);
    f->head_len = len;
    sl_handoff_done(h, SL_HANDOFF_TAKEN, NULL);
}

/* ---- certificates ---- */

static void write_key(const char *path, EVP_PKEY *k)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    assert_int_equal(PEM_write_PrivateKey(fp, k, NULL, NULL, 0, NULL, NULL), 1);
    fclose(fp);
}

static void add_ext(X509 *x, int nid, const char *value)
{
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, NULL, nid, value);
    assert_non_null(e);
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
}

/* A certificate for k named cn, signed by issuer_key (named issuer_cn). */
static void write_cert(const char *path, EVP_PKEY *k, const char *cn, EVP_PKEY *issuer_key,
                       const char *issuer_cn, bool ca, long serial)
{
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, k);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)cn, -1, -1, 0);
    X509_NAME_add_entry_by_txt(X509_get_issuer_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)issuer_cn, -1, -1, 0);
    add_ext(x, NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
    assert_true(X509_sign(x, issuer_key, EVP_sha256()) > 0);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    assert_int_equal(PEM_write_X509(fp, x), 1);
    fclose(fp);
    X509_free(x);
}

static void make_certs(fx *f)
{
    snprintf(f->dir, sizeof(f->dir), "/tmp/sl-tlsp-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    char *paths[] = {f->srv_cert, f->srv_key,    f->ca_cert,  f->cli_cert,
                     f->cli_key,  f->rogue_cert, f->rogue_key};
    const char *names[] = {"srv.pem", "srv.key",   "ca.pem",   "cli.pem",
                           "cli.key", "rogue.pem", "rogue.key"};
    for (int i = 0; i < 7; i++)
        snprintf(paths[i], 128, "%s/%s", f->dir, names[i]);
    EVP_PKEY *srv = EVP_EC_gen("P-256"), *ca = EVP_EC_gen("P-256");
    EVP_PKEY *cl = EVP_EC_gen("P-256"), *rogue = EVP_EC_gen("P-256");
    assert_true(srv && ca && cl && rogue);
    write_key(f->srv_key, srv);
    write_cert(f->srv_cert, srv, "server", srv, "server", true, 1);
    write_cert(f->ca_cert, ca, "client-ca", ca, "client-ca", true, 2);
    write_key(f->cli_key, cl);
    write_cert(f->cli_cert, cl, "client", ca, "client-ca", false, 3);
    write_key(f->rogue_key, rogue);
    write_cert(f->rogue_cert, rogue, "client", rogue, "client-ca", false, 4);
    EVP_PKEY_free(srv);
    EVP_PKEY_free(ca);
    EVP_PKEY_free(cl);
    EVP_PKEY_free(rogue);
}

/* ---- the server ---- */

static void start(fx *f, bool verify_clients, uint32_t head_timeout_ms)
{
    uv_loop_init(&f->loop);
    f->rt.ops = &refuse_rt_ops;
    f->plain = -1;
    sl_server_config cfg;
    sl_server_config_init(&cfg);
    cfg.port = 0;
    if (head_timeout_ms)
        cfg.head_timeout_ms = head_timeout_ms;
    assert_int_equal(sl_server_new(&f->loop, &cfg, &f->rt, &f->srv), SL_OK);
    const char *msg = NULL;
    assert_int_equal(sl_server_set_tls(f->srv, f->srv_cert, f->srv_key,
                                       verify_clients ? f->ca_cert : NULL, &msg),
                     SL_OK);
    sl_server_set_handoff(f->srv, take, f);
    assert_int_equal(sl_server_start(f->srv), SL_OK);
}

/* A token is good once: each session asks for its own URL. */
static void new_exec_path(fx *f)
{
    sl_exec_request req = {.struct_size = SL_STRUCT_SIZE(sl_exec_request),
                           .container_id = "c",
                           .cmd = (const char *[]){"cat"},
                           .ncmd = 1,
                           .in = true,
                           .out = true};
    char *url = NULL;
    const char *msg = NULL;
    assert_int_equal(sl_server_get_exec(f->srv, &req, &url, &msg), SL_OK);
    const char *p = strchr(url + strlen("https://"), '/');
    assert_non_null(p);
    snprintf(f->path, sizeof(f->path), "%s", p);
    free(url);
}

static uint16_t server_port(fx *f)
{
    const char *u = sl_server_base_url(f->srv);
    const char *colon = strrchr(u, ':');
    assert_non_null(colon);
    return (uint16_t)atoi(colon + 1);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));
    make_certs(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    if (f->srv) {
        sl_server_close(f->srv, NULL, NULL);
        uv_run(&f->loop, UV_RUN_DEFAULT);
        sl_server_free(f->srv);
        assert_int_equal(uv_loop_close(&f->loop), 0);
    }
    if (f->plain >= 0)
        close(f->plain);
    char *paths[] = {f->srv_cert, f->srv_key,    f->ca_cert,  f->cli_cert,
                     f->cli_key,  f->rogue_cert, f->rogue_key};
    for (int i = 0; i < 7; i++)
        unlink(paths[i]);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* ---- time, pumping, the proxy's socket ---- */

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Runs the loop until step(f, arg) returns true or ms pass. */
static bool pump_ms(fx *f, bool (*step)(fx *f, void *arg), void *arg, unsigned ms)
{
    uint64_t end = now_ms() + ms;
    while (now_ms() < end) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        if (step(f, arg))
            return true;
        usleep(500);
    }
    return false;
}

static bool pump(fx *f, bool (*step)(fx *f, void *arg), void *arg)
{
    return pump_ms(f, step, arg, WAIT_MS);
}

static bool same_addr(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
    return a->sin_port == b->sin_port && a->sin_addr.s_addr == b->sin_addr.s_addr;
}

/* The proxy's end of the client's TCP connection (it lives in this
 * process): the fd whose local address is the client's peer and back. */
static int proxy_fd(int client)
{
    struct sockaddr_in me, peer, a, b;
    socklen_t l = sizeof(me);
    assert_int_equal(getsockname(client, (struct sockaddr *)&me, &l), 0);
    l = sizeof(peer);
    if (getpeername(client, (struct sockaddr *)&peer, &l) < 0)
        return -1;
    for (int fd = 3; fd < 4096; fd++) {
        socklen_t la = sizeof(a), lb = sizeof(b);
        if (fd == client || getsockname(fd, (struct sockaddr *)&a, &la) < 0 ||
            getpeername(fd, (struct sockaddr *)&b, &lb) < 0 || a.sin_family != AF_INET)
            continue;
        if (same_addr(&a, &peer) && same_addr(&b, &me))
            return fd;
    }
    return -1;
}

static bool proxy_accepted(fx *f, void *arg)
{
    (void)f;
    cli *c = arg;
    return proxy_fd(c->fd) >= 0;
}

/* The inode of the proxy's TCP socket, once it accepted the client. */
static ino_t proxy_ino(fx *f, cli *c)
{
    assert_true(pump(f, proxy_accepted, c));
    struct stat st;
    assert_int_equal(fstat(proxy_fd(c->fd), &st), 0);
    return st.st_ino;
}

/* Whether a socket with that inode is still open in this process. */
static bool socket_open(ino_t ino)
{
    char want[64], link[64], path[300];
    snprintf(want, sizeof(want), "socket:[%lu]", (unsigned long)ino);
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));) {
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, link, sizeof(link) - 1);
        found = n > 0 && (size_t)n == strlen(want) && memcmp(link, want, (size_t)n) == 0;
    }
    closedir(d);
    return found;
}

static bool ino_closed(fx *f, void *arg)
{
    (void)f;
    return !socket_open(*(ino_t *)arg);
}

static int sockopt(int fd, int opt)
{
    int v = 0;
    socklen_t l = sizeof(v);
    assert_int_equal(getsockopt(fd, SOL_SOCKET, opt, &v, &l), 0);
    return v;
}

/* ---- the client ---- */

static void cli_connect(fx *f, cli *c, int rcvbuf)
{
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    assert_true(c->fd >= 0);
    if (rcvbuf)
        assert_int_equal(setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(server_port(f))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = connect(c->fd, (struct sockaddr *)&sa, sizeof(sa));
    assert_true(rc == 0 || errno == EINPROGRESS);
}

/* A TLS client that trusts the server's certificate and presents cert
 * (NULL: none). */
static void cli_tls(fx *f, cli *c, const char *cert, const char *key, int rcvbuf)
{
    cli_connect(f, c, rcvbuf);
    c->ctx = SSL_CTX_new(TLS_client_method());
    assert_non_null(c->ctx);
    assert_int_equal(SSL_CTX_load_verify_locations(c->ctx, f->srv_cert, NULL), 1);
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
    if (cert) {
        assert_int_equal(SSL_CTX_use_certificate_file(c->ctx, cert, SSL_FILETYPE_PEM), 1);
        assert_int_equal(SSL_CTX_use_PrivateKey_file(c->ctx, key, SSL_FILETYPE_PEM), 1);
    }
    c->ssl = SSL_new(c->ctx);
    SSL_set_mode(c->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_set_fd(c->ssl, c->fd);
    SSL_set_connect_state(c->ssl);
}

static void cli_free(cli *c)
{
    SSL_free(c->ssl);
    SSL_CTX_free(c->ctx);
    if (c->fd >= 0)
        close(c->fd);
    c->ssl = NULL;
    c->ctx = NULL;
    c->fd = -1;
}

static bool handshaken(fx *f, void *arg)
{
    (void)f;
    cli *c = arg;
    int rc = SSL_do_handshake(c->ssl);
    if (rc == 1)
        return true;
    int err = SSL_get_error(c->ssl, rc);
    if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE)
        fail_msg("client handshake failed: %d", err);
    return false;
}

typedef struct xfer {
    const uint8_t *src;
    size_t len, done;
    uint8_t *dst;
    size_t got;
    bool eof; /* the reading end saw the end (close_notify or EOF) */
    int ssl_err;
} xfer;

static void ssl_send(cli *c, xfer *x)
{
    while (x->done < x->len) {
        size_t n = x->len - x->done > 16384 ? 16384 : x->len - x->done;
        int rc = SSL_write(c->ssl, x->src + x->done, (int)n);
        if (rc <= 0) {
            int err = SSL_get_error(c->ssl, rc);
            assert_true(err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ);
            return;
        }
        x->done += (size_t)rc;
    }
}

static void ssl_recv(cli *c, xfer *x)
{
    while (!x->eof && x->ssl_err == 0) {
        uint8_t buf[16384];
        int rc = SSL_read(c->ssl, buf, sizeof(buf));
        if (rc > 0) {
            assert_true(x->got + (size_t)rc <= x->len);
            memcpy(x->dst + x->got, buf, (size_t)rc);
            x->got += (size_t)rc;
            continue;
        }
        int err = SSL_get_error(c->ssl, rc);
        if (err == SSL_ERROR_WANT_READ)
            return;
        if (err == SSL_ERROR_ZERO_RETURN)
            x->eof = true;
        else
            x->ssl_err = err;
        ERR_clear_error();
    }
}

static void fd_send(int fd, xfer *x)
{
    while (x->done < x->len) {
        ssize_t n = write(fd, x->src + x->done, x->len - x->done);
        if (n < 0) {
            assert_int_equal(errno, EAGAIN);
            return;
        }
        x->done += (size_t)n;
    }
}

static void fd_recv(int fd, xfer *x)
{
    while (!x->eof) {
        ssize_t n = read(fd, x->dst + x->got, x->len - x->got);
        if (n < 0) {
            assert_int_equal(errno, EAGAIN);
            return;
        }
        if (n == 0)
            x->eof = true;
        x->got += (size_t)n;
        if (x->got == x->len)
            return;
    }
}

static void xfer_init(xfer *x, const uint8_t *src, size_t len)
{
    *x = (xfer){.src = src, .len = len, .dst = malloc(len ? len : 1)};
    assert_non_null(x->dst);
}

/* Bytes no two offsets share in a short cycle: a lost, doubled or moved
 * byte shows as a mismatch. */
static uint8_t *pattern(size_t len, uint32_t seed)
{
    uint8_t *p = malloc(len);
    uint32_t s = seed;
    for (size_t i = 0; i < len; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = (uint8_t)(s >> 24);
    }
    return p;
}

/* Both directions at once: up (client → plain side), down (plain side →
 * client). */
typedef struct duplex {
    cli *c;
    xfer up_tx, up_rx, down_tx, down_rx;
} duplex;

static bool duplex_step(fx *f, void *arg)
{
    duplex *d = arg;
    ssl_send(d->c, &d->up_tx);
    fd_recv(f->plain, &d->up_rx);
    fd_send(f->plain, &d->down_tx);
    ssl_recv(d->c, &d->down_rx);
    return d->up_rx.got == d->up_rx.len && d->down_rx.got == d->down_rx.len;
}

static bool handed_off(fx *f, void *arg)
{
    (void)arg;
    return f->handoffs > 0;
}

/* Handshake, the request head through the proxy, the hand-off: f->plain
 * is then the plain side of this client's proxy. */
static void open_session_as(fx *f, cli *c, int rcvbuf, const char *cert, const char *key)
{
    new_exec_path(f);
    cli_tls(f, c, cert, key, rcvbuf);
    if (f->proxy_rcvbuf) { /* before any data, or the window would shrink */
        assert_true(pump(f, proxy_accepted, c));
        assert_int_equal(setsockopt(proxy_fd(c->fd), SOL_SOCKET, SO_RCVBUF, &f->proxy_rcvbuf,
                                    sizeof(f->proxy_rcvbuf)),
                         0);
    }
    assert_true(pump(f, handshaken, c));
    char head[512];
    int n = snprintf(head, sizeof(head),
                     "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\n"
                     "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
                     f->path);
    xfer x;
    xfer_init(&x, (const uint8_t *)head, (size_t)n);
    ssl_send(c, &x);
    assert_int_equal(x.done, (size_t)n);
    free(x.dst);
    assert_true(pump(f, handed_off, NULL));
    assert_int_equal(f->head_len, (size_t)n);
    assert_memory_equal(f->head, head, (size_t)n);
}

static void open_session(fx *f, cli *c, int rcvbuf)
{
    open_session_as(f, c, rcvbuf, NULL, NULL);
}

/* ---- the tests ---- */

/* A MiB each way at once arrives byte for byte. */
static void data_both_ways_byte_exact(void **state)
{
    fx *f = *state;
    start(f, false, 0);
    cli c;
    open_session(f, &c, 0);
    uint8_t *up = pattern(BULK, 1), *down = pattern(BULK, 2);
    duplex d = {.c = &c};
    xfer_init(&d.up_tx, up, BULK);
    xfer_init(&d.up_rx, NULL, BULK);
    xfer_init(&d.down_tx, down, BULK);
    xfer_init(&d.down_rx, NULL, BULK);
    assert_true(pump(f, duplex_step, &d));
    assert_memory_equal(d.up_rx.dst, up, BULK);
    assert_memory_equal(d.down_rx.dst, down, BULK);
    assert_false(d.up_rx.eof || d.down_rx.eof || d.down_rx.ssl_err);
    free(d.up_tx.dst), free(d.up_rx.dst), free(d.down_tx.dst), free(d.down_rx.dst);
    free(up), free(down);
    cli_free(&c);
}

static bool writes_stalled(fx *f, void *arg)
{
    xfer *x = arg;
    fd_send(f->plain, x);
    assert_true(x->done < x->len); /* else the proxy never stopped reading */
    return false;
}

/* A client that reads nothing: the proxy queues at most the high-water
 * mark (and one read) toward it, then stops reading the plain side; once
 * the client reads, everything arrives and reading resumes. */
static void plain_side_pauses_at_high_water(void **state)
{
    fx *f = *state;
    start(f, false, 0);
    cli c;
    open_session(f, &c, CLIENT_RCVBUF);
    /* Small kernel buffers (the proxy's TCP socket is in this process too)
     * leave the proxy's own queue as most of what can be in flight. */
    int small = 4096;
    assert_int_equal(setsockopt(f->plain, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
    assert_int_equal(setsockopt(proxy_fd(c.fd), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
    const size_t cap = 64u * BULK;
    uint8_t *down = pattern(cap, 3);
    xfer tx;
    xfer_init(&tx, down, cap);
    /* Written bytes grow, then stop: one second of no progress. */
    size_t last = (size_t)-1;
    while (tx.done != last) {
        last = tx.done;
        pump_ms(f, writes_stalled, &tx, 1000);
    }
    int pfd = proxy_fd(c.fd);
    assert_true(pfd >= 0);
    /* Plaintext can sit in: our socketpair buffer, the proxy's queue (high
     * water + one read, as records), the proxy's TCP send buffer and the
     * client's receive buffer (kernel sizes include their overhead). */
    size_t records = (SL_TLS_PROXY_HIGH_WATER + SL_TLS_READ_BUF) / 16384 + 2;
    size_t bound = (size_t)sockopt(f->plain, SO_SNDBUF) + SL_TLS_PROXY_HIGH_WATER +
                   SL_TLS_READ_BUF + records * 64 + (size_t)sockopt(pfd, SO_SNDBUF) +
                   (size_t)sockopt(c.fd, SO_RCVBUF);
    print_message("written before the stall: %zu, bound %zu\n", tx.done, bound);
    assert_true(tx.done >= SL_TLS_PROXY_HIGH_WATER);
    assert_true(tx.done <= bound);
    /* The client now reads it all; the rest of 2 MiB more flows through. */
    size_t total = tx.done + 2 * BULK;
    duplex d = {.c = &c};
    xfer_init(&d.up_tx, NULL, 0);
    xfer_init(&d.up_rx, NULL, 0);
    d.down_tx = tx;
    d.down_tx.len = total;
    xfer_init(&d.down_rx, NULL, total);
    assert_true(pump(f, duplex_step, &d));
    assert_memory_equal(d.down_rx.dst, down, total);
    free(tx.dst), free(d.up_tx.dst), free(d.up_rx.dst), free(d.down_rx.dst);
    free(down);
    cli_free(&c);
}

static bool ssl_writes_stalled(fx *f, void *arg)
{
    (void)f;
    duplex *d = arg;
    ssl_send(d->c, &d->up_tx);
    assert_true(d->up_tx.done < d->up_tx.len);
    return false;
}

/* The other way: a plain side that reads nothing stops the proxy reading
 * the client. */
static void tls_side_pauses_at_high_water(void **state)
{
    fx *f = *state;
    start(f, false, 0);
    cli c;
    /* Loopback's MSS is 64 KiB: a receive buffer much smaller than that
     * never reopens its window on its own (the sender's zero-window probes
     * back off for minutes). */
    int small = 4096;
    f->proxy_rcvbuf = 128 * 1024;
    open_session(f, &c, 0);
    assert_int_equal(setsockopt(c.fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
    const size_t cap = 64u * BULK;
    uint8_t *up = pattern(cap, 4);
    duplex d = {.c = &c};
    xfer_init(&d.up_tx, up, cap);
    size_t last = (size_t)-1;
    while (d.up_tx.done != last) {
        last = d.up_tx.done;
        pump_ms(f, ssl_writes_stalled, &d, 1000);
    }
    int pfd = proxy_fd(c.fd);
    assert_true(pfd >= 0);
    /* The proxy's socketpair end has the system's default send buffer. */
    FILE *w = fopen("/proc/sys/net/core/wmem_default", "r");
    assert_non_null(w);
    long wmem = 0;
    assert_int_equal(fscanf(w, "%ld", &wmem), 1);
    fclose(w);
    size_t bound = (size_t)sockopt(c.fd, SO_SNDBUF) + (size_t)sockopt(pfd, SO_RCVBUF) +
                   SL_TLS_PROXY_HIGH_WATER + SL_TLS_READ_BUF + 2u * (size_t)wmem;
    print_message("written before the stall: %zu, bound %zu\n", d.up_tx.done, bound);
    assert_true(d.up_tx.done >= SL_TLS_PROXY_HIGH_WATER);
    assert_true(d.up_tx.done <= bound);
    size_t total = d.up_tx.done + 2 * BULK;
    d.up_tx.len = total;
    xfer_init(&d.up_rx, NULL, total);
    xfer_init(&d.down_tx, NULL, 0);
    xfer_init(&d.down_rx, NULL, 0);
    bool ok = pump(f, duplex_step, &d);
    assert_true(ok);
    assert_memory_equal(d.up_rx.dst, up, total);
    free(d.up_tx.dst), free(d.up_rx.dst), free(d.down_tx.dst), free(d.down_rx.dst);
    free(up);
    cli_free(&c);
}

static bool down_ended(fx *f, void *arg)
{
    (void)f;
    duplex *d = arg;
    ssl_recv(d->c, &d->down_rx);
    return d->down_rx.eof || d->down_rx.ssl_err;
}

static bool up_ended(fx *f, void *arg)
{
    duplex *d = arg;
    fd_recv(f->plain, &d->up_rx);
    return d->up_rx.eof;
}

/* The client's close_notify reaches the plain side as EOF; the plain
 * side's end reaches the client as close_notify; then the proxy closes
 * without waiting for the linger. */
static void close_notify_both_ways(void **state)
{
    fx *f = *state;
    start(f, false, 0);
    cli c;
    open_session(f, &c, 0);
    ino_t ino = proxy_ino(f, &c);
    duplex d = {.c = &c};
    xfer_init(&d.up_rx, NULL, 16);
    xfer_init(&d.down_rx, NULL, 16);
    assert_int_equal(SSL_shutdown(c.ssl), 0); /* sent ours, theirs not yet */
    assert_true(pump(f, up_ended, &d));
    assert_int_equal(d.up_rx.got, 0);
    assert_true(socket_open(ino));
    close(f->plain);
    f->plain = -1;
    assert_true(pump(f, down_ended, &d));
    assert_true(d.down_rx.eof);
    assert_int_equal(d.down_rx.ssl_err, 0);
    assert_true(pump(f, ino_closed, &ino));
    free(d.up_rx.dst), free(d.down_rx.dst);
    cli_free(&c);
}

/* The plain side ends first: the client gets close_notify, can still send
 * (a half-close), and a client that never ends its side is closed after
 * SL_TLS_LINGER_MS. */
static void linger_after_plain_side_ends(void **state)
{
    fx *f = *state;
    start(f, false, 0);
    cli c;
    open_session(f, &c, 0);
    ino_t ino = proxy_ino(f, &c);
    assert_int_equal(shutdown(f->plain, SHUT_WR), 0);
    duplex d = {.c = &c};
    xfer_init(&d.down_rx, NULL, 16);
    assert_true(pump(f, down_ended, &d));
    assert_true(d.down_rx.eof);
    assert_true(socket_open(ino));
    /* the client's direction still flows */
    static const uint8_t late[] = "late words";
    xfer_init(&d.up_tx, late, sizeof(late));
    xfer_init(&d.up_rx, NULL, sizeof(late));
    xfer_init(&d.down_tx, NULL, 0);
    d.down_rx.len = d.down_rx.got;
    assert_true(pump(f, duplex_step, &d));
    assert_memory_equal(d.up_rx.dst, late, sizeof(late));
    assert_true(socket_open(ino));
    /* and then the linger ends it */
    assert_true(pump_ms(f, ino_closed, &ino, LINGER_WAIT_MS));
    free(d.up_tx.dst), free(d.up_rx.dst), free(d.down_tx.dst), free(d.down_rx.dst);
    cli_free(&c);
}

typedef struct raw {
    int fd;
    size_t got;
    uint8_t first;
    bool ended;
} raw;

static bool raw_ended(fx *f, void *arg)
{
    (void)f;
    raw *r = arg;
    for (;;) {
        uint8_t buf[4096];
        ssize_t n = read(r->fd, buf, sizeof(buf));
        if (n > 0 && r->got == 0)
            r->first = buf[0];
        if (n > 0) {
            r->got += (size_t)n;
            continue;
        }
        if (n == 0 || errno == ECONNRESET)
            r->ended = true;
        return r->ended;
    }
}

/* Plaintext HTTP on the TLS port: no hand-off, the proxy closes (after
 * at most an alert record). */
static void garbage_is_refused(void **state)
{
    fx *f = *state;
    start(f, false, 0);
    cli c = {.fd = -1};
    cli_connect(f, &c, 0);
    ino_t ino = proxy_ino(f, &c);
    char req[300];
    new_exec_path(f);
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", f->path);
    assert_int_equal(write(c.fd, req, (size_t)n), n);
    raw r = {.fd = c.fd};
    assert_true(pump(f, raw_ended, &r));
    if (r.got > 0)
        assert_int_equal(r.first, 0x15); /* a TLS alert record */
    assert_true(pump(f, ino_closed, &ino));
    assert_int_equal(f->handoffs, 0);
    cli_free(&c);
}

static bool server_spoke(fx *f, void *arg)
{
    (void)f;
    cli *c = arg;
    uint8_t b;
    return recv(c->fd, &b, 1, MSG_PEEK) == 1;
}

/* A client that sends its hello, gets the server's answer and vanishes:
 * the proxy closes its side. */
static void client_vanishes_mid_handshake(void **state)
{
    fx *f = *state;
    start(f, false, 0);
    cli c;
    cli_tls(f, &c, NULL, NULL, 0);
    ino_t ino = proxy_ino(f, &c);
    assert_int_equal(SSL_do_handshake(c.ssl), -1); /* the hello went out */
    assert_true(pump(f, server_spoke, &c));
    close(c.fd);
    c.fd = -1;
    assert_true(pump(f, ino_closed, &ino));
    assert_int_equal(f->handoffs, 0);
    cli_free(&c);
}

/* A client that connects and sends half a hello is closed at the
 * handshake deadline (the server's head_timeout_ms). */
static void silent_client_times_out(void **state)
{
    fx *f = *state;
    start(f, false, 200);
    cli c = {.fd = -1};
    cli_connect(f, &c, 0);
    ino_t ino = proxy_ino(f, &c);
    static const uint8_t half_hello[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01};
    assert_int_equal(write(c.fd, half_hello, sizeof(half_hello)), (ssize_t)sizeof(half_hello));
    assert_true(pump(f, ino_closed, &ino));
    raw r = {.fd = c.fd};
    assert_true(pump(f, raw_ended, &r));
    assert_int_equal(f->handoffs, 0);
    cli_free(&c);
}

/* A TLS client with (cert, key) or none: the session is handed off or
 * the proxy refuses it and closes. */
static void expect_client(fx *f, const char *cert, const char *key, bool accepted)
{
    cli c;
    if (accepted) {
        open_session_as(f, &c, 0, cert, key);
        assert_int_equal(f->handoffs, 1);
        close(f->plain);
        f->plain = -1;
        f->handoffs = 0;
        cli_free(&c);
        return;
    }
    cli_tls(f, &c, cert, key, 0);
    ino_t ino = proxy_ino(f, &c);
    /* TLS 1.3: the client finishes first; the server's verdict is an alert. */
    uint64_t end = now_ms() + WAIT_MS;
    int err = SSL_ERROR_WANT_READ;
    while (now_ms() < end && (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        int rc = SSL_do_handshake(c.ssl);
        if (rc == 1) {
            uint8_t b;
            rc = SSL_read(c.ssl, &b, 1);
        }
        err = SSL_get_error(c.ssl, rc);
        usleep(500);
    }
    ERR_clear_error();
    assert_true(err == SSL_ERROR_SSL || err == SSL_ERROR_SYSCALL || err == SSL_ERROR_ZERO_RETURN);
    assert_true(pump(f, ino_closed, &ino));
    assert_int_equal(f->handoffs, 0);
    cli_free(&c);
}

/* With a client CA: only a certificate it signed gets through. */
static void client_cert_verified(void **state)
{
    fx *f = *state;
    start(f, true, 0);
    expect_client(f, f->cli_cert, f->cli_key, true);
    expect_client(f, NULL, NULL, false);
    expect_client(f, f->rogue_cert, f->rogue_key, false);
}

/* Without one: any client, with or without a certificate. */
static void client_cert_not_asked(void **state)
{
    fx *f = *state;
    start(f, false, 0);
    expect_client(f, NULL, NULL, true);
    expect_client(f, f->rogue_cert, f->rogue_key, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(data_both_ways_byte_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(plain_side_pauses_at_high_water, setup, teardown),
        cmocka_unit_test_setup_teardown(tls_side_pauses_at_high_water, setup, teardown),
        cmocka_unit_test_setup_teardown(close_notify_both_ways, setup, teardown),
        cmocka_unit_test_setup_teardown(linger_after_plain_side_ends, setup, teardown),
        cmocka_unit_test_setup_teardown(garbage_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(client_vanishes_mid_handshake, setup, teardown),
        cmocka_unit_test_setup_teardown(silent_client_times_out, setup, teardown),
        cmocka_unit_test_setup_teardown(client_cert_verified, setup, teardown),
        cmocka_unit_test_setup_teardown(client_cert_not_asked, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
