#include "mon_proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sluice/error.h"

struct sl_mon_packet {
    sl_mon_packet *next;
    size_t len;
    size_t nfds;
    int fds[SL_MON_MAX_FDS];
    char data[];
};

static void close_fds(const int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* "fds" must name exactly nfds fds with strings, or be absent when none. */
static bool fds_match(const json_t *msg, size_t nfds)
{
    const json_t *a = json_object_get(msg, "fds");
    if (!a)
        return nfds == 0;
    if (!json_is_array(a) || json_array_size(a) != nfds)
        return false;
    for (size_t i = 0; i < nfds; i++)
        if (!json_is_string(json_array_get(a, i)))
            return false;
    return true;
}

static bool well_formed(const json_t *msg, size_t nfds)
{
    return json_is_object(msg) && json_is_string(json_object_get(msg, "type")) &&
           nfds <= SL_MON_MAX_FDS && fds_match(msg, nfds);
}

int sl_mon_encode(const json_t *msg, size_t nfds, char **out, size_t *len)
{
    if (!msg || !well_formed(msg, nfds))
        return SL_ERR_INVAL;
    char *s = json_dumps(msg, JSON_COMPACT);
    if (!s)
        return SL_ERR_NOMEM;
    size_t n = strlen(s);
    if (n > SL_MON_MAX_MESSAGE) {
        free(s);
        return SL_ERR_TOO_LARGE;
    }
    *out = s;
    *len = n;
    return SL_OK;
}

int sl_mon_decode(const void *buf, size_t len, size_t nfds, json_t **msg)
{
    *msg = NULL;
    if (len > SL_MON_MAX_MESSAGE)
        return SL_ERR_TOO_LARGE;
    json_error_t err;
    json_t *m = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
    if (!m)
        return SL_ERR_PROTO;
    if (!well_formed(m, nfds)) {
        json_decref(m);
        return SL_ERR_PROTO;
    }
    *msg = m;
    return SL_OK;
}

void sl_mon_conn_init(sl_mon_conn *c, int fd)
{
    memset(c, 0, sizeof(*c));
    c->fd = fd;
}

static void pop(sl_mon_conn *c)
{
    sl_mon_packet *p = c->head;
    c->head = p->next;
    if (!c->head)
        c->tail = NULL;
    c->queued--;
    close_fds(p->fds, p->nfds);
    free(p);
}

void sl_mon_conn_fini(sl_mon_conn *c)
{
    while (c->head)
        pop(c);
    free(c->rbuf);
    c->rbuf = NULL;
}

static int send_one(int fd, const sl_mon_packet *p)
{
    struct iovec iov = {.iov_base = (void *)p->data, .iov_len = p->len};
    union {
        char buf[CMSG_SPACE(sizeof(int) * SL_MON_MAX_FDS)];
        struct cmsghdr align;
    } ctl;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (p->nfds > 0) {
        memset(&ctl, 0, sizeof(ctl));
        mh.msg_control = ctl.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * p->nfds);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * p->nfds);
        memcpy(CMSG_DATA(cm), p->fds, sizeof(int) * p->nfds);
    }
    for (;;) {
        ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
        if (n >= 0)
            return SL_OK;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
            return SL_ERR_WOULDBLOCK;
        if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)
            return SL_ERR_CLOSED;
        return SL_ERR_SYS;
    }
}

int sl_mon_conn_flush(sl_mon_conn *c)
{
    while (c->head) {
        int rc = send_one(c->fd, c->head);
        if (rc != SL_OK)
            return rc;
        pop(c);
    }
    return SL_OK;
}

int sl_mon_conn_send(sl_mon_conn *c, const json_t *msg, const int *fds, size_t nfds)
{
    if (nfds > SL_MON_MAX_FDS) {
        close_fds(fds, nfds);
        return SL_ERR_INVAL;
    }
    char *s;
    size_t len;
    int rc = c->queued >= SL_MON_MAX_QUEUED ? SL_ERR_FULL : sl_mon_encode(msg, nfds, &s, &len);
    if (rc != SL_OK) {
        close_fds(fds, nfds);
        return rc;
    }
    sl_mon_packet *p = malloc(sizeof(*p) + len);
    if (!p) {
        free(s);
        close_fds(fds, nfds);
        return SL_ERR_NOMEM;
    }
    p->next = NULL;
    p->len = len;
    p->nfds = nfds;
    memcpy(p->data, s, len);
    free(s);
    if (nfds)
        memcpy(p->fds, fds, sizeof(int) * nfds);
    if (c->tail)
        c->tail->next = p;
    else
        c->head = p;
    c->tail = p;
    c->queued++;
    rc = sl_mon_conn_flush(c);
    return rc == SL_ERR_WOULDBLOCK ? SL_OK : rc;
}

