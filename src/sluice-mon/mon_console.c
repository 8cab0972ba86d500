/* Console sockets: for a tty container or exec, runc connects to a unix
 * socket we listen on and sends the PTY master as SCM_RIGHTS. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "mon.h"

#define CONSOLE_MSG_MAX 4096 /* runc sends the pty's name as the data */

struct mon_console {
    mon *m;
    char *path;
    sl_mwatch *lw; /* listening socket */
    sl_mwatch *cw; /* the accepted connection */
    mon_console_cb cb;
    void *data;
};

int mon_set_winsize(int fd, int w, int h)
{
    struct winsize ws = {.ws_row = (unsigned short)h, .ws_col = (unsigned short)w};
    return ioctl(fd, TIOCSWINSZ, &ws);
}

/* Never longer than mon.sock, so every socket fits when that one does
 * (sluiced checks its run dir at start). A name comes back only after
 * 65536 others, long after runc connected to it and it was removed. */
_Static_assert(sizeof("cs0000") <= sizeof(SL_MON_SOCK_NAME), "console socket name too long");

char *mon_sock_path(mon *m)
{
    char name[16];
    snprintf(name, sizeof(name), SL_MON_CONSOLE_SOCK_FMT, ++m->next_sock & 0xffffu);
    return sl_path_join(m->run_dir, name);
}

static void finish(mon_console *c, int master)
{
    sl_mwatch_close(c->cw);
    sl_mwatch_close(c->lw);
    c->cw = c->lw = NULL;
    unlink(c->path);
    /* cb may free c: nothing touches it afterwards */
    c->cb(c->m, master, c->data);
}

static int recv_master(int fd, bool *eof)
{
    char buf[CONSOLE_MSG_MAX];
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
    union {
        char b[CMSG_SPACE(sizeof(int) * SL_MON_MAX_FDS)];
        struct cmsghdr align;
    } ctl;
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl)};
    ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
    *eof = n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
    int master = -1;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); n > 0 && cm; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd2;
            memcpy(&fd2, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            if (master < 0)
                master = fd2;
            else
                close(fd2);
        }
    }
    return master;
}

static void conn_cb(sl_mwatch *w, uint32_t events, void *data)
{
    (void)w;
    (void)events;
    mon_console *c = data;
    bool eof;
    int master = recv_master(sl_mwatch_fd(c->cw), &eof);
    if (master >= 0 || eof)
        finish(c, master);
}

static void listen_cb(sl_mwatch *w, uint32_t events, void *data)
{
    (void)events;
    mon_console *c = data;
    if (c->cw)
        return;
    int fd = accept4(sl_mwatch_fd(w), NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return;
    if (!(c->cw = sl_mloop_watch(c->m->loop, fd, EPOLLIN, conn_cb, c))) {
        close(fd);
        return;
    }
    sl_mwatch_set(c->lw, 0); /* one connection is all runc makes */
}

mon_console *mon_console_new(mon *m, mon_console_cb cb, void *data, sl_error *e)
{
    mon_console *c = calloc(1, sizeof(*c));
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (!c || !(c->path = mon_sock_path(m))) {
        free(c);
        return sl_error_set(e, ENOMEM, "console socket"), NULL;
    }
    *c = (mon_console){.m = m, .path = c->path, .cb = cb, .data = data};
    int fd = -1;
    if (strlen(c->path) >= sizeof(sa.sun_path)) {
        sl_error_set(e, ENAMETOOLONG, "console socket %s", c->path);
        goto fail;
    }
    memcpy(sa.sun_path, c->path, strlen(c->path) + 1);
    unlink(c->path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1) < 0 ||
        !(c->lw = sl_mloop_watch(m->loop, fd, EPOLLIN, listen_cb, c))) {
        sl_error_set(e, errno, "console socket %s", c->path);
        goto fail;
    }
    return c;
fail:
    if (fd >= 0)
        close(fd);
    unlink(c->path);
    free(c->path);
    free(c);
    return NULL;
}

const char *mon_console_path(const mon_console *c)
{
    return c->path;
}

void mon_console_free(mon_console *c)
{
    if (!c)
        return;
    sl_mwatch_close(c->cw);
    sl_mwatch_close(c->lw);
    unlink(c->path);
    free(c->path);
    free(c);
}
