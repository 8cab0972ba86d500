#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sess_fx.h"

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void sess_fx_start(sess_fx *f, const sl_runtime_ops *ops, void *data, const sl_server_config *cfg)
{
    assert_int_equal(uv_loop_init(&f->loop), 0);
    f->rt = (sl_runtime){ops, data};
    sl_server_config c;
    if (cfg) {
        c = *cfg;
    } else {
        sl_server_config_init(&c);
    }
    c.address = "127.0.0.1";
    c.port = 0;
    assert_int_equal(sl_server_new(&f->loop, &c, &f->rt, &f->srv), SL_OK);
    assert_int_equal(sl_server_start(f->srv), SL_OK);
}

static void closed(sl_server *s, void *arg)
{
    (void)s;
    *(bool *)arg = true;
}

static bool flag(void *arg)
{
    return *(bool *)arg;
}

void sess_fx_stop(sess_fx *f)
{
    bool done = false;
    sl_server_close(f->srv, closed, &done);
    assert_true(sess_pump(f, flag, &done));
    sl_server_free(f->srv);
    for (int i = 0; i < 100 && uv_run(&f->loop, UV_RUN_NOWAIT); i++)
        usleep(1000);
    assert_int_equal(uv_loop_close(&f->loop), 0);
}

bool sess_pump(sess_fx *f, bool (*done)(void *arg), void *arg)
{
    uint64_t end = now_ms() + SESS_WAIT_MS;
    while (now_ms() < end) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        if (done(arg))
            return true;
        usleep(500);
    }
    return false;
}

void sess_run_for(sess_fx *f, unsigned ms)
{
    uint64_t end = now_ms() + ms;
    while (now_ms() < end) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        usleep(500);
    }
}

void sess_drain(int fd, sess_acc *a)
{
    while (!a->eof && a->len + 1 < sizeof(a->buf)) {
        ssize_t n = read(fd, a->buf + a->len, sizeof(a->buf) - 1 - a->len);
        if (n > 0) {
            a->len += (size_t)n;
            a->buf[a->len] = '\0';
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EINTR))
            a->eof = true;
        return;
    }
}

void sess_pipe(int p[2])
{
    assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
}

void sess_socketpair(int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
}
