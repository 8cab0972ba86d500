/* The byte ends of every measurement: a counting reader thread, a writer
 * thread, pipes and socket pairs with large buffers, and the helper
 * processes of the limit measurements. Threads keep the counting off the
 * loop that drives the sessions, the same way for every side. */
#include "bench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define WRITER_POLL_MS 100 /* how often a blocked writer checks its stop flag */

static void *reader_main(void *arg)
{
    bn_reader *r = arg;
    uint8_t *buf = malloc(BN_IO_CHUNK);
    while (buf) {
        ssize_t n = read(r->fd, buf, BN_IO_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        double t = bn_now();
        if (!r->bytes)
            r->t_first = t;
        else if (t - r->t_last > r->max_gap)
            r->max_gap = t - r->t_last;
        r->t_last = t;
        if (r->nhead < BN_HEAD_MAX) {
            size_t k = BN_HEAD_MAX - r->nhead < (size_t)n ? BN_HEAD_MAX - r->nhead : (size_t)n;
            memcpy(r->head + r->nhead, buf, k);
            r->nhead += k;
            r->head[r->nhead] = '\0';
        }
        r->bytes += (uint64_t)n;
        if (r->stop_at && r->bytes >= r->stop_at)
            break;
    }
    free(buf);
    r->finished = true;
    return NULL;
}

int bn_reader_start(bn_reader *r, int fd, uint64_t stop_at)
{
    memset(r, 0, sizeof(*r));
    r->fd = fd;
    r->stop_at = stop_at;
    if (pthread_create(&r->th, NULL, reader_main, r)) {
        close(fd);
        r->fd = -1;
        return -1;
    }
    return 0;
}

void bn_reader_join(bn_reader *r)
{
    if (r->fd < 0)
        return;
    pthread_join(r->th, NULL);
    close(r->fd);
    r->fd = -1;
}

/* Waits until fd is writable or the writer is told to stop. */
static bool wait_writable(bn_writer *w)
{
    struct pollfd p = {.fd = w->fd, .events = POLLOUT};
    while (!w->stop) {
        int n = poll(&p, 1, WRITER_POLL_MS);
        if (n > 0)
            return true;
        if (n < 0 && errno != EINTR)
            return false;
    }
    return false;
}

static void write_all(bn_writer *w, const uint8_t *buf)
{
    while (w->done < w->total && !w->stop) {
        size_t k = w->total - w->done < w->chunk ? (size_t)(w->total - w->done) : w->chunk;
        ssize_t n = write(w->fd, buf, k);
        if (n > 0) {
            if (!w->done)
                w->t_first = bn_now();
            w->done += (uint64_t)n;
        } else if (n < 0 && errno == EAGAIN) {
            if (!wait_writable(w))
                return;
        } else if (n < 0 && errno != EINTR) {
            w->err = errno;
            return;
        }
    }
}

static void read_reply(bn_writer *w)
{
    size_t got = 0;
    struct pollfd p = {.fd = w->fd, .events = POLLIN};
    while (got < BN_HEAD_MAX && !w->stop) {
        if (poll(&p, 1, WRITER_POLL_MS) <= 0)
            continue;
        ssize_t n = read(w->fd, w->reply + got, BN_HEAD_MAX - got);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
        w->reply[got] = '\0';
        if (!w->t_reply)
            w->t_reply = bn_now();
        if (memchr(w->reply, '\n', got))
            break;
    }
}

static void *writer_main(void *arg)
{
    bn_writer *w = arg;
    uint8_t *buf = calloc(1, w->chunk);
    if (!buf) {
        w->err = ENOMEM;
        w->finished = true;
        return NULL;
    }
    write_all(w, buf);
    w->t_end = bn_now();
    free(buf);
    if (w->half_close) {
        shutdown(w->fd, SHUT_WR);
    } else if (!w->read_reply) {
        close(w->fd); /* EOF for the reading side now */
        w->closed = true;
    }
    if (w->read_reply && !w->err)
        read_reply(w);
    w->finished = true;
    return NULL;
}

int bn_writer_start(bn_writer *w, int fd, uint64_t total, size_t chunk, bool half_close,
                    bool read_reply)
{
    memset(w, 0, sizeof(*w));
    w->fd = fd;
    w->total = total;
    w->chunk = chunk;
    w->half_close = half_close;
    w->read_reply = read_reply;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    if (pthread_create(&w->th, NULL, writer_main, w)) {
        close(fd);
        w->fd = -1;
        return -1;
    }
    return 0;
}

void bn_writer_join(bn_writer *w)
{
    if (w->fd < 0)
        return;
    pthread_join(w->th, NULL);
    if (!w->closed)
        close(w->fd);
    w->fd = -1;
}

int bn_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -1;
    fcntl(fds[1], F_SETPIPE_SZ, (int)BN_PIPE_SIZE);
    return 0;
}

int bn_socketpair(int fds[2])
{
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0)
        return -1;
    int sz = (int)BN_SOCK_BUF;
    for (int i = 0; i < 2; i++) {
        setsockopt(fds[i], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
        setsockopt(fds[i], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    }
    return 0;
}

int bn_tcp_pair(int *client, int *server)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int s = -1;
    if (l >= 0 && c >= 0 && bind(l, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(l, 1) == 0 &&
        getsockname(l, (struct sockaddr *)&a, &len) == 0 &&
        connect(c, (struct sockaddr *)&a, sizeof(a)) == 0)
        s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    if (l >= 0)
        close(l);
    if (s < 0) {
        if (c >= 0)
            close(c);
        return -1;
    }
    *client = c;
    *server = s;
    return 0;
}

pid_t bn_spawn(const char *const *argv, int in, int out, int err)
{
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        int fds[3] = {in, out, err};
        for (int i = 0; i < 3; i++) {
            int fd = fds[i] >= 0 ? fds[i] : open("/dev/null", O_RDWR);
            if (fd != i) {
                dup2(fd, i);
            } else {
                fcntl(fd, F_SETFD, 0);
            }
        }
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

int bn_wait(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
