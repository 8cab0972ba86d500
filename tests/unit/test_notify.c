/* sluiced's sd_notify sender: NOTIFY_SOCKET parsing (paths, abstract
 * names, bad values), its removal from the environment, and a datagram
 * arriving on a real socket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "admin/notify.h"

static void test_parse(void **state)
{
    (void)state;
    sl_notify n;
    assert_true(sl_notify_parse(&n, NULL));
    assert_int_equal(n.len, 0);
    assert_true(sl_notify_parse(&n, ""));
    assert_int_equal(n.len, 0);
    assert_true(sl_notify_parse(&n, "/run/systemd/notify"));
    assert_string_equal(n.addr.sun_path, "/run/systemd/notify");
    assert_int_equal(n.len,
                     offsetof(struct sockaddr_un, sun_path) + strlen("/run/systemd/notify") + 1);
    assert_true(sl_notify_parse(&n, "@abc"));
    assert_int_equal(n.addr.sun_path[0], '\0');
    assert_memory_equal(n.addr.sun_path + 1, "abc", 3);
    assert_int_equal(n.len, offsetof(struct sockaddr_un, sun_path) + 4);
    assert_false(sl_notify_parse(&n, "relative/path"));
    assert_int_equal(n.len, 0);
    char longp[sizeof(n.addr.sun_path) + 2];
    memset(longp, 'a', sizeof(longp) - 1);
    longp[0] = '/';
    longp[sizeof(longp) - 1] = '\0';
    assert_false(sl_notify_parse(&n, longp));
    assert_int_equal(n.len, 0);
    assert_int_equal(sl_notify_send(&n, "READY=1"), 0); /* off: nothing, no error */
}

static void test_init_unsets(void **state)
{
    (void)state;
    sl_notify n;
    setenv("NOTIFY_SOCKET", "/x/notify", 1);
    assert_true(sl_notify_init(&n));
    assert_null(getenv("NOTIFY_SOCKET"));
    assert_string_equal(n.addr.sun_path, "/x/notify");
}

static void test_send_abstract(void **state)
{
    (void)state;
    char name[64];
    snprintf(name, sizeof(name), "@sluice-test-notify-%d", (int)getpid());
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    sl_notify n;
    assert_true(sl_notify_parse(&n, name));
    assert_int_equal(bind(fd, (struct sockaddr *)&n.addr, n.len), 0);
    assert_int_equal(sl_notify_send(&n, "READY=1\nSTATUS=up"), 0);
    char buf[64] = {0};
    assert_int_equal(recv(fd, buf, sizeof(buf) - 1, 0), (ssize_t)strlen("READY=1\nSTATUS=up"));
    assert_string_equal(buf, "READY=1\nSTATUS=up");
    close(fd);
    /* nobody listening: an error, not a hang */
    assert_int_equal(sl_notify_send(&n, "STOPPING=1"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_init_unsets),
        cmocka_unit_test(test_send_abstract),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
