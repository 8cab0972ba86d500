#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/fdio.h"
#include "sluice/error.h"

/* sl_fdio_reset: a local connection closed after a failure is reset, so
 * the application on the other end sees an error instead of an end of
 * stream that looks complete; without it the close is a clean FIN. */

static void tcp_pair(int fds[2])
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(l, 1), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &len), 0);
    fds[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(fds[0], (struct sockaddr *)&sa, sizeof(sa)), 0);
    fds[1] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    assert_true(fds[1] >= 0);
    close(l);
}

static const sl_fdio_callbacks no_cb;

/* Writes "partial" through an fdio on fds[0], closes it (reset or not) and
 * returns what read() on the peer ends with: 0 (EOF) or -errno. */
static int close_and_read_end(bool reset)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    int fds[2];
    tcp_pair(fds);
    sl_fdio *f;
    assert_int_equal(sl_fdio_new(&loop, fds[0], true, true, true, &no_cb, NULL, &f), SL_OK);
    assert_int_equal(sl_fdio_write(f, (const uint8_t *)"partial", 7), SL_OK);
    uv_run(&loop, UV_RUN_NOWAIT);
    char buf[16];
    assert_int_equal(read(fds[1], buf, sizeof(buf)), 7);
    if (reset)
        sl_fdio_reset(f);
    sl_fdio_free(f);
    while (uv_run(&loop, UV_RUN_NOWAIT))
        ;
    assert_int_equal(uv_loop_close(&loop), 0);
    ssize_t n = read(fds[1], buf, sizeof(buf));
    int end = n < 0 ? -errno : (int)n;
    close(fds[1]);
    return end;
}

static void test_clean_close_is_eof(void **st)
{
    (void)st;
    assert_int_equal(close_and_read_end(false), 0);
}

static void test_reset_is_an_error(void **st)
{
    (void)st;
    assert_int_equal(close_and_read_end(true), -ECONNRESET);
}

/* A pipe has no reset: the call does nothing and the close is an EOF. */
static void test_reset_of_a_pipe(void **st)
{
    (void)st;
    uv_loop_t loop;
    uv_loop_init(&loop);
    int p[2];
    assert_int_equal(pipe(p), 0);
    sl_fdio *f;
    assert_int_equal(sl_fdio_new(&loop, p[1], false, true, true, &no_cb, NULL, &f), SL_OK);
    sl_fdio_reset(f);
    sl_fdio_free(f);
    while (uv_run(&loop, UV_RUN_NOWAIT))
        ;
    assert_int_equal(uv_loop_close(&loop), 0);
    char c;
    assert_int_equal(read(p[0], &c, 1), 0);
    close(p[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean_close_is_eof),
        cmocka_unit_test(test_reset_is_an_error),
        cmocka_unit_test(test_reset_of_a_pipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