/* Collects the SCM_RIGHTS fds of mh into fds; extras beyond the limit are
 * closed. Returns how many were received in all. */
static size_t take_fds(struct msghdr *mh, int *fds, size_t *nfds)
{
    size_t total = 0;
    *nfds = 0;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            total++;
            if (*nfds < SL_MON_MAX_FDS)
                fds[(*nfds)++] = fd;
            else
                close(fd);
        }
    }
    return total;
}

int sl_mon_conn_recv(sl_mon_conn *c, json_t **msg, int *fds, size_t *nfds)
{
    *msg = NULL;
    *nfds = 0;
    if (!c->rbuf && !(c->rbuf = malloc(SL_MON_MAX_MESSAGE)))
        return SL_ERR_NOMEM;
    struct iovec iov = {.iov_base = c->rbuf, .iov_len = SL_MON_MAX_MESSAGE};
    union {
        char buf[CMSG_SPACE(sizeof(int) * SL_MON_MAX_FDS)];
        struct cmsghdr align;
    } ctl;
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl)};
    ssize_t n;
    do
        n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return SL_ERR_WOULDBLOCK;
        return errno == ECONNRESET ? SL_ERR_CLOSED : SL_ERR_SYS;
    }
    size_t total = take_fds(&mh, fds, nfds);
    int rc = SL_OK;
    if (n == 0)
        rc = SL_ERR_CLOSED; /* SEQPACKET: a zero-length read is the end */
    else if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || total > SL_MON_MAX_FDS)
        rc = SL_ERR_TOO_LARGE;
    else
        rc = sl_mon_decode(c->rbuf, (size_t)n, *nfds, msg);
    if (rc != SL_OK) {
        close_fds(fds, *nfds);
        *nfds = 0;
    }
    return rc;
}

const char *sl_mon_str(const json_t *msg, const char *key)
{
    return json_string_value(json_object_get(msg, key));
}

int sl_mon_int(const json_t *msg, const char *key, int64_t min, int64_t max, int64_t def,
               int64_t *out)
{
    const json_t *v = json_object_get(msg, key);
    if (!v) {
        *out = def;
        return SL_OK;
    }
    if (!json_is_integer(v))
        return SL_ERR_PROTO;
    json_int_t x = json_integer_value(v);
    if (x < min || x > max)
        return SL_ERR_PROTO;
    *out = x;
    return SL_OK;
}

int sl_mon_bool(const json_t *msg, const char *key, bool def, bool *out)
{
    const json_t *v = json_object_get(msg, key);
    if (!v) {
        *out = def;
        return SL_OK;
    }
    if (!json_is_boolean(v))
        return SL_ERR_PROTO;
    *out = json_is_true(v);
    return SL_OK;
}

bool sl_mon_valid_id(const char *id)
{
    if (!id || !*id || *id == '.')
        return false;
    size_t n = 0;
    for (const char *p = id; *p; p++, n++) {
        char ch = *p;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-';
        if (!ok || n >= SL_MON_MAX_ID)
            return false;
    }
    return true;
}

int sl_mon_fd_index(const json_t *msg, const char *name)
{
    const json_t *a = json_object_get(msg, "fds");
    size_t n = json_array_size(a);
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(a, i));
        if (s && strcmp(s, name) == 0)
            return (int)i;
    }
    return -1;
}

json_t *sl_mon_reply(const json_t *req, bool ok, const char *err)
{
    json_t *r = json_object();
    if (!r)
        return NULL;
    const json_t *id = json_object_get(req, "id");
    int rc = json_object_set_new(r, "type", json_string("reply"));
    rc |= json_object_set_new(r, "id", id ? json_deep_copy(id) : json_null());
    rc |= json_object_set_new(r, "ok", json_boolean(ok));
    if (err)
        rc |= json_object_set_new(r, "error", json_string(err));
    if (rc) {
        json_decref(r);
        return NULL;
    }
    return r;
}
