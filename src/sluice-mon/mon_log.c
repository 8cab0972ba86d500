#include "mon_log.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const stream_names[2] = {"stdout", "stderr"};

size_t sl_mon_log_timestamp(int64_t ns, char *buf)
{
    int64_t sec = ns / 1000000000, frac = ns % 1000000000;
    if (frac < 0) {
        frac += 1000000000;
        sec--;
    }
    time_t t = (time_t)sec;
    struct tm tm;
    if (!gmtime_r(&t, &tm))
        memset(&tm, 0, sizeof(tm));
    size_t n = strftime(buf, SL_MON_LOG_TS_MAX, "%Y-%m-%dT%H:%M:%S", &tm);
    if (frac) {
        char digits[16];
        snprintf(digits, sizeof(digits), "%09lld", (long long)frac);
        size_t d = 9;
        while (digits[d - 1] == '0')
            d--;
        buf[n++] = '.';
        memcpy(buf + n, digits, d);
        n += d;
    }
    buf[n++] = 'Z';
    buf[n] = '\0';
    return n;
}

static int open_log(const char *path, sl_error *e)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
    if (fd < 0 && errno == ENOENT) {
        char *copy = strdup(path);
        if (copy && sl_mkdir_p(dirname(copy), 0755, NULL) == 0)
            fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
        free(copy);
    }
    if (fd < 0)
        return sl_error_set(e, errno, "open log %s", path);
    return fd;
}

int sl_mon_log_open(sl_mon_log *l, const char *path, size_t line_max, sl_error *e)
{
    memset(l, 0, sizeof(*l));
    l->fd = -1;
    l->line_max = line_max ? line_max : SL_MON_LOG_LINE_MAX;
    sl_bufq_init(&l->out);
    l->pend[0] = malloc(l->line_max);
    l->pend[1] = malloc(l->line_max);
    if (!l->pend[0] || !l->pend[1]) {
        sl_mon_log_close(l);
        return sl_error_set(e, ENOMEM, "log buffers");
    }
    if (!path || !*path)
        return 0;
    if (!(l->path = strdup(path))) {
        sl_mon_log_close(l);
        return sl_error_set(e, ENOMEM, "log path");
    }
    if ((l->fd = open_log(path, e)) < 0) {
        sl_mon_log_close(l);
        return -1;
    }
    return 0;
}

int sl_mon_log_reopen(sl_mon_log *l, sl_error *e)
{
    if (!l->path)
        return 0;
    int fd = open_log(l->path, e);
    if (fd < 0)
        return -1;
    if (l->fd >= 0)
        close(l->fd);
    l->fd = fd;
    return 0;
}

void sl_mon_log_close(sl_mon_log *l)
{
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
    free(l->pend[0]);
    free(l->pend[1]);
    free(l->path);
    l->pend[0] = l->pend[1] = NULL;
    l->path = NULL;
    sl_bufq_fini(&l->out);
}

static void record(sl_mon_log *l, const char *ts, size_t tslen, int stream, char tag,
                   const char *content, size_t len)
{
    char head[SL_MON_LOG_TS_MAX + 16];
    memcpy(head, ts, tslen);
    size_t hlen = tslen + (size_t)snprintf(head + tslen, sizeof(head) - tslen, " %s %c ",
                                           stream_names[stream], tag);
    size_t avail; /* one contiguous piece: a record is queued whole or not at all */
    uint8_t *dst = sl_bufq_reserve(&l->out, hlen + len + 1, &avail);
    if (!dst) {
        l->dropped += hlen + len + 1;
        l->dropped_records++;
        return;
    }
    memcpy(dst, head, hlen);
    memcpy(dst + hlen, content, len);
    dst[hlen + len] = '\n';
    sl_bufq_commit(&l->out, hlen + len + 1);
}

/* Bytes after the last newline among the first w bytes of iov (every
 * record ends with one, content has none): the part of an unfinished
 * record that went to the file; `carry` when there is no newline. */
static size_t unfinished(const struct iovec *iov, size_t w, size_t carry)
{
    size_t off = 0, tail = carry;
    for (int i = 0; off < w; i++) {
        size_t n = iov[i].iov_len < w - off ? iov[i].iov_len : w - off;
        const char *nl = memrchr(iov[i].iov_base, '\n', n);
        tail = nl ? n - (size_t)(nl - (const char *)iov[i].iov_base) - 1 : tail + n;
        off += n;
    }
    return tail;
}

