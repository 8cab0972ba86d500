/* mon-client: a tiny client of the sluice-mon control protocol for tests
 * (Node has no SEQPACKET sockets).
 *
 *   mon-client [options] SOCKET [REQUEST-JSON...]
 *
 * Connects, says hello, sends each request (an "id" is added when
 * missing) and prints every reply and event as one JSON line on the JSON
 * fd (default 1). A reply with ok=false ends the run with exit 1. With
 * --relay, the fds of the last reply are relayed to this process's stdio:
 * stdin -> "stdin"/"tty", "stdout"/"tty" -> stdout, "stderr" -> stderr,
 * until every output reached EOF. --no-read keeps the output fds unread
 * (a client that falls behind). --wait-event TYPE keeps the connection
 * until an event of that type (and --match KEY=VALUE) arrived. --no-hello
 * skips the hello; --raw sends each request byte for byte (bad packets).
 * Exit: 0 done, 1 request failed, 2 usage/connection, 3 timeout. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "mon_proto.h"
#include "sluice/error.h"

#define RELAY_CHUNK 65536

typedef struct client {
    int jfd;
    bool relay, no_read, no_hello, raw;
    const char *wait_type, *match_key, *match_value;
    bool event_seen;
    int timeout_ms;
    struct timespec start;
    sl_mon_conn conn;
    int fds[SL_MON_MAX_FDS];
    size_t nfds;
    json_t *last_reply;
} client;

static int elapsed_ms(const client *c)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int)((now.tv_sec - c->start.tv_sec) * 1000 +
                 (now.tv_nsec - c->start.tv_nsec) / 1000000);
}

static int remaining(const client *c)
{
    int left = c->timeout_ms - elapsed_ms(c);
    return left > 0 ? left : 0;
}

static void print_json(client *c, const json_t *m)
{
    char *s = json_dumps(m, JSON_COMPACT);
    if (s) {
        dprintf(c->jfd, "%s\n", s);
        free(s);
    }
}

static bool matches(const client *c, const json_t *ev)
{
    if (!c->wait_type || !json_is_string(json_object_get(ev, "type")) ||
        strcmp(sl_mon_str(ev, "type"), c->wait_type) != 0)
        return false;
    if (!c->match_key)
        return true;
    const json_t *v = json_object_get(ev, c->match_key);
    char buf[64];
    const char *s = json_string_value(v);
    if (json_is_integer(v)) {
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
        s = buf;
    }
    return s && strcmp(s, c->match_value) == 0;
}

/* Receives one message (waiting at most the time left). 0, or -1. */
static int recv_one(client *c, json_t **msg)
{
    struct pollfd p = {.fd = c->conn.fd, .events = POLLIN};
    int n = poll(&p, 1, remaining(c));
    if (n == 0) {
        fprintf(stderr, "mon-client: timeout\n");
        exit(3);
    }
    size_t nfds;
    int fds[SL_MON_MAX_FDS];
    int rc = sl_mon_conn_recv(&c->conn, msg, fds, &nfds);
    if (rc != SL_OK) {
        fprintf(stderr, "mon-client: receive: %s\n", sl_strerror(rc));
        return -1;
    }
    print_json(c, *msg);
    if (matches(c, *msg))
        c->event_seen = true;
    if (nfds) {
        for (size_t i = 0; i < c->nfds; i++)
            close(c->fds[i]);
        memcpy(c->fds, fds, nfds * sizeof(int));
        c->nfds = nfds;
    }
    return 0;
}

/* Waits for the reply with id want (any reply when any). 0 when ok, 1 when
 * not, 2 when the connection ended first. */
static int wait_reply(client *c, json_int_t want, bool any)
{
    for (;;) {
        json_t *m;
        if (recv_one(c, &m) < 0)
            return 2;
        const char *type = sl_mon_str(m, "type");
        if (type && strcmp(type, "reply") == 0 &&
            (any || json_integer_value(json_object_get(m, "id")) == want)) {
            int ok = json_is_true(json_object_get(m, "ok"));
            json_decref(c->last_reply);
            c->last_reply = m;
            return ok ? 0 : 1;
        }
        json_decref(m);
    }
}

/* Sends req (an "id" added when missing) and waits for its reply. */
static int call(client *c, json_t *req, json_int_t id)
{
    if (!json_object_get(req, "id"))
        json_object_set_new(req, "id", json_integer(id));
    int rc = sl_mon_conn_send(&c->conn, req, NULL, 0);
    if (rc != SL_OK) {
        fprintf(stderr, "mon-client: send: %s\n", sl_strerror(rc));
        return 2;
    }
    return wait_reply(c, json_integer_value(json_object_get(req, "id")), false);
}

/* Sends text as one packet, byte for byte, and waits for any reply. */
static int call_raw(client *c, const char *text)
{
    if (send(c->conn.fd, text, strlen(text), MSG_NOSIGNAL) < 0) {
        fprintf(stderr, "mon-client: send: %s\n", strerror(errno));
        return 2;
    }
    return wait_reply(c, 0, true);
}

static int fd_named(const client *c, const char *name)
{
    int i = c->last_reply ? sl_mon_fd_index(c->last_reply, name) : -1;
    return i >= 0 && (size_t)i < c->nfds ? c->fds[i] : -1;
}

