/* logs: print a container's CRI log file (protocol notes §11), as crictl
 * does: the file named by ContainerStatus.log_path is read locally. With -f
 * it is followed (rotation included) until the container stops running. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd_util.h"

#define LOGS_POLL_MS 100             /* how often a followed file is checked */
#define LOGS_STATUS_EVERY_MS 1000    /* how often the container's state is checked */
#define LOGS_MAX_LINE (1024u * 1024) /* a record longer than this is cut */

static const char logs_help[] =
    "Usage: sluicectl logs [-f] [--tail N] [-t] CONTAINER-ID\n"
    "\n"
    "Prints a container's log (stdout records to stdout, stderr records to\n"
    "stderr), read from the CRI log file the runtime writes.\n"
    "\n"
    "  -f, --follow       keep printing new lines until the container stops\n"
    "      --tail N       only the last N lines (default: all)\n"
    "  -t, --timestamps   start each line with its timestamp\n"
    "  -h, --help         this help\n";

typedef struct logs_opts {
    ctl *c;
    bool follow, stamps;
    int64_t tail; /* -1 = all */
} logs_opts;

typedef struct reader {
    const logs_opts *o;
    char *buf; /* bytes not yet printed (an incomplete record) */
    size_t len, cap;
    bool at_line_start;
} reader;

static int logs_opt(void *arg, int id, const char *val)
{
    logs_opts *o = arg;
    uint64_t n;
    switch (id) {
    case 'f':
        o->follow = true;
        return 0;
    case 't':
        o->stamps = true;
        return 0;
    default:
        if (ctl_parse_uint(o->c, "--tail", val, 100000000, &n) != 0)
            return -1;
        o->tail = (int64_t)n;
        return 0;
    }
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w, n -= (size_t)w;
    }
}

/* One record "TS STREAM TAG CONTENT" (without its '\n'). */
static void print_record(reader *r, const char *line, size_t n)
{
    const char *sp1 = memchr(line, ' ', n);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - line)) : NULL;
    const char *sp3 = sp2 ? memchr(sp2 + 1, ' ', n - (size_t)(sp2 + 1 - line)) : NULL;
    if (!sp3) { /* not a CRI record: show it as it is */
        write_all(1, line, n);
        write_all(1, "\n", 1);
        return;
    }
    int fd = !strncmp(sp1 + 1, "stderr ", 7) ? 2 : 1;
    bool partial = sp2[1] == 'P';
    if (r->o->stamps && r->at_line_start) {
        write_all(fd, line, (size_t)(sp1 - line));
        write_all(fd, " ", 1);
    }
    write_all(fd, sp3 + 1, n - (size_t)(sp3 + 1 - line));
    if (!partial)
        write_all(fd, "\n", 1);
    r->at_line_start = !partial;
}

static bool record_is_full(const char *line, size_t n)
{
    const char *sp1 = memchr(line, ' ', n);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - line)) : NULL;
    return !sp2 || sp2[1] != 'P';
}

/* Offset of the record that starts the tail-th last line of buf. */
static size_t tail_start(const char *buf, size_t len, int64_t tail)
{
    if (tail < 0)
        return 0;
    int64_t lines = 0;
    size_t end = len;
    while (end > 0) {
        size_t s = end - 1; /* end points after a '\n' */
        while (s > 0 && buf[s - 1] != '\n')
            s--;
        if (record_is_full(buf + s, end - 1 - s) && ++lines > tail)
            return end;
        end = s;
    }
    return 0;
}

/* Prints every complete record in r->buf and keeps the rest. */
static void drain(reader *r, int64_t tail)
{
    size_t off = 0, last_nl = 0;
    const char *nl;
    while ((nl = memchr(r->buf + last_nl, '\n', r->len - last_nl)))
        last_nl = (size_t)(nl - r->buf) + 1;
    off = tail_start(r->buf, last_nl, tail);
    while (off < last_nl) {
        nl = memchr(r->buf + off, '\n', last_nl - off);
        print_record(r, r->buf + off, (size_t)(nl - (r->buf + off)));
        off = (size_t)(nl - r->buf) + 1;
    }
    memmove(r->buf, r->buf + last_nl, r->len - last_nl);
    r->len -= last_nl;
    if (r->len > LOGS_MAX_LINE) { /* a runaway record: print what we have */
        print_record(r, r->buf, r->len);
        r->len = 0;
    }
}