/* Counts newlines (whole records) in what is still queued. */
static uint64_t queued_records(const sl_bufq *q)
{
    uint64_t n = 0;
    for (const sl_bufq_chunk *c = q->head; c; c = c->next)
        for (const char *p = (const char *)c->data + c->start, *end = p + (c->end - c->start);
             (p = memchr(p, '\n', (size_t)(end - p))); p++)
            n++;
    return n;
}

/* A write failed after `partial` bytes of a record went out: cut the file
 * back to the record before it, drop the rest of the call's records. */
static void write_failed(sl_mon_log *l, size_t partial, int err)
{
    if (partial > 0) {
        off_t end = lseek(l->fd, 0, SEEK_END);
        l->torn = end < (off_t)partial || ftruncate(l->fd, end - (off_t)partial) < 0;
    }
    l->dropped_records += queued_records(&l->out); /* a cut record's newline is queued */
    l->dropped += sl_bufq_len(&l->out) + partial;
    sl_bufq_consume(&l->out, sl_bufq_len(&l->out));
    l->err = err ? err : EIO;
}

/* Writes the records queued by one call, whole, or drops them (counted). */
static void write_out(sl_mon_log *l)
{
    size_t partial = 0;
    if (l->fd < 0) {
        sl_bufq_consume(&l->out, sl_bufq_len(&l->out)); /* no log */
        return;
    }
    while (sl_bufq_len(&l->out) > 0) {
        struct iovec iov[IOV_MAX < 64 ? IOV_MAX : 64];
        int cnt = sl_bufq_peek(&l->out, iov, (int)(sizeof(iov) / sizeof(iov[0])));
        ssize_t w = writev(l->fd, iov, cnt);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            write_failed(l, partial, w < 0 ? errno : 0);
            return;
        }
        partial = unfinished(iov, (size_t)w, partial);
        sl_bufq_consume(&l->out, (size_t)w);
    }
    l->err = 0;
}

/* Appends seg (no newline in it) to the pending line, cutting P records of
 * line_max bytes whenever more content follows a full buffer. */
static void add_segment(sl_mon_log *l, int s, const char *ts, size_t tslen, const char *seg,
                        size_t len)
{
    while (len > 0) {
        if (l->pend_len[s] == l->line_max) {
            record(l, ts, tslen, s, 'P', l->pend[s], l->pend_len[s]);
            l->pend_len[s] = 0;
        }
        size_t n = l->line_max - l->pend_len[s];
        if (n > len)
            n = len;
        memcpy(l->pend[s] + l->pend_len[s], seg, n);
        l->pend_len[s] += n;
        seg += n;
        len -= n;
    }
}

void sl_mon_log_add(sl_mon_log *l, int stream, const void *data, size_t len, int64_t now_ns)
{
    if (stream != SL_MON_LOG_STDOUT && stream != SL_MON_LOG_STDERR)
        return;
    char ts[SL_MON_LOG_TS_MAX];
    size_t tslen = sl_mon_log_timestamp(now_ns, ts);
    const char *p = data;
    while (len > 0) {
        const char *nl = memchr(p, '\n', len);
        size_t seg = nl ? (size_t)(nl - p) : len;
        add_segment(l, stream, ts, tslen, p, seg);
        if (!nl)
            break;
        size_t n = l->pend_len[stream];
        if (n > 0 && l->pend[stream][n - 1] == '\r')
            n--; /* "\r\n" ends a line too, as in containerd */
        record(l, ts, tslen, stream, 'F', l->pend[stream], n);
        l->pend_len[stream] = 0;
        p = nl + 1;
        len -= seg + 1;
    }
}

void sl_mon_log_cut(sl_mon_log *l, int stream, int64_t now_ns)
{
    if ((stream != SL_MON_LOG_STDOUT && stream != SL_MON_LOG_STDERR) || !l->pend_len[stream])
        return;
    char ts[SL_MON_LOG_TS_MAX];
    size_t tslen = sl_mon_log_timestamp(now_ns, ts);
    record(l, ts, tslen, stream, 'P', l->pend[stream], l->pend_len[stream]);
    l->pend_len[stream] = 0;
}

size_t sl_mon_log_queued(const sl_mon_log *l)
{
    return sl_bufq_len(&l->out);
}

void sl_mon_log_push(sl_mon_log *l)
{
    write_out(l);
}

void sl_mon_log_write(sl_mon_log *l, int stream, const void *data, size_t len, int64_t now_ns)
{
    sl_mon_log_add(l, stream, data, len, now_ns);
    write_out(l);
}

void sl_mon_log_flush(sl_mon_log *l, int stream, int64_t now_ns)
{
    sl_mon_log_cut(l, stream, now_ns);
    write_out(l);
}