static bool copy(int from, int to)
{
    char buf[RELAY_CHUNK];
    ssize_t n = read(from, buf, sizeof(buf));
    if (n <= 0)
        return false; /* EOF, or EIO from a terminal whose other side closed */
    for (ssize_t off = 0; off < n;) {
        ssize_t w = write(to, buf + off, (size_t)(n - off));
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return false;
        off += w;
    }
    return true;
}

static int relay(client *c)
{
    int tty = fd_named(c, "tty");
    int in = tty >= 0 ? tty : fd_named(c, "stdin");
    int out = tty >= 0 ? tty : fd_named(c, "stdout"), err = fd_named(c, "stderr");
    bool in_open = c->relay && in >= 0;
    bool out_open = c->relay && !c->no_read && out >= 0,
         err_open = c->relay && !c->no_read && err >= 0;
    while (out_open || err_open || (c->wait_type && !c->event_seen)) {
        struct pollfd p[4] = {{.fd = c->conn.fd, .events = POLLIN},
                              {.fd = in_open ? 0 : -1, .events = POLLIN},
                              {.fd = out_open ? out : -1, .events = POLLIN},
                              {.fd = err_open ? err : -1, .events = POLLIN}};
        int n = poll(p, 4, remaining(c));
        if (n == 0) {
            fprintf(stderr, "mon-client: timeout\n");
            return 3;
        }
        if (p[0].revents) {
            json_t *m;
            if (recv_one(c, &m) < 0)
                return 2;
            json_decref(m);
        }
        if (p[1].revents && !copy(0, in)) {
            in_open = false;
            if (tty < 0)
                close(in), c->fds[sl_mon_fd_index(c->last_reply, "stdin")] = -1;
        }
        if (p[2].revents && !copy(out, 1))
            out_open = false;
        if (p[3].revents && !copy(err, 2))
            err_open = false;
    }
    return 0;
}

static int connect_to(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path))
        return -1;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int options(int argc, char **argv, client *c)
{
    static const struct option longs[] = {{"json-fd", required_argument, NULL, 'j'},
                                          {"relay", no_argument, NULL, 'r'},
                                          {"no-read", no_argument, NULL, 'n'},
                                          {"no-hello", no_argument, NULL, 'H'},
                                          {"raw", no_argument, NULL, 'R'},
                                          {"wait-event", required_argument, NULL, 'w'},
                                          {"match", required_argument, NULL, 'm'},
                                          {"timeout", required_argument, NULL, 't'},
                                          {NULL, 0, NULL, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (ch) {
        case 'j':
            c->jfd = atoi(optarg);
            break;
        case 'r':
            c->relay = true;
            break;
        case 'n':
            c->no_read = true;
            break;
        case 'H':
            c->no_hello = true;
            break;
        case 'R':
            c->raw = true;
            break;
        case 'w':
            c->wait_type = optarg;
            break;
        case 't':
            c->timeout_ms = atoi(optarg);
            break;
        case 'm': {
            char *eq = strchr(optarg, '=');
            if (!eq)
                return -1;
            *eq = '\0';
            c->match_key = optarg;
            c->match_value = eq + 1;
            break;
        }
        default:
            return -1;
        }
    }
    return optind < argc ? 0 : -1;
}

int main(int argc, char **argv)
{
    client c = {.jfd = 1, .timeout_ms = 30000};
    clock_gettime(CLOCK_MONOTONIC, &c.start);
    if (options(argc, argv, &c) < 0) {
        fprintf(stderr,
                "usage: mon-client [--json-fd N] [--relay] [--no-read] [--no-hello] [--raw] "
                "[--wait-event TYPE "
                "[--match KEY=VALUE]] [--timeout MS] SOCKET [REQUEST-JSON...]\n");
        return 2;
    }
    int fd = connect_to(argv[optind]);
    if (fd < 0) {
        fprintf(stderr, "mon-client: connect %s: %s\n", argv[optind], strerror(errno));
        return 2;
    }
    sl_mon_conn_init(&c.conn, fd);
    json_int_t id = 1;
    int rc = 0;
    if (!c.no_hello) {
        json_t *hello = json_pack("{s:s, s:i}", "type", "hello", "version", SL_MON_PROTO_VERSION);
        rc = call(&c, hello, id++);
        json_decref(hello);
    }
    for (int i = optind + 1; i < argc && rc == 0; i++) {
        json_t *req = c.raw ? NULL : json_loads(argv[i], 0, NULL);
        if (c.raw) {
            rc = call_raw(&c, argv[i]);
        } else if (!json_is_object(req)) {
            fprintf(stderr, "mon-client: not a JSON object: %s\n", argv[i]);
            rc = 2;
        } else {
            rc = call(&c, req, id++);
        }
        json_decref(req);
    }
    if (rc == 0)
        rc = relay(&c);
    for (size_t i = 0; i < c.nfds; i++)
        if (c.fds[i] >= 0)
            close(c.fds[i]);
    json_decref(c.last_reply);
    sl_mon_conn_fini(&c.conn);
    close(fd);
    return rc;
}