/* Appends what fd has now; returns bytes read or -1. */
static ssize_t slurp(reader *r, int fd)
{
    ssize_t total = 0;
    for (;;) {
        if (r->cap - r->len < 65536) {
            size_t cap = r->cap ? r->cap * 2 : 131072;
            char *nb = realloc(r->buf, cap);
            if (!nb)
                return -1;
            r->buf = nb, r->cap = cap;
        }
        ssize_t n = read(fd, r->buf + r->len, r->cap - r->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return total;
        r->len += (size_t)n, total += n;
    }
}

static int ctr_state(ctl *c, const char *id, char **log_path)
{
    Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
    req.container_id = (char *)id;
    Runtime__V1__ContainerStatusResponse *r = (void *)ctl_rt_call(
        c, "ContainerStatus", &req.base, &runtime__v1__container_status_response__descriptor);
    if (!r || !r->status) {
        ctl_free_msg(r);
        return -1;
    }
    int st = r->status->state;
    if (log_path)
        *log_path = strdup(r->status->log_path ? r->status->log_path : "");
    ctl_free_msg(r);
    return st;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Follows path until the container is no longer running. */
static int follow(ctl *c, const char *id, const char *path, int fd, reader *r)
{
    struct stat st0;
    fstat(fd, &st0);
    int64_t next_check = 0;
    for (;;) {
        ssize_t n = slurp(r, fd);
        if (n > 0) {
            drain(r, -1);
            continue;
        }
        struct stat st;
        if (stat(path, &st) == 0 && (st.st_ino != st0.st_ino || st.st_dev != st0.st_dev)) {
            int nfd = open(path, O_RDONLY | O_CLOEXEC); /* rotated: the new file */
            if (nfd >= 0) {
                slurp(r, fd);
                drain(r, -1);
                close(fd);
                fd = nfd;
                st0 = st;
                continue;
            }
        }
        if (mono_ms() >= next_check) {
            if (ctr_state(c, id, NULL) != RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING)
                break;
            next_check = mono_ms() + LOGS_STATUS_EVERY_MS;
        }
        usleep(LOGS_POLL_MS * 1000);
    }
    slurp(r, fd);
    drain(r, -1);
    close(fd);
    return 0;
}

static int show_logs(ctl *c, const logs_opts *o, const char *id)
{
    char *path = NULL;
    if (ctr_state(c, id, &path) < 0)
        return CTL_EXIT_FAIL;
    if (!*path) {
        ctl_err(c, "container %s has no log file (its config set no log_path)", id);
        free(path);
        return CTL_EXIT_FAIL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        ctl_err(c, "log file %s of container %s: %s", path, id, strerror(errno));
        free(path);
        return CTL_EXIT_FAIL;
    }
    reader r = {.o = o, .at_line_start = true};
    int rc = 0;
    if (slurp(&r, fd) < 0) {
        ctl_err(c, "reading %s: %s", path, strerror(errno));
        rc = CTL_EXIT_FAIL;
    } else {
        drain(&r, o->tail);
    }
    if (rc == 0 && o->follow)
        rc = follow(c, id, path, fd, &r);
    else
        close(fd);
    free(r.buf);
    free(path);
    return rc;
}

int cmd_logs(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {{"follow", no_argument, NULL, 'f'},
                                       {"tail", required_argument, NULL, 'T'},
                                       {"timestamps", no_argument, NULL, 't'},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    logs_opts o = {.c = c, .tail = -1};
    int first, rc;
    if (ctl_parse(c, argc, argv, "ft", lo, logs_help, logs_opt, &o, &first, &rc))
        return rc;
    if (argc - first != 1)
        return ctl_usage(c, "needs exactly one CONTAINER-ID (see sluicectl logs --help)");
    char *id = ctl_resolve_ctr(c, argv[first]);
    if (!id)
        return CTL_EXIT_FAIL;
    rc = show_logs(c, &o, id);
    free(id);
    return rc;
}
